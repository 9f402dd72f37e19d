"""The tables of `ips figures` as CSV: IPS beside its matched-size null per (model, dataset,
group, band) (`ips_table.csv`), every null (`null_table.csv`), the factor comparisons
(`factors_table.csv`), τ robustness (`tau_robustness.csv`, `tau_pairs.csv`: Table 2) and IPS
at every τ (`tau_table.csv`: Table 3); the appendix tables are `ips.figures.appendix`. The
columns in the order written, what each holds in `ips.figures.captions`. Every table ends in
`weights` (`ips.metrics_file.WEIGHTS`): `random` where a model the row rests on has random
weights."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Sequence

import numpy as np
import xarray as xr

from ips.config import MODEL_ATTRIBUTES
from ips.errors import InputError
from ips.factors import TauDifferences, TauRobustness
from ips.metrics_file import Entry, weights
from ips.figures.common import MAIN_GROUP
from ips.metrics_file import BANDS
from ips.uncertainty import EXACT_MAX, MIN_RELIABLE_N, sign_flip_label


TABLE_COLUMNS = ("model", "dataset", "group", "band", "ips", "ips_ci_low", "ips_ci_high",
                 "n_valued_samples", "n_empty_pairs", "matched_null_ips", "matched_null_ci_low",
                 "matched_null_ci_high", "ips_minus_matched_null", "output_consistency",
                 "n_samples", "tau", *MODEL_ATTRIBUTES, "few_samples", "weights")
NULL_COLUMNS = ("model", "dataset", "group", "band", "null", "level", "null_ips", "ci_low",
                "ci_high", "n_valued_samples", "ips", "ips_minus_null", "n_paired", "tau",
                "max_abs_dv", "median_abs_dv", "dv_rel", "jaccard", "games", "weights")
#: what a precision null row adds (`ips.metrics_file`: precision_{name} per precision)
PRECISION_STATS = ("max_abs_dv", "median_abs_dv", "dv_rel", "jaccard", "games")
FACTOR_COLUMNS = ("factor", "dataset", "group", "model_a", "model_b", "setting_a", "setting_b",
                  "templates", "band", "ips_a", "ips_a_ci_low", "ips_a_ci_high", "ips_b",
                  "ips_b_ci_low", "ips_b_ci_high", "delta_ips", "delta_ips_ci_low",
                  "delta_ips_ci_high", "p_value", "test", "n_tested", "n_paired", "few_samples",
                  "null_a", "null_b", "delta_null", "excess", "p_excess", "n_excess", "weights")
#: Table 2's five measures of agreement between two τ: the correlations of
#: `ips.metrics.tau_sweep`, then `ips.factors.TauDifferences`
TAU_MEASURES = ("spearman", "pearson", *TauDifferences._fields)
TAU_COLUMNS = ("dataset", *(f"tau_{k}" for k in TAU_MEASURES), "tau_n_models", "tau_note",
               "weights")
TAU_PAIR_COLUMNS = ("dataset", "tau_a", "tau_b", *TAU_MEASURES, "n_models", "weights")
#: Table 3 before its one column per τ of the sweep (`tau_table_columns`)
TAU_TABLE_HEAD = ("model", "dataset", "group", "type", "architecture", "params")


def table_rows(entries: list[Entry]) -> list[dict]:
    rows = []
    for e in entries:
        ds = e.ds
        for g in ds["group"].values:
            for b in BANDS:
                ci = (ds["ips_ci"].sel(group=g, band=b).values.astype(float)
                      if "ips_ci" in ds else (np.nan, np.nan))
                n = int(ds["n_valued_samples"].sel(group=g, band=b))
                matched = (_null_cells(ds, "matched_null", g, dict(group=g, band=b))
                           if "matched_null_ips" in ds else {})
                rows.append({
                    "model": e.model, "dataset": e.dataset, "group": str(g), "band": b,
                    "ips": float(ds["ips"].sel(group=g, band=b)),
                    "ips_ci_low": float(ci[0]), "ips_ci_high": float(ci[1]),
                    "n_valued_samples": n,
                    "n_empty_pairs": int(ds["n_empty_pairs"].sel(group=g, band=b)),
                    "matched_null_ips": matched.get("null_ips", np.nan),
                    "matched_null_ci_low": matched.get("ci_low", np.nan),
                    "matched_null_ci_high": matched.get("ci_high", np.nan),
                    "ips_minus_matched_null": matched.get("ips_minus_null", np.nan),
                    "output_consistency": float(ds["output_consistency"].sel(group=g))
                    if "output_consistency" in ds else float("nan"),
                    "n_samples": int(ds["n_samples"]) if "n_samples" in ds else "",
                    "tau": float(ds.attrs["tau"]),
                    **{k: attr_text(e.attrs.get(k)) for k in MODEL_ATTRIBUTES},
                    "few_samples": n < MIN_RELIABLE_N, "weights": weights([e]),
                })
    return rows


def _null_cells(ds: xr.Dataset, name: str, group: str, where: dict) -> dict:
    """A null at `where` (band and its own coordinates): its IPS, interval and samples, and
    the mean per-sample IPS of `group` minus it over the samples valued in both (and how
    many)."""
    ci = ds[f"{name}_ips_ci"].sel(**where).values.astype(float)
    d = (ds["sample_ips"].sel(group=group, band=where["band"])
         - ds[f"sample_{name}_ips"].sel(**where)).values.astype(float)
    ok = np.isfinite(d)
    return {"null_ips": float(ds[f"{name}_ips"].sel(**where)), "ci_low": float(ci[0]),
            "ci_high": float(ci[1]), "n_valued_samples": int(ds[f"{name}_n_valued"].sel(**where)),
            "ips_minus_null": float(d[ok].mean()) if ok.any() else np.nan,
            "n_paired": int(ok.sum())}


def null_rows(entries: list[Entry]) -> list[dict]:
    """Every null beside IPS: one row per model, dataset, group, band and null (the Gaussian
    null at each level, the matched-size null; the precision null of each second dtype,
    main group only, with how far v moved)."""
    rows = []
    for e in entries:
        ds = e.ds
        for g in ds["group"].values:
            for b in BANDS:
                base = {"model": e.model, "dataset": e.dataset, "group": str(g), "band": b,
                        "ips": float(ds["ips"].sel(group=g, band=b)),
                        "tau": float(ds.attrs["tau"]), "weights": weights([e])}
                for c in ds["null_level"].values if "null_ips" in ds else ():
                    rows.append({**base, "null": "gaussian", "level": float(c),
                                 **_null_cells(ds, "null", g,
                                               dict(group=g, band=b, null_level=c))})
                if "matched_null_ips" in ds:
                    rows.append({**base, "null": "matched", "level": "",
                                 **_null_cells(ds, "matched_null", g, dict(group=g, band=b))})
                if "precision_null_ips" not in ds or g != MAIN_GROUP:
                    continue
                for d in ds["precision"].values:
                    stats = {k: float(ds[f"precision_{k}"].sel(precision=d))
                             for k in PRECISION_STATS}
                    rows.append({**base, "null": "precision", "level": str(d), **stats,
                                 "games": int(stats["games"]),
                                 **_null_cells(ds, "precision_null", g,
                                               dict(precision=d, band=b))})
    return rows


def factor_rows(factors: xr.Dataset, entries: Sequence[Entry] = ()) -> list[dict]:
    """Every comparison and band of the factors file; `entries` tell which models have
    random weights."""
    rows = []
    nan2 = np.full(2, np.nan)
    exact_max = json.loads(factors.attrs.get("test", "{}")).get("exact_max", EXACT_MAX)
    for i in range(factors.sizes.get("comparison", 0)):
        for b in BANDS:
            def ci(name):
                return (factors[name].sel(band=b).values[i].astype(float)
                        if name in factors else nan2)

            n = int(factors["n_tested"].sel(band=b).values[i]) if "n_tested" in factors else 0
            rows.append({
                "factor": str(factors["comparison_factor"].values[i]),
                "dataset": str(factors["comparison_dataset"].values[i]),
                "group": str(factors["comparison_group"].values[i]),
                **{k: str(factors[k].values[i]) for k in
                   ("model_a", "model_b", "setting_a", "setting_b", "templates")},
                "band": b,
                "ips_a": float(factors["ips_a"].sel(band=b).values[i]),
                "ips_a_ci_low": ci("ips_a_ci")[0], "ips_a_ci_high": ci("ips_a_ci")[1],
                "ips_b": float(factors["ips_b"].sel(band=b).values[i]),
                "ips_b_ci_low": ci("ips_b_ci")[0], "ips_b_ci_high": ci("ips_b_ci")[1],
                "delta_ips": float(factors["delta_ips"].sel(band=b).values[i]),
                "delta_ips_ci_low": ci("delta_ips_ci")[0],
                "delta_ips_ci_high": ci("delta_ips_ci")[1],
                "p_value": float(factors["p_value"].sel(band=b).values[i])
                if "p_value" in factors else float("nan"),
                "test": sign_flip_label(n, exact_max),
                "n_tested": n,
                "n_paired": int(factors["n_paired"].values[i]) if "n_paired" in factors else 0,
                "few_samples": n < MIN_RELIABLE_N,
                **{k: (float(factors[k].sel(band=b).values[i]) if k in factors else np.nan)
                   for k in ("null_a", "null_b", "delta_null", "excess", "p_excess")},
                "n_excess": int(factors["n_excess"].sel(band=b).values[i])
                if "n_excess" in factors else 0,
                "weights": weights(e for e in entries if e.model in (
                    str(factors["model_a"].values[i]), str(factors["model_b"].values[i]))),
            })
    return rows


def _dataset_weights(entries: Sequence[Entry], dataset: str) -> str:
    return weights(e for e in entries if e.dataset == dataset)


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
        sweep = (e.ds["ips_sweep"].sel(group=MAIN_GROUP).values.astype(float)
                 if MAIN_GROUP in e.ds["group"].values else np.full(taus.size, np.nan))
        rows.append({"model": e.model, "dataset": e.dataset, "group": MAIN_GROUP,
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


def write_table(entries: list[Entry], path: Path) -> None:
    write_csv(table_rows(entries), TABLE_COLUMNS, path)


# --------------------------------------------------------------------------------- case study
