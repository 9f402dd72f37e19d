"""Figures, tidy tables and a README of the results (`ips figures`).

Reads the metrics files of `ips metrics` (one per model and dataset) and the factors file of
`ips factors`, and writes a directory: every figure as PNG and PDF (`style.save`), the tables
and a README. What each file shows is its caption in `ips.figures.captions`; each figure
family is drawn by a module of its own (`sparsity`, `case_study`, `types`, `ranking`,
`factors`, `order`, `robustness`, `perturbation`, `representation`, `nulls`).

The case-study figures need `ips.case_study` and `ips.figures.case_study`; they are drawn for
every metrics file that holds a case (`case_sample` attribute, see `ips.summary`). The
directory is written next to its destination under a temporary name and renamed onto it
when complete, so a reader sees either the old or the new directory, never half of one.
Figures are drawn with matplotlib's object API on the Agg canvas (no display, no pyplot
state).
"""

from __future__ import annotations

import csv
import json
import logging
import os
from dataclasses import asdict
from pathlib import Path
from typing import Sequence

import numpy as np
import xarray as xr

from ips import __version__, claims
from ips.config import MODEL_ATTRIBUTES
from ips.errors import InputError
from ips.factors import FACTORS
from ips.metrics_file import Entry, read_metrics
from ips.figures.captions import (CASE_STUDY, CASE_STUDY_CAPTION, FIGURES, TABLES,
                                  case_study_name)
from ips.figures.common import (FACTOR_TITLES, MAIN_GROUP, absent_factors, datasets_of,
                                robustness_text)
from ips.figures.factors import factor_figure, factors_figure
from ips.figures.nulls import nulls_figure
from ips.figures.order import order_figure
from ips.figures.perturbation import perturbation_figure
from ips.figures.ranking import consistency_figure, ranking_figure
from ips.figures.representation import representation_figure
from ips.figures.robustness import tau_figure
from ips.figures.sparsity import matching_figure, sparsity_figure
from ips.figures.style import DPI, MIN_WIDTH  # noqa: F401  (re-exported)
from ips.figures.types import types_figure
from ips.files import atomic_dir, read_dataset
from ips.sparse import UNRELIABLE_HELDOUT
from ips.summary import BANDS
from ips.uncertainty import DRAWS, EXACT_MAX, MIN_RELIABLE_N, sign_flip_label

log = logging.getLogger(__name__)

FILES = {**{f"{k}.png": c.text for k, c in FIGURES.items()},
         **{k: c.text for k, c in TABLES.items()}}
"""Files every run writes (each figure also as PDF), with what they show."""


def figure_files() -> list[str]:
    """The fixed figure files (PNG and PDF)."""
    return [f"{k}.{ext}" for k in FIGURES for ext in ("png", "pdf")]


# --------------------------------------------------------------------------------- tables


TABLE_COLUMNS = ("model", "dataset", "group", "band", "ips", "ips_ci_low", "ips_ci_high",
                 "n_valued_samples", "n_empty_pairs", "matched_null_ips", "matched_null_ci_low",
                 "matched_null_ci_high", "ips_minus_matched_null", "output_consistency",
                 "n_samples", "tau", *MODEL_ATTRIBUTES, "few_samples")
NULL_COLUMNS = ("model", "dataset", "group", "band", "null", "level", "null_ips", "ci_low",
                "ci_high", "n_valued_samples", "ips", "ips_minus_null", "n_paired", "tau",
                "max_abs_dv", "median_abs_dv", "dv_rel", "jaccard", "games")
#: what a precision null row adds (`ips.summary`: precision_{name} per precision)
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


def tau_rows(factors: xr.Dataset) -> list[dict]:
    return [{"dataset": str(d),
             "tau_spearman": float(factors["tau_spearman"].sel(dataset=d)),
             "tau_pearson": float(factors["tau_pearson"].sel(dataset=d)),
             "tau_n_models": int(factors["tau_n_models"].sel(dataset=d)),
             "tau_note": str(factors["tau_note"].sel(dataset=d).item())}
            for d in factors["dataset"].values]


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


def case_study_figures(entries: list[Entry], tau: float, out: Path) -> list[str]:
    """One case-study figure per metrics file that holds a case (`ips.case_study.case_study`
    drawn by `ips.figures.case_study`)."""
    # local: the submodule ips.figures.case_study would shadow a package-level name
    from ips.case_study import case_study
    from ips.figures.case_study import case_study_figure

    names = []
    for e in entries:
        ds = e.ds
        if not ds.attrs.get("case_sample") or "case_norm" not in ds:
            log.info("%s: no case-study sample (no valued template pair)", e.path)
            continue
        a = ds.attrs
        case = case_study(
            ds["case_norm"].sel(case_side="a").values, ds["case_norm"].sel(case_side="b").values,
            [str(w) for w in ds["case_words"].values], a["case_pred_a"], a["case_pred_b"], tau,
            model=e.model, sample=str(a["case_sample"]),
            templates=(str(a["case_condition_a"]), str(a["case_condition_b"])),
            gold=a.get("case_gold") or None,
            sets=ds["case_set"].values if "case_set" in ds.dims else None,
        )
        if "heldout_error" in ds and ds["case_mask"].size < 1 << case.n:  # an estimate
            games = dict(sample=a["case_sample"],
                         condition=[a["case_condition_a"], a["case_condition_b"]])
            case.sparse = {"masks": int(ds["case_mask"].size),
                           "heldout_error": ds["heldout_error"].sel(**games).values.tolist(),
                           "threshold": UNRELIABLE_HELDOUT,
                           "reliable": bool(ds["reliable"].sel(**games).all())}
        name = case_study_name(e.model, e.dataset)
        for p in case_study_figure(case, out / f"{name}.png"):
            names.append(Path(p).name)
    return names


# --------------------------------------------------------------------------------- README


def readme(entries: list[Entry], factors: xr.Dataset, tau: float,
           case_names: Sequence[str] = (), rows: Sequence[claims.Claim] = ()) -> str:
    datasets = datasets_of(entries)
    models = list(dict.fromkeys(e.model for e in entries))
    lines = [
        "# IPS results",
        "",
        f"Interaction-based prompt sensitivity at τ = {tau:g} of {len(models)} model(s) on "
        f"{len(datasets)} dataset(s), written by `ips figures` (ips {__version__}).",
        "",
        f"- Models: {', '.join(models)}",
        f"- Datasets: {', '.join(datasets)}",
        "",
        "## Files",
        "",
        "Every figure is written as PNG and PDF. Intervals are 95% percentile-bootstrap "
        "intervals over samples; factor comparisons and the order of the bands are tested "
        "with a paired sign-flip permutation test over sample ids (exact up to "
        f"{EXACT_MAX} samples, else Monte Carlo; the order bands Holm-adjusted; "
        f"`ips.uncertainty`). Numbers from fewer than {MIN_RELIABLE_N} samples are flagged "
        "(`few_samples`, hatched bars, open markers): read them as indications only.",
        "",
    ]
    lines += [f"- `{name}.png`: {c.text}." for name, c in FIGURES.items()]
    pngs = [n for n in case_names if n.endswith(".png")]
    if pngs:
        lines.append(f"- `{CASE_STUDY}.png` ({', '.join(f'`{n}`' for n in pngs)}): "
                     f"{CASE_STUDY_CAPTION.text}.")
    else:
        lines.append(f"- `{CASE_STUDY}.png`: not drawn in this run (no case or no drawing "
                     "code).")
    lines += [f"- `{name}`: {c.text}." for name, c in TABLES.items()]
    lines += sparse_section(entries)
    lines += null_section(entries)
    lines += ["", "## Factors", ""]
    for f, text in zip(factors["factor"].values, factors["factor_note"].values):
        lines.append(f"- {FACTOR_TITLES.get(str(f), str(f))} (`{f}`): {text}")
    absent = absent_factors(factors)
    if absent:
        lines += ["", "Absent factors: " + ", ".join(f"`{f}`" for f in absent)
                  + ". Their `factor_<name>` figure names the reason; they are not drawn in "
                  "`factors.png`."]
    lines += ["", "## τ robustness", ""]
    for d in datasets:
        lines.append(f"- {d}: {robustness_text(factors, d)}"
                     + (f"; {factors['tau_note'].sel(dataset=d).item()}"
                        if d in factors["dataset"].values
                        and factors["tau_note"].sel(dataset=d).item() else ""))
    lines += claims_section(rows)
    lines += ["", "Metrics files: " + ", ".join(f"`{e.path}`" for e in entries), ""]
    return "\n".join(lines)


def _cell_text(x: float, fmt: str = ".3f") -> str:
    """A number of a README table, "–" where it has no value."""
    return "–" if not np.isfinite(x) else format(x, fmt)


def null_section(entries: list[Entry]) -> list[str]:
    """IPS beside its nulls per model and dataset (main group, band all; `ips.nulls`)."""
    rows = [r for r in null_rows(entries) if r["group"] == MAIN_GROUP and r["band"] == "all"]
    if not rows:
        return []

    levels = sorted({r["level"] for r in rows if r["null"] == "gaussian"})
    lines = ["", "## IPS beside its nulls", "",
             f"{MAIN_GROUP}, band all. Gaussian null at c: IPS of each game against its own fit "
             "after noise of c × (max v − min v) on every value; matched-size null: IPS of "
             "noise of the size of each template pair's own change (docs/method.md#nulls in "
             "the project). An IPS near its matched-size null says no more than how much the "
             "template changed v.", "",
             "| model | dataset | IPS | " + " | ".join(f"null c = {c:g}" for c in levels)
             + " | matched-size null | IPS − matched (n) |",
             "|---|---|---|" + "---|" * len(levels) + "---|---|"]
    for (model, dataset) in dict.fromkeys((r["model"], r["dataset"]) for r in rows
                                          if r["null"] != "precision"):
        mine = [r for r in rows if (r["model"], r["dataset"]) == (model, dataset)]
        gauss = {r["level"]: r["null_ips"] for r in mine if r["null"] == "gaussian"}
        matched = next((r for r in mine if r["null"] == "matched"), None)
        diff = (f"{_cell_text(matched['ips_minus_null'])} ({matched['n_paired']})" if matched
                else "–")
        lines.append(f"| {model} | {dataset} | {_cell_text(mine[0]['ips'])} | "
                     + " | ".join(_cell_text(gauss.get(c, np.nan)) for c in levels)
                     + f" | {_cell_text(matched['null_ips']) if matched else '–'} | {diff} |")
    return lines + precision_section(rows)


def precision_section(rows: list[dict]) -> list[str]:
    """The precision null per model, dataset and second dtype (main group, band all)."""
    rows = [r for r in rows if r["null"] == "precision"]
    if not rows:
        return []

    lines = ["", "### Precision null", "",
             "The same prompts scored again in another precision, each game's two fits scored "
             "as a template pair (docs/method.md#precision in the project): what rounding "
             "alone gives. Δv: the second precision's v minus this run's, over every mask of "
             "the games scored again.", "",
             "| model | dataset | dtype | games | max \\|Δv\\| (median) | sd(Δv) / range, "
             "median | salient-set Jaccard | precision null [95% CI] (n) | IPS | "
             "IPS − null (n) |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['model']} | {r['dataset']} | {r['level']} | {r['games']} | "
            f"{_cell_text(r['max_abs_dv'], '.3g')} ({_cell_text(r['median_abs_dv'], '.2g')}) | "
            f"{_cell_text(r['dv_rel'], '.1%')} | {_cell_text(r['jaccard'], '.2f')} | "
            f"{_cell_text(r['null_ips'])} [{_cell_text(r['ci_low'])}, "
            f"{_cell_text(r['ci_high'])}] ({r['n_valued_samples']}) | "
            f"{_cell_text(r['ips'])} | {_cell_text(r['ips_minus_null'])} ({r['n_paired']}) |")
    return lines


def sparse_section(entries: list[Entry]) -> list[str]:
    """How far the numbers of sparsely sampled metrics files can be trusted (`ips.sparse`)."""
    lines = []
    for e in entries:
        a = e.ds.attrs
        if a.get("sampling") != "sparse":
            continue
        errors = e.ds["heldout_error"].values
        measured = errors[np.isfinite(errors)]
        spread = (f" (median {np.median(measured):.1%}, max "
                  f"{measured.max():.1%})" if measured.size else "")
        lines.append(
            f"- {e.model} on {e.dataset}: {a['budget']} masks per prompt, mean n = "
            f"{float(e.ds['n_vars_mean']):.1f}; {a['unreliable_games']} of {a['games']} games "
            f"UNRELIABLE, held-out error above {UNRELIABLE_HELDOUT:.0%}{spread}.")
    if not lines:
        return []
    return ["", "## Sparse estimates", "",
            "These metrics come from sparse sampling: the interactions of a prompt whose 2^n "
            "masks exceed the budget are estimated from a design of masks, not fitted to all "
            "of them (docs/method.md#sparse-estimation). A game whose held-out error is above "
            "the threshold has an IPS, bands, types and case study that are estimates of "
            "unknown accuracy; the measured accuracy on real games is in "
            "docs/benchmarks.md#sparse-estimation.", "", *lines]


def claims_section(rows: Sequence[claims.Claim]) -> list[str]:
    """The README section of the claims: verdict counts, each claim's statement, the table."""
    counts = claims.summary(rows)
    lines = ["", "## The paper's claims on these models", "",
             f"`claims.csv`; verdicts at α = {claims.ALPHA:g} (`ips.claims`): directional "
             "claims by a paired sign-flip test, level claims by whether the 95% interval lies "
             "inside the paper's range. `undecided` means these samples cannot tell; it is not "
             "evidence against the paper.", ""]
    statements = dict((r.claim, r.paper) for r in rows)
    for claim, c in counts.items():
        told = ", ".join(f"{k} {v}" for k, v in c.items() if v)
        lines.append(f"- `{claim}` ({told}): {statements[claim]}")
    return [*lines, "", *claims.markdown(rows)]


# --------------------------------------------------------------------------------- driver


def _read_factors(path: Path) -> xr.Dataset:
    return read_dataset(path, "factors",
                        ("factor_present", "factor_note", "delta_ips_mean", "tau_spearman"),
                        "ips factors")


def draw_all(entries: list[Entry], factors: xr.Dataset, tau: float, out: Path) -> list[str]:
    """Draw every figure and write the tables into the existing directory `out`."""
    out = Path(out)
    sparsity_figure(entries, tau, out / "sparsity.png")
    matching_figure(entries, out / "universal_matching.png")
    types_figure(entries, tau, out / "interaction_types.png")
    ranking_figure(entries, tau, out / "ips_ranking.png")
    consistency_figure(entries, tau, out / "ips_vs_consistency.png")
    for f in FACTORS:
        factor_figure(factors, f, tau, out / f"factor_{f}.png")
    order_figure(entries, tau, out / "ips_by_order.png")
    factors_figure(factors, tau, out / "factors.png")
    tau_figure(entries, factors, tau, out / "tau_robustness.png")
    perturbation_figure(entries, tau, out / "perturbation_types.png")
    representation_figure(entries, tau, out / "representation_baseline.png")
    nulls_figure(entries, tau, out / "nulls.png")
    cases = case_study_figures(entries, tau, out)
    write_table(entries, out / "ips_table.csv")
    write_csv(null_rows(entries), NULL_COLUMNS, out / "null_table.csv")
    write_csv(factor_rows(factors), FACTOR_COLUMNS, out / "factors_table.csv")
    write_csv(tau_rows(factors), TAU_COLUMNS, out / "tau_robustness.csv")
    test = json.loads(factors.attrs.get("test", "{}") or "{}")
    rows = claims.claims(entries, factors, draws=int(test.get("draws", DRAWS)),
                         seed=int(test.get("seed", 0)))
    write_csv([asdict(r) for r in rows], claims.COLUMNS, out / "claims.csv")
    (out / "README.md").write_text(readme(entries, factors, tau, cases, rows),
                                   encoding="utf-8")
    return [*figure_files(), *cases, *TABLES, "README.md"]


def make_figures(metrics_paths: Sequence[str | os.PathLike], factors_path: str | os.PathLike,
                 out: str | os.PathLike) -> list[str]:
    """Write the figures, the tables and the README into the directory `out`; return the
    file names. Intervals computed here (Appendix G means) use the bootstrap settings
    recorded in each metrics file, so they match the tables'."""
    if not metrics_paths:
        raise InputError("no metrics files given")
    entries = [read_metrics(p) for p in metrics_paths]
    factors = _read_factors(Path(factors_path))
    tau = float(factors.attrs.get("tau", entries[0].ds.attrs["tau"]))
    for e in entries:
        if not np.isclose(float(e.ds.attrs["tau"]), tau):
            raise InputError(f"{e.path}: computed at τ = {e.ds.attrs['tau']}, but "
                             f"{factors_path} at τ = {tau}")
    with atomic_dir(out) as tmp:
        names = draw_all(entries, factors, tau, tmp)
    return names


__all__ = ["FIGURES", "TABLES", "FILES", "CASE_STUDY", "MAIN_GROUP", "TABLE_COLUMNS",
           "NULL_COLUMNS", "FACTOR_COLUMNS", "TAU_COLUMNS", "make_figures", "draw_all", "figure_files",
           "case_study_name"]
