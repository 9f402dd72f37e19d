"""Which claims rest on a saturated IPS (docs/method.md#saturation).

An IPS at `ips.analysis.nulls.SATURATED` of its ceiling or above cannot tell a template
change from replacing the item, so a claim resting on it says so: its ``saturation`` is the
largest IPS / ceiling (band all) among the cells (model, dataset, condition group) it rests
on, and its note flags it when that reaches the threshold. A row rests on the models its
scope names (a model, a factor's pair), or on every trained model of its dataset where it
names none (a ranking, a correlation across models), in the groups its scope names (0shot,
1shot, …), else the main group.
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


def cells(entries: Sequence[Entry]) -> dict[tuple[str, str, str], float]:
    """IPS / ceiling of every (model, dataset, group) of the metrics files (band all)."""
    return {(e.model, e.dataset, str(g)): cell_saturation(e, str(g))
            for e in entries for g in e.ds["group"].values}


def flagged(rows: Sequence[Claim], ratios: Mapping[tuple[str, str, str], float],
            trained: Collection[str]) -> list[Claim]:
    """`rows` with their ``saturation``, and a note where it reaches SATURATED (module
    docstring); ``ratios``: IPS / ceiling by (model, dataset, group) (`cells`); ``trained``:
    the models a row across models rests on."""
    groups = {g for _, _, g in ratios}
    out = []
    for r in rows:
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
