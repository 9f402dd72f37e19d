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
from ips.config import EXHAUSTIVE_MAX_N, default
from ips.errors import InputError
from ips.interactions import SGD_LEARNING_RATE, SGD_STEPS, SOLVERS

log = logging.getLogger("ips")


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
    from ips.fit import fit_sparse, fit_values
    from ips.formats.hdf5 import write_dataset
    from ips.formats.values import read_values

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
