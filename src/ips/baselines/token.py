"""Replacement by one token: every absent token becomes the same token (paper Appendix E.4).

The paper's baseline is a model's own mask token (`ips.models.loading.resolve_mask_token`:
the entry's `mask_token`, else the tokenizer's unk, else its pad token), a `Token` that
`ips.models.loading.model_baseline` builds.
Another token is named by a setting: `unk`, `pad`, `eos`, `bos` (the tokenizer's token of
that role), `word:W` (the one token that " W" encodes to: a word as it reads after a space,
where masked words stand) or `id:N` (token N).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ips.baselines.base import Replacement
from ips.errors import ModelError

HINT = "choose another baseline (docs/method.md#baselines)"


@dataclass(frozen=True)
class Token(Replacement):
    """Every absent token replaced by `token_id`; two are the same baseline when their
    token is."""

    kind = "token"
    settings = r"unk|pad|eos|bos|word:[A-Za-z]+|id:[0-9]+"
    syntax = "unk, pad, eos, bos, word:W (W letters only), id:N"
    single_token = True
    summary = ("each absent token replaced by one token: the tokenizer's token of that role, "
               "the one token of ' W', or token N")

    token_id: int
    token: str = field(default="", compare=False)
    source: str = field(default="", compare=False)

    @classmethod
    def resolve(cls, setting: str, tokenizer: Any, model: str) -> Token:
        role, _, arg = setting.partition(":")
        if role == "word":
            ids = tokenizer.encode(" " + arg, add_special_tokens=False)
            if len(ids) != 1:
                raise ModelError(f"model {model}: baseline {setting!r}: ' {arg}' is {len(ids)} "
                                 f"tokens, not one; {HINT}")
            token_id = ids[0]
        elif role == "id":
            token_id = int(arg)
            if token_id >= len(tokenizer):
                raise ModelError(f"model {model}: baseline {setting!r} is outside the "
                                 f"vocabulary (0..{len(tokenizer) - 1}); {HINT}")
        else:
            token_id = getattr(tokenizer, f"{role}_token_id", None)
            if token_id is None:
                raise ModelError(f"model {model}: baseline {setting!r}: the tokenizer has no "
                                 f"{role} token; {HINT}")
        return cls(int(token_id), tokenizer.convert_ids_to_tokens(token_id), setting)

    def absent_ids(self, seq: np.ndarray, positions: np.ndarray) -> np.ndarray:
        return np.full(len(positions), self.token_id, dtype=seq.dtype)
