"""The case study of one sample under a template pair T, T̂ (paper Section 3.3, Fig. 1).

From the normalised interactions Ĩ_T, Ĩ_T̂ of one sample (`ips.analysis.metrics.normalize`),
`case_study` computes what `ips explain` prints and `ips.figures.case_study` draws: the
salient set U = {(kind, S): |Ĩ_T(S)| > τ or |Ĩ_T̂(S)| > τ}, each interaction's type
(`ips.analysis.metrics.type_codes`) and change |Ĩ_T(S) − Ĩ_T̂(S)|, and ips(x, T, T̂) at τ (Eq. 3,
`ips.analysis.metrics.pair_sensitivity`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from ips.analysis import diagnostics, interaction_types, metrics, sparse_metrics
from ips.analysis import layout as analysis_layout
from ips.formats.hdf5 import labels
from ips.formats.shards import Merged
from ips.formats.values import design_row
from ips.prompts.items import letter
from ips.prompts.templates import ZERO_SHOT

AND_JOIN, OR_JOIN = " ∧ ", " ∨ "


def choose_cell(per_pair: np.ndarray, changed: np.ndarray,
                ids: Sequence[str]) -> tuple[int, int] | None:
    """The (sample, pair) cell a run's case study shows (paper Fig. 3a / Fig. 19).

    per_pair: (S, P) ips(x, T, T̂) at τ, NaN where a cell has no value; changed: (S, P) whether
    the prediction differs under the two templates; ids: the S sample ids. Among the valued
    cells, those whose prediction changed if there is any, else all; of these the cell with
    the largest ips(x, T, T̂); ties go to the smallest sample id, then to the first pair.
    None when no cell has a value.
    """
    cells = [(bool(changed[s, p]), float(per_pair[s, p]), str(ids[s]), int(p), int(s))
             for s, p in zip(*np.nonzero(np.isfinite(per_pair)))]
    if not cells:
        return None
    if any(c[0] for c in cells):
        cells = [c for c in cells if c[0]]
    *_, p, s = min(cells, key=lambda c: (-c[1], c[2], c[3]))
    return s, p


@dataclass
class Interaction:
    """One salient interaction (kind, S) of U with its normalised value under T and T̂.

    Fields are also readable by key (`row["change"]`).
    """

    kind: str  # "AND" | "OR"
    mask: int  # bit i set: variable i belongs to S
    words: str  # the variables of S joined by " ∧ " (AND) or " ∨ " (OR)
    value_a: float  # Ĩ under T
    value_b: float  # Ĩ under T̂
    type: str  # one of ips.analysis.interaction_types.INTERACTION_TYPES
    change: float  # |value_a − value_b|

    @property
    def order(self) -> int:
        """|S|."""
        return int(self.mask).bit_count()

    def __getitem__(self, key: str):
        return getattr(self, key)


@dataclass
class CaseStudy:
    """One item under a template pair: predictions, ips(x, T, T̂) at τ and the rows of U.

    `rows` holds every salient interaction of U (union of the salient sets under T and T̂),
    sorted by `change` descending (ties: lower order, AND before OR, smaller mask). `ips` is
    NaN when U is empty.
    """

    model: str
    sample: str
    templates: tuple[str, str]
    words: list[str]
    pred_a: str
    pred_b: str
    gold: str | None
    tau: float
    ips: float
    rows: list[Interaction]
    n_union: int = 0  # |U| (== len(rows))
    type_counts: dict[str, int] = field(default_factory=dict)  # over U, INTERACTION_TYPES order
    label: str = ""  # the pair's Appendix G label (altering / adding / mixed), when known
    prompts: tuple[str, str] = ("", "")  # the two rendered prompts, when known
    seconds: dict[str, float] = field(default_factory=dict)  # time per step, when measured
    # sparse estimation (`ips.interactions.sparse`), empty when every mask was scored: masks scored
    # per template, held-out error per template, its threshold, and whether both are reliable
    sparse: dict = field(default_factory=dict)

    @property
    def n(self) -> int:
        return len(self.words)

    @property
    def prediction_changed(self) -> bool:
        return self.pred_a != self.pred_b

    def to_dict(self) -> dict:
        d = asdict(self)
        d["ips"] = None if math.isnan(self.ips) else self.ips
        d["templates"] = list(self.templates)
        d["prompts"] = list(self.prompts)
        for r, row in zip(d["rows"], self.rows):
            r["order"] = row.order
        return d


def case_study(
    norm_a,
    norm_b,
    words: Sequence[str],
    pred_a,
    pred_b,
    tau: float,
    *,
    model: str = "",
    sample: str = "",
    templates: tuple[str, str] = ("", ""),
    gold=None,
    sets=None,
) -> CaseStudy:
    """The case study of one sample from its normalised interactions under T and T̂.

    `norm_a`, `norm_b`: shape (2, 2**n) (axis 0 AND, 1 OR) as `ips.analysis.metrics.normalize`
    returns for one sample (a NaN-padded (2, 2**n_max) row works too), or shape (2, M) on the
    bitmasks `sets` (∅ first, as `ips.analysis.sparse_metrics.entry_grid`'s columns of the sample;
    every interaction off them is 0); `words` the n variable texts in bit order. U, the type of each
    interaction and ips come from `ips.analysis.metrics` (`salient`, `type_codes`,
    `pair_sensitivity`). Raises `ValueError` for inconsistent inputs.
    """
    a = np.asarray(norm_a, dtype=np.float64)
    b = np.asarray(norm_b, dtype=np.float64)
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(f"norm_a and norm_b must be one sample's normalised interactions of "
                         f"shape (2, 2**n); got shapes {a.shape} and {b.shape}")
    words = [str(w) for w in words]
    layout = None if sets is None else analysis_layout.SetLayout(np.asarray(sets, np.int64),
                                                         np.int64(len(words)))
    res = metrics.pair_sensitivity(a, b, tau, layout=layout)  # checks shapes, Ω, range and τ
    if layout is None:
        n = int(analysis_layout.infer_n_vars(a, "norm_a"))
        if len(words) != n:
            raise ValueError(f"words: {len(words)} given, but the interactions have n = {n} "
                             "variables")
    elif int(layout.sets.max(initial=0)) >> len(words):
        raise ValueError(f"words: {len(words)} given, but sets holds variable "
                         f"{int(layout.sets.max()).bit_length()} (bit order)")
    union = metrics.salient(a, tau) | metrics.salient(b, tau)
    kinds, cols = np.nonzero(union)
    masks = cols if layout is None else layout.sets[cols]
    return _case(kinds, masks, a[kinds, cols], b[kinds, cols], words, pred_a, pred_b, tau,
                 float(res.value), model, sample, templates, gold)


def sparse_case_study(est_a, est_b, words: Sequence[str], pred_a, pred_b, tau: float, *,
                      model: str = "", sample: str = "", templates: tuple[str, str] = ("", ""),
                      gold=None) -> CaseStudy:
    """The case study from two sparse estimates (`ips.interactions.sparse.SparseInteractions`, one
    per template): `case_study` on their `ips.analysis.sparse_metrics.entry_grid` (an interaction
    that is not an entry is 0), the same rows as `case_study` gives on their dense form."""
    if len(words) != est_a.n:
        raise ValueError(f"words: {len(words)} given, but the estimates have n = {est_a.n} "
                         "variables")
    norm, layout = sparse_metrics.entry_grid([[est_a, est_b]])
    return case_study(norm[0, 0], norm[0, 1], words, pred_a, pred_b, tau, model=model,
                      sample=sample, templates=templates, gold=gold, sets=layout.sets[0])


def _case(kinds, masks, va, vb, words, pred_a, pred_b, tau, ips_value, model, sample,
          templates, gold) -> CaseStudy:
    """The CaseStudy of the union U given as (kind, S, Ĩ_T, Ĩ_T̂) per interaction."""
    words = [str(w) for w in words]
    types = [interaction_types.INTERACTION_TYPES[c]
             for c in metrics.type_codes(np.asarray(va), np.asarray(vb))]
    rows = []
    for k, m, x, y, t in zip(np.asarray(kinds).tolist(), np.asarray(masks).tolist(),
                             np.asarray(va, float).tolist(), np.asarray(vb, float).tolist(), types):
        names = [words[i] for i in range(len(words)) if m >> i & 1]
        rows.append(Interaction(
            kind=analysis_layout.KINDS[k], mask=int(m),
            words=(AND_JOIN if k == 0 else OR_JOIN).join(names),
            value_a=x, value_b=y, type=t, change=abs(x - y),
        ))
    rows.sort(key=lambda r: (-r.change, r.order, analysis_layout.KINDS.index(r.kind), r.mask))
    return CaseStudy(
        model=str(model), sample=str(sample), templates=(str(templates[0]), str(templates[1])),
        words=words, pred_a=str(pred_a), pred_b=str(pred_b),
        gold=None if gold is None else str(gold), tau=float(tau), ips=float(ips_value),
        rows=rows, n_union=len(rows),
        type_counts={t: types.count(t) for t in interaction_types.INTERACTION_TYPES},
    )


CASE_GROUP = ZERO_SHOT


def _pred_text(merged: Merged, pred: np.ndarray, s: int, c: int) -> str:
    if merged.attrs.get("kind", "mcq") == "mcq":
        return letter(int(pred[s, c]))
    if merged.greedy_text is not None:
        return str(merged.greedy_text[s, c])
    return str(pred[s, c])


def case_study_data(merged: Merged, norm: np.ndarray, layout: analysis_layout.SetLayout | None,
                    pred: np.ndarray, groups: list[str], tau: float) -> tuple[dict, dict, dict]:
    """The sample and template pair drawn in the case study (paper Fig. 3a / Fig. 19).

    Choice (deterministic): in the group `0shot` (else the first group with two conditions),
    the cell `ips.analysis.case_study.choose_cell` picks (the largest ips(x, T, T̂) among the cells
    whose prediction changed, if any; pairs in `all_pairs` order).

    Returns (data, coords, attrs) for the metrics file: `case_norm` (case_side, kind,
    case_mask) the normalised interactions Ĩ of that sample under both conditions — on
    `case_set` (∅ and the sets of its games' entries, coordinate: their bitmasks) instead of
    case_mask for sparse fits —, `case_v` (case_side, case_mask) its scored v (coordinate
    `case_mask`: the bitmasks, all 2**n or the design's), `case_words` (case_var) its
    variables in bit order, `case_rec` (keep, case_side, case_mask) the surrogate keeping
    the largest interactions (`diagnostics.KEEP`, Fig. 2b); attributes `case_sample`,
    `case_group`, `case_condition_a/_b`, `case_template_a/_b`, `case_pred_a/_b`,
    `case_gold`, `case_ips`, `case_changed`. Without any valued cell: no data,
    `case_sample` = "".
    """
    from ips.interactions import reconstruct

    empty = {"case_sample": ""}
    names = [str(c) for c in merged.conditions["condition"]]
    order = [g for g in groups if g == CASE_GROUP] + [g for g in groups if g != CASE_GROUP]
    group = next((g for g in order if len(merged.groups[g]) >= 2), None)
    if group is None:
        return {}, {}, empty
    idx = np.array([names.index(c) for c in merged.groups[group]], dtype=np.int64)
    local = metrics.all_pairs(idx.size)
    per_pair = metrics.ips(norm[:, idx], local, tau, layout=layout).per_pair  # (S, P)
    changed = pred[:, idx[local[:, 0]]] != pred[:, idx[local[:, 1]]]
    ids = merged.samples.astype(str)
    cell = choose_cell(per_pair, changed, ids)
    if cell is None:
        return {}, {}, empty
    s, p = cell
    sid, value, ch = ids[s], float(per_pair[s, p]), bool(changed[s, p])
    i, j = idx[local[p]].tolist()
    n = int(merged.n_vars[s])
    words = ([str(w) for w in merged.words[s, :n]] if merged.words is not None
             else [f"x{k + 1}" for k in range(n)])
    coords = {"case_side": labels("ab"), "kind": labels(analysis_layout.KINDS),
              "case_var": np.arange(n)}
    if layout is None:
        masks = np.arange(1 << n)
        case_norm = (("case_side", "kind", "case_mask"), norm[s, [i, j], :, :masks.size])
        rec = [reconstruct(*diagnostics.keep_top(merged.and_[s, [i, j], :masks.size],
                                                 merged.or_[s, [i, j], :masks.size], k))
               for k in diagnostics.KEEP]
    else:
        masks = design_row(merged.masks[s])
        cols = np.flatnonzero(layout.sets[s] >= 0)
        case_norm = (("case_side", "kind", "case_set"), norm[s, [i, j]][..., cols])
        coords["case_set"] = layout.sets[s, cols]
        rec = [[sparse_metrics.keep_top(merged.games[s][c], k).predict(masks) for c in (i, j)]
               for k in diagnostics.KEEP]
    coords["case_mask"] = masks
    data = {
        "case_norm": case_norm,
        "case_words": (("case_var",), labels(words)),
        "case_v": (("case_side", "case_mask"), merged.v[s, [i, j], :masks.size]),
        "case_rec": (("keep", "case_side", "case_mask"), np.array(rec)),
    }
    gold = int(merged.gold[s]) if merged.attrs.get("kind", "mcq") == "mcq" else -1
    attrs = {
        "case_sample": str(sid), "case_group": str(group),
        "case_condition_a": names[i], "case_condition_b": names[j],
        "case_template_a": str(merged.conditions["template"][i]),
        "case_template_b": str(merged.conditions["template"][j]),
        "case_pred_a": _pred_text(merged, pred, s, i),
        "case_pred_b": _pred_text(merged, pred, s, j),
        "case_gold": letter(gold, none=""),
        "case_ips": value, "case_changed": int(ch),
    }
    return data, coords, attrs
