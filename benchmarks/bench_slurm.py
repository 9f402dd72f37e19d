"""What Slurm adds to a run: the same small study locally and through profiles/slurm on a real
single-node Slurm, side by side, with each job's time in the rule, in its Slurm job, and
between its submission and its start.

Needs root and the packages (`tests/slurm/cluster install`); starts and stops its own cluster.

    .venv/bin/python benchmarks/bench_slurm.py [--items 4]

Prints the wall time of both runs, the job count and, per job, the mean rule time (the
rule's benchmark file), the mean Slurm job time (sacct Elapsed: the snakemake started inside
the job, srun, the rule) and the mean wait from submission to start (sacct).
"""

from __future__ import annotations

import argparse
import csv
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import yaml

from ips.models.testing import make_tiny_llama

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = ROOT / "tests" / "slurm" / "cluster"
SNAKEMAKE = Path(sys.executable).parent / "snakemake"


def study(model_dir: Path, items: int) -> dict:
    tiny = {"source": {"path": str(model_dir)}, "family": "tiny", "series": "tiny",
            "type": "base", "architecture": "dense", "params": 1000}
    return {"n_max": 3, "n_items": items, "shard_size": 1, "templates": {"mcq": ["T1", "T2"]},
            "few_shot": {"shots": []}, "models": {"tiny": tiny},
            "datasets": {"arc-easy": {"format": "arc", "subset": "ARC-Easy",
                                      "fields": ["question"]}}}


def run(work: Path, *args) -> float:
    t0 = time.perf_counter()
    subprocess.run([str(SNAKEMAKE), "--snakefile", str(ROOT / "Snakefile"), "--directory",
                    str(work), *map(str, args), "results/figures", "--configfile",
                    str(work / "study.yaml")], check=True, capture_output=True, text=True)
    return time.perf_counter() - t0


def seconds(hms: str) -> float:
    h, m, s = (["0"] * 3 + hms.split(":"))[-3:]
    return int(h) * 3600 + int(m) * 60 + float(s)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=4, help="ARC-Easy items, one shard each")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-slurm-"))
    cfg = study(make_tiny_llama(tmp / "tiny"), args.items)
    for name in ("local", "slurm"):
        (tmp / name).mkdir()
        (tmp / name / "study.yaml").write_text(yaml.safe_dump(cfg))
    subprocess.run([CLUSTER, "profile", tmp / "profile"], check=True)

    local = run(tmp / "local", "--cores", "2")
    t0 = time.perf_counter()
    subprocess.run([CLUSTER, "start", tmp / "state"], check=True, capture_output=True)
    started = time.perf_counter() - t0
    try:
        since = datetime.now().strftime("%Y-%m-%dT%H:%M:%S")
        slurm = run(tmp / "slurm", "--workflow-profile", tmp / "profile",
                    "--slurm-init-seconds-before-status-checks", "2")
        out = subprocess.run(["sacct", "-X", "-n", "-P", "-S", since, "-o",
                              "Elapsed,Submit,Start,Comment"],
                             check=True, capture_output=True, text=True).stdout
    finally:
        t0 = time.perf_counter()
        subprocess.run([CLUSTER, "stop", tmp / "state"], check=True)
        stopped = time.perf_counter() - t0

    jobs = [line.split("|") for line in out.splitlines()]
    elapsed = [seconds(e) for e, *_ in jobs]
    wait = [(datetime.fromisoformat(start) - datetime.fromisoformat(submit)).total_seconds()
            for _, submit, start, _ in jobs]
    rule = [float(row["s"]) for f in (tmp / "slurm/results/benchmarks").rglob("*.tsv")
            for row in csv.DictReader(f.open(), delimiter="\t")]
    print(f"cluster start {started:.1f} s, stop {stopped:.1f} s")
    print(f"local run:  {local:6.1f} s  (--cores 2)")
    print(f"slurm run:  {slurm:6.1f} s  ({len(jobs)} jobs; prepare_samples runs locally)  "
          f"ratio {slurm / local:.2f}")
    print(f"per job: rule {statistics.mean(rule):.1f} s (n = {len(rule)} with a benchmark), "
          f"Slurm job {statistics.mean(elapsed):.1f} s, submission to start "
          f"{statistics.mean(wait):.1f} s (median {statistics.median(wait):.1f}, "
          f"max {max(wait):.0f})")


if __name__ == "__main__":
    main()
