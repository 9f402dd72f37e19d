"""The two normalisations of a finished run side by side (docs/method.md, "Departures from
the paper", row *Normalisation set*): for every model and dataset of RESULTS, per game
(sample, condition) the largest |I(∅)| of AND and OR over the largest |I| of Ω, the salient
interactions at τ under each rule and their Jaccard overlap, and the 0-shot IPS under each.

    .venv/bin/python studies/normalisation/compare.py RESULTS [--tau 0.1] > table.csv

RESULTS is a run's results/ folder (values/ and interactions/ per model and dataset).
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

import numpy as np

from ips.analysis import metrics
from ips.analysis.summary import summarize
from ips.formats.shards import load

COLUMNS = ("model", "dataset", "games", "empty_over_max_median", "empty_over_max_min",
           "empty_over_max_max", "salient_nonempty", "salient_paper", "games_none_salient_paper",
           "jaccard_mean", "ips_nonempty", "ips_paper", "n_valued_nonempty", "n_valued_paper")


def compare(values: list[Path], interactions: list[Path], tau: float) -> dict:
    merged = load(values, interactions)
    n = merged.n_games
    both = {rule: metrics.normalize(merged.and_, merged.or_, n, normalisation=rule)
            for rule in metrics.NORMALISATIONS}
    scored = n > 0
    inside = np.arange(merged.and_.shape[-1]) < (1 << n)[..., None]
    omega = np.where(inside[..., None, :] & (np.arange(inside.shape[-1]) > 0),
                     np.abs(np.stack([merged.and_, merged.or_], -2)), 0.0).max((-2, -1))
    empty = np.maximum(np.abs(merged.and_[..., 0]), np.abs(merged.or_[..., 0]))
    ratio = (empty / omega)[scored]
    sal = {rule: metrics.salient(norm, tau) for rule, norm in both.items()}
    union = (sal["nonempty"] | sal["paper"]).sum((-2, -1))[scored]
    inter = (sal["nonempty"] & sal["paper"]).sum((-2, -1))[scored]
    jaccard = np.where(union > 0, inter / np.maximum(union, 1), np.nan)
    ips = {rule: summarize(values, interactions, tau=tau, normalisation=rule)
           for rule in metrics.NORMALISATIONS}
    zero = {rule: ds.sel(group="0shot", band="all") for rule, ds in ips.items()}
    return {
        "model": merged.attrs["model"], "dataset": merged.attrs["dataset"],
        "games": int(scored.sum()),
        "empty_over_max_median": float(np.median(ratio)),
        "empty_over_max_min": float(ratio.min()), "empty_over_max_max": float(ratio.max()),
        "salient_nonempty": int(sal["nonempty"][scored].sum()),
        "salient_paper": int(sal["paper"][scored].sum()),
        "games_none_salient_paper": int((sal["paper"].sum((-2, -1)) == 0)[scored].sum()),
        "jaccard_mean": float(np.nanmean(jaccard)) if np.isfinite(jaccard).any() else np.nan,
        **{f"ips_{rule}": float(z["ips"]) for rule, z in zero.items()},
        **{f"n_valued_{rule}": int(z["n_valued_samples"]) for rule, z in zero.items()},
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("results", type=Path)
    p.add_argument("--tau", type=float, default=metrics.DEFAULT_TAU)
    args = p.parse_args()
    out = csv.DictWriter(sys.stdout, COLUMNS)
    out.writeheader()
    for run in sorted(args.results.glob("values/*/*")):
        values = sorted(run.glob("*.h5"), key=lambda f: int(f.stem))
        fits = [args.results / "interactions" / run.parent.name / run.name / f.name
                for f in values]
        row = compare(values, fits, args.tau)
        out.writerow({k: f"{v:.4g}" if isinstance(v, float) else v for k, v in row.items()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
