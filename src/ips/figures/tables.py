"""The tables of `ips figures` as CSV: IPS beside its matched-size null per (model, dataset,
group, band) (`ips_table.csv`), every null (`null_table.csv`), the factor comparisons
(`factors_table.csv`) and τ robustness (`tau_robustness.csv`); the columns in the order
written, what each holds in `ips.figures.captions`."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Sequence

import numpy as np
import xarray as xr

from ips.config import MODEL_ATTRIBUTES
from ips.factors import TauRobustness
from ips.metrics_file import Entry
from ips.figures.common import MAIN_GROUP
from ips.metrics_file import BANDS
from ips.uncertainty import EXACT_MAX, MIN_RELIABLE_N, sign_flip_label


TABLE_COLUMNS = ("model", "dataset", "group", "band", "ips", "ips_ci_low", "ips_ci_high",
                 "n_valued_samples", "n_empty_pairs", "matched_null_ips", "matched_null_ci_low",
                 "matched_null_ci_high", "ips_minus_matched_null", "output_consistency",
                 "n_samples", "tau", *MODEL_ATTRIBUTES, "few_samples")
NULL_COLUMNS = ("model", "dataset", "group", "band", "null", "level", "null_ips", "ci_low",
                "ci_high", "n_valued_samples", "ips", "ips_minus_null", "n_paired", "tau",
                "max_abs_dv", "median_abs_dv", "dv_rel", "jaccard", "games")
#: what a precision null row adds (`ips.metrics_file`: precision_{name} per precision)
PRECISION_STATS = ("max_abs_dv", "median_abs_dv", "dv_rel", "jaccard", "games")
FACTOR_COLUMNS = ("factor", "dataset", "group", "model_a", "model_b", "setting_a", "setting_b",
                  "templates", "band", "ips_a", "ips_a_ci_low", "ips_a_ci_high", "ips_b",
                  "ips_b_ci_low", "ips_b_ci_high", "delta_ips", "delta_ips_ci_low",
                  "delta_ips_ci_high", "p_value", "test", "n_tested", "n_paired", "few_samples",
                  "null_a", "null_b", "delta_null", "excess", "p_excess", "n_excess")
TAU_COLUMNS = ("dataset", "tau_spearman", "tau_pearson", "tau_n_models", "tau_note")


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
                    **{k: _attr_text(e.attrs.get(k)) for k in MODEL_ATTRIBUTES},
                    "few_samples": n < MIN_RELIABLE_N,
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
                        "tau": float(ds.attrs["tau"])}
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


def factor_rows(factors: xr.Dataset) -> list[dict]:
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
            })
    return rows


def tau_rows(robustness: dict[str, TauRobustness]) -> list[dict]:
    return [{"dataset": r.dataset, "tau_spearman": r.spearman, "tau_pearson": r.pearson,
             "tau_n_models": r.n_models, "tau_note": r.note} for r in robustness.values()]


def _attr_text(x) -> str:
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
