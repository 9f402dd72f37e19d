"""Every figure, table and the README of `ips figures`, drawn into one directory
(`make_figures`); the tables are written by `ips.figures.tables.results`, the README by
`ips.figures.text.readme`.

Reads the metrics files of `ips metrics` (one per model and dataset) and the factors file of
`ips factors`, and writes a directory: every figure as PNG and PDF (`style.save`), the tables
and a README. What each file shows is its caption in `ips.figures.text.captions`; each figure
family is drawn by a module of its own (`sparsity`, `case_study`, `types`, `ranking`,
`factors`, `order`, `scale`, `shots`, `robustness`, `perturbation`, `representation`,
`nulls`); the appendix tables are computed by `appendix`.

The case-study figures need `ips.analysis.case_study` and `ips.figures.plots.case_study`; they are drawn
for every metrics file that holds a case (`case_sample` attribute, see `ips.formats.metrics`). The
directory is written next to its destination under a temporary name and renamed onto it
when complete, so a reader sees either the old or the new directory, never half of one.
Figures are drawn with matplotlib's object API on the Agg canvas (no display, no pyplot
state).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ips.analysis.uncertainty import DRAWS
from ips.comparisons.claims import verdicts
from ips.comparisons.claims.table import claims
from ips.errors import InputError
from ips.figures.numbers import random_note
from ips.figures.plots.factors import draw_factors
from ips.figures.plots.interaction_types import types_figure
from ips.figures.plots.nulls import nulls_figure
from ips.figures.plots.order import order_figure
from ips.figures.plots.overview import overview_figure
from ips.figures.plots.perturbation import perturbation_figure
from ips.figures.plots.ranking import consistency_figure, ranking_figure
from ips.figures.plots.representation import representation_figure
from ips.figures.plots.robustness import tau_figure
from ips.figures.plots.scale import scale_figure
from ips.figures.plots.shots import few_shot_band_figure, shot_curve_figure
from ips.figures.plots.sparsity import matching_figure, sparsity_figure
from ips.figures.style import banner
from ips.figures.tables.appendix import (
    MATCHED_COLUMNS,
    MODEL_COLUMNS,
    PERTURBATION_COLUMNS,
    REPRESENTATION_COLUMNS,
    matched_rows,
    model_rows,
    perturbation_rows,
    representation_rows,
)
from ips.figures.tables.results import (
    ACCURACY_COLUMNS,
    CONTROL_COLUMNS,
    FACTOR_COLUMNS,
    NULL_COLUMNS,
    PEER_COLUMNS,
    TAU_COLUMNS,
    TAU_PAIR_COLUMNS,
    accuracy_rows,
    control_rows,
    factor_rows,
    null_rows,
    peer_rows,
    tau_pair_rows,
    tau_rows,
    tau_table_columns,
    tau_table_rows,
    write_csv,
    write_table,
)
from ips.figures.text.captions import FIGURES, PERTURBATION_TABLES, TABLES, case_study_name
from ips.figures.text.paper_map import PAPER_MAP_COLUMNS, paper_map_rows
from ips.figures.text.readme import readme_text
from ips.formats.factors import FactorsFile, read_factors
from ips.formats.metrics import Entry, read_metrics, weights
from ips.interactions.sparse import UNRELIABLE_HELDOUT
from ips.outputs import atomic_dir
from ips.prompts.templates import PERTURBATION, ZERO_SHOT

log = logging.getLogger(__name__)

FILES = {**{f"{k}.png": c.text for k, c in FIGURES.items()},
         **{k: c.text for k, c in TABLES.items()}}
"""Files every run writes (each figure also as PDF), with what they show."""


def figure_files() -> list[str]:
    """The fixed figure files (PNG and PDF)."""
    return [f"{k}.{ext}" for k in FIGURES for ext in ("png", "pdf")]


def _case(ds, prefix: str, model: str, tau: float):
    """The `ips.analysis.case_study.CaseStudy` stored under `prefix` in a metrics file."""
    # local: the submodule ips.figures.plots.case_study would shadow a package-level name
    from ips.analysis.case_study import case_study

    a, norm = ds.attrs, ds[f"{prefix}_norm"]
    case = case_study(
        norm.sel({f"{prefix}_side": "a"}).values, norm.sel({f"{prefix}_side": "b"}).values,
        [str(w) for w in ds[f"{prefix}_words"].values], a[f"{prefix}_pred_a"],
        a[f"{prefix}_pred_b"], tau, model=model, sample=str(a[f"{prefix}_sample"]),
        templates=(str(a[f"{prefix}_condition_a"]), str(a[f"{prefix}_condition_b"])),
        gold=a.get(f"{prefix}_gold") or None,
        sets=ds[f"{prefix}_set"].values if f"{prefix}_set" in ds.dims else None,
    )
    if "heldout_error" in ds and ds[f"{prefix}_mask"].size < 1 << case.n:  # an estimate
        games = dict(sample=a[f"{prefix}_sample"],
                     condition=[a[f"{prefix}_condition_a"], a[f"{prefix}_condition_b"]])
        case.sparse = {"masks": int(ds[f"{prefix}_mask"].size),
                       "heldout_error": ds["heldout_error"].sel(**games).values.tolist(),
                       "threshold": UNRELIABLE_HELDOUT,
                       "reliable": bool(ds["reliable"].sel(**games).all())}
    return case


def case_study_figures(entries: list[Entry], tau: float, out: Path) -> list[str]:
    """One case-study figure per metrics file that holds a case
    (`ips.analysis.case_study.case_study` drawn by `ips.figures.plots.case_study`): a sample whose
    prediction changed and one whose prediction stayed (Fig. 3a), or a note where there is
    none of one kind."""
    from ips.analysis.case_study import SAME
    from ips.figures.plots.case_study import case_study_figure

    names = []
    for e in entries:
        ds = e.ds
        if not ds.attrs.get("case_sample") or "case_norm" not in ds:
            log.info("%s: no case-study sample (no valued template pair)", e.path)
            continue
        case = _case(ds, "case", e.model, tau)
        same = _case(ds, SAME, e.model, tau) if f"{SAME}_norm" in ds else None
        if not case.prediction_changed:  # no valued pair changed its prediction
            cases = [NO_CHANGED_CASE, case]
        else:
            cases = [case, same or NO_UNCHANGED_CASE]
        name = case_study_name(e.model, e.dataset)
        for p in case_study_figure(cases, out / f"{name}.png", title=f"{e.model} · {e.dataset}"):
            names.append(Path(p).name)
    return names


#: what a case-study panel says where a run has no sample of its kind
NO_CHANGED_CASE = ("prediction changed: no sample's prediction changed under any valued "
                   "template pair")
NO_UNCHANGED_CASE = ("prediction unchanged: every valued template pair changed its sample's "
                     "prediction")


def draw_all(entries: list[Entry], factors: FactorsFile, tau: float, out: Path,
             hypotheses: Sequence[dict] = ()) -> list[str]:
    """Draw every figure and write the tables into the existing directory `out`; when a
    model has random weights, every figure carries `random_note` above its title.
    `hypotheses`: the config's confirmatory family (`ips.comparisons.claims.correction`)."""
    out = Path(out)
    with banner(random_note(entries)):
        cases = _draw_figures(entries, factors, tau, out)
    test = json.loads(factors.ds.attrs.get("test", "{}") or "{}")
    draws, seed = int(test.get("draws", DRAWS)), int(test.get("seed", 0))
    perturbation = perturbation_rows(entries, draws, seed)
    matched = matched_rows(entries, draws, seed)
    write_table(entries, out / "ips_table.csv")
    write_csv(null_rows(entries), NULL_COLUMNS, out / "null_table.csv")
    write_csv(peer_rows(entries), PEER_COLUMNS, out / "peer_table.csv")
    write_csv(accuracy_rows(entries), ACCURACY_COLUMNS, out / "accuracy_table.csv")
    write_csv(control_rows(entries), CONTROL_COLUMNS, out / "control_table.csv")
    write_csv(factor_rows(factors.ds, entries), FACTOR_COLUMNS, out / "factors_table.csv")
    write_csv(tau_rows(factors.tau, entries), TAU_COLUMNS, out / "tau_robustness.csv")
    write_csv(tau_pair_rows(factors.ds, entries), TAU_PAIR_COLUMNS, out / "tau_pairs.csv")
    write_csv(tau_table_rows(entries), tau_table_columns(entries), out / "tau_table.csv")
    write_csv(model_rows(entries), MODEL_COLUMNS, out / "models_table.csv")
    for name, arch in PERTURBATION_TABLES.items():
        write_csv([r for r in perturbation if r["architecture"] == arch], PERTURBATION_COLUMNS,
                  out / name)
    write_csv(representation_rows(entries, factors), REPRESENTATION_COLUMNS,
              out / "representation_pairs.csv")
    write_csv(matched, MATCHED_COLUMNS, out / "moe_matched.csv")
    rows = claims(entries, factors.ds, draws=draws, seed=seed, perturbation=perturbation,
                  matched=matched, hypotheses=hypotheses)
    write_csv([r.row() for r in rows], verdicts.COLUMNS, out / "claims.csv")
    paper_map = paper_map_rows([*figure_files(), *cases, *TABLES], weights(entries))
    write_csv(paper_map, PAPER_MAP_COLUMNS, out / "paper_map.csv")
    (out / "README.md").write_text(readme_text(entries, factors, tau, cases, rows, paper_map),
                                   encoding="utf-8")
    return [*figure_files(), *cases, *TABLES, "README.md"]


def _draw_figures(entries: list[Entry], factors: FactorsFile, tau: float,
                  out: Path) -> list[str]:
    """Every figure of `FIGURES` and the case studies (whose names it returns)."""
    overview_figure(entries, tau, out / "overview.png")
    sparsity_figure(entries, tau, out / "sparsity.png")
    matching_figure(entries, out / "universal_matching.png")
    types_figure(entries, tau, out / "interaction_types.png")
    ranking_figure(entries, tau, out / "ips_ranking.png")
    consistency_figure(entries, tau, out / "ips_vs_consistency.png")
    draw_factors(factors, tau, out)
    order_figure(entries, tau, out / "ips_by_order.png")
    order_figure(entries, tau, out / "perturbation_group_by_order.png", PERTURBATION)
    scale_figure(entries, ZERO_SHOT, tau, out / "scale_by_order.png",
                 "IPS by order band across model sizes (0-shot templates)")
    scale_figure(entries, PERTURBATION, tau, out / "perturbation_group_scale_by_order.png",
                 f"IPS by order band across model sizes ({PERTURBATION} group)")
    scale_figure(entries, ZERO_SHOT, tau, out / "ips_by_scale.png",
                 "IPS across model sizes (0-shot templates)", bands=("all",))
    shot_curve_figure(factors, tau, out / "few_shot_curve.png")
    few_shot_band_figure(factors, tau, out / "few_shot_by_order.png")
    tau_figure(entries, factors.tau, tau, out / "tau_robustness.png")
    perturbation_figure(entries, tau, out / "perturbation_types.png")
    representation_figure(entries, tau, out / "representation_baseline.png")
    nulls_figure(entries, tau, out / "nulls.png")
    return case_study_figures(entries, tau, out)


def make_figures(metrics_paths: Sequence[str | os.PathLike], factors_path: str | os.PathLike,
                 out: str | os.PathLike, hypotheses: Sequence[dict] = ()) -> list[str]:
    """Write the figures, the tables and the README into the directory `out`; return the
    file names. Intervals computed here (Appendix G means) use the bootstrap settings
    recorded in each metrics file, so they match the tables'. `hypotheses`: the config's
    (claims.csv's `holm_p`)."""
    if not metrics_paths:
        raise InputError("no metrics files given")
    entries = [read_metrics(p) for p in metrics_paths]
    factors = read_factors(factors_path)
    tau = float(factors.ds.attrs.get("tau", entries[0].ds.attrs["tau"]))
    for e in entries:
        if not np.isclose(float(e.ds.attrs["tau"]), tau):
            raise InputError(f"{e.path}: computed at τ = {e.ds.attrs['tau']}, but "
                             f"{factors_path} at τ = {tau}")
    with atomic_dir(out) as tmp:
        names = draw_all(entries, factors, tau, tmp, hypotheses)
    return names
