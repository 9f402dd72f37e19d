"""`ips figures`."""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path

from ips.cli.arguments import json_arg
from ips.config import validate_hypotheses

log = logging.getLogger("ips")


def add_parser(sub, common) -> None:
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
    p.add_argument("--hypotheses", type=json_arg, default=[], metavar="JSON",
                   help="the confirmatory family, a JSON list of {claim, scope, direction} "
                   "naming rows of claims.csv: Holm over them (column holm_p; config "
                   "`hypotheses`)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ips.figures.make import make_figures

    t0 = time.perf_counter()
    validate_hypotheses(args.hypotheses, "--hypotheses")
    files = make_figures(args.metrics, args.factors, args.out, args.hypotheses)
    log.info("wrote %s: %s (%.1f s)", args.out, ", ".join(files), time.perf_counter() - t0)
    return 0

