"""Deletion: absent tokens are left out of the input (setting `delete`).

Attention-mask removal (Hase et al., NeurIPS 2021): the tokens kept keep their positions in
the full prompt (explicit position ids), so a row differs from the whole prompt only by what
it lacks, not by where its tokens sit. Rows lacking equally many tokens run together; the
trie runs a level's rows in groups that keep the same tokens of its segment.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from ips.baselines.base import Baseline, Segment
from ips.errors import ScoringError


@dataclass(frozen=True)
class Deletion(Baseline):
    """Absent tokens removed, the others at their positions (module docstring)."""

    kind = "deletion"
    settings = "delete"
    syntax = "delete"
    summary = "absent tokens removed, the others keeping their positions"
    shortens = True

    source: str = "delete"

    @classmethod
    def resolve(cls, setting: str, tokenizer: Any, model: str) -> Deletion:
        return cls()

    def check_model(self, model: Any) -> None:
        if "position_ids" not in inspect.signature(model.forward).parameters:
            raise ScoringError(f"{type(model).__name__} takes no position ids, which the "
                               "deletion baseline needs; give it a mask token instead")

    def rows(self, seq: np.ndarray, kept: np.ndarray) -> dict[str, np.ndarray]:
        # an explicit all-ones attention mask: without it transformers reads position ids
        # that skip as the starts of packed sequences (`find_packed_sequence_indices`)
        pos = np.nonzero(kept)[1].reshape(len(kept), -1)
        return {"input_ids": seq[pos], "position_ids": pos, "attention_mask": np.ones_like(pos)}

    def lengths(self, owners: np.ndarray, n: int, absent: np.ndarray) -> np.ndarray:
        tokens = np.bincount(owners[owners >= 0], minlength=n)[:n]
        return len(owners) - absent @ tokens

    def segments(self, seg: np.ndarray, positions: np.ndarray,
                 kept: np.ndarray) -> Iterator[Segment]:
        patterns, group = np.unique(kept, axis=0, return_inverse=True)
        for g, pattern in enumerate(patterns):
            if not pattern.any():  # nothing of the segment kept: the rows attend past it
                continue
            rows = np.flatnonzero(group.ravel() == g)
            yield Segment(rows, np.tile(seg[pattern], (len(rows), 1)), np.flatnonzero(pattern))
