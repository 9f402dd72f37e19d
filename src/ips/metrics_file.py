"""The metrics file of one (model, dataset): what `ips metrics` writes (`summarize`) and how
the later steps read it (`read_metrics`).

`summarize` takes the merged shards (`ips.shards`) and computes the metrics of `ips.metrics`,
`ips.diagnostics` and `ips.nulls` on the whole set of samples, so sharding cannot change a
number. `read_metrics` checks the attributes every reader relies on and returns an `Entry`:
the file's model, dataset and model attributes (`ips.config.MODEL_ATTRIBUTES`;
`active_params` defaults to `params`, as for a dense model) next to the dataset itself, and
whether the model has random weights (`Entry.random_weights`, from `model_source`).

Output layout (one netCDF/HDF5 file, `xarray.open_dataset(path, engine="h5netcdf")`):

| variable | dims | content |
|---|---|---|
| `ips` | group, band | IPS (band `all`) and IPS^low/mid/high at τ over the group's unordered condition pairs |
| `n_valued_samples`, `n_empty_pairs` | group, band | samples averaged into `ips`; (sample, pair) cells with an empty U |
| `ips_sweep`, `n_valued_samples_sweep` | tau, group | IPS (band `all`) for every τ of the sweep |
| `pair_ips`, `pair_n_valued` | pair, band | per condition pair: mean over the samples with a non-empty U of ips(x, T, T̂), and how many |
| `type_share`, `type_count` | group, type, changed | shares / counts of the interaction types over U, pooled over the group's (sample, pair) cells whose prediction changed (`yes`) or not (`no`) |
| `sample_type_count` | sample, group, type, changed | the same counts per sample (over its pairs); `type_count` is their sum over samples (for intervals of the shares over samples) |
| `n_type_cells` | group, changed | number of (sample, pair) cells with a changed / unchanged prediction |
| `output_consistency` | group | share of samples with the same prediction under every condition of the group |
| `pair_consistency` | pair | share of samples with the same prediction under both conditions |
| `accuracy` | condition | accuracy of `pred` per condition (NaN for instruction datasets) |
| `rep_cosine`, `rep_l2` | pair | representation baseline (App. H): mean over samples of the cosine similarity / L2 distance of the final-layer hidden states of the two conditions |
| `matching_error_max`, `n_samples`, `n_vars_mean` | – | largest fit matching error; samples; mean number of variables |
| `sample_ips` | sample, group, band | per-sample IPS (mean over the sample's valued pairs of the group); NaN where the sample has no valued pair |
| `sample_pair_ips` | sample, pair, band | ips(x, T, T̂) of every sample and pair; NaN where U is empty |
| `ips_sweep_ci` | tau, group, bound | the same interval for `ips_sweep` |
| `ips_ci`, `pair_ips_ci` | group / pair, band, bound | percentile-bootstrap interval (bound `low`, `high`) of `ips` / `pair_ips` over samples (`ips.uncertainty`) |
| `band_diff`, `band_p`, `band_p_holm`, `band_n` | group, band_pair | order of the bands (paper 4.3): for the pairs low-mid, mid-high, low-high, the mean over samples of the per-sample difference `sample_ips` first minus second band, the two-sided paired sign-flip p-value of it (`ips.uncertainty.sign_flip_test`, on the samples valued in both bands), the Holm-adjusted p-value over the group's three tests, and those samples |
| `sparsity_mean`, `sparsity_median` | rank | sorted |Ĩ| over Ω of every (sample, condition), read at relative ranks 0 (largest) … 1 (smallest), averaged (Fig. 2a) |
| `salient_share` | – | mean share of Ω with |Ĩ| > τ |
| `matching_nrmse` | keep | universal matching keeping only the largest 3 % / 5 % / all interactions: mean over (sample, condition) of RMS(φ_k − v) / (max v − min v) (Fig. 2b) |
| `sample_salient_share`, `sample_matching_nrmse` | sample[, keep] | the same two per sample (mean over its conditions), for intervals over samples |
| `case_norm`, `case_v`, `case_rec`, `case_words` | case_side, kind, case_mask / case_var | the case-study sample (`case_study_data`): Ĩ under both conditions (side `a`, `b`; kind `AND`, `OR`), v, the surrogate with the largest interactions, its variables |
| `null_ips`, `null_ips_ci`, `null_n_valued` | group, null_level, band[, bound] | Gaussian null IPS (`ips.nulls`): mean over samples of each sample's mean over the group's conditions of ips(x, v, v') with v' = v + level·range(v)·N(0, 1) refitted; its bootstrap interval and samples |
| `sample_null_ips`, `null_ips_sweep` | sample, group, null_level, band / tau, group, null_level | the same per sample, and over the τ sweep (band all) |
| `matched_null_ips`, `matched_null_ips_ci`, `matched_null_n_valued`, `sample_matched_null_ips` | group, band (sample, …) | matched-size null: per sample the mean over the group's pairs of the pair's null (both sides + noise of sd(v_b − v_a), mean of the two sides) |
| `sample_pair_matched_null`, `pair_matched_null` | sample, pair, band / pair, band | the matched-size null of every pair, and its mean over samples |
| `sample_pair_change`, `sample_pair_change_rel` | sample, pair | size of each pair's change sd(v_b − v_a), and that over the mean range of the two games |
| `sample_v_range` | sample, condition | max v − min v of every game |
| `precision_null_ips`, `precision_null_ips_ci`, `precision_null_n_valued`, `sample_precision_null_ips` | precision, band (sample, …) | precision null (`ips.nulls.precision_null`): per sample the mean over its re-scored conditions of ips(x, v, v') between this run's fit and the fit of the same prompt scored in `precision`; NaN for samples not re-scored |
| `precision_null_ips_sweep` | tau, precision | the same over the τ sweep (band all) |
| `precision_max_abs_dv`, `precision_median_abs_dv`, `precision_dv_rel`, `precision_jaccard`, `precision_games` | precision | max and median |v' − v| over every mask of the re-scored games, their median sd(v' − v) / range of v, mean salient-set Jaccard at τ, and how many games |
| `heldout_error`, `reliable` | sample, condition | sparse fits only: each game's held-out reconstruction error (NaN for a complete design) and whether it is at most `ips.sparse.UNRELIABLE_HELDOUT` |

Sparse fits (`sampling: sparse`, any n): the interactions are their games' entries, laid on
the sets that are an entry of any game of the sample (`ips.sparse.entry_grid`, with which
`ips.metrics` computes what it computes on the 2^n axis); `case_norm` is then on
`case_set` (the bitmasks of ∅ and those sets), `case_v` and `case_rec` on the design's masks
(`case_mask`: bitmask coordinate), and `matching_nrmse` measures the error on those masks.

Coordinates: `group` (in the order of the values files' `groups`), `band` (`all`, `low`,
`mid`, `high`), `tau` (the sweep), `condition` with `template`, `shots`, `perturbation`,
`pair` (`"{group}:{a}|{b}"`) with `pair_a`, `pair_b` (condition names), `pair_group` and
`pair_label` (`altering`, `adding`, `mixed`, `none` from the template file's change kinds,
Appendix G; `perturbation` when either condition is a reworded prompt), `type`
(`ips.metrics.INTERACTION_TYPES`), `changed` (`yes`, `no`), `band_pair` (`BAND_PAIRS`).

Attributes: `model`, `model_attributes` (JSON), `model_source` (JSON: the entry's `source`
as the values files record it, "" for values files that do not; `{"random": …}` marks random
weights), `dataset`, `kind`, `target`, `tau`, `groups`
(JSON), `prediction` (`pred`, the letter argmax, for MCQ; `greedy_token` for instruction
datasets, whose `pred` is −1), `template_file`, `values_files`, `interactions_files` (JSON lists),
`ips_version`, `sampling`, for sparse fits `budget`, `games` and `unreliable_games`,
`bootstrap` (JSON: method, n_boot, level, seed), `null` (JSON: how the nulls were made, or
`{"computed": false}`), `precision` (JSON: this run's dtype, and each precision run's
conditions and samples), `test` (JSON: method,
exact_max, draws, seed, multiplicity), and the case study's
`case_sample` ("" when there is none), `case_group`, `case_condition_a/_b`,
`case_template_a/_b`, `case_pred_a/_b`, `case_gold`, `case_ips`, `case_changed`.
Coordinate `sample` holds the sample ids, sorted (the bootstrap resamples in that order, so
sharding cannot change an interval).

Choices: a group with fewer than two conditions has no pair; its IPS, shares and output
consistency are NaN. A hidden state of norm 0 has no cosine; that sample is left out of
`rep_cosine`.
"""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Sequence

import numpy as np
import xarray as xr

from ips import __version__, diagnostics, metrics, nulls, sparse, uncertainty
from ips.case_study import choose_cell
from ips.datasets import letter
from ips.config import MODEL_ATTRIBUTES
from ips.errors import InputError
from ips.files import labels, read_dataset
from ips.values_file import design_row
from ips.shards import Merged, load, load_precision
from ips.templates import ZERO_SHOT

log = logging.getLogger(__name__)

BANDS = ("all", *metrics.BANDS)
CHANGED = ("yes", "no")
BAND_PAIRS = ("low-mid", "mid-high", "low-high")
"""Order-band comparisons of `band_p` (first minus second); one Holm family per group."""
PERTURBATION_LABEL = "perturbation"

# ----------------------------------------------------------------------------------- metrics


def pair_labels(merged: Merged, pairs: np.ndarray) -> list[str]:
    """Appendix G label of every condition pair (global condition indices)."""
    from ips.templates import load_templates

    template_file = _template_file(merged.attrs)
    cond = merged.conditions
    pert = cond["perturbation"]
    template_set = None
    out = []
    for i, j in pairs.tolist():
        if pert[i] or pert[j]:
            out.append(PERTURBATION_LABEL)
            continue
        if template_set is None:
            try:
                template_set = load_templates(template_file)
            except InputError as e:
                raise InputError(f"{merged.values_files[0]}: {e}") from None
        try:
            out.append(template_set.pair_label(str(cond["template"][i]), str(cond["template"][j])))
        except InputError as e:
            raise InputError(f"{merged.values_files[0]}: template file "
                             f"{template_file or 'ips/data/templates.yaml'}: {e}") from None
    return out


def _template_file(attrs: dict) -> str | None:
    try:
        settings = json.loads(attrs.get("settings") or "{}")
    except json.JSONDecodeError:
        settings = {}
    return (settings.get("templates") or {}).get("file")


# ------------------------------------------------------------------------------ case study

CASE_GROUP = ZERO_SHOT


def _pred_text(merged: Merged, pred: np.ndarray, s: int, c: int) -> str:
    if merged.attrs.get("kind", "mcq") == "mcq":
        return letter(int(pred[s, c]))
    if merged.greedy_text is not None:
        return str(merged.greedy_text[s, c])
    return str(pred[s, c])


def case_study_data(merged: Merged, norm: np.ndarray, layout: metrics.SetLayout | None,
                    pred: np.ndarray, groups: list[str], tau: float) -> tuple[dict, dict, dict]:
    """The sample and template pair drawn in the case study (paper Fig. 3a / Fig. 19).

    Choice (deterministic): in the group `0shot` (else the first group with two conditions),
    the cell `ips.case_study.choose_cell` picks (the largest ips(x, T, T̂) among the cells
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
    coords = {"case_side": labels("ab"), "kind": labels(metrics.KINDS),
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
        rec = [[sparse.keep_top(merged.games[s][c], k).predict(masks) for c in (i, j)]
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


def band_tests(sample_ips: np.ndarray, draws: int = uncertainty.DRAWS,
               seed: int = 0) -> dict[str, np.ndarray]:
    """Paired sign-flip tests of the order bands of every group (paper Section 4.3).

    ``sample_ips``: (sample, group, band) in the order of `BANDS`, samples sorted by id.
    For every group and pair (first, second) of `BAND_PAIRS`: d_s = IPS_s^first −
    IPS_s^second over the samples valued in both bands; `band_diff` = mean d_s, `band_p`
    its two-sided sign-flip p-value, `band_p_holm` Holm's adjustment over the group's three
    tests, `band_n` the samples. Each array has shape (group, band_pair).
    """
    G = sample_ips.shape[1]
    out = {"band_diff": np.full((G, len(BAND_PAIRS)), np.nan),
           "band_p": np.full((G, len(BAND_PAIRS)), np.nan),
           "band_n": np.zeros((G, len(BAND_PAIRS)), np.int64)}
    for g in range(G):
        for k, pair in enumerate(BAND_PAIRS):
            first, second = (BANDS.index(b) for b in pair.split("-"))
            t = uncertainty.sign_flip_test(sample_ips[:, g, first] - sample_ips[:, g, second],
                                           draws=draws, seed=seed)
            out["band_diff"][g, k], out["band_p"][g, k], out["band_n"][g, k] = (
                t.mean_difference, t.p_value, t.n)
    out["band_p_holm"] = np.array([uncertainty.holm(row) for row in out["band_p"]]
                                  ).reshape(G, len(BAND_PAIRS))
    return out


def compute(merged: Merged, tau: float = metrics.DEFAULT_TAU,
            tau_sweep: Sequence[float] | None = None, seed: int = 0,
            n_boot: int = uncertainty.N_BOOT, level: float = uncertainty.LEVEL,
            draws: int = uncertainty.DRAWS, null: nulls.Settings | None = None,
            precision: Sequence[Merged] = ()) -> xr.Dataset:
    """The metrics of one (model, dataset); see the module docstring for the layout.

    ``seed``, ``n_boot`` and ``level`` set the bootstrap of the confidence intervals,
    ``seed`` and ``draws`` the sign-flip tests of the order bands (`ips.uncertainty`;
    samples are resampled and tested in the order of their sorted ids, so neither depends
    on how the samples were sharded). ``null``: the null IPS to compute (`ips.nulls`;
    None: none). ``precision``: runs of some of the same games in other precisions
    (`load_precision`), each scored against this run as its precision null.
    """
    null = nulls.Settings((), 0) if null is None else null
    tau, sweep = _checked_taus(tau, tau_sweep)
    if merged.games is None:
        norm, layout = metrics.normalize(merged.and_, merged.or_, merged.n_vars[:, None]), None
    else:  # on the sets of the games' entries: any n, the same numbers (ips.sparse)
        norm, layout = sparse.entry_grid(merged.games)
    pred = _predictions(merged)
    groups = list(merged.groups)
    per_group = [_group_metrics(merged, g, norm, layout, pred, tau, sweep) for g in groups]
    order = np.argsort(merged.samples.astype(str), kind="stable")
    counts = uncertainty.resample_counts(len(order), n_boot, seed)  # the nulls' intervals
    case_data, case_coords, case_attrs = case_study_data(merged, norm, layout, pred, groups,
                                                         tau)
    data, coords = {}, {}
    for d, c in (
        _group_variables(groups, per_group, sweep),
        _condition_variables(merged),
        _pair_variables(merged, groups, per_group, pred),
        _sample_variables(merged, per_group, order, seed, n_boot, level, draws),
        _fit_variables(merged, norm, layout, tau, order),
        _null_variables(merged, norm, groups, per_group, tau, sweep, null, order, counts,
                        level),
        _precision_variables(merged, norm, precision, tau, sweep, order, counts, level),
        (case_data, case_coords),
    ):
        data.update(d)
        coords.update(c)
    attrs = {**_attributes(merged, tau, seed, n_boot, level, draws), **case_attrs,
             "null": _null_attribute(merged, null),
             "precision": json.dumps({"dtype": merged.attrs.get("dtype", ""), "runs": {
                 p.attrs.get("dtype", ""): {"conditions": list(p.conditions["condition"]),
                                            "samples": len(p.samples)} for p in precision}})}
    ds = xr.Dataset(data, coords=coords, attrs=attrs)
    ds["ips"].attrs["description"] = "IPS (band all) and IPS^low/mid/high at tau"
    ds["pair_ips"].attrs["description"] = (
        "per condition pair: mean over samples with a non-empty U of ips(x, T, T^)")
    return ds


def _checked_taus(tau: float, tau_sweep: Sequence[float] | None) -> tuple[float, np.ndarray]:
    sweep = np.asarray(metrics.default_tau_sweep() if tau_sweep is None else tau_sweep, float)
    if not 0 < float(tau) < 1:
        raise ValueError(f"tau must lie in (0, 1); got {tau}")
    if sweep.ndim != 1 or sweep.size == 0 or not np.all((sweep > 0) & (sweep < 1)):
        raise ValueError(f"tau_sweep must be a non-empty list of thresholds in (0, 1); "
                         f"got {sweep.tolist()}")
    return float(tau), sweep


def _predictions(merged: Merged) -> np.ndarray:
    """(sample, condition) predictions: `pred` (the letter argmax) for MCQ, else the greedy
    token."""
    kind = merged.attrs.get("kind", "mcq")
    if kind == "mcq":
        return merged.pred
    if merged.greedy is None:
        raise InputError(f"{merged.values_files[0]}: an {kind} dataset needs 'greedy_token' "
                         "as its prediction, and the file has none")
    return merged.greedy


def _group_metrics(merged: Merged, name: str, norm: np.ndarray,
                   layout: metrics.SetLayout | None, pred: np.ndarray, tau: float,
                   sweep: np.ndarray) -> dict[str, np.ndarray]:
    """Every quantity of one condition group over its unordered condition pairs: `ips`,
    `n_valued`, `n_empty` (band), `sweep`, `sweep_n` (tau), `sample_ips` (sample, band),
    `sample_sweep` (sample, tau), `pairs` (pair, 2: condition indices), `sample_pair`
    (sample, pair, band), `pair_ips`, `pair_n` (pair, band: mean over the samples valued in
    the pair, and their number), `share`, `count` (type, changed), `sample_count` (sample,
    type, changed), `cells` (changed), `consistency`. A group with fewer than two conditions
    has no pair: NaN values and zero counts."""
    index = {str(c): i for i, c in enumerate(merged.conditions["condition"])}
    idx = np.array([index[c] for c in merged.groups[name]], dtype=np.int64)
    S, B, T, Y = merged.n_vars.size, len(BANDS), sweep.size, len(metrics.INTERACTION_TYPES)
    if idx.size < 2:
        log.warning("%s: group %r has %d condition(s), no pair to compare",
                    merged.values_files[0], name, idx.size)
        return {"ips": np.full(B, np.nan), "n_valued": np.zeros(B, np.int64),
                "n_empty": np.zeros(B, np.int64), "sweep": np.full(T, np.nan),
                "sweep_n": np.zeros(T, np.int64), "sample_ips": np.full((S, B), np.nan),
                "sample_sweep": np.full((S, T), np.nan), "pairs": np.zeros((0, 2), np.int64),
                "sample_pair": np.zeros((S, 0, B)), "pair_ips": np.zeros((0, B)),
                "pair_n": np.zeros((0, B), np.int64), "share": np.full((Y, 2), np.nan),
                "count": np.zeros((Y, 2), np.int64),
                "sample_count": np.zeros((S, Y, 2), np.int64),
                "cells": np.zeros(2, np.int64), "consistency": np.nan}
    sub, local = norm[:, idx], metrics.all_pairs(idx.size)
    bands = [metrics.ips(sub, local, tau, None if b == "all" else b, layout) for b in BANDS]
    sample_pair = np.stack([r.per_pair for r in bands], axis=-1)
    valued = ~np.isnan(sample_pair)
    pair_n = valued.sum(axis=0)
    total = np.where(valued, sample_pair, 0.0).sum(axis=0)
    swept = metrics.ips(sub, local, sweep, layout=layout)
    ts = metrics.interaction_type_shares(sub, pred[:, idx], local, tau, layout=layout)
    return {
        "ips": np.array([r.value for r in bands]),
        "n_valued": np.array([r.n_valued_samples for r in bands], np.int64),
        "n_empty": np.array([r.n_empty_pairs for r in bands], np.int64),
        "sweep": swept.value, "sweep_n": swept.n_valued_samples,
        "sample_ips": np.stack([r.per_sample for r in bands], axis=-1),
        "sample_sweep": swept.per_sample.T,
        "pairs": idx[local], "sample_pair": sample_pair,
        "pair_ips": np.where(pair_n > 0, total / np.maximum(pair_n, 1), np.nan),
        "pair_n": pair_n,
        "share": np.stack([ts.changed, ts.unchanged], axis=-1),
        "count": np.stack([ts.counts_changed, ts.counts_unchanged], axis=-1),
        "sample_count": np.stack([ts.sample_counts_changed, ts.sample_counts_unchanged], -1),
        "cells": np.array([ts.n_pairs_changed, ts.n_pairs_unchanged], np.int64),
        "consistency": diagnostics.output_consistency(pred[:, idx]),
    }


def _stack(per_group: list[dict], key: str, axis: int = 0, dtype=np.float64) -> np.ndarray:
    return np.stack([np.asarray(g[key], dtype) for g in per_group], axis=axis)



def _group_variables(groups: list[str], per_group: list[dict], sweep: np.ndarray):
    """IPS per band and over the τ sweep, interaction types and output consistency."""
    data = {
        "ips": (("group", "band"), _stack(per_group, "ips")),
        "n_valued_samples": (("group", "band"), _stack(per_group, "n_valued", dtype=np.int64)),
        "n_empty_pairs": (("group", "band"), _stack(per_group, "n_empty", dtype=np.int64)),
        "ips_sweep": (("tau", "group"), _stack(per_group, "sweep", axis=-1)),
        "n_valued_samples_sweep": (("tau", "group"),
                                   _stack(per_group, "sweep_n", axis=-1, dtype=np.int64)),
        "type_share": (("group", "type", "changed"), _stack(per_group, "share")),
        "type_count": (("group", "type", "changed"), _stack(per_group, "count", dtype=np.int64)),
        "n_type_cells": (("group", "changed"), _stack(per_group, "cells", dtype=np.int64)),
        "output_consistency": (("group",), _stack(per_group, "consistency")),
    }
    coords = {"group": labels(groups), "band": labels(BANDS), "tau": sweep,
              "type": labels(metrics.INTERACTION_TYPES), "changed": labels(CHANGED)}
    return data, coords


def _condition_variables(merged: Merged):
    """The conditions and their accuracy (NaN for instruction datasets)."""
    names = merged.conditions["condition"]
    if merged.attrs.get("kind", "mcq") == "mcq":
        acc = diagnostics.accuracy(merged.pred, merged.gold)
    else:
        acc = np.full(len(names), np.nan)
    coords = {
        "condition": labels(names),
        "template": ("condition", labels(merged.conditions["template"])),
        "shots": ("condition", np.asarray(merged.conditions["shots"]).astype(np.int64)),
        "perturbation": ("condition", labels(merged.conditions["perturbation"])),
    }
    return {"accuracy": (("condition",), np.asarray(acc, np.float64))}, coords


def _pair_variables(merged: Merged, groups: list[str], per_group: list[dict],
                    pred: np.ndarray):
    """Every group's condition pairs: IPS, Appendix G labels, prediction consistency and the
    representation baseline (App. H)."""
    pairs = np.concatenate([g["pairs"] for g in per_group]).reshape(-1, 2)
    group_of = [name for name, g in zip(groups, per_group) for _ in range(len(g["pairs"]))]
    P, B = len(pairs), len(BANDS)
    if P:
        kinds = pair_labels(merged, pairs)
        pair_cons = diagnostics.pair_consistency(pred, pairs)
        if merged.hidden is not None:
            rep_cos, rep_l2 = diagnostics.representation_baseline(merged.hidden, pairs)
        else:
            log.warning("%s: no 'hidden' states, the representation baseline is NaN",
                        merged.values_files[0])
            rep_cos, rep_l2 = np.full(P, np.nan), np.full(P, np.nan)
    else:
        kinds, pair_cons, rep_cos, rep_l2 = [], np.zeros(0), np.zeros(0), np.zeros(0)
    names = [str(c) for c in merged.conditions["condition"]]
    data = {
        "pair_ips": (("pair", "band"), np.concatenate([g["pair_ips"] for g in per_group]
                                                      ).reshape(P, B).astype(np.float64)),
        "pair_n_valued": (("pair", "band"), np.concatenate([g["pair_n"] for g in per_group]
                                                           ).reshape(P, B).astype(np.int64)),
        "pair_consistency": (("pair",), np.asarray(pair_cons, np.float64)),
        "rep_cosine": (("pair",), np.asarray(rep_cos, np.float64)),
        "rep_l2": (("pair",), np.asarray(rep_l2, np.float64)),
    }
    coords = {
        "pair": labels(f"{g}:{names[i]}|{names[j]}"
                       for g, (i, j) in zip(group_of, pairs.tolist())),
        "pair_a": ("pair", labels(names[i] for i in pairs[:, 0])),
        "pair_b": ("pair", labels(names[j] for j in pairs[:, 1])),
        "pair_group": ("pair", labels(group_of)),
        "pair_label": ("pair", labels(kinds)),
    }
    return data, coords


def _sample_variables(merged: Merged, per_group: list[dict], order: np.ndarray, seed: int,
                      n_boot: int, level: float, draws: int):
    """Per-sample values in sample-id order, their bootstrap intervals and the band tests."""
    sample_ips = _stack(per_group, "sample_ips", axis=1)[order]
    sample_pair = np.concatenate([g["sample_pair"] for g in per_group], axis=1)[order]
    sample_sweep = _stack(per_group, "sample_sweep", axis=-1)[order]
    S, G, B = sample_ips.shape
    P, T = sample_pair.shape[1], sample_sweep.shape[1]
    counts = uncertainty.resample_counts(S, n_boot, seed)
    _, ips_ci = uncertainty.bootstrap_ci(sample_ips[:, None], level=level, counts=counts)
    _, pair_ci = uncertainty.bootstrap_ci(sample_pair[:, None], level=level, counts=counts)
    _, sweep_ci = uncertainty.bootstrap_ci(sample_sweep[:, None], level=level, counts=counts)
    data = {
        "ips_ci": (("group", "band", "bound"), ips_ci.reshape(G, B, 2)),
        "pair_ips_ci": (("pair", "band", "bound"), pair_ci.reshape(P, B, 2)),
        "ips_sweep_ci": (("tau", "group", "bound"), sweep_ci.reshape(T, G, 2)),
        "sample_ips": (("sample", "group", "band"), sample_ips),
        "sample_pair_ips": (("sample", "pair", "band"), sample_pair),
        "sample_type_count": (("sample", "group", "type", "changed"),
                              _stack(per_group, "sample_count", axis=1, dtype=np.int64)[order]),
    }
    for name, value in band_tests(sample_ips, draws, seed).items():
        data[name] = (("group", "band_pair"), value)
    coords = {"sample": labels(merged.samples.astype(str)[order]),
              "bound": labels(uncertainty.BOUNDS), "band_pair": labels(BAND_PAIRS)}
    return data, coords


def _fit_variables(merged: Merged, norm: np.ndarray, layout: metrics.SetLayout | None,
                   tau: float, order: np.ndarray):
    """How well the interactions explain v: the fit's matching error, sparsity (Fig. 2a) and
    universal matching keeping the largest interactions (Fig. 2b); for sparse fits also the
    held-out error of every game and whether it is reliable."""
    data = {
        "matching_error_max": ((), float(np.nanmax(merged.matching_error))),
        "n_samples": ((), np.int64(merged.n_vars.size)),
        "n_vars_mean": ((), float(np.mean(merged.n_vars))),
    }
    share_sparse, sample_share = diagnostics.sparsity(norm, tau,
                                                      None if layout is None else layout.omega)
    data.update(share_sparse)
    data["sample_salient_share"] = (("sample",), sample_share[order])
    if layout is None:
        nrmse, sample_nrmse = diagnostics.matching_nrmse(merged.v, merged.and_, merged.or_,
                                                         merged.n_vars)
    else:
        nrmse, sample_nrmse = _sparse_matching_nrmse(merged)
        data["heldout_error"] = (("sample", "condition"),
                                 merged.game_values("heldout_error")[order])
        data["reliable"] = (("sample", "condition"),
                            merged.game_values("reliable")[order].astype(np.int8))
    data["matching_nrmse"] = (("keep",), nrmse)
    data["sample_matching_nrmse"] = (("sample", "keep"), sample_nrmse[order])
    return data, {"rank": diagnostics.SPARSITY_RANKS, "keep": np.asarray(diagnostics.KEEP)}


def _null_variables(merged: Merged, norm: np.ndarray, groups: list[str], per_group: list[dict],
                    tau: float, sweep: np.ndarray, null: nulls.Settings, order: np.ndarray,
                    counts: np.ndarray, level: float):
    """The null IPS beside IPS (`ips.nulls`): the Gaussian null per sample, group, level and
    band (with intervals over samples, n and the τ sweep), the matched-size null per sample
    and pair, the size of every pair's change, and the range of every game."""
    if null.draws == 0:
        return {}, {}
    if merged.games is not None:
        log.warning("%s: null IPS not computed (sparse fits: only exhaustive fits have one)",
                    merged.values_files[0])
        return {}, {}
    t0 = time.perf_counter()
    fit = nulls.fitter(merged.fit_attrs)
    v, n_vars, samples = merged.v, merged.n_vars, merged.samples
    S, C, M = v.shape
    ranges = nulls.game_range(v, n_vars[:, None])
    data = {"sample_v_range": (("sample", "condition"), ranges[order])}
    coords = {"null_level": np.asarray(null.levels, np.float64)}
    game, game_sweep = [], []
    for c in null.levels:
        runs = [nulls.gaussian_null(v, n_vars, norm, fit, c,
                                    nulls.standard_noise(samples, (C, M), null.seed, 1,
                                                         round(c * 1e9), d), tau, sweep)
                for d in range(null.draws)]
        game.append(nulls.nan_mean(np.stack([r.bands for r in runs]), 0))  # (S, C, B)
        game_sweep.append(nulls.nan_mean(np.stack([r.sweep for r in runs]), 0))
    game, game_sweep = np.stack(game, 2), np.stack(game_sweep, 2)  # (S, C, L, B|T)
    index = {str(c): i for i, c in enumerate(merged.conditions["condition"])}
    members = [[index[c] for c in merged.groups[g]] for g in groups]
    sample_null = np.stack([nulls.nan_mean(game[:, m], 1) for m in members], 1)[order]
    sample_sweep = np.stack([nulls.nan_mean(game_sweep[:, m], 1) for m in members], 1)[order]
    data |= _over_samples("null", sample_null, ("group", "null_level", "band"), counts, level)
    data["null_ips_sweep"] = (("tau", "group", "null_level"),
                              np.moveaxis(nulls.nan_mean(sample_sweep, 0), -1, 0))
    if null.matched:
        data |= _matched_variables(merged, norm, per_group, tau, sweep, null, fit, order,
                                   counts, level, ranges)
    log.info("null IPS: %d games x %d levels x %d draws%s, %.1f s", S * C, len(null.levels),
             null.draws, ", matched-size null of every pair" if null.matched else "",
             time.perf_counter() - t0)
    return data, coords


def _precision_variables(merged: Merged, norm: np.ndarray, precision: Sequence[Merged],
                         tau: float, sweep: np.ndarray, order: np.ndarray, counts: np.ndarray,
                         level: float):
    """The precision null (`ips.nulls.precision_null`) of every second-precision run: per
    sample (mean over its re-scored conditions; NaN for a sample not re-scored), precision
    and band with intervals, n and the τ sweep, and how far v moved (max and median |Δv|,
    median sd(Δv)/range of v, mean salient-set Jaccard, games compared)."""
    if not precision:
        return {}, {}
    S, B = len(merged.samples), len(BANDS)
    per_sample = np.full((S, len(precision), B), np.nan)
    per_sweep = np.full((S, len(precision), len(sweep)), np.nan)
    stats = {k: np.full(len(precision), np.nan)
             for k in ("max_abs_dv", "median_abs_dv", "dv_rel", "jaccard", "games")}
    for k, p in enumerate(precision):
        si, ci = _precision_index(merged, p)
        got = nulls.precision_null(merged.v[si][:, ci], p.v, p.n_vars, norm[si][:, ci],
                                   metrics.normalize(p.and_, p.or_, p.n_vars[:, None]), tau,
                                   sweep)
        per_sample[si, k] = nulls.nan_mean(got.game.bands, 1)
        per_sweep[si, k] = nulls.nan_mean(got.game.sweep, 1)
        stats["max_abs_dv"][k] = got.abs_dv.max(initial=0.0)
        stats["median_abs_dv"][k] = nulls.nan_median(got.abs_dv)
        stats["dv_rel"][k] = nulls.nan_median(got.dv_rel)
        stats["jaccard"][k] = nulls.nan_mean(got.jaccard, None)
        stats["games"][k] = got.jaccard.size
        log.info("precision null %s vs %s: %d games, IPS %.3f, max |dv| %.3g",
                 p.attrs.get("dtype"), merged.attrs.get("dtype", "?"), got.jaccard.size,
                 float(nulls.nan_mean(per_sample[si, k, 0], None)), stats["max_abs_dv"][k])
    data = _over_samples("precision_null", per_sample[order], ("precision", "band"), counts,
                         level)
    data["precision_null_ips_sweep"] = (("tau", "precision"),
                                        nulls.nan_mean(per_sweep, 0).T)
    data |= {f"precision_{k}": (("precision",), v) for k, v in stats.items()}
    return data, {"precision": np.array([str(p.attrs.get("dtype", "")) for p in precision],
                                        dtype=object)}


def _precision_index(merged: Merged, p: Merged) -> tuple[np.ndarray, np.ndarray]:
    """Where the samples and conditions of a second-precision run `p` are in `merged`;
    `InputError` naming its file if it is not a run of the same games."""
    where = p.values_files[0]
    for name in ("model", "dataset", "target"):
        if p.attrs.get(name) != merged.attrs.get(name):
            raise InputError(f"{where}: {name} {p.attrs.get(name)!r}, but the values files "
                             f"have {merged.attrs.get(name)!r}; a precision run re-scores "
                             "the same model and dataset")
    if p.attrs.get("dtype") == merged.attrs.get("dtype"):
        raise InputError(f"{where}: dtype {p.attrs.get('dtype')!r} is the values files' own; "
                         "a precision run is scored in another dtype (ips score --dtype)")
    if p.games is not None or merged.games is not None:
        raise InputError(f"{where}: the precision null needs exhaustive fits on both sides")
    samples = {s: i for i, s in enumerate(merged.samples)}
    position = {c: i for i, c in enumerate(merged.conditions["condition"])}
    missing = ([s for s in p.samples if s not in samples]
               + [c for c in p.conditions["condition"] if c not in position])
    if missing:
        raise InputError(f"{where}: sample or condition {missing[0]!r} is not in the values "
                         "files; a precision run re-scores some of their games")
    si = np.array([samples[s] for s in p.samples], dtype=np.int64)
    ci = np.array([position[c] for c in p.conditions["condition"]], dtype=np.int64)
    if not np.array_equal(merged.n_vars[si], p.n_vars) or p.v.shape[2] != merged.v.shape[2]:
        raise InputError(f"{where}: its samples have other variables than in the values files")
    return si, ci


def _over_samples(name: str, per_sample: np.ndarray, dims: tuple[str, ...],
                  counts: np.ndarray, level: float) -> dict:
    """`sample_{name}_ips` (sample, *dims), its mean over samples `{name}_ips`, the bootstrap
    interval `{name}_ips_ci` and the samples valued `{name}_n_valued`."""
    est, ci = uncertainty.bootstrap_ci(per_sample[:, None], level=level, counts=counts)
    return {f"sample_{name}_ips": (("sample", *dims), per_sample),
            f"{name}_ips": (dims, np.asarray(est, np.float64).reshape(per_sample.shape[1:])),
            f"{name}_ips_ci": ((*dims, "bound"), ci.reshape(*per_sample.shape[1:], 2)),
            f"{name}_n_valued": (dims, np.isfinite(per_sample).sum(0).astype(np.int64))}


def _matched_variables(merged: Merged, norm: np.ndarray, per_group: list[dict], tau: float,
                       sweep: np.ndarray, null: nulls.Settings, fit, order: np.ndarray,
                       counts: np.ndarray, level: float, ranges: np.ndarray) -> dict:
    """The matched-size null of every pair (sample, pair, band), per group and sample, and
    the size of each pair's change, absolute and relative to the mean range of its games."""
    pairs = np.concatenate([g["pairs"] for g in per_group]).reshape(-1, 2)
    S, _, M = merged.v.shape
    runs, sigma = [], np.zeros((S, len(pairs)))
    for d in range(null.draws):
        eps = nulls.standard_noise(merged.samples, (2, len(pairs), M), null.seed, 2, d)
        got, sigma = nulls.matched_null(merged.v, merged.n_vars, norm, pairs, fit, eps, tau,
                                        sweep)
        runs.append(got.bands)
    pair_null = nulls.nan_mean(np.stack(runs), 0)[order]  # (S, P, B)
    bounds = np.cumsum([0] + [len(g["pairs"]) for g in per_group])
    sample_matched = np.stack([nulls.nan_mean(pair_null[:, a:b], 1)
                               for a, b in zip(bounds[:-1], bounds[1:])], 1)
    mean_range = 0.5 * (ranges[:, pairs[:, 0]] + ranges[:, pairs[:, 1]])
    with np.errstate(invalid="ignore", divide="ignore"):
        relative = np.where(mean_range > 0, sigma / mean_range, np.nan)
    return {
        **_over_samples("matched_null", sample_matched, ("group", "band"), counts, level),
        "sample_pair_matched_null": (("sample", "pair", "band"), pair_null),
        "pair_matched_null": (("pair", "band"), nulls.nan_mean(pair_null, 0)),
        "sample_pair_change": (("sample", "pair"), sigma[order]),
        "sample_pair_change_rel": (("sample", "pair"), relative[order]),
    }


def _null_attribute(merged: Merged, null: nulls.Settings) -> str:
    """How the null IPS was made (JSON): the perturbation models, levels, draws, seed, fit."""
    if null.draws == 0 or merged.games is not None:
        return json.dumps({"computed": False})
    return json.dumps({
        "computed": True,
        "gaussian": "v + level * (max v - min v) * N(0, 1) on every mask, fitted like v and "
                    "scored against v's fit as a template pair (ips.nulls)",
        "matched": ("each side of a pair + sd(v_b - v_a) * N(0, 1), fitted and scored against "
                    "its own fit; mean of the two sides") if null.matched else "",
        "levels": list(null.levels), "draws": int(null.draws), "seed": int(null.seed),
        "fit": merged.fit_attrs.get("solver_requested", "auto")})


def _sparse_matching_nrmse(merged: Merged) -> tuple[np.ndarray, np.ndarray]:
    """`diagnostics.matching_nrmse` of sparse games, on the masks of their design: the relative
    RMS error of `ips.sparse.keep_top` of every game (mean over all games, and per sample)."""
    errs = np.zeros((len(merged.games), len(merged.conditions["condition"]), len(diagnostics.KEEP)))
    for s, row in enumerate(merged.games):
        design = design_row(merged.masks[s])
        for c, g in enumerate(row):
            v = merged.v[s, c, :design.size]
            errs[s, c] = [sparse.keep_top(g, k).relative_error(design, v) for k in diagnostics.KEEP]
    return errs.mean(axis=(0, 1)), errs.mean(axis=1)


def _attributes(merged: Merged, tau: float, seed: int, n_boot: int, level: float,
                draws: int) -> dict:
    """What the numbers were computed from and how (the module docstring lists them)."""
    a = merged.attrs
    kind = a.get("kind", "mcq")
    return {
        "model": a["model"],
        "model_attributes": a.get("model_attributes", "{}"),
        "model_source": a.get("model_source", ""),
        "dataset": a["dataset"],
        "kind": kind,
        "target": a.get("target", ""),
        "tau": tau,
        "groups": json.dumps(merged.groups),
        "prediction": "pred" if kind == "mcq" else "greedy_token",
        "template_file": _template_file(a) or "",
        "values_files": json.dumps(merged.values_files),
        "interactions_files": json.dumps(merged.interactions_files),
        "ips_version": __version__,
        "sampling": a["sampling"],
        **(_sparse_attributes(merged) if merged.games is not None else {}),
        "bootstrap": json.dumps({"method": "percentile", "n_boot": int(n_boot),
                                 "level": float(level), "seed": int(seed)}),
        "test": json.dumps({"method": "paired sign-flip permutation",
                            "statistic": "|mean of per-sample band differences|",
                            "exact_max": uncertainty.EXACT_MAX, "draws": int(draws),
                            "seed": int(seed), "multiplicity": "Holm over the 3 band pairs "
                            "of one group"}),
    }


def _sparse_attributes(merged: Merged) -> dict:
    reliable = merged.game_values("reliable")
    return {"budget": int(merged.attrs["budget"]), "games": int(reliable.size),
            "unreliable_games": int((~reliable).sum())}


def summarize(values: Sequence[str | os.PathLike],
              interactions: Sequence[str | os.PathLike],
              tau: float = metrics.DEFAULT_TAU,
              tau_sweep: Sequence[float] | None = None, seed: int = 0,
              n_boot: int = uncertainty.N_BOOT, level: float = uncertainty.LEVEL,
              draws: int = uncertainty.DRAWS, null: nulls.Settings | None = None,
              precision_values: Sequence[str | os.PathLike] = (),
              precision_interactions: Sequence[str | os.PathLike] = ()) -> xr.Dataset:
    """Read, check and merge the shards (and the precision runs), then compute the metrics
    (what `ips metrics` does)."""
    return compute(load(values, interactions), tau, tau_sweep, seed=seed, n_boot=n_boot,
                   level=level, draws=draws, null=null,
                   precision=load_precision(precision_values, precision_interactions))


# ---------------------------------------------------------------------------------- reading


WEIGHTS = ("trained", "random")
"""The `weights` column of every table: `random` when a row rests on any model whose weights
were drawn at random (`source: {random: …}`), whose numbers measure nothing about an LLM."""


@dataclass
class Entry:
    """One metrics file."""

    path: Path
    model: str
    dataset: str
    attrs: dict  # model attributes
    ds: xr.Dataset

    @cached_property
    def random_weights(self) -> bool:
        """Whether the model's source is `random` (`model_source`)."""
        return "random" in model_source(self.ds, self.path)


def model_source(ds: xr.Dataset, path: str | os.PathLike) -> dict:
    """The metrics file's `model_source` as a mapping; {} for a file without one (its values
    files were written before sources were recorded, when every model was trained)."""
    text = ds.attrs.get("model_source", "")
    if not text:
        return {}
    try:
        source = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"{path}: attribute 'model_source' is not JSON ({e})") from None
    if not isinstance(source, dict):
        raise InputError(f"{path}: attribute 'model_source' is not a mapping: {text!r}")
    return source


def weights(entries) -> str:
    """`random` when any of `entries` has random weights, else `trained` (`WEIGHTS`)."""
    return WEIGHTS[any(e.random_weights for e in entries)]



def read_metrics(path: str | os.PathLike) -> Entry:
    """Read one metrics file of `ips metrics`; `InputError` names the file."""
    path = Path(path)
    ds = read_dataset(path, "metrics", ("ips", "pair_ips", "ips_sweep"), "ips metrics")
    for name in ("model", "dataset", "model_attributes", "tau"):
        if name not in ds.attrs:
            raise InputError(f"{path}: attribute {name!r} is missing")
    try:
        attrs = json.loads(ds.attrs["model_attributes"])
    except json.JSONDecodeError as e:
        raise InputError(f"{path}: attribute 'model_attributes' is not JSON ({e})") from None
    missing = [k for k in MODEL_ATTRIBUTES[:5] if k not in attrs]
    if missing:
        raise InputError(f"{path}: model_attributes lacks {missing}")
    attrs = {k: attrs.get(k) for k in MODEL_ATTRIBUTES}
    for k in ("params", "active_params"):
        if attrs[k] is not None:
            attrs[k] = float(attrs[k])
    if attrs["active_params"] is None:
        attrs["active_params"] = attrs["params"]
    model_source(ds, path)  # a bad one is an error here, not in a figure
    return Entry(path, str(ds.attrs["model"]), str(ds.attrs["dataset"]), attrs, ds)
