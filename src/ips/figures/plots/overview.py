"""The method on one item, as this project can draw it (paper Fig. 1): the input's variables
under one template, the output v(x_S) of every masked input x_S, and the salient AND and OR
interactions that v decomposes into.

It draws the case-study sample of the first metrics file that holds one (`case_*` of
`ips.analysis.case_study`, condition a): only what a run computed, no schematic.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ips.figures.style import grid, note, save
from ips.formats.metrics import Entry

#: how many salient interactions of each kind the last panel shows at most
SHOWN = 8
KIND_COLORS = {"AND": "#1f77b4", "OR": "#d62728"}


def _case(entries: list[Entry]) -> Entry | None:
    """The first entry with an exhaustive case study (every mask of its sample scored)."""
    for e in entries:
        ds = e.ds
        if ds.attrs.get("case_sample") and "case_v" in ds and "case_mask" in ds.coords:
            n = ds["case_words"].size
            if ds["case_mask"].size == 1 << n and "case_set" not in ds.dims:
                return e
    return None


def _kept(mask: int, words: list[str]) -> str:
    kept = [w for i, w in enumerate(words) if mask >> i & 1]
    return " ".join(kept) if kept else "(all masked)"


def overview_figure(entries: list[Entry], tau: float, path: Path) -> list[Path]:
    """Three panels for one sample under one template: its variables, v of all 2^n masked
    inputs in ascending order (the full and the empty input marked and named, an arrow from
    each name to its point), and its largest salient interactions Ĩ (AND blue, OR red) with
    ±τ dashed."""
    e = _case(entries)
    title = f"The method on one item (paper Fig. 1), τ = {tau:g}"
    if e is None:
        fig, axes = grid(1, 1, 8.0, 2.6, title)
        note(axes[0][0], "no metrics file holds an exhaustive case study")
        return save(fig, path)
    ds, a = e.ds, e.ds.attrs
    words = [str(w) for w in ds["case_words"].values]
    n = len(words)
    v = ds["case_v"].sel(case_side="a").values.astype(float)
    masks = ds["case_mask"].values.astype(int)
    norm = ds["case_norm"].sel(case_side="a").values.astype(float)  # (kind, mask)
    fig, axes = grid(1, 3, 4.4, 3.8,
                     f"{title}\n{e.model} · {e.dataset} · {a['case_sample']} under "
                     f"{a['case_condition_a']}: prediction {a['case_pred_a']}")
    left, middle, right = axes[0]
    left.axis("off")
    left.set_title(f"input: its n = {n} variables", fontsize=10)
    left.text(0.02, 0.95, "\n".join(f"x{i + 1}: {w}" for i, w in enumerate(words)),
              va="top", ha="left", fontsize=9, transform=left.transAxes)
    order = np.argsort(v, kind="stable")
    middle.plot(np.arange(v.size), v[order], "o-", ms=3, color="#444444", linewidth=0.8)
    # the two named inputs get a marker of their own, and their label an arrow to it, on the
    # side of the curve with room (below a point in the upper half, above one in the lower)
    mid = float(np.mean(middle.get_ylim()))
    for m, label, style in ((0, "all masked", "s"), ((1 << n) - 1, "full input", "D")):
        at = int(np.flatnonzero(masks[order] == m)[0])
        y = v[order][at]
        middle.plot(at, y, style, ms=7, mfc="white", mec="#d62728", mew=1.5, zorder=3)
        left_side = at > v.size / 2
        middle.annotate(label, (at, y), xytext=(-40 if left_side else 20,
                                                -22 if y > mid else 18),
                        textcoords="offset points", fontsize=8, ha="center",
                        arrowprops={"arrowstyle": "->", "color": "#d62728", "lw": 0.8})
    middle.set_title(f"v(x_S) of all 2^{n} masked inputs", fontsize=10)
    middle.set_xlabel("masked inputs, ascending v", fontsize=8)
    middle.set_ylabel("v(x_S) (log-odds of the target)", fontsize=8)
    middle.tick_params(labelsize=7)
    rows = [(abs(norm[k, m]), kind, m, norm[k, m]) for k, kind in enumerate(("AND", "OR"))
            for m in range(1, 1 << n) if abs(norm[k, m]) > tau]
    right.set_title(f"the largest {min(len(rows), 2 * SHOWN)} of its {len(rows)} salient\n"
                    "interactions Ĩ (|Ĩ| > τ)", fontsize=10)
    rows = sorted(rows, reverse=True)[:2 * SHOWN]
    if not rows:
        note(right, "no salient interaction")
    else:
        y = np.arange(len(rows))
        right.barh(y, [r[3] for r in rows], color=[KIND_COLORS[r[1]] for r in rows])
        right.set_yticks(y, [f"{r[1]} {{{_kept(r[2], words)}}}" for r in rows], fontsize=7)
        right.invert_yaxis()
        for x in (-tau, tau):
            right.axvline(x, color="#888888", linestyle="--", linewidth=0.8)
        right.set_xlim(-1.05, 1.05)
        right.set_xlabel("normalised effect Ĩ", fontsize=8)
        right.tick_params(axis="x", labelsize=7)
    return save(fig, path)
