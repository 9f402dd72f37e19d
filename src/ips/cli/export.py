"""`ips export`."""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path

from ips.cli.arguments import add_run

log = logging.getLogger("ips")


def add_parser(sub, common) -> None:
    p = sub.add_parser(
        "export",
        parents=[common],
        help="the interactions and values of one model on one dataset as tidy tables of "
        "words (Parquet and CSV out)",
        description="Read the shards of one model on one dataset (values files of `ips score` "
        "and, in the same order, their interactions files of `ips fit`) and write, into OUT, "
        "interactions.{parquet,csv} (per sample, condition and subset S: its words, order, "
        "AND and OR effects, normalised effects, salient at --tau) and values.{parquet,csv} "
        "(v per mask with the words kept). The columns are documented in "
        "`ips.analysis.labelled`; `LabelledInteractions.load(OUT)` reads them back.",
    )
    add_run(p)
    p.add_argument("--out", type=Path, required=True, metavar="OUT",
                   help="directory the tables are written into (replaced as a whole)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ips.analysis.labelled import LabelledInteractions
    from ips.errors import InputError
    from ips.outputs import atomic_dir

    if len(args.values) != len(args.interactions):
        raise InputError(f"--interactions: {len(args.interactions)} files for "
                         f"{len(args.values)} values files; give one per values file")
    for path in (*args.values, *args.interactions):
        if not path.is_file():
            raise InputError(f"{path}: no such file; score and fit the run first")
    t0 = time.perf_counter()
    table = LabelledInteractions.from_files(args.values, args.interactions, args.tau,
                                            args.normalisation)
    with atomic_dir(args.out) as tmp:
        table.save(tmp)
    t = table.interactions
    log.info("wrote %s: %s on %s, %d samples, %d interactions (%d salient at τ=%g) (%.2f s)",
             args.out, t["model"].iat[0], t["dataset"].iat[0], t["sample"].nunique(), len(t),
             len(table.salient()), args.tau, time.perf_counter() - t0)
    return 0
