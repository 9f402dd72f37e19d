"""`ips factors`."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from ips.cli.arguments import add_uncertainty

log = logging.getLogger("ips")


def add_parser(sub, common) -> None:
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
        "ranking over the τ sweep. The layout is documented in `ips.formats.factors`.",
    )
    p.add_argument("--metrics", type=Path, nargs="+", required=True, metavar="M.nc",
                   help="metrics files (one per model and dataset)")
    add_uncertainty(p)
    p.add_argument("--out", type=Path, required=True, metavar="OUT.nc")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ips.comparisons.compare import compare
    from ips.formats.factors import write_factors

    ds = compare(args.metrics, seed=args.seed, n_boot=args.resamples, level=args.level,
                 draws=args.permutations)
    write_factors(ds, args.out)
    for f, note in zip(ds["factor"].values, ds["factor_note"].values):
        log.info("factor %s: %s", f, note)
    log.info("wrote %s: %d comparisons", args.out, ds.sizes["comparison"])
    return 0
