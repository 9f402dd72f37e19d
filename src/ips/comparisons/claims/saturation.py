"""Which claims rest on a saturated IPS (docs/method.md#saturation).

An IPS at `ips.analysis.nulls.SATURATED` of its ceiling or above cannot tell a template
change from replacing the item, so a claim resting on it says so: its ``saturation`` is the
largest IPS / ceiling (band all) among the cells (model, dataset, condition group) it rests
on, and its note flags it when that reaches the threshold. A row rests on the models its
scope names (a model, a factor's pair), or on every trained model of its dataset where it
names none (a ranking, a correlation across models), in the groups its scope names (0shot,
1shot, …), else the main group.

A share that saturates has a ceiling of its own: the unstable share of a model's salient
interactions under an unchanged prediction (`UNSTABLE_CLAIM`) is read against the share of
unstable types between unrelated items (`unstable_ceilings`: the metrics file's
`ceiling_type_count`), and its ``saturation`` is the row's share over that.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace

import numpy as np

from ips.analysis.nulls import SATURATED, saturation
from ips.comparisons.claims.verdicts import Claim, join_notes
from ips.formats.metrics import Entry
from ips.prompts.templates import ZERO_SHOT


def cell_saturation(e: Entry, group: str = ZERO_SHOT) -> float:
    """IPS / ceiling of one metrics file's group (band all); NaN without a ceiling."""
    ds = e.ds
    if "ceiling_ips" not in ds or group not in ds["group"].values:
        return float("nan")
    return float(saturation(ds["ips"].sel(group=group, band="all"),
                            ds["ceiling_ips"].sel(group=group, band="all")))


UNSTABLE_CLAIM = "types_unchanged_unstable"
#: the types a salient interaction is unstable in: opposite sign, or a different effect
UNSTABLE_TYPES = ("opposite_sign", "same_sign_different_effect")


def unstable_ceilings(entries: Sequence[Entry]) -> dict[tuple[str, str], float]:
    """The share of unstable types among the ceiling's salient interactions (the 0-shot
    pairs' games against unrelated items'), by (model, dataset); files without
    `ceiling_type_count` give none."""
    out = {}
    for e in entries:
        ds = e.ds
        if "ceiling_type_count" not in ds or ZERO_SHOT not in ds["group"].values:
            continue
        c = ds["ceiling_type_count"].sel(group=ZERO_SHOT)
        total = float(c.sum())
        unstable = float(c.sel(type=list(UNSTABLE_TYPES)).sum())
        out[(e.model, e.dataset)] = unstable / total if total > 0 else float("nan")
    return out


def cells(entries: Sequence[Entry]) -> dict[tuple[str, str, str], float]:
    """IPS / ceiling of every (model, dataset, group) of the metrics files (band all)."""
    return {(e.model, e.dataset, str(g)): cell_saturation(e, str(g))
            for e in entries for g in e.ds["group"].values}


def flagged(rows: Sequence[Claim], ratios: Mapping[tuple[str, str, str], float],
            trained: Collection[str],
            unstable: Mapping[tuple[str, str], float] | None = None) -> list[Claim]:
    """`rows` with their ``saturation``, and a note where it reaches SATURATED (module
    docstring); ``ratios``: IPS / ceiling by (model, dataset, group) (`cells`); ``trained``:
    the models a row across models rests on; ``unstable``: the unstable share's ceiling by
    (model, dataset) (`unstable_ceilings`)."""
    groups = {g for _, _, g in ratios}
    out = []
    for r in rows:
        if r.claim == UNSTABLE_CLAIM and unstable:
            model, _, dataset = r.scope.partition(" / ")
            top = float(saturation(r.estimate, unstable.get((model, dataset), np.nan)))
            note = (f"saturated: the unstable share is {top:.2f} of what two unrelated items "
                    f"give ({unstable[(model, dataset)]:.2f}, ≥ {SATURATED:g}); it cannot tell "
                    "the template change from replacing the item" if top >= SATURATED else "")
            out.append(replace(r, saturation=top, note=join_notes(r.note, note)))
            continue
        named = {m for p in r.scope.split(" / ") for m in p.split(" vs ")}
        mine = {k: x for k, x in ratios.items() if k[0] in named and k[1] in named}
        if not mine:
            mine = {k: x for k, x in ratios.items() if k[0] in trained and k[1] in named}
        wanted = (named & groups) or {ZERO_SHOT}
        top = max((x for k, x in mine.items() if k[2] in wanted and np.isfinite(x)),
                  default=np.nan)
        note = (f"saturated: IPS is {top:.2f} of its ceiling (≥ {SATURATED:g}), as far as "
                "two unrelated items; it cannot tell the template change from replacing the "
                "item" if top >= SATURATED else "")
        out.append(replace(r, saturation=top, note=join_notes(r.note, note)))
    return out
