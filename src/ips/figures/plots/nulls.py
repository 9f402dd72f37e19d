"""IPS beside its nulls (`ips.analysis.nulls`, beyond the paper): one panel per dataset, one row per
model (ranked by IPS, as in the ranking figure), the template IPS with its interval beside
its matched-size null, its Gaussian null at every noise level, its precision and baseline nulls,
and its ceiling, the IPS of unrelated samples; the right margin says in how many (sample,
0-shot pair) the IPS lies above its matched null. The per-level numbers are in
`null_table.csv` and the README."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.lines import Line2D

from ips.figures.numbers import (
    by_dataset,
    datasets_of,
    ips_ci,
    ips_value,
    null_values,
)
from ips.figures.style import (
    NULL_MARKS,
    legend_below,
    note,
    panels,
    row_font,
    row_height,
    save,
    whiskers,
)
from ips.formats.metrics import Entry
from ips.nulls import variants
from ips.prompts.templates import ZERO_SHOT

PAIR_COLOR = "#1f78b4"
#: the ceiling's mark: the IPS of unrelated samples (`ips.analysis.nulls.ceiling`)
CEILING_MARK = {"marker": "s", "ms": 6, "mfc": "none", "color": "#e31a1c", "ls": ""}


def _has_null(e: Entry) -> bool:
    return "null_ips" in e.ds and ZERO_SHOT in e.ds["group"].values


def nulls_figure(entries: list[Entry], tau: float, path: Path) -> list[Path]:
    """One panel per dataset, one row per model with a null (least sensitive on top): the
    template IPS (0-shot, band all, 95% CI), its matched-size null (diamond), its Gaussian
    null at each noise level (ticks; the null grows with the level), the precision null of
    each second dtype (star), the baseline null of each other baseline (cross) and the ceiling
    (open square: the IPS of unrelated samples of the same n); right of the panel, the
    (sample, pair) cells whose IPS lies above their matched-size null."""
    rows = [e for e in entries if _has_null(e)]
    datasets = datasets_of(rows) or ["(none)"]
    n = max([len([e for e in rows if e.dataset == d]) for d in datasets] + [1])
    levels = sorted({float(c) for e in rows for c in e.ds["null_level"].values})
    fig, axes = panels(len(datasets), 5.2, max(3.0, 1.6 + row_height(n) * n),
                       f"IPS beside its nulls, τ = {tau:g} ({ZERO_SHOT} templates, band all; "
                       "whiskers: 95% CI)\nGaussian null ticks at c = "
                       + ", ".join(f"{c:g}" for c in levels)
                       + " (noise of c × range of v); right: pairs above their matched null")
    if not rows:
        note(axes[0], "no metrics file holds a null IPS (config nulls.draws = 0, or sparse "
             "fits)")
        return save(fig, path)
    for ax, d in zip(axes, datasets):
        _panel(ax, [e for e in by_dataset(entries, d) if _has_null(e)], n)
        ax.set_title(d, fontsize=10)
    legend_below(fig, [Line2D([], [], marker="o", ls="", color=PAIR_COLOR,
                              label="template IPS (95% CI)"), *_null_handles()], ncols=3)
    return save(fig, path)


def _null_handles() -> list:
    return [Line2D([], [], label="matched-size null", **NULL_MARKS["matched"]),
            Line2D([], [], label="Gaussian null (each level c)", **NULL_MARKS["gaussian"]),
            *(Line2D([], [], ls="", label=f"{v.kind} null (each other {v.setting})",
                     **v.mark) for v in variants()),
            Line2D([], [], label="ceiling (unrelated samples)", **CEILING_MARK)]


def _panel(ax, rows: list[Entry], n: int) -> None:
    fs = row_font(n)
    y = np.arange(len(rows))
    for yi, e in zip(y, rows):
        v, ci = ips_value(e), ips_ci(e)
        if np.isfinite(v):
            ax.errorbar(v, yi, xerr=whiskers([v], [ci]), fmt="o", ms=4, color=PAIR_COLOR,
                        capsize=2, zorder=3)
        for kind, xs in null_values(e).items():
            ax.plot(xs, np.full(len(xs), yi), zorder=2, **{**NULL_MARKS[kind], "ms": 6})
        for v in variants():
            for x in _variant_ips(e, v.kind):
                ax.plot([x], [yi], ls="", zorder=4,
                        **v.mark)
        ax.plot([_ceiling(e)], [yi], zorder=4, **CEILING_MARK)
        ax.text(1.01, yi, _above(e), transform=ax.get_yaxis_transform(), va="center",
                fontsize=fs, color="#555555")
    ax.set_yticks(y, [e.model for e in rows], fontsize=fs)
    ax.set_ylim(max(n, 1) - 0.5, -0.5)
    ax.set_xlim(0, 2.05)
    ax.grid(axis="y", color="#eeeeee", lw=0.6)
    ax.set_axisbelow(True)
    ax.set_xlabel("IPS (lower = less sensitive)", fontsize=8)


def _variant_ips(e: Entry, kind: str) -> list[float]:
    """The precision or baseline null of each setting (main group, band all)."""
    ds = e.ds
    if f"{kind}_null_ips" not in ds or ZERO_SHOT not in ds["group"].values:
        return []
    vals = ds[f"{kind}_null_ips"].sel(group=ZERO_SHOT, band="all").values.astype(float).ravel()
    return [float(x) for x in vals if np.isfinite(x)]


def _ceiling(e: Entry) -> float:
    """The ceiling of the main group (band all); NaN (nothing drawn) where the file has none."""
    ds = e.ds
    if "ceiling_ips" not in ds:
        return float("nan")
    return float(ds["ceiling_ips"].sel(group=ZERO_SHOT, band="all"))


def _above(e: Entry) -> str:
    """"k/m": the (sample, 0-shot pair) cells whose IPS lies above their matched-size null."""
    ds = e.ds
    if "sample_pair_matched_null" not in ds:
        return "–"
    cols = np.flatnonzero(ds["pair_group"].values.astype(str) == ZERO_SHOT)
    pair = ds["sample_pair_ips"].sel(band="all").values[:, cols].ravel()
    null = ds["sample_pair_matched_null"].sel(band="all").values[:, cols].ravel()
    ok = np.isfinite(pair) & np.isfinite(null)
    return f"{int((pair[ok] > null[ok]).sum())}/{int(ok.sum())}"
