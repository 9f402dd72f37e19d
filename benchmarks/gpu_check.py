"""GPU check in one command: v of the embedded models on the GPU against a float32 CPU reference.

Run:  python benchmarks/gpu_check.py [--device auto|cuda|cpu] [--write-reference]

On a machine with CUDA (meant to finish within 8 minutes, converting the GGUF packages on a
fresh machine included), for the models under `models:` of config.yaml (SmolLM2-135M-Instruct
and Gemma 3 270M), loaded by `ips.models.loading.load_model` (in float32, and on CUDA also in
bfloat16):

1. accuracy: the fixed samples (the first SAMPLES ARC-Easy items that `ips.prompts.samples.
   prepare_samples` draws with seed 0, question and options as units, the N longest kept,
   templates T1 and T2, 0-shot; target the gold letter) are scored as `ips score` scores them
   (`ips.scoring.engine.score_sample`) with the plain and the trie scorer; their v is compared with
   the committed float32 CPU reference (`gpu_reference.json`, plain scorer): max |Δv|, and
   IPS of the pair (T1, T2) (`ips.interactions.and_or` with the configured solver →
   `ips.analysis.metrics.normalize` → `ips.analysis.metrics.ips` at the configured tau) against the
   IPS of the reference v: |ΔIPS| of the IPS over the samples, and the largest per-sample change;
2. speed: masked evaluations per second of the plain and the trie scorer on the prompts of
   benchmarks/bench_trie.py (T1, n = 8 and 10 variables, 0 and 3 solved examples), and the
   model's achieved FLOP/s — useful FLOPs (`common.Flops`: 2 × the decoder's linear-layer
   parameters per token computed, plus attention per (query, key) pair and the output
   projection; embedding lookups are no FLOPs, and they are 170M of Gemma 3 270M's 270M
   parameters) over the time — as a share of the rate of a large bf16 matmul measured here
   (the peak used is that measured rate, not a data-sheet figure; on the CPU, float32);
3. dispatched: the first model over two GPUs (`device_map: balanced`, accelerate's hooks) in
   float32, both scorers against the reference (the trie runs through the hooks); with
   fewer than two CUDA devices it says it skipped this;
4. a last line `PASS`, or `FAIL: <reasons>`.

On CUDA every model runs twice: in float32 (TF32 off), whose v must reproduce the reference
within `TOLERANCE` with both scorers (|ΔIPS| is printed) — a check of the GPU code path, not
of precision — and in bfloat16 (`--dtype` picks another), whose differences from the
reference are printed as what that precision costs (no tolerance: half precision moves v by
tenths and IPS by up to ~0.5 on the CPU, see docs/method.md#precision); it fails only where
v is not finite. The speed table is measured in the second dtype.

Without CUDA it says so and exits 0. `--device cpu` runs the same check on the CPU in
float32 (by default one sample, the first model, n = 8 0-shot speed only: about 3 minutes on
2 idle cores); it must PASS against the reference, which tests the reference and the comparison.
`--write-reference` computes the reference (float32, CPU, plain scorer, all samples; the
models given by --models, default all, replace their entries) and writes it atomically.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np
import torch

from common import Flops, arc_easy, matmul_rate, prompt_case
from ips import __version__
from ips.analysis import metrics
from ips.config import DTYPES, check_settings, load_config
from ips.interactions import and_or
from ips.models.entries import ModelSpec
from ips.models.loading import load_model
from ips.outputs import atomic_path
from ips.prompts.samples import prepare_samples
from ips.prompts.templates import load_templates
from ips.scoring.engine import Answers, Engine, score_sample
from ips.scoring.log_odds import ScoringError

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = Path(__file__).with_name("gpu_reference.json")
N = 8  # variables per sample
SAMPLES = 2  # the float32 CPU reference costs ~5 min per prompt and model on 2 busy cores
TEMPLATES = ["T1", "T2"]  # two conditions: one pair, so IPS exists per sample
SCORERS = ("plain", "trie")
CASES = [(8, 0), (8, 3), (10, 0), (10, 3)]  # (n, shots) of the speed table


TOLERANCE = {"v": 1e-3}
"""Largest accepted difference of a float32 run against the float32 reference: v within
1e-3, the tolerance of the trie's own self-check in float32 (a GPU's kernels sum in other
orders; measured on the CPUs here: the plain scorer 1e-5 on the machine that wrote the
reference, 2.5e-5 on a later one, the trie 2.6e-5 / 2.8e-5). |dIPS| is printed, not judged:
Eq. 12's salient set moves under differences of that size (the trie's 2.8e-5 moved the IPS
of the pair by 0.02), so IPS cannot tell a sound code path from a broken one; v can."""


def check_samples(count: int):
    """The fixed samples (see the module docstring) and the tau/solver of config.yaml."""
    settings = check_settings({
        "dataset": "arc-easy", "entry": {"format": "arc", "subset": "ARC-Easy"},
        "n_items": SAMPLES, "n_max": N, "seed": 0,
        "variables": {"strategy": "content", "merge_phrases": True, "reduce": "longest"},
        "templates": {"mcq": TEMPLATES}, "few_shot": {"templates": [], "shots": []},
    })
    sample_set = prepare_samples(settings)
    bad = [s.item.id for s in sample_set.samples if len(s.variables) != N]
    if bad or len(sample_set.samples) != SAMPLES:
        raise SystemExit(f"the fixed samples changed: {len(sample_set.samples)} drawn, items "
                         f"{bad} do not have {N} variables; regenerate the reference "
                         "(--write-reference)")
    return sample_set, sample_set.samples[:count]


def prompts_digest(tokenizer, sample_set, samples) -> list[str]:
    """Per sample, sha256 of its prompts' token ids: the reference holds only for these."""
    return [hashlib.sha256(json.dumps([tokenizer(s.prompts[c.name].text)["input_ids"]
                                       for c in sample_set.conditions]).encode()).hexdigest()
            for s in samples]


def score_all(loaded, conditions, samples, scorer: str,
              batch_tokens: int) -> tuple[np.ndarray, float]:
    """v of every (sample, condition), shape (samples, conditions, 2**N), as `ips score`
    computes it (target: the gold letter), and the seconds it took."""
    engine = Engine(loaded.model, loaded.baseline, batch_tokens, loaded.device, scorer=scorer)
    answers = Answers(loaded.tokenizer)
    t = time.perf_counter()
    v = np.stack([score_sample(engine, answers, s, conditions, "letter")["v"] for s in samples])
    return v, time.perf_counter() - t


def ips_of(v: np.ndarray, config: dict) -> np.ndarray:
    """ips(x, T1, T2) of every sample (Eq. 3's inner term), from v of shape (S, 2, 2**n)."""
    res = and_or(v.reshape(-1, v.shape[-1]), solver=config["solver"])
    shape = v.shape
    norm = metrics.normalize(res.and_.reshape(shape), res.or_.reshape(shape))
    return metrics.ips(norm, tau=config["tau"]).per_pair[:, 0]


def speed(loaded, batch_tokens: int, cases, repeats: int) -> list[dict]:
    """Evaluations/s and achieved FLOP/s of both scorers on the bench_trie prompts."""
    items, order = arc_easy()
    templates = load_templates()
    flops = Flops(loaded.model)
    sync = torch.cuda.synchronize if loaded.device.type == "cuda" else (lambda: None)
    rows = []
    for n, k in cases:
        _, ids, owners, target = prompt_case(loaded.tokenizer, items, order, templates, n, k)
        row = {"n": n, "shots": k, "tokens": len(ids)}
        for scorer in SCORERS:
            best, work = np.inf, 0.0
            for _ in range(repeats):  # the first run on a GPU also pays for kernel choices
                engine = Engine(loaded.model, loaded.baseline, batch_tokens, loaded.device,
                                scorer=scorer)
                sync()
                t = time.perf_counter()
                engine.values(ids, owners, n, target)
                sync()
                best = min(best, time.perf_counter() - t)
                work = (flops.trie(engine.trie.stats) if scorer == "trie"
                        else flops.plain(1 << n, len(ids), 1))
            row[scorer] = {"evals_s": (1 << n) / best, "flop_s": work / best, "seconds": best}
        rows.append(row)
    return rows


def write_reference(path: Path, doc: dict) -> None:
    with atomic_path(path) as tmp:
        Path(tmp).write_text(json.dumps(doc, indent=1) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto",
                        help="auto: CUDA if visible, else say so and exit 0")
    parser.add_argument("--dtype", choices=DTYPES, default=None,
                        help="score in this dtype only (default: the entry's; on CUDA float32, "
                        "checked against the reference, and bfloat16, whose cost it shows)")
    parser.add_argument("--write-reference", action="store_true",
                        help="compute the float32 CPU reference and write it (--reference)")
    parser.add_argument("--reference", type=Path, default=REFERENCE)
    parser.add_argument("--config", type=Path, default=ROOT / "config.yaml")
    parser.add_argument("--cache-dir", type=Path, default=ROOT / "resources" / "models")
    parser.add_argument("--models", nargs="*", default=None,
                        help="models of the config (default: all; on the CPU the first)")
    parser.add_argument("--samples", type=int, default=None,
                        help=f"the first K of the {SAMPLES} samples (default: all; CPU: 1)")
    parser.add_argument("--scorers", nargs="*", choices=SCORERS, default=list(SCORERS))
    parser.add_argument("--cases", nargs="*", default=None, metavar="N:SHOTS",
                        help="speed cases (default: 8:0 8:3 10:0 10:3; CPU: 8:0; none: skip)")
    parser.add_argument("--batch-tokens", type=int, default=None,
                        help="tokens per plain forward (default: CUDA 32768, CPU the config's)")
    parser.add_argument("--threads", type=int, default=None, help="CPU threads (torch)")
    args = parser.parse_args(argv)

    if args.write_reference:
        args.device, args.dtype, args.scorers = "cpu", "float32", ["plain"]
    if args.device == "auto":
        if not torch.cuda.is_available():
            print("no CUDA device visible: nothing to check (python benchmarks/gpu_check.py "
                  "--device cpu runs the same check on the CPU in float32)")
            return 0
        args.device = "cuda"
    elif args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: no CUDA device is visible")
    cpu = args.device == "cpu"
    if args.threads:
        torch.set_num_threads(args.threads)
    t_start = time.perf_counter()
    config = load_config(args.config)
    names = args.models or (list(config["models"])[:1] if cpu and not args.write_reference
                            else list(config["models"]))
    unknown = sorted(set(names) - set(config["models"]))
    if unknown:
        raise SystemExit(f"--models: {unknown} not under models: of {args.config}")
    count = args.samples or (1 if cpu and not args.write_reference else SAMPLES)
    if not 1 <= count <= SAMPLES:
        raise SystemExit(f"--samples must lie in 1..{SAMPLES}, got {count}")
    if args.cases is None:
        cases = [] if args.write_reference else ([(8, 0)] if cpu else CASES)
    else:
        cases = [tuple(int(x) for x in c.split(":")) for c in args.cases if c != "none"]
    batch_tokens = args.batch_tokens or (config["batch_tokens"] if cpu else 32768)

    gpu = torch.cuda.get_device_name(0) if args.device == "cuda" else platform.processor() or "cpu"
    print(f"gpu_check: device {args.device} ({gpu}), torch {torch.__version__}, "
          f"{torch.get_num_threads()} CPU threads, ips {__version__}")
    sample_set, samples = check_samples(count)
    print(f"samples: {len(samples)} of the {SAMPLES} fixed ARC-Easy samples "
          f"({', '.join(s.item.id for s in samples)}), n = {N}, conditions "
          f"{' '.join(c.name for c in sample_set.conditions)}; tau {config['tau']}, solver "
          f"{config['solver']}; batch_tokens {batch_tokens}")
    ref = None
    if not args.write_reference:
        try:
            ref = json.loads(args.reference.read_text())
        except FileNotFoundError:
            raise SystemExit(f"{args.reference}: no reference; write it with "
                             "--write-reference") from None
        print(f"reference: {args.reference.name} ({ref['dtype']} on {ref['device']}, torch "
              f"{ref['torch']}, ips {ref['ips']})")
    new_ref = {"about": "v of the fixed samples of benchmarks/gpu_check.py, plain scorer, "
                        "float32 on the CPU; written by gpu_check.py --write-reference",
               "dtype": "float32", "device": "cpu", "torch": torch.__version__, "ips": __version__,
               "samples": [s.item.id for s in sample_set.samples],
               "conditions": [c.name for c in sample_set.conditions], "models": {}}

    if not cpu:  # float32 means float32 on the GPU too
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    failures, speeds = [], []
    for name in names:
        spec = ModelSpec.from_config(name, config["models"][name])
        # CUDA: float32 (checked against the reference) and bfloat16 (its cost shown)
        dtypes = [args.dtype or spec.dtype] if args.dtype or cpu else ["float32", "bfloat16"]
        for dtype in dtypes:
            loaded = load(dataclasses.replace(spec, dtype=dtype), args)
            judged = loaded.dtype == torch.float32
            digest = prompts_digest(loaded.tokenizer, sample_set, samples)
            values = {}
            for scorer in args.scorers:
                try:
                    values[scorer], secs = score_all(loaded, sample_set.conditions, samples, scorer,
                                                      batch_tokens)
                except ScoringError as e:  # e.g. v not finite: float16 overflow
                    failures.append(f"{name} {scorer}: {e}")
                    print(f"  {scorer:<6} cannot score: {e}")
                    continue
                print(f"  {scorer:<6} scored {values[scorer].size} masked prompts in "
                      f"{secs:.1f} s")
            if args.write_reference:
                if "plain" not in values:
                    raise SystemExit(f"{name}: the reference is the plain scorer's v; it did "
                                     "not score")
                new_ref["models"][name] = {"prompts_sha256": digest,
                                           "v": values["plain"].tolist()}
            else:
                failures += compare(name, values, ref, digest, count, config, judged)
            if cases and dtype == dtypes[-1]:
                rows = speed(loaded, batch_tokens, cases, repeats=1 if cpu else 2)
                speeds.append((name, rows))
                print_speed(rows)
            del loaded
            if not cpu:
                torch.cuda.empty_cache()
        if not args.write_reference and name == names[0]:
            failures += dispatched_check(spec, args, sample_set, samples, ref, count, config,
                                         batch_tokens)

    if args.write_reference:
        try:  # the models not computed now keep their entries when the samples are the same
            old = json.loads(args.reference.read_text())
            if (old["samples"], old["conditions"]) == (new_ref["samples"], new_ref["conditions"]):
                new_ref["models"] = {**old["models"], **new_ref["models"]}
        except FileNotFoundError:
            pass
        write_reference(args.reference, new_ref)
        print(f"\nwrote {args.reference} ({args.reference.stat().st_size / 1024:.0f} KB) in "
              f"{time.perf_counter() - t_start:.0f} s")
        return 0
    if speeds:
        mm_dtype = torch.float32 if cpu else torch.bfloat16
        size = 2048 if cpu else 8192
        rate = matmul_rate(device=args.device, dtype=mm_dtype, size=size)
        print(f"\n{str(mm_dtype).removeprefix('torch.')} matmul {size}^3: "
              f"{rate / 1e12:.2f} TFLOP/s measured here: the peak the shares below are of "
              "(a measured rate, not the data-sheet figure)")
        for name, rows in speeds:
            for r in rows:
                print(f"share {name} {r['shots']}-shot n={r['n']}: " + ", ".join(
                    f"{s} {r[s]['flop_s'] / 1e12:.3f} TFLOP/s = {r[s]['flop_s'] / rate:.3f}"
                    for s in SCORERS))
    print(f"total {time.perf_counter() - t_start:.0f} s")
    print("PASS" if not failures else "FAIL: " + "; ".join(failures))
    return 0 if not failures else 1


def dispatched_check(spec, args, sample_set, samples, ref, count, config,
                     batch_tokens) -> list[str]:
    """The first model dispatched over two GPUs (`device_map: balanced`, accelerate's hooks)
    in float32, both scorers against the reference: the trie through the hooks. Said and
    skipped with fewer than two CUDA devices."""
    have = torch.cuda.device_count() if args.device == "cuda" else 0
    if have < 2:
        print(f"\ndispatched over 2 GPUs: skipped ({have} CUDA device(s) here; needs 2)")
        return []
    loaded = load(dataclasses.replace(spec, dtype="float32", gpus=2, device_map="balanced"),
                  args)
    devices = sorted({str(d) for d in loaded.model.hf_device_map.values()})
    print(f"  dispatched over {', '.join(devices)}")
    values = {}
    for scorer in args.scorers:
        values[scorer], secs = score_all(loaded, sample_set.conditions, samples, scorer,
                                         batch_tokens)
        print(f"  {scorer:<6} scored {values[scorer].size} masked prompts in {secs:.1f} s")
    digest = prompts_digest(loaded.tokenizer, sample_set, samples)
    failures = compare(spec.name, values, ref, digest, count, config, judged=True)
    return [f"dispatched: {f}" for f in failures] + (
        [] if len(devices) > 1 else ["dispatched: device_map put every layer on one GPU"])


def load(spec, args):
    t0 = time.perf_counter()
    loaded = load_model(spec, cache_dir=args.cache_dir, device=args.device)
    print(f"\nmodel {spec.name}: {str(loaded.dtype).removeprefix('torch.')} on {loaded.device}, "
          f"loaded in {time.perf_counter() - t0:.1f} s")
    return loaded


def compare(name, values, ref, digest, count, config, judged: bool) -> list[str]:
    """Print v and IPS differences against the reference; return the failures (`judged`: a
    float32 run, held to `TOLERANCE`; else the differences are the precision's cost)."""
    entry = ref["models"].get(name)
    if entry is None:
        return [f"{name}: not in the reference (regenerate it with --write-reference)"]
    v_ref = np.asarray(entry["v"])[:count]
    if entry["prompts_sha256"][:count] != digest:
        return [f"{name}: the prompts' tokens differ from the reference's (tokenizer, dataset "
                "or templates changed): regenerate it with --write-reference"]
    if v_ref.shape[-1] != 1 << N:
        return [f"{name}: the reference holds v of another n"]
    failures = []
    tol = TOLERANCE if judged else {"v": np.inf}
    ips_ref = ips_of(v_ref, config)
    for scorer, v in values.items():
        dv = np.abs(v - v_ref)
        ips_v = ips_of(v, config)
        d_ips = abs(float(np.nanmean(ips_v)) - float(np.nanmean(ips_ref)))
        d_pair = float(np.nanmax(np.abs(ips_v - ips_ref)))
        print(f"  {scorer:<6} vs reference: max|dv| {dv.max():.2e} (median {np.median(dv):.1e}); "
              f"IPS {np.nanmean(ips_v):.4f} vs {np.nanmean(ips_ref):.4f}: |dIPS| {d_ips:.4f} "
              f"(largest per sample {d_pair:.4f})")
        if not dv.max() <= tol["v"]:
            failures.append(f"{name} {scorer}: max|dv| {dv.max():.2e} > {tol['v']:g}")
    if len(values) == 2:
        gap = float(np.abs(values["trie"] - values["plain"]).max())
        print(f"  trie vs plain: max|dv| {gap:.2e}")
        if not gap <= tol["v"]:
            failures.append(f"{name}: trie vs plain max|dv| {gap:.2e} > {tol['v']:g}")
    return failures


def print_speed(rows: list[dict]) -> None:
    print(f"  {'case':<12}{'tokens':>7}{'plain ev/s':>12}{'trie ev/s':>11}{'x':>7}"
          f"{'plain TFLOP/s':>15}{'trie TFLOP/s':>14}")
    for r in rows:
        p, t = r["plain"], r["trie"]
        case = f"{r['shots']}-shot n={r['n']}"
        print(f"  {case:<12}{r['tokens']:>7}{p['evals_s']:>12.1f}"
              f"{t['evals_s']:>11.1f}{t['evals_s'] / p['evals_s']:>7.2f}"
              f"{p['flop_s'] / 1e12:>15.3f}{t['flop_s'] / 1e12:>14.3f}")


if __name__ == "__main__":
    sys.exit(main())
