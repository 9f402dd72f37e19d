"""`ips score`."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import logging
import time
from pathlib import Path

from ips import baselines
from ips.cli.arguments import (
    add_baseline,
    add_compute,
    add_masking,
    add_model,
    add_sampling,
    int_between,
    model_spec,
    occlusion,
    sampling_budget,
    setting,
)
from ips.config import DTYPES, SCORERS, TARGETS, default
from ips.errors import InputError

log = logging.getLogger("ips")


def add_parser(sub, common) -> None:
    p = sub.add_parser(
        "score",
        parents=[common],
        help="v(x_S) of one model on every mask of every sample of one shard (HDF5 out)",
        description="Score every (sample, condition, mask S) of one shard: v(x_S) = log-odds of "
        "the target at the answer position with the variables outside S absent, as the "
        "baseline says (the model's mask token: paper Appendix E.4). Resumes an interrupted run of the same inputs. "
        "Settings come from --config (and --dataset), or from the flags (workflow rules).",
    )
    add_model(p)
    p.add_argument("--dataset", help="dataset name under `datasets` in the config")
    p.add_argument("--samples", type=Path, nargs="+", metavar="SAMPLES.json",
                   help="samples written by `ips samples` (default: prepare them from the config); "
                   "several files, each with its own --out in order, are scored with one model "
                   "load (the variants' runs)")
    p.add_argument("--shard", type=int_between(0, 10**9), default=0, metavar="K",
                   help="score samples [K*shard_size, (K+1)*shard_size) (default: %(default)s)")
    p.add_argument("--shard-size", type=int_between(1, 10**9), metavar="S",
                   help="samples per shard (default: config's shard_size, else all samples)")
    p.add_argument("--target", choices=[t for ts in TARGETS.values() for t in ts],
                   help="what v scores (default: the dataset's target, else letter / response)")
    p.add_argument("--scorer", choices=SCORERS,
                   help="plain batches, shared-prefix trie, or auto (default: config's scorer, "
                   "else auto)")
    add_compute(p)
    add_masking(p)
    p.add_argument("--dtype", choices=DTYPES,
                   help="compute in this precision instead of the entry's dtype (the precision "
                   "null: docs/method.md#precision)")
    add_baseline(p, "score with another baseline than the model's own (the baseline null, the "
                 "baselines axis)")
    p.add_argument("--conditions", nargs="+", action="append", metavar="NAME",
                   help="score only these conditions (default: every condition of the samples); "
                   "given once per --samples file, in order, for each its own")
    add_sampling(p, "default: the config's sampling.mode, else exhaustive",
                 f"default: the config's sampling.budget, else {default('sampling')['budget']}")
    p.add_argument("--out", type=Path, nargs="+", required=True, metavar="OUT.h5",
                   help="values file, one per --samples file")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ips.outputs import output_lock

    samples = args.samples or [None]
    if len(args.out) != len(samples):
        raise InputError(f"--out: {len(args.out)} file(s) for {len(samples)} --samples file(s); "
                         "give one values file per samples file")
    conditions = args.conditions or [None]
    if len(conditions) == 1:
        conditions = conditions * len(samples)
    elif len(conditions) != len(samples):
        raise InputError(f"--conditions: given {len(conditions)} times for {len(samples)} "
                         "--samples file(s); give it once, or once per samples file")
    # held for the whole run: a second run on the same --out would discard the resume folder
    with contextlib.ExitStack() as stack:
        for out in args.out:
            stack.enter_context(output_lock(out))
        return _score_locked(args, list(zip(samples, conditions, args.out)))


def _score_locked(args: argparse.Namespace, runs: list[tuple[Path | None, list | None, Path]]
                  ) -> int:
    """Score each run (samples file or None, conditions or None, out) with one model load."""
    from ips.config import dataset_settings, load_config
    from ips.models.loading import load_model
    from ips.prompts.samples import load_samples, prepare_samples
    from ips.scoring.shard import check_shard, score_shard

    config = load_config(args.config) if args.config else None
    spec = model_spec(args, config)
    settings = None
    if config is not None:
        if args.dataset is None:
            raise InputError("--config needs --dataset")
        if len(runs) > 1:
            raise InputError("--config --dataset scores one dataset; give one --samples file")
        settings = dataset_settings(config, args.dataset)
    elif args.samples is None:
        raise InputError("without --config, give the prepared --samples")
    batch_tokens = setting(args.batch_tokens, config, "batch_tokens")
    scorer = setting(args.scorer, config, "scorer")
    masking = setting(args.masking, config, "masking")
    if other := args.baseline or spec.baseline:  # cheap: before any sample or weight
        baselines.kind_of(other).check_masking(masking, other)
    budget = sampling_budget(args, setting(None, config, "sampling"))
    # cheap checks of every run before a model load that can take minutes
    checked = []
    for path, conditions, out in runs:
        if path:
            sample_set = load_samples(path)
            if args.dataset and sample_set.dataset != args.dataset:
                raise InputError(f"{path}: holds samples of dataset {sample_set.dataset!r}, "
                                 f"not {args.dataset!r}")
            if settings is not None and sample_set.settings != settings:
                log.warning("%s was prepared with other settings than %s now gives; run "
                            "`ips samples` again to use the current ones", path, args.config)
        else:
            sample_set = prepare_samples(settings, occlusion(args, settings, config))
        if conditions:
            sample_set = sample_set.with_conditions(conditions)
        shard_size = args.shard_size or (config["shard_size"] if config
                                         else len(sample_set.samples))
        target = args.target or sample_set.settings.get("entry", {}).get("target")
        check_shard(sample_set, args.shard, shard_size, target, budget)
        checked.append((sample_set, shard_size, target, out))
    if args.dtype:
        spec = dataclasses.replace(spec, dtype=args.dtype)
    t0 = time.perf_counter()
    loaded = load_model(spec, cache_dir=args.cache_dir, device=args.device, threads=args.threads,
                        other=args.baseline)
    log.info("loaded %s on %s (%s, baseline %s: %r, id %d) in %.1f s", args.model,
             loaded.device, loaded.dtype, loaded.mask_source, loaded.mask_token,
             loaded.mask_token_id, time.perf_counter() - t0)
    for sample_set, shard_size, target, out in checked:
        score_shard(loaded, sample_set, out, shard=args.shard, shard_size=shard_size,
                    target=target, batch_tokens=batch_tokens, scorer=scorer, budget=budget,
                    masking=masking)
    return 0
