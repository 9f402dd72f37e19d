"""`ips run`: the workflow on a study kept in a folder of its own."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from ips.errors import InputError

# the checkout the package runs from (`make install` installs it editable)
SNAKEFILE = Path(__file__).resolve().parents[3] / "Snakefile"


def add_parser(sub, common) -> None:
    p = sub.add_parser(
        "run",
        parents=[common],
        help="run the workflow on a study config in the current folder",
        description="Run the workflow (Snakemake) on the study CONFIG from the folder you are "
        "in: results/ and logs/ are written there, relative paths of the config (a dataset "
        "file, a model folder) are read from there, and every other argument goes to "
        "Snakemake (targets, -n, --cores N, --config key=value, --workflow-profile "
        "profiles/slurm, ...; --cores all unless given). The workflow is the checkout the "
        "package was installed from (docs/workflow.md#a-study-in-its-own-folder).",
    )
    p.add_argument("config", type=Path, help="the study's config file (YAML)")
    p.add_argument("snakemake", nargs=argparse.REMAINDER, metavar="...",
                   help="arguments for Snakemake")
    p.set_defaults(func=run)


def command(config: Path, extra: list[str]) -> list[str]:
    """The Snakemake command line: `--configfile` last, since it takes every word after it."""
    if not SNAKEFILE.is_file():
        raise InputError(f"{SNAKEFILE}: no workflow beside the package; install ips from its "
                         "checkout with `make install`")
    if not config.is_file():
        raise InputError(f"{config}: no such config file (in {Path.cwd()})")
    cores = [] if any(a in ("-c", "-j", "--cores", "--jobs") or a.startswith(("--cores=",
                                                                          "--jobs="))
                      for a in extra) else ["--cores", "all"]
    return [sys.executable, "-m", "snakemake", "--snakefile", str(SNAKEFILE), "--directory",
            str(Path.cwd()), *cores, *extra, "--configfile", str(config.resolve())]


def run(args: argparse.Namespace) -> int:
    return subprocess.run(command(args.config, args.snakemake)).returncode
