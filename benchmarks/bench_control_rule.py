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
from ips.analysis.item_draw_test import item_draw_test

ROOT = Path(__file__).resolve().parents[1]
ALPHA = 0.05


def _cell(n: int, k: int, ratio: float, spread: float, shared: float, shift: float,
          sims: int, seed: int) -> np.ndarray:
    """Shares of rows decided, as (today's control test, the items × draws test, today's full
    rule, the new full rule): a control test decides when its p is below α in the effect's
    direction (+1); a full rule when the trained draw's own sign-flip test over items also
    gives p < α with a positive mean."""
    rng = np.random.default_rng(seed)
    out = np.zeros(4)
    for _ in range(sims):
        theta = shared + spread * rng.standard_normal(k + 1)
        theta[0] += shift
        noise = rng.standard_normal((k + 1, n))
        noise[0] *= ratio
        y = theta[:, None] + 0.5 * rng.standard_normal(n)[None] + noise
        old = uncertainty.prediction_test(y[0].mean(), y[1:].mean(1))
        old = old.p_value < ALPHA and old.mean_difference > 0
        new = item_draw_test(y[0], y[1:]).one_sided(+1) < ALPHA
        raw = uncertainty.sign_flip_test(y[0], seed=seed)
        raw = raw.p_value < ALPHA and raw.mean_difference > 0
        out += (old, new, raw and old, raw and new)
    return out / sims


def simulate(n: int, sims: int) -> None:
    """The table of the module docstring's simulation."""
    mc = 1.96 * np.sqrt(ALPHA * (1 - ALPHA) / sims)
    print(f"simulation: n = {n} items, {sims} rows a cell (Monte Carlo ±{mc:.3f} at 5 %); "
          "twins' item noise sd 1, item effects shared by all draws sd 0.5")
    print("| σ_d | trained item sd | K | false positives: today | items × draws | "
          "full rule today | full rule new | power at 2.5 sd: today | new |")
    print("|---|---|---|---|---|---|---|---|---|")
    for spread in (0.1, 0.3, 1.0, 3.0):
        for ratio in (1.0, 3.0, 10.0):
            for k in (3, 5):
                seed = int(1000 * spread + 10 * ratio + k)
                null = _cell(n, k, ratio, spread, 1.0, 0.0, sims, seed)
                sd = np.sqrt(spread**2 * (1 + 1 / k) + (ratio**2 + 1 / k) / n)
                alt = _cell(n, k, ratio, spread, 1.0, 2.5 * sd, sims, seed + 1)
                print(f"| {spread:g} | {ratio:g}× | {k} | {null[0]:.3f} | {null[1]:.3f} | "
                      f"{null[2]:.3f} | {null[3]:.3f} | {alt[0]:.3f} | {alt[1]:.3f} |",
                      flush=True)


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
    simulate(args.n, args.sims)
    for k in (3, 5):
        tested, share = miniature(args.claims, k, args.trials, seed=k)
        print(f"miniature, K = {k}: {tested} held-out rows, outside the 95 % prediction "
              f"interval {share:.3f} (Monte Carlo ±{1.96 * np.sqrt(0.05 * 0.95 / tested):.3f})")
    print(f"took {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
