"""Command line: `ips <command> ...` (also `python -m ips`).

Each command is a `_add_<name>(subparsers, common)` that registers its parser and sets
`func`, a function of the parsed arguments that returns the exit code. Bad input files
raise `ips.errors.InputError`, reported in one line with exit code 2.
"""

from __future__ import annotations

import argparse
import logging
import sys

from ips import __version__
from ips.cli.explain import _add_explain
from ips.cli.factors import _add_factors
from ips.cli.figures import _add_figures
from ips.cli.fit import _add_fit
from ips.cli.metrics import _add_metrics
from ips.cli.prepare_model import _add_prepare_model
from ips.cli.samples import _add_samples
from ips.cli.score import _add_score
from ips.errors import InputError

log = logging.getLogger("ips")

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


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
    from ips.outputs import check_output
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


# ---------------------------------------------------------------- ips samples
# These commands take their settings either from a config file (`--config`, for people) or
# as JSON (`--settings` / `--entry`, for workflow rules, which pass exactly the values they
# depend on through `params:`).


# ---------------------------------------------------------------- ips prepare-model


# ---------------------------------------------------------------- ips score


# ---------------------------------------------------------------- ips metrics


# ---------------------------------------------------------------- ips factors


# ---------------------------------------------------------------- ips figures


# ---------------------------------------------------------------- ips explain
