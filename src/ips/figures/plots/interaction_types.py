"""Distribution of the interaction types over U by whether the prediction changed
(paper Fig. 3b)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ips.analysis.interaction_types import INTERACTION_TYPE_NAMES, INTERACTION_TYPES
from ips.figures.numbers import by_dataset, datasets_of
from ips.figures.style import (
    INTERACTION_TYPE_COLORS,
    legend_below,
    note,
    panels,
    patch,
    row_font,
    row_height,
    save,
)
from ips.formats.metrics import Entry
from ips.prompts.templates import ZERO_SHOT

CHANGED_TEXT = {"yes": "changed", "no": "same"}


def types_figure(entries: list[Entry], tau: float, path: Path) -> list[Path]:
    """Stacked shares of the three interaction types of the salient union U, pooled over
    the 0-shot (sample, pair) cells, for cells whose prediction changed and for those whose
    prediction stayed the same; one row per model, one panel per dataset."""
    datasets = datasets_of(entries)
    n_models = max(len(by_dataset(entries, d)) for d in datasets)
    fig, axes = panels(len(datasets), 5.4, 1.8 + 1.5 * row_height(n_models) * n_models,
                       f"Types of salient interactions by prediction change (0-shot, τ = {tau:g})")
    for ax, d in zip(axes, datasets):
        rows = [e for e in by_dataset(entries, d)
                if "type_share" in e.ds and ZERO_SHOT in e.ds["group"].values]
        ax.set_title(d, fontsize=10)
        if not rows:
            note(ax, "no 0-shot interaction types")
            continue
        labels, y = [], 0
        for e in rows:
            for ch in ("yes", "no"):
                share = e.ds["type_share"].sel(group=ZERO_SHOT, changed=ch).reindex(
                    type=list(INTERACTION_TYPES)).values.astype(float)
                cells = (int(e.ds["n_type_cells"].sel(group=ZERO_SHOT, changed=ch))
                         if "n_type_cells" in e.ds else 0)
                left = 0.0
                if np.isfinite(share).all():
                    for t, s in zip(INTERACTION_TYPES, share):
                        ax.barh(y, s, left=left, color=INTERACTION_TYPE_COLORS[t], height=0.8)
                        if s >= 0.08:
                            ax.text(left + s / 2, y, f"{100 * s:.0f}%", ha="center",
                                    va="center", fontsize=row_font(n_models) - 1)
                        left += s
                else:
                    ax.text(0.02, y, "no cell", va="center", fontsize=7)
                labels.append(f"{e.model}: {CHANGED_TEXT[ch]} ({cells})")
                y += 1
        ax.set_yticks(np.arange(len(labels)), labels, fontsize=row_font(n_models) - 1)
        ax.invert_yaxis()
        ax.set_xlim(0, 1)
        ax.set_xlabel("share of the salient interactions\n(in brackets: sample × pair cells)",
                      fontsize=9)
    legend_below(fig, [patch(INTERACTION_TYPE_COLORS[t], INTERACTION_TYPE_NAMES[t])
                       for t in INTERACTION_TYPES],
                 ncols=3)
    return save(fig, path)
