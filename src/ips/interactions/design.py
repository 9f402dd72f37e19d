"""The design of a sparse game: which masks are scored (`design`, `scored_masks`)."""

from __future__ import annotations

from math import comb

import numpy as np
from numpy.typing import NDArray

#: masks are int64 bitmasks
MAX_N = 62


def check_n(n, name: str = "n") -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= n <= MAX_N:
        raise ValueError(f"{name}: must be an integer in 1..{MAX_N}, got {n!r}")
    return int(n)


def popcount(masks: NDArray[np.int64]) -> NDArray[np.int64]:
    return np.bitwise_count(masks).astype(np.int64)


def masks_of_size(n: int, size: int) -> NDArray[np.int64]:
    """All masks with exactly `size` bits of n (combinations in lexicographic order)."""
    from itertools import combinations

    return np.array([sum(1 << i for i in c) for c in combinations(range(n), size)],
                    dtype=np.int64).reshape(-1)


def design(n: int, budget: int, seed: int = 0, extremes: float = 0.5) -> NDArray[np.int64]:
    """A design of ``budget`` distinct masks (sorted bitmasks) for a game of n variables.

    Complete size levels from the outside in (|T| = 0 and n, then 1 and n − 1, …; a level
    pair is taken whole, and only while the levels so far fit in ``extremes``·budget; sizes
    0 and n always), then uniformly random masks (each variable kept with probability ½,
    drawn without repetition with ``numpy.random.default_rng(seed)``) up to ``budget``.
    A budget ≥ 2^n gives all 2^n masks.
    """
    n = check_n(n)
    if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or budget < 2:
        raise ValueError(f"budget: must be an integer ≥ 2 (masked prompts), got {budget!r}")
    if not 0.0 <= extremes <= 1.0:
        raise ValueError(f"extremes: must lie in [0, 1], got {extremes!r}")
    if n < 63 and budget >= (1 << n):
        return np.arange(1 << n, dtype=np.int64)
    chosen = [np.array([0, (1 << n) - 1], dtype=np.int64)]
    used = 2
    for size in range(1, n // 2 + 1):
        pair = comb(n, size) * (1 if 2 * size == n else 2)
        if used + pair > extremes * budget:
            break
        chosen.append(masks_of_size(n, size))
        if 2 * size != n:
            chosen.append(((1 << n) - 1) ^ chosen[-1])
        used += pair
    taken = set(np.concatenate(chosen).tolist())
    rng = np.random.default_rng(seed)
    need = budget - len(taken)
    extra: list[int] = []
    while need > 0:
        draw = rng.integers(0, 2, size=(2 * need + 8, n), dtype=np.int64) << np.arange(n)
        for m in draw.sum(axis=1).tolist():
            if m not in taken:
                taken.add(m)
                extra.append(m)
                need -= 1
                if need == 0:
                    break
    return np.sort(np.array(sorted(taken), dtype=np.int64))


def scored_masks(n: int, budget: int | None, seed: int = 0) -> NDArray[np.int64] | None:
    """The masks scored for a prompt of n variables: None (all 2^n, the exhaustive path) for
    ``budget=None`` or a budget of at least 2^n, else ``design(n, budget, seed)``."""
    if budget is None or (n < 63 and budget >= 1 << n):
        return None
    return design(n, budget, seed)
