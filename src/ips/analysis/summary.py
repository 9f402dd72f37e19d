"""What `ips metrics` computes for one (model, dataset) from its merged shards
(`summarize`); the file's layout is `ips.formats.metrics`.

`summarize` merges the shards (`ips.formats.shards`) and computes the metrics of
`ips.analysis.metrics`, `ips.analysis.diagnostics` and `ips.analysis.nulls` on the whole set
of samples, so sharding cannot change a number.

A condition a sample was not scored under (`Merged.scored`: a rewording its item lacks) is
missing: its interactions are normalised with n = 0 (an empty Ω), so every pair with it has
no value (`ips.analysis.metrics.pair_sides`, counted in `n_missing_pairs`), and the output-level
numbers leave its prediction out. A group's IPS thus averages over the samples scored under
its pairs (`n_valued_samples`), and a group without the missing conditions is unchanged. The
nulls leave such a game out, and every pair with it (`ips.analysis.nulls`), so that a group's
null rests on the games its IPS rests on.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping, Sequence

import numpy as np
import xarray as xr

from ips import __version__
from ips.analysis import (
    diagnostics,
    interaction_types,
    metrics,
    nulls,
    peers,
    sparse_metrics,
    uncertainty,
)
from ips.analysis.case_study import case_study_data
from ips.analysis.layout import SetLayout
from ips.analysis.null_fits import check, fit_nulls, settings
from ips.analysis.nulls import null_attribute, null_variables, variant_variables
from ips.errors import InputError
from ips.formats.hdf5 import labels
from ips.formats.metrics import BAND_PAIRS, BANDS, CHANGED, PERTURBATION_LABEL
from ips.formats.null_fits import NullFits, read_null_fits
from ips.formats.shards import Merged, load, load_variant
from ips.formats.values import design_row
from ips.nulls import variant, variants

log = logging.getLogger(__name__)


def pair_labels(merged: Merged, pairs: np.ndarray) -> list[str]:
    """Appendix G label of every condition pair (global condition indices)."""
    from ips.prompts.templates import load_templates

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
            variant_runs: Mapping[str, Sequence[Merged]] | None = None,
            normalisation: str = "nonempty", fits: NullFits | None = None) -> xr.Dataset:
    """The metrics of one (model, dataset); see the module docstring for the layout.

    ``seed``, ``n_boot`` and ``level`` set the bootstrap of the confidence intervals,
    ``seed`` and ``draws`` the sign-flip tests of the order bands (`ips.analysis.uncertainty`;
    samples are resampled and tested in the order of their sorted ids, so neither depends
    on how the samples were sharded). ``null``: the null IPS to compute (`ips.analysis.nulls`;
    None: none). ``variant_runs``: per variant (`ips.nulls.variants`, by kind), runs of some of
    the same games with its one setting changed (`load_variant`: other precisions, other
    baselines), each scored against this run as that null. ``normalisation``: the set the
    min-max normalisation runs over (`ips.analysis.metrics.normalize`), for IPS and every
    null alike; "paper" needs exhaustive fits. ``fits``: the nulls' perturbed games fitted
    beforehand (`ips.analysis.null_fits`, of these games), scored here instead of fitting
    ``null``'s: the same numbers, and their settings replace ``null``.
    """
    variant_runs = variant_runs or {}
    if fits is None:  # fitted here unless given (`ips.analysis.null_fits`)
        fits = fit_nulls(merged, nulls.Settings((), 0) if null is None else null)
    null = settings(fits)
    tau, sweep = _checked_taus(tau, tau_sweep)
    if merged.games is None:  # an unscored row has n = 0: an empty Ω, missing in every pair
        norm = metrics.normalize(merged.and_, merged.or_, merged.n_games,
                                 normalisation=normalisation)
        layout = None
    elif normalisation != "nonempty":
        raise InputError(f"{merged.interactions_files[0]}: sparse fits are normalised over "
                         "their non-empty entries only; use --normalisation nonempty")
    else:  # on the sets of the games' entries: any n, the same numbers (ips.interactions.sparse)
        norm, layout = sparse_metrics.entry_grid(merged.games)
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
        null_variables(merged, norm, groups, per_group, tau, sweep, fits, order, counts,
                       level, normalisation),
        *(variant_variables(v.kind, merged, norm, groups, variant_runs.get(v.kind, ()), tau,
                            sweep, order, counts, level, normalisation) for v in variants()),
        _peer_variables(merged, groups, per_group, order, counts, level),
        (case_data, case_coords),
    ):
        data.update(d)
        coords.update(c)
    attrs = {**_attributes(merged, tau, seed, n_boot, level, draws), **case_attrs,
             "normalisation": normalisation,
             "null": null_attribute(merged, null),
             **{v.kind: _variant_attribute(v.kind, merged, variant_runs.get(v.kind, ()))
                for v in variants()}}
    ds = xr.Dataset(data, coords=coords, attrs=attrs)
    ds["ips"].attrs["description"] = "IPS (band all) and IPS^low/mid/high at tau"
    ds["pair_ips"].attrs["description"] = (
        "per condition pair: mean over samples with a non-empty U of ips(x, T, T^)")
    return ds


def _variant_attribute(kind: str, merged: Merged, runs: Sequence[Merged]) -> str:
    """JSON: this run's setting of a variant (its dtype, or its baseline's source
    and token), and each run's conditions and samples."""
    by, recorded = variant(kind).by, variant(kind).recorded
    own = {by: merged.attrs.get(by, ""), **{k: merged.attrs.get(k, "") for k in recorded}}
    return json.dumps({**own, "runs": {
        p.attrs.get(by, ""): {"conditions": list(p.conditions["condition"]),
                              "samples": len(p.samples),
                              **{k: p.attrs.get(k, "") for k in recorded}} for p in runs}})


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
                   layout: SetLayout | None, pred: np.ndarray, tau: float,
                   sweep: np.ndarray) -> dict[str, np.ndarray]:
    """Every quantity of one condition group over its unordered condition pairs: `ips`,
    `n_valued`, `n_empty` (band), `sweep`, `sweep_n` (tau), `sample_ips` (sample, band),
    `sample_sweep` (sample, tau), `pairs` (pair, 2: condition indices), `sample_pair`
    (sample, pair, band), `pair_ips`, `pair_n` (pair, band: mean over the samples valued in
    the pair, and their number), `share`, `count` (type, changed), `sample_count` (sample,
    type, changed), `cells` (changed), `consistency`. A group with fewer than two conditions
    has no pair: NaN values and zero counts."""
    idx = merged.group_conditions(name)
    S, B, T = merged.n_vars.size, len(BANDS), sweep.size
    Y = len(interaction_types.INTERACTION_TYPES)
    if idx.size < 2:
        log.warning("%s: group %r has %d condition(s), no pair to compare",
                    merged.values_files[0], name, idx.size)
        return {"ips": np.full(B, np.nan), "n_valued": np.zeros(B, np.int64),
                "n_empty": np.zeros(B, np.int64), "sweep": np.full(T, np.nan),
                "sweep_n": np.zeros(T, np.int64), "sample_ips": np.full((S, B), np.nan),
                "sample_sweep": np.full((S, T), np.nan), "pairs": np.zeros((0, 2), np.int64),
                "n_missing": 0,
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
    ts = interaction_types.interaction_type_shares(sub, pred[:, idx], local, tau, layout=layout)
    return {
        "ips": np.array([r.value for r in bands]),
        "n_valued": np.array([r.n_valued_samples for r in bands], np.int64),
        "n_empty": np.array([r.n_empty_pairs for r in bands], np.int64),
        "n_missing": bands[0].n_missing_pairs,
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
        "consistency": diagnostics.output_consistency(pred[:, idx], merged.scored[:, idx]),
    }


def _stack(per_group: list[dict], key: str, axis: int = 0, dtype=np.float64) -> np.ndarray:
    return np.stack([np.asarray(g[key], dtype) for g in per_group], axis=axis)


def _group_variables(groups: list[str], per_group: list[dict], sweep: np.ndarray):
    """IPS per band and over the τ sweep, interaction types and output consistency."""
    data = {
        "ips": (("group", "band"), _stack(per_group, "ips")),
        "n_valued_samples": (("group", "band"), _stack(per_group, "n_valued", dtype=np.int64)),
        "n_empty_pairs": (("group", "band"), _stack(per_group, "n_empty", dtype=np.int64)),
        "n_missing_pairs": (("group",), _stack(per_group, "n_missing", dtype=np.int64)),
        "ips_sweep": (("tau", "group"), _stack(per_group, "sweep", axis=-1)),
        "n_valued_samples_sweep": (("tau", "group"),
                                   _stack(per_group, "sweep_n", axis=-1, dtype=np.int64)),
        "type_share": (("group", "type", "changed"), _stack(per_group, "share")),
        "type_count": (("group", "type", "changed"), _stack(per_group, "count", dtype=np.int64)),
        "n_type_cells": (("group", "changed"), _stack(per_group, "cells", dtype=np.int64)),
        "output_consistency": (("group",), _stack(per_group, "consistency")),
    }
    coords = {"group": labels(groups), "band": labels(BANDS), "tau": sweep,
              "type": labels(interaction_types.INTERACTION_TYPES), "changed": labels(CHANGED)}
    return data, coords


def _condition_variables(merged: Merged):
    """The conditions, their accuracy (NaN for instruction datasets) and the samples it is
    over (those scored under each; 0 for instruction datasets)."""
    names = merged.conditions["condition"]
    if merged.attrs.get("kind", "mcq") == "mcq":
        acc = diagnostics.accuracy(merged.pred, merged.gold, merged.scored)
        n = np.asarray(merged.scored, bool).sum(axis=0)
    else:
        acc, n = np.full(len(names), np.nan), np.zeros(len(names), np.int64)
    coords = {
        "condition": labels(names),
        "template": ("condition", labels(merged.conditions["template"])),
        "shots": ("condition", np.asarray(merged.conditions["shots"]).astype(np.int64)),
        "perturbation": ("condition", labels(merged.conditions["perturbation"])),
    }
    return {"accuracy": (("condition",), np.asarray(acc, np.float64)),
            "accuracy_n": (("condition",), np.asarray(n, np.int64))}, coords


def _pair_variables(merged: Merged, groups: list[str], per_group: list[dict],
                    pred: np.ndarray):
    """Every group's condition pairs: IPS, Appendix G labels, prediction consistency and the
    representation baseline (App. H)."""
    pairs = np.concatenate([g["pairs"] for g in per_group]).reshape(-1, 2)
    group_of = [name for name, g in zip(groups, per_group) for _ in range(len(g["pairs"]))]
    P, B = len(pairs), len(BANDS)
    if P:
        kinds = pair_labels(merged, pairs)
        pair_cons = diagnostics.pair_consistency(pred, pairs, merged.scored)
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


def _peer_variables(merged: Merged, groups: list[str], per_group: list[dict], order: np.ndarray,
                    counts: np.ndarray, level: float):
    """What other tools report on the same outputs, per group (`ips.analysis.peers`), with
    its bootstrap interval over the samples (in sorted-id order, as IPS) and its n; and
    |Δv(x_N)| of every (sample, pair), the output-level size of each pair's change."""
    mcq = merged.attrs.get("kind", "mcq") == "mcq"
    v_full = peers.unmasked(merged.v, merged.n_vars, merged.masks)[order]
    pred, gold, scored = merged.pred[order], merged.gold[order], merged.scored[order]
    out = [peers.peer_metrics(pred[:, idx], gold, v_full[:, idx], mcq, counts, level,
                              scored[:, idx])
           for idx in map(merged.group_conditions, groups)]
    data = {"peer_value": (("group", "peer"), np.stack([o[0] for o in out])),
            "peer_ci": (("group", "peer", "bound"), np.stack([o[1] for o in out])),
            "peer_n": (("group", "peer"), np.stack([o[2] for o in out]))}
    pairs = np.concatenate([g["pairs"] for g in per_group]).reshape(-1, 2)
    data["sample_pair_dv_unmasked"] = (("sample", "pair"),
                                       np.abs(v_full[:, pairs[:, 0]] - v_full[:, pairs[:, 1]]))
    return data, {"peer": labels(peers.PEERS)}


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


def _fit_variables(merged: Merged, norm: np.ndarray, layout: SetLayout | None,
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


def _sparse_matching_nrmse(merged: Merged) -> tuple[np.ndarray, np.ndarray]:
    """`diagnostics.matching_nrmse` of sparse games, on the masks of their design: the relative
    RMS error of `ips.analysis.sparse_metrics.keep_top` of every game (mean over all games, and per
    sample)."""
    errs = np.zeros((len(merged.games), len(merged.conditions["condition"]), len(diagnostics.KEEP)))
    for s, row in enumerate(merged.games):
        design = design_row(merged.masks[s])
        for c, g in enumerate(row):
            v = merged.v[s, c, :design.size]
            errs[s, c] = [sparse_metrics.keep_top(g, k).relative_error(design, v)
                          for k in diagnostics.KEEP]
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
        "model_weights": a.get("model_weights", ""),
        "model_control": a.get("model_control", ""),
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
              variant_runs: Mapping[str, tuple[Sequence[str | os.PathLike],
                                               Sequence[str | os.PathLike]]] | None = None,
              normalisation: str = "nonempty",
              null_fits: str | os.PathLike | None = None) -> xr.Dataset:
    """Read, check and merge the shards (and the runs of each variant: ``variant_runs``,
    kind → (values files, interactions files); and the nulls' fits ``null_fits``, a file of
    `ips null-fits` on the same shards), then compute the metrics (what `ips metrics`
    does)."""
    merged = load(values, interactions)
    fits = None
    if null_fits is not None:
        fits = read_null_fits(null_fits)
        check(fits, merged, null_fits)
    return compute(merged, tau, tau_sweep, seed=seed, n_boot=n_boot,
                   level=level, draws=draws, null=null,
                   variant_runs={k: load_variant(k, *files)
                                 for k, files in (variant_runs or {}).items()},
                   normalisation=normalisation, fits=fits)
