"""`ips explain`: a case study of one item under one template pair (paper Section 3.3, Fig. 1).

For one item x and two templates T, T̂ the command scores v(x_S) on every mask under both
templates, fits the sparsest AND-OR interactions, normalises them, and reports

* the prediction under each template (and the gold answer),
* ips(x, T, T̂) of Eq. 3 at τ,
* the salient interactions U (|Ĩ| > τ under T or T̂) ranked by how much they changed,
  |Ĩ_T − Ĩ_T̂|, with their words, kind (AND/OR), both normalised values and type,

and draws the case-study figure (`ips.figures.case_study`); U, the types and ips come from
`ips.case_study`. Every step is the workflow's own
code: `ips.variables.select_variables`, `ips.templates.render`, `ips.scoring.score_sample`
(the same masked scoring, target and prediction as `ips score`), `ips.interactions.and_or`
(as `ips fit`) and `ips.metrics` (as `ips metrics`), so the numbers agree with a workflow
run of the same item, model, scorer and solver.

Public API: :func:`explain` (from a loaded model and an item), :func:`format_case` (the
table), and :func:`add_parser` / :func:`main` (the `ips explain` subcommand).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from ips import metrics
from ips.errors import InputError
from ips.files import check_output, write_bytes
from ips.config import (DEFAULT_MODEL, DEFAULT_MODEL_ENTRY, EXHAUSTIVE_MAX_N, MODEL_CACHE,
                        SCORERS, TARGETS)
from ips.arguments import (add_sampling, int_between, json_arg, nonnegative_float,
                           sampling_budget, unit)
from ips.case_study import CaseStudy, case_study, sparse_case_study
from ips.interactions import SOLVERS

log = logging.getLogger("ips")

#: the template pair compared when none is given, per item kind
DEFAULT_TEMPLATES = {"mcq": ("T1", "T4"), "instruction": ("A1", "A4")}
#: explain accepts up to max(EXPLAIN_N_MAX, the config's n_max) variables unless --n-max says
EXPLAIN_N_MAX = 8
DEFAULT_CONFIG = Path("config.yaml")


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
    lines.append("types     " + ", ".join(f"{metrics.INTERACTION_TYPE_NAMES[t]} {c}"
                                          for t, c in case.type_counts.items()))
    shown = case.rows if not top else case.rows[:top]
    width = max([len("interaction")] + [len(r.words) for r in shown])
    ca, cb = f"Ĩ[{ta}]", f"Ĩ[{tb}]"
    wa, wb = max(8, len(ca)), max(8, len(cb))
    lines.append("")
    lines.append(f"{'#':>3}  {'kind':<4}  {'interaction':<{width}}  {ca:>{wa}}  {cb:>{wb}}  "
                 f"{'change':>6}  type")
    for i, r in enumerate(shown, 1):
        kind = metrics.INTERACTION_TYPE_NAMES[r.type]
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
    lm,
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
    batch_tokens: int = 1024,
    scorer: str = "auto",
    budget: int | None = None,
) -> CaseStudy:
    """Score, fit and compare one item under two templates with a loaded model.

    `budget`: None scores all 2**n masks and fits Eq. 12 exactly; a number of masked prompts
    per template below 2**n scores the design `ips.sparse.scored_masks(n, budget)` and
    estimates the interactions with `ips.sparse.estimate` (the case's `sparse` then holds
    the held-out error and whether the estimate is reliable).

    `lm`: an `ips.models.LoadedModel`; `item`: an `MCQItem` or `InstructionItem`; `templates`:
    two template names (default `DEFAULT_TEMPLATES[item.kind]`). Variables are selected by
    `select_variables(item, strategy, n_max, merge_phrases, fields)`, rendered by `render`,
    scored by `score_sample` (target: `target`, default the kind's first, `letter` /
    `response`), fitted by `and_or(solver, noise)` (with `sgd`'s `learning_rate` and `steps`
    for solver "sgd") and normalised by `metrics.normalize`.
    The prediction is the option letter of highest logit (MCQ) or the greedy token (otherwise),
    as in the workflow. Raises `ExplainError` for bad templates or an item without variables.
    """
    from ips import sparse
    from ips.interactions import and_or
    from ips.kernel import naming_model
    from ips.samples import Sample
    from ips.scoring import Engine, _Answers, _argmax, score_sample
    from ips.templates import Condition, render

    kind = item.kind
    tset, names, target = _check_comparison(item, templates, template_file, target)
    variables = _variables(item, strategy, n_max, merge_phrases, fields)
    conds = [Condition(t, t) for t in names]
    sample = Sample(item, variables, {c.name: render(tset[c.template], item, variables)
                                      for c in conds})
    n = len(variables)
    design = sparse.scored_masks(n, budget)
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    engine = Engine(lm.model, lm.mask_token_id, batch_tokens, lm.device, scorer=scorer)
    with naming_model(lm.spec.name):
        scored = score_sample(engine, _Answers(lm.tokenizer), sample, conds, target, design)
    seconds["score"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    if design is None:
        fit = and_or(scored["v"], solver=solver, noise=noise, **(sgd or {}))
        norm = metrics.normalize(fit.and_, fit.or_)
        how = f"fitted ({fit.solver}), max matching error {np.max(fit.matching_error):.2g}"
    else:
        ests = [sparse.estimate(design, v, n) for v in scored["v"]]
        how = ("estimated from a design (ips.sparse), held-out error "
               + ", ".join(f"{e.heldout_error:.3g}" for e in ests))
    seconds["fit"] = time.perf_counter() - t0
    log.info("%s, %s: n = %d, %d masked prompts scored in %.1f s, %s in %.2f s", lm.spec.name,
             item.id, n, scored["v"].size, seconds["score"], how, seconds["fit"])
    if kind == "mcq":
        from ips.datasets import letter

        preds = [letter(p) for p in _argmax(scored["letter_logit"]).tolist()]
        gold = item.gold_letter
    else:
        preds = [repr(lm.tokenizer.decode([int(g)])) for g in scored["greedy"]]
        gold = None
    about = dict(model=lm.spec.name, sample=item.id, templates=names, gold=gold)
    words = [v.text for v in variables]
    if design is None:
        case = case_study(norm[0], norm[1], words, preds[0], preds[1], tau, **about)
    else:
        case = sparse_case_study(ests[0], ests[1], words, preds[0], preds[1], tau, **about)
        case.sparse = {"masks": len(design), "heldout_error": [e.heldout_error for e in ests],
                       "threshold": sparse.UNRELIABLE_HELDOUT,
                       "reliable": all(e.reliable for e in ests),
                       "order": ests[0].order, "unobserved": [e.unobserved for e in ests],
                       "aliased": [e.aliased for e in ests]}
    case.label = tset.pair_label(*names)
    case.prompts = tuple(sample.prompts[c.name].text for c in conds)
    case.seconds = seconds
    return case


def _check_comparison(item, templates, template_file, target):
    """The template set, the checked pair of names and the target; `ExplainError` if wrong."""
    from ips.templates import load_templates

    kind = item.kind
    tset = load_templates(template_file)
    names = tuple(templates) if templates else DEFAULT_TEMPLATES[kind]
    _check_templates(tset, names, kind)
    target = target or TARGETS[kind][0]
    if target not in TARGETS[kind]:
        raise ExplainError(f"--target: {target!r} does not apply to {kind} items; use one of "
                           f"{', '.join(TARGETS[kind])}")
    return tset, names, target


def _variables(item, strategy, n_max, merge_phrases, fields):
    """`select_variables` with its refusals as `ExplainError` naming the option at fault."""
    from ips.variables import Skip, select_variables

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


def _check_templates(tset, names: Sequence[str], kind: str) -> None:
    if len(names) != 2 or names[0] == names[1]:
        raise ExplainError(f"--templates: give two different templates, got {list(names)}")
    for name in names:
        if name not in tset.templates:
            known = ", ".join(t for t, x in tset.templates.items() if x.kind == kind)
            raise ExplainError(f"--templates: unknown template {name!r}; known: {known}")
        if tset[name].kind != kind:
            raise ExplainError(f"--templates: template {name!r} is for {tset[name].kind} items, "
                               f"this item is {kind}")


# ------------------------------------------------------------------------------ items

CUSTOM_ID = "custom"


def custom_item(question: str, choices: Sequence[str], answer: str):
    """An MCQ item from the command line; `answer` is a letter (A-D) or a choice's text."""
    from ips.datasets import LETTERS, N_CHOICES, MCQItem

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
    from ips.datasets import load_items

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


# ------------------------------------------------------------------------------ command line


def add_parser(subparsers, common: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Register `explain` on the `ips` command's subparsers (with the options of `common`,
    e.g. --log-level); the handler is `main`."""

    p = subparsers.add_parser(
        "explain",
        parents=[common],
        help="case study of one item under two templates: predictions, ips(x,T,T̂) and the "
        "salient interactions that changed most (table + figure)",
        description="Score one item (--question/--choices/--answer, or --dataset/--sample) "
        "under two templates with one model, fit the sparsest AND-OR interactions, and print "
        "both predictions, ips(x,T,T̂) at τ and the salient interactions ranked by "
        "|Ĩ_T − Ĩ_T̂|; draw them to --out (PNG and PDF). Uses the workflow's variable "
        "selection, templates, scoring and fitting, so the numbers agree with `ips metrics`.",
    )
    src = p.add_argument_group("model and settings")
    src.add_argument("--config", type=Path, default=None,
                     help="workflow configuration: model entries, datasets, tau, variables, "
                     "templates, solver, scorer (default: ./config.yaml if present, else the "
                     "schema defaults with the embedded SmolLM2)")
    src.add_argument("--model", default=None,
                     help=f"model name under `models` in the config, or a local model directory "
                     f"(default: {DEFAULT_MODEL})")
    src.add_argument("--entry", type=json_arg, metavar="JSON",
                     help="the model's config entry as JSON, instead of the config's")
    src.add_argument("--cache-dir", type=Path, default=MODEL_CACHE,
                     help="where converted models are kept (default: %(default)s)")
    it = p.add_argument_group("the item")
    it.add_argument("--question", help="question text of an MCQ item given here")
    it.add_argument("--choices", nargs="+", metavar="CHOICE", help="its four options, A-D")
    it.add_argument("--answer", help="its gold answer: a letter A-D or the text of a choice")
    it.add_argument("--fields", nargs="+", metavar="FIELD",
                    help="fields variables are drawn from (question, choice_0..3; default: the "
                    "dataset's `fields` for --sample, else all)")
    it.add_argument("--dataset", help="dataset name under `datasets` in the config (with --sample)")
    it.add_argument("--sample", metavar="ID", help="id of an item of --dataset")
    how = p.add_argument_group("comparison")
    how.add_argument("--templates", nargs=2, metavar=("T", "T_HAT"),
                     help="the template pair (default: T1 T4 for MCQ, A1 A4 for instructions)")
    how.add_argument("--tau", type=unit, default=None,
                     help="salience threshold in (0, 1) (default: the config's tau, 0.1)")
    how.add_argument("--n-max", type=int_between(1, 32), default=None, metavar="N",
                     help=f"most variables accepted (default: max({EXPLAIN_N_MAX}, the config's "
                     "n_max))")
    how.add_argument("--target", choices=[t for ts in TARGETS.values() for t in ts],
                     help="what v scores (default: the dataset's target, else letter / response)")
    how.add_argument("--solver", choices=SOLVERS, default=None,
                     help="AND-OR solver (default: the config's solver; sgd takes the config's "
                     "sgd settings)")
    how.add_argument("--noise", type=nonnegative_float, default=None, metavar="EPS",
                     help="noise bound ε of the fit (default: the config's noise)")
    add_sampling(how, "default: the config's sampling.mode",
                 "default: the config's sampling.budget")
    how.add_argument("--scorer", choices=SCORERS, default=None,
                     help="masked-prompt scorer (default: the config's scorer)")
    how.add_argument("--batch-tokens", type=int_between(1, 10**9), default=None, metavar="T",
                     help="cap on tokens per forward batch (default: the config's batch_tokens)")
    how.add_argument("--threads", type=int_between(1, 4096), default=None,
                     help="CPU threads for torch (default: torch's choice)")
    how.add_argument("--device", default=None, help="torch device (default: cuda if visible)")
    out = p.add_argument_group("output")
    out.add_argument("--top", type=int_between(0, 10**6), default=12, metavar="K",
                     help="rows printed and drawn (0: print all, draw 12) (default: %(default)s)")
    out.add_argument("--out", type=Path, default=Path("explain.png"), metavar="PATH",
                     help="figure path; PNG and PDF are written (default: %(default)s)")
    out.add_argument("--json", type=Path, default=None, metavar="PATH",
                     help="also write the case study as JSON")
    p.set_defaults(func=main)
    return p


def main(args: argparse.Namespace) -> int:
    """Run `ips explain` with parsed arguments; print the table, write the figure(s)."""
    from ips.figures.case_study import case_study_figure
    from ips.models import load_model

    if args.json:
        check_output(args.json, option="--json")
    config = _config(args)
    item, fields, target = _item(args, config)
    templates = tuple(args.templates) if args.templates else None
    spec = _spec(args, config)
    tau = args.tau if args.tau is not None else float(config["tau"])
    n_max = args.n_max or max(EXPLAIN_N_MAX, int(config["n_max"]))
    var = config.get("variables", {})
    strategy, merge = var.get("strategy", "content"), var.get("merge_phrases", True)
    template_file = config.get("templates", {}).get("file")
    budget = sampling_budget(args, config["sampling"], ExplainError)
    # cheap checks before a model load that can take seconds
    _check_comparison(item, templates, template_file, target)
    n = len(_variables(item, strategy, n_max, merge, fields))
    if budget is None and n > EXHAUSTIVE_MAX_N:
        raise ExplainError(f"--sampling: the item has n = {n} variables; scoring all 2**{n} "
                           f"masks is beyond exhaustive sampling (n <= {EXHAUSTIVE_MAX_N}); "
                           "use --sampling sparse --budget B")
    t0 = time.perf_counter()
    lm = load_model(spec, cache_dir=args.cache_dir, device=args.device, threads=args.threads)
    log.info("loaded %s on %s (mask token %r id %d) in %.1f s", spec.name, lm.device,
             lm.mask_token, lm.mask_token_id, time.perf_counter() - t0)
    case = explain(
        lm, item, templates, tau=tau,
        strategy=strategy, merge_phrases=merge, fields=fields, n_max=n_max,
        template_file=template_file, target=target,
        solver=args.solver or config["solver"],
        noise=args.noise if args.noise is not None else float(config["noise"]),
        sgd=config["sgd"],
        batch_tokens=args.batch_tokens or int(config["batch_tokens"]),
        scorer=args.scorer or config["scorer"],
        budget=budget,
    )
    print(format_case(case, args.top), end="")
    files = case_study_figure(case, args.out, top=args.top or 12)
    if args.json:
        write_bytes(args.json, (json.dumps(case.to_dict(), indent=1, ensure_ascii=False)
                                + "\n").encode())
        files.append(args.json)
    print("wrote " + ", ".join(map(str, files)))
    log.info("explain done in %.1f s", time.perf_counter() - t0)
    return 0


def _config(args) -> dict:
    from ips.config import load_config, validate

    path = args.config
    if path is None and DEFAULT_CONFIG.is_file():
        path = DEFAULT_CONFIG
        log.info("using %s (give --config to choose another)", path)
    if path is not None:
        return load_config(path)
    return validate({"models": {DEFAULT_MODEL: DEFAULT_MODEL_ENTRY}})


def _item(args, config: dict):
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


def _spec(args, config: dict):
    from ips.models import ModelSpec

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
    import re

    name = re.sub(r"[^A-Za-z0-9._-]", "-", text).lstrip("._-")
    return name or "local-model"
