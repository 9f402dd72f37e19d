"""IPS beside its nulls (`ips.nulls`, beyond the paper): per model and dataset, the template
IPS against the Gaussian null curve, and each pair's IPS against the size of its change
beside the matched-size null."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from ips.figures.common import MAIN_GROUP, ips_ci, ips_value, legend_below, marker
from ips.figures.style import TITLE_SIZE, save
from ips.metrics_file import Entry

NULL_COLOR, MATCHED_COLOR, PAIR_COLOR = "#7f7f7f", "#e6ab02", "#1f78b4"
PRECISION_COLOR = "#d95f02"


def nulls_figure(entries: list[Entry], tau: float, path: Path) -> list[Path]:
    """One row per (model, dataset) with a null: left, the Gaussian null IPS (0-shot, band
    all, 95% CI) over the noise level with the template IPS as a line (and its CI as a
    band), and each precision null at its median sd(Δv) / range of v (the level of Gaussian
    noise of the same size); right, every (sample, 0-shot pair): its IPS and its matched-size
    null against the size of the change, sd(Δv) / range of v."""
    rows = [e for e in entries if "null_ips" in e.ds and MAIN_GROUP in e.ds["group"].values]
    fig = Figure(figsize=(9.0, 1.2 + 2.4 * max(len(rows), 1)), layout="constrained")
    fig.suptitle(f"IPS beside its nulls, τ = {tau:g} ({MAIN_GROUP} templates)", fontsize=TITLE_SIZE)
    if not rows:
        ax = fig.subplots()
        ax.text(0.5, 0.5, "no metrics file holds a null IPS (config nulls.draws = 0, or "
                "sparse fits)", ha="center", va="center", color="#555555")
        ax.set_axis_off()
        return save(fig, path)
    axes = fig.subplots(len(rows), 2, squeeze=False)
    for (left, right), e in zip(axes, rows):
        _null_curve(left, e)
        _pairs_by_size(right, e)
    legend_below(fig, [marker(NULL_COLOR, "Gaussian null (95% CI)"),
                       marker(PRECISION_COLOR, "precision null at its median sd(Δv) / range"),
                       marker(PAIR_COLOR, "template pair"),
                       marker(MATCHED_COLOR, "matched-size null of the pair")], ncols=2)
    return save(fig, path)


def _null_curve(ax, e: Entry) -> None:
    ds = e.ds
    levels = ds["null_level"].values.astype(float)
    null = ds["null_ips"].sel(group=MAIN_GROUP, band="all").values.astype(float)
    ci = ds["null_ips_ci"].sel(group=MAIN_GROUP, band="all").values.astype(float)
    ax.fill_between(levels, ci[:, 0], ci[:, 1], color=NULL_COLOR, alpha=0.25, lw=0)
    ax.plot(levels, null, "o-", color=NULL_COLOR)
    value, (lo, hi) = ips_value(e), ips_ci(e)
    ax.axhline(value, color=PAIR_COLOR, lw=1.5)
    if np.isfinite(lo) and np.isfinite(hi):
        ax.axhspan(lo, hi, color=PAIR_COLOR, alpha=0.12, lw=0)
    ax.annotate(f"template IPS {value:.3f}", (levels[0], value), xytext=(0, 4),
                textcoords="offset points", fontsize=7, color=PAIR_COLOR)
    ticks = list(levels)
    for d in ds["precision"].values if "precision_null_ips" in ds else ():
        x = float(ds["precision_dv_rel"].sel(precision=d))
        y = float(ds["precision_null_ips"].sel(precision=d, band="all"))
        lo_p, hi_p = ds["precision_null_ips_ci"].sel(precision=d, band="all").values
        if not (np.isfinite(x) and x > 0 and np.isfinite(y)):
            continue
        ax.errorbar([x], [y], yerr=[[y - lo_p], [hi_p - y]], fmt="*", ms=9,
                    color=PRECISION_COLOR, capsize=2)
        ax.annotate(str(d), (x, y), xytext=(4, -8), textcoords="offset points", fontsize=7,
                    color=PRECISION_COLOR)
        ticks.append(x)
    ax.set_xscale("log")
    ax.set_xticks(levels, [f"{c:g}" for c in levels], fontsize=7)
    ax.set_xlim(min(ticks) / 1.5, max(ticks) * 1.5)
    ax.minorticks_off()
    ax.set_ylim(0, 2.05)
    ax.set_xlabel("noise level c (σ = c × range of v)", fontsize=8)
    ax.set_ylabel("IPS", fontsize=8)
    ax.set_title(f"{e.model} / {e.dataset}: Gaussian null (n = "
                 f"{int(ds['null_n_valued'].sel(group=MAIN_GROUP, band='all').min())})",
                 fontsize=9)


def _pairs_by_size(ax, e: Entry) -> None:
    ds = e.ds
    if "sample_pair_change_rel" not in ds:
        ax.text(0.5, 0.5, "no matched-size null (nulls.matched: false)", ha="center",
                va="center", fontsize=8, color="#555555", transform=ax.transAxes)
        return
    cols = np.flatnonzero(ds["pair_group"].values.astype(str) == MAIN_GROUP)
    size = ds["sample_pair_change_rel"].values[:, cols].ravel()
    pair = ds["sample_pair_ips"].sel(band="all").values[:, cols].ravel()
    null = ds["sample_pair_matched_null"].sel(band="all").values[:, cols].ravel()
    ax.scatter(size, null, s=14, color=MATCHED_COLOR, marker="D", alpha=0.8)
    ax.scatter(size, pair, s=16, color=PAIR_COLOR, alpha=0.8)
    ok = np.isfinite(pair) & np.isfinite(null)
    above = int((pair[ok] > null[ok]).sum())
    ax.set_ylim(0, 2.05)
    ax.set_xlabel("size of the pair's change, sd(Δv) / range of v", fontsize=8)
    ax.set_title(f"pairs: IPS above its matched null in {above} of {int(ok.sum())} "
                 "(sample, pair)", fontsize=9)
