"""Shared look of every figure: colours, panel layout, and saving as PNG and PDF.

Figures are drawn with matplotlib's object API on the Agg canvas (no display, no pyplot
state), so they can be made in worker processes and tests alike.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from matplotlib.figure import Figure

from ips.files import atomic_path

BAND_COLORS = {"all": "#4d4d4d", "low": "#1b9e77", "mid": "#d95f02", "high": "#7570b3"}
TYPE_COLORS = {"base": "#d95f02", "instruct": "#1b9e77"}
LABEL_COLORS = {"altering": "#e7298a", "adding": "#66a61e", "perturbation": "#e6ab02"}
#: colours of the interaction types of `ips.metrics.INTERACTION_TYPES` (paper Fig. 3)
INTERACTION_TYPE_COLORS = {
    "opposite_sign": "#d7191c",
    "same_sign_different_effect": "#fdae61",
    "same_sign_similar_effect": "#2c7bb6",
}
MIN_WIDTH = 7.5  # inches: room for the longest title
DPI = 110


def panels(n: int, width: float, height: float, title: str,
           note: str = "") -> tuple[Figure, list]:
    """A row of n panels under a title, with an optional wrapped note below them."""
    total = max(width * n, MIN_WIDTH)
    lines = textwrap.wrap(note, width=int(total * 15)) if note else []
    note_h = 0.2 * len(lines) + 0.15 if lines else 0.0
    fig = Figure(figsize=(total, height + note_h), layout="constrained")
    fig.suptitle(title, fontsize=12)
    if lines:
        top, bottom = fig.subfigures(2, 1, height_ratios=[height, note_h])
        bottom.text(0.5, 0.5, "\n".join(lines), ha="center", va="center", fontsize=8,
                    color="#555555")
    else:
        top = fig
    axes = top.subplots(1, n, squeeze=False)[0].tolist()
    return fig, axes


def band_label(band: str) -> str:
    return "IPS" if band == "all" else f"IPS$^{{{band}}}$"


def note(ax, text: str) -> None:
    """Replace a panel's content by a centred grey message (e.g. why there is no data)."""
    ax.text(0.5, 0.5, text, ha="center", va="center", wrap=True, fontsize=10,
            transform=ax.transAxes, color="#555555")
    ax.set_xticks([])
    ax.set_yticks([])


def save(fig: Figure, path: str | Path) -> list[Path]:
    """Write `fig` as `<stem>.png` and `<stem>.pdf` next to `path`; return both paths. The
    same figure gives the same bytes: the PDF carries no creation date."""
    path = Path(path)
    out = [path.with_suffix(".png"), path.with_suffix(".pdf")]
    for p in out:
        with atomic_path(p) as tmp:  # a viewer or a failed run never sees half a figure
            fig.savefig(tmp, dpi=DPI, format=p.suffix[1:],
                        metadata={"CreationDate": None} if p.suffix == ".pdf" else None)
    return out
