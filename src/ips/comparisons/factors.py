"""The four factors (`FACTORS`), why one can be absent, and which models each pairs."""

from __future__ import annotations

from collections import defaultdict
from itertools import product

from ips.config import UNKNOWN
from ips.formats.metrics import Entry

FACTORS = ("instruct_vs_base", "scale", "dense_vs_moe", "few_shot")
"""The four factor comparisons (paper Section 4.2), in this order."""


ABSENT = {
    "instruct_vs_base": "no base/instruct pair with equal family, series and params",
    "scale": "no two models of the same series, type and architecture with different params",
    "dense_vs_moe": "no dense/moe pair of the same family and type",
    "few_shot": "no k-shot group whose template pairs are also in the 0-shot group",
}


def entry_groups(e: Entry) -> list[str]:
    return [str(g) for g in e.ds["group"].values]


def unknown(e: Entry, *keys: str) -> bool:
    """Whether any of the entry's attributes `keys` is unknown (`ips.config.UNKNOWN`: the
    entry left it out); such a model pairs with no other on them."""
    return any(e.attrs.get(k) in (UNKNOWN, None) for k in keys)


def instruct_pairs(entries: list[Entry]):
    for a, b in product(entries, entries):
        x, y = a.attrs, b.attrs
        if (x["type"] == "instruct" and y["type"] == "base" and x["family"] == y["family"]
                and x["series"] == y["series"] and x["params"] == y["params"]
                and not unknown(a, "family", "series")):
            yield a, b


def scale_pairs(entries: list[Entry]):
    by_key = defaultdict(list)
    for e in entries:
        if not unknown(e, "series", "type"):
            by_key[e.attrs["series"], e.attrs["type"], e.attrs["architecture"]].append(e)
    for members in by_key.values():
        sizes = sorted({e.attrs["params"] for e in members})
        for small, large in zip(sizes, sizes[1:]):
            for a in (e for e in members if e.attrs["params"] == large):
                for b in (e for e in members if e.attrs["params"] == small):
                    yield a, b


def moe_pairs(entries: list[Entry]):
    for a, b in product(entries, entries):
        x, y = a.attrs, b.attrs
        if (x["architecture"] == "dense" and y["architecture"] == "moe"
                and x["family"] == y["family"] and x["type"] == y["type"]
                and not unknown(a, "family", "type")):
            yield a, b
