"""What the baseline null and the peers' analyses add to `make figures`, side by side in one run.

    .venv/bin/python benchmarks/bench_baseline_null.py [--repeats 1]

Runs the embedded default's whole DAG (`config.yaml`, target results/figures) twice from
empty results folders: once as shipped, once with `nulls.baseline.others: []` (no baseline null), the
order alternating over `--repeats`. The converted models (resources/, which `make figures`
makes once) are shared by both, so the model conversion counts in neither. Prints each run's
wall time, the ratio, the job time of the baseline null's own jobs (rules score_baseline_null and fit_baseline_null,
from their benchmark files) and, from a profile of `ips metrics` and `ips figures` over the
shipped run's outputs, the seconds spent in the peers' analyses (`PEER_FUNCTIONS`: the
output-level metrics, the claims across and within models, the peer table) against those
commands' total. About 2 × 10 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import cProfile
import csv
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from ips.cli.main import main as ips_main
from ips.config import MODEL_CACHE

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = Path(sys.executable).parent / "snakemake"


def dag(work: Path, config: Path, *targets: str) -> float:
    """Wall seconds of the DAG to `targets` (default results/figures) in `work`, the models
    shared through resources/."""
    work.mkdir()
    (work / "resources").symlink_to(ROOT / "resources")
    t0 = time.perf_counter()
    done = subprocess.run([str(SNAKEMAKE), "--snakefile", str(ROOT / "Snakefile"), "--cores",
                           "all", "--directory", str(work), *(targets or ["results/figures"]),
                           "--configfile", str(config)], capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"snakemake failed in {work}:\n{done.stderr[-3000:]}")
    return time.perf_counter() - t0


def job_seconds(work: Path, rule_dir: str) -> float:
    """Summed `s` of the benchmark files under results/benchmarks/<rule_dir>."""
    total = 0.0
    for f in (work / "results" / "benchmarks" / rule_dir).rglob("*.tsv"):
        with f.open() as fh:
            total += sum(float(r["s"]) for r in csv.DictReader(fh, delimiter="\t"))
    return total


#: where the peers' analyses run: the output-level metrics per cell (`ips metrics`) and the
#: across- and within-model claims, the peer table and its README section (`ips figures`)
PEER_FUNCTIONS = {("analysis/summary.py", "_peer_variables"),
                  ("comparisons/claims/across_models.py", "peer_claims"),
                  ("comparisons/claims/nulls.py", "_beyond_size"),
                  ("figures/tables/results.py", "peer_rows"), ("figures/text/readme.py", "peer_section")}


def peers_share(work: Path, config: dict) -> tuple[float, float]:
    """(seconds in `PEER_FUNCTIONS`, wall seconds) of `ips metrics` on every cell of `work`
    and `ips figures`, run again under cProfile with the flags the workflow passes."""
    res, out = work / "results", work / "rerun"
    out.mkdir()
    flags = ["--tau", config["tau"], "--tau-sweep", *config["tau_sweep"], "--seed",
             config["seed"], "--resamples", config["bootstrap"]["resamples"], "--level",
             config["bootstrap"]["level"], "--permutations", config["permutation"]["draws"],
             "--null-levels", *config["nulls"]["noise"]["levels"], "--null-draws",
             config["nulls"]["noise"]["draws"]]
    prof, calls = cProfile.Profile(), []
    for cell in sorted((res / "metrics").glob("*/*.nc")):
        m, d = cell.parent.name, cell.stem
        files = {f"--{kind}-{what}": sorted(res.glob(f"nulls/{kind}/*/{what}/{m}/{d}.h5"))
                 for kind in ("precision", "baseline") for what in ("values", "interactions")}
        calls.append(["metrics", "--values", *sorted(res.glob(f"values/{m}/{d}/*.h5")),
                      "--interactions", *sorted(res.glob(f"interactions/{m}/{d}/*.h5")),
                      *flags, *[x for k, v in files.items() for x in (k, *v)],
                      "--out", out / f"{m}-{d}.nc"])
    calls.append(["figures", "--metrics", *sorted(res.glob("metrics/*/*.nc")), "--factors",
                  res / "factors" / "factors.nc", "--out", out / "figures"])
    t0 = time.perf_counter()
    for args in calls:
        code = prof.runcall(ips_main, [str(a) for a in args])
        if code:
            sys.exit(f"ips {args[0]} failed ({code}) on {work}")
    wall = time.perf_counter() - t0
    stats = pstats.Stats(prof).stats
    in_peers = sum(v[3] for k, v in stats.items()
                   if any(k[0].endswith(f) and k[2] == n for f, n in PEER_FUNCTIONS))
    return in_peers, wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=1)
    args = ap.parse_args()
    shipped = yaml.safe_load((ROOT / "config.yaml").read_text())
    with tempfile.TemporaryDirectory(prefix="bench-baseline-null-") as tmp:
        tmp = Path(tmp)
        nulls = shipped["nulls"]
        without = dict(shipped, nulls=dict(nulls, baseline=dict(nulls["baseline"], others=[])))
        configs = {"shipped": tmp / "shipped.yaml", "no baseline null": tmp / "without.yaml"}
        configs["shipped"].write_text(yaml.safe_dump(shipped))
        configs["no baseline null"].write_text(yaml.safe_dump(without))
        (ROOT / "resources").mkdir(exist_ok=True)
        prepared = dag(tmp / "prepare", configs["shipped"], *(
            f"{MODEL_CACHE.as_posix()}/{m}.path" for m in shipped["models"]))
        print(f"models converted or found in {prepared:.0f} s (not counted)", flush=True)
        walls: dict[str, list[float]] = {k: [] for k in configs}
        for r in range(args.repeats):
            for name in (list(configs) if r % 2 == 0 else list(configs)[::-1]):
                work = tmp / f"{name.replace(' ', '-')}-{r}"
                walls[name].append(dag(work, configs[name]))
                print(f"run {r + 1}, {name}: {walls[name][-1]:.0f} s", flush=True)
        a, b = (min(walls[k]) for k in configs)
        print(f"whole DAG, best of {args.repeats}: shipped {a:.0f} s, no baseline null {b:.0f} s, "
              f"ratio {a / b:.3f}")
        work = tmp / "shipped-0"
        null_jobs = job_seconds(work, "nulls/baseline")
        main_jobs = job_seconds(work, "score") + job_seconds(work, "fit")
        print(f"baseline null jobs (score_baseline_null, fit_baseline_null): {null_jobs:.0f} s "
              "of job time; main "
              f"score and fit jobs: {main_jobs:.0f} s")
        in_peers, total = peers_share(work, shipped)
        print(f"peers' analyses in ips metrics (every cell) and ips figures: {in_peers:.2f} s "
              f"of {total:.1f} s under the profiler; share of the shipped DAG "
              f"{in_peers / a:.2%}")


if __name__ == "__main__":
    main()
