"""Benchmark of the shared-prefix (trie) scorer against the plain batched scorer.

Run:  .venv/bin/python benchmarks/bench_trie.py [--quick] [--threads 2] [--profile]

Side by side in one process, for SmolLM2-135M-Instruct and Gemma 3 270M (converted once to
resources/models/), ARC-Easy T1 prompts with 0 and 3 solved examples and n = 6, 8, 10
variables (the first bundled item, in the seeded order of bench_scoring.py, with exactly n
content variables; the shots are the next items of that order): all 2**n masked
evaluations by `Engine(scorer="plain")` and by `TrieScorer`, timed around each other (trie,
plain, trie, trie: the trie's time is the median of its three runs). Printed per case:

- masked evaluations per second of each, and their ratio (the speed-up);
- tokens computed by the trie against the plain scorer's 2**n × row length;
- achieved FLOP/s of each: useful FLOPs (the decoder's linear layers per token computed,
  4·heads·head_dim per attended (query, key) pair and layer, the output projection per
  projected position) over the time, against this machine's float32 matmul rate (a 2048³
  sgemm, best of ~1 s, measured before and after the cases; the larger is used);
- the peak resident memory above the loaded model (VmHWM) and the trie's stored keys/values;
- max |v_trie − v_plain| over all masks;
- cpu%: the process's CPU time over wall time × threads (the lowest of the trie's runs):
  well below 100, other processes slowed the run (the machine is shared), and a warning
  says that the case's times are not comparable.

`--quick` runs SmolLM2 at n = 8, 0-shot and 3-shot. The full run adds n = 12 for the trie
alone (memory). `--design F` scores a sparse design of F·2^n masks
(`ips.interactions.design.design`) instead of all of them, with both scorers: the trie then shares
only the tokens before the first variable. Every run ends with one line per case:
`speedup <model> <k>-shot n=<n>: <ratio>x max|dv|=<err>`.
"""

from __future__ import annotations

import argparse
import gc
import time
from fractions import Fraction
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch

from common import MODELS, Flops, finish, measure, prompt_case, start, status_mb
from ips.interactions.design import design
from ips.models.entries import ModelSpec
from ips.models.loading import load_model
from ips.scoring.engine import Engine
from ips.scoring.trie import TrieScorer, trie_budget


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="SmolLM2, n = 8, 0- and 3-shot")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-tokens", type=int, default=1024,
                        help="the plain scorer's tokens per forward (config batch_tokens)")
    parser.add_argument("--budget", type=int, default=None,
                        help="the trie's tokens per forward (default: trie_budget(batch_tokens))")
    parser.add_argument("--models", nargs="*", default=None, choices=list(MODELS))
    parser.add_argument("--ns", nargs="*", type=int, default=None)
    parser.add_argument("--shots", nargs="*", type=int, default=None)
    parser.add_argument("--profile", action="store_true",
                        help="print a torch profile of the trie on the last case")
    parser.add_argument("--cache-dir", type=Path, default=Path("resources/models"))
    parser.add_argument("--design", type=Fraction, default=None, metavar="F",
                        help="score a sparse design of F * 2**n masks (e.g. 1/4)")
    args = parser.parse_args()
    args.models = args.models or (["smollm2-135m-instruct"] if args.quick else list(MODELS))
    args.ns = args.ns or ([8] if args.quick else [6, 8, 10])
    args.shots = args.shots if args.shots is not None else [0, 3]
    args.budget = args.budget or trie_budget(args.batch_tokens)
    return args


class Case(NamedTuple):
    ids: np.ndarray
    owners: np.ndarray
    target: list[int]
    n: int
    label: str


def prompt(loaded, items, order, templates, n: int, k: int) -> Case:
    """The benchmark prompt with n variables and k solved examples (`common.prompt_case`)."""
    _, ids, owners, target = prompt_case(loaded.tokenizer, items, order, templates, n, k)
    return Case(ids, owners, target, n, f"{k}-shot n={n}")


def load(name: str, args):
    t0 = time.perf_counter()
    loaded = load_model(ModelSpec.from_config(name, MODELS[name]), cache_dir=args.cache_dir,
                    threads=args.threads)
    flops = Flops(loaded.model)
    print(f"\nmodel {name}: loaded in {time.perf_counter() - t0:.1f} s, {loaded.dtype}, mask "
          f"{loaded.mask_token!r}, {flops.per_token / 2e6:.0f}M linear params per token, "
          f"resident {status_mb('VmRSS'):.0f} MB")
    with torch.inference_mode():  # warm-up: one-time allocations and kernel choices
        loaded.model(input_ids=torch.ones(4, 64, dtype=torch.long), logits_to_keep=1)
    return loaded, flops


def side_by_side(loaded, flops, case: Case, args, rate: float):
    """Time plain and trie on one prompt (trie, plain, trie, trie), print their two rows and
    return (speed-up, max |dv|, trie FLOP/s) and the first trie scorer."""
    ids, owners, target, n, label = case
    masks = design(n, int(args.design * (1 << n))) if args.design else None
    plain = Engine(loaded.model, loaded.baseline, batch_tokens=args.batch_tokens)
    tries = [TrieScorer(loaded.model, loaded.baseline, args.budget, check=False)
             for _ in range(3)]
    runs = [measure(lambda: tries[0].values(ids, owners, n, target, masks))]
    v_p, t_p, mb_p, cpu_p = measure(lambda: plain.values(ids, owners, n, target, masks))
    runs += [measure(lambda t=t: t.values(ids, owners, n, target, masks)) for t in tries[1:]]
    times = [r[1] for r in runs]
    t_t = float(np.median(times))  # robust to one run slowed by other processes
    mb_t, cpu_t = max(r[2] for r in runs), min(r[3] for r in runs)
    err = max(float(np.abs(r[0] - v_p).max()) for r in runs)
    st = tries[0].stats
    rows, length = (1 << n) if masks is None else len(masks), len(ids)
    f_p, f_t = flops.plain(rows, length, 1), flops.trie(st)
    print(f"{label:<14}{length:>7}{'plain':>7}{rows / t_p:>9.1f}{1.0:>7.2f}"
          f"{rows * length:>12}{f_p / t_p / 1e9:>9.1f}{100 * f_p / t_p / rate:>6.0f}"
          f"{mb_p:>9.0f}{'':>7}{'':>10}{100 * cpu_p:>6.0f}")
    print(f"{'':<14}{'':>7}{'trie':>7}{rows / t_t:>9.1f}{t_p / t_t:>7.2f}"
          f"{st.tokens:>12}{f_t / t_t / 1e9:>9.1f}{100 * f_t / t_t / rate:>6.0f}"
          f"{mb_t:>9.0f}{st.peak_stored / 2**20:>7.0f}{err:>10.1e}{100 * cpu_t:>6.0f}"
          f"   ({st.forwards} forwards, {st.plain_tokens / st.tokens:.1f}x fewer "
          f"tokens; {' '.join(f'{t:.1f}' for t in times)} s vs {t_p:.1f} s)")
    if min(cpu_p, cpu_t) < 0.85:
        print(f"{'':<14}warning: other processes took CPU time during this case "
              "(cpu% column); its times are not comparable")
    return (t_p / t_t, err, f_t / t_t), tries[0]


def trie_alone(loaded, name: str, case: Case, args) -> str:
    """The trie's time and memory on one prompt, without the plain scorer (n = 12)."""
    ids, owners, target, n, label = case
    tr = TrieScorer(loaded.model, loaded.baseline, args.budget)
    _, t, mb, _ = measure(lambda: tr.values(ids, owners, n, target))
    st = tr.stats
    return (f"trie only {name} {label} ({len(ids)} tokens): {t:.1f} s, {(1 << n) / t:.0f} "
            f"evals/s, peak +{mb:.0f} MB (keys/values {st.peak_stored / 2**20:.0f} MB), "
            f"{st.tokens} of {st.plain_tokens} tokens")


def main() -> None:
    args = parse_args()
    run = start(args.threads,
                f"plain batch_tokens {args.batch_tokens}, trie budget {args.budget}")
    items, order, templates = run.items, run.order, run.templates
    results, extra = [], []
    for name in args.models:
        loaded, flops = load(name, args)
        print(f"{'case':<14}{'tokens':>7}{'scorer':>7}{'evals/s':>9}{'x':>7}{'tokens run':>12}"
              f"{'GFLOP/s':>9}{'% mm':>6}{'peak +MB':>9}{'KV MB':>7}{'max|dv|':>10}{'cpu%':>6}")
        for n in args.ns:
            for k in args.shots:
                case = prompt(loaded, items, order, templates, n, k)
                row, trie = side_by_side(loaded, flops, case, args, run.rate)
                results.append((name, k, n, *row))
            if args.profile and n == args.ns[-1]:
                profile(trie, case.ids, case.owners, n, case.target)
        if not args.quick:
            for k in args.shots:  # memory at n = 12, the trie alone (plain would take ~4x n = 10)
                try:
                    case = prompt(loaded, items, order, templates, 12, k)
                except SystemExit:
                    break
                extra.append(trie_alone(loaded, name, case, args))
                print(extra[-1])
        del loaded
        gc.collect()
    report(results, extra, run)


def report(results, extra, run) -> None:
    """The matmul rate after the cases and one line per case."""
    rate = finish(run)
    for name, k, n, _, _, achieved in results:
        print(f"trie {name} {k}-shot n={n}: {achieved / 1e9:.0f} GFLOP/s = "
              f"{achieved / rate:.2f} of the matmul rate")
    for line in extra:
        print(line)
    for name, k, n, ratio, err, _ in results:
        print(f"speedup {name} {k}-shot n={n}: {ratio:.2f}x max|dv|={err:.1e}")


def profile(scorer: TrieScorer, ids, owners, n, target) -> None:
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
        scorer.values(ids, owners, n, target)
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=15))


if __name__ == "__main__":
    main()
