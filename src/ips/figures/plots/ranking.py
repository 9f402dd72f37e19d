"""IPS of every configured model (paper Fig. 4a) and IPS against output consistency
(Fig. 4b), with bootstrap intervals; an interval from fewer than
`ips.analysis.uncertainty.MIN_RELIABLE_N` samples gets an open marker and "n<10"."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ips.analysis.nulls import SATURATED
from ips.analysis.uncertainty import MIN_RELIABLE_N
from ips.comparisons.claims.saturation import cell_saturation
from ips.figures.numbers import (
    by_dataset,
    correlation_text,
    datasets_of,
    few,
    few_note,
    ips_ci,
    ips_value,
    n_valued,
    null_values,
)
from ips.figures.style import (
    MAX_LEGEND,
    NULL_MARKS,
    TYPE_COLORS,
    family_colors,
    family_legend,
    grid,
    legend_below,
    marker,
    model_colors,
    null_legend,
    panels,
    row_font,
    row_height,
    save,
    whiskers,
)
from ips.formats.metrics import Entry
from ips.prompts.templates import ZERO_SHOT

#: inches the ranking's panels may take stacked one above the other
STACKED = 12.0


def ranking_figure(entries: list[Entry], tau: float, path: Path) -> list[Path]:
    """Models ranked by IPS (0-shot, band all), one panel per dataset, least sensitive on
    top: stacked one above the other while they fit in STACKED inches (the figure then stays
    narrow enough to read at a repository page's width), else side by side; whiskers: bootstrap interval over samples (open marker: fewer than
    MIN_RELIABLE_N samples); right of each panel, each value with its share of the ceiling,
    SATURATED at `ips.analysis.nulls.SATURATED` or above."""
    datasets = datasets_of(entries)
    n_models = max(len(by_dataset(entries, d)) for d in datasets)
    height = 1.2 + row_height(n_models) * n_models
    stacked = height * len(datasets) <= STACKED
    title = (f"IPS ranking at τ = {tau:g}, 0-shot templates: whiskers 95% CI, beside it its "
             f"nulls; right: IPS, and IPS / its ceiling (SATURATED at ≥ {SATURATED:g}); "
             + few_note("open marker", "interval"))
    if stacked:
        fig, rows_of_axes = grid(len(datasets), 1, 7.0, height, title)
        axes = [row[0] for row in rows_of_axes]
    else:
        fig, axes = panels(len(datasets), 5.2, height + 0.5, title)
    for ax, d in zip(axes, datasets):
        rows = by_dataset(entries, d)
        vals = np.array([ips_value(e) for e in rows])
        cis = np.array([ips_ci(e) for e in rows]).reshape(-1, 2)
        y = np.arange(len(rows))
        nulls = [null_values(e) for e in rows]
        marks = np.concatenate([np.concatenate(list(m.values())) for m in nulls if m] or
                               [np.zeros(0)])
        finite = np.concatenate([vals[np.isfinite(vals)], cis[np.isfinite(cis)],
                                 marks[np.isfinite(marks)]])
        lo, hi = (finite.min(), finite.max()) if finite.size else (0.0, 2.0)
        pad = max(0.05, 0.15 * (hi - lo))
        ax.set_xlim(max(0.0, lo - pad), min(2.0, hi + pad) + 0.6 * pad)
        x0 = ax.get_xlim()[0]
        ax.hlines(y, x0, np.where(np.isfinite(vals), vals, x0), color="#dddddd", linewidth=1,
                  zorder=1)
        for yi, m in zip(y, nulls):
            for kind, xs in m.items():
                ax.plot(xs, np.full(len(xs), yi), zorder=3, **NULL_MARKS[kind])
        for yi, v, ci, e in zip(y, vals, cis, rows):
            if np.isnan(v):
                ax.text(x0, yi, " no value", va="center", fontsize=8)
                continue
            color = TYPE_COLORS.get(e.attrs["type"], "#888888")
            flag = few(n_valued(e))
            ax.errorbar(v, yi, xerr=whiskers([v], [ci]), fmt="o", color=color, capsize=3,
                        zorder=2, mfc="white" if flag else color)
            ratio = cell_saturation(e)
            share = ("" if not np.isfinite(ratio) else f", {ratio:.2f}×ceiling"
                     + (" SATURATED" if ratio >= SATURATED else ""))
            # right of the panel, where the layout makes room for it
            ax.annotate(f"{v:.3f}" + (f" (n<{MIN_RELIABLE_N})" if flag else "") + share,
                        (1.0, yi), xycoords=("axes fraction", "data"), xytext=(6, 0),
                        textcoords="offset points", va="center", ha="left",
                        fontsize=row_font(n_models) - 1)
        ax.set_yticks(y, [e.model for e in rows], fontsize=row_font(n_models))
        ax.set_ylim(len(rows) - 0.5, -0.5)
        ax.grid(axis="y", color="#eeeeee", lw=0.6)
        ax.set_title(d, fontsize=10, loc="left")
    for ax in axes[-1:] if stacked else axes:
        ax.set_xlabel("IPS (lower = less sensitive)")
    legend_below(fig, [marker(c, t) for t, c in TYPE_COLORS.items()] + null_legend())
    return save(fig, path)


def consistency_figure(entries: list[Entry], tau: float, path: Path) -> list[Path]:
    """IPS (0-shot) against output consistency (share of samples with one prediction under
    every 0-shot template), one point per model, per dataset, with Pearson / Spearman r;
    beyond MAX_LEGEND models the points are coloured by family and not named (the numbers:
    ips_table.csv)."""
    datasets = datasets_of(entries)
    fig, axes = panels(len(datasets), 4.6, 4.2,
                       f"IPS vs output consistency at τ = {tau:g} (0-shot; whiskers: 95% CI)")
    many = len({e.model for e in entries}) > MAX_LEGEND  # 50 names would cover the points
    color = ({e.model: family_colors(entries)[e.attrs.get("family", "?")] for e in entries}
             if many else model_colors(entries))
    for ax, d in zip(axes, datasets):
        rows = by_dataset(entries, d)
        xs, ys = [], []
        for e in rows:
            v = ips_value(e)
            ds = e.ds
            c = (float(ds["output_consistency"].sel(group=ZERO_SHOT))
                 if "output_consistency" in ds and ZERO_SHOT in ds["group"].values
                 else float("nan"))
            xs.append(c)
            ys.append(v)
            if np.isfinite(v) and np.isfinite(c):
                ax.errorbar(c, v, yerr=whiskers([v], [ips_ci(e)]), fmt="o",
                            color=color[e.model], capsize=0 if many else 3, label=e.model,
                            ms=4 if many else 6, elinewidth=0.6 if many else 1.5,
                            alpha=0.75 if many else 1.0)
                if not many:
                    ax.annotate(e.model, (c, v), xytext=(4, 4), textcoords="offset points",
                                fontsize=7)
        ax.set_xlim(-0.05, 1.05)
        ax.set_xlabel("output consistency (0-shot templates)")
        ax.set_ylabel("IPS")
        ax.set_title(f"{d}\n{correlation_text(xs, ys)}", fontsize=9)
    if many:
        legend_below(fig, [marker(c, t.removesuffix(")").replace(" (", ", "))
                           for t, c in zip([h.get_label() for h in family_legend(entries)],
                                           family_colors(entries).values())], ncols=5)
    return save(fig, path)
