"""IPS against model size within each series (paper Fig. 6), and of each order band (Figs. 11,
22; on the reworded prompts of the perturbation group, Fig. 14)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from matplotlib.lines import Line2D
from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullLocator

from ips.analysis.layout import BANDS
from ips.figures.numbers import datasets_of, few, ips_ci, ips_value, n_valued
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
from ips.formats.metrics import Entry

TYPE_STYLES = {"instruct": "-", "base": "--"}


def series_lines(entries: list[Entry]) -> dict[tuple[str, str, str], list[Entry]]:
    """The models of one dataset by (series, type, architecture), smallest first: the models
    the scale factor compares (`ips.comparisons.compare`), here drawn as one line each; only keys
    with at least two sizes make a line."""
    by_key = defaultdict(list)
    for e in entries:
        by_key[e.attrs["series"], e.attrs["type"], e.attrs["architecture"]].append(e)
    return {k: sorted(v, key=lambda e: (e.attrs["params"], e.model))
            for k, v in sorted(by_key.items())
            if len({e.attrs["params"] for e in v}) >= 2}


def _line_label(key: tuple[str, str, str]) -> str:
    series, type_, arch = key
    return f"{series} {type_}" + (" (MoE)" if arch == "moe" else "")


def scale_figure(entries: list[Entry], group: str, tau: float, path: Path,
                 title: str, bands: Sequence[str] = BANDS) -> list[Path]:
    """One panel per dataset (rows) and order band of `bands` (columns; `("all",)`: IPS
    itself, Fig. 6): IPS^band of `group` against the parameter count (log axis), one line per
    series, type and architecture with at least two sizes (solid: instruct, dashed: base),
    whiskers the 95% bootstrap interval, open markers where it rests on fewer than
    MIN_RELIABLE_N samples."""
    entries = [e for e in entries if group in e.ds["group"].values]
    if not entries:
        fig, (ax,) = panels(1, 8.0, 2.6, f"{title}, τ = {tau:g}")
        note(ax, f"no metrics file has the {group} group")
        blank(ax)
        return save(fig, path)
    datasets = datasets_of(entries)
    lines = {d: series_lines([e for e in entries if e.dataset == d]) for d in datasets}
    keys = list(dict.fromkeys(k for d in datasets for k in lines[d]))
    color = dict(zip(keys, colors(len(keys))))
    drawn = {e.model for d in datasets for v in lines[d].values() for e in v}
    alone = sorted({e.model for e in entries if e.model not in drawn})
    text = (f"Not drawn, the only size of their series, type and architecture: {len(alone)} "
            f"model(s) ({', '.join(alone[:8])}{', …' if len(alone) > 8 else ''})"
            if alone else "")
    fig, axes = grid(len(datasets), len(bands), 4.0, 3.4,
                     f"{title}, τ = {tau:g} (whiskers: 95% CI; open marker: n < 10 samples)",
                     text)
    for row, d in zip(axes, datasets):
        for ax, band in zip(row, bands):
            ax.set_title(f"{d}: {band_label(band)}", fontsize=10)
            if not lines[d]:
                note(ax, f"no series with two sizes on the {group} group")
                continue
            for key, members in lines[d].items():
                x = np.array([e.attrs["params"] for e in members])
                y = np.array([ips_value(e, group, band) for e in members])
                ok = np.isfinite(y)
                ax.plot(x[ok], y[ok], TYPE_STYLES.get(key[1], "-"), color=color[key],
                        linewidth=1.2)
                for xi, yi, e in zip(x[ok], y[ok], np.array(members)[ok]):
                    flag = few(n_valued(e, group, band))
                    ax.errorbar(xi, yi, yerr=whiskers([yi], [ips_ci(e, group, band)]), fmt="o",
                                ms=4, color=color[key], mfc="white" if flag else color[key],
                                elinewidth=0.7, capsize=2)
            ax.set_xscale("log")
            sizes = sorted({e.attrs["params"] for v in lines[d].values() for e in v})
            # the models' own sizes while they fit, else 1-2-5 steps
            ax.xaxis.set_major_locator(FixedLocator(sizes) if len(sizes) <= 6
                                       else LogLocator(subs=(1, 2, 5)))
            ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x / 1e9:g}B"))
            ax.xaxis.set_minor_locator(NullLocator())
            ax.set_xlabel("parameters (log scale)", fontsize=8)
            ax.set_ylabel(band_label(band), fontsize=8)
            ax.tick_params(labelsize=7)
    handles = [Line2D([], [], color=color[k], linestyle=TYPE_STYLES.get(k[1], "-"),
                      marker="o", ms=4, label=_line_label(k)) for k in keys]
    legend_below(fig, handles, ncols=4)
    return save(fig, path)
