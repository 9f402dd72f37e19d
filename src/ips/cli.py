"""Command line: `ips <command> ...` (also `python -m ips`).

Each command is a `_add_<name>(subparsers, common)` that registers its parser and sets
`func`, a function of the parsed arguments that returns the exit code. Bad input files
raise `ips.io.InputError`, reported in one line with exit code 2.
"""

from __future__ import annotations

import argparse
import logging
import math
import sys
import time
from pathlib import Path

from ips import __version__
from ips.interactions import SOLVERS
from ips.io import InputError

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
    _add_fit(sub, common)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    level = log.level
    log.addHandler(handler)
    log.setLevel(args.log_level)
    try:
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
        "auto: exact for small n, first_order beyond (default: %(default)s)",
    )
    p.add_argument(
        "--noise",
        type=_nonnegative_float,
        default=0.0,
        metavar="EPS",
        help="allow a noise term |q_T| <= EPS*|v(x_N) - v(x_0)| on v; 0 fits v exactly "
        "(default: %(default)s)",
    )
    p.add_argument(
        "--n-max",
        type=_int_between(1, 16),
        default=10,
        metavar="N",
        help="largest number of variables accepted per sample (default: %(default)s)",
    )
    p.set_defaults(func=_fit)


def _fit(args: argparse.Namespace) -> int:
    from ips.fit import fit_values
    from ips.io import read_values, write_dataset

    t0 = time.perf_counter()
    values = read_values(args.input, n_max=args.n_max)
    n_samples, n_cond, _ = values.v.shape
    log.info(
        "fit %s: %d samples x %d conditions, n in %s, solver %s, noise %g",
        args.input, n_samples, n_cond, sorted(set(values.n_vars.tolist())), args.solver, args.noise,
    )
    try:
        ds = fit_values(values, solver=args.solver, noise=args.noise)
    except ValueError as e:  # ips.interactions rejects these values or options
        log.debug("fit failed", exc_info=True)
        raise InputError(f"{args.input}: {e}") from e
    ds.attrs["n_max"] = args.n_max
    ds.attrs["input_file"] = str(args.input)
    write_dataset(ds, args.out)
    log.info(
        "wrote %s (solver used: %s) in %.2f s",
        args.out, ds.attrs["solver_used"], time.perf_counter() - t0,
    )
    return 0


# ---------------------------------------------------------------- argument types


def _nonnegative_float(text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not (math.isfinite(x) and x >= 0):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text}")
    return x


def _int_between(lo: int, hi: int):
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
