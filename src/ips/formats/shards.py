"""The shards of one (model, dataset) read and merged: what `ips metrics` computes on.

Input: the values files of one model on one dataset (`ips score`, one per shard) and, in the
same order, their interactions files (`ips fit`). Each shard is read with its labels
(`read_shard`), its interactions attached and checked against them (`attach_interactions`:
same samples, conditions and mask axis; a sparse fit's entries), and the shards are checked against
each other (same model, dataset, conditions, groups, mask axis; a sample in two shards is an
error) and concatenated along `sample` (`merge_shards`), so sharding cannot change a number.
`load` does all three for the main run, `load_variant` for the runs of a variant (a precision or
baseline null).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ips.errors import InputError
from ips.formats.hdf5 import decode_labels, read_dataset
from ips.formats.interactions import attach_interactions
from ips.formats.values import check_scored
from ips.nulls import variant

_CONDITION_COORDS = ("template", "shots", "perturbation")
# the attributes every shard of one (model, dataset) must agree on
_SAME_ATTRS = ("model", "model_attributes", "model_source", "model_weights", "model_control",
               "dataset", "kind", "target", "groups", "sampling", "budget")


@dataclass
class Shard:
    """The parts of one values file (and its interactions file) that the metrics need."""

    path: Path
    interactions_path: Path | None
    attrs: dict
    samples: np.ndarray
    conditions: dict[str, np.ndarray]  # condition, template, shots, perturbation
    n_vars: np.ndarray
    v: np.ndarray
    pred: np.ndarray
    gold: np.ndarray
    greedy: np.ndarray | None
    hidden: np.ndarray | None
    words: np.ndarray | None = None  # (sample, var) variable strings, "" beyond n
    greedy_text: np.ndarray | None = None  # (sample, condition) decoded greedy token
    masks: np.ndarray | None = None  # sparse sampling: (sample, mask) bitmasks of `v`, −1 pads
    scored: np.ndarray | None = None  # (sample, condition) bool, the rows scored; None: all
    and_: np.ndarray | None = None
    or_: np.ndarray | None = None
    games: list | None = None  # sparse fits: games[sample][condition] (ips.interactions.sparse)
    matching_error: np.ndarray | None = None
    fit_attrs: dict = field(default_factory=dict)  # how the fit was made (solver, settings)

    def __post_init__(self):
        if self.scored is None:
            self.scored = np.ones(self.v.shape[:2], dtype=bool)


@dataclass
class Merged:
    """All shards of one (model, dataset), concatenated along sample. Exhaustive files give
    `and_`, `or_` on the 2**n_max mask axis; sparse ones `games` and the design `masks`."""

    attrs: dict
    conditions: dict[str, np.ndarray]
    groups: dict[str, list[str]]
    n_vars: np.ndarray
    and_: np.ndarray | None
    or_: np.ndarray | None
    games: list | None
    masks: np.ndarray | None
    matching_error: np.ndarray
    pred: np.ndarray
    gold: np.ndarray
    greedy: np.ndarray | None
    hidden: np.ndarray | None
    samples: np.ndarray  # sample ids
    v: np.ndarray  # (sample, condition, mask) the scored values
    words: np.ndarray | None = None
    greedy_text: np.ndarray | None = None
    # (sample, condition) bool: the rows scored (NaN in `v` and the fit elsewhere); None: all
    scored: np.ndarray | None = None
    values_files: list[str] = field(default_factory=list)
    interactions_files: list[str] = field(default_factory=list)
    fit_attrs: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.scored is None:
            self.scored = np.ones(self.v.shape[:2], dtype=bool)

    @property
    def n_games(self) -> np.ndarray:
        """(sample, condition): each game's n, 0 for a row not scored (normalised, an empty
        Ω: missing in every pair and every null)."""
        return np.where(self.scored, self.n_vars[:, None], 0)

    def group_conditions(self, name: str) -> np.ndarray:
        """The condition indices of group `name`, in the group's order."""
        index = {str(c): i for i, c in enumerate(self.conditions["condition"])}
        return np.array([index[c] for c in self.groups[name]], dtype=np.int64)

    def game_values(self, name: str) -> np.ndarray:
        """(sample, condition) attribute `name` of every sparse game (`heldout_error`, …)."""
        return np.array([[getattr(g, name) for g in row] for row in self.games])


# ----------------------------------------------------------------------------------- reading


def read_shard(path: str | os.PathLike) -> Shard:
    """Read the parts of a values file that `ips metrics` uses; `InputError` names the file."""
    path = Path(path)
    ds = read_dataset(path, "values", ("v", "n_vars", "pred", "gold"), "ips score")
    if ds["v"].dims != ("sample", "condition", "mask"):
        raise InputError(f"{path}: variable 'v' has dims {ds['v'].dims}, "
                         "expected (sample, condition, mask)")
    for name in ("model", "dataset", "groups"):
        if name not in ds.attrs:
            raise InputError(f"{path}: attribute {name!r} is missing (is this a values file of "
                             "`ips score`?)")
    S, C, _ = ds["v"].shape
    attrs = dict(ds.attrs)
    attrs.setdefault("kind", "mcq")
    attrs.setdefault("target", "")
    attrs.setdefault("model_attributes", "{}")
    attrs.setdefault("sampling", "exhaustive")  # files written before sparse sampling
    conditions = {
        "condition": decode_labels(ds["condition"].values) if "condition" in ds.coords
        else np.array([f"c{i}" for i in range(C)], dtype=object),
    }
    for name in _CONDITION_COORDS:
        if name in ds.variables:
            conditions[name] = (np.asarray(ds[name].values) if name == "shots"
                                else decode_labels(ds[name].values))
    conditions.setdefault("template", conditions["condition"].copy())
    conditions.setdefault("shots", np.zeros(C, dtype=np.int64))
    conditions.setdefault("perturbation", np.array([""] * C, dtype=object))
    samples = (decode_labels(ds["sample"].values) if "sample" in ds.coords
               else np.array([f"{path.name}:{i}" for i in range(S)], dtype=object))
    pred = np.asarray(ds["pred"].values)
    if pred.shape != (S, C):
        raise InputError(f"{path}: variable 'pred' has shape {pred.shape}, expected {(S, C)}")
    greedy = np.asarray(ds["greedy_token"].values) if "greedy_token" in ds.variables else None
    hidden = (np.asarray(ds["hidden"].values, dtype=np.float64)
              if "hidden" in ds.variables and ds["hidden"].ndim == 3 else None)
    words = (_labels_2d(ds["variable"].values)
             if "variable" in ds.variables and ds["variable"].ndim == 2 else None)
    greedy_text = (_labels_2d(ds["greedy_text"].values)
                   if "greedy_text" in ds.variables and ds["greedy_text"].shape == (S, C)
                   else None)
    n_vars = np.asarray(ds["n_vars"].values).astype(np.int64)
    scored = check_scored(path, ds["scored"].values if "scored" in ds.variables else None,
                          (S, C))
    return Shard(
        path=path, interactions_path=None, attrs=attrs, samples=samples, conditions=conditions,
        n_vars=n_vars, v=np.asarray(ds["v"].values, dtype=np.float64), pred=pred,
        gold=np.asarray(ds["gold"].values), greedy=greedy, hidden=hidden,
        words=words, greedy_text=greedy_text,
        masks=np.asarray(ds["masks"].values, np.int64) if "masks" in ds.variables else None,
        scored=scored,
    )


def _labels_2d(a) -> np.ndarray:
    a = np.asarray(a)
    return decode_labels(a.reshape(-1)).reshape(a.shape)


def merge_shards(shards: Sequence[Shard]) -> Merged:
    """Concatenate the shards along sample after checking that they belong together."""
    if not shards:
        raise InputError("no values files given")
    first = shards[0]
    for sh in shards[1:]:
        for name in _SAME_ATTRS:
            if sh.attrs.get(name) != first.attrs.get(name):
                raise InputError(
                    f"{sh.path}: attribute {name!r} is {sh.attrs.get(name)!r}, but "
                    f"{first.path} has {first.attrs.get(name)!r}; all values files must be "
                    "shards of one model and one dataset"
                )
        for name, ours in first.conditions.items():
            if not np.array_equal(sh.conditions[name], ours):
                raise InputError(
                    f"{sh.path}: condition coordinate {name!r} is {list(sh.conditions[name])}, "
                    f"but {first.path} has {list(ours)}"
                )
        if sh.v.shape[2] != first.v.shape[2]:
            raise InputError(f"{sh.path}: mask axis of length {sh.v.shape[2]}, but {first.path} "
                             f"has {first.v.shape[2]}")
        for name in ("greedy", "hidden", "words", "greedy_text"):
            a, b = getattr(sh, name), getattr(first, name)
            if (a is None) != (b is None) or (a is not None and a.shape[2:] != b.shape[2:]):
                raise InputError(f"{sh.path}: variable {name!r} is missing or has another "
                                 f"shape than in {first.path}")
    seen: dict[str, Path] = {}
    for sh in shards:
        for s in sh.samples:
            if s in seen:
                raise InputError(f"{sh.path}: sample {s!s} is also in {seen[s]} (a shard given "
                                 "twice?)")
            seen[s] = sh.path
        if sh.matching_error is None:
            raise InputError(f"{sh.path}: no interactions file attached")

    try:
        groups = json.loads(first.attrs["groups"])
    except (TypeError, json.JSONDecodeError) as e:
        raise InputError(f"{first.path}: attribute 'groups' is not JSON ({e})") from None
    if not isinstance(groups, dict) or not all(isinstance(v, list) for v in groups.values()):
        raise InputError(f"{first.path}: attribute 'groups' must map group names to lists "
                         "of condition names")
    known = set(first.conditions["condition"].tolist())
    for g, names in groups.items():
        missing = [c for c in names if c not in known]
        if missing:
            raise InputError(f"{first.path}: group {g!r} names condition(s) {missing} that "
                             f"are not in the file (conditions: {sorted(known)})")

    cat = lambda name: np.concatenate([getattr(sh, name) for sh in shards])  # noqa: E731
    sparse_fit = first.games is not None
    return Merged(
        attrs=first.attrs, conditions=first.conditions, groups=groups,
        n_vars=cat("n_vars"), and_=None if sparse_fit else cat("and_"),
        or_=None if sparse_fit else cat("or_"),
        games=[row for sh in shards for row in sh.games] if sparse_fit else None,
        masks=cat("masks") if sparse_fit else None,
        matching_error=cat("matching_error"), pred=cat("pred"), gold=cat("gold"),
        greedy=None if first.greedy is None else cat("greedy"),
        hidden=None if first.hidden is None else cat("hidden"),
        samples=cat("samples"), v=cat("v"), scored=cat("scored"),
        words=None if first.words is None else cat("words"),
        greedy_text=None if first.greedy_text is None else cat("greedy_text"),
        values_files=[str(sh.path) for sh in shards],
        interactions_files=[str(sh.interactions_path) for sh in shards],
        fit_attrs=first.fit_attrs,
    )


def _read_shards(values: Sequence[str | os.PathLike], interactions: Sequence[str | os.PathLike],
                 what: str = "") -> list[Shard]:
    """Every values file read with its interactions file attached, `interactions[i]` that of
    `values[i]`."""
    if len(values) != len(interactions):
        raise InputError(f"{len(values)} {what}values files but {len(interactions)} "
                         f"{what}interactions files; give one interactions file per values "
                         "file, in the same order")
    shards = []
    for vpath, ipath in zip(values, interactions):
        sh = read_shard(vpath)
        attach_interactions(sh, ipath)
        shards.append(sh)
    return shards


def load(values: Sequence[str | os.PathLike], interactions: Sequence[str | os.PathLike]) -> Merged:
    """Read, check and merge the shards; `interactions[i]` is the interactions file of
    `values[i]`."""
    return merge_shards(_read_shards(values, interactions))


def load_variant(kind: str, values: Sequence[str | os.PathLike],
                  interactions: Sequence[str | os.PathLike]) -> list[Merged]:
    """The runs of a variant (`ips.nulls.variant(kind)`: `precision`, scored with
    `ips score --dtype`, `baseline`, with `ips score --baseline`), one Merged per setting (the values
    files' attribute `by` of its row), in the order first given."""
    by = variant(kind).by
    by_setting: dict[str, list[Shard]] = {}
    for sh in _read_shards(values, interactions, f"{kind} "):
        by_setting.setdefault(str(sh.attrs.get(by, "")), []).append(sh)
    return [merge_shards(shards) for shards in by_setting.values()]
