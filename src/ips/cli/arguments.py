"""Argument types of the `ips` command line: each parses one option's text or raises
`argparse.ArgumentTypeError` with the reason (shown by argparse next to the option); and the
options that several commands share (sampling; how a model computes), and `setting`, which
reads a value from a flag, else the config, else the schema."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from ips import baselines
from ips.config import MASKINGS, MODEL_CACHE, SAMPLINGS, default
from ips.errors import InputError


def json_arg(text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise argparse.ArgumentTypeError(f"not valid JSON ({e})") from None


def nonnegative_float(text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not (math.isfinite(x) and x >= 0):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text}")
    return x


def positive_float(text: str) -> float:
    x = nonnegative_float(text)
    if x == 0:
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text}")
    return x


def int_between(lo: int, hi: int):
    def parse(text: str) -> int:
        try:
            x = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if not lo <= x <= hi:
            raise argparse.ArgumentTypeError(f"must be in {lo}..{hi}, got {x}")
        return x

    parse.__name__ = f"integer in {lo}..{hi}"
    return parse


def baseline_setting(text: str) -> str:
    """A baseline's setting (`ips.baselines`: every registered kind, plug-ins included), as
    the argument of `--baseline`."""
    if baselines.kind_of(text) is None:
        raise argparse.ArgumentTypeError(f"{text!r} is none of {baselines.syntax()}")
    return text


def add_baseline(parser, what: str) -> None:
    """--baseline: another baseline than the model's own; `what` it is used for."""
    parser.add_argument("--baseline", type=baseline_setting, metavar="SETTING",
                        help=f"{what} (docs/method.md#baselines): {baselines.describe()}")


def add_plugins(parser) -> None:
    """--plugin: a user's baseline (`ips.plugins`), imported before the arguments are read
    (`ips.cli.main`), so that its settings are valid and listed in every help text."""
    parser.add_argument("--plugin", action="append", default=[], metavar="MODULE_OR_FILE",
                        help="import this plug-in first (a module name or a .py file; "
                        "repeatable): its baselines join the built-in ones")


def unit(text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not (math.isfinite(x) and 0 < x < 1):
        raise argparse.ArgumentTypeError(f"must lie in (0, 1), got {text}")
    return x


def add_sampling(group, mode_default: str, budget_default: str) -> None:
    """--sampling and --budget (schema key `sampling`); the defaults are named in the help."""
    group.add_argument("--sampling", choices=SAMPLINGS, default=None,
                       help=f"all 2**n masks, or a design of --budget masks ({mode_default})")
    group.add_argument("--budget", type=int_between(16, 2**62), default=None, metavar="B",
                       help=f"masked prompts per prompt with --sampling sparse ({budget_default})")


def sampling_budget(args: argparse.Namespace, sampling: dict, error=InputError) -> int | None:
    """The budget that --sampling/--budget ask for, `sampling` ({mode, budget}) giving what
    a flag leaves out; None for exhaustive sampling. `error` is raised for --budget without
    sparse sampling."""
    if (args.sampling or sampling["mode"]) == "exhaustive":
        if args.budget is not None:
            raise error("--budget: applies to --sampling sparse only")
        return None
    return args.budget or sampling["budget"]


def setting(flag, config: dict | None, key: str):
    """A command's value of config `key`: its flag's, else the config's, else the schema's
    default."""
    if flag is not None:
        return flag
    return config[key] if config is not None else default(key)


def occlusion(args, settings: dict, config: dict | None):
    """The reference model's occlusion ranking (`reference_occlusion`) of `ips samples` and
    `ips score`, from their flags and config."""
    from ips.scoring.occlusion import reference_occlusion

    return reference_occlusion(
        settings, config, getattr(args, "reference_entry", None), cache_dir=args.cache_dir,
        device=args.device, threads=args.threads,
        batch_tokens=setting(args.batch_tokens, config, "batch_tokens"),
        masking=setting(getattr(args, "masking", None), config, "masking"))


def add_masking(group) -> None:
    """--masking: how an absent word is masked (`ips.config.MASKINGS`)."""
    group.add_argument("--masking", choices=MASKINGS, default=None,
                       help="tokens: each token of an absent word becomes the mask token; "
                       "word: the word becomes one mask token after its space (Appendix A; "
                       "docs/method.md#masking) (default: the config's masking, else "
                       f"{default('masking')})")


def add_compute(group) -> None:
    """--batch-tokens, --threads and --device: how a command that runs a model computes."""
    group.add_argument("--batch-tokens", type=int_between(1, 10**9), metavar="T",
                       help="cap on tokens per forward batch (default: the config's "
                       f"batch_tokens, else {default('batch_tokens')})")
    group.add_argument("--threads", type=int_between(1, 4096), default=None,
                       help="CPU threads for torch (default: torch's choice)")
    group.add_argument("--device", default=None,
                       help="torch device (default: cuda if visible, else cpu)")


def add_model(p) -> None:
    """--model with --config or --entry: the model a command runs."""
    p.add_argument("--model", required=True, help="model name (under `models` in the config)")
    p.add_argument("--config", type=Path, help="workflow configuration holding the model entry")
    p.add_argument("--entry", type=json_arg, metavar="JSON",
                   help="the model's config entry as JSON, instead of --config")
    p.add_argument("--cache-dir", type=Path, default=MODEL_CACHE,
                   help="where converted models are kept (default: %(default)s)")


def model_spec(args: argparse.Namespace, config: dict | None):
    """The `ModelSpec` of --model: its --entry, else its entry in the config."""
    from ips.models.entries import ModelSpec

    if args.entry is not None:
        return ModelSpec.from_config(args.model, args.entry)
    if config is None:
        raise InputError("give --config or --entry")
    if args.model not in config["models"]:
        known = ", ".join(config["models"]) or "none"
        raise InputError(f"config: no model {args.model!r} under 'models' (configured: {known})")
    return ModelSpec.from_config(args.model, config["models"][args.model])


def add_shards(p: argparse.ArgumentParser) -> None:
    """The shards of one model on one dataset (`ips metrics`, `ips export`, `ips null-fits`)."""
    p.add_argument("--values", type=Path, nargs="+", required=True, metavar="V.h5",
                   help="values files (one per shard)")
    p.add_argument("--interactions", type=Path, nargs="+", required=True, metavar="I.h5",
                   help="interactions files, one per values file, in the same order")


def add_run(p: argparse.ArgumentParser) -> None:
    """The shards of one model on one dataset, the salience threshold and the normalisation
    (`ips metrics`, `ips export`)."""
    from ips.analysis.metrics import NORMALISATIONS

    add_shards(p)
    p.add_argument("--tau", type=unit, default=0.1,
                   help="salience threshold in (0, 1) (default: %(default)s)")
    p.add_argument("--normalisation", choices=NORMALISATIONS, default=default("normalisation"),
                   help="the effects the min-max normalisation runs over: the non-empty AND "
                   "and OR interactions, or all 2^(n+1) with the empty set's (`paper`: "
                   "Section 3.1 read literally; exhaustive fits) (default: %(default)s)")


def add_nulls(p: argparse.ArgumentParser) -> None:
    """The Gaussian and matched-size nulls' settings (`ips metrics`, `ips null-fits`)."""
    nulls = default("nulls")["noise"]
    p.add_argument("--null-levels", type=unit, nargs="+", default=nulls["levels"], metavar="C",
                   help="Gaussian null levels: noise of C times the range of v on every value "
                   "of a game, refitted and scored against its fit (default: %(default)s)")
    p.add_argument("--null-draws", type=int_between(0, 1000), default=nulls["draws"],
                   metavar="K", help="noise draws per game and level (and per side of a pair "
                   "for the matched-size null); 0 computes no null (default: %(default)s)")
    p.add_argument("--no-matched-null", dest="matched_null", action="store_false",
                   default=nulls["matched"],
                   help="skip the matched-size null of every template pair")


def add_uncertainty(p: argparse.ArgumentParser) -> None:
    """The bootstrap and sign-flip options of `ips metrics` and `ips factors`."""
    from ips.analysis.uncertainty import DRAWS, EXACT_MAX, LEVEL, N_BOOT

    g = p.add_argument_group(
        "bootstrap intervals and paired sign-flip tests (ips.analysis.uncertainty)")
    g.add_argument("--seed", type=int, default=0,
                   help="seed of the bootstrap and of the sign-flip draws (default: %(default)s)")
    g.add_argument("--resamples", type=int_between(100, 10**7), default=N_BOOT,
                   help="bootstrap replicates (default: %(default)s)")
    g.add_argument("--level", type=unit, default=LEVEL,
                   help="confidence level in (0, 1) (default: %(default)s)")
    g.add_argument("--permutations", type=int_between(99, 10**7), default=DRAWS,
                   help=f"random sign vectors of a sign-flip test on more than {EXACT_MAX} "
                   "samples (fewer are tested exactly; default: %(default)s)")
