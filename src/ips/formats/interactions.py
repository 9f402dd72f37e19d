"""The interactions file: what `ips fit` writes (`write_interactions`) and `ips metrics`
reads (`attach_interactions`).

Both kinds carry `n_vars` (sample), the values file's `sample` and `condition` coordinates,
and the attributes `n_max` (largest n accepted), `input_file` (the values file fitted),
`solver_requested`, `noise` and `ips_version`.

- Exhaustive (`exhaustive_dataset`): `and`, `or`, `gamma` with dims (sample, condition,
  mask), NaN beyond each sample's 2**n masks as in the values file; `objective`,
  `matching_error`, `duality_gap` with dims (sample, condition); `scored` (sample, condition),
  the values file's (`ips.formats.values`): an unscored row is not fitted and is NaN in all
  of them (absent from the file: every row scored); attributes `solver_used`,
  `optimum` (which point of Eq. 12's optimal face), and `sgd_learning_rate`, `sgd_steps`
  for the sgd solver.
- Sparse (`sparse_dataset`, attribute `sampling: sparse`): the entries of each game,
  `ENTRY_VARIABLES` with dims (sample, condition, entry), padded with kind -1; one value
  per game of `ROW_VARIABLES` (dims (sample, condition)); attributes `unreliable_heldout`,
  `seed`, and `budget` for a design taken from an exhaustively scored file.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import xarray as xr
from numpy.typing import ArrayLike

from ips.errors import InputError
from ips.formats.hdf5 import decode_labels, read_dataset, require, write_dataset
from ips.formats.values import DIMS, design_row
from ips.interactions.sparse import SparseInteractions


def _attach_sparse_interactions(shard, ds, interactions_path: Path, mismatch: str) -> None:
    """`attach_interactions` of a sparse fit: its games, checked against the values on the design
    (`fit_error` as stored)."""
    if shard.masks is None:
        raise InputError(f"{shard.path}: a values file of sparse sampling needs 'masks'")
    S, C, _ = shard.v.shape
    arrays = {k: np.asarray(ds[k].values) for k in ENTRY_VARIABLES + ROW_VARIABLES}
    games = [[from_arrays(arrays, shard.n_vars, s, c) for c in range(C)]
             for s in range(S)]
    err = np.zeros((S, C))
    for s in range(S):
        design = design_row(shard.masks[s])
        for c, g in enumerate(games[s]):
            v = shard.v[s, c, :len(design)]
            err[s, c] = np.max(np.abs(g.predict(design) - v))
            nrmse, stored = g.relative_error(design, v), g.fit_error
            if not abs(nrmse - stored) <= 1e-6 + 1e-6 * stored:
                raise InputError(f"{mismatch}: its interactions do not reproduce v on the "
                                 f"design of sample {shard.samples[s]!s}, condition "
                                 f"{shard.conditions['condition'][c]!s} (relative error "
                                 f"{nrmse:.3g}, the fit's {stored:.3g})")
    shard.interactions_path, shard.games, shard.matching_error = interactions_path, games, err


def attach_interactions(shard, interactions_path: str | os.PathLike) -> None:
    """Read the interactions file of `shard` and check that it was fitted to exactly these
    values."""
    from ips.interactions import reconstruct

    interactions_path = Path(interactions_path)
    mismatch = f"{interactions_path}: does not match values file {shard.path}"
    ds = read_dataset(interactions_path, "interactions", ("n_vars",), "ips fit")
    sparse_fit = ds.attrs.get("sampling") == "sparse"
    if sparse_fit != (shard.attrs["sampling"] == "sparse"):
        raise InputError(f"{mismatch}: one is of sparse sampling, the other not")
    for name, ours in (("sample", shard.samples), ("condition", shard.conditions["condition"])):
        if name in ds.coords and not np.array_equal(decode_labels(ds[name].values), ours):
            raise InputError(f"{mismatch}: its {name} labels differ")
    if not np.array_equal(np.asarray(ds["n_vars"].values), shard.n_vars):
        raise InputError(f"{mismatch}: 'n_vars' differs")
    scored = (np.asarray(ds["scored"].values, bool) if "scored" in ds.variables
              else np.ones(shard.v.shape[:2], bool))
    if not np.array_equal(scored, shard.scored):
        raise InputError(f"{mismatch}: 'scored' (the rows scored) differs")
    if sparse_fit:
        return _attach_sparse_interactions(shard, ds, interactions_path, mismatch)
    require(ds, interactions_path, ("and", "or", "matching_error"), "ips fit")
    and_ = np.asarray(ds["and"].values, dtype=np.float64)
    or_ = np.asarray(ds["or"].values, dtype=np.float64)
    if and_.shape != shard.v.shape or or_.shape != shard.v.shape:
        raise InputError(f"{mismatch}: 'and' has shape {and_.shape}, the values 'v' "
                         f"{shard.v.shape}")
    err = np.asarray(ds["matching_error"].values, dtype=np.float64)
    # universal matching against *these* values: a fit of other values (another model,
    # another shard with the same labels) reconstructs something else
    for n in np.unique(shard.n_vars).tolist():
        idx = np.flatnonzero(shard.n_vars == n)
        size = 1 << n
        v = shard.v[idx, :, :size]
        rec = reconstruct(and_[idx, :, :size], or_[idx, :, :size])
        gap = np.max(np.abs(rec - v), axis=-1) - err[idx]
        tol = 1e-6 * max(1.0, float(np.nanmax(np.abs(v))))
        bad = ~(gap <= tol) & shard.scored[idx]  # an unscored row has neither v nor a fit
        if bad.any():
            s, c = (int(i[0]) for i in np.nonzero(bad))
            raise InputError(
                f"{mismatch}: its interactions do not reconstruct v of sample "
                f"{shard.samples[idx[s]]!s}, condition {shard.conditions['condition'][c]!s} "
                f"(off by {gap[s, c] + err[idx][s, c]:.3g}, fit matching error "
                f"{err[idx][s, c]:.3g})"
            )
    shard.interactions_path = interactions_path
    shard.and_, shard.or_, shard.matching_error = and_, or_, err
    shard.fit_attrs = dict(ds.attrs)


#: the per-entry arrays of a sparse interactions file, dims (sample, condition, entry)
ENTRY_VARIABLES = ("entry_kind", "entry_set", "entry_value")


#: the per-game arrays, dims (sample, condition); `order` −1 stands for None (every S)
ROW_VARIABLES = ("v_empty", "objective", "heldout_error", "fit_error", "n_fit", "n_heldout",
                 "order", "noise", "unobserved", "aliased", "complete", "reliable")


def to_arrays(games: list[list[SparseInteractions]]) -> dict[str, np.ndarray]:
    """The arrays of a sparse interactions file from games[sample][condition]: entries padded to the
    largest count (kind −1, set −1, value NaN), one value per game for `ROW_VARIABLES`."""
    S, C = len(games), len(games[0])
    width = max(1, max(len(g) for row in games for g in row))
    out = {"entry_kind": np.full((S, C, width), -1, np.int8),
           "entry_set": np.full((S, C, width), -1, np.int64),
           "entry_value": np.full((S, C, width), np.nan)}
    out |= {k: np.zeros((S, C)) for k in ROW_VARIABLES}
    for s, row in enumerate(games):
        for c, g in enumerate(row):
            k = len(g)
            out["entry_kind"][s, c, :k] = g.kinds
            out["entry_set"][s, c, :k] = g.masks
            out["entry_value"][s, c, :k] = g.values
            for name in ROW_VARIABLES:
                value = getattr(g, name)
                out[name][s, c] = -1 if value is None else value
    return out


def from_arrays(arrays: dict, n_vars: ArrayLike, s: int, c: int) -> SparseInteractions:
    """Game (s, c) of the arrays of a sparse interactions file (the inverse of
    :func:`to_arrays`)."""
    kind = np.asarray(arrays["entry_kind"][s, c])
    keep = kind >= 0
    row = {k: float(np.asarray(arrays[k][s, c])) for k in ROW_VARIABLES}
    order = int(row["order"])
    return SparseInteractions(
        int(np.asarray(n_vars)[s]), kind[keep].astype(np.int8),
        np.asarray(arrays["entry_set"][s, c])[keep].astype(np.int64),
        np.asarray(arrays["entry_value"][s, c])[keep].astype(np.float64),
        row["v_empty"], row["objective"], row["heldout_error"], row["fit_error"],
        int(row["n_fit"]), int(row["n_heldout"]), None if order < 0 else order, row["noise"],
        int(row["unobserved"]), int(row["aliased"]),
        complete=bool(row["complete"]))


def exhaustive_dataset(per_mask: dict[str, np.ndarray], per_row: dict[str, np.ndarray],
                       n_vars: np.ndarray, scored: np.ndarray, coords: dict,
                       attrs: dict) -> xr.Dataset:
    """An exhaustive fit: `per_mask` arrays (sample, condition, mask), `per_row` arrays
    (sample, condition), the rows fitted (`scored`), the values file's `coords`."""
    data = {k: (DIMS, a) for k, a in per_mask.items()}
    data |= {k: (DIMS[:2], a) for k, a in per_row.items()}
    data["scored"] = (DIMS[:2], np.asarray(scored, bool))
    data["n_vars"] = (DIMS[:1], n_vars)
    return xr.Dataset(data, coords={k: ((k,), a) for k, a in coords.items()}, attrs=attrs)


def sparse_dataset(games: list[list[SparseInteractions]], n_vars: np.ndarray, coords: dict,
                   attrs: dict) -> xr.Dataset:
    """A sparse fit of games[sample][condition] (`to_arrays`), the values file's `coords`."""
    arrays = to_arrays(games)
    entry_dims = DIMS[:2] + ("entry",)
    data = {k: (entry_dims if k in ENTRY_VARIABLES else DIMS[:2], a) for k, a in arrays.items()}
    data["n_vars"] = (DIMS[:1], n_vars)
    return xr.Dataset(data, coords={k: ((k,), a) for k, a in coords.items()}, attrs=attrs)


def write_interactions(ds: xr.Dataset, path: str | os.PathLike, *, n_max: int,
                       input_file: str | os.PathLike) -> None:
    """Write a fit as the interactions file `path`, with the n_max it accepted and the values
    file it fitted."""
    ds.attrs["n_max"] = n_max
    ds.attrs["input_file"] = str(input_file)
    write_dataset(ds, path)
