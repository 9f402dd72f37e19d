"""The README of a figures directory (`ips figures`): what each file shows, τ, the models and
datasets, absent factors, IPS beside its nulls and its ceiling and beside what other tools
report, the precision and baseline nulls, the sparse estimates and the claims table."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ips import __version__
from ips.analysis.nulls import SATURATED, saturation
from ips.analysis.uncertainty import EXACT_MAX, MIN_RELIABLE_N
from ips.comparisons.claims import verdicts
from ips.comparisons.claims.table import claims_markdown, claims_summary
from ips.figures.numbers import datasets_of, random_note, robustness_text
from ips.figures.tables.results import accuracy_rows, control_rows, null_rows, peer_rows
from ips.figures.text.captions import (
    CASE_STUDY,
    CASE_STUDY_CAPTION,
    FACTOR_TITLES,
    FIGURES,
    TABLES,
    case_study_name,
)
from ips.figures.text.paper_map import paper_map_markdown
from ips.formats.factors import FactorsFile
from ips.formats.metrics import WEIGHTS, Entry
from ips.interactions.sparse import UNRELIABLE_HELDOUT
from ips.nulls import variant, variants
from ips.prompts.templates import ZERO_SHOT


def readme_text(entries: list[Entry], factors: FactorsFile, tau: float,
                case_names: Sequence[str] = (), rows: Sequence[verdicts.Claim] = (),
                paper_map: Sequence[dict] = ()) -> str:
    datasets = datasets_of(entries)
    models = list(dict.fromkeys(e.model for e in entries))
    warning = random_note(entries)
    lines = [
        *([f"**{warning[0].upper()}{warning[1:]}.** Their weights were drawn at random "
           "(`source: random`), not trained: every figure says so above its title and every "
           "table row resting on them has `weights` = `random`.", ""] if warning else []),
        "# IPS results",
        "",
        f"Interaction-based prompt sensitivity at τ = {tau:g} of {len(models)} model(s) on "
        f"{len(datasets)} dataset(s), written by `ips figures` (ips {__version__}).",
        "",
        *models_lines(entries),
        f"- Datasets: {', '.join(datasets)}",
        "",
        "## Files",
        "",
        "Every figure is written as PNG and PDF. Intervals of a level (an IPS, a null, a "
        "share) are 95% percentile-bootstrap intervals over samples; factor comparisons and "
        "the order of the bands are tested with a paired sign-flip permutation test over "
        f"sample ids (exact up to {EXACT_MAX} samples, else Monte Carlo; the order bands "
        "Holm-adjusted; `ips.analysis.uncertainty`), and the interval of a tested effect "
        "(ΔIPS, a difference of the claims table) is the set of effects that test does not "
        "reject, so the two agree about 0. Numbers from fewer than "
        f"{MIN_RELIABLE_N} samples are "
        "flagged "
        "(`few_samples`, hatched bars, open markers): read them as indications only. Every "
        "table ends in `weights`: `random` where a model the row rests on has random weights "
        "(its numbers measure nothing about an LLM), else `trained`.",
        "",
    ]
    lines += [f"- `{name}.png`: {c.text}." for name, c in FIGURES.items()]
    pngs = [n for n in case_names if n.endswith(".png")]
    if pngs:
        lines.append(f"- `{CASE_STUDY}.png` ({len(pngs)} figures, listed under *Case "
                     f"studies*): {CASE_STUDY_CAPTION.text}.")
    else:
        lines.append(f"- `{CASE_STUDY}.png`: not drawn in this run (no case or no drawing "
                     "code).")
    lines += [f"- `{name}`: {c.text}." for name, c in TABLES.items()]
    lines += paper_map_markdown(paper_map) if paper_map else []
    lines += sparse_section(entries)
    lines += null_section(entries)
    lines += control_section(entries)
    lines += peer_section(entries)
    lines += accuracy_section(entries)
    lines += ["", "## Factors", ""]
    for f, text in factors.notes.items():
        lines.append(f"- {FACTOR_TITLES.get(f, f)} (`{f}`): {text}")
    if factors.absent:
        lines += ["", "Absent factors: " + ", ".join(f"`{f}`" for f in factors.absent)
                  + ". Their `factor_<name>` figure names the reason; they are not drawn in "
                  "`factors.png`."]
    lines += ["", "## τ robustness", ""]
    for d in datasets:
        note = factors.tau[d].note if d in factors.tau else ""
        lines.append(f"- {d}: {robustness_text(factors.tau, d)}" + (f"; {note}" if note else ""))
    lines += case_section(entries, pngs)
    lines += claims_section(rows, warning)
    lines += ["", *metrics_lines(entries), ""]
    return "\n".join(lines)


MAX_LIST = 8
"""Beyond this many items the README gives a table instead of a list in one line."""


def models_lines(entries: list[Entry]) -> list[str]:
    """The models in one line, or beyond MAX_LIST a table of them by family and series."""
    models = list(dict.fromkeys(e.model for e in entries))
    if len(models) <= MAX_LIST:
        return [f"- Models: {', '.join(models)}"]
    attrs = {e.model: e.attrs for e in entries}
    by = {}
    for m in sorted(models, key=lambda m: (attrs[m].get("family", ""),
                                           attrs[m].get("series", ""),
                                           attrs[m].get("params", 0), m)):
        by.setdefault((attrs[m].get("family", "?"), attrs[m].get("series", "?")), []).append(m)
    return [f"- Models: {len(models)}, by family and series:", "",
            "| family | series | models |", "|---|---|---|",
            *(f"| {f} | {s} | {', '.join(ms)} |" for (f, s), ms in by.items()), ""]


def case_section(entries: list[Entry], pngs: Sequence[str]) -> list[str]:
    """The case-study figures: a table of models by dataset (one file per cell), so that
    150 of them can be found without a wall of names."""
    if not pngs:
        return []
    datasets = datasets_of(entries)
    have = set(pngs)
    models = list(dict.fromkeys(e.model for e in entries))
    lines = ["", "## Case studies", "",
             f"One figure per model and dataset with a case: `case_study_<model>_<dataset>.png` "
             f"(and `.pdf`), {len(pngs)} in all; ✓ where it was drawn.", "",
             "| model | " + " | ".join(datasets) + " |", "|---|" + "---|" * len(datasets)]
    for m in models:
        cells = ["✓" if f"{case_study_name(m, d)}.png" in have else "–" for d in datasets]
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    return lines


def metrics_lines(entries: list[Entry]) -> list[str]:
    """The metrics files read: listed up to MAX_LIST, else their count and common folder."""
    paths = [str(e.path) for e in entries]
    if len(paths) <= MAX_LIST:
        return ["Metrics files: " + ", ".join(f"`{p}`" for p in paths)]
    import os

    common = os.path.commonpath(paths) if len(paths) > 1 else os.path.dirname(paths[0])
    return [f"Metrics files: {len(paths)} under `{common}` (`<model>/<dataset>.nc`)."]


def _cell_text(x: float, fmt: str = ".3f") -> str:
    """A number of a README table, "–" where it has no value."""
    return "–" if not np.isfinite(x) else format(x, fmt)


def null_section(entries: list[Entry]) -> list[str]:
    """IPS beside its nulls per model and dataset (main group, band all; `ips.analysis.nulls`),
    then each variant in every group that has it."""
    every = [r for r in null_rows(entries) if r["band"] == "all"]
    rows = [r for r in every if r["group"] == ZERO_SHOT]
    if not rows:
        return []

    levels = sorted({r["level"] for r in rows if r["null"] == "gaussian"})
    lines = ["", "## IPS beside its nulls", "",
             f"{ZERO_SHOT}, band all. Gaussian null at c: IPS of each game against its own fit "
             "after noise of c × (max v − min v) on every value; matched-size null: IPS of "
             "noise of the size of each template pair's own change, less the part of it an "
             "affine map a·v + b (a ≥ 0) carries, which IPS cannot see; ceiling: IPS of "
             "unrelated games, each sample's template T against template T̂ of other samples "
             "with as many variables (docs/method.md#nulls in the project). An IPS near its "
             "matched-size null says no more than how much the template changed v beyond a "
             "rescaling; an IPS near its ceiling, that the two templates' salient interactions "
             f"are as different as two unrelated samples' (saturated: at {SATURATED:g} of it "
             "or above; a claim resting on it says so).", "",
             "| model | dataset | IPS | " + " | ".join(f"null c = {c:g}" for c in levels)
             + " | matched-size null | IPS − matched (n) | ceiling | IPS / ceiling |",
             "|---|---|---|" + "---|" * len(levels) + "---|---|---|---|"]
    for (model, dataset) in dict.fromkeys((r["model"], r["dataset"]) for r in rows
                                          if r["null"] not in {v.kind for v in variants()}):
        mine = [r for r in rows if (r["model"], r["dataset"]) == (model, dataset)]
        gauss = {r["level"]: r["null_ips"] for r in mine if r["null"] == "gaussian"}
        matched, top = (next((r for r in mine if r["null"] == kind), None)
                        for kind in ("matched", "ceiling"))
        diff = (f"{_cell_text(matched['ips_minus_null'])} ({matched['n_paired']})" if matched
                else "–")
        lines.append(f"| {model} | {dataset} | {_cell_text(mine[0]['ips'])} | "
                     + " | ".join(_cell_text(gauss.get(c, np.nan)) for c in levels)
                     + f" | {_cell_text(matched['null_ips']) if matched else '–'} | {diff} | "
                     + f"{_cell_text(top['null_ips']) if top else '–'} | "
                     + f"{_saturation_text(mine[0]['ips'], top['null_ips'] if top else np.nan)} |")
    return lines + [line for v in variants() for line in variant_section(every, v.kind)]


def control_section(entries: list[Entry]) -> list[str]:
    """Each model's IPS beside its controls' draws (main group, band all; `control_rows`)."""
    rows = [r for r in control_rows(entries) if r["group"] == ZERO_SHOT and r["band"] == "all"]
    if not rows:
        return []
    lines = ["", "## IPS beside its controls", "",
             f"{ZERO_SHOT}, band all: each model's IPS beside its controls' (untrained twins: "
             "its class's weights drawn again), as their mean ± sd over the draws (the spread "
             "between weight draws) and, with two or more, the prediction test of the model's "
             "IPS against them (`control_table.csv`; docs/method.md#controls-as-a-distribution "
             "in the project).", "",
             "| model | dataset | IPS | controls: mean ± sd (draws) | range | p |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        spread = "" if not np.isfinite(r["control_ips_sd"]) else f" ± {r['control_ips_sd']:.3f}"
        lines.append(f"| {r['model']} | {r['dataset']} | {_cell_text(r['ips'])} | "
                     f"{_cell_text(r['control_ips_mean'])}{spread} ({r['control_draws']}) | "
                     f"{_cell_text(r['control_ips_min'])}–{_cell_text(r['control_ips_max'])} | "
                     f"{_cell_text(r['p_value'], '.2g')} |")
    return lines


def _saturation_text(ips: float, ceiling: float) -> str:
    """IPS / ceiling, with **saturated** at SATURATED or above; – without a ceiling."""
    ratio = float(saturation(ips, ceiling))
    if not np.isfinite(ratio):
        return "–"
    return f"{ratio:.2f}" + (" **saturated**" if ratio >= SATURATED else "")


def accuracy_section(entries: list[Entry]) -> list[str]:
    """Each model's accuracy per 0-shot template, k of n (`accuracy_table.csv`)."""
    rows = [r for r in accuracy_rows(entries) if str(r.get("shots", "0")) == "0"]
    if not rows:
        return []
    lines = ["", "## Accuracy per template", "",
             "0-shot, over the samples scored under each template: k of n correct, the "
             "share beside it; intervals and every condition in `accuracy_table.csv`. "
             "Chance is one over the item's options (0.25 with four).", "",
             "| model | dataset | per template |", "|---|---|---|"]
    by: dict[tuple[str, str], list[str]] = {}
    for r in rows:
        by.setdefault((r["model"], r["dataset"]), []).append(
            f"{r['template']} {r['correct']}/{r['n']} ({r['accuracy']:.2f})")
    lines += [f"| {m} | {d} | {', '.join(cells)} |" for (m, d), cells in by.items()]
    return lines


def peer_section(entries: list[Entry]) -> list[str]:
    """IPS beside what other tools report on the same outputs, per model and dataset (main
    group; `ips.analysis.peers`)."""
    rows = [r for r in peer_rows(entries) if r["group"] == ZERO_SHOT]
    if not rows:
        return []
    lines = ["", "## IPS beside what other tools report", "",
             f"{ZERO_SHOT}, on the same scored outputs: the spread of accuracy over the "
             "templates (FormatSpread), ProSA's PSS (a uniform guesser among 4 options gives "
             "0.375), the consistency rate of lm-evaluation-harness's SCORE (such a guesser: "
             "0.25), and the mean |Δv(x_N)| of the unmasked prompt between two templates "
             "(POSIX-style, on a fixed target); intervals and n in `peer_table.csv` "
             "(docs/method.md#peers in the project).", "",
             "| model | dataset | IPS | accuracy spread | PSS | consistency rate | "
             "mean abs Δv(x_N) | n |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['dataset']} | {_cell_text(r['ips'])} | "
                     + " | ".join(_cell_text(r[p]) for p in ("accuracy_spread", "pss",
                                                               "consistency_rate",
                                                               "dv_unmasked"))
                     + f" | {r['dv_unmasked_n']} |")
    return lines


def variant_section(rows: list[dict], kind: str) -> list[str]:
    """A variant (`ips.nulls.variants`) per model, dataset, condition group and setting
    (band all): only the groups some of whose conditions were scored again have it."""
    rows = [r for r in rows if r["null"] == kind]
    if not rows:
        return []
    v = variant(kind)
    lines = ["", f"### {v.title}", "",
             f"The same prompts scored again {v.changes}, each game's two fits scored as a "
             f"template pair ({v.doc} in the project): {v.measures}. Δv: v of the other "
             f"{v.setting} minus this run's, over every mask of the run's games (all its "
             "groups). A group is listed where some of its conditions were scored again "
             f"(`nulls.{kind}.conditions`); the others have no {kind} null.", "",
             f"| model | dataset | group | {v.setting} | games | max \\|Δv\\| (median) | "
             f"sd(Δv) / range, median | salient-set Jaccard | {kind} null [95% CI] (n) | IPS | "
             "IPS − null (n) |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['model']} | {r['dataset']} | {r['group']} | {r['level']} | {r['games']} | "
            f"{_cell_text(r['max_abs_dv'], '.3g')} ({_cell_text(r['median_abs_dv'], '.2g')}) | "
            f"{_cell_text(r['dv_rel'], '.1%')} | {_cell_text(r['jaccard'], '.2f')} | "
            f"{_cell_text(r['null_ips'])} [{_cell_text(r['ci_low'])}, "
            f"{_cell_text(r['ci_high'])}] ({r['n_valued_samples']}) | "
            f"{_cell_text(r['ips'])} | {_cell_text(r['ips_minus_null'])} ({r['n_paired']}) |")
    return lines


def sparse_section(entries: list[Entry]) -> list[str]:
    """How far the numbers of sparsely sampled metrics files can be trusted
    (`ips.interactions.sparse`)."""
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
            f"| {e.model} | {e.dataset} | {a['budget']} | {float(e.ds['n_vars_mean']):.1f} | "
            f"{a['unreliable_games']} of {a['games']} | {spread.strip(' ()') or '–'} |")
    if not lines:
        return []
    lines = ["| model | dataset | masks per prompt | mean n | games UNRELIABLE (held-out "
             f"error above {UNRELIABLE_HELDOUT:.0%}) | held-out error |",
             "|---|---|---|---|---|---|", *lines]
    return ["", "## Sparse estimates", "",
            "These metrics come from sparse sampling: the interactions of a prompt whose 2^n "
            "masks exceed the budget are estimated from a design of masks, not fitted to all "
            "of them (docs/method.md#sparse-estimation). A game whose held-out error is above "
            "the threshold has an IPS, bands, types and case study that are estimates of "
            "unknown accuracy; the measured accuracy on real games is in "
            "docs/benchmarks.md#sparse-estimation.", "", *lines]


def claims_section(rows: Sequence[verdicts.Claim], warning: str = "") -> list[str]:
    """The README section of the claims: verdict counts, each claim's statement, the table;
    `warning` (`random_note`) heads it when a model has random weights."""
    counts = claims_summary(rows)
    random = sum(r.weights == WEIGHTS[1] for r in rows)
    lines = ["", "## The paper's claims on these models", "",
             *([f"**{warning[0].upper()}{warning[1:]}:** {random} of the {len(rows)} rows "
                "rest on them (`weights` = `random`); their verdicts say nothing about the "
                "paper.", ""] if warning else []),
             f"`claims.csv`; verdicts at α = {verdicts.ALPHA:g} (`ips.comparisons.claims`): "
             "directional "
             "claims by a paired sign-flip test, level claims by whether the 95% interval lies "
             "inside the paper's range (`raw_verdict`). The final `verdict` is decided only "
             "where the trained models also differ from their controls, scored on the same "
             "prompts (`controls`, such as the models with re-drawn weights): a claim random "
             "weights also "
             "earn is not a finding about trained models. `undecided` means these samples "
             "or these controls cannot tell; it is not evidence against the paper.", ""]
    lines += correction_lines(rows)
    statements = dict((r.claim, r.paper) for r in rows)
    for claim, c in counts.items():
        told = ", ".join(f"{k} {v}" for k, v in c.items() if v)
        lines.append(f"- `{claim}` ({told}): {statements[claim]}")
    if len(rows) > MAX_CLAIM_ROWS:  # the paper's study: thousands of rows, a wall of text
        return [*lines, "", f"The {len(rows)} rows are in `claims.csv` (one per claim, model, "
                "dataset and band where it applies); the counts above sum them up."]
    return [*lines, "", *claims_markdown(rows)]


def correction_lines(rows: Sequence[verdicts.Claim]) -> list[str]:
    """How many decided rows survive the correction for many tests (`q_value`), and each
    declared hypothesis with its Holm p (`ips.comparisons.claims.correction`)."""
    alpha = verdicts.ALPHA
    decided = [r for r in rows if r.verdict in ("supported", "contradicted")]
    kept = [r for r in decided if r.q_value <= alpha]
    lines = [f"Corrected for the many tests of this table (`q_value`: Benjamini–Hochberg over "
             f"its {sum(np.isfinite(r.q_value) for r in rows)} decidable rows, a null's "
             f"repeated rows counted as one; docs/method.md#corrected-tests): {len(kept)} of "
             f"the {len(decided)} decided rows have q ≤ {alpha:g}. Only those are findings; "
             "the other decided rows are exploratory.", ""]
    named = [r for r in rows if np.isfinite(r.holm_p)]
    if named:
        lines += [f"Confirmatory hypotheses (config `hypotheses`, Holm over {len(named)} "
                  "found in this table): " + "; ".join(
                      f"`{r.claim}` {r.scope}: {r.verdict}, Holm p = {r.holm_p:.2g}"
                      for r in named) + ".", ""]
    return lines


MAX_CLAIM_ROWS = 200
"""Beyond this many claims rows the README counts them and leaves the table to claims.csv."""


# --------------------------------------------------------------------------------- driver
