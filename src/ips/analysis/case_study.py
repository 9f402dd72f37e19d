"""The case study of one sample under a template pair T, T̂ (paper Section 3.3, Fig. 1).

From the normalised interactions Ĩ_T, Ĩ_T̂ of one sample (`ips.analysis.metrics.normalize`),
`case_study` computes what `ips explain` prints and `ips.figures.plots.case_study` draws: the
salient set U = {(kind, S): |Ĩ_T(S)| > τ or |Ĩ_T̂(S)| > τ}, each interaction's type
(`ips.analysis.metrics.type_codes`) and change |Ĩ_T(S) − Ĩ_T̂(S)|, and ips(x, T, T̂) at τ (Eq. 3,
`ips.analysis.metrics.pair_sensitivity`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from ips.analysis import diagnostics, interaction_types, metrics, sparse_metrics
from ips.analysis.layout import KINDS, SetLayout, infer_n_vars
from ips.formats.hdf5 import labels
from ips.formats.shards import Merged
from ips.formats.values import design_row
from ips.prompts.items import letter
from ips.prompts.templates import ZERO_SHOT

AND_JOIN, OR_JOIN = " ∧ ", " ∨ "


def choose_cell(per_pair: np.ndarray, changed: np.ndarray, ids: Sequence[str],
                want: bool | None = None) -> tuple[int, int] | None:
    """The (sample, pair) cell a run's case study shows (paper Fig. 3a / Fig. 19).

    per_pair: (S, P) ips(x, T, T̂) at τ, NaN where a cell has no value; changed: (S, P) whether
    the prediction differs under the two templates; ids: the S sample ids. Among the valued
    cells, those whose prediction changed if there is any, else all (``want`` True / False:
    only the changed / unchanged ones); of these the cell with the largest ips(x, T, T̂); ties
    go to the smallest sample id, then to the first pair. None when no cell qualifies.
    """
    cells = [(bool(changed[s, p]), float(per_pair[s, p]), str(ids[s]), int(p), int(s))
             for s, p in zip(*np.nonzero(np.isfinite(per_pair)))]
    if want is None and any(c[0] for c in cells):
        want = True
    if want is not None:
        cells = [c for c in cells if c[0] == want]
    if not cells:
        return None
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
    # every subset's AND and OR effect with its words and v (`ips.analysis.labelled`), when
    # every mask was scored: `case.labelled.to_frame()` is the data frame of `ips export`
    labelled: object = None

    @property
    def n(self) -> int:
        return len(self.words)

    @property
    def prediction_changed(self) -> bool:
        return self.pred_a != self.pred_b

    def to_dict(self) -> dict:
        """The case as JSON-ready values (its `labelled` tables are `ips export`'s, not here)."""
        d = asdict(replace(self, labelled=None))
        d.pop("labelled")
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
    layout = None if sets is None else SetLayout(np.asarray(sets, np.int64),
                                                         np.int64(len(words)))
    res = metrics.pair_sensitivity(a, b, tau, layout=layout)  # checks shapes, Ω, range and τ
    if layout is None:
        n = int(infer_n_vars(a, "norm_a"))
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
            kind=KINDS[k], mask=int(m),
            words=(AND_JOIN if k == 0 else OR_JOIN).join(names),
            value_a=x, value_b=y, type=t, change=abs(x - y),
        ))
    rows.sort(key=lambda r: (-r.change, r.order, KINDS.index(r.kind), r.mask))
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


#: the second case of Fig. 3a: the unchanged sample beside a changed one (`case_study_data`)
SAME = "case_same"


def case_study_data(merged: Merged, norm: np.ndarray, layout: SetLayout | None,
                    pred: np.ndarray, groups: list[str], tau: float) -> tuple[dict, dict, dict]:
    """The samples and template pairs drawn in the case study (paper Fig. 3a / Fig. 19): one
    whose prediction changed and one whose prediction stayed, where both exist.

    Choice (deterministic): in the group `0shot` (else the first group with two conditions),
    the cell `ips.analysis.case_study.choose_cell` picks (the largest ips(x, T, T̂) among the
    cells whose prediction changed, if any; pairs in `all_pairs` order), under the prefix
    `case`; when it changed, also the largest among the unchanged cells, under `case_same`
    (`SAME`). Without any changed cell, `case` is the unchanged one and there is no
    `case_same`; without any unchanged cell, no `case_same` either.

    Returns (data, coords, attrs) for the metrics file, per prefix P: `P_norm` (P_side, kind,
    P_mask) the normalised interactions Ĩ of that sample under both conditions — on `P_set`
    (∅ and the sets of its games' entries, coordinate: their bitmasks) instead of P_mask for
    sparse fits —, `P_v` (P_side, P_mask) its scored v (coordinate `P_mask`: the bitmasks,
    all 2**n or the design's), `P_words` (P_var) its variables in bit order, `P_rec` (keep,
    P_side, P_mask) the surrogate keeping the largest interactions (`diagnostics.KEEP`,
    Fig. 2b); attributes `P_sample`, `P_group`, `P_condition_a/_b`, `P_template_a/_b`,
    `P_pred_a/_b`, `P_gold`, `P_ips`, `P_changed`. Without any valued cell: no data,
    `case_sample` = "".
    """
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
    cells = {"case": cell}
    if changed[cell]:
        same = choose_cell(per_pair, changed, ids, want=False)
        if same is not None:
            cells[SAME] = same
    data, coords, attrs = {}, {"kind": labels(KINDS)}, {}
    for prefix, (s, p) in cells.items():
        i, j = idx[local[p]].tolist()
        d, c = _cell_data(prefix, merged, norm, layout, s, i, j)
        data |= d
        coords |= c
        gold = int(merged.gold[s]) if merged.attrs.get("kind", "mcq") == "mcq" else -1
        attrs |= {f"{prefix}_{k}": v for k, v in {
            "sample": str(ids[s]), "group": str(group),
            "condition_a": names[i], "condition_b": names[j],
            "template_a": str(merged.conditions["template"][i]),
            "template_b": str(merged.conditions["template"][j]),
            "pred_a": _pred_text(merged, pred, s, i), "pred_b": _pred_text(merged, pred, s, j),
            "gold": letter(gold, none=""),
            "ips": float(per_pair[s, p]), "changed": int(changed[s, p]),
        }.items()}
    return data, coords, attrs


def _cell_data(prefix: str, merged: Merged, norm: np.ndarray,
               layout: SetLayout | None, s: int, i: int,
               j: int) -> tuple[dict, dict]:
    """`case_study_data`'s variables and coordinates of sample s under conditions i and j."""
    from ips.interactions import reconstruct

    n = int(merged.n_vars[s])
    words = ([str(w) for w in merged.words[s, :n]] if merged.words is not None
             else [f"x{k + 1}" for k in range(n)])
    side, mask = f"{prefix}_side", f"{prefix}_mask"
    coords = {side: labels("ab"), f"{prefix}_var": np.arange(n)}
    if layout is None:
        masks = np.arange(1 << n)
        norm_ = ((side, "kind", mask), norm[s, [i, j], :, :masks.size])
        rec = [reconstruct(*diagnostics.keep_top(merged.and_[s, [i, j], :masks.size],
                                                 merged.or_[s, [i, j], :masks.size], k))
               for k in diagnostics.KEEP]
    else:
        masks = design_row(merged.masks[s])
        cols = np.flatnonzero(layout.sets[s] >= 0)
        norm_ = ((side, "kind", f"{prefix}_set"), norm[s, [i, j]][..., cols])
        coords[f"{prefix}_set"] = layout.sets[s, cols]
        rec = [[sparse_metrics.keep_top(merged.games[s][c], k).predict(masks) for c in (i, j)]
               for k in diagnostics.KEEP]
    coords[mask] = masks
    return {
        f"{prefix}_norm": norm_,
        f"{prefix}_words": ((f"{prefix}_var",), labels(words)),
        f"{prefix}_v": ((side, mask), merged.v[s, [i, j], :masks.size]),
        f"{prefix}_rec": (("keep", side, mask), np.array(rec)),
    }, coords
