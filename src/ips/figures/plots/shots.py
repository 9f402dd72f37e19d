"""IPS from 0 to k shots for every model (paper Fig. 8), and 0-shot against each k-shot
setting by order band (Fig. 23), from the few-shot comparisons of `ips factors`: the k-shot
group's template pairs against the same pairs without examples."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr
from matplotlib.lines import Line2D

from ips.analysis.layout import BANDS
from ips.figures.numbers import few
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
from ips.prompts.templates import ZERO_SHOT

ZERO_COLOR = "#999999"


def _k(setting: str) -> int:
    return int(setting.removesuffix("shot"))


def _ci(rows: xr.Dataset, name: str, band: str) -> np.ndarray:
    """(rows, 2) interval of `name` in `band`; NaN in a factors file without intervals."""
    if f"{name}_ci" not in rows:
        return np.full((rows.sizes["comparison"], 2), np.nan)
    return rows[f"{name}_ci"].sel(band=band).values.astype(float)


def _absent(factors: FactorsFile, title: str, path: Path) -> list[Path]:
    """A figure saying why there is no few-shot comparison."""
    fig, (ax,) = panels(1, 8.0, 2.6, title)
    note(ax, "few-shot: absent\n" + factors.absent.get("few_shot", "no comparison"))
    blank(ax)
    return save(fig, path)


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
        return _absent(factors, title, path)
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
                      label=f"{ZERO_SHOT} (same pairs)")]
    handles += [Line2D([], [], marker="o", color=color[k], label=f"{k}-shot") for k in ks]
    legend_below(fig, handles, ncols=len(handles))
    return save(fig, path)


def shot_curves(rows: xr.Dataset) -> dict[tuple[str, str], tuple[np.ndarray, ...]]:
    """Per (dataset, model) of the few-shot comparisons `rows`: the shots (0, then each k),
    IPS there (band all: at 0 the compared template pairs without examples, `ips_b`, which
    every k shares; at k their k-shot IPS, `ips_a`) and the samples each k-shot test rests on
    (-1 at 0)."""
    owner = rows["model_a"].values.astype(str)
    dataset = rows["comparison_dataset"].values.astype(str)
    a = rows["ips_a"].sel(band="all").values.astype(float)
    b = rows["ips_b"].sel(band="all").values.astype(float)
    n = (rows["n_tested"].sel(band="all").values.astype(int) if "n_tested" in rows
         else np.zeros(a.size, int))
    ks = np.array([_k(s) for s in rows["setting_a"].values.astype(str)])
    curves = {}
    for key in dict.fromkeys(zip(dataset, owner)):
        at = np.flatnonzero((dataset == key[0]) & (owner == key[1]))
        at = at[np.argsort(ks[at])]
        curves[key] = (np.r_[0, ks[at]], np.r_[b[at[0]], a[at]], np.r_[-1, n[at]])
    return curves


def shot_curve_figure(factors: FactorsFile, tau: float, path: Path) -> list[Path]:
    """IPS against the number of examples, 0 → 1 → 2 → 3-shot, one line per model and one
    panel per dataset (paper Fig. 8; `shot_curves`); an open marker where the k-shot IPS
    rests on fewer than MIN_RELIABLE_N samples."""
    rows = factors.comparisons("few_shot")
    title = f"IPS from 0 to k shots, τ = {tau:g} (the few-shot template pairs at every k)"
    if not rows.sizes["comparison"]:
        return _absent(factors, title, path)
    curves = shot_curves(rows)
    datasets = list(dict.fromkeys(d for d, _ in curves))
    models = list(dict.fromkeys(m for _, m in curves))
    color = dict(zip(models, colors(len(models))))
    fig, axes = panels(len(datasets), 4.6, 3.8, f"{title}\nopen marker: n < 10 samples")
    for ax, d in zip(axes, datasets):
        for (dataset, m), (x, y, n) in curves.items():
            if dataset != d:
                continue
            ax.plot(x, y, color=color[m], linewidth=1.0)
            for xi, yi, ni in zip(x, y, n):
                ax.plot(xi, yi, "o", ms=4, color=color[m],
                        mfc="white" if ni >= 0 and few(ni) else color[m])
        ax.set_xticks(range(max(int(x.max()) for x, _, _ in curves.values()) + 1))
        ax.set_xlabel("examples in the prompt (shots)", fontsize=8)
        ax.set_ylabel(band_label("all"), fontsize=8)
        ax.set_title(d, fontsize=10)
        ax.tick_params(labelsize=7)
    handles = [Line2D([], [], color=color[m], marker="o", ms=4, label=m) for m in models]
    legend_below(fig, handles, ncols=min(4, len(handles)))
    return save(fig, path)
