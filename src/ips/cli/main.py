"""Command line: `ips <command> ...` (also `python -m ips`).

Each command is a module of this package whose `add_parser(subparsers, common)` registers
its parser and sets `func` to its `run`, a function of the parsed arguments that returns the
exit code. Bad input files
raise `ips.errors.InputError`, reported in one line with exit code 2.
"""

from __future__ import annotations

import argparse
import logging
import sys

from ips import __version__, plugins
from ips.cli import (
    archive,
    baselines,
    docs,
    explain,
    export,
    factors,
    figures,
    fit,
    metrics,
    null_fits,
    prepare_model,
    run,
    samples,
    score,
)
from ips.cli.arguments import add_plugins
from ips.errors import InputError
from ips.outputs import check_output

log = logging.getLogger("ips")

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ips",
        description="Interaction-based prompt sensitivity (IPS) of LLMs.",
    )
    parser.add_argument("--version", action="version", version=f"ips {__version__}")
    add_plugins(parser)  # before or after the command: read first either way (`main`)
    common = argparse.ArgumentParser(add_help=False)
    add_plugins(common)
    common.add_argument(
        "--log-level",
        default="INFO",
        type=str.upper,
        choices=LOG_LEVELS,
        help="logging threshold on stderr (default: %(default)s)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    samples.add_parser(sub, common)
    prepare_model.add_parser(sub, common)
    score.add_parser(sub, common)
    fit.add_parser(sub, common)
    null_fits.add_parser(sub, common)
    metrics.add_parser(sub, common)
    export.add_parser(sub, common)
    factors.add_parser(sub, common)
    figures.add_parser(sub, common)
    baselines.add_parser(sub, common)
    explain.add_parser(sub, common)
    archive.add_parser(sub, common)
    docs.add_parser(sub, common)
    run.add_parser(sub, common)
    return parser


def main(argv: list[str] | None = None) -> int:
    # the plug-ins first: their settings are valid arguments, and listed in the help texts
    first = argparse.ArgumentParser(add_help=False)
    add_plugins(first)
    try:
        plugins.load(first.parse_known_args(argv)[0].plugin, "--plugin")
    except InputError as e:
        print(f"ips: error: {e}", file=sys.stderr)
        return 2
    args = build_parser().parse_args(argv)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    level = log.level
    log.addHandler(handler)
    log.setLevel(args.log_level)
    try:
        out = getattr(args, "out", None)  # the destinations first, before any work
        for path in out if isinstance(out, list) else [] if out is None else [out]:
            check_output(path, directory=args.command in ("figures", "baselines", "export"))
        return args.func(args)
    except InputError as e:
        print(f"ips {args.command}: error: {e}", file=sys.stderr)
        return 2
    finally:
        log.removeHandler(handler)
        log.setLevel(level)

