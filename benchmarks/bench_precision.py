"""Benchmark of half precision: v, IPS and salient sets in bfloat16 and float16 against float32.

Run:  .venv/bin/python benchmarks/bench_precision.py [--quick] [--threads 2]

The same ARC-Easy samples (the config's dataset `arc-easy`, the first `--samples` items of
its seeded draw, at most `--n-max` variables, templates `--templates` 0-shot) are scored by
each model in float32, bfloat16 and float16 on the CPU, each run exactly as the workflow
does it: `ips.scoring.shard.score_shard` (a model entry with `dtype` overridden), `ips.fitting.cube.
fit_values` (the canonical split) and `ips.analysis.summary.summarize` (what `ips metrics` writes).
Models: a tiny random Llama (ips.models.testing), SmolLM2-135M-Instruct and Gemma 3 270M
(both converted once into resources/models/; `--quick`: the tiny model and SmolLM2).

Against float32, per model and half precision:

- max |Δv| over all masks, and the 99th percentile |Δv|, with max |v| for scale;
- |ΔIPS| of every template pair (`pair_ips`, band all, at tau) and of IPS itself;
- the Jaccard index of the salient sets {(kind, S): |Ĩ| > tau} per sample and condition
  (mean and minimum), and the share of rows whose predicted letter changes.

A precision whose v is not finite (`ips.scoring.log_odds.finite_values`: float16 overflows for
models trained in bfloat16) is reported as such. Half precision on a CPU is emulated and slow (about
4× float32 here); the figures are about numbers, not speed.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from common import MODELS
from ips.analysis.metrics import normalize, salient
from ips.analysis.summary import summarize
from ips.config import DEFAULT_MODEL, dataset_settings, load_config
from ips.fitting.cube import fit_values
from ips.formats.hdf5 import write_dataset
from ips.formats.values import read_values
from ips.models.entries import ModelSpec
from ips.models.loading import load_model
from ips.models.testing import TINY_ATTRS, make_tiny_llama
from ips.prompts.samples import prepare_samples
from ips.scoring.log_odds import NonFiniteError
from ips.scoring.shard import score_shard

ROOT = Path(__file__).resolve().parents[1]

DTYPES = ("float32", "bfloat16", "float16")


def score_fit_metrics(entry: dict, name: str, sample_set, work: Path, args) -> dict:
    """Score, fit and summarise one model in one precision; the arrays the comparison needs."""
    loaded = load_model(ModelSpec.from_config(name, entry), cache_dir=args.cache_dir, device="cpu",
                    threads=args.threads)
    values, fits = work / f"{name}-{entry['dtype']}.h5", work / f"{name}-{entry['dtype']}.fit.h5"
    t0 = time.perf_counter()
    score_shard(loaded, sample_set, values, progress=False, scorer="auto")
    seconds = time.perf_counter() - t0
    fit = fit_values(read_values(values), progress=False)
    write_dataset(fit, fits)
    m = summarize([values], [fits], tau=args.tau, n_boot=100, draws=99)
    v = read_values(values).v
    norm = normalize(fit["and"].values, fit["or"].values)
    return {"v": v, "salient": salient(norm, args.tau), "seconds": seconds,
            "ips": float(m["ips"].sel(band="all").values[0]),
            "pair_ips": m["pair_ips"].sel(band="all").values,
            "pairs": [str(p) for p in m["pair"].values],
            "pred": _pred(values)}


def _pred(values: Path) -> np.ndarray:
    import xarray as xr

    with xr.open_dataset(values, engine="h5netcdf") as ds:
        return ds["pred"].values.copy()


def jaccard(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|A ∩ B| / |A ∪ B| of the salient sets of every (sample, condition) row (1 if both empty)."""
    a, b = a.reshape(*a.shape[:2], -1), b.reshape(*b.shape[:2], -1)
    inter, union = (a & b).sum(-1), (a | b).sum(-1)
    return np.where(union > 0, inter / np.maximum(union, 1), 1.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="the tiny model and SmolLM2, 2 samples, n <= 3")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--samples", type=int, default=3, help="ARC-Easy items (default 3)")
    parser.add_argument("--n-max", type=int, default=4, help="variables per sample (default 4)")
    parser.add_argument("--templates", nargs="+", default=["T1", "T2"])
    parser.add_argument("--tau", type=float, default=0.1)
    parser.add_argument("--cache-dir", type=Path, default=ROOT / "resources" / "models")
    parser.add_argument("--keep", type=Path, default=None,
                        help="write the values and interactions files here (default: a "
                        "temporary folder)")
    args = parser.parse_args()
    if args.quick:
        args.samples, args.n_max = 2, 3
    torch.set_num_threads(args.threads)

    config = load_config(ROOT / "config.yaml")
    config.update(n_max=args.n_max, n_items=args.samples, seed=0,
                  few_shot={"templates": [], "shots": []})
    config["templates"]["mcq"] = list(args.templates)
    sample_set = prepare_samples(dataset_settings(config, "arc-easy"))
    sizes = [len(s.variables) for s in sample_set.samples]
    print(f"arc-easy: {len(sample_set.samples)} samples, n = {sizes}, "
          f"conditions {[c.name for c in sample_set.conditions]}, {args.threads} threads, "
          f"tau {args.tau}")

    work = args.keep or Path(tempfile.mkdtemp(prefix="bench_precision_"))
    work.mkdir(parents=True, exist_ok=True)
    models = {"tiny-llama": {"source": {"path": str(make_tiny_llama(work / "tiny-llama"))},
                             **TINY_ATTRS},
              DEFAULT_MODEL: MODELS[DEFAULT_MODEL]}
    if not args.quick:
        models["gemma3-270m"] = MODELS["gemma3-270m"]

    head = (f"{'model':<24}{'dtype':<10}{'score s':>8}{'max|v|':>8}{'max|dv|':>9}{'p99|dv|':>9}"
            f"{'IPS':>8}{'|dIPS|':>8}{'max|dpair|':>11}{'J mean':>8}{'J min':>7}{'pred chg':>9}")
    rows, summary = [head], []
    print(head, flush=True)
    try:
        for name, entry in models.items():
            ref = None
            for dtype in DTYPES:
                try:
                    r = score_fit_metrics({**entry, "dtype": dtype}, name, sample_set, work, args)
                except NonFiniteError as e:
                    rows.append(f"{name:<24}{dtype:<10}  {e}")
                    summary.append(f"{name} {dtype}: v not finite")
                    print(rows[-1], flush=True)
                    continue
                if ref is None:  # float32 comes first
                    ref = r
                ok = np.isfinite(ref["v"]) & np.isfinite(r["v"])
                dv = np.abs(r["v"] - ref["v"])[ok]
                dpair = np.abs(r["pair_ips"] - ref["pair_ips"])
                j = jaccard(ref["salient"], r["salient"])
                chg = float(np.mean(r["pred"] != ref["pred"]))
                rows.append(f"{name:<24}{dtype:<10}{r['seconds']:>8.1f}"
                            f"{np.abs(ref['v'][ok]).max():>8.2f}{dv.max():>9.3g}"
                            f"{np.quantile(dv, 0.99):>9.3g}{r['ips']:>8.4f}"
                            f"{abs(r['ips'] - ref['ips']):>8.4f}{np.nanmax(dpair):>11.4f}"
                            f"{j.mean():>8.3f}{j.min():>7.3f}{chg:>9.2f}")
                if r is not ref:
                    summary.append(f"{name} {dtype}: max|dv| {dv.max():.3g}, |dIPS| "
                                   f"{abs(r['ips'] - ref['ips']):.4f}, max |d pair IPS| "
                                   f"{np.nanmax(dpair):.4f}, salient Jaccard mean {j.mean():.3f} "
                                   f"min {j.min():.3f}, predictions changed {chg:.0%}")
                print(rows[-1], flush=True)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    print("\n" + "\n".join(summary))


if __name__ == "__main__":
    main()
