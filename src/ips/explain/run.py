"""The run of `ips explain` for one item: score → fit → metrics, each the workflow's own step
(see the package docstring), and the case study's table (`format_case`)."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ips.analysis import interaction_types, metrics
from ips.analysis.case_study import CaseStudy, case_study, sparse_case_study
from ips.analysis.labelled import LabelledInteractions
from ips.config import EXPLAIN_N_MAX
from ips.explain.inputs import case_variables, check_comparison
from ips.formats.values import best_option
from ips.interactions import and_or, sparse
from ips.interactions.design import scored_masks
from ips.prompts.items import letter
from ips.prompts.samples import Sample
from ips.prompts.templates import Condition, render
from ips.scoring.engine import BATCH_TOKENS, Answers, model_engine, score_sample
from ips.scoring.log_odds import naming_model

log = logging.getLogger("ips")


def format_case(case: CaseStudy, top: int | None = 12) -> str:
    """The case study as text: header, then the `top` rows of U (all when None or 0)."""
    ta, tb = case.templates
    gold = f", gold {case.gold}" if case.gold is not None else ""
    changed = "prediction changed" if case.prediction_changed else "same prediction"
    label = f" ({case.label} pair)" if case.label and case.label != "none" else ""
    lines = [
        f"model     {case.model}",
        f"sample    {case.sample}",
        f"templates {ta} vs {tb}{label}",
        f"predicted {ta}: {case.pred_a}   {tb}: {case.pred_b}   ({changed}{gold})",
        f"variables (n = {case.n}): " + ", ".join(f"{i}:{w}" for i, w in enumerate(case.words)),
    ]
    n_omega = 2 * ((1 << case.n) - 1)
    if math.isnan(case.ips):
        lines += _sparse_lines(case)
        lines.append(f"IPS       no value: no interaction is salient at τ = {case.tau:g} "
                     f"under either template (|U| = 0 of {n_omega})")
        return "\n".join(lines) + "\n"
    lines += _sparse_lines(case)
    lines.append(f"IPS       ips(x, {ta}, {tb}) = {case.ips:.4f} at τ = {case.tau:g}, "
                 f"|U| = {case.n_union} of {n_omega} interactions")
    lines.append("types     " + ", ".join(f"{interaction_types.INTERACTION_TYPE_NAMES[t]} {c}"
                                          for t, c in case.type_counts.items()))
    shown = case.rows if not top else case.rows[:top]
    width = max([len("interaction")] + [len(r.words) for r in shown])
    ca, cb = f"Ĩ[{ta}]", f"Ĩ[{tb}]"
    wa, wb = max(8, len(ca)), max(8, len(cb))
    lines.append("")
    lines.append(f"{'#':>3}  {'kind':<4}  {'interaction':<{width}}  {ca:>{wa}}  {cb:>{wb}}  "
                 f"{'change':>6}  type")
    for i, r in enumerate(shown, 1):
        kind = interaction_types.INTERACTION_TYPE_NAMES[r.type]
        lines.append(f"{i:>3}  {r.kind:<4}  {r.words:<{width}}  {r.value_a:>+{wa}.4f}  "
                     f"{r.value_b:>+{wb}.4f}  {r.change:>6.4f}  {kind}")
    if len(shown) < len(case.rows):
        lines.append(f"... {len(case.rows) - len(shown)} more (--top 0 lists all)")
    return "\n".join(lines) + "\n"


def _sparse_lines(case: CaseStudy) -> list[str]:
    """The estimate's reliability (held-out error per template) for a sparse case study."""
    sp = case.sparse
    if not sp:
        return []
    errors = ", ".join(f"{e:.2%} ({t})" for e, t in zip(sp["heldout_error"], case.templates))
    order = "all S" if sp["order"] is None else f"|S| <= {sp['order']} or >= {case.n - sp['order']}"
    verdict = ("reliable" if sp["reliable"] else
               "UNRELIABLE: the salient set and IPS below are not pinned down by the data")
    return [f"estimate  sparse: {sp['masks']} of 2**{case.n} masks per template, candidates "
            f"{order}; held-out error {errors} of the range of v (threshold "
            f"{sp['threshold']:.0%}): {verdict}"]


def explain(
    loaded,
    item,
    templates: Sequence[str] | None = None,
    *,
    tau: float = metrics.DEFAULT_TAU,
    strategy: str = "content",
    merge_phrases: bool = True,
    fields: Sequence[str] | None = None,
    n_max: int = EXPLAIN_N_MAX,
    reduce: str = "skip",
    template_file: str | Path | None = None,
    target: str | None = None,
    solver: str = "auto",
    noise: float = 0.0,
    sgd: dict | None = None,
    batch_tokens: int | None = None,
    scorer: str = "auto",
    budget: int | None = None,
    masking: str = "tokens",
) -> CaseStudy:
    """Score, fit and compare one item under two templates with a loaded model.

    `budget`: None scores all 2**n masks and fits Eq. 12 exactly; a number of masked prompts
    per template below 2**n scores the design `ips.interactions.design.scored_masks(n, budget)` and
    estimates the interactions with `ips.interactions.sparse.estimate` (the case's `sparse` then
    holds the held-out error and whether the estimate is reliable).

    `loaded`: an `ips.models.loading.LoadedModel`; `item`: an `MCQItem` or `InstructionItem`;
    `templates`: two template names (default `ips.explain.inputs.DEFAULT_TEMPLATES[item.kind]`). Variables are selected
    by `select_variables(item, strategy, n_max, merge_phrases, fields, reduce)` (`reduce`:
    "skip" refuses an item of more than n_max units; a dataset's rule reduces it as the
    workflow does), rendered by `render`,
    scored by `score_sample` (target: `target`, default the kind's first, `letter` /
    `response`; absent words masked as `masking` says, `ips.scoring.engine.Engine`), fitted by `and_or(solver, noise)` (with `sgd`'s `learning_rate` and `steps`
    for solver "sgd") and normalised by `metrics.normalize`.
    The prediction is the option letter of highest logit (MCQ) or the greedy token (otherwise),
    as in the workflow. Raises `ExplainError` for bad templates or an item without variables.
    """
    template_set, names, target = check_comparison(item, templates, template_file, target)
    variables = case_variables(item, strategy, n_max, merge_phrases, fields, reduce)
    conditions = [Condition(t, t) for t in names]
    sample = Sample(item, variables, {c.name: render(template_set[c.template], item, variables)
                                      for c in conditions})
    n = len(variables)
    design = scored_masks(n, budget)
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    engine = model_engine(loaded, batch_tokens or BATCH_TOKENS, scorer, masking)
    with naming_model(loaded.spec.name):
        scored = score_sample(engine, Answers(loaded.tokenizer), sample, conditions, target,
                              design)
    seconds["score"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    games, how, raw = _fit(scored["v"], design, n, solver, noise, sgd)
    seconds["fit"] = time.perf_counter() - t0
    log.info("%s, %s: n = %d, %d masked prompts scored in %.1f s, %s in %.2f s", loaded.spec.name,
             item.id, n, scored["v"].size, seconds["score"], how, seconds["fit"])
    preds, gold = _predictions(loaded, item, scored)
    about = dict(model=loaded.spec.name, sample=item.id, templates=names, gold=gold)
    words = [v.text for v in variables]
    if design is None:
        case = case_study(games[0], games[1], words, preds[0], preds[1], tau, **about)
    else:
        case = sparse_case_study(games[0], games[1], words, preds[0], preds[1], tau, **about)
        case.sparse = {"masks": len(design), "heldout_error": [e.heldout_error for e in games],
                       "threshold": sparse.UNRELIABLE_HELDOUT,
                       "reliable": all(e.reliable for e in games),
                       "order": games[0].order, "unobserved": [e.unobserved for e in games],
                       "aliased": [e.aliased for e in games]}
    if raw is not None:  # every subset's effect: the same tables as `ips export`
        case.labelled = LabelledInteractions.from_arrays(
            loaded.spec.name, "explain", [item.id], names, [n], [words], raw[0][None],
            raw[1][None], scored["v"][None], tau)
    case.label = template_set.pair_label(*names)
    case.prompts = tuple(sample.prompts[c.name].text for c in conditions)
    case.seconds = seconds
    return case


def _fit(v: np.ndarray, design, n: int, solver: str, noise: float, sgd: dict | None):
    """Both games fitted (Eq. 12, normalised) or, with a design, estimated sparsely; a line
    saying how; and the fitted (AND, OR) effects (None for an estimate)."""
    if design is None:
        fit = and_or(v, solver=solver, noise=noise, **(sgd or {}))
        how = f"fitted ({fit.solver}), max matching error {np.max(fit.matching_error):.2g}"
        return metrics.normalize(fit.and_, fit.or_), how, (fit.and_, fit.or_)
    ests = [sparse.estimate(design, row, n) for row in v]
    return ests, ("estimated from a design (ips.interactions.sparse), held-out error "
                  + ", ".join(f"{e.heldout_error:.3g}" for e in ests)), None


def _predictions(loaded, item, scored: dict) -> tuple[list[str], str | None]:
    """The prediction under each template and the gold answer, as the workflow takes them:
    the option letter of highest logit (MCQ), else the greedy token (no gold)."""
    if item.kind == "mcq":
        return [letter(p) for p in best_option(scored["letter_logit"]).tolist()], item.gold_letter
    return [repr(loaded.tokenizer.decode([int(g)])) for g in scored["greedy"]], None
