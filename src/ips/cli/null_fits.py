"""`ips null-fits`."""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path

from ips.cli.arguments import add_nulls, add_shards

log = logging.getLogger("ips")


def add_parser(sub, common) -> None:
    p = sub.add_parser(
        "null-fits",
        parents=[common],
        help="fit the perturbed games of the Gaussian and matched-size nulls of one model on "
        "one dataset once, for `ips metrics --null-fits` at any τ (HDF5 out)",
        description="Merge the shards of one model on one dataset (values files of `ips score` "
        "and, in the same order, their interactions files of `ips fit`), perturb every game "
        "as the nulls do (ips.analysis.nulls) and fit each as its own fit was made. None of "
        "it depends on τ: `ips metrics --null-fits OUT` scores the fits at its τ, with the "
        "numbers it would compute by fitting them itself. The layout is documented in "
        "`ips.formats.null_fits`.",
    )
    add_shards(p)
    add_nulls(p)
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the noise draws: `ips metrics --seed` (default: %(default)s)")
    p.add_argument("--out", type=Path, required=True, metavar="OUT.h5")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ips.analysis.null_fits import fit_nulls
    from ips.analysis.nulls import Settings
    from ips.formats.null_fits import write_null_fits
    from ips.formats.shards import load

    t0 = time.perf_counter()
    merged = load(args.values, args.interactions)
    fits = fit_nulls(merged, Settings(tuple(args.null_levels), args.null_draws,
                                      args.matched_null, args.seed))
    write_null_fits(fits, args.out)
    log.info("wrote %s: %s on %s, %d samples, %d levels x %d draws, %d matched pairs (%.2f s)",
             args.out, merged.attrs.get("model"), merged.attrs.get("dataset"),
             len(merged.samples), len(fits.levels), fits.draws, len(fits.pairs),
             time.perf_counter() - t0)
    return 0
