"""What a change of τ costs once the nulls' fits are made once (`ips null-fits`) and `ips
metrics` scores them at its τ, against fitting them in every metrics job as before.

Run:  .venv/bin/python benchmarks/bench_tau_change.py [--samples 100] [--exact-games 24]
          [--default-run DIR]

Paper-sized metrics job: one (model, dataset) of paper.yaml's shape, 100 samples at n = 10
(1,024 masks), 11 conditions (T1–T5; T1 and T4 at 1, 2 and 3 shots: 4 groups, 13 pairs),
the default nulls (3 Gaussian levels, 1 draw, the matched null), 2,000 bootstrap replicates
and 9,999 sign-flip draws. v is random (seeded); the file is fitted with sgd at 200 steps so
that the paper-sized null-fits file is made in minutes (what a fit returns does not change
what scoring it at τ costs). Printed:

- `metrics`, the job a τ change reruns: `ips metrics --null-fits` on the paper-sized input;
- the null fits it no longer makes: the exact fit (the default solver at n = 10) timed on
  `--exact-games` perturbed games of the input, times the 5,900 games of the job's nulls
  (1,100 games × 3 levels + 13 pairs × 2 sides × 100 samples), plus the metrics job: the
  cost of a metrics job before, the 2.1 h of docs/workflow.md;
- their ratio.

With `--default-run DIR` (a finished `make figures` of config.yaml, the default run), it also
times `snakemake --config tau=0.15 results/figures` there and lists the jobs it ran; the
run's results are put back afterwards (`--samples 0` times that alone).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import xarray as xr

from ips.analysis.null_fits import perturb, standard_noise
from ips.analysis.nulls import game_range
from ips.formats.hdf5 import write_dataset
from ips.interactions import and_or

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = Path(sys.executable).parent / "snakemake"
TEMPLATES = ["T1", "T2", "T3", "T4", "T5"] + [t for k in (1, 2, 3) for t in ("T1", "T4")]
SHOTS = [0] * 5 + [k for k in (1, 2, 3) for _ in (0, 1)]
CONDITIONS = [t if k == 0 else f"{t}-{k}shot" for t, k in zip(TEMPLATES, SHOTS)]
GROUPS = {"0shot": CONDITIONS[:5],
          **{f"{k}shot": [f"T1-{k}shot", f"T4-{k}shot"] for k in (1, 2, 3)}}
LEVELS, N = (0.003, 0.01, 0.03), 10


def paper_values(samples: int, seed: int = 0) -> xr.Dataset:
    """A values file of paper.yaml's shape (every sample at n = 10), v random."""
    rng = np.random.default_rng(seed)
    S, C = samples, len(CONDITIONS)
    obj = lambda xs: np.array(list(xs), dtype=object)  # noqa: E731
    attrs = {"family": "f", "series": "s", "type": "base", "architecture": "dense",
             "params": 10**9, "active_params": 10**9}
    return xr.Dataset(
        {"v": (("sample", "condition", "mask"), rng.normal(scale=2.0, size=(S, C, 1 << N))),
         "n_vars": (("sample",), np.full(S, N)),
         "gold": (("sample",), rng.integers(0, 4, size=S)),
         "pred": (("sample", "condition"), rng.integers(0, 4, size=(S, C))),
         "greedy_token": (("sample", "condition"), rng.integers(100, 103, size=(S, C))),
         "hidden": (("sample", "condition", "hidden"),
                    rng.normal(size=(S, C, 64)).astype(np.float32))},
        coords={"sample": obj(f"q{i:03d}" for i in range(S)), "condition": obj(CONDITIONS),
                "template": ("condition", obj(TEMPLATES)), "shots": ("condition", SHOTS),
                "perturbation": ("condition", obj([""] * C))},
        attrs={"model": "paper-sized", "model_attributes": json.dumps(attrs),
               "dataset": "arc-challenge", "kind": "mcq", "target": "letter",
               "groups": json.dumps(GROUPS), "settings": json.dumps({"templates": {"file": None}}),
               "shard": 0})


def ips(*args: str) -> float:
    """Seconds `python -m ips ARGS` takes (it must succeed)."""
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "ips", *args], capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"ips {args[0]} failed: {r.stderr[-2000:]}")
    return time.perf_counter() - t0


def exact_fit_seconds(values: xr.Dataset, games: int) -> float:
    """Seconds per game of the exact fit on Gaussian-null games (level 0.01) of the input."""
    v = values["v"].values[:, :, :]
    flat = v.reshape(-1, v.shape[-1])[:games]
    n = np.full(len(flat), N)
    eps = standard_noise([f"g{i}" for i in range(len(flat))], (v.shape[-1],), 0, 1)
    rows = perturb(flat, n, 0.01 * game_range(flat, n), eps)
    t0 = time.perf_counter()
    and_or(rows, solver="exact")
    return (time.perf_counter() - t0) / len(rows)


def paper_sized(args, work: Path) -> None:
    values, fits, nf = work / "values.h5", work / "fit.h5", work / "null_fits.h5"
    ds = paper_values(args.samples)
    write_dataset(ds, values)
    t_fit = ips("fit", str(values), "--out", str(fits), "--solver", "sgd", "--sgd-steps", "200")
    levels = [str(c) for c in LEVELS]
    t_null = ips("null-fits", "--values", str(values), "--interactions", str(fits),
                 "--null-levels", *levels, "--out", str(nf))
    run = ["metrics", "--values", str(values), "--interactions", str(fits),
           "--null-fits", str(nf), "--resamples", "2000", "--permutations", "9999"]
    t_metrics = [ips(*run, "--tau", str(t), "--out", str(work / f"m{t}.nc")) for t in (0.1, 0.15)]
    per_game = exact_fit_seconds(ds, args.exact_games)
    S, C, P = args.samples, len(CONDITIONS), 13
    games = S * C * len(LEVELS) + P * 2 * S
    before = games * per_game + min(t_metrics)
    print(f"paper-sized input: {S} samples x {C} conditions at n = {N}, {len(GROUPS)} groups, "
          f"{P} pairs; sgd fit {t_fit:.0f} s, its null fits {t_null:.0f} s "
          f"({games:,} games, sgd)")
    print(f"metrics at a new tau (ips metrics --null-fits): {t_metrics[0]:.1f} s at 0.1, "
          f"{t_metrics[1]:.1f} s at 0.15")
    print(f"exact fit: {per_game:.2f} s per game ({args.exact_games} games of the input's "
          f"Gaussian null); before, every metrics job refitted {games:,} games: "
          f"{games * per_game / 3600:.2f} h + {min(t_metrics):.0f} s = {before / 3600:.2f} h")
    print(f"a tau change, per metrics job: {before / min(t_metrics):.0f}x cheaper "
          f"({min(t_metrics):.1f} s against {before / 3600:.2f} h)")


def default_run(run_dir: Path) -> None:
    """Time a τ change's rerun in a finished default run, then restore its results."""
    backup = Path(tempfile.mkdtemp(prefix="ips-tau-"))
    for name in ("results", ".snakemake", "logs"):
        if (run_dir / name).exists():
            shutil.copytree(run_dir / name, backup / name, symlinks=True)
    try:
        t0 = time.perf_counter()
        r = subprocess.run([str(SNAKEMAKE), "--snakefile", str(ROOT / "Snakefile"),
                            "--directory", str(run_dir), "--cores", "2", "results/figures",
                            "--config", "tau=0.15"],  # the target first: --config takes the rest
                           capture_output=True, text=True)
        seconds = time.perf_counter() - t0
        if r.returncode:
            sys.exit(f"snakemake failed: {r.stderr[-2000:]}")
        table = (r.stdout + r.stderr).split("Job stats:", 1)[1]
        ran = dict(re.findall(r"^(\w+)\s+(\d+)$", table, re.M))
        ran.pop("total", None)
        print(f"default run, tau 0.1 -> 0.15: {seconds:.0f} s on 2 cores; jobs: "
              + ", ".join(f"{k} {v}" for k, v in ran.items()))
    finally:
        for name in ("results", ".snakemake", "logs"):
            shutil.rmtree(run_dir / name, ignore_errors=True)
            if (backup / name).exists():
                shutil.move(str(backup / name), run_dir / name)
        shutil.rmtree(backup, ignore_errors=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--samples", type=int, default=100)
    p.add_argument("--exact-games", type=int, default=24)
    p.add_argument("--default-run", type=Path, default=None, metavar="DIR")
    args = p.parse_args()
    if args.samples:  # --samples 0: the default run's rerun alone
        with tempfile.TemporaryDirectory() as tmp:
            paper_sized(args, Path(tmp))
    if args.default_run is not None:
        default_run(args.default_run)


if __name__ == "__main__":
    main()
