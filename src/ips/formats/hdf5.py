"""Checksummed HDF5: datasets written atomically with Fletcher-32 (`write_dataset`),
guarded reads (`read_dataset`, `reading`, `require`), labels."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ips.errors import InputError

if TYPE_CHECKING:
    import xarray as xr
from ips.errors import reason
from ips.outputs import write_bytes

# what h5py / HDF5 / xarray raise on a damaged file (measured by flipping bytes): OSError
# (data, including a failed checksum), KeyError (object headers), RuntimeError (dimension
# scales), ValueError (decoding)
READ_ERRORS = (OSError, KeyError, RuntimeError, ValueError)


@contextlib.contextmanager
def reading(path, what: str):
    """Report a failure of reading `what` from `path` as an `InputError` naming both."""
    try:
        yield
    except InputError:
        raise
    except READ_ERRORS as e:
        raise InputError(f"{path}: {what} cannot be read ({reason(e)}); the file is damaged "
                         "or truncated, write it again") from None


def labels(xs) -> np.ndarray:
    """Strings for a dataset's coordinate or variable: an object array of `str`, which HDF5
    stores as variable-length UTF-8."""
    return np.array([str(x) for x in xs], dtype=object)


def write_dataset(ds: xr.Dataset, path: str | os.PathLike) -> None:
    """Write `ds` atomically as HDF5 readable with `xr.open_dataset(path, engine="h5netcdf")`.

    The file image is built in memory: HDF5 writing onto a full disk fails in its close and
    then crashes the interpreter (segmentation fault, h5py 3.16 / HDF5 2.0), whereas plain
    file I/O fails cleanly. Numeric arrays are chunked with the Fletcher-32 checksum.
    """
    write_bytes(path, _checksummed(ds).to_netcdf(engine="h5netcdf"))


def _checksummed(ds: xr.Dataset) -> xr.Dataset:
    """A shallow copy of `ds` whose numeric arrays are written with Fletcher-32 (chunked)."""
    ds = ds.copy(deep=False)
    for var in ds.variables.values():
        if var.dtype.kind in "biufc" and var.ndim and var.size:
            # a layout read from another file does not carry over; h5netcdf chooses chunks
            enc = {k: x for k, x in var.encoding.items() if k not in ("contiguous", "chunksizes")}
            var.encoding = enc | {"fletcher32": True}
    return ds


def _xarray():
    """xarray with the h5netcdf engine, imported on first read: it takes most of a second,
    and the commands that write only plain files (samples, the model cache) and every
    Snakemake start, which imports this module, need none of it."""
    import h5netcdf
    import xarray

    # h5netcdf 1.8 leaves `_writable` unset when opening a damaged file fails, and its
    # __del__ then prints an AttributeError traceback after our one-line error; a class
    # default keeps that quiet (the failed file is closed as read-only, which it is)
    if not hasattr(h5netcdf.File, "_writable"):
        h5netcdf.File._writable = False
    return xarray


def read_dataset(path: str | os.PathLike, what: str, variables: tuple[str, ...] = (),
                 command: str = "") -> xr.Dataset:
    """Load an HDF5/netCDF file of this package into memory; `InputError` names the file.

    `what` names the kind of file in messages ("metrics", "fit" ...); every name of
    `variables` must be present (else the error asks whether this is a file of `command`).
    """
    if not Path(path).is_file():
        raise InputError(f"{path}: no such {what} file")
    try:
        ds = _xarray().open_dataset(path, engine="h5netcdf")
    except READ_ERRORS as e:
        raise InputError(f"{path}: not a readable {what} file ({reason(e)})") from None
    with ds:
        # variable by variable, so that a damaged one is named
        for name, var in ds.variables.items():
            with reading(path, f"variable {name!r}"):
                var.load()
    require(ds, path, variables, command)
    return ds


def require(ds: xr.Dataset, path, variables: tuple[str, ...], command: str = "") -> None:
    """`InputError` naming the first of `variables` that `ds` (read from `path`) lacks."""
    for name in variables:
        if name not in ds.variables:
            raise InputError(f"{path}: no variable {name!r} (is this a file of `{command}`?)")


def decode_labels(a) -> np.ndarray:
    return np.array([x.decode() if isinstance(x, bytes) else str(x) for x in np.asarray(a)],
                    dtype=object)
