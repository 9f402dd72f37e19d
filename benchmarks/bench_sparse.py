"""Benchmark of sparse AND-OR estimation (ips.interactions.sparse) against the exact fit on real
models.

Run:  .venv/bin/python benchmarks/bench_sparse.py [--quick] [--threads 2] [--cache DIR]
      [--models M ...] [--datasets D ...] [--ns N ...] [--budgets 1/8 1/4 ...]

For each model (default: SmolLM2-135M-Instruct and Gemma 3 270M) and dataset of config.yaml
(default: arc-easy, mmlu, dolly), the first `--items` items of the dataset's seeded order
with at least n content units (all fields; their n longest kept, as the workflow's
`reduce: longest`) are rendered with two templates (T1, T2 for MCQ; A1, A2 for instructions:
one template pair per item) and scored on all 2**n masks by the workflow's own code
(`ips.scoring.engine.score_sample`, trie scorer, the kind's default target); the games are cached
under `--cache` (default results/bench_sparse/) so that a rerun only fits. The exact
interactions are `and_or(v, solver="auto")`. For every budget fraction β (default 1/32 …
1/2) the sparse estimate sees only the values on `sparse.design(n, β·2^n)` and is compared
with the exact fit of the same game:

- jaccard: |Ŝ ∩ S| / |Ŝ ∪ S| of the salient sets (|Ĩ| > τ, kind and S) of sparse and exact,
  mean over (item, template);
- mean|dIPS|: mean over (item, pair) of |ips_sparse(x,T,T̂) − ips_exact(x,T,T̂)|;
- spearman: rank correlation over items of the per-sample IPS (needs ≥ 3 items);
- |dIPS_low|, |dIPS_mid|, |dIPS_high|: the same as mean|dIPS| within the order bands (over
  the pairs with a value, i.e. a salient interaction of that band, on both sides);
- heldout: the estimate's own relative held-out error (`SparseInteractions.heldout_error`,
  on masks outside the design), mean over games; full: its relative error on all 2^n masks;
- floor J, floor dIPS: the noise floor: Jaccard and mean|dIPS| of the *exact* fit of
  v + Gaussian noise (standard deviation = the case's `full` error times the range of v, seed
  fixed) against the exact fit of v. No estimator whose values are off by that much can be
  expected to do better, whatever it does with them;
- null J, null dIPS: the same for the Gaussian null at `--null-level` (default 1 % of the
  range of v, docs/method.md#nulls), once per n: what unstructured noise of a fixed size
  does to the exact fit at this n, to read the estimate's Jaccard and |dIPS| against.

Every run ends with one line per case:
`sparse n=<n> budget=<fraction>: mean|dIPS|=<x> jaccard=<y>` (one per model and dataset,
named before it). `--quick`: SmolLM2 on arc-easy, n = 12, 3 items, budgets 1/8 and 1/4.
"""

from __future__ import annotations

import argparse
import time
from fractions import Fraction
from pathlib import Path

import numpy as np
import scipy.stats
import torch

from common import DATASETS, MODELS, dataset_items
from ips.analysis import sparse_metrics
from ips.analysis.layout import BANDS
from ips.analysis.metrics import DEFAULT_TAU
from ips.config import TARGETS
from ips.formats import interactions
from ips.interactions import and_or, design, sparse
from ips.models.entries import ModelSpec
from ips.models.loading import load_model
from ips.prompts.samples import Sample
from ips.prompts.templates import Condition, load_templates, render
from ips.prompts.variables import select_variables
from ips.scoring.engine import Answers, Engine, score_sample

#: the template pair of each item kind
TEMPLATES = {"mcq": ("T1", "T2"), "instruction": ("A1", "A2")}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n = 12; β = 1/8, 1/4")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--models", nargs="+", default=None, choices=list(MODELS))
    parser.add_argument("--datasets", nargs="+", default=None, choices=list(DATASETS))
    parser.add_argument("--ns", nargs="*", type=int, default=None)
    parser.add_argument("--items", type=int, default=None, help="items per n (default 3)")
    parser.add_argument("--budgets", nargs="*", type=Fraction, default=None,
                        help="fractions of 2**n, e.g. 1/8 1/4")
    parser.add_argument("--tau", type=float, default=DEFAULT_TAU)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache", type=Path, default=Path("results/bench_sparse"))
    parser.add_argument("--cache-dir", type=Path, default=Path("resources/models"))
    parser.add_argument("--score-only", action="store_true", help="fill the cache and stop")
    parser.add_argument("--no-floor", dest="floor", action="store_false",
                        help="skip the noise floor and the null (exact fits of v plus noise)")
    parser.add_argument("--null-level", type=float, default=0.01,
                        help="Gaussian null: noise of this share of the range of v (default "
                        "0.01)")
    args = parser.parse_args()
    args.models = args.models or (["smollm2-135m-instruct"] if args.quick else list(MODELS))
    args.datasets = args.datasets or (["arc-easy"] if args.quick else list(DATASETS))
    args.ns = args.ns or ([12] if args.quick else [8, 10, 12])
    args.items = args.items or 3
    args.budgets = args.budgets or ([Fraction(1, 8), Fraction(1, 4)] if args.quick else
                                    [Fraction(1, 2 ** k) for k in (5, 4, 3, 2, 1)])
    return args


def items_with_units(name: str, n: int, count: int):
    """The first `count` items of dataset `name` (seeded order) with at least n content units
    over all fields, each with its n longest (the workflow's `reduce: longest`)."""
    items, order = dataset_items(name)
    found = []
    for i in order:
        variables = select_variables(items[i], n_max=n)
        if len(variables) == n:
            found.append((items[i], variables))
            if len(found) == count:
                return found
    raise SystemExit(f"{name}: only {len(found)} items have {n} content units")


def games(args, model: str, dataset: str) -> dict[int, np.ndarray]:
    """v of every (item, template) for each n, shape (items, 2, 2**n); each game is scored
    once and cached as <cache>/<model>/<dataset>/n<n>/<item id>_<template>.npy."""
    templates = load_templates()
    engine = answers = None
    out = {}
    for n in args.ns:
        t0, fresh = time.perf_counter(), 0
        v = np.empty((args.items, 2, 1 << n))
        for a, (item, variables) in enumerate(items_with_units(dataset, n, args.items)):
            names = TEMPLATES[item.kind]
            paths = [args.cache / model / dataset / f"n{n}" / f"{item.id}_{t}.npy" for t in names]
            if all(p.exists() for p in paths):
                v[a] = [np.load(p) for p in paths]
                continue
            if engine is None:
                torch.set_num_threads(args.threads)
                loaded = load_model(ModelSpec.from_config(model, MODELS[model]),
                                cache_dir=args.cache_dir, threads=args.threads)
                engine = Engine(loaded.model, loaded.baseline, 1024, loaded.device,
                                scorer="trie")
                answers = Answers(loaded.tokenizer)
            conditions = [Condition(t, t) for t in names]
            sample = Sample(item, variables, {t: render(templates[t], item, variables, (),
                                                         templates) for t in names})
            v[a] = score_sample(engine, answers, sample, conditions, TARGETS[item.kind][0])["v"]
            for p, row in zip(paths, v[a]):
                p.parent.mkdir(parents=True, exist_ok=True)
                np.save(p, row)
            fresh += 2
        if fresh:
            print(f"{model} {dataset}: scored n={n}: {fresh} games in "
                  f"{time.perf_counter() - t0:.0f} s", flush=True)
        out[n] = v
    return out


def exact_fits(args, where: Path, v: np.ndarray) -> np.ndarray:
    """and_or(v, solver="auto") of every game as (items, 2, 2 kinds, 2**n), cached."""
    path = where / f"exact_items{len(v)}.npy"
    if path.exists():
        return np.load(path)
    res = and_or(v, solver="auto")
    out = np.stack([res.and_, res.or_], axis=-2)
    np.save(path, out)
    return out


def sparse_fit(args, where: Path, n: int, a: int, b: int, v: np.ndarray, frac: Fraction):
    """The estimate of game (item a, template b) from the design of budget frac·2**n, cached.

    The budget includes the held-out masks: the fit uses 90 % of the design's middle masks
    and measures `heldout_error` on the rest (no refit)."""
    budget = int(frac * (1 << n))
    path = where / f"estimate_{a}_{b}_{budget}_{args.seed}.npz"
    if path.exists():
        with np.load(path) as z:
            est = interactions.from_arrays(z, [n], 0, 0)
            est.info["seconds"] = float(z["seconds"])
        return est
    d = design.design(n, budget, seed=args.seed)
    est = sparse.estimate(d, v[d], n, refit=False, seed=args.seed)
    np.savez(path, **interactions.to_arrays([[est]]), seconds=est.info["seconds"])
    return est


def jaccard(a: sparse.SparseInteractions, b: sparse.SparseInteractions, tau: float) -> float:
    sa, sb = (set(zip(e.kinds[m].tolist(), e.masks[m].tolist()))
              for e, m in ((a, sparse_metrics.salient(a, tau)), (b, sparse_metrics.salient(b, tau))))
    return len(sa & sb) / len(sa | sb) if sa | sb else 1.0


def exact_games(exact: np.ndarray) -> list[list[sparse.SparseInteractions]]:
    return [[sparse.from_dense(exact[a, b, 0], exact[a, b, 1]) for b in range(exact.shape[1])]
            for a in range(len(exact))]


def against_noise(args, v: np.ndarray, exact: np.ndarray, relative: float) -> tuple[float, float]:
    """Jaccard and mean|dIPS| of the exact fit of v + Gaussian noise of `relative` × the
    range of v (seed fixed) against the exact fit of v."""
    ex = exact_games(exact)
    rng = np.random.default_rng(args.seed)
    noisy = v + rng.normal(size=v.shape) * relative * np.ptp(v, axis=-1, keepdims=True)
    fit = and_or(noisy, solver="auto")
    nx = [[sparse.from_dense(fit.and_[a, b], fit.or_[a, b]) for b in range(v.shape[1])]
          for a in range(len(v))]
    ips_x = np.array([sparse_metrics.pair_ips(*ee, args.tau) for ee in ex])
    ips_n = np.array([sparse_metrics.pair_ips(*pair, args.tau) for pair in nx])
    return (float(np.mean([jaccard(s, e, args.tau) for pair, ee in zip(nx, ex)
                           for s, e in zip(pair, ee)])),
            float(np.nanmean(np.abs(ips_n - ips_x))))


def compare(args, where: Path, n: int, v: np.ndarray, exact: np.ndarray, frac: Fraction) -> dict:
    """The metrics of one (n, budget) case over all items (one template pair per item)."""
    ex = exact_games(exact)
    sp = [[sparse_fit(args, where, n, a, b, v[a, b], frac) for b in range(v.shape[1])]
          for a in range(len(v))]
    everything = np.arange(1 << n)
    row = {"jaccard": np.mean([jaccard(s, e, args.tau) for pair, ee in zip(sp, ex)
                               for s, e in zip(pair, ee)])}
    ips_x = np.array([sparse_metrics.pair_ips(*ee, args.tau) for ee in ex])
    ips_s = np.array([sparse_metrics.pair_ips(*pair, args.tau) for pair in sp])
    row["dips"] = float(np.nanmean(np.abs(ips_s - ips_x)))
    row["spearman"] = (float(scipy.stats.spearmanr(ips_s, ips_x).statistic)
                       if len(v) >= 3 else float("nan"))
    for band in BANDS:
        bx = np.array([sparse_metrics.pair_ips(*ee, args.tau, band) for ee in ex])
        bs = np.array([sparse_metrics.pair_ips(*pair, args.tau, band) for pair in sp])
        both = ~np.isnan(bx) & ~np.isnan(bs)  # pairs with a value on both sides
        diff = np.abs(bs - bx)[both]
        row[band] = float(diff.mean()) if diff.size else float("nan")
    flat = [(s, v[a, b]) for a, pair in enumerate(sp) for b, s in enumerate(pair)]
    row["heldout"] = float(np.mean([s.heldout_error for s, _ in flat]))
    row["full"] = float(np.mean([np.sqrt(np.mean((s.predict(everything) - w) ** 2)) / np.ptp(w)
                                 for s, w in flat]))
    row["entries"] = float(np.mean([len(s) for s, _ in flat]))
    row["exact_salient"] = float(np.mean([sparse_metrics.salient(e, args.tau).sum()
                                          for ee in ex for e in ee]))
    row["seconds"] = float(np.mean([s.info.get("seconds", np.nan) for s, _ in flat]))
    row["floor_j"], row["floor_dips"] = (against_noise(args, v, exact, row["full"])
                                         if args.floor else (float("nan"), float("nan")))
    row["ips_exact"] = float(np.nanmean(ips_x))
    row["ips_sparse"] = float(np.nanmean(ips_s))
    return row


COLUMNS = [("n", "{:>3}"), ("budget", "{:>6}"), ("jaccard", "{:>7.3f}"), ("dips", "{:>10.3f}"),
           ("spearman", "{:>8.2f}"), ("low", "{:>6.3f}"), ("mid", "{:>6.3f}"),
           ("high", "{:>7.3f}"), ("heldout", "{:>7.4f}"), ("full", "{:>6.4f}"),
           ("entries", "{:>7.0f}"), ("exact_salient", "{:>7.1f}"), ("ips_exact", "{:>6.3f}"),
           ("ips_sparse", "{:>6.3f}"), ("floor_j", "{:>7.3f}"), ("floor_dips", "{:>10.3f}"),
           ("null_j", "{:>6.3f}"), ("null_dips", "{:>9.3f}"), ("seconds", "{:>5.1f}")]
HEADS = ["n", "budget", "jaccard", "mean|dIPS|", "spearman", "|dlow|", "|dmid|", "|dhigh|",
         "heldout", "full", "entries", "salient", "IPS_ex", "IPS_sp", "floor J", "floor dIPS",
         "null J", "null dIPS", "s/fit"]


def main() -> None:
    args = parse_args()
    t0 = time.perf_counter()
    rows = []
    for model in args.models:
        for dataset in args.datasets:
            data = games(args, model, dataset)
            if args.score_only:
                continue
            for n, v in data.items():
                where = args.cache / model / dataset / f"n{n}"
                exact = exact_fits(args, where, v)
                null_j, null_dips = (against_noise(args, v, exact, args.null_level)
                                     if args.floor else (float("nan"), float("nan")))
                for frac in args.budgets:
                    rows.append({"model": model, "dataset": dataset, "n": n, "budget": str(frac),
                                 **compare(args, where, n, v, exact, frac),
                                 "null_j": null_j, "null_dips": null_dips})
                    print(f"done {model} {dataset} n={n} budget={frac} after "
                          f"{time.perf_counter() - t0:.0f} s", flush=True)
    if not rows:
        return
    widths = [int(fmt[3:].split(".")[0].rstrip("}")) for _, fmt in COLUMNS]
    for key in dict.fromkeys((r["model"], r["dataset"]) for r in rows):
        print(f"\n{key[0]} on {key[1]}")
        print(" ".join(f"{h:>{w}}" for h, w in zip(HEADS, widths)))
        for r in rows:
            if (r["model"], r["dataset"]) == key:
                print(" ".join(fmt.format(r[k]) for k, fmt in COLUMNS))
    print(f"(tau = {args.tau}; {args.items} items x 2 templates per model, dataset and n; "
          f"total {time.perf_counter() - t0:.0f} s)")
    for key in dict.fromkeys((r["model"], r["dataset"]) for r in rows):
        print(f"{key[0]} on {key[1]}:")
        for r in rows:
            if (r["model"], r["dataset"]) == key:
                print(f"sparse n={r['n']} budget={r['budget']}: mean|dIPS|={r['dips']:.3f} "
                      f"jaccard={r['jaccard']:.3f} (Gaussian null {args.null_level:g}: "
                      f"mean|dIPS|={r['null_dips']:.3f} jaccard={r['null_j']:.3f})")
    print("targets (n = 12, budget ≤ 1/4): mean|dIPS| ≤ 0.05 and jaccard ≥ 0.8")


if __name__ == "__main__":
    main()
