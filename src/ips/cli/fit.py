"""`ips fit`."""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path

from ips.cli.arguments import (
    add_sampling,
    int_between,
    nonnegative_float,
    positive_float,
    sampling_budget,
)
from ips.config import default
from ips.interactions import SGD_LEARNING_RATE, SGD_STEPS, SOLVERS

log = logging.getLogger("ips")


def add_parser(sub, common) -> None:
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
        "fitted sparsely (ips.interactions.sparse): 'entry_kind', 'entry_set', "
        "'entry_value' per game with 'heldout_error' and 'reliable'. --sampling sparse --budget B fits an exhaustively "
        "scored file from the B masks sparse scoring would have scored.")
    add_sampling(g, "default: sparse for a file with a design, else exhaustive",
                 f"default: {default('sampling')['budget']}")
    g.add_argument("--seed", type=int, default=0,
                   help="seed of the design and of the held-out masks (default: %(default)s)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ips.fitting.cube import default_sampling, fit_file
    from ips.formats.interactions import write_interactions
    from ips.formats.values import read_values

    t0 = time.perf_counter()
    values = read_values(args.input, n_max=args.n_max)
    ds = fit_file(values, args.input, exhaustive=args.sampling == "exhaustive",
                  budget=sampling_budget(args, default_sampling(values)), seed=args.seed,
                  solver=args.solver, noise=args.noise, learning_rate=args.sgd_learning_rate,
                  steps=args.sgd_steps)
    write_interactions(ds, args.out, n_max=args.n_max, input_file=args.input)
    log.info("wrote %s in %.2f s", args.out, time.perf_counter() - t0)
    return 0
