"""False positives and power of the control rule: a "trained" model that is one more weight
draw, with more noise over items than its twins.

Run:  .venv/bin/python benchmarks/bench_control_rule.py [--sims 20000] [--power-sims 2000]
      [--n 10] [--out studies/control-rule/simulation.csv]   (about 6 min on 2 idle cores)

Every draw k (the "trained" one, k = 0, and K twins) has an effect θ_k = μ + σ_d·z_k (μ = 1,
shared by all draws, so the trained draw's own test decides often; σ_d the spread between
draws) measured on n items as y_ki = θ_k + u_i + σ_k·e_ki: u_i item effects that all draws
share (sd 0.5), σ_k = 1 for a twin and 1×, 3× or 10× for the trained draw. Nothing but its
item noise separates the trained draw from its twins, so every decided row is a false
positive. Per cell: the share of rows decided by today's rule as the pre-registered run
used it (the prediction test of the trained mean against the K twins' means, two-sided at
α with the effect's direction) and by the items × draws test (`ips.analysis.item_draw_test`,
one-sided at α), the control test alone and in the full rule (the trained draw's own
sign-flip test over items also at p < α, same direction), and the full rule of one twin
(the paired sign-flip test of trained − twin over items, which the one-twin studies used);
then their power at a shift of
2.5 standard deviations of x − c̄ (today's test also one-sided, for a like comparison). The
table is written to --out (docs/method.md renders it).
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import time
from datetime import date
from pathlib import Path

import numpy as np

from ips.analysis import uncertainty
from ips.analysis.item_draw_test import item_draw_test

ROOT = Path(__file__).resolve().parents[1]
ALPHA = 0.05
COLUMNS = ("spread", "trained_item_sd", "draws", "items", "sims", "power_sims", "fp_one_twin",
           "fp_today", "fp_new", "fp_full_today", "fp_full_new", "power_today", "power_today_one_sided",
           "power_new", "mc_error", "commit", "date")


def _cell(n: int, k: int, ratio: float, spread: float, shift: float, sims: int,
          seed: int) -> np.ndarray:
    """Shares of rows decided: today's control test (two-sided, as used), the items × draws
    test, today's and the new full rule, today's test one-sided, and the full rule of one
    twin (the paired sign-flip test of trained − first twin, two-sided with the direction)."""
    rng = np.random.default_rng(seed)
    out = np.zeros(6)
    for _ in range(sims):
        theta = 1.0 + spread * rng.standard_normal(k + 1)
        theta[0] += shift
        noise = rng.standard_normal((k + 1, n))
        noise[0] *= ratio
        y = theta[:, None] + 0.5 * rng.standard_normal(n)[None] + noise
        old = uncertainty.prediction_test(y[0].mean(), y[1:].mean(1))
        up = old.mean_difference > 0
        new = uncertainty.one_sided(item_draw_test(y[0], y[1:]), +1) < ALPHA
        raw = uncertainty.sign_flip_test(y[0], seed=seed)
        raw = raw.p_value < ALPHA and raw.mean_difference > 0
        today = old.p_value < ALPHA and up
        twin = uncertainty.sign_flip_test(y[0] - y[1], seed=seed)
        one = twin.p_value < ALPHA and twin.mean_difference > 0
        out += (today, new, raw and today, raw and new, old.p_value / 2 < ALPHA and up,
                raw and one)
    return out / sims


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", type=int, default=20000, help="null rows a cell")
    ap.add_argument("--power-sims", type=int, default=2000, help="shifted rows a cell")
    ap.add_argument("--n", type=int, default=10, help="items per row")
    ap.add_argument("--out", type=Path, default=ROOT / "studies/control-rule/simulation.csv")
    args = ap.parse_args()
    t0 = time.perf_counter()
    mc = 1.96 * np.sqrt(ALPHA * (1 - ALPHA) / args.sims)
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    print(f"n = {args.n} items, {args.sims} null and {args.power_sims} shifted rows a cell "
          f"(Monte Carlo ±{mc:.3f} at 5 %), "
          f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print("| σ_d | trained item sd | K | false positives: today | new | full rule: today | "
          "new | power: today | today one-sided | new |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    rows = []
    for spread in (0.1, 0.3, 1.0, 3.0):
        for ratio in (1.0, 3.0, 10.0):
            for k in (3, 5):
                seed = int(1000 * spread + 10 * ratio + k)
                null = _cell(args.n, k, ratio, spread, 0.0, args.sims, seed)
                sd = np.sqrt(spread**2 * (1 + 1 / k) + (ratio**2 + 1 / k) / args.n)
                alt = _cell(args.n, k, ratio, spread, 2.5 * sd, args.power_sims, seed + 1)
                rows.append(dict(zip(COLUMNS, (
                    spread, ratio, k, args.n, args.sims, args.power_sims,
                    round(null[5], 4), *np.round(null[:4], 4),
                    round(alt[0], 4), round(alt[4], 4), round(alt[1], 4), round(mc, 4),
                    commit, date.today().isoformat()), strict=True)))
                print(f"| {spread:g} | {ratio:g}× | {k} | {null[0]:.3f} | {null[1]:.3f} | "
                      f"{null[2]:.3f} | {null[3]:.3f} | {alt[0]:.3f} | {alt[4]:.3f} | "
                      f"{alt[1]:.3f} |", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".partial")
    with tmp.open("w", newline="") as f:
        w = csv.DictWriter(f, COLUMNS)
        w.writeheader()
        w.writerows(rows)
    tmp.replace(args.out)
    print(f"wrote {args.out.relative_to(ROOT)}; took {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
