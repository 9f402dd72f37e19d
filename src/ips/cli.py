"""Command line: `ips <command> ...` (also `python -m ips`).

Each command is a `_add_<name>(subparsers, common)` that registers its parser and sets
`func`, a function of the parsed arguments that returns the exit code. Bad input files
raise `ips.errors.InputError`, reported in one line with exit code 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import re
import sys
import time
from pathlib import Path

from ips import __version__
from ips.arguments import (add_sampling, int_between, json_arg, nonnegative_float,
                           positive_float, sampling_budget, setting, unit, add_compute)
from ips.config import (DEFAULT_MODEL, DEFAULT_MODEL_ENTRY, DTYPES, EXHAUSTIVE_MAX_N,
                        EXPLAIN_N_MAX, MODEL_CACHE, SCORERS, TARGETS, default)
from ips.interactions import SGD_LEARNING_RATE, SGD_STEPS, SOLVERS
from ips.errors import InputError
from ips.files import check_output

log = logging.getLogger("ips")

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
DEFAULT_CONFIG = Path("config.yaml")  # what `ips explain` reads when no --config is given


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ips",
        description="Interaction-based prompt sensitivity (IPS) of LLMs.",
    )
    parser.add_argument("--version", action="version", version=f"ips {__version__}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--log-level",
        default="INFO",
        type=str.upper,
        choices=LOG_LEVELS,
        help="logging threshold on stderr (default: %(default)s)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    _add_samples(sub, common)
    _add_prepare_model(sub, common)
    _add_score(sub, common)
    _add_fit(sub, common)
    _add_metrics(sub, common)
    _add_factors(sub, common)
    _add_figures(sub, common)
    _add_explain(sub, common)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    level = log.level
    log.addHandler(handler)
    log.setLevel(args.log_level)
    try:
        if getattr(args, "out", None) is not None:  # the destination first, before any work
            check_output(args.out, directory=args.command == "figures")
        return args.func(args)
    except InputError as e:
        print(f"ips {args.command}: error: {e}", file=sys.stderr)
        return 2
    finally:
        log.removeHandler(handler)
        log.setLevel(level)


# ---------------------------------------------------------------- ips fit


def _add_fit(sub, common) -> None:
    p = sub.add_parser(
        "fit",
        parents=[common],
        help="fit AND-OR interactions to a values file (HDF5 in, HDF5 out)",
        description=(
            "Read v(x_S) from IN (dataset 'v', dims (sample, condition, mask), NaN-padded on "
            "the mask axis, with 'n_vars' per sample), fit the sparsest AND-OR interactions "
            "of every (sample, condition), and write 'and', 'or', 'gamma', 'objective', "
            "'matching_error', 'duality_gap' and 'n_vars' to OUT (netCDF4/HDF5)."
        ),
    )
    p.add_argument("input", type=Path, metavar="IN.h5", help="values file")
    p.add_argument("--out", type=Path, required=True, metavar="OUT.h5", help="interactions file")
    p.add_argument(
        "--solver",
        choices=SOLVERS,
        default="auto",
        help="exact: linear program (HiGHS); first_order: vectorised first-order method; "
        "auto: exact for small n, first_order beyond (these three give the canonical optimum); "
        "sgd: the paper's gradient descent from gamma = 0 (default: %(default)s)",
    )
    p.add_argument(
        "--sgd-learning-rate",
        type=positive_float,
        default=SGD_LEARNING_RATE,
        metavar="LR",
        help="sgd: initial learning rate relative to the game's range max|v - v(empty)|, decaying "
        "log-linearly to LR/10 (default: %(default)s)",
    )
    p.add_argument(
        "--sgd-steps",
        type=int_between(1, 10**7),
        default=SGD_STEPS,
        metavar="K",
        help="sgd: number of gradient steps (default: %(default)s)",
    )
    p.add_argument(
        "--noise",
        type=nonnegative_float,
        default=0.0,
        metavar="EPS",
        help="allow a noise term |q_T| <= EPS*|v(x_N) - v(x_0)| on v; 0 fits v exactly "
        "(default: %(default)s)",
    )
    p.add_argument(
        "--n-max",
        type=int_between(1, 32),
        default=10,
        metavar="N",
        help="largest number of variables accepted per sample (default: %(default)s)",
    )
    g = p.add_argument_group(
        "sampling", "A values file with a sparse design (`ips score --sampling sparse`) is "
        "fitted sparsely (ips.sparse): 'entry_kind', 'entry_set', 'entry_value' per game with "
        "'heldout_error' and 'reliable'. --sampling sparse --budget B fits an exhaustively "
        "scored file from the B masks sparse scoring would have scored.")
    add_sampling(g, "default: sparse for a file with a design, else exhaustive",
                 f"default: {default('sampling')['budget']}")
    g.add_argument("--seed", type=int, default=0,
                   help="seed of the design and of the held-out masks (default: %(default)s)")
    p.set_defaults(func=_fit)


def _fit(args: argparse.Namespace) -> int:
    from ips.config import EXHAUSTIVE_MAX_N
    from ips.fit import fit_sparse, fit_values
    from ips.files import write_dataset
    from ips.values_file import read_values

    t0 = time.perf_counter()
    values = read_values(args.input, n_max=args.n_max)
    designed = values.masks is not None
    if designed and args.sampling == "exhaustive":
        raise InputError(f"--sampling: {args.input} holds a sparse design (dataset 'masks'), "
                         "not every mask; fit it with --sampling sparse")
    budget = sampling_budget(args, {**default("sampling"),
                                    "mode": "sparse" if designed else "exhaustive"})
    sparse = designed or budget is not None
    if not sparse and values.n_vars.max() > EXHAUSTIVE_MAX_N:
        raise InputError(f"{args.input}: n = {values.n_vars.max()} variables: the exhaustive "
                         f"fit takes n <= {EXHAUSTIVE_MAX_N}; use --sampling sparse")
    n_samples, n_cond, _ = values.v.shape
    log.info(
        "fit %s: %d samples x %d conditions, n in %s, %s, solver %s, noise %g",
        args.input, n_samples, n_cond, sorted(set(values.n_vars.tolist())),
        "sparse " + ("(the file's design)" if designed else f"(budget {budget})") if sparse
        else "exhaustive", args.solver, args.noise,
    )
    try:
        if sparse:
            ds = fit_sparse(values, budget=None if designed else budget, seed=args.seed,
                            solver=args.solver, noise=args.noise)
        else:
            ds = fit_values(values, solver=args.solver, noise=args.noise,
                            learning_rate=args.sgd_learning_rate, steps=args.sgd_steps)
    except (ValueError, RuntimeError) as e:  # bad values or options; no feasible sparse fit
        log.debug("fit failed", exc_info=True)
        raise InputError(f"{args.input}: {e}") from e
    ds.attrs["n_max"] = args.n_max
    ds.attrs["input_file"] = str(args.input)
    write_dataset(ds, args.out)
    log.info("wrote %s in %.2f s", args.out, time.perf_counter() - t0)
    return 0


# ---------------------------------------------------------------- ips samples
# These commands take their settings either from a config file (`--config`, for people) or
# as JSON (`--settings` / `--entry`, for workflow rules, which pass exactly the values they
# depend on through `params:`).


def _add_samples(sub, common) -> None:
    p = sub.add_parser(
        "samples",
        parents=[common],
        help="draw a dataset's items, select their variables, render every condition (JSON out)",
        description="Load the dataset, draw n_items items with variables, reduce an item with "
        "more than n_max units to n_max (variables.reduce), fix the few-shot examples and "
        "render each item under every template condition, keeping the character span of "
        "every variable. Model-independent, except that `reduce: occlusion` ranks units with "
        "the reference model (variables.reference_model).",
    )
    p.add_argument("--config", type=Path, help="workflow configuration, with --dataset")
    p.add_argument("--dataset", help="dataset name under `datasets` in the config")
    p.add_argument("--settings", type=json_arg, metavar="JSON",
                   help="the dataset's settings as JSON (what the workflow passes), instead of "
                   "--config/--dataset")
    g = p.add_argument_group("reference model of `reduce: occlusion`")
    g.add_argument("--reference-entry", type=json_arg, metavar="JSON",
                   help="its config entry as JSON, with --settings (--config has it)")
    g.add_argument("--cache-dir", type=Path, default=MODEL_CACHE,
                   help="where converted models are kept (default: %(default)s)")
    add_compute(g)
    p.add_argument("--out", type=Path, required=True, metavar="OUT.json")
    p.set_defaults(func=_samples)


def _samples(args: argparse.Namespace) -> int:
    from ips.config import load_config
    from ips.samples import check_settings, dataset_settings, prepare_samples, save_samples

    config = None
    if args.settings is not None:
        settings = check_settings(args.settings)
    elif args.config is None or args.dataset is None:
        raise InputError("give --config and --dataset, or --settings")
    else:
        config = load_config(args.config)
        settings = dataset_settings(config, args.dataset)
    sample_set = prepare_samples(settings, _occlusion(args, settings, config))
    save_samples(sample_set, args.out)
    log.info("wrote %s: %d samples, %d conditions, skipped %s", args.out, len(sample_set.samples),
             len(sample_set.conditions), sample_set.skipped or "none")
    return 0


def _occlusion(args: argparse.Namespace, settings: dict, config: dict | None):
    """The reference model's `ips.scoring.Occlusion` under `reduce: occlusion`, else None.

    The model is loaded when the first item needs ranking, not here.
    """
    variables = settings.get("variables", {})
    if variables.get("reduce") != "occlusion":
        return None
    from ips.models import ModelSpec, load_model
    from ips.scoring import Occlusion

    name = variables.get("reference_model")
    if not name:
        raise InputError("settings: variables.reference_model: required when variables.reduce "
                         "is occlusion")
    if config is not None:  # validated: the name is under models
        entry = config["models"][name]
    elif getattr(args, "reference_entry", None) is not None:  # `ips score` has none
        entry = args.reference_entry
    else:
        raise InputError(f"variables.reduce is occlusion: give the entry of {name!r} "
                         "(--reference-entry JSON)")
    spec = ModelSpec.from_config(name, entry)
    batch_tokens = setting(args.batch_tokens, config, "batch_tokens")

    def load():
        return load_model(spec, cache_dir=args.cache_dir, device=args.device,
                          threads=args.threads)

    return Occlusion(name, load, batch_tokens)


# ---------------------------------------------------------------- ips prepare-model


def _model_args(p) -> None:
    p.add_argument("--model", required=True, help="model name (under `models` in the config)")
    p.add_argument("--config", type=Path, help="workflow configuration holding the model entry")
    p.add_argument("--entry", type=json_arg, metavar="JSON",
                   help="the model's config entry as JSON, instead of --config")
    p.add_argument("--cache-dir", type=Path, default=MODEL_CACHE,
                   help="where converted models are kept (default: %(default)s)")


def _model_spec(args: argparse.Namespace, config: dict | None):
    from ips.models import ModelSpec

    if args.entry is not None:
        return ModelSpec.from_config(args.model, args.entry)
    if config is None:
        raise InputError("give --config or --entry")
    if args.model not in config["models"]:
        known = ", ".join(config["models"]) or "none"
        raise InputError(f"config: no model {args.model!r} under 'models' (configured: {known})")
    return ModelSpec.from_config(args.model, config["models"][args.model])


def _add_prepare_model(sub, common) -> None:
    p = sub.add_parser(
        "prepare-model",
        parents=[common],
        help="resolve a configured model to a fast-loading directory (GGUF converted once)",
        description="Print the directory the model loads from; a GGUF is dequantised and saved "
        "as safetensors under the cache directory on the first call.",
    )
    _model_args(p)
    p.set_defaults(func=_prepare_model)


def _prepare_model(args: argparse.Namespace) -> int:
    from ips.config import load_config
    from ips.models import prepare_model

    spec = _model_spec(args, load_config(args.config) if args.config else None)
    t0 = time.perf_counter()
    path = prepare_model(spec, cache_dir=args.cache_dir)
    log.info("model %s ready at %s (%.1f s)", args.model, path, time.perf_counter() - t0)
    print(path)
    return 0


# ---------------------------------------------------------------- ips score


def _add_score(sub, common) -> None:
    p = sub.add_parser(
        "score",
        parents=[common],
        help="v(x_S) of one model on every mask of every sample of one shard (HDF5 out)",
        description="Score every (sample, condition, mask S) of one shard: v(x_S) = log-odds of "
        "the target at the answer position with the variables outside S replaced by the "
        "model's mask token (paper Appendix E.4). Resumes an interrupted run of the same inputs. "
        "Settings come from --config (and --dataset), or from the flags (workflow rules).",
    )
    _model_args(p)
    p.add_argument("--dataset", help="dataset name under `datasets` in the config")
    p.add_argument("--samples", type=Path, metavar="SAMPLES.json",
                   help="samples written by `ips samples` (default: prepare them from the config)")
    p.add_argument("--shard", type=int_between(0, 10**9), default=0, metavar="K",
                   help="score samples [K*shard_size, (K+1)*shard_size) (default: %(default)s)")
    p.add_argument("--shard-size", type=int_between(1, 10**9), metavar="S",
                   help="samples per shard (default: config's shard_size, else all samples)")
    p.add_argument("--target", choices=[t for ts in TARGETS.values() for t in ts],
                   help="what v scores (default: the dataset's target, else letter / response)")
    p.add_argument("--scorer", choices=SCORERS,
                   help="plain batches, shared-prefix trie, or auto (default: config's scorer, "
                   "else auto)")
    add_compute(p)
    p.add_argument("--dtype", choices=DTYPES,
                   help="compute in this precision instead of the entry's dtype (the precision "
                   "null: docs/method.md#precision)")
    p.add_argument("--conditions", nargs="+", metavar="NAME",
                   help="score only these conditions (default: every condition of the samples)")
    add_sampling(p, "default: the config's sampling.mode, else exhaustive",
                 f"default: the config's sampling.budget, else {default('sampling')['budget']}")
    p.add_argument("--out", type=Path, required=True, metavar="OUT.h5")
    p.set_defaults(func=_score)


def _score(args: argparse.Namespace) -> int:
    from ips.files import output_lock

    # held for the whole run: a second run on the same --out would discard the resume folder
    with output_lock(args.out):
        return _score_locked(args)


def _score_locked(args: argparse.Namespace) -> int:
    from ips.config import load_config
    from ips.models import load_model
    from ips.samples import dataset_settings, load_samples, prepare_samples
    from ips.scoring import check_shard, score_shard

    config = load_config(args.config) if args.config else None
    spec = _model_spec(args, config)
    settings = None
    if config is not None:
        if args.dataset is None:
            raise InputError("--config needs --dataset")
        settings = dataset_settings(config, args.dataset)
    elif args.samples is None:
        raise InputError("without --config, give the prepared --samples")
    if args.samples:
        sample_set = load_samples(args.samples)
        if args.dataset and sample_set.dataset != args.dataset:
            raise InputError(f"{args.samples}: holds samples of dataset {sample_set.dataset!r}, "
                             f"not {args.dataset!r}")
        if settings is not None and sample_set.settings != settings:
            log.warning("%s was prepared with other settings than %s now gives; run "
                        "`ips samples` again to use the current ones", args.samples, args.config)
    else:
        sample_set = prepare_samples(settings, _occlusion(args, settings, config))
    if args.conditions:
        sample_set = sample_set.with_conditions(args.conditions)
    if args.dtype:
        spec = dataclasses.replace(spec, dtype=args.dtype)
    shard_size = args.shard_size or (config["shard_size"] if config else len(sample_set.samples))
    target = args.target or sample_set.settings.get("entry", {}).get("target")
    batch_tokens = setting(args.batch_tokens, config, "batch_tokens")
    scorer = setting(args.scorer, config, "scorer")
    budget = sampling_budget(args, setting(None, config, "sampling"))
    # cheap checks before a model load that can take minutes
    check_shard(sample_set, args.shard, shard_size, target, budget)
    t0 = time.perf_counter()
    loaded = load_model(spec, cache_dir=args.cache_dir, device=args.device, threads=args.threads)
    log.info("loaded %s on %s (%s, mask token %r id %d from %s) in %.1f s", args.model,
             loaded.device, loaded.dtype, loaded.mask_token, loaded.mask_token_id,
             loaded.mask_source, time.perf_counter() - t0)
    score_shard(loaded, sample_set, args.out, shard=args.shard, shard_size=shard_size,
                target=target, batch_tokens=batch_tokens, scorer=scorer, budget=budget)
    return 0


def _add_uncertainty(p: argparse.ArgumentParser) -> None:
    from ips.uncertainty import DRAWS, EXACT_MAX, LEVEL, N_BOOT

    g = p.add_argument_group("bootstrap intervals and paired sign-flip tests (ips.uncertainty)")
    g.add_argument("--seed", type=int, default=0,
                   help="seed of the bootstrap and of the sign-flip draws (default: %(default)s)")
    g.add_argument("--resamples", type=int_between(100, 10**7), default=N_BOOT,
                   help="bootstrap replicates (default: %(default)s)")
    g.add_argument("--level", type=unit, default=LEVEL,
                   help="confidence level in (0, 1) (default: %(default)s)")
    g.add_argument("--permutations", type=int_between(99, 10**7), default=DRAWS,
                   help=f"random sign vectors of a sign-flip test on more than {EXACT_MAX} "
                   "samples (fewer are tested exactly; default: %(default)s)")


# ---------------------------------------------------------------- ips metrics


def _add_metrics(sub, common) -> None:
    p = sub.add_parser(
        "metrics",
        parents=[common],
        help="IPS, its order bands, interaction types, consistency and baselines of one "
        "model on one dataset (netCDF out)",
        description="Merge the shards of one model on one dataset (values files of `ips score` "
        "and, in the same order, their interactions files of `ips fit`) and compute IPS by "
        "condition group and order band at --tau (with paired sign-flip tests of the band order), the "
        "τ sweep, per-pair IPS with Appendix G labels, interaction types, output "
        "consistency, accuracy and the representation baseline. "
        "The layout is documented in `ips.metrics_file`.",
    )
    p.add_argument("--values", type=Path, nargs="+", required=True, metavar="V.h5",
                   help="values files (one per shard)")
    p.add_argument("--interactions", type=Path, nargs="+", required=True, metavar="I.h5",
                   help="interactions files, one per values file, in the same order")
    p.add_argument("--tau", type=unit, default=0.1,
                   help="salience threshold in (0, 1) (default: %(default)s)")
    p.add_argument("--tau-sweep", type=unit, nargs="+", default=None, metavar="TAU",
                   help="thresholds of the τ sweep (default: 0.05 0.06 ... 0.20)")
    _add_uncertainty(p)
    nulls = default("nulls")
    p.add_argument("--null-levels", type=unit, nargs="+", default=nulls["levels"], metavar="C",
                   help="Gaussian null levels: noise of C times the range of v on every value "
                   "of a game, refitted and scored against its fit (default: %(default)s)")
    p.add_argument("--null-draws", type=int_between(0, 1000), default=nulls["draws"],
                   metavar="K", help="noise draws per game and level (and per side of a pair "
                   "for the matched-size null); 0 computes no null (default: %(default)s)")
    p.add_argument("--no-matched-null", dest="matched_null", action="store_false",
                   default=nulls["matched"],
                   help="skip the matched-size null of every template pair")
    p.add_argument("--precision-values", type=Path, nargs="*", default=[], metavar="V.h5",
                   help="values files of some of the same games scored in another precision "
                   "(ips score --dtype --conditions): the precision null, per dtype")
    p.add_argument("--precision-interactions", type=Path, nargs="*", default=[],
                   metavar="I.h5", help="their interactions files, in the same order")
    p.add_argument("--out", type=Path, required=True, metavar="OUT.nc")
    p.set_defaults(func=_metrics)


def _metrics(args: argparse.Namespace) -> int:
    from ips.files import write_dataset
    from ips.nulls import Settings
    from ips.metrics_file import summarize

    t0 = time.perf_counter()
    null = Settings(tuple(args.null_levels), args.null_draws, args.matched_null, args.seed)
    ds = summarize(args.values, args.interactions, tau=args.tau, tau_sweep=args.tau_sweep,
                   seed=args.seed, n_boot=args.resamples, level=args.level,
                   draws=args.permutations, null=null,
                   precision_values=args.precision_values,
                   precision_interactions=args.precision_interactions)
    write_dataset(ds, args.out)
    ips0 = ds["ips"].sel(band="all").values
    a = ds.attrs
    estimate = (f"; sparse estimate: {a['unreliable_games']} of {a['games']} games UNRELIABLE"
                if a["sampling"] == "sparse" else "")
    log.info("wrote %s: %s on %s, %d samples, IPS at τ=%g %s%s (%.2f s)", args.out,
             a["model"], a["dataset"], int(ds["n_samples"]), args.tau,
             ", ".join(f"{g} {x:.4f}" for g, x in zip(ds["group"].values, ips0)), estimate,
             time.perf_counter() - t0)
    return 0


# ---------------------------------------------------------------- ips factors


def _add_factors(sub, common) -> None:
    p = sub.add_parser(
        "factors",
        parents=[common],
        help="ΔIPS of the four factors (instruct, scale, dense/MoE, few-shot) and τ "
        "robustness across models (netCDF out)",
        description="Compare the metrics files of `ips metrics` (one per model and dataset): "
        "instruct vs base, larger vs smaller, dense vs MoE and k-shot vs 0-shot, as "
        "ΔIPS = (IPS_A − IPS_B)/IPS_B per order band, with bootstrap intervals and paired "
        "sign-flip tests over samples; factors the configured models cannot show are "
        "reported as absent. Also the Spearman/Pearson robustness of the model "
        "ranking over the τ sweep. The layout is documented in `ips.factors`.",
    )
    p.add_argument("--metrics", type=Path, nargs="+", required=True, metavar="M.nc",
                   help="metrics files (one per model and dataset)")
    _add_uncertainty(p)
    p.add_argument("--out", type=Path, required=True, metavar="OUT.nc")
    p.set_defaults(func=_factors)


def _factors(args: argparse.Namespace) -> int:
    from ips.factors import compare
    from ips.files import write_dataset

    ds = compare(args.metrics, seed=args.seed, n_boot=args.resamples, level=args.level,
                 draws=args.permutations)
    write_dataset(ds, args.out)
    for f, note in zip(ds["factor"].values, ds["factor_note"].values):
        log.info("factor %s: %s", f, note)
    log.info("wrote %s: %d comparisons", args.out, ds.sizes["comparison"])
    return 0


# ---------------------------------------------------------------- ips figures


def _add_figures(sub, common) -> None:
    p = sub.add_parser(
        "figures",
        parents=[common],
        help="figures, a tidy IPS table and a README of the results (a directory out)",
        description="Draw the IPS ranking, IPS by order band, IPS over τ, the factor ΔIPS and "
        "altering vs adding pairs, and write ips_table.csv and README.md into OUT (replaced "
        "as a whole once everything is written).",
    )
    p.add_argument("--metrics", type=Path, nargs="+", required=True, metavar="M.nc",
                   help="metrics files (one per model and dataset)")
    p.add_argument("--factors", type=Path, required=True, metavar="F.nc",
                   help="factors file of `ips factors`")
    p.add_argument("--out", type=Path, required=True, metavar="DIR")
    p.set_defaults(func=_figures)


def _figures(args: argparse.Namespace) -> int:
    from ips.figures import make_figures

    t0 = time.perf_counter()
    files = make_figures(args.metrics, args.factors, args.out)
    log.info("wrote %s: %s (%.1f s)", args.out, ", ".join(files), time.perf_counter() - t0)
    return 0


# ---------------------------------------------------------------- ips explain


def _add_explain(sub, common) -> None:
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
    add_compute(how)
    out = p.add_argument_group("output")
    out.add_argument("--top", type=int_between(0, 10**6), default=12, metavar="K",
                     help="rows printed and drawn (0: print all, draw 12) (default: %(default)s)")
    out.add_argument("--out", type=Path, default=Path("explain.png"), metavar="PATH",
                     help="figure path; PNG and PDF are written (default: %(default)s)")
    out.add_argument("--json", type=Path, default=None, metavar="PATH",
                     help="also write the case study as JSON")
    p.set_defaults(func=_explain)


def _explain(args: argparse.Namespace) -> int:
    """Print the case study's table and write its figure (and --json)."""
    from ips import explain
    from ips.figures.case_study import case_study_figure
    from ips.files import write_bytes
    from ips.models import load_model

    if args.json:
        check_output(args.json, option="--json")
    config = _explain_config(args)
    item, fields, target = _explain_item(args, config)
    templates = tuple(args.templates) if args.templates else None
    spec = _explain_spec(args, config)
    tau = float(setting(args.tau, config, "tau"))
    n_max = args.n_max or max(EXPLAIN_N_MAX, int(config["n_max"]))
    var = config.get("variables", {})
    strategy, merge = var.get("strategy", "content"), var.get("merge_phrases", True)
    template_file = config.get("templates", {}).get("file")
    budget = sampling_budget(args, config["sampling"], explain.ExplainError)
    # cheap checks before a model load that can take seconds
    explain.check_comparison(item, templates, template_file, target)
    n = len(explain.case_variables(item, strategy, n_max, merge, fields))
    if budget is None and n > EXHAUSTIVE_MAX_N:
        raise explain.ExplainError(f"--sampling: the item has n = {n} variables; scoring all 2**{n} "
                           f"masks is beyond exhaustive sampling (n <= {EXHAUSTIVE_MAX_N}); "
                           "use --sampling sparse --budget B")
    t0 = time.perf_counter()
    loaded = load_model(spec, cache_dir=args.cache_dir, device=args.device, threads=args.threads)
    log.info("loaded %s on %s (mask token %r id %d) in %.1f s", spec.name, loaded.device,
             loaded.mask_token, loaded.mask_token_id, time.perf_counter() - t0)
    case = explain.explain(
        loaded, item, templates, tau=tau,
        strategy=strategy, merge_phrases=merge, fields=fields, n_max=n_max,
        template_file=template_file, target=target,
        solver=setting(args.solver, config, "solver"),
        noise=float(setting(args.noise, config, "noise")),
        sgd=config["sgd"],
        batch_tokens=setting(args.batch_tokens, config, "batch_tokens"),
        scorer=setting(args.scorer, config, "scorer"),
        budget=budget,
    )
    print(explain.format_case(case, args.top), end="")
    files = case_study_figure(case, args.out, top=args.top or 12)
    if args.json:
        write_bytes(args.json, (json.dumps(case.to_dict(), indent=1, ensure_ascii=False)
                                + "\n").encode())
        files.append(args.json)
    print("wrote " + ", ".join(map(str, files)))
    log.info("explain done in %.1f s", time.perf_counter() - t0)
    return 0


def _explain_config(args) -> dict:
    from ips.config import load_config, validate

    path = args.config
    if path is None and DEFAULT_CONFIG.is_file():
        path = DEFAULT_CONFIG
        log.info("using %s (give --config to choose another)", path)
    if path is not None:
        return load_config(path)
    return validate({"models": {DEFAULT_MODEL: DEFAULT_MODEL_ENTRY}})


def _explain_item(args, config: dict):
    """The item, the fields variables come from, and the target (None: the kind's default)."""
    from ips import explain

    given = [o for o, v in (("--question", args.question), ("--choices", args.choices),
                            ("--answer", args.answer)) if v is not None]
    if args.sample is not None:
        if given:
            raise explain.ExplainError(f"--sample: give either --dataset/--sample or --question/--choices/"
                               f"--answer, not both ({', '.join(given)} given)")
        if not args.dataset:
            raise explain.ExplainError("--dataset: --sample needs the dataset it is an item of")
        item = explain.dataset_item(config, args.dataset, args.sample)
        entry = config["datasets"][args.dataset]
        return item, args.fields or entry.get("fields"), args.target or entry.get("target")
    if args.dataset:
        raise explain.ExplainError("--sample: --dataset needs the id of one of its items")
    if not given:
        raise explain.ExplainError("--question: give an item (--question, --choices, --answer) or "
                           "--dataset and --sample")
    for o, v in (("--question", args.question), ("--choices", args.choices)):
        if v is None:
            raise explain.ExplainError(f"{o}: missing (an item given here needs --question, --choices "
                               "and --answer)")
    return explain.custom_item(args.question, args.choices, args.answer), args.fields, args.target


def _explain_spec(args, config: dict):
    from ips import explain
    from ips.models import ModelSpec

    name = args.model
    if args.entry is not None:
        if name is None:
            raise explain.ExplainError("--model: --entry needs the model's name (it names the cache "
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
    raise explain.ExplainError(f"--model: no model {name!r} under 'models' in the config (configured: "
                       f"{known}) and no such model directory")


def _safe_name(text: str) -> str:
    name = re.sub(r"[^A-Za-z0-9._-]", "-", text).lstrip("._-")
    return name or "local-model"
