"""Benchmark of the interaction core: fast transforms and the AND-OR fit (Eq. 12).

Run:  .venv/bin/python benchmarks/bench_interactions.py [--quick] [--exact-max-n N]

Prints, side by side in one run: Möbius/zeta butterflies at n = 16 (one vector) and 1,000
vectors at n = 10; and for n = 8, 10, 12, 14 the seconds per vector and the certified relative
duality gap (max and median over the games) of each solver: "exact" (HiGHS LP + optimal-face
QP, one game at a time) where it finishes, and "first_order" (ADMM on butterflies, all games in
one batch, stopping at a certified gap ≤ --tol or after its iteration budget), with the
objective ratio to exact. The "auto" column marks the solver that ``solver="auto"`` (the
default) runs at that n. Games are random log-odds-like vectors (seeded), the worst case for
sparsity.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ips.interactions import AUTO_EXACT_MAX_N, and_or, harsanyi, zeta


def timed(fn, *args, repeat: int = 3, **kwargs):
    best, out = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn(*args, **kwargs)
        best = min(best, time.perf_counter() - start)
    return best, out


def game(rng: np.random.Generator, rows: int, n: int) -> np.ndarray:
    """Random games shaped like real ones: a smooth trend in |S| plus noise."""
    sizes = np.array([bin(m).count("1") for m in range(1 << n)])
    trend = -4.0 + 6.0 * sizes / n
    return trend + rng.normal(scale=1.0, size=(rows, 1 << n))


#: first-order iteration budget per n (a game stops earlier once its gap is ≤ --tol)
BUDGET = {8: 20000, 10: 20000, 12: 20000, 14: 20000}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n = 8, 10 only, fewer vectors")
    parser.add_argument("--exact-max-n", type=int, default=10,
                        help="largest n at which the exact solver is run for comparison")
    parser.add_argument("--tol", type=float, default=1e-5,
                        help="first-order target: certified relative duality gap")
    args = parser.parse_args()
    rng = np.random.default_rng(0)

    print("== fast transforms (float64, numpy butterflies)")
    v16 = rng.normal(size=1 << 16)
    t, _ = timed(harsanyi, v16)
    print(f"harsanyi n=16, 1 vector: {t * 1e3:8.1f} ms")
    batch = rng.normal(size=(1000, 1 << 10))
    t, _ = timed(harsanyi, batch)
    print(f"harsanyi n=10, 1000 vectors: {t * 1e3:8.1f} ms ({t / 1000 * 1e6:.1f} µs/vector)")
    t, _ = timed(zeta, batch)
    print(f"zeta     n=10, 1000 vectors: {t * 1e3:8.1f} ms")

    print("\n== AND-OR fit (Eq. 12): seconds per vector, certified relative duality gap, "
          f"objective ratio (first-order tol {args.tol:g})")
    cases = [(8, 16), (10, 4)] if args.quick else [(8, 64), (10, 16), (12, 4), (14, 2)]
    header = (f"{'n':>3} {'solver':>12} {'auto':>4} {'vectors':>7} {'s/vector':>9} "
              f"{'max gap':>9} {'med gap':>9} {'obj/exact':>10} {'converged':>9} {'iters':>6}")
    print(header)
    for n, rows in cases:
        v = game(rng, rows, n)
        auto = "exact" if n <= AUTO_EXACT_MAX_N else "first_order"
        exact = None
        if n <= args.exact_max_n:
            k = min(rows, 4 if n <= 8 else 2)
            start = time.perf_counter()
            exact = and_or(v[:k], solver="exact")
            t_ex = (time.perf_counter() - start) / k
            print(f"{n:>3} {'exact':>12} {'*' if auto == 'exact' else '':>4} {k:>7} "
                  f"{t_ex:>9.3f} {exact.duality_gap.max():>9.1e} "
                  f"{np.median(exact.duality_gap):>9.1e} {1.0:>10.6f} {k:>9} {'':>6}")
        start = time.perf_counter()
        fo = and_or(v, solver="first_order", tol=args.tol, max_iter=BUDGET.get(n, 4000))
        t_fo = (time.perf_counter() - start) / rows
        if exact is not None:
            ratio = f"{(fo.objective[: len(exact.objective)] / exact.objective).max():>10.6f}"
        else:
            ratio = f"{'-':>10}"
        conv = f"{fo.info.get('converged', 0)}/{rows}"
        print(f"{n:>3} {'first_order':>12} {'*' if auto == 'first_order' else '':>4} {rows:>7} "
              f"{t_fo:>9.3f} {fo.duality_gap.max():>9.1e} {np.median(fo.duality_gap):>9.1e} "
              f"{ratio} {conv:>9} {fo.info.get('iterations', 0):>6}")


if __name__ == "__main__":
    main()
