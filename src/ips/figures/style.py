"""Shared look of every figure: colours, panel layout, and saving as PNG and PDF.

Figures are drawn with matplotlib's object API on the Agg canvas (no display, no pyplot
state), so they can be made in worker processes and tests alike.
"""

from __future__ import annotations

import textwrap
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from matplotlib.text import Annotation

from ips.figures.numbers import few
from ips.formats.metrics import Entry
from ips.outputs import atomic_path

BAND_COLORS = {"all": "#4d4d4d", "low": "#1b9e77", "mid": "#d95f02", "high": "#7570b3"}
TYPE_COLORS = {"base": "#d95f02", "instruct": "#1b9e77"}
LABEL_COLORS = {"altering": "#e7298a", "adding": "#66a61e", "perturbation": "#e6ab02"}
MAX_LEGEND = 12
"""Beyond this many models a figure colours its models by family rather than naming each."""

#: colours of the interaction types of `ips.analysis.interaction_types.INTERACTION_TYPES` (paper
#: Fig. 3)
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
    # a title wider than the figure would be cut at its edges: wrapped at about 10
    # characters an inch at TITLE_SIZE
    fig.suptitle("\n".join(textwrap.fill(line, width=int(total * 10))
                           for line in title.split("\n")), fontsize=TITLE_SIZE)
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


FEW_HATCH = "////"
"""Hatch of a bar whose interval rests on fewer than MIN_RELIABLE_N samples."""


#: how the nulls are marked beside IPS (ips.analysis.nulls): the matched-size null and the Gaussian
#: null
NULL_MARKS = {"matched": dict(marker="D", color="#e6ab02", mfc="none", ms=6, ls=""),
              "gaussian": dict(marker="|", color="#222222", ms=9, mew=1.5, ls="")}


def null_legend() -> list:
    """Legend entries of `NULL_MARKS`."""
    from matplotlib.lines import Line2D

    return [Line2D([], [], label="matched-size null", **NULL_MARKS["matched"]),
            Line2D([], [], label="Gaussian null (each level)", **NULL_MARKS["gaussian"])]


def few_hatch(n) -> str | None:
    return FEW_HATCH if few(n) else None


def whiskers(values, cis) -> np.ndarray:
    """matplotlib's xerr/yerr (2, n) from values and (n, 2) intervals; 0 where unknown."""
    v = np.asarray(values, float)
    c = np.asarray(cis, float).reshape(-1, 2)
    err = np.stack([v - c[:, 0], c[:, 1] - v])
    return np.where(np.isfinite(err), np.maximum(err, 0.0), 0.0)


def colors(n: int) -> list:
    from matplotlib import colormaps

    cmap = colormaps["tab10" if n <= 10 else "tab20"]
    return [cmap(i % cmap.N) for i in range(max(n, 1))]


def model_colors(entries: list[Entry]) -> dict[str, tuple]:
    models = list(dict.fromkeys(e.model for e in entries))
    return dict(zip(models, colors(len(models))))


ROW_INCHES = (0.32, 0.24)
"""Height of one model's row in the figures with a row per model: up to 20 rows, beyond."""


def row_height(n: int) -> float:
    """Inches of one of n rows of a row-per-model panel: roomy for a few models, tighter for
    the paper's 50, so that 50 rows stay under about 20 inches (`ROW_INCHES`)."""
    return ROW_INCHES[0] if n <= 20 else ROW_INCHES[1]


def row_font(n: int) -> float:
    """Font size of the row labels of a panel with n rows: 8 points up to 20 rows, 7 beyond."""
    return 8 if n <= 20 else 7


FAMILY_STYLES = {"instruct": "-", "base": "--"}


def family_colors(entries: list[Entry]) -> dict[str, tuple]:
    """One colour per model family (`family` attribute): the line figures colour their 50
    lines by family, not by model (a legend of 50 colours cannot be read)."""
    fams = sorted({e.attrs.get("family", "?") for e in entries})
    return dict(zip(fams, colors(len(fams))))


def family_legend(entries: list[Entry]) -> list:
    """Legend entries of `family_colors` with the line style of each model type."""
    from matplotlib.lines import Line2D

    count = {}
    for e in entries:
        count.setdefault(e.attrs.get("family", "?"), set()).add(e.model)
    hs = [Line2D([], [], color=c, label=f"{f} ({len(count[f])} models)")
          for f, c in family_colors(entries).items()]
    return hs + [Line2D([], [], color="#555555", ls=s, label=t) for t, s in
                 FAMILY_STYLES.items()]


def marker(color, label: str):
    from matplotlib.lines import Line2D

    return Line2D([], [], marker="o", linestyle="", color=color, label=label)


def patch(color, label: str):
    from matplotlib.patches import Patch

    return Patch(facecolor=color, label=label)


def legend_below(fig, handles, ncols: int = 4, labels=None) -> None:
    """One legend for the whole figure, below its panels (labels: the handles' own)."""
    if handles:
        extra = {} if labels is None else {"labels": list(labels)}
        fig.legend(handles=list(handles), loc="outside lower center",
                   ncols=min(ncols, max(1, len(handles))), fontsize=8, frameon=False, **extra)


def blank(ax) -> None:
    for side in ("top", "right", "bottom", "left"):
        ax.spines[side].set_visible(False)
