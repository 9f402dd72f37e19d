"""The seeded draw of a dataset's items (`sample_items`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ips.prompts.items import DatasetError, Item

# skip reason of `Draw.skipped` besides those of `qualifies`
SKIP_SHOT = "used as a few-shot example"
SKIP_EXCLUDED = "excluded by the dataset's exclude_items"


@dataclass(frozen=True)
class Draw:
    """The evaluated items and few-shot examples drawn from a dataset.

    `skipped` counts the items that `qualifies` rejected, by reason; `n_considered` is how
    many items were looked at (kept + skipped). When fewer items qualify than `n_requested`,
    `items` holds what there is and `complete` is False.
    """

    items: list[Item]
    shots: list[Item]
    skipped: dict[str, int]
    n_considered: int
    n_requested: int

    @property
    def complete(self) -> bool:
        return len(self.items) == self.n_requested

    @property
    def shot_ids(self) -> list[str]:
        return [s.id for s in self.shots]


def sample_items(
    items: Sequence[Item],
    n_items: int,
    seed: int,
    n_shots: int = 0,
    shot_items: Sequence[Item] | None = None,
    qualifies: Callable[[Item], str | None] | None = None,
    fixed_shots: Sequence[Item] | None = None,
    exclude: Sequence[str] = (),
) -> Draw:
    """Draw `n_items` qualifying items and `n_shots` few-shot examples, deterministically.

    One `numpy.random.default_rng(seed)` permutes `items` (stable across runs and
    platforms); the walk over that order keeps items for which `qualifies(item)` is None and
    counts the reasons it returns otherwise, until `n_items` are kept.

    Shots come from `shot_items` (a disjoint split, e.g. MMLU `dev`) when given, permuted by
    the same generator after `items`; otherwise they are the *last* `n_shots` items of the
    permutation, which the walk never reaches. Either way the evaluated items do not depend
    on `n_shots` (unless the list runs out), so 0- and k-shot results are paired, and the
    shots for k are the first k of those for k+1. Shots are not filtered by `qualifies`:
    they are background text, never masked. `fixed_shots` (Appendix E.6's examples) are the
    shots instead, their first `n_shots` in their order; an item that asks one of their
    questions is not evaluated. An item whose id is in `exclude` is walked past (counted as
    skipped), so that the kept items are the next ones of the same order.
    """
    if n_items < 0 or n_shots < 0:
        raise ValueError(f"n_items ({n_items}) and n_shots ({n_shots}) must be >= 0")
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(items))
    if fixed_shots is not None:
        shots = list(fixed_shots[:n_shots])
        candidates = order
    elif shot_items is None:
        if n_shots and n_shots >= len(items):
            raise DatasetError(
                f"{n_shots} few-shot examples requested from a list of {len(items)} items, "
                "which leaves nothing to evaluate; lower n_shots or give a few-shot split"
            )
        shots = [items[i] for i in order[::-1][:n_shots]]
        candidates = order[: len(items) - n_shots]
    else:
        if n_shots > len(shot_items):
            raise DatasetError(
                f"{n_shots} few-shot examples requested but the few-shot split has only "
                f"{len(shot_items)} items; lower n_shots"
            )
        shots = [shot_items[i] for i in rng.permutation(len(shot_items))[:n_shots]]
        candidates = order
    shot_ids = {s.id for s in shots}
    shot_questions = {s.fields().get("question") for s in fixed_shots or ()}
    excluded = set(exclude)

    kept: list[Item] = []
    skipped: Counter[str] = Counter()
    n_considered = 0
    for i in candidates:
        if len(kept) == n_items:
            break
        item = items[i]
        n_considered += 1
        if item.id in shot_ids or item.fields().get("question") in shot_questions:
            reason = SKIP_SHOT  # shot_items overlapping items, or a fixed shot's question
        elif item.id in excluded:
            reason = SKIP_EXCLUDED
        else:
            reason = qualifies(item) if qualifies else None
        if reason is None:
            kept.append(item)
        else:
            skipped[reason] += 1
    return Draw(
        items=kept,
        shots=shots,
        skipped=dict(skipped),
        n_considered=n_considered,
        n_requested=n_items,
    )
