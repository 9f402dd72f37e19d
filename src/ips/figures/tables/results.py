"""The tables of `ips figures` as CSV: IPS beside its matched-size null and its ceiling per
(model, dataset, group, band) (`ips_table.csv`), every null and the ceiling
(`null_table.csv`), the factor comparisons
(`factors_table.csv`), τ robustness (`tau_robustness.csv`, `tau_pairs.csv`: Table 2) and IPS
at every τ (`tau_table.csv`: Table 3); the appendix tables are `ips.figures.tables.appendix`. The
columns in the order written, what each holds in `ips.figures.text.captions`. Every table ends in
`weights` (`ips.formats.metrics.WEIGHTS`): `random` where a model the row rests on has random
weights."""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import xarray as xr

from ips import controls
from ips.analysis import uncertainty
from ips.analysis.nulls import SATURATED, saturation
from ips.analysis.peers import PEERS
from ips.analysis.uncertainty import EXACT_MAX, MIN_RELIABLE_N, sign_flip_label
from ips.config import MODEL_ATTRIBUTES
from ips.errors import InputError
from ips.formats.factors import TauDifferences, TauRobustness
from ips.formats.metrics import BANDS, Entry, weights
from ips.nulls import variants
from ips.prompts.templates import ZERO_SHOT

TABLE_COLUMNS = ("model", "dataset", "group", "band", "ips", "ips_ci_low", "ips_ci_high",
                 "n_valued_samples", "n_empty_pairs", "matched_null_ips", "matched_null_ci_low",
                 "matched_null_ci_high", "ips_minus_matched_null", "ceiling_ips",
                 "ceiling_ci_low", "ceiling_ci_high", "ips_over_ceiling", "saturated",
                 "output_consistency",
                 "n_samples", "tau", *MODEL_ATTRIBUTES, "few_samples", "weights")
NULL_COLUMNS = ("model", "dataset", "group", "band", "null", "level", "null_ips", "ci_low",
                "ci_high", "n_valued_samples", "ips", "ips_minus_null", "n_paired", "tau",
                "max_abs_dv", "median_abs_dv", "dv_rel", "jaccard", "games", "weights")
#: IPS (band all) beside what other tools report on the same outputs (`ips.analysis.peers`)
PEER_COLUMNS = ("model", "dataset", "group", "ips", "ips_ci_low", "ips_ci_high",
                "n_valued_samples",
                *(f"{p}{s}" for p in PEERS for s in ("", "_ci_low", "_ci_high", "_n")),
                "weights")
#: each model's accuracy per condition (`accuracy_rows`)
ACCURACY_COLUMNS = ("model", "dataset", "condition", "template", "shots", "perturbation",
                    "accuracy", "ci_low", "ci_high", "correct", "n", "weights")
#: what a precision null row adds (`ips.formats.metrics`: precision_{name} per precision)
VARIANT_STATS = ("max_abs_dv", "median_abs_dv", "dv_rel", "jaccard", "games")
FACTOR_COLUMNS = ("factor", "dataset", "group", "model_a", "model_b", "setting_a", "setting_b",
                  "templates", "band", "ips_a", "ips_a_ci_low", "ips_a_ci_high", "ips_b",
                  "ips_b_ci_low", "ips_b_ci_high", "delta_ips", "delta_ips_ci_low",
                  "delta_ips_ci_high", "p_value", "test", "n_tested", "n_paired", "few_samples",
                  "null_a", "null_b", "delta_null", "excess", "p_excess", "n_excess", "weights")
#: each model's IPS beside its controls' over their draws (`control_rows`)
CONTROL_COLUMNS = ("model", "dataset", "group", "band", "ips", "ips_over_ceiling",
                   "control_kind", "control_draws", "control_ips_mean", "control_ips_sd",
                   "control_ips_min", "control_ips_max", "control_over_ceiling_mean",
                   "p_value", "test", "weights")
#: Table 2's five measures of agreement between two τ: the correlations of
#: `ips.comparisons.robustness.tau_sweep`, then `ips.formats.factors.TauDifferences`
TAU_MEASURES = ("spearman", "pearson", *TauDifferences._fields)
TAU_COLUMNS = ("dataset", *(f"tau_{k}" for k in TAU_MEASURES), "tau_n_models", "tau_note",
               "weights")
TAU_PAIR_COLUMNS = ("dataset", "tau_a", "tau_b", *TAU_MEASURES, "n_models", "weights")
#: Table 3 before its one column per τ of the sweep (`tau_table_columns`)
TAU_TABLE_HEAD = ("model", "dataset", "group", "type", "architecture", "params")


def _banded(ds: xr.Dataset, name: str, *dims: str) -> np.ndarray:
    """`ds[name]` as floats with its axes in the order `dims`, then the rest; bands in `BANDS`
    order. One selection per file and variable: xarray costs a millisecond a selection, and a
    50-model study has tens of thousands of cells."""
    return ds[name].sel(band=list(BANDS)).transpose(*dims, ...).values.astype(float)


def _null_arrays(ds: xr.Dataset, name: str, dims: tuple[str, ...]) -> dict[str, np.ndarray]:
    """A null's IPS, interval, samples valued and per-sample IPS, indexed by the null's own
    coordinates `dims` and the band (then bound / sample)."""
    return {"ips": _banded(ds, f"{name}_ips", *dims, "band"),
            "ci": _banded(ds, f"{name}_ips_ci", *dims, "band", "bound"),
            "n": _banded(ds, f"{name}_n_valued", *dims, "band"),
            "sample": _banded(ds, f"sample_{name}_ips", *dims, "band", "sample")}


def _null_cells(null: dict[str, np.ndarray], at: tuple[int, ...],
                sample_ips: np.ndarray) -> dict:
    """A null at the index `at` of `_null_arrays`: its IPS, interval and samples, and the mean
    per-sample IPS of the group (`sample_ips`, over the same samples) minus it over the
    samples valued in both (and how many)."""
    ci = null["ci"][at]
    d = sample_ips - null["sample"][at]
    ok = np.isfinite(d)
    return {"null_ips": float(null["ips"][at]), "ci_low": float(ci[0]),
            "ci_high": float(ci[1]), "n_valued_samples": int(null["n"][at]),
            "ips_minus_null": float(d[ok].mean()) if ok.any() else np.nan,
            "n_paired": int(ok.sum())}


def _group_arrays(ds: xr.Dataset) -> dict[str, np.ndarray | None]:
    """IPS and its per-sample values by (group, band[, sample]); a file without nulls need
    not hold the per-sample values."""
    return {"ips": _banded(ds, "ips", "group", "band"),
            "sample": (_banded(ds, "sample_ips", "group", "band", "sample")
                       if "sample_ips" in ds else None)}


def table_rows(entries: list[Entry]) -> list[dict]:
    rows = []
    for e in entries:
        ds = e.ds
        own = _group_arrays(ds)
        ci = _banded(ds, "ips_ci", "group", "band", "bound") if "ips_ci" in ds else None
        n_valued = _banded(ds, "n_valued_samples", "group", "band")
        n_empty = _banded(ds, "n_empty_pairs", "group", "band")
        refs = {name: _null_arrays(ds, name, ("group",)) for name in ("matched_null", "ceiling")
                if f"{name}_ips" in ds}
        for gi, g in enumerate(ds["group"].values):
            for bi, b in enumerate(BANDS):
                low, high = ci[gi, bi] if ci is not None else (np.nan, np.nan)
                n = int(n_valued[gi, bi])
                cells = {name: _null_cells(x, (gi, bi), own["sample"][gi, bi])
                         for name, x in refs.items()}
                m, c = cells.get("matched_null", {}), cells.get("ceiling", {})
                rows.append({
                    "model": e.model, "dataset": e.dataset, "group": str(g), "band": b,
                    "ips": float(own["ips"][gi, bi]),
                    "ips_ci_low": float(low), "ips_ci_high": float(high),
                    "n_valued_samples": n,
                    "n_empty_pairs": int(n_empty[gi, bi]),
                    "matched_null_ips": m.get("null_ips", np.nan),
                    "matched_null_ci_low": m.get("ci_low", np.nan),
                    "matched_null_ci_high": m.get("ci_high", np.nan),
                    "ips_minus_matched_null": m.get("ips_minus_null", np.nan),
                    "ceiling_ips": c.get("null_ips", np.nan),
                    "ceiling_ci_low": c.get("ci_low", np.nan),
                    "ceiling_ci_high": c.get("ci_high", np.nan),
                    "ips_over_ceiling": (ratio := float(saturation(own["ips"][gi, bi], c.get(
                        "null_ips", np.nan)))),
                    "saturated": bool(ratio >= SATURATED),
                    "output_consistency": float(ds["output_consistency"].sel(group=g))
                    if "output_consistency" in ds else float("nan"),
                    "n_samples": int(ds["n_samples"]) if "n_samples" in ds else "",
                    "tau": float(ds.attrs["tau"]),
                    **{k: attr_text(e.attrs.get(k)) for k in MODEL_ATTRIBUTES},
                    "few_samples": n < MIN_RELIABLE_N, "weights": weights([e]),
                })
    return rows


def null_rows(entries: list[Entry]) -> list[dict]:
    """Every null beside IPS: one row per model, dataset, group, band and null (the Gaussian
    null at each level, the matched-size null, the ceiling — IPS of unrelated games, in the
    `null` column though it is no null —; in each group with conditions scored again, the
    precision null of each second dtype and the baseline null of each other baseline, with how far
    v moved over all of the run's games)."""
    rows = []
    for e in entries:
        ds = e.ds
        own = _group_arrays(ds)
        levels = ds["null_level"].values if "null_ips" in ds else ()
        gaussian = _null_arrays(ds, "null", ("group", "null_level")) if len(levels) else None
        fixed = {kind: _null_arrays(ds, name, ("group",))
                 for kind, name in (("matched", "matched_null"), ("ceiling", "ceiling"))
                 if f"{name}_ips" in ds}
        variant_nulls = {kind: _null_arrays(ds, f"{kind}_null", (kind, "group"))
                    for kind in (v.kind for v in variants()) if f"{kind}_null_ips" in ds}
        for gi, g in enumerate(ds["group"].values):
            for bi, b in enumerate(BANDS):
                samples = own["sample"][gi, bi] if own["sample"] is not None else None
                base = {"model": e.model, "dataset": e.dataset, "group": str(g), "band": b,
                        "ips": float(own["ips"][gi, bi]),
                        "tau": float(ds.attrs["tau"]), "weights": weights([e])}
                for li, c in enumerate(levels):
                    rows.append({**base, "null": "gaussian", "level": float(c),
                                 **_null_cells(gaussian, (gi, li, bi), samples)})
                for kind, arrays in fixed.items():
                    rows.append({**base, "null": kind, "level": "",
                                 **_null_cells(arrays, (gi, bi), samples)})
                for kind, arrays in variant_nulls.items():
                    for k, setting in enumerate(ds[kind].values):
                        if not arrays["n"][k, gi].any():  # no condition of g scored again
                            continue
                        stats = {name: float(ds[f"{kind}_{name}"].isel({kind: k}))
                                 for name in VARIANT_STATS}
                        rows.append({**base, "null": kind, "level": str(setting), **stats,
                                     "games": int(stats["games"]),
                                     **_null_cells(arrays, (k, gi, bi), samples)})
    return rows


def factor_rows(factors: xr.Dataset, entries: Sequence[Entry] = ()) -> list[dict]:
    """Every comparison and band of the factors file; `entries` tell which models have
    random weights."""
    rows = []
    exact_max = json.loads(factors.attrs.get("test", "{}")).get("exact_max", EXACT_MAX)
    size = factors.sizes.get("comparison", 0)
    by_model: dict[str, list[Entry]] = {}
    for e in entries:
        by_model.setdefault(e.model, []).append(e)

    def banded(name, *rest, missing=np.nan):  # (comparison, band, *rest)
        if name in factors:
            return _banded(factors, name, "comparison", "band", *rest)
        return np.full((size, len(BANDS), *(2 for _ in rest)), missing)

    cis = {k: banded(k, "bound") for k in ("ips_a_ci", "ips_b_ci", "delta_ips_ci")}
    values = {k: banded(k) for k in ("ips_a", "ips_b", "delta_ips", "p_value", "null_a",
                                     "null_b", "delta_null", "excess", "p_excess")}
    n_tested, n_excess = banded("n_tested", missing=0), banded("n_excess", missing=0)
    n_paired = (factors["n_paired"].values.astype(int) if "n_paired" in factors
                else np.zeros(size, int))
    text = {k: factors[k].values.astype(str) for k in (
        "comparison_factor", "comparison_dataset", "comparison_group", "model_a", "model_b",
        "setting_a", "setting_b", "templates")}
    for i in range(size):
        weight = weights([*by_model.get(text["model_a"][i], ()),
                          *by_model.get(text["model_b"][i], ())])
        for j, b in enumerate(BANDS):
            n = int(n_tested[i, j])
            rows.append({
                "factor": text["comparison_factor"][i],
                "dataset": text["comparison_dataset"][i],
                "group": text["comparison_group"][i],
                **{k: text[k][i] for k in
                   ("model_a", "model_b", "setting_a", "setting_b", "templates")},
                "band": b,
                "ips_a": float(values["ips_a"][i, j]),
                "ips_a_ci_low": cis["ips_a_ci"][i, j, 0],
                "ips_a_ci_high": cis["ips_a_ci"][i, j, 1],
                "ips_b": float(values["ips_b"][i, j]),
                "ips_b_ci_low": cis["ips_b_ci"][i, j, 0],
                "ips_b_ci_high": cis["ips_b_ci"][i, j, 1],
                "delta_ips": float(values["delta_ips"][i, j]),
                "delta_ips_ci_low": cis["delta_ips_ci"][i, j, 0],
                "delta_ips_ci_high": cis["delta_ips_ci"][i, j, 1],
                "p_value": float(values["p_value"][i, j]),
                "test": sign_flip_label(n, exact_max),
                "n_tested": n,
                "n_paired": int(n_paired[i]),
                "few_samples": n < MIN_RELIABLE_N,
                **{k: float(values[k][i, j])
                   for k in ("null_a", "null_b", "delta_null", "excess", "p_excess")},
                "n_excess": int(n_excess[i, j]),
                "weights": weight,
            })
    return rows


def _dataset_weights(entries: Sequence[Entry], dataset: str) -> str:
    """The weights of the models a τ-robustness row rests on: its dataset's, controls aside
    (the factors leave them out)."""
    return weights(e for e in entries if e.dataset == dataset and not e.control_of)


def tau_rows(robustness: dict[str, TauRobustness], entries: Sequence[Entry] = ()) -> list[dict]:
    """Table 2 per dataset: the five measures averaged over every two τ of the sweep."""
    return [{"dataset": r.dataset, **{f"tau_{k}": getattr(r, k) for k in TAU_MEASURES},
             "tau_n_models": r.n_models, "tau_note": r.note,
             "weights": _dataset_weights(entries, r.dataset)} for r in robustness.values()]


def tau_pair_rows(factors: xr.Dataset, entries: Sequence[Entry] = ()) -> list[dict]:
    """Table 2 unaveraged: one row per dataset and pair of sweep values τ_a < τ_b, from the
    factors file's `tau_*_matrix` (NaN for a measure a file written before it lacks)."""
    taus = factors["tau"].values.astype(float)
    rows = []
    for d in factors["dataset"].values.astype(str):
        mats = {k: (factors[f"tau_{k}_matrix"].sel(dataset=d).values.astype(float)
                    if f"tau_{k}_matrix" in factors else np.full((taus.size,) * 2, np.nan))
                for k in TAU_MEASURES}
        for i, j in zip(*np.triu_indices(taus.size, k=1)):
            rows.append({"dataset": d, "tau_a": float(taus[i]), "tau_b": float(taus[j]),
                         **{k: float(m[i, j]) for k, m in mats.items()},
                         "n_models": int(factors["tau_n_models"].sel(dataset=d)),
                         "weights": _dataset_weights(entries, d)})
    return rows


def _tau_name(t: float) -> str:
    return f"tau_{t:g}"


def tau_table_columns(entries: Sequence[Entry]) -> tuple[str, ...]:
    """Table 3's columns: `TAU_TABLE_HEAD`, one column per τ of the sweep, `weights`."""
    taus = entries[0].ds["tau"].values.astype(float) if entries else np.zeros(0)
    return (*TAU_TABLE_HEAD, *map(_tau_name, taus), "weights")


def tau_table_rows(entries: Sequence[Entry]) -> list[dict]:
    """Table 3: IPS (0-shot, band all) of every model and dataset at every τ of the sweep
    (`ips_sweep`), within a dataset sorted as the paper sorts, by IPS at the sweep's first τ
    (least sensitive first; models without it last). Every file must share one sweep."""
    if not entries:
        return []
    first = entries[0]
    taus = first.ds["tau"].values.astype(float)
    rows = []
    for e in entries:
        t = e.ds["tau"].values.astype(float)
        if t.shape != taus.shape or not np.allclose(t, taus):
            raise InputError(f"{e.path}: τ sweep {t.tolist()} differs from {taus.tolist()} of "
                             f"{first.path}; run `ips metrics` with one --tau-sweep for all "
                             "models")
        sweep = (e.ds["ips_sweep"].sel(group=ZERO_SHOT).values.astype(float)
                 if ZERO_SHOT in e.ds["group"].values else np.full(taus.size, np.nan))
        rows.append({"model": e.model, "dataset": e.dataset, "group": ZERO_SHOT,
                     **{k: attr_text(e.attrs.get(k)) for k in TAU_TABLE_HEAD[3:]},
                     **dict(zip(map(_tau_name, taus), sweep.tolist())),
                     "weights": weights([e])})
    order = list(dict.fromkeys(e.dataset for e in entries))
    lead = _tau_name(taus[0]) if taus.size else None

    def key(r: dict):
        x = r[lead] if lead else np.nan
        return order.index(r["dataset"]), bool(np.isnan(x)), 0.0 if np.isnan(x) else x, r["model"]

    return sorted(rows, key=key)


def attr_text(x) -> str:
    """A model attribute as table text: a whole number without its decimal point."""
    if isinstance(x, float) and x.is_integer():
        return str(int(x))
    return "" if x is None else str(x)


def _cell(v):
    """CSV text: empty for NaN, 6 significant digits, true/false."""
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    if isinstance(v, float):
        return "" if np.isnan(v) else f"{v:.6g}"
    return v


def write_csv(rows: list[dict], columns: Sequence[str], path: Path) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(columns))
        w.writeheader()
        for row in rows:
            w.writerow({k: _cell(v) for k, v in row.items()})


def peer_rows(entries: list[Entry]) -> list[dict]:
    """One row per model, dataset and condition group: IPS (band all, with its interval and
    samples) and every metric of `PEERS` with its interval and samples; metrics files
    written before the peers give none."""
    rows = []
    for e in entries:
        ds = e.ds
        if "peer_value" not in ds:
            continue
        ips, ci = _banded(ds, "ips", "group", "band"), _banded(ds, "ips_ci", "group", "band",
                                                                "bound")
        n_valued = _banded(ds, "n_valued_samples", "group", "band")
        value = ds["peer_value"].sel(peer=list(PEERS)).transpose("group", "peer").values
        pci = ds["peer_ci"].sel(peer=list(PEERS)).transpose("group", "peer", "bound").values
        pn = ds["peer_n"].sel(peer=list(PEERS)).transpose("group", "peer").values
        for gi, g in enumerate(ds["group"].values):
            row = {"model": e.model, "dataset": e.dataset, "group": str(g),
                   "ips": float(ips[gi, 0]), "ips_ci_low": float(ci[gi, 0, 0]),
                   "ips_ci_high": float(ci[gi, 0, 1]), "n_valued_samples": int(n_valued[gi, 0])}
            for k, p in enumerate(PEERS):
                row |= {p: float(value[gi, k]), f"{p}_ci_low": float(pci[gi, k, 0]),
                        f"{p}_ci_high": float(pci[gi, k, 1]), f"{p}_n": int(pn[gi, k])}
            rows.append(row | {"weights": weights([e])})
    return rows


def accuracy_rows(entries: list[Entry]) -> list[dict]:
    """One row per model, multiple-choice dataset and condition: the share of the samples
    scored under it whose prediction is the gold option, with its exact (Clopper–Pearson)
    95 % interval and the counts k of n; metrics files without `accuracy_n` (written before
    it) give none."""
    from scipy.stats import binomtest

    rows = []
    for e in entries:
        ds = e.ds
        if "accuracy_n" not in ds:
            continue
        for c in range(ds.sizes["condition"]):
            n, acc = int(ds["accuracy_n"].values[c]), float(ds["accuracy"].values[c])
            if n == 0 or not np.isfinite(acc):
                continue
            k = int(round(acc * n))
            ci = binomtest(k, n).proportion_ci(0.95, method="exact")
            cond = ds["condition"].isel(condition=c)
            rows.append({"model": e.model, "dataset": e.dataset, "condition": str(cond.values),
                         **{f: str(cond[f].values) for f in ("template", "shots",
                                                             "perturbation") if f in cond.coords},
                         "accuracy": acc, "ci_low": float(ci.low), "ci_high": float(ci.high),
                         "correct": k, "n": n, "weights": weights([e])})
    return rows


def control_rows(entries: list[Entry]) -> list[dict]:
    """One row per trained model, dataset, condition group and band: its IPS beside its
    controls' (`ips.controls.pair`: one entry per draw) as their mean, sd (ddof 1: the spread
    between draws), range and mean share of the ceiling, and the prediction test of the
    model's IPS against the draws (`uncertainty.prediction_test`; two or more draws)."""
    rows = []
    for e in entries:
        if e.control_of:
            continue
        drawn = controls.pair(e.model, [c for c in entries if c.dataset == e.dataset])
        if not drawn:
            continue
        mine = _group_arrays(e.ds)["ips"]
        theirs = [_group_arrays(c.ds)["ips"] for c in drawn]
        ceilings = [(_banded(x.ds, "ceiling_ips", "group", "band") if "ceiling_ips" in x.ds
                     else np.full(mine.shape, np.nan)) for x in (e, *drawn)]
        groups = [list(x.ds["group"].values.astype(str)) for x in drawn]
        kind = drawn[0].control.kind if drawn[0].control else drawn[0].control_record["kind"]
        for gi, g in enumerate(e.ds["group"].values.astype(str)):
            for bi, b in enumerate(BANDS):
                at = [(k, gs.index(g)) for k, gs in enumerate(groups) if g in gs]
                values = np.array([theirs[k][gj, bi] for k, gj in at])
                shares = np.array([float(saturation(theirs[k][gj, bi],
                                                    ceilings[k + 1][gj, bi])) for k, gj in at])
                ok = values[np.isfinite(values)]
                test = uncertainty.prediction_test(float(mine[gi, bi]), ok)
                rows.append({
                    "model": e.model, "dataset": e.dataset, "group": g, "band": b,
                    "ips": float(mine[gi, bi]),
                    "ips_over_ceiling": float(saturation(mine[gi, bi], ceilings[0][gi, bi])),
                    "control_kind": kind, "control_draws": int(ok.size),
                    "control_ips_mean": float(ok.mean()) if ok.size else np.nan,
                    "control_ips_sd": test.sd,
                    "control_ips_min": float(ok.min()) if ok.size else np.nan,
                    "control_ips_max": float(ok.max()) if ok.size else np.nan,
                    "control_over_ceiling_mean": (float(np.nanmean(shares))
                                                  if np.isfinite(shares).any() else np.nan),
                    "p_value": test.p_value,
                    "test": (f"prediction test against {test.n} draws (t, {test.n - 1} df)"
                             if test.method == "t" else
                             "rank test: the draws do not spread" if test.method == "rank"
                             else "none: fewer than 2 draws"),
                    "weights": weights([e])})
    return rows


def write_table(entries: list[Entry], path: Path) -> None:
    write_csv(table_rows(entries), TABLE_COLUMNS, path)


# --------------------------------------------------------------------------------- case study
