"""Score one shard (`score_shard`): resumable per-sample partials, then its values file."""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import time
import zipfile
from pathlib import Path

import numpy as np
import xarray as xr
from tqdm import tqdm

from ips import __version__
from ips.config import EXHAUSTIVE_MAX_N, TARGETS
from ips.errors import InputError
from ips.formats.values import values_dataset, write_values
from ips.outputs import atomic_path, output_lock
from ips.scoring.engine import BATCH_TOKENS, Answers, model_engine, score_sample
from ips.scoring.log_odds import naming_model

log = logging.getLogger(__name__)


# the keys of a `score_sample` result, which a resumed result must have
RESULT_KEYS = frozenset({"v", "greedy", "hidden", "n_tokens", "var_tokens", "letter_logit",
                         "letter_token", "option_logp", "target_ids", "target_form"})


def check_shard(sample_set, shard: int, size: int, target: str | None,
                budget: int | None = None) -> tuple[list, str]:
    """The samples of shard `shard` and the resolved target; `InputError` if either is wrong
    or a sample has more variables than exhaustive scoring (`budget` None) allows."""
    if shard < 0:
        raise InputError(f"shard must be >= 0, got {shard}")
    samples = sample_set.shard(shard, size)
    if not samples:
        raise InputError(f"dataset {sample_set.dataset!r}: shard {shard} is empty "
                         f"({len(sample_set.samples)} samples, shard size {size})")
    target = target or TARGETS[sample_set.kind][0]
    if target not in TARGETS[sample_set.kind]:
        raise InputError(f"target {target!r} does not apply to {sample_set.kind} items; "
                         f"use one of {', '.join(TARGETS[sample_set.kind])}")
    for s in samples:
        lacks = [c.name for c in sample_set.conditions if c.name not in s.prompts]
        if budget is not None and lacks:
            raise InputError(f"dataset {sample_set.dataset!r}: sample {s.item.id!r} lacks "
                             f"condition(s) {', '.join(lacks)} (no rewording), and sparse "
                             "sampling fits only samples with every condition; score "
                             "exhaustively or give every item its rewordings")
        if not s.variables:
            raise InputError(f"dataset {sample_set.dataset!r}: sample {s.item.id!r} has no "
                             "variables; prepare the samples again with `ips samples`")
        if budget is None and len(s.variables) > EXHAUSTIVE_MAX_N:
            raise InputError(f"dataset {sample_set.dataset!r}: sample {s.item.id!r} has "
                             f"{len(s.variables)} variables, more than exhaustive sampling "
                             f"scores (2**{EXHAUSTIVE_MAX_N} masked prompts); use sampling "
                             "sparse with a budget (--sampling sparse --budget B)")
    return samples, target


def score_shard(
    loaded,
    sample_set,
    out: str | Path,
    *,
    shard: int = 0,
    shard_size: int | None = None,
    target: str | None = None,
    batch_tokens: int = BATCH_TOKENS,
    progress: bool | None = None,
    scorer: str = "auto",
    budget: int | None = None,
    masking: str = "tokens",
) -> xr.Dataset:
    """Score one shard of a SampleSet with a loaded model and write the values file `out`.

    `budget`: None scores all 2**n masks of every prompt (exhaustive sampling); a number
    scores `ips.interactions.design.scored_masks(n, budget, seed)` (the samples' seed), the same
    design for every condition of a sample, and the file holds them in `masks` (see
    `ips.formats.values`). `masking`: how an absent word is masked (`Engine`).

    Finished samples are kept in `out.partial/` (one file each, written atomically), so a
    killed run resumes from the last completed sample; the partial folder is removed once
    `out` is written. A partial folder from other inputs is discarded, never mixed in, and a
    partial result that cannot be read is computed again. `out` is locked for the run
    (`ips.outputs.output_lock`), so a second run on it fails instead of discarding this one's.
    """
    out = Path(out)
    samples, target = check_shard(sample_set, shard, shard_size or len(sample_set.samples), target,
                                  budget)
    with output_lock(out):
        return _score_locked(loaded, sample_set, out, samples, target, shard, batch_tokens,
                             progress, scorer, budget, masking)


def _score_locked(loaded, sample_set, out: Path, samples, target: str, shard: int,
                  batch_tokens: int, progress: bool | None, scorer: str,
                  budget: int | None, masking: str) -> xr.Dataset:
    """`score_shard` once `out` is locked."""
    from ips.interactions.design import scored_masks

    engine = model_engine(loaded, batch_tokens, scorer, masking)
    seed = int(sample_set.settings.get("seed", 0))
    designs = [scored_masks(len(s.variables), budget, seed) for s in samples]
    fingerprint = {
        "ips_version": __version__, "model": loaded.spec.name,
        "source": loaded.spec.source.to_dict(), "dtype": str(loaded.dtype),
        "mask_token_id": int(loaded.mask_token_id), "masking": masking, "dataset": sample_set.dataset,
        "shard": shard, "target": target, "budget": budget,
        "samples": [s.item.id for s in samples],
        "conditions": [c.name for c in sample_set.conditions],
        # an absent prompt (a rewording the item lacks) is null; with every prompt present
        # the hash is the one earlier versions wrote, so their partial results resume
        "prompts": hashlib.sha256(json.dumps(
            [None if (p := s.prompts.get(c.name)) is None else [p.text, p.spans]
             for s in samples for c in sample_set.conditions]
        ).encode()).hexdigest(),
    }
    partial = _Partial(out.with_name(out.name + ".partial"), fingerprint)
    answers = Answers(loaded.tokenizer)
    t0 = time.perf_counter()
    done = partial.done()
    log.info("%s on %s shard %d: %d samples x %d conditions, %d already done (resuming)",
             loaded.spec.name, sample_set.dataset, shard, len(samples),
             len(sample_set.conditions), len(done))
    disable = None if progress is None else not progress  # None: on a terminal only
    # masked prompts per sample and scored condition (a condition it lacks is not scored)
    sizes = [1 << len(s.variables) if m is None else len(m) for s, m in zip(samples, designs)]
    counts = [size * sum(c.name in s.prompts for c in sample_set.conditions)
              for s, size in zip(samples, sizes)]
    results = []
    # the bar counts masked prompts, so its rate and time left hold across samples of any n
    with tqdm(total=sum(counts), initial=sum(counts[i] for i in done if i < len(counts)),
              unit=" masked prompts", unit_scale=True,
              desc=f"score {loaded.spec.name}/{sample_set.dataset}/{shard}",
              disable=disable) as bar:
        for i, (s, masks) in enumerate(zip(samples, designs)):
            r = partial.load(i, (len(sample_set.conditions), sizes[i])) if i in done else None
            if r is None and i in done:  # damaged: scored again below
                bar.n -= counts[i]
            if r is None:
                t1 = time.perf_counter()
                with naming_model(loaded.spec.name):
                    r = score_sample(engine, answers, s, sample_set.conditions, target, masks)
                partial.save(i, r)
                bar.update(counts[i])
                # a line per sample, for logs where the bar is off (not a terminal)
                log.info("sample %d/%d %s: n = %d, %d masked inputs%s in %.1f s", i + 1,
                         len(samples), s.item.id, len(s.variables), counts[i],
                         "" if masks is None else f" ({sizes[i]} of 2**{len(s.variables)} masks)",
                         time.perf_counter() - t1)
            results.append(r)
    ds = values_dataset(sample_set, samples, results, loaded, target, shard, budget, designs,
                        masking)
    write_values(ds, out)
    partial.remove()
    log.info("wrote %s: %d masked evaluations in %.1f s", out, sum(counts),
             time.perf_counter() - t0)
    return ds


class _Partial:
    """Per-sample results of an unfinished shard: `NNNNN.npz` files and `fingerprint.json`."""

    def __init__(self, path: Path, fingerprint: dict):
        self.path = path
        stamp = path / "fingerprint.json"
        if path.exists():
            try:
                same = json.loads(stamp.read_text()) == fingerprint
            except (OSError, ValueError):
                same = False
            if not same:
                log.warning("%s holds results of other inputs; starting afresh", path)
                shutil.rmtree(path)
        if not path.exists():
            path.mkdir(parents=True)
            try:
                with atomic_path(stamp) as tmp:
                    Path(tmp).write_text(json.dumps(fingerprint))
            except BaseException:  # e.g. a full disk: leave no folder without its stamp
                shutil.rmtree(path, ignore_errors=True)
                raise

    def done(self) -> set[int]:
        return {int(p.stem) for p in self.path.glob("[0-9]*.npz")}

    def save(self, i: int, r: dict) -> None:
        with atomic_path(self.path / f"{i:06d}.npz") as tmp:
            with open(tmp, "wb") as f:
                np.savez(f, **r)

    def load(self, i: int, shape: tuple[int, int]) -> dict | None:
        """Sample i's result, or None (with a warning) if its file is damaged or incomplete.

        `shape`: that of its `v`, (conditions, 2**n).
        """
        path = self.path / f"{i:06d}.npz"
        try:
            with np.load(path) as z:
                r = {k: z[k] for k in z.files}
            missing = sorted(RESULT_KEYS - r.keys())
            if missing:
                raise ValueError(f"no {', '.join(missing)}")
            if r["v"].shape != shape:
                raise ValueError(f"v has shape {r['v'].shape}, expected {shape}")
        # what a truncated or damaged .npz raises (measured): BadZipFile for most cuts and
        # flipped bits (the zip CRC), EOFError for a cut inside the header, OSError and
        # NotImplementedError for a damaged zip directory, ValueError for bad arrays
        except (OSError, ValueError, EOFError, NotImplementedError, zipfile.BadZipFile) as e:
            log.warning("%s: unreadable partial result of sample %d (%s: %s); recomputing",
                        path, i, type(e).__name__, e)
            return None
        return r

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
