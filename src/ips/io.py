"""HDF5 input and output shared by the command-line tools.

Layout of a values file (what `ips score` writes and `ips fit` reads):

- `v`: float64, dims (sample, condition, mask). `v[s, c, m]` is v(x_S) for sample s under
  template condition c, where bit i of m is set when variable i is kept. A sample with
  n < n_max variables uses the first 2**n entries of the mask axis; the rest are NaN.
- `n_vars`: int, dims (sample,): the number of variables of each sample. May be omitted when
  every sample has the same n, the mask axis then has length 2**n and holds no NaN.
- `masks` (sparse sampling, `ips.sparse`): int64, dims (sample, mask): the bitmask of each
  scored mask; a sample's design fills the first entries, −1 (and NaN in `v`) pad the rest.
  Without it the mask axis is the bitmask itself. Needs `n_vars`.
- `sample`, `condition`: optional 1-D labels, carried over to derived files.

Files are written atomically: to a temporary file in the target's folder, then renamed.
The HDF5 image is built in memory and written with plain file I/O, so a full disk is a clean
`OutputError` (HDF5 itself crashes on ENOSPC), and numeric arrays are stored chunked with the
Fletcher-32 checksum, so a damaged file is a read error rather than different numbers.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import h5netcdf
import h5py
import numpy as np
import xarray as xr

# h5netcdf 1.8 leaves `_writable` unset when opening a damaged file fails, and its __del__
# then prints an AttributeError traceback after our one-line error; a class default keeps
# that quiet (the failed file is closed as read-only, which it is)
if not hasattr(h5netcdf.File, "_writable"):
    h5netcdf.File._writable = False

log = logging.getLogger(__name__)

DIMS = ("sample", "condition", "mask")

# what h5py / HDF5 / xarray raise on a damaged file (measured by flipping bytes): OSError
# (data, including a failed checksum), KeyError (object headers), RuntimeError (dimension
# scales), ValueError (decoding)
_READ_ERRORS = (OSError, KeyError, RuntimeError, ValueError)

# h5netcdf marks a dimension without coordinate values with this NAME attribute
_PURE_DIMENSION = b"This is a netCDF dimension but not a netCDF variable"


class InputError(ValueError):
    """A file that does not have the expected content (the CLI exits with code 2)."""


class OutputError(InputError):
    """A destination that cannot be written (the CLI exits with code 2)."""


def _reason(e: BaseException) -> str:
    """The cause of `e` in one line (HDF5 messages span lines; OSError has strerror)."""
    if isinstance(e, OSError) and e.strerror:
        text = e.strerror
        text = text[:1].lower() + text[1:]
    else:
        text = str(e.args[0]) if e.args else type(e).__name__
    return " ".join(text.split())


@contextlib.contextmanager
def _reading(path, what: str):
    """Report a failure of reading `what` from `path` as an `InputError` naming both."""
    try:
        yield
    except InputError:
        raise
    except _READ_ERRORS as e:
        raise InputError(f"{path}: {what} cannot be read ({_reason(e)}); the file is damaged "
                         "or truncated, write it again") from None


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
    except _READ_ERRORS as e:
        raise InputError(f"{path}: not a readable HDF5 file ({_reason(e)})") from None
    with f:
        with _reading(path, "dataset 'v'"):
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
        with _reading(path, "dataset 'n_vars'"):
            n_vars = f["n_vars"][()] if "n_vars" in f else None
        with _reading(path, "dataset 'masks'"):
            masks = f["masks"][()] if "masks" in f else None
        coords = {}
        for name, size in (("sample", v.shape[0]), ("condition", v.shape[1])):
            with _reading(path, f"dataset {name!r}"):
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


def _sibling(path: Path, suffix: str) -> Path:
    """A fresh hidden name next to `path` (same file system, so a rename is atomic)."""
    return path.parent / f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.{suffix}"


def _cannot_write(path, e: OSError, option: str = "--out") -> OutputError:
    """The one-line error for an OSError met while writing `path`."""
    hint = f"choose another {option}"
    if e.errno in (errno.ENOSPC, errno.EDQUOT):
        hint = f"free some space or {hint}"
    return OutputError(f"{path}: cannot write ({_reason(e)}); {hint}")


@contextlib.contextmanager
def _writing(path):
    """Report an OSError of the block as an `OutputError` naming `path`."""
    try:
        yield
    except OSError as e:
        raise _cannot_write(path, e) from e


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike):
    """Yield a temporary path next to `path`; on success rename it onto `path`.

    Readers never see a half-written file, and a failure leaves no file behind; an OSError
    (full disk, read-only file system) becomes an `OutputError` naming `path`::

        with atomic_path("out.h5") as tmp:
            write_something(tmp)
    """
    path = Path(path)
    # a fresh name, created by the writer itself so that it gets the usual permissions
    tmp = _sibling(path, "tmp")
    with _writing(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            yield tmp
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike):
    """Yield a fresh temporary directory next to `path`; on success it replaces `path`.

    Like `atomic_path`, a failure leaves nothing behind and an OSError is an `OutputError`.
    """
    path = Path(path)
    tmp = _sibling(path, "tmp")
    with _writing(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.mkdir()
        try:
            yield tmp
            old = None
            if path.exists():
                old = _sibling(path, "old")
                os.replace(path, old)
            os.replace(tmp, path)
            if old is not None:
                shutil.rmtree(old, ignore_errors=True) if old.is_dir() else old.unlink()
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise


def write_bytes(path: str | os.PathLike, data) -> None:
    """Write `data` (bytes-like) to `path` atomically, synced to disk before the rename."""
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        # a network file system may report a full disk only here
        os.fsync(f.fileno())


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


def check_output(path: str | os.PathLike, *, directory: bool = False,
                 option: str = "--out") -> None:
    """Fail early, with an `OutputError`, when `path` cannot be written.

    Creates the parent folder and a temporary file in it (removed at once), so a read-only
    file system, a missing permission or a parent that is a file is found before any work.
    `directory`: `path` is a folder replaced as a whole (else an existing folder at `path`
    is an error). `option` names the option to change in the message.
    """
    path = Path(path)
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise OutputError(f"{path}: cannot write ({parent} is a file, not a folder); "
                                  f"choose another {option}")
            break
    if not directory and path.is_dir():
        raise OutputError(f"{path}: cannot write (it is a folder); choose another {option}")
    probe = _sibling(path, "tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        os.unlink(probe)
    except OSError as e:
        raise _cannot_write(path, e, option) from None


_HELD: dict[str, int] = {}  # lock files this process holds, with their nesting depth


@contextlib.contextmanager
def output_lock(path: str | os.PathLike):
    """Hold an exclusive lock on the destination `path` for the block.

    A second process asking for it fails at once with an `OutputError` naming `path` and
    the holder's pid. The lock is `fcntl.flock` on `.NAME.lock` next to `path`: the kernel
    releases it when the holder dies, so a file left behind by a killed run is harmless.
    Re-entrant within a process (the CLI and `score_shard` both take it).
    """
    path = Path(path)
    lock = path.parent / f".{path.name}.lock"
    key = os.path.abspath(lock)
    if key in _HELD:
        _HELD[key] += 1
        try:
            yield
        finally:
            _HELD[key] -= 1
        return
    fd = _acquire(lock, path)
    _HELD[key] = 1
    try:
        yield
    finally:
        del _HELD[key]
        if fd is not None:
            # unlink while still holding it: a process that opened the old file re-checks
            with contextlib.suppress(OSError):
                os.unlink(lock)
            os.close(fd)


def _acquire(lock: Path, path: Path) -> int | None:
    """Lock `lock` (see `output_lock`); its descriptor, or None where locks are unsupported."""
    with _writing(path):
        lock.parent.mkdir(parents=True, exist_ok=True)
        while True:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
                os.close(fd)
                raise OutputError(f"{path}: another ips run (pid {holder}) is writing it; wait "
                                  "for it to finish or choose another --out") from None
            except OSError as e:  # e.g. a network file system without flock
                os.close(fd)
                log.warning("%s: cannot lock (%s); not protected against a second run",
                            path, _reason(e))
                return None
            # the previous holder may have unlinked the file between our open and flock
            try:
                current = os.path.samestat(os.fstat(fd), os.stat(lock))
            except FileNotFoundError:
                current = False
            if current:
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
                return fd
            os.close(fd)


def read_dataset(path: str | os.PathLike, what: str, variables: tuple[str, ...] = (),
                 command: str = "") -> xr.Dataset:
    """Load an HDF5/netCDF file of this package into memory; `InputError` names the file.

    `what` names the kind of file in messages ("metrics", "fit" ...); every name of
    `variables` must be present (else the error asks whether this is a file of `command`).
    """
    if not Path(path).is_file():
        raise InputError(f"{path}: no such {what} file")
    try:
        ds = xr.open_dataset(path, engine="h5netcdf")
    except _READ_ERRORS as e:
        raise InputError(f"{path}: not a readable {what} file ({_reason(e)})") from None
    with ds:
        # variable by variable, so that a damaged one is named
        for name, var in ds.variables.items():
            with _reading(path, f"variable {name!r}"):
                var.load()
    require(ds, path, variables, command)
    return ds


def require(ds: xr.Dataset, path, variables: tuple[str, ...], command: str = "") -> None:
    """`InputError` naming the first of `variables` that `ds` (read from `path`) lacks."""
    for name in variables:
        if name not in ds.variables:
            raise InputError(f"{path}: no variable {name!r} (is this a file of `{command}`?)")
