"""The interface of a baseline: what a masked prompt x_S becomes.

A game v(x_S) needs a meaning for "variable i is absent" (paper Section 3.1; Appendix E.4
replaces its tokens by the model's mask token). A `Baseline` is that meaning. Given a
prompt's token ids `seq` and which tokens a row keeps (`kept`, `[rows, tokens]`, from
`ips.scoring.log_odds.kept_tokens`), it says

- `rows`: the plain scorer's inputs of those rows (`input_ids`, and where tokens move or go,
  `position_ids` and `attention_mask`), rows of equal `lengths` together;
- `segments`: the trie's inputs of one level's segment (`ips.scoring.trie`): which rows read
  which token ids, and, for a baseline that drops tokens (`shortens`), which of the
  segment's slots they hold;

and it is checked against a tokenizer before any weight loads (`resolve`). A subclass that
sets `kind` and `settings` registers itself (`ips.baselines`); one that replaces each absent
token by a token derives from `Replacement` and says which token stands at each position.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ips import plugins
from ips.errors import ScoringError

#: every registered baseline class by kind, in the order registered (`ips.baselines`)
REGISTRY: dict[str, type[Baseline]] = {}

#: the values file's `mask_token_id` of a baseline that puts no single token in place of
#: absent tokens (`Baseline.recorded_id`)
NO_TOKEN_ID = -1


@dataclass(frozen=True)
class Segment:
    """The trie's inputs for some rows of one level's segment: `rows` (indices into the
    level's rows) read `ids` (`[len(rows), width]`) at the segment's slots `slots` (None:
    all of them, in order; else the indices of the slots they hold)."""

    rows: np.ndarray
    ids: np.ndarray
    slots: np.ndarray | None = None


class Baseline(plugins.Registered, ABC, registry=REGISTRY, what="baseline"):
    """What absence means (module docstring). Instances are resolved for one tokenizer."""

    kind: ClassVar[str]
    """The registry's name of the class."""
    settings: ClassVar[str]
    """A regular expression of the settings it parses (`baselines.others`, `ips score
    --baseline`): no two classes parse one setting."""
    syntax: ClassVar[str]
    """The settings as a user writes them, for help texts and errors ("word:W, id:N")."""
    summary: ClassVar[str]
    """What absence means under it, one phrase."""
    shortens: ClassVar[bool] = False
    """Whether a row leaves absent tokens out (its length then depends on the row; the trie
    needs the answer position to stay, `ips.scoring.trie.TrieScorer.values`)."""
    single_token: ClassVar[bool] = False
    """Whether absent tokens become one token (`token_id`), which `masking: word` needs."""
    token_id: int | None = None
    """The one token absent tokens become, where `single_token`."""
    token: str = ""
    """That token as the tokenizer writes it."""
    source: str = ""
    """The setting it was resolved from, or where a model's own mask token came from."""

    @classmethod
    @abstractmethod
    def resolve(cls, setting: str, tokenizer: Any, model: str) -> Baseline:
        """The baseline `setting` (one that `settings` matches) for `tokenizer`; a
        `ModelError` naming `model` and what to choose instead when it cannot be."""

    def check_model(self, model: Any) -> None:
        """Raise `ScoringError` if `model` cannot be scored under it (before any forward).
        Default: any model can."""
        return None

    @abstractmethod
    def rows(self, seq: np.ndarray, kept: np.ndarray) -> dict[str, np.ndarray]:
        """A forward's inputs for the rows of `seq` that keep `kept` (rows of equal
        `lengths`): `input_ids`, and any other keyword the model's forward takes."""

    def lengths(self, owners: np.ndarray, n: int, absent: np.ndarray) -> np.ndarray:
        """Each row's length; `absent`: `[rows, n]` of 0/1, the variables it lacks;
        `owners`: each token's variable (−1: background). Default: the whole prompt."""
        return np.full(len(absent), len(owners))

    @abstractmethod
    def segments(self, seg: np.ndarray, positions: np.ndarray,
                 kept: np.ndarray) -> Iterator[Segment]:
        """The trie's inputs for the segment `seg` (token ids at `positions`) of rows that
        keep `kept` (`[rows, len(seg)]`): rows without a `Segment` hold nothing of it. A
        baseline that does not shorten rows gives one `Segment` of every row and all slots."""

    @classmethod
    def check_masking(cls, masking: str, setting: str) -> None:
        """A `ScoringError` where `masking` (`ips.scoring.engine.Engine`) cannot be used with
        this kind: `word` puts one token in place of a word, which needs `single_token`."""
        if masking == "word" and not cls.single_token:
            raise ScoringError(f"masking word replaces an absent word by one mask token, and "
                               f"the baseline {setting!r} has none; use masking tokens with it")

    def same(self, other: Baseline) -> bool:
        """Whether `other` gives the same inputs (then it is no other baseline at all)."""
        return type(self) is type(other) and self == other

    @property
    def recorded_id(self) -> int:
        """The values file's `mask_token_id`: `token_id`, else `NO_TOKEN_ID`."""
        return NO_TOKEN_ID if self.token_id is None else self.token_id


class Replacement(Baseline):
    """A baseline that puts a token in place of each absent token: every row has the
    prompt's length and positions. A subclass says which token stands where (`absent_ids`)."""

    @abstractmethod
    def absent_ids(self, seq: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """The token that replaces each token of `seq` (at `positions` of the prompt) where
        it is absent; the same token at the same position in every row."""

    def rows(self, seq: np.ndarray, kept: np.ndarray) -> dict[str, np.ndarray]:
        return {"input_ids": np.where(kept, seq[None, :],
                                      self.absent_ids(seq, np.arange(len(seq)))[None, :])}

    def segments(self, seg: np.ndarray, positions: np.ndarray,
                 kept: np.ndarray) -> Iterator[Segment]:
        yield Segment(np.arange(len(kept)),
                      np.where(kept, seg[None, :], self.absent_ids(seg, positions)[None, :]))
