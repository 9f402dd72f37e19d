"""IPS of low-, mid- and high-order interactions per model (paper Figs. 9, 20), with the
Holm-adjusted sign-flip p-values of the band order (`band_p_holm` of `ips metrics`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ips.analysis.layout import BANDS
from ips.figures.numbers import (
    band_test_text,
    by_dataset,
    datasets_of,
    few_note,
    ips_ci,
    ips_value,
    n_valued,
    null_values,
)
from ips.figures.style import (
    BAND_COLORS,
    NULL_MARKS,
    band_label,
    few_hatch,
    legend_below,
    note,
    null_legend,
    panels,
    patch,
    row_font,
    row_height,
    save,
    whiskers,
)
from ips.formats.metrics import Entry
from ips.prompts.templates import ZERO_SHOT


def order_figure(entries: list[Entry], tau: float, path: Path,
                 group: str = ZERO_SHOT) -> list[Path]:
    """Horizontal bars IPS^low/mid/high of `group` (the 0-shot templates; `perturbation` for
    Fig. 56) per model and dataset, with 95% CIs; under each model the Holm-adjusted p-values
    of its three band tests (low-mid, mid-high, low-high); bars from fewer than
    MIN_RELIABLE_N samples are hatched. Datasets without the group are left out; with none,
    one panel says so."""
    datasets = [d for d in datasets_of(entries)
                if any(group in e.ds["group"].values for e in by_dataset(entries, d))]
    what = "0-shot templates" if group == ZERO_SHOT else f"{group} group"
    if not datasets:
        fig, (ax,) = panels(1, 5.2, 2.6, f"IPS by interaction order, τ = {tau:g} ({what})")
        note(ax, f"no dataset has the {group} group (config perturbations)")
        return save(fig, path)
    n_models = max(len(by_dataset(entries, d)) for d in datasets)
    many = n_models > 20  # the Gaussian nulls' ticks would hide the bars: null_table.csv
    kinds = ("matched",) if many else tuple(NULL_MARKS)
    fig, axes = panels(len(datasets), 5.2, 2.2 + 1.4 * row_height(n_models) * n_models,
                       f"IPS by interaction order, τ = {tau:g} ({what}; "
                       "whiskers: 95% CI; marks: nulls"
                       + ("; Gaussian nulls: null_table.csv)" if many else ")")
                       + "\nunder each model: Holm-adjusted "
                       f"paired sign-flip p of low-mid / mid-high / low-high\n{few_note()}")
    h = 0.26
    for ax, d in zip(axes, datasets):
        rows = by_dataset(entries, d)
        y = np.arange(len(rows))
        for k, band in enumerate(BANDS):
            vals = np.array([ips_value(e, group, band) for e in rows])
            cis = [ips_ci(e, group, band) for e in rows]
            ax.barh(y + (k - 1) * h, np.nan_to_num(vals), height=h, color=BAND_COLORS[band],
                    label=band_label(band), xerr=whiskers(np.nan_to_num(vals), cis),
                    hatch=[few_hatch(n_valued(e, group, band)) for e in rows],
                    error_kw={"elinewidth": 0.8, "capsize": 2})
            for yi, v, e in zip(y, vals, rows):
                if np.isnan(v):
                    ax.text(0.02, yi + (k - 1) * h, "no value", va="center", fontsize=7)
                for kind, xs in null_values(e, group, band).items():
                    if kind in kinds:
                        ax.plot(xs, np.full(len(xs), yi + (k - 1) * h), zorder=3,
                                **{**NULL_MARKS[kind], "ms": 4 if many else 6})
        ax.set_yticks(y, [f"{e.model}\n{band_test_text(e, group)}" for e in rows],
                      fontsize=row_font(n_models) - 1)
        ax.set_ylim(n_models - 0.5, -0.5)
        ax.set_xlim(0, 2.1)
        ax.set_xlabel("IPS within the order band")
        ax.set_title(d, fontsize=10)
    legend_below(fig, [patch(BAND_COLORS[b], band_label(b)) for b in BANDS]
                 + null_legend()[:len(kinds)], ncols=5)
    return save(fig, path)
