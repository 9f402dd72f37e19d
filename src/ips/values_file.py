"""The values file: what `ips score` writes and `ips fit` reads.

Layout (HDF5, written with `ips.files.write_dataset`):

- `v`: float64, dims (sample, condition, mask). `v[s, c, m]` is v(x_S) for sample s under
  template condition c, where bit i of m is set when variable i is kept. A sample with
  n < n_max variables uses the first 2**n entries of the mask axis; the rest are NaN.
- `n_vars`: int, dims (sample,): the number of variables of each sample. May be omitted when
  every sample has the same n, the mask axis then has length 2**n and holds no NaN.
- `masks` (sparse sampling, `ips.sparse`): int64, dims (sample, mask): the bitmask of each
  scored mask; a sample's design fills the first entries, −1 (and NaN in `v`) pad the rest.
  Without it the mask axis is the bitmask itself. Needs `n_vars`.
- `sample`, `condition`: optional 1-D labels, carried over to derived files.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import h5py
import numpy as np

from ips.errors import InputError
from ips.files import READ_ERRORS, reading, reason

DIMS = ("sample", "condition", "mask")

# h5netcdf marks a dimension without coordinate values with this NAME attribute
_PURE_DIMENSION = b"This is a netCDF dimension but not a netCDF variable"


@dataclass
class Values:
    """The content of a values file, validated."""

    v: np.ndarray  # (sample, condition, mask) float64
    n_vars: np.ndarray  # (sample,) int64
    coords: dict[str, np.ndarray] = field(default_factory=dict)
    masks: np.ndarray | None = None  # (sample, mask) int64 bitmasks of a sparse design

    def design(self, s: int) -> np.ndarray:
        """The bitmasks of sample s's scored masks, in the order of its entries of `v`."""
        if self.masks is None:
            return np.arange(1 << int(self.n_vars[s]), dtype=np.int64)
        return design_row(self.masks[s])


def design_row(masks: np.ndarray) -> np.ndarray:
    """The scored bitmasks of one sample's row of `masks` (−1 pads it), in the order of its
    entries of `v`."""
    return masks[masks >= 0]


def read_values(path: str | os.PathLike, n_max: int | None = None) -> Values:
    """Read and check a values file; raise `InputError` naming the file and dataset."""
    path = Path(path)
    try:
        f = h5py.File(path, "r")
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except READ_ERRORS as e:
        raise InputError(f"{path}: not a readable HDF5 file ({reason(e)})") from None
    with f:
        with reading(path, "dataset 'v'"):
            if "v" not in f or not isinstance(f["v"], h5py.Dataset):
                raise InputError(f"{path}: no dataset 'v'")
            v = f["v"]
            if v.ndim != 3:
                raise InputError(
                    f"{path}: dataset 'v' has rank {v.ndim} (shape {v.shape}), "
                    "expected 3 dims (sample, condition, mask)"
                )
            if 0 in v.shape:
                raise InputError(f"{path}: dataset 'v' is empty (shape {v.shape})")
            if not np.issubdtype(v.dtype, np.floating):
                raise InputError(f"{path}: dataset 'v' has dtype {v.dtype}, "
                                 "expected floating point")
            v = v[()].astype(np.float64, copy=False)
        with reading(path, "dataset 'n_vars'"):
            n_vars = f["n_vars"][()] if "n_vars" in f else None
        with reading(path, "dataset 'masks'"):
            masks = f["masks"][()] if "masks" in f else None
        coords = {}
        for name, size in (("sample", v.shape[0]), ("condition", v.shape[1])):
            with reading(path, f"dataset {name!r}"):
                if _is_label(f, name, size):
                    coords[name] = _decode(f[name][()])

    if masks is not None:
        return _sparse_values(path, v, n_vars, masks, coords, n_max)
    width = v.shape[2]
    if width & (width - 1):
        raise InputError(
            f"{path}: dataset 'v' has mask axis of length {width}, not a power of two"
        )
    width_n = width.bit_length() - 1

    if n_vars is None:
        n_vars = np.full(v.shape[0], width_n, dtype=np.int64)
        dataset = "v"  # n comes from the mask axis
    else:
        n_vars = np.asarray(n_vars)
        if n_vars.shape != (v.shape[0],) or not np.issubdtype(n_vars.dtype, np.integer):
            raise InputError(
                f"{path}: dataset 'n_vars' has shape {n_vars.shape} and dtype {n_vars.dtype}, "
                f"expected integers of shape ({v.shape[0]},) (one per sample of 'v')"
            )
        n_vars = n_vars.astype(np.int64)
        dataset = "n_vars"
        bad = np.flatnonzero((n_vars < 1) | (n_vars > width_n))
        if bad.size:
            s = bad[0]
            raise InputError(
                f"{path}: dataset 'n_vars' of sample {s} is {n_vars[s]}, "
                f"expected 1..{width_n} (the mask axis of 'v' has length {width})"
            )

    if n_max is not None and n_vars.size and n_vars.max() > n_max:
        s = int(np.argmax(n_vars))
        raise InputError(
            f"{path}: dataset '{dataset}': sample {s} has n = {n_vars[s]} variables, "
            f"beyond --n-max {n_max}"
        )

    # every sample's first 2**n entries must be finite (the rest is padding)
    used = np.arange(width) < (1 << n_vars)[:, None]  # (sample, mask)
    bad = ~np.isfinite(v) & used[:, None, :]
    if bad.any():
        s, c, m = (int(i[0]) for i in np.nonzero(bad))
        hint = "" if dataset == "n_vars" else " (NaN padding needs a dataset 'n_vars')"
        raise InputError(
            f"{path}: dataset 'v' has a non-finite value ({v[s, c, m]}) at sample {s}, "
            f"condition {c}, mask {m}, inside the sample's first 2**{n_vars[s]} entries{hint}"
        )
    return Values(v=v, n_vars=n_vars, coords=coords)


def _sparse_values(path: Path, v: np.ndarray, n_vars, masks, coords: dict,
                   n_max: int | None) -> Values:
    """`read_values` of a file with `masks` (a sparse design per sample)."""
    S, _, width = v.shape
    if n_vars is None:
        raise InputError(f"{path}: dataset 'masks' needs a dataset 'n_vars'")
    n_vars, masks = np.asarray(n_vars), np.asarray(masks)
    if n_vars.shape != (S,) or not np.issubdtype(n_vars.dtype, np.integer):
        raise InputError(f"{path}: dataset 'n_vars' has shape {n_vars.shape} and dtype "
                         f"{n_vars.dtype}, expected integers of shape ({S},)")
    if masks.shape != (S, width) or not np.issubdtype(masks.dtype, np.integer):
        raise InputError(f"{path}: dataset 'masks' has shape {masks.shape} and dtype "
                         f"{masks.dtype}, expected integers of shape ({S}, {width})")
    n_vars, masks = n_vars.astype(np.int64), masks.astype(np.int64)
    for s in range(S):
        n, m = int(n_vars[s]), masks[s]
        used = m >= 0
        count = int(used.sum())
        problem = None
        if not 1 <= n <= 62:
            problem = f"n_vars is {n}, expected 1..62"
        elif n_max is not None and n > n_max:
            problem = f"n = {n} variables, beyond --n-max {n_max}"
        elif not used[:count].all():
            problem = "its masks are not a prefix of the mask axis (-1 only at the end)"
        elif np.any(m[used] >= 1 << n) or len(np.unique(m[used])) != count:
            problem = f"its masks are not distinct bitmasks of 0..2**{n} - 1"
        elif not np.any(m[used] == 0):
            problem = "its design lacks the empty mask 0"
        elif not np.all(np.isfinite(v[s, :, :count])):
            problem = "'v' is not finite on its design"
        if problem:
            raise InputError(f"{path}: dataset 'masks': sample {s}: {problem}")
    return Values(v=v, n_vars=n_vars, coords=coords, masks=masks)


def _is_label(f: h5py.File, name: str, size: int) -> bool:
    """Whether `name` is a 1-D dataset of `size` labels (not a bare netCDF dimension)."""
    d = f.get(name)
    return (
        isinstance(d, h5py.Dataset)
        and d.shape == (size,)
        and not bytes(d.attrs.get("NAME", b"")).startswith(_PURE_DIMENSION)
    )


def _decode(a: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "OS":
        return np.array([x.decode() if isinstance(x, bytes) else x for x in a], dtype=object)
    return a

