"""Writing and reading this package's files safely.

Files are written atomically: to a temporary file in the target's folder, then renamed.
The HDF5 image is built in memory and written with plain file I/O, so a full disk is a clean
`OutputError` (HDF5 itself crashes on ENOSPC), and numeric arrays are stored chunked with the
Fletcher-32 checksum, so a damaged file is a read error rather than different numbers.
Reads are guarded alike: a missing, damaged or foreign file is an `InputError` naming it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import shutil
import uuid
from pathlib import Path

from ips.errors import OutputError, reason

log = logging.getLogger(__name__)


def _sibling(path: Path, suffix: str) -> Path:
    """A fresh hidden name next to `path` (same file system, so a rename is atomic)."""
    return path.parent / f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.{suffix}"


def _cannot_write(path, e: OSError, option: str = "--out") -> OutputError:
    """The one-line error for an OSError met while writing `path`."""
    hint = f"choose another {option}"
    if e.errno in (errno.ENOSPC, errno.EDQUOT):
        hint = f"free some space or {hint}"
    return OutputError(f"{path}: cannot write ({reason(e)}); {hint}")


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
                            path, reason(e))
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
