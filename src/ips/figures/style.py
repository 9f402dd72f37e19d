"""Shared look of every figure: colours, panel layout, and saving as PNG and PDF.

Figures are drawn with matplotlib's object API on the Agg canvas (no display, no pyplot
state), so they can be made in worker processes and tests alike.
"""

from __future__ import annotations

import textwrap
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from matplotlib.figure import Figure
from matplotlib.text import Annotation

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
BANNER_COLOR = "#c00000"
TITLE_SIZE = 12  # points
#: the text `save` writes above the title of every figure (`banner`); "" for none
_BANNER: ContextVar[str] = ContextVar("banner", default="")


@contextmanager
def banner(text: str):
    """Every figure saved inside this block carries `text` above its title, in red (that its
    numbers come from models with random weights): one switch for every figure, so that no
    figure can leave it out."""
    token = _BANNER.set(text)
    try:
        yield
    finally:
        _BANNER.reset(token)


def grid(rows: int, cols: int, width: float, height: float, title: str,
         note: str = "") -> tuple[Figure, list[list]]:
    """rows × cols panels of width × height inches under a title, with an optional wrapped
    note below them; the axes as a list of rows."""
    total = max(width * cols, MIN_WIDTH)
    lines = textwrap.wrap(note, width=int(total * 15)) if note else []
    note_h = 0.2 * len(lines) + 0.15 if lines else 0.0
    fig = Figure(figsize=(total, height * rows + note_h), layout="constrained")
    fig.suptitle(title, fontsize=TITLE_SIZE)
    if lines:
        top, bottom = fig.subfigures(2, 1, height_ratios=[height * rows, note_h])
        bottom.text(0.5, 0.5, "\n".join(lines), ha="center", va="center", fontsize=8,
                    color="#555555")
    else:
        top = fig
    return fig, top.subplots(rows, cols, squeeze=False).tolist()


def panels(n: int, width: float, height: float, title: str,
           note: str = "") -> tuple[Figure, list]:
    """A row of n panels under a title, with an optional wrapped note below them."""
    fig, axes = grid(1, n, width, height, title, note)
    return fig, axes[0]


def band_label(band: str) -> str:
    return "IPS" if band == "all" else f"IPS$^{{{band}}}$"


def note(ax, text: str) -> None:
    """Replace a panel's content by a centred grey message (e.g. why there is no data)."""
    ax.text(0.5, 0.5, text, ha="center", va="center", wrap=True, fontsize=10,
            transform=ax.transAxes, color="#555555")
    ax.set_xticks([])
    ax.set_yticks([])


def _add_banner(fig: Figure, text: str, height: float = 0.25) -> None:
    """`text` in red on a line of its own above the title, in `height` more inches of
    figure: the title gains an empty first line, for which the constrained layout makes
    room, and `text` is written on it (a text the layout does not know would lie on the
    title or on the legends at the foot). Every figure's title is TITLE_SIZE points."""
    w, h = fig.get_size_inches()
    fig.set_size_inches(w, h + height)
    title = fig.suptitle("\n" + fig.get_suptitle(), fontsize=TITLE_SIZE)
    # anchored to the title's box as drawn: the layout moves the title up by a margin fixed in
    # inches, so a fixed figure fraction lands on the title's first line in a tall figure
    mark = Annotation(text, xy=(0.5, 1.0), xycoords=title, ha="center", va="top",
                      color=BANNER_COLOR, fontsize=TITLE_SIZE - 2, fontweight="bold")
    mark.set_in_layout(False)
    fig.add_artist(mark)


def save(fig: Figure, path: str | Path) -> list[Path]:
    """Write `fig` as `<stem>.png` and `<stem>.pdf` next to `path`; return both paths. The
    same figure gives the same bytes: the PDF carries no creation date. Inside `banner` the
    figure gets its text above the title."""
    path = Path(path)
    if _BANNER.get():
        _add_banner(fig, _BANNER.get())
    out = [path.with_suffix(".png"), path.with_suffix(".pdf")]
    for p in out:
        with atomic_path(p) as tmp:  # a viewer or a failed run never sees half a figure
            fig.savefig(tmp, dpi=DPI, format=p.suffix[1:],
                        metadata={"CreationDate": None} if p.suffix == ".pdf" else None)
    return out
