"""The trie's levels: which variables each level fixes, and how many tokens a forward runs.

Shared-prefix evaluation (`ips.scoring.trie`) runs level k for the 2**k nodes that fix
variables 1..k. A forward has a fixed cost besides its tokens, so `plan_levels` may let the
first, narrow levels fix several variables at once; `trie_budget` caps a forward's tokens.
"""

from __future__ import annotations

from collections.abc import Sequence

MIN_BUDGET = 4096


def trie_budget(batch_tokens: int) -> int:
    """Tokens per trie forward for an engine capped at `batch_tokens` per plain forward.

    A trie forward runs a few tokens per row over a stored context, so its activations per
    token are those of a plain forward's without the prompt's attention; small budgets make
    the early (narrow) levels' matmuls inefficient, so it is at least MIN_BUDGET.
    """
    return max(int(batch_tokens), MIN_BUDGET)


def plan_levels(firsts: Sequence[int], length: int, budget: int,
                forward_cost: int) -> list[tuple[int, int, int]]:
    """The trie's levels: `(start, end, variables fixed)` per level, level 0 first.

    `firsts`: the first token position of each variable, in prompt order; `length`: the
    row length. Level 0 is the prefix before the first variable (one node; empty where it is
    merged into level 1). A level after it fixes a run of consecutive variables i..j−1 and
    runs positions [firsts[i], firsts[j]) for 2**j nodes. One variable per level computes
    the fewest tokens, but each forward also costs about `forward_cost` tokens' time
    (reading the weights; launching kernels), so narrow early levels are merged where that
    is cheaper: the plan minimises Σ (tokens + forwards × forward_cost), forwards =
    ⌈tokens / budget⌉, by dynamic programming over the split points.
    """
    m = len(firsts)
    F = list(firsts) + [length]

    def cost(a: int, j: int) -> int:
        tokens = (1 << j) * (F[j] - a)
        return tokens + -(-tokens // budget) * forward_cost

    # best[j]: cheapest way to have run every position before F[j] (variables 0..j−1 fixed)
    best = [0.0] * (m + 1)
    prev: list[int | None] = [None] * (m + 1)  # None: the level starts at position 0
    best[0] = F[0] + forward_cost if F[0] > 0 else 0
    for j in range(1, m + 1):
        best[j], prev[j] = cost(0, j), None  # the prefix merged into this level
        for i in range(j):
            c = best[i] + cost(F[i], j)
            if c < best[j]:
                best[j], prev[j] = c, i
    if m == 0:
        return [(0, length, 0)]
    ends, j = [], m
    while j:  # stops at 0 (a separate prefix level) or None (the prefix merged)
        ends.append(j)
        j = prev[j]
    start = F[0] if j == 0 else 0
    levels = [(0, start, 0)]
    for e in reversed(ends):
        levels.append((start, F[e], e))
        start = F[e]
    return levels


#: the "variables fixed" of a design's leaf level: larger than any node index's bit length,


#: so that every leaf row's ancestor at level 0 is the one prefix node (`KeyValueTree.attend`)
DESIGN_BITS = 62


def pow2_floor(x: int) -> int:
    return 1 << (max(1, int(x)).bit_length() - 1)

