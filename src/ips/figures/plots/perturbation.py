"""IPS of template pairs that alter tokens vs pairs that add tokens (paper Appendix G)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ips.figures.numbers import LABELS, by_dataset, datasets_of, label_mean
from ips.figures.style import (
    LABEL_COLORS,
    TITLE_SIZE,
    legend_below,
    note,
    panels,
    patch,
    row_font,
    row_height,
    save,
    whiskers,
)
from ips.formats.metrics import Entry

LABEL_TEXT = {
    "altering": "altering tokens (case)",
    "adding": "adding tokens (separator, marker)",
    "perturbation": "reworded prompt (perturbation group)",
}


def perturbation_figure(entries: list[Entry], tau: float, path: Path) -> list[Path]:
    """Mean IPS of the altering and of the adding 0-shot pairs per model (and of reworded
    prompts where a perturbation group exists), with 95% CIs."""
    datasets = datasets_of(entries)
    n_models = max(len(by_dataset(entries, d)) for d in datasets)
    fig, axes = panels(len(datasets), 5.2, 1.8 + 1.25 * row_height(n_models) * n_models,
                       f"IPS of altering vs adding template pairs (0-shot), τ = {tau:g}")
    used = set()
    for ax, d in zip(axes, datasets):
        rows = by_dataset(entries, d)
        y = np.arange(len(rows))
        res = [[label_mean(e, lab) for lab in LABELS] for e in rows]
        means = np.array([[m.mean for m in r] for r in res]).reshape(-1, 3)
        cis = np.array([[m.ci for m in r] for r in res]).reshape(-1, 3, 2)
        show = [k for k in range(3) if np.isfinite(means[:, k]).any()]
        ax.set_title(d, fontsize=10)
        if not show:
            note(ax, "no altering or adding pair")
            continue
        h = 0.8 / len(show)
        for j, k in enumerate(show):
            vals = np.nan_to_num(means[:, k])
            ax.barh(y + (j - (len(show) - 1) / 2) * h, vals, height=h,
                    color=LABEL_COLORS[LABELS[k]], label=LABELS[k],
                    xerr=whiskers(vals, cis[:, k]), error_kw={"elinewidth": 0.8, "capsize": 2})
            used.add(LABELS[k])
        ax.set_yticks(y, [e.model for e in rows], fontsize=row_font(n_models))
        ax.invert_yaxis()
        ax.set_xlim(0, 2.1)
        ax.set_xlabel("mean IPS of the pairs\n(band all; whiskers: 95% CI)")
    if "perturbation" in used:
        fig.suptitle(f"IPS of altering vs adding template pairs (0-shot) and of reworded "
                     f"prompts, τ = {tau:g}", fontsize=TITLE_SIZE)
    handles = [patch(LABEL_COLORS[lab], LABEL_TEXT[lab]) for lab in LABELS if lab in used]
    if handles:
        legend_below(fig, handles, ncols=len(handles))
    return save(fig, path)
