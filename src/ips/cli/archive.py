"""`ips archive`: a study's raw scores packed, restored and checked, and its committed tables
compared with a rebuild's (docs/workflow.md#rebuilding-a-study)."""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path

from ips.cli.arguments import nonnegative_float
from ips.errors import InputError
from ips.outputs import check_output

log = logging.getLogger("ips")


def add_parser(sub, common) -> None:
    p = sub.add_parser(
        "archive",
        parents=[common],
        help="a study's raw scores: pack, restore, verify; its tables against a rebuild's",
        description="A study's archive holds the samples and values files of its run "
        "(xz-compressed, with a sha256 manifest) and the config it ran with, so that its "
        "tables are rebuilt without a model (`make study-NAME`). The layout is documented "
        "in `ips.formats.archive`.",
    )
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    pack = actions.add_parser("pack", parents=[common],
                              help="archive a finished run's samples and values files")
    pack.add_argument("--results", type=Path, required=True, metavar="DIR",
                      help="the run's results/ folder")
    pack.add_argument("--config", type=Path, required=True, metavar="CONFIG.yaml",
                      help="the config the run was made with (copied into the archive)")
    pack.add_argument("--archive", type=Path, required=True, metavar="ARCHIVE",
                      help="the archive folder to write (replaced as a whole)")
    pack.set_defaults(func=run_pack)
    restore = actions.add_parser("restore", parents=[common],
                                 help="write one raw file of an archive, checked against "
                                 "its manifest")
    restore.add_argument("--archive", type=Path, required=True, metavar="ARCHIVE")
    restore.add_argument("path", metavar="PATH",
                         help="the file's path relative to results/ (e.g. samples/mmlu.json)")
    restore.add_argument("--out", type=Path, required=True, metavar="FILE")
    restore.set_defaults(func=run_restore)
    verify = actions.add_parser("verify", parents=[common],
                                help="check every file of an archive against its manifest")
    verify.add_argument("archive", type=Path, metavar="ARCHIVE")
    verify.set_defaults(func=run_verify)
    compare = actions.add_parser("compare", parents=[common],
                                 help="a study's committed CSV tables against a rebuild's; "
                                 "exit 1 when any differs")
    compare.add_argument("committed", type=Path, metavar="STUDY",
                         help="the folder of the committed tables (e.g. studies/confirm)")
    compare.add_argument("rebuilt", type=Path, metavar="FIGURES",
                         help="the rebuild's results/figures folder")
    compare.add_argument("--tolerance", type=nonnegative_float, default=0.0, metavar="T",
                         help="largest absolute difference of two numbers taken as equal "
                         "(default: %(default)s, the same numbers)")
    compare.set_defaults(func=run_compare)


def run_pack(args: argparse.Namespace) -> int:
    from ips.formats.archive import pack, size

    for path, what in ((args.results, "folder"), (args.config, "file")):
        if not path.exists():
            raise InputError(f"{path}: no such {what}")
    check_output(args.archive, directory=True, option="--archive")
    t0 = time.perf_counter()
    entries = pack(args.results, args.config, args.archive)
    log.info("wrote %s: %d raw files, %.1f MB packed from %.1f MB (%.1f s)", args.archive,
             len(entries), size(args.archive) / 1e6, sum(e.size for e in entries) / 1e6,
             time.perf_counter() - t0)
    return 0


def run_restore(args: argparse.Namespace) -> int:
    from ips.formats.archive import restore

    restore(args.archive, args.path, args.out)
    log.info("restored %s from %s", args.out, args.archive)
    return 0


def run_verify(args: argparse.Namespace) -> int:
    from ips.formats.archive import size, verify

    entries = verify(args.archive)
    log.info("%s: %d raw files match their manifest, %.1f MB on disk", args.archive,
             len(entries), size(args.archive) / 1e6)
    return 0


def run_compare(args: argparse.Namespace) -> int:
    from ips.formats.tables import compare_tables

    diffs = compare_tables(args.committed, args.rebuilt, args.tolerance)
    for d in diffs:
        print(d.line())
    differ = [d.name for d in diffs if not d.equal]
    print(f"{len(diffs) - len(differ)} of {len(diffs)} tables of {args.committed} equal "
          f"(tolerance {args.tolerance:g})")
    return 1 if differ else 0
