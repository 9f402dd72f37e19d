"""`ips explain`: a case study of one item under one template pair (paper Section 3.3, Fig. 1).

For one item x and two templates T, T̂ the command scores v(x_S) on every mask under both
templates, fits the sparsest AND-OR interactions, normalises them, and reports

* the prediction under each template (and the gold answer),
* ips(x, T, T̂) of Eq. 3 at τ,
* the salient interactions U (|Ĩ| > τ under T or T̂) ranked by how much they changed,
  |Ĩ_T − Ĩ_T̂|, with their words, kind (AND/OR), both normalised values and type,

and draws the case-study figure (`ips.figures.case_study`); U, the types and ips come from
`ips.analysis.case_study`. Every step is the workflow's own
code: `ips.prompts.variables.select_variables`, `ips.prompts.templates.render`,
`ips.scoring.engine.score_sample` (the same masked scoring, target and prediction as `ips score`),
`ips.interactions.and_or` (as `ips fit`) and `ips.analysis.metrics` (as `ips metrics`), so the
numbers agree with a workflow run of the same item, model, scorer and solver.

Public API: :func:`explain` (from a loaded model and an item), :func:`format_case` (the
table), :func:`custom_item` / :func:`dataset_item` (the item), and the checks the command runs
before it loads a model, :func:`check_comparison` and :func:`case_variables`; the command line
is in `ips.cli`.
"""

from __future__ import annotations

import logging
import math
import re
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ips.analysis import interaction_types, metrics
from ips.analysis.case_study import CaseStudy, case_study, sparse_case_study
from ips.config import DEFAULT_MODEL, DEFAULT_MODEL_ENTRY, EXPLAIN_N_MAX, TARGETS
from ips.errors import InputError
from ips.interactions import design as interactions_design

log = logging.getLogger("ips")

#: the template pair compared when none is given, per item kind
DEFAULT_TEMPLATES = {"mcq": ("T1", "T4"), "instruction": ("A1", "A4")}


class ExplainError(InputError):
    """Bad input to `ips explain`; the message names the option at fault."""


# ------------------------------------------------------------------------------ printing


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


# ------------------------------------------------------------------------------ end to end


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
    `templates`: two template names (default `DEFAULT_TEMPLATES[item.kind]`). Variables are selected
    by `select_variables(item, strategy, n_max, merge_phrases, fields)`, rendered by `render`,
    scored by `score_sample` (target: `target`, default the kind's first, `letter` /
    `response`; absent words masked as `masking` says, `ips.scoring.engine.Engine`), fitted by `and_or(solver, noise)` (with `sgd`'s `learning_rate` and `steps`
    for solver "sgd") and normalised by `metrics.normalize`.
    The prediction is the option letter of highest logit (MCQ) or the greedy token (otherwise),
    as in the workflow. Raises `ExplainError` for bad templates or an item without variables.
    """
    from ips.interactions import sparse
    from ips.prompts.samples import Sample
    from ips.prompts.templates import Condition, render
    from ips.scoring.engine import BATCH_TOKENS, Answers, model_engine, score_sample
    from ips.scoring.log_odds import naming_model

    template_set, names, target = check_comparison(item, templates, template_file, target)
    variables = case_variables(item, strategy, n_max, merge_phrases, fields)
    conditions = [Condition(t, t) for t in names]
    sample = Sample(item, variables, {c.name: render(template_set[c.template], item, variables)
                                      for c in conditions})
    n = len(variables)
    design = interactions_design.scored_masks(n, budget)
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    engine = model_engine(loaded, batch_tokens or BATCH_TOKENS, scorer, masking)
    with naming_model(loaded.spec.name):
        scored = score_sample(engine, Answers(loaded.tokenizer), sample, conditions, target,
                              design)
    seconds["score"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    games, how = _fit(scored["v"], design, n, solver, noise, sgd)
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
    case.label = template_set.pair_label(*names)
    case.prompts = tuple(sample.prompts[c.name].text for c in conditions)
    case.seconds = seconds
    return case


def _fit(v: np.ndarray, design, n: int, solver: str, noise: float, sgd: dict | None):
    """Both games fitted (Eq. 12, normalised) or, with a design, estimated sparsely; and a
    line saying how."""
    from ips.interactions import and_or, sparse

    if design is None:
        fit = and_or(v, solver=solver, noise=noise, **(sgd or {}))
        how = f"fitted ({fit.solver}), max matching error {np.max(fit.matching_error):.2g}"
        return metrics.normalize(fit.and_, fit.or_), how
    ests = [sparse.estimate(design, row, n) for row in v]
    return ests, ("estimated from a design (ips.interactions.sparse), held-out error "
                  + ", ".join(f"{e.heldout_error:.3g}" for e in ests))


def _predictions(loaded, item, scored: dict) -> tuple[list[str], str | None]:
    """The prediction under each template and the gold answer, as the workflow takes them:
    the option letter of highest logit (MCQ), else the greedy token (no gold)."""
    if item.kind == "mcq":
        from ips.formats.values import best_option
        from ips.prompts.items import letter

        return [letter(p) for p in best_option(scored["letter_logit"]).tolist()], item.gold_letter
    return [repr(loaded.tokenizer.decode([int(g)])) for g in scored["greedy"]], None


def check_comparison(item, templates, template_file, target):
    """The template set, the checked pair of names and the target; `ExplainError` if wrong."""
    from ips.prompts.templates import load_templates

    kind = item.kind
    template_set = load_templates(template_file)
    names = tuple(templates) if templates else DEFAULT_TEMPLATES[kind]
    _check_templates(template_set, names, kind)
    target = target or TARGETS[kind][0]
    if target not in TARGETS[kind]:
        raise ExplainError(f"--target: {target!r} does not apply to {kind} items; use one of "
                           f"{', '.join(TARGETS[kind])}")
    return template_set, names, target


def case_variables(item, strategy, n_max, merge_phrases, fields):
    """`select_variables` with its refusals as `ExplainError` naming the option at fault."""
    from ips.prompts.variables import Skip, select_variables

    try:
        # a case study explains the item as given: too many units is an error, not a reduction
        return select_variables(item, strategy=strategy, n_max=n_max,
                                merge_phrases=merge_phrases, fields=fields, reduce="skip")
    except Skip as s:
        what = "--question" if item.id == CUSTOM_ID else "--sample"
        hint = (f" (at most n_max = {n_max}; raise --n-max, each template scores 2**n masked "
                "prompts, or draw variables from fewer fields, e.g. --fields question)"
                if s.code == "too_many" else "")
        raise ExplainError(f"{what}: item {item.id!r} has {s.reason}{hint}") from None
    except ValueError as e:  # unknown field
        raise ExplainError(f"--fields: {e}") from None


def _check_templates(template_set, names: Sequence[str], kind: str) -> None:
    if len(names) != 2 or names[0] == names[1]:
        raise ExplainError(f"--templates: give two different templates, got {list(names)}")
    for name in names:
        if name not in template_set.templates:
            known = ", ".join(t for t, x in template_set.templates.items() if x.kind == kind)
            raise ExplainError(f"--templates: unknown template {name!r}; known: {known}")
        if template_set[name].kind != kind:
            raise ExplainError(f"--templates: template {name!r} is for "
                               f"{template_set[name].kind} items, this item is {kind}")


# ------------------------------------------------------------------------------ items

CUSTOM_ID = "custom"


def custom_item(question: str, choices: Sequence[str], answer: str):
    """An MCQ item from the command line; `answer` is a letter (A-D) or a choice's text."""
    from ips.prompts.items import LETTERS, N_CHOICES, MCQItem

    if not question or not question.strip():
        raise ExplainError("--question: give a non-empty question")
    choices = [str(c) for c in choices or ()]
    if len(choices) != N_CHOICES:
        raise ExplainError(f"--choices: give exactly {N_CHOICES} choices (the MCQ templates "
                           f"write options {LETTERS[0]}-{LETTERS[N_CHOICES - 1]}), got "
                           f"{len(choices)}")
    for i, c in enumerate(choices):
        if not c.strip():
            raise ExplainError(f"--choices: choice {LETTERS[i]} is empty")
    if answer is None:
        raise ExplainError("--answer: give the gold answer, a letter or the text of a choice")
    letters = LETTERS[:N_CHOICES]
    a = answer.strip()
    if len(a) == 1 and a in letters:
        gold = letters.index(a)
    elif a in choices:
        gold = choices.index(a)
    elif len(a) == 1 and a.upper() in letters:
        gold = letters.index(a.upper())
    else:
        raise ExplainError(f"--answer: {answer!r} is not among the choices; give a letter "
                           f"{letters[0]}-{letters[-1]} or the exact text of a choice "
                           f"({', '.join(map(repr, choices))})")
    return MCQItem(id=CUSTOM_ID, question=question, choices=tuple(choices), gold=gold)


def dataset_item(config: dict, dataset: str, sample_id: str):
    """Item `sample_id` of a configured dataset (any item of it, drawn by the workflow or not)."""
    from ips.prompts.datasets import load_items

    entries = config.get("datasets", {})
    if dataset not in entries:
        known = ", ".join(entries) or "none"
        raise ExplainError(f"--dataset: no dataset {dataset!r} under 'datasets' in the config "
                           f"(configured: {known})")
    loaded = load_items(dataset, entries[dataset])
    for item in loaded.items:
        if item.id == sample_id:
            return item
    some = ", ".join(i.id for i in loaded.items[:3])
    raise ExplainError(f"--sample: no item {sample_id!r} in dataset {dataset!r} "
                       f"({len(loaded.items)} usable items, e.g. {some})")


DEFAULT_CONFIG = Path("config.yaml")  # what `ips explain` reads when no --config is given


def explain_config(args) -> dict:
    """The validated config of `ips explain`: --config, else ./config.yaml, else the default
    model alone."""
    from ips.config import load_config, validate

    path = args.config
    if path is None and DEFAULT_CONFIG.is_file():
        path = DEFAULT_CONFIG
        log.info("using %s (give --config to choose another)", path)
    if path is not None:
        return load_config(path)
    return validate({"models": {DEFAULT_MODEL: DEFAULT_MODEL_ENTRY}})


def choose_item(args, config: dict):
    """The item, the fields variables come from, and the target (None: the kind's default)."""
    given = [o for o, v in (("--question", args.question), ("--choices", args.choices),
                            ("--answer", args.answer)) if v is not None]
    if args.sample is not None:
        if given:
            raise ExplainError(f"--sample: give either --dataset/--sample or --question/--choices/"
                               f"--answer, not both ({', '.join(given)} given)")
        if not args.dataset:
            raise ExplainError("--dataset: --sample needs the dataset it is an item of")
        item = dataset_item(config, args.dataset, args.sample)
        entry = config["datasets"][args.dataset]
        return item, args.fields or entry.get("fields"), args.target or entry.get("target")
    if args.dataset:
        raise ExplainError("--sample: --dataset needs the id of one of its items")
    if not given:
        raise ExplainError("--question: give an item (--question, --choices, --answer) or "
                           "--dataset and --sample")
    for o, v in (("--question", args.question), ("--choices", args.choices)):
        if v is None:
            raise ExplainError(f"{o}: missing (an item given here needs --question, --choices "
                               "and --answer)")
    return custom_item(args.question, args.choices, args.answer), args.fields, args.target


def choose_spec(args, config: dict):
    """The model to explain: --entry, else --model's config entry (default: the default model),
    else a local model directory."""
    from ips.models.entries import ModelSpec

    name = args.model
    if args.entry is not None:
        if name is None:
            raise ExplainError("--model: --entry needs the model's name (it names the cache "
                               "directory of a converted model)")
        return ModelSpec.from_config(name, args.entry)
    models = config.get("models", {})
    if name is None:
        name = DEFAULT_MODEL if (DEFAULT_MODEL in models or not models) else next(iter(models))
    if name in models:
        return ModelSpec.from_config(name, models[name])
    if name == DEFAULT_MODEL:
        return ModelSpec.from_config(name, DEFAULT_MODEL_ENTRY)
    if Path(name).is_dir():  # a local model directory; its attributes are not known
        path = Path(name)
        return ModelSpec.from_config(
            _safe_name(path.name), {"source": {"path": str(path)}, "family": "local",
                                    "series": "local", "type": "base",
                                    "architecture": "dense", "params": 1})
    known = ", ".join(models) or "none"
    raise ExplainError(f"--model: no model {name!r} under 'models' in the config (configured: "
                       f"{known}) and no such model directory")


def _safe_name(text: str) -> str:
    name = re.sub(r"[^A-Za-z0-9._-]", "-", text).lstrip("._-")
    return name or "local-model"
