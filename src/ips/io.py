"""HDF5 input and output shared by the command-line tools.

Layout of a values file (what `ips score` writes and `ips fit` reads):

- `v`: float64, dims (sample, condition, mask). `v[s, c, m]` is v(x_S) for sample s under
  template condition c, where bit i of m is set when variable i is kept. A sample with
  n < n_max variables uses the first 2**n entries of the mask axis; the rest are NaN.
- `n_vars`: int, dims (sample,): the number of variables of each sample. May be omitted when
  every sample has the same n, the mask axis then has length 2**n and holds no NaN.
- `sample`, `condition`: optional 1-D labels, carried over to derived files.

Files are written atomically: to a temporary file in the target's folder, then renamed.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import h5py
import numpy as np
import xarray as xr

DIMS = ("sample", "condition", "mask")

# h5netcdf marks a dimension without coordinate values with this NAME attribute
_PURE_DIMENSION = b"This is a netCDF dimension but not a netCDF variable"


class InputError(ValueError):
    """A file that does not have the expected content (the CLI exits with code 2)."""


@dataclass
class Values:
    """The content of a values file, validated."""

    v: np.ndarray  # (sample, condition, mask) float64
    n_vars: np.ndarray  # (sample,) int64
    coords: dict[str, np.ndarray] = field(default_factory=dict)


def read_values(path: str | os.PathLike, n_max: int | None = None) -> Values:
    """Read and check a values file; raise `InputError` naming the file and dataset."""
    path = Path(path)
    try:
        f = h5py.File(path, "r")
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except OSError as e:
        raise InputError(f"{path}: not a readable HDF5 file ({e})") from None
    with f:
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
            raise InputError(f"{path}: dataset 'v' has dtype {v.dtype}, expected floating point")
        v = v[()].astype(np.float64, copy=False)
        n_vars = f["n_vars"][()] if "n_vars" in f else None
        coords = {
            name: _decode(f[name][()])
            for name, size in (("sample", v.shape[0]), ("condition", v.shape[1]))
            if _is_label(f, name, size)
        }

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


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike):
    """Yield a temporary path next to `path`; on success rename it onto `path`.

    Readers never see a half-written file, and a failure leaves no file behind::

        with atomic_path("out.h5") as tmp:
            write_something(tmp)
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # a fresh name, created by the writer itself so that it gets the usual permissions
    tmp = path.parent / f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_dataset(ds: xr.Dataset, path: str | os.PathLike) -> None:
    """Write `ds` atomically as HDF5 readable with `xr.open_dataset(path, engine="h5netcdf")`."""
    with atomic_path(path) as tmp:
        ds.to_netcdf(tmp, engine="h5netcdf")


def read_dataset(path: str | os.PathLike, what: str, variables: tuple[str, ...] = (),
                 command: str = "") -> xr.Dataset:
    """Load an HDF5/netCDF file of this package into memory; `InputError` names the file.

    `what` names the kind of file in messages ("metrics", "fit" ...); every name of
    `variables` must be present (else the error asks whether this is a file of `command`).
    """
    if not Path(path).is_file():
        raise InputError(f"{path}: no such {what} file")
    try:
        with xr.open_dataset(path, engine="h5netcdf") as ds:
            ds = ds.load()
    except (OSError, ValueError) as e:
        raise InputError(f"{path}: not a readable {what} file ({e})") from None
    for name in variables:
        if name not in ds.variables:
            raise InputError(f"{path}: no variable {name!r} (is this a file of `{command}`?)")
    return ds
