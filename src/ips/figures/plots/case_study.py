"""The case-study figure of `ips explain` and of a run (paper Fig. 1, Fig. 3a / Section 3.3).

One item under a template pair (T, T̂): for the salient interactions that changed most, two
horizontal bars side by side, Ĩ under T (solid) and under T̂ (hatched), labelled by the
interaction's words and coloured by its type (`style.INTERACTION_TYPE_COLORS`); dashed lines
mark ±τ. The title gives both predictions (and the gold answer), ips(x, T, T̂) and τ, and
for a sparse estimate its held-out error with the verdict reliable / UNRELIABLE. A run's
figure has two such panels: a sample whose prediction changed above one whose prediction
stayed.
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

from matplotlib.patches import Patch

from ips.analysis.interaction_types import INTERACTION_TYPE_NAMES
from ips.figures.style import INTERACTION_TYPE_COLORS, grid, note, save

_LABEL_CHARS = 38  # longer interaction labels are shortened (see _label)


def case_title(case) -> str:
    ta, tb = case.templates
    gold = f", gold {case.gold}" if case.gold is not None else ""
    head = " · ".join(x for x in (case.model, case.sample) if x)
    value = "no salient interaction" if math.isnan(case.ips) else f"ips = {case.ips:.3f}"
    title = (f"{head}\n{ta}: prediction {_shown(case.pred_a)}   {tb}: prediction "
             f"{_shown(case.pred_b)}{gold}"
             f"   |   {value} at τ = {case.tau:g}")
    sp = case.sparse
    if sp:  # an estimate: say how far it can be trusted
        errors = " / ".join(f"{e:.1%}" for e in sp["heldout_error"])
        title += (f"\nsparse estimate from {sp['masks']} of 2^{case.n} masks, held-out error "
                  f"{errors}: " + ("reliable" if sp["reliable"] else
                                    f"UNRELIABLE (above {sp['threshold']:.0%})"))
    return title


def _shown(text) -> str:
    """`text` with control characters escaped (a byte-level model may predict one; no font
    has a glyph for it)."""
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in str(text))


def _label(row, words) -> str:
    """`AND {cat ∧ sat}`; a long label of a large S names what S leaves out, else wraps."""
    text = f"{row.kind} {{{row.words}}}"
    if len(text) <= _LABEL_CHARS:
        return text
    n = len(words)
    out = [words[i] for i in range(n) if not row.mask >> i & 1]
    if len(out) < n / 2:
        rest = f"{row.kind} {{all {n} but {', '.join(out)}}}" if out else f"{row.kind} {{all {n}}}"
        if len(rest) <= _LABEL_CHARS:
            return rest
    lines = textwrap.wrap(text, _LABEL_CHARS)
    return "\n".join(lines[:2]) + ("…" if len(lines) > 2 else "")


def case_study_figure(cases, path, top: int = 12, title: str = "") -> list[Path]:
    """Draw `cases` to `path` as PNG and PDF; return both paths.

    `cases`: one `ips.analysis.case_study.CaseStudy` (titled by it), or a list of panels, one
    under the other under `title`, each a CaseStudy (titled by it) or a text saying why a
    panel has no case. A case shows its first `top` rows (the largest changes |Ĩ_T − Ĩ_T̂|);
    an empty U gets a note instead of bars.
    """
    single = not isinstance(cases, list)
    cases = [cases] if single else cases
    shown = [[] if isinstance(c, str) else c.rows[: max(int(top), 0)] for c in cases]
    if single and shown[0]:
        ta, tb = cases[0].templates
        part = (f"the {len(shown[0])} of {len(cases[0].rows)}"
                if len(shown[0]) < len(cases[0].rows) else f"all {len(shown[0])}")
        caption = (f"Bars: normalised interaction Ĩ under {ta} (solid) and {tb} (hatched) for "
                   f"{part} salient interactions (|Ĩ| > τ under either template), largest "
                   f"change first; colour = interaction type; dashed lines at ±τ.")
    elif not single:
        caption = (f"Bars: normalised interaction Ĩ under the first template (solid) and the "
                   f"second (hatched) for the at most {top} salient interactions (|Ĩ| > τ under "
                   f"either template) that change most, largest change first; colour = "
                   f"interaction type; dashed lines at ±τ.")
    else:
        caption = ""
    height = max(1.6 + 0.42 * max(len(r), 3) for r in shown)
    fig, axes = grid(len(cases), 1, 9.5, height, case_title(cases[0]) if single else title, caption)
    for (ax,), case, rows in zip(axes, cases, shown):
        if isinstance(case, str):
            note(ax, case)
            continue
        if not single:
            ax.set_title(("prediction changed" if case.prediction_changed else
                          "prediction unchanged") + " · " + case_title(case), fontsize=9)
        _panel(ax, case, rows)
    return save(fig, path)


def _panel(ax, case, rows) -> None:
    """One case's bars, or a note where U is empty."""
    ta, tb = case.templates
    if not rows:
        note(ax, f"no salient interaction: every |Ĩ| ≤ τ = {case.tau:g} under both "
                 f"{ta} and {tb}, so ips has no value for this pair")
        return
    h = 0.38
    ys = list(range(len(rows)))[::-1]  # the largest change on top
    for y, r in zip(ys, rows):
        color = INTERACTION_TYPE_COLORS[r.type]
        ax.barh(y + h / 2, r.value_a, height=h, color=color, edgecolor="black", linewidth=0.5)
        ax.barh(y - h / 2, r.value_b, height=h, color=color, edgecolor="black", linewidth=0.5,
                hatch="///", alpha=0.55)
    ax.set_yticks(ys, [_label(r, case.words) for r in rows], fontsize=8)
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.set_xlim(-1.08, 1.08)
    ax.axvline(0.0, color="black", linewidth=0.8)
    for x in (-case.tau, case.tau):
        ax.axvline(x, color="#777777", linewidth=0.8, linestyle="--")
    ax.set_xlabel("normalised interaction Ĩ")
    ax.grid(axis="x", alpha=0.3)
    types = [t for t in INTERACTION_TYPE_COLORS if any(r.type == t for r in rows)]
    handles = [Patch(facecolor=INTERACTION_TYPE_COLORS[t], edgecolor="black", linewidth=0.5,
                     label=INTERACTION_TYPE_NAMES[t]) for t in types]
    handles += [Patch(facecolor="white", edgecolor="black", label=f"Ĩ under {ta}"),
                Patch(facecolor="white", edgecolor="black", hatch="///", label=f"Ĩ under {tb}")]
    ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0),
              frameon=False)
