"""A baseline of a user's own, as a plug-in file outside `ips` (docs/api.md#writing-a-baseline):
each absent token replaced by a token drawn for its position, seeded (`random:SEED`).

Named in a config's `plugins:` (or `ips --plugin`), it is a setting like the built-in ones:
`baselines.others: ["random:3"]`, `nulls.baseline.others`, `ips score --baseline random:3`.
"""

from dataclasses import dataclass, field

import numpy as np

from ips.baselines import Replacement
from ips.errors import ModelError

#: positions a prompt may have (the draws are made once, for all of them)
POSITIONS = 1 << 14


@dataclass(frozen=True)
class RandomToken(Replacement):
    kind = "random_token"
    settings = r"random:[0-9]+"
    syntax = "random:SEED"
    summary = "each absent token replaced by a token drawn uniformly for its position"

    seed: int
    drawn: np.ndarray = field(compare=False, repr=False)
    source: str = field(default="", compare=False)

    @classmethod
    def resolve(cls, setting, tokenizer, model):
        seed = int(setting.partition(":")[2])
        if len(tokenizer) < 2:
            raise ModelError(f"model {model}: baseline {setting!r} needs a vocabulary to draw "
                             "from")
        drawn = np.random.default_rng(seed).integers(0, len(tokenizer), size=POSITIONS)
        return cls(seed, drawn, setting)

    def absent_ids(self, seq, positions):
        return self.drawn[positions].astype(seq.dtype)
