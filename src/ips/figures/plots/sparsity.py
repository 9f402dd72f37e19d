"""Sparsity of the interactions (paper Fig. 2a) and universal matching with only the
largest interactions (Fig. 2b)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ips.figures.numbers import datasets_of
from ips.figures.style import (
    FAMILY_STYLES,
    MAX_LEGEND,
    family_colors,
    family_legend,
    grid,
    legend_below,
    model_colors,
    note,
    panels,
    patch,
    row_font,
    row_height,
    save,
)
from ips.formats.metrics import Entry

KEEP_COLORS = {0.03: "#fdae61", 0.05: "#abd9e9", 1.0: "#2c7bb6"}


def keep_label(k: float) -> str:
    return "all interactions" if k >= 1 else f"top {100 * k:g}%"


def sparsity_figure(entries: list[Entry], tau: float, path: Path) -> list[Path]:
    """|Ĩ| in descending order (mean over every sample and condition, relative rank on the
    x axis), one line per model and one panel per dataset; dashed: τ. Beyond MAX_LEGEND
    models the lines are coloured by family (dashed: base models) and the panel title gives
    the range of the salient shares instead of a legend per model."""
    datasets = datasets_of(entries)
    fig, axes = panels(len(datasets), 4.8, 4.0,
                       "Sparsity: normalised interactions |Ĩ| in descending order\n"
                       f"mean over samples and templates; dashed: τ = {tau:g}")
    many = len({e.model for e in entries}) > MAX_LEGEND
    color = model_colors(entries)
    family = family_colors(entries)
    for ax, d in zip(axes, datasets):
        rows = [e for e in entries if e.dataset == d and "sparsity_mean" in e.ds]
        ax.set_title(d, fontsize=10)
        if not rows:
            note(ax, "no sparsity curve in the metrics files")
            continue
        shares = []
        for e in rows:
            r = 100 * e.ds["rank"].values
            share = float(e.ds["salient_share"]) if "salient_share" in e.ds else float("nan")
            shares.append(share)
            ax.plot(r, e.ds["sparsity_mean"].values, lw=0.9 if many else 1.5,
                    color=family[e.attrs.get("family", "?")] if many else color[e.model],
                    ls=FAMILY_STYLES.get(e.attrs["type"], "-") if many else "-",
                    label=f"{e.model} ({100 * share:.0f}% salient)")
        ax.axhline(tau, color="#999999", linestyle="--", linewidth=1)
        ax.set_xlabel("rank of |Ĩ| (% of the 2·(2ⁿ−1) interactions, largest first)")
        ax.set_ylabel("|Ĩ|")
        ax.set_ylim(-0.02, 1.02)
        if many:  # 50 labels would cover the curves: the shares' range, the rest in the table
            ok = np.isfinite(shares)
            if ok.any():
                ax.set_title(f"{d}\nsalient: {100 * np.min(np.asarray(shares)[ok]):.0f}-"
                             f"{100 * np.max(np.asarray(shares)[ok]):.0f}% of the "
                             f"interactions ({len(rows)} models)", fontsize=9)
        else:
            ax.legend(fontsize=7, frameon=False)
    if many:
        legend_below(fig, family_legend(entries), ncols=4)
    return save(fig, path)


def matching_figure(entries: list[Entry], path: Path) -> list[Path]:
    """Universal matching with the largest 3% / 5% / all interactions: mean normalised RMS
    error of the surrogate per model (bars, one panel per dataset), and for one sample of
    the first model of every dataset (the case-study sample, template T) v(x_T) of all 2ⁿ
    masks in ascending order (red) against the surrogates."""
    datasets = datasets_of(entries)
    n_models = max(sum(1 for e in entries if e.dataset == d) for d in datasets)
    if n_models <= MAX_LEGEND:  # a row: errors and sample of each dataset side by side
        fig, flat = panels(2 * len(datasets), 4.4, 1.8 + 0.4 * max(n_models, 4),
                           "Universal matching keeping only the largest interactions")
        pairs = [(flat[2 * k], flat[2 * k + 1]) for k in range(len(datasets))]
    else:  # the errors of every dataset on top, the samples under them
        top = 1.6 + row_height(n_models) * n_models
        fig, rows = grid(2, len(datasets), 5.0, (top + 4.0) / 2,
                         "Universal matching keeping only the largest interactions")
        rows[0][0].get_gridspec().set_height_ratios([top, 4.0])
        pairs = list(zip(rows[0], rows[1]))
    for (ax, ax2), d in zip(pairs, datasets):
        rows = [e for e in entries if e.dataset == d and "matching_nrmse" in e.ds]
        ax.set_title(f"{d}: mean error over samples", fontsize=9)
        ax2.set_title(f"{d}: one sample", fontsize=9)
        if not rows:
            note(ax, "no matching error in the metrics files")
            note(ax2, "no sample")
            continue
        keeps = [float(x) for x in rows[0].ds["keep"].values]
        y = np.arange(len(rows))
        h = 0.8 / len(keeps)
        for j, kp in enumerate(keeps):
            vals = np.array([float(e.ds["matching_nrmse"].sel(keep=kp)) for e in rows])
            ax.barh(y + (j - (len(keeps) - 1) / 2) * h, np.nan_to_num(vals), height=h,
                    color=KEEP_COLORS.get(kp, "#888888"))
        ax.set_yticks(y, [e.model for e in rows], fontsize=row_font(n_models))
        ax.set_ylim(len(rows) - 0.5, -0.5)
        ax.set_xlabel("RMS(φ − v) / (max v − min v)")
        example = next((e for e in rows if "case_rec" in e.ds), None)
        if example is None:
            note(ax2, "no case-study sample")
            continue
        ds = example.ds
        v = ds["case_v"].sel(case_side="a").values
        order = np.argsort(v, kind="stable")
        x = np.arange(v.size)
        for kp in keeps[::-1]:
            rec = ds["case_rec"].sel(keep=kp, case_side="a").values
            ax2.plot(x, rec[order], "o", markersize=3, color=KEEP_COLORS.get(kp, "#888888"))
        ax2.plot(x, v[order], color="#d7191c", linewidth=1.5, label="v(x_T)")
        ax2.set_xlabel("masks T, sorted by v(x_T)")
        ax2.set_ylabel("output score")
        sample = str(ds.attrs.get("case_sample", ""))
        sample = sample if len(sample) <= 28 else sample[:27] + "…"
        ax2.set_title(f"{d}: {example.model}\nsample {sample}, "
                      f"{ds.attrs.get('case_condition_a', '')}", fontsize=8)
    handles = [patch(KEEP_COLORS.get(k, "#888888"), keep_label(k)) for k in sorted(KEEP_COLORS)]
    from matplotlib.lines import Line2D

    handles.append(Line2D([], [], color="#d7191c", label="v(x_T) of the LLM"))
    legend_below(fig, handles)
    return save(fig, path)
