"""How much the choice of optimum of Eq. 12 moves the results: canonical vs the paper's sgd.

Run:  .venv/bin/python benchmarks/bench_optimum.py [--values GLOB ...] [--quick]
                                                   [--sgd-learning-rate LR] [--sgd-steps K]

Eq. 12 has a large optimal face. The pipeline reports the canonical optimum (the ℓ1-optimal
split of least ℓ2 norm, ``solver="auto"``); the paper learns γ by gradient descent from 0
(Appendix D), ``solver="sgd"``, which lands on another point of (or near) the face. On real
games, the values files written by ``ips score`` (default: ``results/values/*/*/*.h5``), this
fits every (sample, condition) row both ways and prints

* per game: the Jaccard overlap of the salient sets {(kind, S): |Ĩ| > τ} (τ = 0.1, Ĩ of
  ``ips.analysis.metrics.normalize``), the relative objective excess of sgd over the canonical
  optimum, and sgd's certified duality gap;
* per (sample, condition pair) of each condition group: |Δ ips(x, T, T̂)| for the bands all /
  low / mid / high (``ips.analysis.metrics.ips``, as ``ips.formats.metrics`` computes it);
* per (model, dataset, group): IPS and IPS^low/mid/high under both optima and their change;

each with mean, median and n. The objective excess separates the two effects: where it is
≈ 0, sgd is on the optimal face and the difference is the choice of optimum alone; where it
is not, sgd has not reached the optimum (slow at n ≥ 7: raise --sgd-steps, lower the rate).
``--quick`` uses the first values file only.
"""

from __future__ import annotations

import argparse
import glob
import json
import time
from collections import defaultdict

import numpy as np

from ips.analysis import metrics
from ips.formats.metrics import BANDS
from ips.formats.shards import read_shard
from ips.interactions import SGD_LEARNING_RATE, SGD_STEPS, and_or


def fit_all(v: np.ndarray, n_vars: np.ndarray, **kwargs):
    """and_, or_ (sample, condition, mask; NaN padding), objective and gap (sample, condition)."""
    and_, or_ = np.full(v.shape, np.nan), np.full(v.shape, np.nan)
    obj, gap = np.full(v.shape[:2], np.nan), np.full(v.shape[:2], np.nan)
    for n in np.unique(n_vars).tolist():
        idx = np.flatnonzero(n_vars == n)
        res = and_or(v[idx, :, : 1 << n], **kwargs)
        and_[idx, :, : 1 << n], or_[idx, :, : 1 << n] = res.and_, res.or_
        obj[idx], gap[idx] = res.objective, res.duality_gap
    return and_, or_, obj, gap


def stats(x) -> str:
    x = np.asarray(x, float)
    x = x[~np.isnan(x)]
    if not x.size:
        return f"{'—':>9} {'—':>9} {'—':>9} {0:>5}"
    return f"{x.mean():9.4f} {np.median(x):9.4f} {x.max():9.4f} {x.size:>5}"


def jaccard(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|A ∩ B| / |A ∪ B| over the last two axes (kind, mask); NaN where both are empty."""
    inter = (a & b).sum((-2, -1))
    union = (a | b).sum((-2, -1))
    return np.where(union > 0, inter / np.maximum(union, 1), np.nan)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--values", nargs="+", default=["results/values/*/*/*.h5"],
                        help="glob(s) of values files written by `ips score`")
    parser.add_argument("--quick", action="store_true", help="the first values file only")
    parser.add_argument("--tau", type=float, default=metrics.DEFAULT_TAU)
    parser.add_argument("--sgd-learning-rate", type=float, default=SGD_LEARNING_RATE)
    parser.add_argument("--sgd-steps", type=int, default=SGD_STEPS)
    args = parser.parse_args()
    steps = args.sgd_steps
    paths = sorted({p for g in args.values for p in glob.glob(g)})
    if not paths:
        raise SystemExit(f"no values files match {args.values}; run the workflow (ips score) "
                         "first or pass --values")
    if args.quick:
        paths = paths[:1]

    # shards of one (model, dataset) are concatenated along sample
    merged: dict[tuple[str, str], list] = defaultdict(list)
    for p in paths:
        shard = read_shard(p)
        merged[(shard.attrs["model"], shard.attrs["dataset"])].append(shard)

    print(f"== canonical optimum (solver auto) vs sgd (learning rate {args.sgd_learning_rate:g} "
          f"→ {args.sgd_learning_rate / 10:g}, {steps} steps, momentum 0.9), τ = {args.tau}")
    print(f"   {len(paths)} values file(s): {', '.join(paths)}")
    games = defaultdict(list)  # per-game measures, over everything
    pairs = defaultdict(list)  # |Δ ips| per (sample, pair), by band
    table = []
    seconds = {"canonical": 0.0, "sgd": 0.0}
    for (model, dataset), shards in sorted(merged.items()):
        v = np.concatenate([s.v for s in shards])
        n_vars = np.concatenate([s.n_vars for s in shards])
        condition_names = [str(c) for c in shards[0].conditions["condition"]]
        groups = json.loads(shards[0].attrs["groups"])
        t0 = time.perf_counter()
        canon = fit_all(v, n_vars, solver="auto")
        seconds["canonical"] += time.perf_counter() - t0
        t0 = time.perf_counter()
        sgd = fit_all(v, n_vars, solver="sgd", learning_rate=args.sgd_learning_rate, steps=steps)
        seconds["sgd"] += time.perf_counter() - t0
        norm_c = metrics.normalize(canon[0], canon[1], n_vars[:, None])
        norm_s = metrics.normalize(sgd[0], sgd[1], n_vars[:, None])
        sal_c, sal_s = metrics.salient(norm_c, args.tau), metrics.salient(norm_s, args.tau)
        games["jaccard"] += jaccard(sal_c, sal_s).ravel().tolist()
        games["objective excess"] += (sgd[2] / canon[2] - 1).ravel().tolist()
        games["sgd certified gap"] += sgd[3].ravel().tolist()
        games["canonical certified gap"] += canon[3].ravel().tolist()
        games["salient (canonical)"] += sal_c.sum((-2, -1)).ravel().tolist()
        games["salient (sgd)"] += sal_s.sum((-2, -1)).ravel().tolist()
        games["n"] += np.repeat(n_vars, len(condition_names)).tolist()
        for group, names in groups.items():
            idx = np.array([condition_names.index(c) for c in names])
            if idx.size < 2:
                continue
            local = metrics.all_pairs(idx.size)
            row = [model, dataset, group, len(n_vars)]
            for band in BANDS:
                b = None if band == "all" else band
                rc = metrics.ips(norm_c[:, idx], local, args.tau, b)
                rs = metrics.ips(norm_s[:, idx], local, args.tau, b)
                pairs[band] += np.abs(rs.per_pair - rc.per_pair).ravel().tolist()
                row += [rc.value, rs.value]
            table.append(row)

    print(f"   fitting took {seconds['canonical']:.1f} s (canonical) and {seconds['sgd']:.1f} s "
          "(sgd)\n")
    n_games = np.asarray(games.pop("n"))
    print(f"== per game (sample, condition): {n_games.size} games, n = "
          f"{', '.join(f'{k}: {int((n_games == k).sum())}' for k in np.unique(n_games))}")
    print(f"{'':<28} {'mean':>9} {'median':>9} {'max':>9} {'n':>5}")
    for key, vals in games.items():
        print(f"{key:<28} {stats(vals)}")
    jac = np.asarray(games["jaccard"])
    for k in np.unique(n_games):
        print(f"{'jaccard, n = ' + str(k):<28} {stats(jac[n_games == k])}")
    # where sgd is on (or within 1 % of) the optimal face, the difference is the face choice
    # alone; elsewhere it also holds sgd's distance from the optimum
    on_face = np.asarray(games["objective excess"]) <= 0.01
    print(f"{'jaccard, excess <= 1%':<28} {stats(jac[on_face])}")
    print(f"{'jaccard, excess > 1%':<28} {stats(jac[~on_face])}")

    print("\n== |Δ ips(x, T, T̂)| per (sample, condition pair), canonical → sgd "
          "(pairs valued under both)")
    print(f"{'band':<28} {'mean':>9} {'median':>9} {'max':>9} {'n':>5}")
    for band in BANDS:
        print(f"{band:<28} {stats(pairs[band])}")

    print("\n== IPS per (model, dataset, group): canonical → sgd (relative change)")
    head = " ".join(f"{'IPS' + ('' if b == 'all' else '^' + b):>27}" for b in BANDS)
    print(f"{'model':<22} {'dataset':<9} {'group':<6} {'S':>3} {head}")
    for model, dataset, group, n_samples, *vals in table:
        cells = []
        for c, s in zip(vals[::2], vals[1::2]):
            rel = (s - c) / c if c else np.nan
            cells.append(f"{c:7.3f} → {s:7.3f} ({rel:+6.1%})")
        print(f"{model:<22} {dataset:<9} {group:<6} {n_samples:>3} {' '.join(cells)}")
    rel = np.array([[(s - c) / c if c else np.nan for c, s in zip(r[4::2], r[5::2])]
                    for r in table])
    if rel.size:
        print(f"{'|relative change|, mean':<42} " + " ".join(
            f"{np.nanmean(np.abs(rel[:, b])):>27.1%}" for b in range(len(BANDS))))


if __name__ == "__main__":
    main()
