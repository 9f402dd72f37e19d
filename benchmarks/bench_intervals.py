"""Coverage of the claims' intervals at the sample sizes the studies have: the percentile
bootstrap the claims used before against the interval that inverts the sign-flip test.

Run:  .venv/bin/python benchmarks/bench_intervals.py [--sims 2000] [--n 3 5 8 10 20]

For each n and each law of the per-sample differences d_s (their mean is the effect), `--sims`
seeded data sets; each gets a 95 % percentile-bootstrap interval of the mean (2,000 resamples,
`uncertainty.bootstrap_ci`) and the interval of `uncertainty.sign_flip_interval` (exact test
for n ≤ 16, 9,999 sign vectors beyond). Printed per cell: how often each interval covers the
true mean, and how often it excludes 0 when the true mean is 0 (its false-positive rate, which
an interval that agrees with a 5 % test keeps at 5 % or below). The laws: normal, Student t
with 3 degrees of freedom (heavy tails), and a centred exponential (skewed, where the sign-flip
test's symmetry assumption fails). A last block does the same for ΔIPS = ΣA/ΣB − 1 with
B_s ~ U(1, 2) and A_s = 0.9·B_s + N(0, 0.1²).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ips.analysis import uncertainty

LAWS = {
    "normal": lambda rng, size: rng.standard_normal(size),
    "t3": lambda rng, size: rng.standard_t(3, size),
    "skewed": lambda rng, size: rng.exponential(1.0, size) - 1.0,
}


def covers(lo: float, hi: float, x: float) -> bool:
    return bool(lo <= x <= hi)


def mean_cell(law, n: int, sims: int, seed: int) -> tuple[float, float, float, float]:
    """(bootstrap coverage, sign-flip coverage, bootstrap excludes 0, sign-flip excludes 0)
    at true mean 0.5 (coverage) and 0 (exclusion), sd 1."""
    rng = np.random.default_rng([seed, n])
    boot_cov = flip_cov = boot_fp = flip_fp = 0
    for i in range(sims):
        z = law(rng, n)
        for shift in (0.5, 0.0):
            d = z + shift
            _, b = uncertainty.bootstrap_ci(d, seed=i)
            f = uncertainty.sign_flip_interval(d, seed=i)
            if shift:
                boot_cov += covers(*b, shift)
                flip_cov += covers(f.low, f.high, shift)
            else:
                boot_fp += not covers(*b, 0.0)
                flip_fp += not covers(f.low, f.high, 0.0)
    return boot_cov / sims, flip_cov / sims, boot_fp / sims, flip_fp / sims


def ratio_cell(n: int, sims: int, seed: int) -> tuple[float, float]:
    """(paired bootstrap coverage, sign-flip coverage) of ΔIPS = −0.1."""
    rng = np.random.default_rng([seed, n, 1])
    boot = flip = 0
    for i in range(sims):
        b = rng.uniform(1, 2, n)
        a = 0.9 * b + rng.normal(0, 0.1, n)
        t = uncertainty.paired_test(a, b, seed=i)
        f = uncertainty.sign_flip_interval(a - b, b, seed=i)
        boot += covers(*t.delta_ci, -0.1)
        flip += covers(f.low, f.high, -0.1)
    return boot / sims, flip / sims


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", type=int, default=2000)
    ap.add_argument("--n", type=int, nargs="+", default=[3, 5, 8, 10, 20])
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    t0 = time.perf_counter()
    print(f"95 % intervals, {args.sims} data sets per cell (Monte Carlo sd of a coverage near "
          f"0.95: {np.sqrt(0.95 * 0.05 / args.sims):.3f})")
    print("| law | n | bootstrap covers | sign-flip covers | bootstrap excludes 0 at 0 | "
          "sign-flip excludes 0 at 0 |")
    print("|---|---|---|---|---|---|")
    for name, law in LAWS.items():
        for n in args.n:
            bc, fc, bf, ff = mean_cell(law, n, args.sims, args.seed)
            print(f"| {name} | {n} | {bc:.3f} | {fc:.3f} | {bf:.3f} | {ff:.3f} |", flush=True)
    print("\n| ΔIPS (B ~ U(1,2), A = 0.9·B + N(0, 0.1²)) | n | paired bootstrap covers | "
          "sign-flip covers |")
    print("|---|---|---|---|")
    for n in args.n:
        bc, fc = ratio_cell(n, args.sims, args.seed)
        print(f"| | {n} | {bc:.3f} | {fc:.3f} |", flush=True)
    print(f"\n{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
