"""The output score v(x_S) of a causal LM on masked prompts (paper Section 3.1), sample by sample.

`Engine` runs the forward passes: all 2**n masked inputs x_S of a prompt have the same
length and are batched without padding (or evaluated as a trie, `ips.trie`); the masking and
the log-odds v(x_S) = log p − log(1 − p), p = P(y* | x_S), are those of `ips.kernel`.
`score_shard` scores one shard of samples and writes its values file.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import shutil
import time
import zipfile
from dataclasses import dataclass
from importlib.metadata import version as _version
from pathlib import Path
from typing import Sequence

import numpy as np
import torch
import xarray as xr
from tqdm import tqdm

from ips import __version__
from ips.config import EXHAUSTIVE_MAX_N, MODEL_ATTRIBUTES, SCORERS, TARGETS, default
from ips.datasets import LETTERS, MCQItem
from ips.errors import InputError
from ips.files import atomic_path, labels, output_lock, write_dataset
from ips.kernel import (NonFiniteError, ScoringError, finite_values, half_products,
                        masked_inputs, model_dtype, naming_model, token_owners, v_from_logits)
from ips.trie import TrieScorer, trie_budget

log = logging.getLogger(__name__)

BATCH_TOKENS = default("batch_tokens")  # tokens per forward batch unless told


def continuation(tokenizer, cue: str, text: str) -> list[int] | None:
    """Token ids of `text` as the model would read it right after `cue`.

    Encodes `cue + text` and keeps what follows the cue's own tokens; None when the cue's
    tokens change (the text merges into the cue), so the split would be ambiguous.
    """
    head = tokenizer.encode(cue, add_special_tokens=False)
    full = tokenizer.encode(cue + text, add_special_tokens=False)
    if full[: len(head)] != head or len(full) == len(head):
        return None
    return full[len(head) :]


def letter_tokens(tokenizer, cue: str, letters: Sequence[str]) -> tuple[list[int], str]:
    """Single-token ids of the option letters after `cue`, and the form used.

    Try the letter with a leading space (BPE vocabularies write it so after a colon),
    then the bare letter; the first form in which every letter is one token is used.
    """
    for form, prefix in (("space", " "), ("bare", "")):
        ids = [continuation(tokenizer, cue, prefix + L) for L in letters]
        if all(i is not None and len(i) == 1 for i in ids):
            return [i[0] for i in ids], form
    raise ScoringError(
        f"the option letters {list(letters)} are not single tokens after the cue {cue!r} "
        "with or without a leading space; use `target: choice_text` for this model"
    )


@dataclass
class Unmasked:
    """What the unmasked prompt yields besides v."""

    greedy: int  # the unrestricted greedy next token
    letter_logit: np.ndarray  # (options,) logits of the option letters (empty: no letters)
    option_logp: np.ndarray  # (options,) log P of each option's text (empty: not scored)
    hidden: np.ndarray  # final-layer hidden state at the answer position


def _computing(method):
    """Run an `Engine` method with the model's arithmetic: half precision on the CPU computes
    its matrix products as a GPU does (`ips.kernel.half_products`)."""
    @functools.wraps(method)
    def run(self, *args, **kwargs):
        with half_products(model_dtype(self.model), self.device):
            return method(self, *args, **kwargs)

    return run


class Engine:
    """Batched forward passes of one model; only the positions that are scored are projected."""

    def __init__(self, model, mask_id: int, batch_tokens: int = BATCH_TOKENS, device=None,
                 scorer: str = "plain"):
        """`scorer`: "plain" (batched rows), "trie" (shared-prefix evaluation, `ips.trie`;
        `ScoringError` for a model it cannot evaluate) or "auto" (the trie where the model
        allows it, else plain, with the reason logged once)."""
        self.model = model
        self.mask_id = int(mask_id)
        self.batch_tokens = int(batch_tokens)
        self.device = device if device is not None else next(model.parameters()).device
        if scorer not in SCORERS:
            raise ValueError(f"scorer must be one of {', '.join(SCORERS)}, got {scorer!r}")
        self.scorer = scorer
        from transformers import PreTrainedModel

        # the option texts continue the unmasked prompt's keys/values (`unmasked`) where the
        # model keeps a transformers cache; for other models each row repeats the prompt
        self.cache_prompt = isinstance(model, PreTrainedModel) and not getattr(
            model.config, "is_encoder_decoder", False)
        self.trie = None
        if scorer != "plain":
            self.trie = TrieScorer(model, self.mask_id, trie_budget(self.batch_tokens),
                                   self.device, mode=scorer)

    def _logits(self, rows: np.ndarray, k: int, cache=None, **kwargs):
        """The model's output on `rows`, logits of the last k positions; `cache`: keys/values
        the rows continue, which the forward extends (none kept without it)."""
        ids = torch.as_tensor(rows, device=self.device)
        if cache is not None:
            kwargs.update(cache=cache, use_cache=True)
        return self.model(input_ids=ids, logits_to_keep=k, **{"use_cache": False, **kwargs})

    @torch.inference_mode()
    def _log_odds(self, rows: np.ndarray, target: Sequence[int]) -> np.ndarray:
        """v for every row (`v_from_logits`); rows already end with target[:-1]."""
        return v_from_logits(self._logits(rows, len(target)).logits, target)

    @_computing
    def values(self, ids: np.ndarray, owners: np.ndarray, n: int, target: Sequence[int],
               masks: np.ndarray | None = None) -> np.ndarray:
        """v(x_S) for all 2**n masks S of one prompt (`ids` without the target), or for the
        bitmasks `masks` only, in their order (a sparse design, `ips.sparse`; the trie then
        shares the tokens before the first variable)."""
        if self.trie is not None:
            v = self.trie.values(ids, owners, n, target, masks)
            if v is not None:
                return v
        seq, own = self._with_target(ids, owners, target)
        chosen = np.arange(1 << n) if masks is None else np.asarray(masks, dtype=np.int64)
        return self._batched(lambda idx: masked_inputs(seq, own, n, self.mask_id, chosen[idx]),
                             len(chosen), len(seq), target)

    @_computing
    def occlusion(self, ids: np.ndarray, owners: np.ndarray, n: int, target: Sequence[int]) -> np.ndarray:
        """v(x_N), then v(x_{N∖{i}}) for i = 0..n−1: n + 1 rows (plain batches, any n).

        Row i + 1 masks variable i alone, built by `masked_inputs` with i as the only
        variable, so the masking is that of `values`.
        """
        seq, own = self._with_target(ids, owners, target)

        def rows(js: np.ndarray) -> np.ndarray:
            # j = 0 is the unmasked prompt (no variable), j = i + 1 masks variable i
            return np.concatenate([masked_inputs(seq, np.where((own == j - 1) & (j > 0), 0, -1),
                                                 1, self.mask_id, [0]) for j in js])

        return self._batched(rows, n + 1, len(seq), target)

    @staticmethod
    def _with_target(ids: np.ndarray, owners: np.ndarray, target: Sequence[int]):
        """The prompt followed by target[:-1] (background), so the last k positions score y*."""
        seq = np.concatenate([ids, np.asarray(target[:-1], dtype=ids.dtype)])
        own = np.concatenate([owners, np.full(len(target) - 1, -1, dtype=owners.dtype)])
        return seq, own

    def _batched(self, rows, count: int, length: int, target: Sequence[int]) -> np.ndarray:
        """v of rows(indices) for indices 0..count−1, at most batch_tokens tokens a batch."""
        per_batch = max(1, self.batch_tokens // length)
        out = np.empty(count, dtype=np.float64)
        for start in range(0, count, per_batch):
            idx = np.arange(start, min(start + per_batch, count))
            out[idx] = self._log_odds(rows(idx), target)
        return finite_values(out, model_dtype(self.model))

    @_computing
    @torch.inference_mode()
    def unmasked(self, ids: np.ndarray, letters: Sequence[int] = (),
                 options: Sequence[Sequence[int]] = ()) -> Unmasked:
        """Greedy token, letter logits, option-text log-probabilities and h, unmasked prompt.

        One forward of the prompt gives the greedy token, the letters' logits and h at its
        last position, and log P(o_0 | prompt) of each option's first token; the options'
        further tokens are continuations of it (`_option_logp`), which read the prompt's
        keys/values from that forward's cache (`cache_prompt`) instead of running it again.
        """
        from transformers import DynamicCache

        cache = None
        if self.cache_prompt and any(len(o) > 1 for o in options):
            cache = DynamicCache(config=self.model.config)
        out = self._logits(ids[None, :], 1, cache, output_hidden_states=True)
        last = out.logits[0, -1].double()
        return Unmasked(
            greedy=int(last.argmax()),
            letter_logit=last[list(letters)].cpu().numpy() if letters else np.zeros(0),
            option_logp=self._option_logp(ids, torch.log_softmax(last, -1), options, cache),
            hidden=out.hidden_states[-1][0, -1].float().cpu().numpy(),
        )

    def _option_logp(self, ids: np.ndarray, first: torch.Tensor,
                     options: Sequence[Sequence[int]], cache) -> np.ndarray:
        """log P(o | prompt) = Σ_j log P(o_j | prompt, o_<j) for each option o.

        `first`: the log-softmax at the prompt's last position, which scores every o_0. The
        o_j for j ≥ 1 of the options longer than one token come from one forward of their
        o[:-1], right-padded to the longest (causal attention: a position never sees the
        padding after it), over `cache`, the prompt's keys/values repeated for each of them;
        without a cache each row starts with the prompt itself.
        """
        if not options:
            return np.zeros(0)
        logp = first[[o[0] for o in options]]
        longer = [i for i, o in enumerate(options) if len(o) > 1]
        if longer:
            width = max(len(options[i]) for i in longer) - 1
            head = ids[:0] if cache is not None else ids
            rows = np.full((len(longer), len(head) + width), self.mask_id, dtype=ids.dtype)
            rows[:, :len(head)] = head
            for r, i in enumerate(longer):
                rows[r, len(head):len(head) + len(options[i]) - 1] = options[i][:-1]
            if cache is not None:
                cache.batch_repeat_interleave(len(longer))
            logits = self._logits(rows, width, cache).logits
            tail = torch.log_softmax(logits.double(), -1)  # [len(longer), width, vocab]
            for r, i in enumerate(longer):
                o = options[i]
                logp[i] += tail[r, torch.arange(len(o) - 1), torch.as_tensor(o[1:])].sum()
        return logp.cpu().numpy()


class _Answers:
    """Answer tokens of one tokenizer: option letters per cue (cached) and option texts."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self._letters: dict[str, tuple[list[int], str] | None] = {}

    def letters(self, cue: str, count: int) -> tuple[list[int], str] | None:
        key = f"{cue}\0{count}"
        if key not in self._letters:
            try:
                self._letters[key] = letter_tokens(self.tokenizer, cue, LETTERS[:count])
            except ScoringError:
                self._letters[key] = None
        return self._letters[key]

    def options(self, cue: str, choices: Sequence[str]) -> list[list[int]] | None:
        """Each option's text after the cue (with a leading space); None if one merges into it."""
        seqs = [continuation(self.tokenizer, cue, " " + c) for c in choices]
        return None if any(s is None for s in seqs) else seqs


def _target(answers: _Answers, item, cond: str, cue: str, target: str, letters, options, greedy):
    """y* token ids and how they were resolved (docs/method.md, "Scoring")."""
    where = f"item {item.id!r}, condition {cond}"
    if target == "letter":
        if letters is None:
            letter_tokens(answers.tokenizer, cue, LETTERS[: len(item.choices)])  # raises, says why
        ids, form = letters
        return [ids[item.gold]], form
    if target == "choice_text":
        if options is None:
            raise ScoringError(f"{where}: an option's text merges with the cue {cue!r} when "
                               "tokenized, so it cannot be scored as a continuation")
        return options[item.gold], "space"
    if target == "greedy":
        return [greedy], "greedy"
    ids = continuation(answers.tokenizer, cue, item.response)
    if ids:
        return ids[:1], "after_cue"
    ids = answers.tokenizer.encode(item.response, add_special_tokens=False)
    if not ids:
        raise ScoringError(f"{where}: empty reference response; use `target: greedy`")
    return ids[:1], "detached"


def _encode(answers: _Answers, item, prompt):
    """Token ids of a prompt, each token's variable, and the answer tokens after its cue."""
    enc = answers.tokenizer(prompt.text, return_offsets_mapping=True)
    ids = np.asarray(enc["input_ids"], dtype=np.int64)
    owners = token_owners(enc["offset_mapping"], prompt.spans)
    mcq = isinstance(item, MCQItem)
    letters = answers.letters(prompt.cue, len(item.choices)) if mcq else None
    options = answers.options(prompt.cue, item.choices) if mcq else None
    return ids, owners, letters, options


def score_sample(engine: Engine, answers: _Answers, sample, conditions, target: str,
                 masks: np.ndarray | None = None) -> dict:
    """Everything `ips score` stores about one sample, one row per condition; v on every
    mask, or on the bitmasks `masks` (`ips.sparse.scored_masks`) in their order."""
    item, n = sample.item, len(sample.variables)
    mcq = isinstance(item, MCQItem)
    rows = []
    for c in conditions:
        prompt = sample.prompts[c.name]
        ids, owners, letters, options = _encode(answers, item, prompt)
        un = engine.unmasked(ids, letters[0] if letters else (), options or ())
        y, form = _target(answers, item, c.name, prompt.cue, target, letters, options, un.greedy)
        try:
            v = engine.values(ids, owners, n, y, masks)
        except NonFiniteError as e:
            raise NonFiniteError(f"item {item.id!r}, condition {c.name}: {e}") from None
        var_tokens = np.bincount(owners[owners >= 0], minlength=n)[:n]
        if np.any(var_tokens == 0):
            log.warning("item %r, %s: variable(s) %s own no token (their tokens belong to a "
                        "neighbour); they act as dummies", item.id, c.name,
                        [sample.variables[i].text for i in np.flatnonzero(var_tokens == 0)])
        n_opt = len(item.choices) if mcq else 0
        rows.append(dict(
            v=v, greedy=un.greedy, hidden=un.hidden, n_tokens=len(ids), var_tokens=var_tokens,
            letter_logit=un.letter_logit if letters else np.full(n_opt, np.nan),
            letter_token=np.asarray(letters[0] if letters else [-1] * n_opt, dtype=np.int64),
            option_logp=un.option_logp if options else np.full(n_opt, np.nan),
            target_ids=np.asarray(y, dtype=np.int64), target_form=form,
        ))
    return {k: (np.array([r[k] for r in rows]) if k != "target_ids" else
                _pad([r[k] for r in rows])) for k in rows[0]}


# the keys of a `score_sample` result, which a resumed result must have
RESULT_KEYS = frozenset({"v", "greedy", "hidden", "n_tokens", "var_tokens", "letter_logit",
                         "letter_token", "option_logp", "target_ids", "target_form"})


class Occlusion:
    """Occlusion scores of one reference model, for the ``occlusion`` reduction of variables.

    For a prompt whose n units are its variables, unit i scores

        o_i = |v(x_N) − v(x_{N∖{i}})|,

    v, the masking, the mask token and the target y* exactly as `score_sample` computes them
    (the plain engine), from n + 1 forward passes (one more for `target: greedy`, whose y* is
    the unmasked greedy token). The model is loaded by `load()` on the first call, so that a
    dataset without a sample over n_max never loads it.
    """

    def __init__(self, model: str, load, batch_tokens: int = BATCH_TOKENS):
        self.model = model
        self._load = load
        self.batch_tokens = batch_tokens
        self._engine: Engine | None = None
        self._answers: _Answers | None = None

    def __call__(self, item, prompt, condition: str, target: str | None = None) -> np.ndarray:
        """o_i of every variable of `prompt` (a rendering of `item` under `condition`)."""
        if self._engine is None:
            loaded = self._load()
            log.info("occlusion ranking with %s (mask token %r)", self.model, loaded.mask_token)
            self._engine = Engine(loaded.model, loaded.mask_token_id, self.batch_tokens,
                                  loaded.device)
            self._answers = _Answers(loaded.tokenizer)
        engine, answers = self._engine, self._answers
        target = target or TARGETS[item.kind][0]
        ids, owners, letters, options = _encode(answers, item, prompt)
        greedy = engine.unmasked(ids).greedy if target == "greedy" else None
        y, _ = _target(answers, item, condition, prompt.cue, target, letters, options, greedy)
        with naming_model(self.model):
            v = engine.occlusion(ids, owners, len(prompt.spans), y)
        return np.abs(v[0] - v[1:])


def _pad(seqs: list[np.ndarray], fill: int = -1) -> np.ndarray:
    out = np.full((len(seqs), max(len(s) for s in seqs)), fill, dtype=np.int64)
    for i, s in enumerate(seqs):
        out[i, : len(s)] = s
    return out


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
) -> xr.Dataset:
    """Score one shard of a SampleSet with a loaded model and write the values file `out`.

    `budget`: None scores all 2**n masks of every prompt (exhaustive sampling); a number
    scores `ips.sparse.scored_masks(n, budget, seed)` (the samples' seed), the same design
    for every condition of a sample, and the file holds them in `masks` (see `ips.values_file`).

    Finished samples are kept in `out.partial/` (one file each, written atomically), so a
    killed run resumes from the last completed sample; the partial folder is removed once
    `out` is written. A partial folder from other inputs is discarded, never mixed in, and a
    partial result that cannot be read is computed again. `out` is locked for the run
    (`ips.files.output_lock`), so a second run on it fails instead of discarding this one's.
    """
    out = Path(out)
    samples, target = check_shard(sample_set, shard, shard_size or len(sample_set.samples), target,
                                  budget)
    with output_lock(out):
        return _score_locked(loaded, sample_set, out, samples, target, shard, batch_tokens,
                             progress, scorer, budget)


def _score_locked(loaded, sample_set, out: Path, samples, target: str, shard: int,
                  batch_tokens: int, progress: bool | None, scorer: str,
                  budget: int | None) -> xr.Dataset:
    """`score_shard` once `out` is locked."""
    from ips.sparse import scored_masks

    engine = Engine(loaded.model, loaded.mask_token_id, batch_tokens, loaded.device,
                    scorer=scorer)
    seed = int(sample_set.settings.get("seed", 0))
    designs = [scored_masks(len(s.variables), budget, seed) for s in samples]
    fingerprint = {
        "ips_version": __version__, "model": loaded.spec.name,
        "source": loaded.spec.source.to_dict(), "dtype": str(loaded.dtype),
        "mask_token_id": int(loaded.mask_token_id), "dataset": sample_set.dataset,
        "shard": shard, "target": target, "budget": budget,
        "samples": [s.item.id for s in samples],
        "conditions": [c.name for c in sample_set.conditions],
        "prompts": hashlib.sha256(json.dumps(
            [[s.prompts[c.name].text, s.prompts[c.name].spans]
             for s in samples for c in sample_set.conditions]
        ).encode()).hexdigest(),
    }
    partial = _Partial(out.with_name(out.name + ".partial"), fingerprint)
    answers = _Answers(loaded.tokenizer)
    t0 = time.perf_counter()
    done = partial.done()
    log.info("%s on %s shard %d: %d samples x %d conditions, %d already done (resuming)",
             loaded.spec.name, sample_set.dataset, shard, len(samples),
             len(sample_set.conditions), len(done))
    disable = None if progress is None else not progress
    results = []
    with tqdm(total=len(samples), initial=len(done), unit="sample",
              desc=f"score {loaded.spec.name}/{sample_set.dataset}/{shard}",
              disable=disable) as bar:
        for i, (s, masks) in enumerate(zip(samples, designs)):
            count = 1 << len(s.variables) if masks is None else len(masks)
            r = partial.load(i, (len(sample_set.conditions), count)) if i in done else None
            if r is None:
                t1 = time.perf_counter()
                with naming_model(loaded.spec.name):
                    r = score_sample(engine, answers, s, sample_set.conditions, target, masks)
                partial.save(i, r)
                bar.update(1)
                # a line per sample, for logs where the bar is off (not a terminal)
                log.info("sample %d/%d %s: n = %d, %d masked inputs%s in %.1f s", i + 1,
                         len(samples), s.item.id, len(s.variables),
                         len(sample_set.conditions) * count,
                         "" if masks is None else f" ({count} of 2**{len(s.variables)} masks)",
                         time.perf_counter() - t1)
            results.append(r)
    ds = _assemble(sample_set, samples, results, loaded, target, shard, budget, designs)
    write_dataset(ds, out)
    partial.remove()
    log.info("wrote %s: %d masked evaluations in %.1f s", out,
             int(sum(r["v"].size for r in results)), time.perf_counter() - t0)
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


def _assemble(sample_set, samples, results, loaded, target: str, shard: int,
              budget: int | None = None, designs=None) -> xr.Dataset:
    """The values file: v (sample, condition, mask) and what explains it (see ips.values_file)."""
    coords = {
        "sample": labels(s.item.id for s in samples),
        "condition": labels(c.name for c in sample_set.conditions),
        "template": ("condition", labels(c.template for c in sample_set.conditions)),
        "shots": ("condition", np.array([c.shots for c in sample_set.conditions])),
        "perturbation": ("condition", labels(c.perturbation or "" for c in sample_set.conditions)),
    }
    data = {**_variable_arrays(sample_set, samples, results, budget, designs),
            **_prediction_arrays(sample_set, samples, results, loaded)}
    attrs = _provenance(sample_set, loaded, target, shard)
    attrs["sampling"] = "exhaustive" if budget is None else "sparse"
    if budget is not None:
        attrs["budget"] = int(budget)
    return xr.Dataset(data, coords=coords, attrs=attrs)


def _variable_arrays(sample_set, samples, results, budget: int | None = None, designs=None) -> dict:
    """v over the 2**n_max masks (NaN beyond a sample's 2**n), or with a `budget` over the
    design's masks (`masks`, −1 and NaN beyond each sample's design), and the variables:
    their text, field, character span and token count in every prompt."""
    n_vars = np.array([len(s.variables) for s in samples])
    # every shard of a dataset gets the same mask axis (2**n_max, or the largest design the
    # budget allows), so that shards concatenate
    n_max = max(int(n_vars.max()), sample_set.settings.get("n_max", 0))
    S, C = len(samples), len(sample_set.conditions)
    width = 1 << n_max if budget is None else min(budget, 1 << n_max)
    v = np.full((S, C, width), np.nan)
    spans = np.full((S, C, n_max, 2), -1, dtype=np.int64)
    var_tokens = np.zeros((S, C, n_max), dtype=np.int64)
    var_text = np.full((S, n_max), "", dtype=object)
    var_field = np.full((S, n_max), "", dtype=object)
    for i, (s, r) in enumerate(zip(samples, results)):
        n = n_vars[i]
        v[i, :, : r["v"].shape[1]] = r["v"]
        var_tokens[i, :, :n] = r["var_tokens"]
        for j, c in enumerate(sample_set.conditions):
            spans[i, j, :n] = np.asarray(s.prompts[c.name].spans).reshape(n, 2)
        var_text[i, :n] = [x.text for x in s.variables]
        var_field[i, :n] = [x.field for x in s.variables]
    sc, scv = ("sample", "condition"), ("sample", "condition", "var")
    design = {}
    if budget is not None:
        masks = np.full((S, width), -1, dtype=np.int64)
        for i, d in enumerate(designs):
            d = np.arange(1 << n_vars[i]) if d is None else d
            masks[i, :len(d)] = d
        design = {"masks": (("sample", "mask"), masks)}
    return {
        "v": (sc + ("mask",), v),
        **design,
        "n_vars": (("sample",), n_vars),
        "variable": (("sample", "var"), var_text),
        "variable_field": (("sample", "var"), var_field),
        "span": (scv + ("bound",), spans),
        "var_tokens": (scv, var_tokens),
    }


def _storable(text: str) -> str:
    """`text` as HDF5 can store it: a NUL (the decoded byte-level token 0x00, which a model
    may predict) written as the four characters \\x00."""
    return text.replace("\x00", "\\x00")


def _prediction_arrays(sample_set, samples, results, loaded) -> dict:
    """What the model predicts on the unmasked prompts: letter logits and option
    log-probabilities with the predictions they give, the greedy token, the scored target,
    the final hidden state, and the prompts themselves."""
    stack = lambda k: np.stack([r[k] for r in results])  # noqa: E731
    S, C = len(samples), len(sample_set.conditions)
    letter_logit, option_logp = stack("letter_logit"), stack("option_logp")
    target_ids = np.full((S, C, max(r["target_ids"].shape[1] for r in results)), -1)
    for i, r in enumerate(results):
        target_ids[i, :, : r["target_ids"].shape[1]] = r["target_ids"]
    sc = ("sample", "condition")
    mcq = sample_set.kind == "mcq"
    return {
        "gold": (("sample",), np.array([s.item.gold if mcq else -1 for s in samples])),
        # the prediction is the option letter with the highest logit (−1 without letters)
        "pred": (sc, _argmax(letter_logit)),
        # the option whose text is most probable (what `target: choice_text` scores)
        "pred_text": (sc, _argmax(option_logp)),
        "letter_logit": (sc + ("option",), letter_logit),
        "letter_token": (sc + ("option",), stack("letter_token")),
        "option_logp": (sc + ("option",), option_logp),
        "greedy_token": (sc, stack("greedy")),
        "greedy_text": (sc, np.vectorize(lambda t: _storable(loaded.tokenizer.decode(t)),
                                         otypes=[object])(stack("greedy"))),
        "target_ids": (sc + ("target_pos",), target_ids),
        "target_form": (sc, stack("target_form").astype(object)),
        "n_tokens": (sc, stack("n_tokens")),
        "hidden": (sc + ("hidden_dim",), stack("hidden").astype(np.float32)),
        "prompt": (sc, np.array([[s.prompts[c.name].text for c in sample_set.conditions]
                                 for s in samples], dtype=object)),
    }


def _provenance(sample_set, loaded, target: str, shard: int) -> dict:
    """The values file's attributes: the model, the dataset and settings, the versions."""
    return {
        "model": loaded.spec.name,
        "model_attributes": json.dumps({k: getattr(loaded.spec, k) for k in MODEL_ATTRIBUTES}),
        "model_source": json.dumps(loaded.spec.source.to_dict()),
        "mask_token": loaded.mask_token,
        "mask_token_id": int(loaded.mask_token_id),
        "mask_source": loaded.mask_source,
        "dtype": str(loaded.dtype).removeprefix("torch."),
        "device": str(loaded.device),
        "dataset": sample_set.dataset,
        "kind": sample_set.kind,
        "shard": shard,
        "target": target,
        "groups": json.dumps(sample_set.groups),
        "shots_ids": json.dumps([i.id for i in sample_set.shots]),
        "settings": json.dumps(sample_set.settings),
        "skipped": json.dumps(sample_set.skipped),
        "ips_version": __version__,
        "torch_version": str(torch.__version__),
        "transformers_version": _version("transformers"),
    }


def _argmax(scores: np.ndarray) -> np.ndarray:
    """Index of the best option per row, −1 where there are no scores (empty or NaN)."""
    if scores.shape[-1] == 0:
        return np.full(scores.shape[:-1], -1)
    best = np.nan_to_num(scores, nan=-np.inf).argmax(-1)
    return np.where(np.isnan(scores).all(-1), -1, best)

