"""What the deletion baseline costs against replacement by the model's mask token.

Run:  .venv/bin/python benchmarks/bench_deletion.py [--threads 2] [--models M ...] [--ns N ...]

Side by side in one process, for SmolLM2-135M-Instruct and Gemma 3 270M (converted once to
resources/models/), the ARC-Easy T1 prompts of benchmarks/bench_trie.py (0 and 3 solved
examples, n variables): all 2**n masked evaluations by the trie and the plain scorer, each
with the model's own mask token and with deletion (`ips.baselines.Deletion`), in the
order trie-own, trie-delete, plain-own, plain-delete, trie-own, trie-delete (a trie's time is
the lower of its two runs). Printed per case: tokens run, time, evaluations per second, and
the ratios deletion / own mask of tokens and of time for each scorer, with the CPU share
(below 85 %: other processes slowed the case, a warning says so). Under deletion the trie
leaves a prompt longer than the model's sliding window (Gemma 3: 512 tokens) to the plain
scorer; such a row says "plain". Every run ends with one line per case:
`deletion <model> <k>-shot n=<n>: trie <ratio>x time, <ratio>x tokens`.
"""

from __future__ import annotations

import argparse
import gc

import numpy as np
import torch

from common import MODELS, finish, load_named, measure, prompt_case, start, warn_if_slowed
from ips.baselines import Deletion
from ips.scoring.engine import Engine
from ips.scoring.trie import TrieScorer, trie_budget


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-tokens", type=int, default=1024)
    parser.add_argument("--models", nargs="*", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--ns", nargs="*", type=int, default=[8])
    parser.add_argument("--shots", nargs="*", type=int, default=[0, 3])
    parser.add_argument("--cache-dir", default="resources/models")
    return parser.parse_args()


def plain_tokens(owners: np.ndarray, n: int, length: int, delete: bool) -> int:
    """The tokens the plain scorer runs for all 2**n rows of `length` tokens."""
    if not delete:
        return (1 << n) * length
    counts = np.bincount(owners[owners >= 0], minlength=n)[:n]
    return int((1 << n) * length - (1 << (n - 1)) * counts.sum())


def case_rows(loaded, ids, owners, target, n: int, args) -> dict:
    """{(scorer, mask): (v, seconds, tokens, cpu share)} for the four ways of scoring."""
    masks = {"own": loaded.baseline, "delete": Deletion()}
    budget = trie_budget(args.batch_tokens)
    out: dict = {}
    for rep in range(2):
        for mask in ("own", "delete"):
            trie = TrieScorer(loaded.model, masks[mask], budget, check=False)
            v, t, _, cpu = measure(lambda tr=trie: tr.values(ids, owners, n, target))
            if v is None:  # left to the plain scorer (deletion past the sliding window)
                out[("trie", mask)] = None
                continue
            best = out.get(("trie", mask))
            if best is None or t < best[1]:
                out[("trie", mask)] = (v, t, trie.stats.tokens, cpu)
        if rep == 0:
            for mask in ("own", "delete"):
                plain = Engine(loaded.model, masks[mask], args.batch_tokens)
                v, t, _, cpu = measure(lambda p=plain: p.values(ids, owners, n, target))
                out[("plain", mask)] = (v, t, plain_tokens(owners, n, len(ids),
                                                           mask == "delete"), cpu)
    return out


def main() -> None:
    args = parse_args()
    run = start(args.threads, f"plain batch_tokens {args.batch_tokens}, trie budget "
                f"{trie_budget(args.batch_tokens)}")
    summary = []
    for name in args.models:
        loaded = load_named(name, args.cache_dir, args.threads)
        with torch.inference_mode():  # warm-up
            loaded.model(input_ids=torch.ones(4, 64, dtype=torch.long), logits_to_keep=1)
        print(f"\nmodel {name} (mask {loaded.mask_token!r})")
        print(f"{'case':<14}{'tokens':>7}{'scorer':>7}{'mask':>8}{'tokens run':>12}{'s':>8}"
              f"{'evals/s':>9}{'x tokens':>10}{'x time':>8}{'cpu%':>6}{'max|dv|':>10}")
        for n in args.ns:
            for k in args.shots:
                _, ids, owners, target = prompt_case(loaded.tokenizer, run.items, run.order,
                                                     run.templates, n, k)
                label = f"{k}-shot n={n}"
                rows = case_rows(loaded, ids, owners, target, n, args)
                for scorer in ("trie", "plain"):
                    own, gone = rows[(scorer, "own")], rows[(scorer, "delete")]
                    for mask, r in (("own", own), ("delete", gone)):
                        if r is None:
                            print(f"{label:<14}{len(ids):>7}{scorer:>7}{mask:>8}   plain "
                                  "(the prompt is longer than the sliding window)")
                            continue
                        ref = rows[("plain", mask)][0]
                        ratio = ((f"{r[2] / own[2]:>10.2f}{r[1] / own[1]:>8.2f}")
                                 if mask == "delete" else f"{'':>18}")
                        print(f"{label:<14}{len(ids):>7}{scorer:>7}{mask:>8}{r[2]:>12}"
                              f"{r[1]:>8.2f}{(1 << n) / r[1]:>9.1f}{ratio}{100 * r[3]:>6.0f}"
                              f"{float(np.abs(r[0] - ref).max()):>10.1e}")
                        warn_if_slowed(r[3])
                    if scorer == "trie" and gone is not None:
                        summary.append(f"deletion {name} {label}: trie {gone[1] / own[1]:.2f}x "
                                       f"time, {gone[2] / own[2]:.2f}x tokens")
        del loaded
        gc.collect()
    finish(run, summary)


if __name__ == "__main__":
    main()
