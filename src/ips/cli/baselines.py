"""`ips baselines`."""

from __future__ import annotations

import argparse
import csv
import logging
from collections import defaultdict
from dataclasses import asdict, fields
from pathlib import Path

from ips.cli.arguments import add_uncertainty

log = logging.getLogger("ips")


def add_parser(sub, common) -> None:
    p = sub.add_parser(
        "baselines",
        parents=[common],
        help="which claims hold under every baseline, and how the baselines' games agree "
        "(a directory of two CSV tables out)",
        description="Read the claims table and the values and interactions files of the same "
        "study under several baselines (the first: each model's own mask token; "
        "docs/method.md#baselines). Writes claims.csv (every claims row of the first "
        "baseline with each baseline's verdict and the robust verdict: the decided verdict "
        "every baseline gives, else undecided, with those that disagree named) and "
        "agreement.csv (per model, dataset and other baseline: the IPS between the "
        "baselines' games, the Spearman correlation of per-sample and per-pair IPS, the "
        "Jaccard of the changed interactions, each with its n). The layout is documented in "
        "`ips.comparisons.baselines`.",
    )
    p.add_argument("--names", nargs="+", required=True, metavar="BASELINE",
                   help="the baselines, the first being the models' own mask tokens")
    p.add_argument("--claims", type=Path, nargs="+", required=True, metavar="CLAIMS.csv",
                   help="each baseline's claims table, in the order of --names")
    for kind in ("values", "interactions"):
        p.add_argument(f"--{kind}", type=Path, nargs="+", action="append", required=True,
                       metavar=f"{kind.upper()}.h5",
                       help=f"each baseline's {kind} files, one --{kind} per baseline in the "
                       "order of --names (the same shards in the same order as the other)")
    p.add_argument("--tau", type=float, required=True, help="the salience threshold τ")
    add_uncertainty(p)
    p.add_argument("--out", type=Path, required=True, metavar="DIR")
    p.set_defaults(func=run)


AGREEMENT_COLUMNS = ("model", "dataset", "baseline", "against")


def run(args: argparse.Namespace) -> int:
    from ips.comparisons.baselines import Agreement, agreement, robust_claims, robust_columns
    from ips.errors import InputError
    from ips.formats.shards import load, read_shard
    from ips.outputs import atomic_dir

    names = args.names
    for option in ("claims", "values", "interactions"):
        if len(getattr(args, option)) != len(names):
            raise InputError(f"--{option}: {len(getattr(args, option))} given for "
                             f"{len(names)} baselines (--names); give one per baseline")
    tables = {}
    for name, path in zip(names, args.claims):
        try:
            with open(path, newline="", encoding="utf-8") as f:
                tables[name] = list(csv.DictReader(f))
        except OSError as e:
            raise InputError(f"--claims {path}: cannot read it ({e.strerror})") from None
    # each baseline's (model, dataset) → its files, in the order given
    runs = []
    for name, values, interactions in zip(names, args.values, args.interactions):
        if len(values) != len(interactions):
            raise InputError(f"baseline {name}: {len(values)} values files and "
                             f"{len(interactions)} interactions files; give one of each a shard")
        files = defaultdict(lambda: ([], []))
        for v, i in zip(values, interactions):
            attrs = read_shard(v).attrs
            files[attrs["model"], attrs["dataset"]][0].append(v)
            files[attrs["model"], attrs["dataset"]][1].append(i)
        runs.append(files)
    rows = []
    for name, files in zip(names[1:], runs[1:]):
        for (model, dataset), (values, interactions) in sorted(files.items()):
            if (model, dataset) not in runs[0]:
                raise InputError(f"baseline {name}: {model} / {dataset} has no files under "
                                 f"{names[0]}")
            got = agreement(load(*runs[0][model, dataset]), load(values, interactions),
                            args.tau, args.permutations, args.seed,
                            where=f"{model} / {dataset} under {name}")
            rows.append({"model": model, "dataset": dataset, "baseline": name,
                         "against": names[0], **asdict(got)})
            log.info("%s / %s: %s against %s: IPS between them %.3f (%d samples), ρ samples "
                     "%.2f, ρ pairs %.2f, changed Jaccard %.2f (%d cells)", model, dataset,
                     name, names[0], got.baseline_ips, got.n_valued, got.sample_rho,
                     got.pair_rho, got.changed_jaccard, got.n_cells)
    robust = robust_claims(tables)
    with atomic_dir(args.out) as tmp:
        _write(tmp / "claims.csv", robust_columns(names), robust)
        _write(tmp / "agreement.csv",
               AGREEMENT_COLUMNS + tuple(f.name for f in fields(Agreement)), rows)
    decided = [sum(r[k] != "undecided" for r in robust)
               for k in ("robust_verdict", "robust_raw_verdict")]
    log.info("wrote %s: %d claims rows, %d decided under every baseline (raw: %d); %d "
             "agreement rows", args.out, len(robust), *decided, len(rows))
    return 0


def _write(path: Path, columns, rows: list[dict]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(columns))
        w.writeheader()
        for r in rows:
            w.writerow({k: f"{v:.6g}" if isinstance(v, float) else v for k, v in r.items()})
