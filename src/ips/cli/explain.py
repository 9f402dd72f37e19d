"""`ips explain`."""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path

from ips.cli.arguments import (
    add_compute,
    add_masking,
    add_sampling,
    int_between,
    json_arg,
    nonnegative_float,
    sampling_budget,
    setting,
    unit,
)
from ips.config import (
    DEFAULT_MODEL,
    EXHAUSTIVE_MAX_N,
    EXPLAIN_N_MAX,
    MODEL_CACHE,
    SCORERS,
    TARGETS,
    dataset_settings,
)
from ips.interactions import SOLVERS

log = logging.getLogger("ips")


def add_parser(sub, common) -> None:
    p = sub.add_parser(
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
                     help="most variables: an item of --dataset with more units is reduced by "
                     "the dataset's variables.reduce, as the workflow does (default: the "
                     "dataset's n_max); an item given here is refused (default: "
                     f"max({EXPLAIN_N_MAX}, the config's n_max))")
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
    add_masking(how)
    add_compute(how)
    out = p.add_argument_group("output")
    out.add_argument("--top", type=int_between(0, 10**6), default=12, metavar="K",
                     help="rows printed and drawn (0: print all, draw 12) (default: %(default)s)")
    out.add_argument("--out", type=Path, default=Path("explain.png"), metavar="PATH",
                     help="figure path; PNG and PDF are written (default: %(default)s)")
    out.add_argument("--json", type=Path, default=None, metavar="PATH",
                     help="also write the case study as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print the case study's table and write its figure (and --json)."""
    from ips.explain import inputs
    from ips.explain.inputs import choose_item, choose_spec, explain_config
    from ips.explain.run import explain, format_case
    from ips.figures.plots.case_study import case_study_figure
    from ips.models.loading import load_model
    from ips.outputs import check_output, write_bytes

    if args.json:
        check_output(args.json, option="--json")
    config = explain_config(args)
    item, fields, target = choose_item(args, config)
    templates = tuple(args.templates) if args.templates else None
    spec = choose_spec(args, config)
    tau = float(setting(args.tau, config, "tau"))
    if args.sample:  # the workflow's selection for this dataset (`ips samples`)
        own = dataset_settings(config, args.dataset)
        var, reduce = own["variables"], own["variables"]["reduce"]
        n_max = args.n_max or int(own["n_max"])
        source = ("--n-max" if args.n_max else
                  f"the config's n_max for {args.dataset}")
    else:  # an item given here is explained as given
        var, reduce = config.get("variables", {}), "skip"
        n_max = args.n_max or max(EXPLAIN_N_MAX, int(config["n_max"]))
        source = "--n-max" if args.n_max else f"max({EXPLAIN_N_MAX}, the config's n_max)"
    strategy, merge = var.get("strategy", "content"), var.get("merge_phrases", True)
    template_file = config.get("templates", {}).get("file")
    budget = sampling_budget(args, config["sampling"], inputs.ExplainError)
    # cheap checks before a model load that can take seconds
    inputs.check_comparison(item, templates, template_file, target)
    n = len(inputs.case_variables(item, strategy, n_max, merge, fields, reduce, source))
    if budget is None and n > EXHAUSTIVE_MAX_N:
        raise inputs.ExplainError(
            f"--sampling: the item has n = {n} variables; scoring all 2**{n} masks is beyond "
            f"exhaustive sampling (n <= {EXHAUSTIVE_MAX_N}); use --sampling sparse --budget B")
    t0 = time.perf_counter()
    loaded = load_model(spec, cache_dir=args.cache_dir, device=args.device, threads=args.threads)
    log.info("loaded %s on %s (mask token %r id %d) in %.1f s", spec.name, loaded.device,
             loaded.mask_token, loaded.mask_token_id, time.perf_counter() - t0)
    case = explain(
        loaded, item, templates, tau=tau,
        strategy=strategy, merge_phrases=merge, fields=fields, n_max=n_max, reduce=reduce,
        template_file=template_file, target=target,
        solver=setting(args.solver, config, "solver"),
        noise=float(setting(args.noise, config, "noise")),
        sgd=config["sgd"],
        batch_tokens=setting(args.batch_tokens, config, "batch_tokens"),
        scorer=setting(args.scorer, config, "scorer"),
        masking=setting(args.masking, config, "masking"),
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
