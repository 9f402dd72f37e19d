"""Benchmark of the unmasked pass of scoring: the old five full forwards against `Engine.unmasked`.

Run:  .venv/bin/python benchmarks/bench_unmasked.py [--quick] [--threads 2] [--models M ...]

Per condition, scoring runs v(x_S) on the 2**n masks (`Engine.values`) and the unmasked
pass (`Engine.unmasked`: the greedy token, the option letters' logits, log P of each option's
text, the last hidden state). Side by side in one process, on ARC-Easy T1 prompts with 0 and
3 solved examples (the first bundled items, in the seeded order of the other benchmarks, with
exactly n content variables, tokenized as `ips score` does, `ips.scoring.engine.encode_prompt`):

- old: the unmasked pass as it was, implemented here as the reference: a forward of the
  prompt, then a full forward of prompt + option for each option (5 forwards for 4 options);
- one at a time: the prompt's forward with a cache, then each option's tokens continuing a
  copy of it (one forward per option): the alternative to the batch of `Engine.unmasked`;
- new: `Engine.unmasked`: the prompt's forward with a cache, and the tokens of all options
  longer than one token in one right-padded batch continuing it;
- v: `Engine.values` with the scorer given (default auto: the trie), timed once per case;
  the tokens it ran are printed beside the prompt's tokens before its first variable (what
  the trie runs once at its level 0, and what it could take from the unmasked pass instead).

old, one at a time and new run interleaved `--repeats` times; the median is used. Printed per
case: the times, max |Δ| of new against old (letter logits, option log-probabilities, h; the
greedy token must be equal), the per-condition time v + unmasked before and after, the
unmasked pass's share of it and the share of scoring time saved, and each part's achieved FLOP
rate against this machine's float32 matmul rate (a 2048³ sgemm, best of ~1 s, measured before
and after the cases; the larger is used):

    FLOP/s = 2 · (P · T + H · R) / seconds,

P the decoder layers' linear-layer weights (what every token multiplies), T the tokens run
through the decoder, H = hidden size × vocabulary (the output head) and R the positions
projected to logits. Attention scores (∝ attended pairs) are not counted, so the rate is a
lower bound. cpu%: the process's CPU time over wall time × threads; well below 100, other
processes took the cores and the absolute times are inflated (the ratios of interleaved runs
less so).

Models: the ones given, from config.yaml or, for another name, the transformers directory
resources/models/<name> (e.g. qwen2.5-coder-1.5b-instruct). `--quick`: SmolLM2, n = 6, one
item, 0-shot.
"""

from __future__ import annotations

import argparse
import copy
import gc
import time
from pathlib import Path

import numpy as np
import torch

from common import Flops, finish, items_with, load_named, measure, start, status_mb
from ips.config import SCORERS
from ips.prompts.templates import render
from ips.scoring.engine import Answers, Engine, encode_prompt


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="SmolLM2, n = 6, 1 item, 0-shot")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--models", nargs="*", default=None)
    parser.add_argument("--n", type=int, default=None, help="variables (default 8; quick 6)")
    parser.add_argument("--shots", nargs="*", type=int, default=None)
    parser.add_argument("--items", type=int, default=None, help="items per case (default 2)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--scorer", default="auto", choices=SCORERS)
    parser.add_argument("--batch-tokens", type=int, default=1024)
    parser.add_argument("--cache-dir", type=Path, default=Path("resources/models"))
    args = parser.parse_args()
    args.models = args.models or (["smollm2-135m-instruct"] if args.quick
                                  else ["smollm2-135m-instruct", "gemma3-270m"])
    args.n = args.n or (6 if args.quick else 8)
    args.shots = args.shots if args.shots is not None else ([0] if args.quick else [0, 3])
    args.items = args.items or (1 if args.quick else 2)
    return args


@torch.inference_mode()
def old_unmasked(model, ids, letters, options):
    """The unmasked pass before the cache: the prompt, then prompt + option per option."""
    out = model(input_ids=torch.as_tensor(ids)[None], logits_to_keep=1, use_cache=False,
                output_hidden_states=True)
    last = out.logits[0, -1].double()
    logp = []
    for o in options:
        row = torch.as_tensor(np.concatenate([ids, np.asarray(o[:-1], dtype=ids.dtype)]))[None]
        logits = model(input_ids=row, logits_to_keep=len(o), use_cache=False).logits[0].double()
        lp = torch.log_softmax(logits, dim=-1)
        logp.append(float(lp[torch.arange(len(o)), torch.as_tensor(o)].sum()))
    return (int(last.argmax()), last[letters].numpy(), np.array(logp),
            out.hidden_states[-1][0, -1].float().numpy())


@torch.inference_mode()
def one_at_a_time(model, ids, options):
    """log P of each option's text: the prompt with a cache, then each option's tokens but the
    last continuing its own copy of the cache (one forward per option)."""
    from transformers import DynamicCache

    cache = DynamicCache(config=model.config)
    out = model(input_ids=torch.as_tensor(ids)[None], logits_to_keep=1, cache=cache,
                use_cache=True)
    first = torch.log_softmax(out.logits[0, -1].double(), -1)
    logp = []
    for o in options:
        total = float(first[o[0]])
        if len(o) > 1:
            logits = model(input_ids=torch.as_tensor(o[:-1])[None], cache=copy.deepcopy(cache),
                           use_cache=True).logits[0].double()
            lp = torch.log_softmax(logits, -1)
            total += float(lp[torch.arange(len(o) - 1), torch.as_tensor(o[1:])].sum())
        logp.append(total)
    return np.array(logp)


def cases(loaded, items, order, templates, n: int, k: int, count: int):
    """(item id, ids, owners, letters, options, target) of `count` T1 prompts with k shots."""
    answers = Answers(loaded.tokenizer)
    out = []
    for item, variables in items_with(items, order, n, count):
        pool = [items[i] for i in order if items[i].id != item.id]
        p = render(templates["T1"], item, variables, pool[:k], templates)
        ids, owners, _, letters, options = encode_prompt(answers, item, p)
        out.append((item.id, ids, owners, letters[0], options, [letters[0][item.gold]]))
    return out


def run_case(loaded, flops: Flops, engine: Engine, case, args) -> dict:
    """Time old / one at a time / new (interleaved) and v on one prompt; print its row."""
    label, ids, owners, letters, options, target = case
    model = loaded.model
    L = len(ids)
    longer = [len(o) - 1 for o in options if len(o) > 1]  # the rows of the options' forward
    old = old_unmasked(model, ids, letters, options)  # warm-up and the reference values
    new = engine.unmasked(ids, letters, options)
    seq = one_at_a_time(model, ids, options)
    assert new.greedy == old[0], "greedy token differs"
    err = max(float(np.abs(new.letter_logit - old[1]).max()),
              float(np.abs(new.option_logp - old[2]).max()),
              float(np.abs(new.hidden - old[3]).max()), float(np.abs(seq - old[2]).max()))
    t_old, t_seq, t_new, cpus = [], [], [], []
    for _ in range(args.repeats):
        for times, fn in ((t_old, lambda: old_unmasked(model, ids, letters, options)),
                          (t_seq, lambda: one_at_a_time(model, ids, options)),
                          (t_new, lambda: engine.unmasked(ids, letters, options))):
            _, t, _, cpu = measure(fn)
            times.append(t)
            cpus.append(cpu)
    t_old, t_seq, t_new = (float(np.median(t)) for t in (t_old, t_seq, t_new))
    stats = engine.trie.stats if engine.trie is not None and engine.trie.active else None
    before = (stats.tokens, stats.projected) if stats else (0, 0)
    _, t_v, _, cpu_v = measure(lambda: engine.values(ids, owners, args.n, target))
    if stats and stats.tokens > before[0]:
        tokens_v, rows_v = stats.tokens - before[0], stats.projected - before[1]
    else:  # the plain scorer: every mask's whole row, one position projected
        tokens_v, rows_v = (1 << args.n) * L, 1 << args.n
    P2, H2 = flops.per_token, flops.per_logit_row  # 2·P and 2·H
    f_old = P2 * sum(L + len(o) - 1 for o in options) + H2 * sum(len(o) for o in options)
    f_old += P2 * L + H2  # the prompt's own forward
    f_new = (P2 + H2) * len(longer) * max(longer, default=0) + P2 * L + H2
    f_v = P2 * tokens_v + H2 * rows_v
    prefix = int(np.flatnonzero(owners >= 0)[0])  # tokens before the first variable
    r = dict(model=loaded.spec.name, label=label, L=L, lengths=[len(o) for o in options],
             t_old=t_old, t_seq=t_seq, t_new=t_new, t_v=t_v, err=err,
             cpu=min(min(cpus), cpu_v), f_old=f_old, f_new=f_new, f_v=f_v,
             prefix=prefix, tokens_v=tokens_v)
    share_old = t_old / (t_v + t_old)
    saved = (t_old - t_new) / (t_v + t_old)
    print(f"{label:<22}{L:>6}{t_old:>8.2f}{t_seq:>8.2f}{t_new:>8.2f}{t_old / t_new:>7.2f}"
          f"{t_v:>8.2f}{t_v + t_old:>8.2f}{t_v + t_new:>8.2f}{100 * share_old:>7.1f}"
          f"{100 * t_new / (t_v + t_new):>7.1f}{100 * saved:>7.1f}{err:>10.1e}"
          f"{100 * r['cpu']:>6.0f}   options {r['lengths']} tokens; v ran {tokens_v} tokens, "
          f"{prefix} of the prompt's before its first variable")
    return r


def main() -> None:
    args = parse_args()
    run = start(args.threads, f"n = {args.n}, scorer {args.scorer}, {args.repeats} repeats")
    items, order, templates = run.items, run.order, run.templates
    results = []
    for name in args.models:
        t0 = time.perf_counter()
        loaded = load_named(name, args.cache_dir, args.threads)
        flops = Flops(loaded.model)
        print(f"\nmodel {name}: loaded in {time.perf_counter() - t0:.1f} s, {loaded.dtype}, "
              f"{flops.per_token / 2e6:.0f}M linear params per token, "
              f"resident {status_mb('VmRSS'):.0f} MB")
        engine = Engine(loaded.model, loaded.baseline, args.batch_tokens, loaded.device,
                        scorer=args.scorer)
        if engine.trie is not None:
            engine.trie.check = False  # time the steady state (the check runs once per run)
        print(f"{'case (T1, item)':<22}{'tokens':>6}{'old s':>8}{'1by1 s':>8}{'new s':>8}"
              f"{'x':>7}{'v s':>8}{'before':>8}{'after':>8}{'%old':>7}{'%new':>7}"
              f"{'%saved':>7}{'max|d|':>10}{'cpu%':>6}")
        for k in args.shots:
            for case in cases(loaded, items, order, templates, args.n, k, args.items):
                results.append(run_case(loaded, flops, engine, (f"{k}-shot {case[0]}",) + case[1:],
                                        args))
        del loaded, engine
        gc.collect()
    report(results, run)


def report(results, run) -> None:
    """The matmul rate after the cases; per model, the mean shares and the FLOP rates."""
    rate = finish(run)
    for name in dict.fromkeys(r["model"] for r in results):
        rs = [r for r in results if r["model"] == name]
        old = sum(r["t_old"] for r in rs)
        new = sum(r["t_new"] for r in rs)
        seq = sum(r["t_seq"] for r in rs)
        v = sum(r["t_v"] for r in rs)
        gf = lambda f, t: f"{f / t / 1e9:.0f} GFLOP/s ({f / t / rate:.2f})"  # noqa: E731
        print(f"{name}: {len(rs)} prompts; unmasked old {old:.2f} s, one at a time {seq:.2f} s, "
              f"new {new:.2f} s ({old / new:.2f}x); v {v:.2f} s; per-condition scoring "
              f"{v + old:.2f} -> {v + new:.2f} s: unmasked share {100 * old / (v + old):.1f} % "
              f"-> {100 * new / (v + new):.1f} %, {100 * (old - new) / (v + old):.1f} % of "
              f"scoring time saved; max|d| {max(r['err'] for r in rs):.1e}; min cpu% "
              f"{100 * min(r['cpu'] for r in rs):.0f}")
        print(f"{name}: FLOP rate (of the matmul rate): v {gf(sum(r['f_v'] for r in rs), v)}, "
              f"unmasked old {gf(sum(r['f_old'] for r in rs), old)}, new "
              f"{gf(sum(r['f_new'] for r in rs), new)}, scoring after "
              f"{gf(sum(r['f_v'] + r['f_new'] for r in rs), v + new)}")


if __name__ == "__main__":
    main()
