"""0-shot against each k-shot setting by order band for every model (paper Fig. 23), from the
few-shot comparisons of `ips factors`: the k-shot group's template pairs against the same
pairs without examples."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr
from matplotlib.lines import Line2D

from ips.analysis.layout import BANDS
from ips.figures.numbers import MAIN_GROUP, few
from ips.figures.style import (
    band_label,
    blank,
    colors,
    grid,
    legend_below,
    note,
    panels,
    save,
    whiskers,
)
from ips.formats.factors import FactorsFile

ZERO_COLOR = "#999999"


def _k(setting: str) -> int:
    return int(setting.removesuffix("shot"))


def _ci(rows: xr.Dataset, name: str, band: str) -> np.ndarray:
    """(rows, 2) interval of `name` in `band`; NaN in a factors file without intervals."""
    if f"{name}_ci" not in rows:
        return np.full((rows.sizes["comparison"], 2), np.nan)
    return rows[f"{name}_ci"].sel(band=band).values.astype(float)


def few_shot_band_figure(factors: FactorsFile, tau: float, path: Path) -> list[Path]:
    """One panel per dataset (rows) and order band (columns), one row of marks per model:
    for every k-shot comparison a segment from the 0-shot IPS^band of the compared template
    pairs (open grey) to their k-shot IPS^band (filled, one colour per k), whiskers the
    paired-bootstrap interval, a cross instead of a dot where the test rests on fewer than
    MIN_RELIABLE_N samples. Models are ordered by their 0-shot IPS (band all) of the first
    comparison, least sensitive on top."""
    rows = factors.comparisons("few_shot")
    title = f"0-shot vs k-shot by order band, τ = {tau:g} (same template pairs)"
    if not rows.sizes["comparison"]:
        fig, (ax,) = panels(1, 8.0, 2.6, title)
        note(ax, "few-shot: absent\n" + factors.absent.get("few_shot", "no comparison"))
        blank(ax)
        return save(fig, path)
    dataset = rows["comparison_dataset"].values.astype(str)
    datasets = list(dict.fromkeys(dataset))
    ks = sorted({_k(s) for s in rows["setting_a"].values.astype(str)})
    color = dict(zip(ks, colors(len(ks))))
    n_models = max(len(set(rows["model_a"].values.astype(str)[dataset == d])) for d in datasets)
    # 50 models: rows of 0.18 in for two datasets, tighter for more (the figure under 20 in)
    per_row = 0.28 if n_models <= 20 else min(0.18, (18.0 / len(datasets) - 1.0) / n_models)
    fig, axes = grid(len(datasets), len(BANDS), 3.4, max(2.2, 1.0 + per_row * n_models),
                     f"{title}\nwhiskers: 95% paired-bootstrap CI; ×: test from n < 10 samples")
    offset = {k: (i + 1) / (len(ks) + 1) - 0.5 for i, k in enumerate(ks)}
    for row, d in zip(axes, datasets):
        mine = rows.isel(comparison=np.flatnonzero(dataset == d))
        models = list(dict.fromkeys(mine.sortby(mine["ips_b"].sel(band="all"))["model_a"]
                                    .values.astype(str)))
        y_of = {m: i for i, m in enumerate(models)}
        for ax, band in zip(row, BANDS):
            a = mine["ips_a"].sel(band=band).values.astype(float)
            b = mine["ips_b"].sel(band=band).values.astype(float)
            ca, cb = _ci(mine, "ips_a", band), _ci(mine, "ips_b", band)
            n = (mine["n_tested"].sel(band=band).values.astype(int) if "n_tested" in mine
                 else np.zeros(a.size, int))
            for i, (m, s) in enumerate(zip(mine["model_a"].values.astype(str),
                                           mine["setting_a"].values.astype(str))):
                k = _k(s)
                y = y_of[m] + 0.7 * offset[k]
                ax.plot([b[i], a[i]], [y, y], color=color[k], linewidth=0.8)
                ax.errorbar(b[i], y, xerr=whiskers([b[i]], [cb[i]]), fmt="o", ms=4,
                            color=ZERO_COLOR, mfc="white", elinewidth=0.6)
                ax.errorbar(a[i], y, xerr=whiskers([a[i]], [ca[i]]),
                            fmt="x" if few(n[i]) else "o", ms=4, color=color[k],
                            elinewidth=0.6)
            ax.set_yticks(range(len(models)), models,
                          fontsize=7 if n_models <= 20 else 6 if per_row >= 0.15 else 5)
            ax.set_ylim(len(models) - 0.5, -0.5)
            ax.set_xlabel(band_label(band), fontsize=8)
            ax.tick_params(axis="x", labelsize=7)
            ax.set_title(f"{d}: {band_label(band)}", fontsize=10)
    handles = [Line2D([], [], marker="o", ls="", color=ZERO_COLOR, mfc="white",
                      label=f"{MAIN_GROUP} (same pairs)")]
    handles += [Line2D([], [], marker="o", color=color[k], label=f"{k}-shot") for k in ks]
    legend_below(fig, handles, ncols=len(handles))
    return save(fig, path)
