"""False positives of the control rule: a "trained" model that is one more weight draw.

Run:  .venv/bin/python benchmarks/bench_control_rule.py [--sims 2000] [--n 10] [--claims CSV]

Simulation. Every draw k (the held-out "trained" one and K twins) has an effect θ_k = μ + σ_d·z_k
(μ: an effect all draws share, so the raw test of the trained draw decides often; σ_d: the
spread between draws) measured on n items as y_ki = θ_k + u_i + σ_e·e_ki (u_i: item effects
all draws share). The trained draw's row is decided when its sign-flip test over items gives
p < 0.05 and its control test agrees in direction: with one twin, the sign-flip test of
y_trained − y_twin over items (the rule for one draw); with K twins, the prediction test of the
trained mean against the K twins' means (`uncertainty.prediction_test`). Nothing separates the
trained draw from its twins, so every decided row is a false positive; printed: the share of
rows decided by each rule.

Miniature. studies/miniature/claims.csv holds every per-model row of 50 random-weight models and
their twins; the models of one class and their twins are draws of one distribution (same class,
config and tokenizer, weights from other seeds). For each class with at least K + 1 draws and
each row they all have, a draw is held out as if trained and K others drawn as its twins
(`--trials` times, seeded); printed: how often the held-out estimate falls outside the twins'
95 % prediction interval (the control test alone: the miniature's 3 items leave no raw test
with p < 0.05 to combine it with).
"""

from __future__ import annotations

import argparse
import re
import time
from pathlib import Path

import numpy as np
import yaml

from ips.analysis import uncertainty

ROOT = Path(__file__).resolve().parents[1]
ALPHA = 0.05


def simulate(n: int, k: int, spread: float, shared: float, sims: int, seed: int):
    """Shares of rows decided by the one-draw rule and by the K-draw rule."""
    rng = np.random.default_rng(seed)
    one = several = 0
    for _ in range(sims):
        theta = shared + spread * rng.standard_normal(k + 1)
        y = theta[:, None] + rng.standard_normal(n)[None] * 0.5 + rng.standard_normal((k + 1, n))
        raw = uncertainty.sign_flip_test(y[0], seed=seed)
        if raw.p_value >= ALPHA:
            continue
        side = np.sign(raw.mean_difference)
        pair = uncertainty.sign_flip_test(y[0] - y[1], seed=seed)
        one += pair.p_value < ALPHA and np.sign(pair.mean_difference) == side
        test = uncertainty.prediction_test(y[0].mean(), y[1:].mean(1))
        several += test.p_value < ALPHA and np.sign(test.mean_difference) == side
    return one / sims, several / sims


def miniature(path: Path, k: int, trials: int, seed: int):
    """(rows tested, share outside the prediction interval) over the miniature's classes."""
    import pandas as pd

    config = yaml.safe_load((ROOT / "workflow/configs/miniature.yaml").read_text())
    cls = {m: e["source"]["random"] for m, e in config["models"].items()}
    rows = pd.read_csv(path)
    model = rows["scope"].str.split(" / ").str[0]
    of = model.str.replace(r"-twin(-\d+)?$", "", regex=True)
    rows = rows.assign(model=model, cls=of.map(cls), rest=[
        re.sub(r"^[^/]+/ ?", "", s) for s in rows["scope"]])
    rows = rows[rows["cls"].notna() & np.isfinite(rows["estimate"])]
    rng = np.random.default_rng(seed)
    tested = outside = 0
    for _, group in rows.groupby(["cls", "claim", "rest"]):
        x = group["estimate"].to_numpy(float)
        if x.size < k + 1:
            continue
        for _ in range(trials):
            pick = rng.choice(x.size, k + 1, replace=False)
            tested += 1
            outside += uncertainty.prediction_test(x[pick[0]], x[pick[1:]]).p_value < ALPHA
    return tested, outside / max(tested, 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", type=int, default=2000)
    ap.add_argument("--n", type=int, default=10, help="items per row")
    ap.add_argument("--trials", type=int, default=20, help="held-out draws per miniature row")
    ap.add_argument("--claims", type=Path, default=ROOT / "studies/miniature/claims.csv")
    args = ap.parse_args()
    t0 = time.perf_counter()
    mc = 1.96 * np.sqrt(ALPHA * (1 - ALPHA) / args.sims)
    print(f"simulation: n = {args.n} items, {args.sims} rows a cell (Monte Carlo ±{mc:.3f} "
          f"at 5 %); item noise sd 1, shared item effects sd 0.5")
    print("| spread between draws σ_d | shared effect μ | K | one twin decides | K twins decide |")
    print("|---|---|---|---|---|")
    for spread in (0.0, 0.25, 0.5, 1.0):
        for shared in (0.0, 1.0):
            for k in (3, 5):
                a, b = simulate(args.n, k, spread, shared, args.sims, seed=k)
                print(f"| {spread:g} | {shared:g} | {k} | {a:.3f} | {b:.3f} |")
    for k in (3, 5):
        tested, share = miniature(args.claims, k, args.trials, seed=k)
        print(f"miniature, K = {k}: {tested} held-out rows, outside the 95 % prediction "
              f"interval {share:.3f} (Monte Carlo ±{1.96 * np.sqrt(0.05 * 0.95 / tested):.3f})")
    print(f"took {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
