"""The output score v(x_S) of a causal LM on masked prompts (paper Section 3.1), sample by sample.

`Engine` runs the forward passes: the masked inputs x_S of a prompt, as its baseline builds
them (`ips.baselines`), are batched without padding, rows of one length together (all 2**n
have the same length under a mask token; the deletion baseline shortens a row by its absent
tokens), or evaluated as a trie
(`ips.scoring.trie`); the masking and the log-odds v(x_S) = log p − log(1 − p),
p = P(y* | x_S), are those of `ips.scoring.log_odds`. `score_sample` scores one sample
under its conditions (its prompts encoded by `encode_prompt`, y* by `resolve_target`);
`ips.scoring.shard` scores a shard of them into its values file.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from ips.baselines import Baseline, as_baseline
from ips.config import MASKINGS, SCORERS, default
from ips.prompts.items import LETTERS, MCQItem
from ips.scoring.log_odds import (
    NonFiniteError,
    ScoringError,
    finite_values,
    half_products,
    kept_tokens,
    model_dtype,
    shown_inputs,
    token_owners,
    v_from_logits,
    word_slots,
    word_spaces,
)
from ips.scoring.trie import TrieScorer, trie_budget

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


def space_token(tokenizer) -> int:
    """The token a lone space after a word encodes to, which `masking: word` puts before the
    mask of a word that carried its leading space; `ScoringError` if there is none."""
    ids = continuation(tokenizer, "a", " ")
    if ids is None or len(ids) != 1:
        raise ScoringError("masking word: this tokenizer has no single token for a space "
                           "after a word; use masking tokens")
    return ids[0]


def model_engine(loaded, batch_tokens: int = BATCH_TOKENS, scorer: str = "plain",
                 masking: str = "tokens") -> Engine:
    """The `Engine` of a loaded model (`ips.models.loading.LoadedModel`): its baseline and
    device, and under `masking: word` its tokenizer's space token (`space_token`)."""
    space = space_token(loaded.tokenizer) if masking == "word" else None
    return Engine(loaded.model, loaded.baseline, batch_tokens, loaded.device,
                  scorer=scorer, masking=masking, space_id=space)


@dataclass
class Unmasked:
    """What the unmasked prompt yields besides v."""

    greedy: int  # the unrestricted greedy next token
    letter_logit: np.ndarray  # (options,) logits of the option letters (empty: no letters)
    option_logp: np.ndarray  # (options,) log P of each option's text (empty: not scored)
    hidden: np.ndarray  # final-layer hidden state at the answer position


def _computing(method):
    """Run an `Engine` method with the model's arithmetic: half precision on the CPU computes
    its matrix products as a GPU does (`ips.scoring.log_odds.half_products`)."""
    @functools.wraps(method)
    def run(self, *args, **kwargs):
        with half_products(model_dtype(self.model), self.device):
            return method(self, *args, **kwargs)

    return run


class Engine:
    """Batched forward passes of one model; only the positions that are scored are projected."""

    def __init__(self, model, baseline: Baseline | int, batch_tokens: int = BATCH_TOKENS,
                 device=None, scorer: str = "plain", masking: str = "tokens",
                 space_id: int | None = None):
        """`baseline`: what absent tokens become (`ips.baselines`; a token id: that token,
        `Token`), checked against the model (`Baseline.check_model`). `scorer`: "plain"
        (batched rows), "trie" (shared-prefix evaluation, `ips.scoring.trie`; `ScoringError`
        for a model it cannot evaluate) or "auto" (the trie where the model allows it, else
        plain, with the reason logged once). `masking`: "tokens" (every token of an absent
        word becomes the mask token) or "word" (the word becomes one mask token, after its
        space, `space_id` (`space_token`); `ips.scoring.log_odds.word_slots`), which the
        plain scorer evaluates."""
        self.model = model
        self.baseline = as_baseline(baseline)
        self.baseline.check_model(model)
        self.batch_tokens = int(batch_tokens)
        self.device = device if device is not None else next(model.parameters()).device
        if scorer not in SCORERS:
            raise ValueError(f"scorer must be one of {', '.join(SCORERS)}, got {scorer!r}")
        if masking not in MASKINGS:
            raise ValueError(f"masking must be one of {', '.join(MASKINGS)}, got {masking!r}")
        self.word = masking == "word"
        self.baseline.check_masking(masking, self.baseline.source)
        if self.word and space_id is None:
            raise ValueError("masking word needs the space token's id (space_token)")
        if self.word and scorer == "trie":
            raise ScoringError("masking word reads the masked prompts at consecutive "
                               "positions, so a later word's position depends on the words "
                               "masked before it, which the trie cannot share; use scorer "
                               "plain or auto")
        if self.word and scorer == "auto":
            log.info("masking word: scoring plainly (the trie shares positions that one mask "
                     "per word shifts)")
            scorer = "plain"
        self.space_id = space_id
        self.scorer = scorer
        from transformers import PreTrainedModel

        # the option texts continue the unmasked prompt's keys/values (`unmasked`) where the
        # model keeps a transformers cache; for other models each row repeats the prompt
        self.cache_prompt = isinstance(model, PreTrainedModel) and not getattr(
            model.config, "is_encoder_decoder", False)
        self.trie = None
        if scorer != "plain":
            self.trie = TrieScorer(model, self.baseline, trie_budget(self.batch_tokens),
                                   self.device, mode=scorer)

    def _logits(self, rows: np.ndarray, k: int, cache=None, **kwargs):
        """The model's output on `rows`, logits of the last k positions; `cache`: keys/values
        the rows continue, which the forward extends (none kept without it)."""
        ids = torch.as_tensor(rows, device=self.device)
        if cache is not None:
            kwargs.update(cache=cache, use_cache=True)
        return self.model(input_ids=ids, logits_to_keep=k, **{"use_cache": False, **kwargs})

    @torch.inference_mode()
    def _log_odds(self, inputs: dict[str, np.ndarray], target: Sequence[int]) -> np.ndarray:
        """v for every row of `inputs` (`model_inputs`; `v_from_logits`); rows already end
        with target[:-1]."""
        rows, extra = inputs["input_ids"], {k: torch.as_tensor(a, device=self.device)
                                            for k, a in inputs.items() if k != "input_ids"}
        return v_from_logits(self._logits(rows, len(target), **extra).logits, target)

    @_computing
    def values(self, ids: np.ndarray, owners: np.ndarray, n: int, target: Sequence[int],
               masks: np.ndarray | None = None, spaced: np.ndarray | None = None) -> np.ndarray:
        """v(x_S) for all 2**n masks S of one prompt (`ids` without the target), or for the
        bitmasks `masks` only, in their order (a sparse design, `ips.interactions.sparse`; the trie
        then shares the tokens before the first variable). `spaced`: under `masking: word`,
        which words carry their leading space (`ips.scoring.log_odds.word_spaces`)."""
        if self.trie is not None:
            v = self.trie.values(ids, owners, n, target, masks)
            if v is not None:
                return v
        seq, own, absent_form = self._slots(ids, owners, n, target, spaced)
        chosen = np.arange(1 << n) if masks is None else np.asarray(masks, dtype=np.int64)
        absent = 1 - ((chosen[:, None] >> np.arange(n)) & 1)
        return self._batched(seq, absent_form, lambda idx: kept_tokens(own, n, chosen[idx]),
                             self._lengths(own, n, absent, absent_form), target)

    @_computing
    def occlusion(self, ids: np.ndarray, owners: np.ndarray, n: int, target: Sequence[int],
                  spaced: np.ndarray | None = None) -> np.ndarray:
        """v(x_N), then v(x_{N∖{i}}) for i = 0..n−1: n + 1 rows (plain batches, any n).

        Row i + 1 masks variable i alone, as `values` masks it.
        """
        seq, own, absent_form = self._slots(ids, owners, n, target, spaced)

        def keep(js: np.ndarray) -> np.ndarray:
            # j = 0 is the unmasked prompt, j = i + 1 masks variable i
            js = np.asarray(js)[:, None]
            return (own[None, :] != js - 1) | (js == 0)

        absent = np.vstack([np.zeros((1, n), np.int64), np.eye(n, dtype=np.int64)])
        return self._batched(seq, absent_form, keep, self._lengths(own, n, absent, absent_form),
                             target)

    def _slots(self, ids: np.ndarray, owners: np.ndarray, n: int, target: Sequence[int],
               spaced: np.ndarray | None):
        """The prompt followed by target[:-1] (background), so the last k positions score y*,
        its tokens' owners, and under `masking: word` its slots (`word_slots`) with their
        `absent_form` (None otherwise)."""
        seq = np.concatenate([ids, np.asarray(target[:-1], dtype=ids.dtype)])
        own = np.concatenate([owners, np.full(len(target) - 1, -1, dtype=owners.dtype)])
        if not self.word:
            return seq, own, None
        if spaced is None:
            raise ValueError("masking word needs `spaced` (word_spaces) for every prompt")
        return word_slots(seq, own, n, self.baseline.token_id, self.space_id, spaced)

    def _lengths(self, own: np.ndarray, n: int, absent: np.ndarray,
                 absent_form: np.ndarray | None) -> np.ndarray:
        """Each row's length (`absent`, `[rows, n]` of 0/1: the variables it lacks): the
        baseline's (`Baseline.lengths`); under `masking: word` the slots shown (an absent
        word's space and mask, not its tokens)."""
        if absent_form is None:
            return self.baseline.lengths(own, n, absent)
        var = own >= 0
        words = np.bincount(own[var & ~absent_form], minlength=n)[:n]
        masks = np.bincount(own[var & absent_form], minlength=n)[:n]
        return len(own) - masks.sum() - absent @ (words - masks)

    def _batched(self, seq: np.ndarray, absent_form: np.ndarray | None, keep,
                 lengths: np.ndarray, target: Sequence[int]) -> np.ndarray:
        """v of the rows of `seq` that keep(indices) keeps (`kept_tokens`), for indices
        0..len(lengths)−1: rows of one length in batches of at most batch_tokens tokens, as
        the baseline builds them (`Baseline.rows`), or under `masking: word` the slots each
        row shows (`shown_inputs`)."""
        out = np.empty(len(lengths), dtype=np.float64)
        order = np.argsort(lengths, kind="stable")
        start = 0
        while start < len(order):
            length = int(lengths[order[start]])
            stop = min(start + max(1, self.batch_tokens // length), len(order))
            stop = start + int(np.searchsorted(lengths[order[start:stop]], length, "right"))
            idx = order[start:stop]
            inputs = (self.baseline.rows(seq, keep(idx)) if absent_form is None
                      else shown_inputs(seq, absent_form, keep(idx)))
            out[idx] = self._log_odds(inputs, target)
            start = stop
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
            # any token pads: causal attention never reads it
            rows = np.zeros((len(longer), len(head) + width), dtype=ids.dtype)
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


class Answers:
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


def resolve_target(answers: Answers, item, cond: str, cue: str, target: str, letters, options, greedy):
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


def encode_prompt(answers: Answers, item, prompt):
    """Token ids of a prompt, each token's variable, which variables carry their leading
    space (`word_spaces`), and the answer tokens after its cue."""
    enc = answers.tokenizer(prompt.text, return_offsets_mapping=True)
    ids = np.asarray(enc["input_ids"], dtype=np.int64)
    owners = token_owners(enc["offset_mapping"], prompt.spans)
    spaced = word_spaces(prompt.text, enc["offset_mapping"], prompt.spans, owners)
    mcq = isinstance(item, MCQItem)
    letters = answers.letters(prompt.cue, len(item.choices)) if mcq else None
    options = answers.options(prompt.cue, item.choices) if mcq else None
    return ids, owners, spaced, letters, options


def score_sample(engine: Engine, answers: Answers, sample, conditions, target: str,
                 masks: np.ndarray | None = None) -> dict:
    """Everything `ips score` stores about one sample, one row per condition; v on every
    mask, or on the bitmasks `masks` (`ips.interactions.design.scored_masks`) in their order.
    A condition the sample lacks (`sample.prompts` has no prompt for it: a rewording the
    item does not have) is not scored: its row holds `_absent_row` (NaN, −1, 0)."""
    item, n = sample.item, len(sample.variables)
    mcq = isinstance(item, MCQItem)
    rows: list[dict | None] = []
    for c in conditions:
        prompt = sample.prompts.get(c.name)
        if prompt is None:
            rows.append(None)
            continue
        ids, owners, spaced, letters, options = encode_prompt(answers, item, prompt)
        un = engine.unmasked(ids, letters[0] if letters else (), options or ())
        y, form = resolve_target(answers, item, c.name, prompt.cue, target, letters, options, un.greedy)
        try:
            v = engine.values(ids, owners, n, y, masks, spaced)
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
    scored = next((r for r in rows if r is not None), None)
    if scored is None:
        raise ValueError(f"item {item.id!r} has a prompt under none of the conditions")
    rows = [_absent_row(scored) if r is None else r for r in rows]
    return {k: (np.array([r[k] for r in rows]) if k != "target_ids" else
                _pad([r[k] for r in rows])) for k in rows[0]}


def _absent_row(scored: dict) -> dict:
    """The row of a condition that was not scored, shaped like the `scored` row of the same
    sample: NaN for numbers (v, logits, hidden), −1 for token ids, 0 for counts, "" for the
    target's form."""
    fill = {"greedy": -1, "n_tokens": 0, "target_form": ""}
    out = {}
    for k, x in scored.items():
        if k in fill:
            out[k] = fill[k]
        elif k in ("letter_token", "target_ids"):
            out[k] = np.full_like(x, -1)
        elif k == "var_tokens":
            out[k] = np.zeros_like(x)
        else:
            out[k] = np.full(np.shape(x), np.nan)
    return out


def _pad(seqs: list[np.ndarray], fill: int = -1) -> np.ndarray:
    out = np.full((len(seqs), max(len(s) for s in seqs)), fill, dtype=np.int64)
    for i, s in enumerate(seqs):
        out[i, : len(s)] = s
    return out
