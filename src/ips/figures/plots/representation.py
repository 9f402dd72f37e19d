"""Representation baseline (paper Appendix H): similarity of the final hidden states of two
templates against the IPS of the pair."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ips.figures.numbers import correlation_text, datasets_of
from ips.figures.style import (
    MAX_LEGEND,
    family_colors,
    family_legend,
    grid,
    legend_below,
    marker,
    model_colors,
    note,
    save,
)
from ips.formats.metrics import Entry
from ips.prompts.templates import ZERO_SHOT

MEASURES = (("rep_cosine", "cosine similarity of the hidden states"),
            ("rep_l2", "L2 distance of the hidden states"))


def representation_figure(entries: list[Entry], tau: float, path: Path) -> list[Path]:
    """Per dataset a row of two panels: cosine similarity and L2 distance of the final-layer hidden
    states at the answer position (mean over samples) against the pair's IPS, one point per
    (model, 0-shot template pair), with Pearson / Spearman r over all points; beyond MAX_LEGEND
    models the points are coloured by family."""
    datasets = datasets_of(entries)
    fig, grid_axes = grid(len(datasets), 2, 4.0, 3.6,
                          "Representation baseline vs IPS of the 0-shot template pairs "
                          f"(τ = {tau:g})")
    axes = [ax for row in grid_axes for ax in row]
    many = len({e.model for e in entries}) > MAX_LEGEND
    color = ({e.model: family_colors(entries)[e.attrs.get("family", "?")] for e in entries}
             if many else model_colors(entries))
    used = {}
    for k, d in enumerate(datasets):
        for j, (name, text) in enumerate(MEASURES):
            ax = axes[2 * k + j]
            xs, ys = [], []
            for e in (e for e in entries if e.dataset == d):
                ds = e.ds
                if name not in ds or ds.sizes.get("pair", 0) == 0:
                    continue
                sel = ds["pair_group"].values.astype(str) == ZERO_SHOT
                x = ds[name].values[sel].astype(float)
                y = ds["pair_ips"].sel(band="all").values[sel].astype(float)
                ok = np.isfinite(x) & np.isfinite(y)
                if ok.any():
                    ax.plot(x[ok], y[ok], "o", color=color[e.model],
                            markersize=3 if many else 4, alpha=0.7 if many else 1.0)
                    used[e.model] = color[e.model]
                xs += x.tolist()
                ys += y.tolist()
            if not np.isfinite(np.asarray(xs, float)).any():
                note(ax, "no hidden states in the metrics files")
            ax.set_xlabel(text, fontsize=8)
            ax.set_ylabel("IPS of the pair")
            ax.set_title(f"{d}\n{correlation_text(xs, ys)}", fontsize=8)
    legend_below(fig, family_legend(entries)[:-2] if many
                 else [marker(c, m) for m, c in used.items()])
    return save(fig, path)
