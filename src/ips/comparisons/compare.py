"""Factor comparisons and τ robustness across models (`ips factors`; paper Sections 4.1–4.3).

Input: the metrics files of `ips metrics`, one per (model, dataset). Every comparison is
made within one dataset, between A (the model or setting *with* the factor) and B:

| factor | A | B | pairs |
|---|---|---|---|
| `instruct_vs_base` | type instruct | type base | same family, series and params |
| `scale` | larger params | next smaller params | same series, type and architecture; adjacent sizes only (each size against the next smaller one present) |
| `dense_vs_moe` | architecture dense | architecture moe | same family and type; every dense × moe pair (paper 4.3 averages over all of them) |
| `few_shot` | k-shot group | its group without examples, same model | `{k}shot` against `0shot`: the k-shot group's template pairs (T1, T4 by default) against the 0-shot value of the *same* template pairs; `perturbation-{k}shot` against `perturbation` (Figs. 12d, 55): each pair of the reworded prompts with k examples against the same pair without |

For the three model factors, one comparison is made for every condition group both files
hold (`0shot`, the k-shot groups, `perturbation`, `perturbation-{k}shot`), with `IPS_A`,
`IPS_B` the groups' IPS. For `few_shot` the 0-shot group has more templates (T1–T5) than a
k-shot group (T1, T4), so its group IPS averages other pairs: A and B are instead the mean
over the k-shot group's pairs of `pair_ips` and the mean of `pair_ips` of the pairs of the
group without examples that have the same two conditions less their `-{k}shot`
(T1-1shot|T4-1shot ↔ T1|T4, A1-1shot|A1-paraphrase-1shot ↔ A1|A1-paraphrase; with a
single pair, A equals the k-shot group's IPS). Pairs without such a counterpart are left
out; a group with none is reported absent.

`ΔIPS^band = (IPS_A − IPS_B)/IPS_B` (`ips.analysis.metrics.delta_ips`) for band all, low, mid, high;
NaN where IPS_B is 0 or either side has no value.

The file it writes is described in `ips.formats.factors`.

Uncertainty (`ips.analysis.uncertainty`). The per-sample values come from the metrics files
(`sample_ips` of the group for the model factors, `sample_pair_ips` of the compared template
pairs for few-shot); both sides are aligned by sample id (the workflow draws the same items
for every model). *Tests*: sample s's value on side A is A_s, the NaN-aware mean over the
side's K columns (K = 1 for a group, the template pairs for few-shot), likewise B_s; the
samples valued on both sides in a band (sorted by id) give d_s = A_s − B_s, and `p_value` is
the two-sided paired sign-flip test of their mean (`ips.analysis.uncertainty.sign_flip_test`:
exact for at most 16 samples, else `draws` random sign vectors seeded by `seed`). A summary
row tests the per-sample mean of d_s over its comparisons, on the samples valued in all of
them. *Intervals of ΔIPS* invert that same test (`sign_flip_interval`): the relative changes
θ whose d_s(θ) = A_s − (1+θ)·B_s it does not reject, so an interval excludes 0 exactly when
p < 1 − level (a percentile bootstrap of ΔIPS excluded 0 at p ≥ 0.05 in a quarter of the
evidence rows, docs/method.md#intervals); `delta_ips_mde` is the ΔIPS that test detects
with 80 % power. *Intervals of IPS_A, IPS_B* (levels, not tested): paired percentile
bootstrap, one count matrix per dataset (seeded by `seed`, over the sorted union of its
sample ids) for every comparison of that dataset. Metrics files without per-sample tables
give NaN intervals and p-values (n_tested 0).
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import xarray as xr

from ips import __version__
from ips.analysis import uncertainty
from ips.comparisons import low_band, per_sample
from ips.comparisons.beside_controls import control_variables
from ips.comparisons.factors import (
    ABSENT,
    FACTORS,
    entry_groups,
    instruct_pairs,
    moe_pairs,
    scale_pairs,
    unknown,
)
from ips.comparisons.per_sample import Comparison
from ips.comparisons.robustness import ROBUSTNESS_GROUP, robustness_variables
from ips.errors import InputError
from ips.formats.hdf5 import labels
from ips.formats.metrics import BANDS, Entry, read_metrics
from ips.prompts.templates import PERTURBATION, ZERO_SHOT

log = logging.getLogger(__name__)


#: a k-shot group (`ips.prompts.templates.conditions`): `{k}shot`, compared with `0shot`, or
#: `perturbation-{k}shot`, compared with `perturbation`
_SHOT_GROUP = re.compile(rf"^(?:({PERTURBATION})-)?(\d+)shot$")


def _group_ips(e: Entry, group: str) -> np.ndarray:
    return e.ds["ips"].sel(group=group).reindex(band=list(BANDS)).values.astype(float)


def _sample_ids(e: Entry) -> np.ndarray | None:
    if "sample_ips" not in e.ds.variables or "sample_pair_ips" not in e.ds.variables:
        return None
    return e.ds["sample"].values.astype(str)


def _group_samples(e: Entry, group: str) -> tuple[np.ndarray, np.ndarray] | None:
    """Per-sample IPS of a group: (ids, (S, 1, band))."""
    ids = _sample_ids(e)
    if ids is None:
        return None
    x = e.ds["sample_ips"].sel(group=group).reindex(band=list(BANDS)).values.astype(float)
    return ids, x[:, None, :]


def _pair_samples(e: Entry, rows: list[int]) -> tuple[np.ndarray, np.ndarray] | None:
    """Per-sample ips of some pairs: (ids, (S, K, band))."""
    ids = _sample_ids(e)
    if ids is None:
        return None
    x = e.ds["sample_pair_ips"].reindex(band=list(BANDS)).values.astype(float)
    return ids, x[:, rows, :]


def _group_null(e: Entry, group: str) -> tuple[np.ndarray, tuple | None]:
    """The matched-size null of a group (band,) and per sample (ids, (S, 1, band))."""
    ds = e.ds
    if "sample_matched_null_ips" not in ds:
        return np.full(len(BANDS), np.nan), None
    x = ds["sample_matched_null_ips"].sel(group=group).reindex(band=list(BANDS)).values
    return (ds["matched_null_ips"].sel(group=group).reindex(band=list(BANDS)).values
            .astype(float), (ds["sample"].values.astype(str), x.astype(float)[:, None, :]))


def _pair_null(e: Entry, rows: list[int]) -> tuple[np.ndarray, tuple | None]:
    """The matched-size null of some pairs: their mean (band,) and per sample (S, K, band)."""
    ds = e.ds
    if "sample_pair_matched_null" not in ds:
        return np.full(len(BANDS), np.nan), None
    x = ds["sample_pair_matched_null"].reindex(band=list(BANDS)).values.astype(float)
    return (per_sample.nanmean(ds["pair_matched_null"].reindex(band=list(BANDS)).values[rows]),
            (ds["sample"].values.astype(str), x[:, rows, :]))


def _model_comparisons(factor: str, dataset: str, a: Entry, b: Entry) -> list[Comparison]:
    out = []
    for g in entry_groups(a):
        if g in entry_groups(b):
            (na, sa), (nb, sb) = _group_null(a, g), _group_null(b, g)
            out.append(Comparison(factor, dataset, g, a.model, b.model, g, g, "",
                                  _group_ips(a, g), _group_ips(b, g),
                                  _group_samples(a, g), _group_samples(b, g), na, nb, sa, sb))
    return out


def _few_shot(dataset: str, e: Entry) -> tuple[list[Comparison], list[str]]:
    """Each k-shot group of one model against the same pairs of its group without examples
    (`_SHOT_GROUP`), a pair keyed by its two conditions less their `-{k}shot`."""
    groups = entry_groups(e)
    notes = []
    if ZERO_SHOT not in groups:
        return [], [f"{e.model}: no {ZERO_SHOT} group"]
    ds = e.ds
    pair_group = ds["pair_group"].values.astype(str)
    ends = list(zip(ds["pair_a"].values.astype(str), ds["pair_b"].values.astype(str)))
    pair_ips = ds["pair_ips"].reindex(band=list(BANDS)).values.astype(float)
    out = []
    for g in groups:
        m = _SHOT_GROUP.match(g)
        if not m or int(m.group(2)) == 0:
            continue
        base, suffix = m.group(1) or ZERO_SHOT, f"-{m.group(2)}shot"
        key = [frozenset(c.removesuffix(suffix) for c in pair) for pair in ends]
        without = {k: i for i, (k, h) in enumerate(zip(key, pair_group)) if h == base}
        rows = [i for i in np.flatnonzero(pair_group == g) if key[i] in without]
        if not rows:
            notes.append(f"{e.model}: group {g} has no template pair that is in {base}")
            continue
        b_rows = [without[key[i]] for i in rows]
        names = ";".join(sorted("–".join(sorted(key[i])) for i in rows))
        a_val, b_val = per_sample.nanmean(pair_ips[rows]), per_sample.nanmean(pair_ips[b_rows])
        (na, sa), (nb, sb) = _pair_null(e, rows), _pair_null(e, b_rows)
        out.append(Comparison("few_shot", dataset, g, e.model, e.model, g, base, names,
                              a_val, b_val, _pair_samples(e, rows), _pair_samples(e, b_rows),
                              na, nb, sa, sb))
    return out, notes


def _paired(comps: list[Comparison], datasets: list[str], seed: int, n_boot: int,
            level: float) -> list[uncertainty.PairedTest | None]:
    """Paired bootstrap intervals of every comparison (`ips.analysis.uncertainty.paired_test`).

    Per dataset one count matrix over the sorted union of the sample ids of its comparisons
    (so replicate b draws the same items for every comparison and model); both sides of a
    comparison are aligned by sample id, and a sample missing on either side counts on
    neither."""
    out: list[uncertainty.PairedTest | None] = [None] * len(comps)
    for d in datasets:
        mine = [i for i, c in enumerate(comps) if c.dataset == d
                and c.samples_a is not None and c.samples_b is not None]
        if not mine:
            continue
        ids = np.array(sorted({s for i in mine for s in
                               (*comps[i].samples_a[0], *comps[i].samples_b[0])}), dtype=object)
        pos = {s: k for k, s in enumerate(ids)}
        counts = uncertainty.resample_counts(ids.size, n_boot, seed)
        for i in mine:
            c = comps[i]
            common = set(c.samples_a[0]) & set(c.samples_b[0])
            sides = []
            for sid, x in (c.samples_a, c.samples_b):
                full = np.full((ids.size,) + x.shape[1:], np.nan)
                keep = np.array([s in common for s in sid], dtype=bool)
                full[[pos[s] for s in sid[keep]]] = x[keep]
                sides.append(full)
            out[i] = uncertainty.paired_test(*sides, level=level, counts=counts)
    return out


def compare(paths: Sequence[str | os.PathLike], seed: int = 0,
            n_boot: int = uncertainty.N_BOOT, level: float = uncertainty.LEVEL,
            draws: int = uncertainty.DRAWS) -> xr.Dataset:
    """All factor comparisons and the τ robustness of the given metrics files.

    ``seed``, ``n_boot``, ``level``: the paired bootstrap intervals of every comparison
    (`_paired`); ``seed``, ``draws``: its sign-flip tests (`sign_flip`)."""
    entries, tau = _read_entries(paths)
    for e in entries:
        if not e.control_of and unknown(e, "family", "series", "type"):
            log.info("%s: family, series or type unknown (its entry leaves them out): left out "
                     "of the instruct_vs_base, scale and dense_vs_moe comparisons", e.model)
    datasets = list(dict.fromkeys(e.dataset for e in entries))
    # control entries (`ips.controls`) are compared among themselves, beside the trained pairs
    by_dataset = {d: [e for e in entries if e.dataset == d and not e.control_of]
                  for d in datasets}
    comps, few_notes = _find_comparisons(datasets, by_dataset)
    added = {d: [e for e in entries if e.dataset == d and e.control_of] for d in datasets}
    controls = _find_comparisons(datasets, added)[0] if any(added.values()) else []
    tests = _paired(comps, datasets, seed, n_boot, level)
    diffs = [per_sample.sides(c.samples_a, c.samples_b) for c in comps]
    ips_a, ips_b = (np.array([getattr(c, k) for c in comps], float).reshape(-1, len(BANDS))
                    for k in ("ips_a", "ips_b"))
    presence, absent = _factor_presence(comps, datasets)
    data, coords = {}, {"factor": labels(FACTORS), "dataset": labels(datasets),
                        "band": labels(BANDS), "bound": labels(uncertainty.BOUNDS)}
    for d, c in (_comparison_variables(comps, ips_a, ips_b, tests, diffs, level, draws, seed),
                 _summary_variables(comps, per_sample.delta(ips_a, ips_b), diffs, level, draws, seed),
                 (control_variables(comps, controls, {e.model: e.control_of for e in entries},
                                     {e.model: e.control_draw for e in entries}, draws, seed,
                                     level),
                  {"control_draw": np.arange(1, 1 + max((e.control_draw for e in entries),
                                                        default=1))}),
                 (presence, {}),
                 robustness_variables(datasets, by_dataset)):
        data.update(d)
        coords.update(c)
    attrs = {
        "tau": tau,
        "robustness_group": ROBUSTNESS_GROUP,
        "metrics_files": json.dumps([str(e.path) for e in entries]),
        "absent": json.dumps(absent),
        "few_shot_notes": json.dumps(few_notes),
        "ips_version": __version__,
        "bootstrap": json.dumps({"method": "paired percentile bootstrap over sample ids",
                                 "n_boot": int(n_boot), "level": float(level),
                                 "seed": int(seed)}),
        "test": json.dumps({"method": "paired sign-flip permutation",
                            "statistic": "|mean of per-sample differences A_s - B_s|",
                            "exact_max": uncertainty.EXACT_MAX, "draws": int(draws),
                            "seed": int(seed)}),
    }
    ds = xr.Dataset(data, coords=coords, attrs=attrs)
    ds["delta_ips"].attrs["description"] = "(IPS_A - IPS_B) / IPS_B; A has the factor"
    return ds


def _read_entries(paths: Sequence[str | os.PathLike]) -> tuple[list[Entry], float]:
    """The metrics files, each (model, dataset) once, all at one τ."""
    if not paths:
        raise InputError("no metrics files given")
    entries = [read_metrics(p) for p in paths]
    seen: dict[tuple[str, str], Path] = {}
    tau = float(entries[0].ds.attrs["tau"])
    for e in entries:
        if (e.model, e.dataset) in seen:
            raise InputError(f"{e.path}: model {e.model!r} on dataset {e.dataset!r} is also in "
                             f"{seen[e.model, e.dataset]}")
        seen[e.model, e.dataset] = e.path
        if not np.isclose(float(e.ds.attrs["tau"]), tau):
            raise InputError(f"{e.path}: computed at τ = {e.ds.attrs['tau']}, but "
                             f"{entries[0].path} at τ = {tau}; factors compare IPS at one τ")
    return entries, tau


def _find_comparisons(datasets: list[str], by_dataset: dict[str, list[Entry]]
                      ) -> tuple[list[Comparison], list[str]]:
    """The model pairs of every model factor, then the few-shot comparisons, per dataset;
    and the notes on few-shot groups that could not be compared."""
    comps: list[Comparison] = []
    few_notes: list[str] = []
    finders = {"instruct_vs_base": instruct_pairs, "scale": scale_pairs,
               "dense_vs_moe": moe_pairs}
    for d in datasets:
        for factor, finder in finders.items():
            for a, b in finder(by_dataset[d]):
                comps += _model_comparisons(factor, d, a, b)
        for e in by_dataset[d]:
            c, notes = _few_shot(d, e)
            comps += c
            few_notes += [f"{d}: {n}" for n in notes]
    for n in few_notes:
        log.info("few_shot: %s", n)
    return comps, few_notes


def _comparison_variables(comps: list[Comparison], ips_a: np.ndarray, ips_b: np.ndarray,
                          tests: list, diffs: list, level: float, draws: int, seed: int):
    """Every comparison: IPS of A and B, ΔIPS, their paired intervals and sign-flip tests."""
    C, nb = len(comps), len(BANDS)
    nan2 = np.full((nb, 2), np.nan)
    ci = {name: np.array([getattr(t, name) if t else nan2 for t in tests], float
                         ).reshape(C, nb, 2) for name in ("ci_a", "ci_b")}
    ci["delta_ci"] = np.full((C, nb, 2), np.nan)
    p_val, n_tested = np.full((C, nb), np.nan), np.zeros((C, nb), np.int64)
    mde = np.full((C, nb), np.nan)
    for i, d in enumerate(diffs):
        if d is not None:
            t = per_sample.sign_flip([d], draws, seed, level, relative=True)
            p_val[i], n_tested[i], ci["delta_ci"][i], mde[i] = t.p, t.n, t.ci, t.mde
    null_a, null_b = (np.array([getattr(c, k) for c in comps], float).reshape(C, nb)
                      for k in ("null_a", "null_b"))
    excess, p_excess = np.full((C, nb), np.nan), np.full((C, nb), np.nan)
    n_excess, excess_mde = np.zeros((C, nb), np.int64), np.full((C, nb), np.nan)
    for i, c in enumerate(comps):
        d = per_sample.excess(c)
        if d:
            excess[i] = per_sample.nanmean(np.array(list(d.values())))
            t = per_sample.sign_flip([d], draws, seed, level)
            p_excess[i], n_excess[i], excess_mde[i] = t.p, t.n, t.mde
    delta = per_sample.delta(ips_a, ips_b)
    low = {k: np.full(C, np.nan) for k in ("low_gap", "low_gap_p", "low_gap_mde")}
    low_gap_ci, low_gap_n = np.full((C, 2), np.nan), np.zeros(C, np.int64)
    for i, d in enumerate(diffs):
        gaps = low_band.gaps(d)
        if gaps:
            t = low_band.gap_test(gaps, draws, seed, level)
            low["low_gap"][i], low["low_gap_p"][i], low["low_gap_mde"][i] = t.estimate, t.p, t.mde
            low_gap_ci[i], low_gap_n[i] = t.ci, t.n
    data = {
        "ips_a": (("comparison", "band"), ips_a),
        "ips_b": (("comparison", "band"), ips_b),
        "delta_ips": (("comparison", "band"), delta),
        "ips_a_ci": (("comparison", "band", "bound"), ci["ci_a"]),
        "ips_b_ci": (("comparison", "band", "bound"), ci["ci_b"]),
        "delta_ips_ci": (("comparison", "band", "bound"), ci["delta_ci"]),
        "delta_ips_mde": (("comparison", "band"), mde),
        "p_value": (("comparison", "band"), p_val),
        "n_tested": (("comparison", "band"), n_tested),
        # A_s and B_s valued in band all
        "n_paired": (("comparison",), n_tested[:, BANDS.index("all")].copy()),
        "null_a": (("comparison", "band"), null_a),
        "null_b": (("comparison", "band"), null_b),
        "delta_null": (("comparison", "band"), per_sample.delta(null_a, null_b)),
        **{k: (("comparison",), v) for k, v in low.items()},
        "low_gap_ci": (("comparison", "bound"), low_gap_ci),
        "low_gap_n": (("comparison",), low_gap_n),
        "excess": (("comparison", "band"), excess),
        "p_excess": (("comparison", "band"), p_excess),
        "n_excess": (("comparison", "band"), n_excess),
        "excess_mde": (("comparison", "band"), excess_mde),
    }
    coords = {"comparison": np.arange(C)}
    for name in ("factor", "dataset", "group"):
        coords[f"comparison_{name}"] = ("comparison", labels(getattr(c, name) for c in comps))
    for name in ("model_a", "model_b", "setting_a", "setting_b", "templates"):
        coords[name] = ("comparison", labels(getattr(c, name) for c in comps))
    return data, coords


def _summary_variables(comps: list[Comparison], delta: np.ndarray, diffs: list, level: float,
                       draws: int, seed: int):
    """Mean ΔIPS over the comparisons of one (factor, dataset, group), its interval (the
    replicates share their resamples) and its sign-flip test."""
    keys = list(dict.fromkeys((c.factor, c.dataset, c.group) for c in comps))
    K, nb = len(keys), len(BANDS)
    mean = np.full((K, nb), np.nan)
    mean_ci = np.full((K, nb, 2), np.nan)
    mean_p = np.full((K, nb), np.nan)
    mean_n = np.zeros((K, nb), np.int64)
    count = np.zeros(K, np.int64)
    for k, key in enumerate(keys):
        rows = [i for i, c in enumerate(comps) if (c.factor, c.dataset, c.group) == key]
        mean[k] = per_sample.nanmean(delta[rows])
        count[k] = int(np.isfinite(delta[rows, 0]).sum())
        if all(diffs[i] is not None for i in rows):
            t = per_sample.sign_flip([diffs[i] for i in rows], draws, seed, level, relative=True)
            mean_p[k], mean_n[k], mean_ci[k] = t.p, t.n, t.ci
    data = {
        "delta_ips_mean": (("summary", "band"), mean),
        "delta_ips_mean_ci": (("summary", "band", "bound"), mean_ci),
        "p_value_mean": (("summary", "band"), mean_p),
        "n_tested_mean": (("summary", "band"), mean_n),
        "n_comparisons": (("summary",), count),
    }
    coords = {"summary": np.arange(K)}
    for i, name in enumerate(("factor", "dataset", "group")):
        coords[f"summary_{name}"] = ("summary", labels(k[i] for k in keys))
    return data, coords


def _factor_presence(comps: list[Comparison], datasets: list[str]) -> tuple[dict, dict]:
    """`factor_present` and `factor_note` (how many comparisons per dataset, or why none),
    and the reasons of the absent factors."""
    present, notes, absent = [], [], {}
    for f in FACTORS:
        mine = [c for c in comps if c.factor == f]
        if not mine:
            present.append(False)
            notes.append(f"absent: {ABSENT[f]}")
            absent[f] = ABSENT[f]
            continue
        present.append(True)
        unit = "(model, k-shot group) comparison(s)" if f == "few_shot" else "model pair(s)"
        per_d = {d: len({(c.model_a, c.model_b, c.setting_a if f == "few_shot" else "")
                         for c in mine if c.dataset == d}) for d in datasets}
        parts = [f"{d}: {n} {unit}" if n else f"{d}: none ({ABSENT[f]})"
                 for d, n in per_d.items()]
        notes.append("present; " + "; ".join(parts))
    data = {"factor_present": (("factor",), np.array(present, bool)),
            "factor_note": (("factor",), labels(notes))}
    return data, absent


# ---------------------------------------------------------------------------------- reading
