"""`ips metrics`."""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path

from ips.cli.arguments import add_nulls, add_run, add_uncertainty, unit
from ips.nulls import variants

log = logging.getLogger("ips")


def add_parser(sub, common) -> None:
    p = sub.add_parser(
        "metrics",
        parents=[common],
        help="IPS, its order bands, interaction types, consistency and baselines of one "
        "model on one dataset (netCDF out)",
        description="Merge the shards of one model on one dataset (values files of `ips score` "
        "and, in the same order, their interactions files of `ips fit`) and compute IPS by "
        "condition group and order band at --tau (with paired sign-flip tests of the band "
        "order), the τ sweep, per-pair IPS with Appendix G labels, interaction types, output "
        "consistency, accuracy and the representation baseline. "
        "The layout is documented in `ips.formats.metrics`.",
    )
    add_run(p)
    p.add_argument("--tau-sweep", type=unit, nargs="+", default=None, metavar="TAU",
                   help="thresholds of the τ sweep (default: 0.05 0.06 ... 0.20)")
    add_uncertainty(p)
    add_nulls(p)
    p.add_argument("--null-fits", type=Path, default=None, metavar="F.h5",
                   help="the nulls' fits of the same shards (`ips null-fits`): scored at "
                   "--tau instead of fitting the nulls here, with the file's null settings "
                   "(the same numbers; a new τ refits nothing)")
    for v in variants():  # one pair of options Per variant (ips.nulls)
        p.add_argument(f"--{v.kind}-values", type=Path, nargs="*", default=[], metavar="V.h5",
                       help=f"values files of some of the same games scored {v.changes} "
                       f"(ips score {v.flag} --conditions): the {v.kind} null, per {v.setting}")
        p.add_argument(f"--{v.kind}-interactions", type=Path, nargs="*", default=[],
                       metavar="I.h5", help="their interactions files, in the same order")
    p.add_argument("--out", type=Path, required=True, metavar="OUT.nc")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ips.analysis.nulls import Settings
    from ips.analysis.summary import summarize
    from ips.formats.metrics import write_metrics

    t0 = time.perf_counter()
    null = Settings(tuple(args.null_levels), args.null_draws, args.matched_null, args.seed)
    ds = summarize(args.values, args.interactions, tau=args.tau, tau_sweep=args.tau_sweep,
                   seed=args.seed, n_boot=args.resamples, level=args.level,
                   draws=args.permutations, null=null,
                   variant_runs={v.kind: (getattr(args, f"{v.kind}_values"),
                                      getattr(args, f"{v.kind}_interactions")) for v in variants()},
                   normalisation=args.normalisation, null_fits=args.null_fits)
    write_metrics(ds, args.out)
    ips0 = ds["ips"].sel(band="all").values
    a = ds.attrs
    estimate = (f"; sparse estimate: {a['unreliable_games']} of {a['games']} games UNRELIABLE"
                if a["sampling"] == "sparse" else "")
    log.info("wrote %s: %s on %s, %d samples, IPS at τ=%g %s%s (%.2f s)", args.out,
             a["model"], a["dataset"], int(ds["n_samples"]), args.tau,
             ", ".join(f"{g} {x:.4f}" for g, x in zip(ds["group"].values, ips0)), estimate,
             time.perf_counter() - t0)
    return 0
