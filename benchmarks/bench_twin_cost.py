"""What the untrained twins (`controls.twins`) cost a study, side by side in one run.

    .venv/bin/python benchmarks/bench_twin_cost.py RUN_DIR --configfile CONFIG

Reads the benchmark files that every heavy rule of a finished run writes
(RUN_DIR/results/benchmarks/<rule>/…/<model>….tsv, snakemake's `benchmark:`) and sums each
rule's job seconds (`s`) over the models that have a twin and over their twins (the model's
name is a component of the file's path), so that both sides ran in the same run, on the same
machine and under the same load. Prints per rule: the models' seconds, the twins' seconds and
their ratio, then the twins' share of all job seconds of the run. The run's wall time is not
split: jobs run side by side.
"""

from __future__ import annotations

import argparse
import csv
from collections import defaultdict
from pathlib import Path

from ips.config import load_config
from ips.controls.twins import twin_name


def job_seconds(run: Path, names: set[str]) -> tuple[dict[str, float], float]:
    """Per rule, the summed seconds of the jobs whose path names one of `names`; and the
    seconds of every job of the run."""
    per_rule: dict[str, float] = defaultdict(float)
    total = 0.0
    root = run / "results" / "benchmarks"
    for f in sorted(root.rglob("*.tsv")):
        with f.open() as fh:
            s = sum(float(r["s"]) for r in csv.DictReader(fh, delimiter="\t"))
        total += s
        parts = set(f.relative_to(root).with_suffix("").parts)
        if parts & names:
            per_rule[f.relative_to(root).parts[0]] += s
    return per_rule, total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", type=Path, help="the run's --directory")
    ap.add_argument("--configfile", type=Path, required=True, help="the run's config")
    args = ap.parse_args()
    config = load_config(args.configfile)
    models = set(config["controls"]["twins"])
    if not models:
        raise SystemExit(f"{args.configfile}: controls.twins lists no model")
    twins = {twin_name(m) for m in models}
    mine, total = job_seconds(args.run, models)
    theirs, _ = job_seconds(args.run, twins)
    print(f"{args.run}: {len(models)} models with a twin; job seconds from the benchmark files")
    print("| rule | models | twins | twins / models |")
    print("|---|---|---|---|")
    for rule in sorted(set(mine) | set(theirs)):
        a, b = mine.get(rule, 0.0), theirs.get(rule, 0.0)
        print(f"| {rule} | {a:.0f} s | {b:.0f} s | {b / a:.2f} |" if a else
              f"| {rule} | 0 s | {b:.0f} s | – |")
    a, b = sum(mine.values()), sum(theirs.values())
    print(f"| all | {a:.0f} s | {b:.0f} s | {b / a:.2f} |")
    print(f"twins: {b:.0f} of the run's {total:.0f} job seconds ({100 * b / total:.1f} %)")


if __name__ == "__main__":
    main()
