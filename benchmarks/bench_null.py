"""Benchmark of the nulls against n: the precision null and the Gaussian null at n = 4 … 10.

Run:  .venv/bin/python benchmarks/bench_null.py [--n 4 6 8 10] [--samples 2] [--quick]

The paper works at n = 10, where every interaction is a signed sum of up to 1,024 values of
v; this measures how the nulls (docs/method.md#nulls, #precision) grow with n. For each n,
the first `--samples` ARC-Easy items of the seeded draw (question and options as units, the
n longest kept: the paper's setting), templates `--templates` 0-shot, are scored by each
model in float32 and in each half precision (`ips.scoring.shard.score_shard` with the entry's
dtype set), fitted as the workflow fits (`ips.fitting.cube.fit_values`), and summarised by
`ips.analysis.summary.summarize` exactly as `ips metrics --precision-values ...` does: the template
IPS (band all, 0-shot), the Gaussian null at each `--levels` c, and per half precision its
precision null with the median sd(Δv)/range of v and the mean salient-set Jaccard.

One line per (model, n); a half precision whose v is not finite (float16 overflows for
models trained in bfloat16, such as Gemma 3) says so. Half precision on a CPU is emulated:
the seconds are the cost of each precision here, not of a GPU.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import torch

from common import MODELS
from ips.analysis.nulls import Settings
from ips.analysis.summary import summarize
from ips.config import DEFAULT_MODEL, dataset_settings, load_config
from ips.fitting.cube import fit_values
from ips.formats.hdf5 import write_dataset
from ips.formats.values import read_values
from ips.models.entries import ModelSpec
from ips.models.loading import load_model
from ips.prompts.samples import prepare_samples
from ips.scoring.log_odds import NonFiniteError
from ips.scoring.shard import score_shard

ROOT = Path(__file__).resolve().parents[1]
HALF = ("bfloat16", "float16")


def score_and_fit(name: str, entry: dict, sample_set, work: Path, args) -> tuple[Path, Path, float]:
    """Values and interactions files of one model in one precision, and the scoring seconds."""
    loaded = load_model(ModelSpec.from_config(name, entry), cache_dir=args.cache_dir, device="cpu",
                    threads=args.threads)
    stem = work / f"{name}-{entry['dtype']}-n{sample_set.settings['n_max']}"
    values, fits = stem.with_suffix(".h5"), stem.with_suffix(".fit.h5")
    t0 = time.perf_counter()
    score_shard(loaded, sample_set, values, progress=False, scorer="auto")
    seconds = time.perf_counter() - t0
    write_dataset(fit_values(read_values(values), progress=False), fits)
    return values, fits, seconds


def samples_at(config: dict, n: int, count: int):
    config = {**config, "n_max": n, "n_items": count}
    return prepare_samples(dataset_settings(config, "arc-easy"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[4, 6, 8, 10])
    parser.add_argument("--samples", type=int, default=2, help="ARC-Easy items (default 2)")
    parser.add_argument("--models", nargs="+", default=list(MODELS))
    parser.add_argument("--dtypes", nargs="+", choices=HALF, default=list(HALF))
    parser.add_argument("--levels", type=float, nargs="+", default=[0.003, 0.01, 0.03])
    parser.add_argument("--templates", nargs="+", default=["T1", "T2"])
    parser.add_argument("--tau", type=float, default=0.1)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="SmolLM2 at n = 4 only")
    parser.add_argument("--cache-dir", type=Path, default=ROOT / "resources" / "models")
    args = parser.parse_args()
    if args.quick:
        args.n, args.models = [4], [DEFAULT_MODEL]
    unknown = sorted(set(args.models) - set(MODELS))
    if unknown:
        raise SystemExit(f"--models: {unknown} are not under models: of config.yaml")
    torch.set_num_threads(args.threads)

    config = load_config(ROOT / "config.yaml")
    config["datasets"]["arc-easy"] = {k: v for k, v in config["datasets"]["arc-easy"].items()
                                      if k != "fields"}  # question and options
    config["templates"]["mcq"] = list(args.templates)
    config["few_shot"] = {"templates": [], "shots": []}
    print(f"bench_null: ARC-Easy, {args.samples} items, templates {args.templates} 0-shot, "
          f"tau {args.tau}, Gaussian levels {args.levels}, {args.threads} threads")
    head = (f"{'model':<24}{'n':>3}{'n of items':>12}{'IPS':>7}"
            + "".join(f"{f'G {c:g}':>8}" for c in args.levels)
            + "".join(f"{f'{d} null':>15}{'J':>6}{'sd/rng':>8}{'s':>6}" for d in args.dtypes)
            + f"{'f32 s':>7}")
    print(head, flush=True)
    work = Path(tempfile.mkdtemp(prefix="bench_null_"))
    try:
        for n in args.n:
            sample_set = samples_at(config, n, args.samples)
            sizes = ",".join(str(len(s.variables)) for s in sample_set.samples)
            for name in args.models:
                entry = MODELS[name]
                ref_v, ref_f, ref_s = score_and_fit(name, {**entry, "dtype": "float32"}, sample_set,
                                                    work, args)
                runs, cells = {}, {}
                for d in args.dtypes:
                    try:
                        runs[d] = score_and_fit(name, {**entry, "dtype": d}, sample_set, work, args)
                    except NonFiniteError:
                        cells[d] = f"{'v not finite':>29}{'':>6}"
                m = summarize([ref_v], [ref_f], tau=args.tau, n_boot=100, draws=99,
                              null=Settings(tuple(args.levels), 1, matched=False),
                              variant_runs={"precision": ([r[0] for r in runs.values()],
                                                          [r[1] for r in runs.values()])})
                line = (f"{name:<24}{n:>3}{sizes:>12}"
                        f"{float(m['ips'].sel(group='0shot', band='all')):>7.3f}"
                        + "".join(f"{float(m['null_ips'].sel(group='0shot', null_level=c, band='all')):>8.3f}"
                                  for c in m["null_level"].values))
                for d in args.dtypes:
                    if d in runs:
                        p = dict(precision=d)
                        cells[d] = (f"{float(m['precision_null_ips'].sel(**p, band='all')):>15.3f}"
                                    f"{float(m['precision_jaccard'].sel(**p)):>6.2f}"
                                    f"{float(m['precision_dv_rel'].sel(**p)):>8.2%}"
                                    f"{runs[d][2]:>6.0f}")
                    line += cells[d]
                print(line + f"{ref_s:>7.0f}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
