"""ips.outputs: atomic writes, checksummed HDF5, guarded reads (also of a values file),
destination checks, the lock."""

import fcntl
import os
import subprocess
import sys

import pytest

from builders import small_dataset
from ips.errors import OutputError
from ips.formats.hdf5 import write_dataset
from ips.outputs import atomic_path, check_output, output_lock


def test_atomic_path_replaces_on_success(tmp_path):
    target = tmp_path / "deep" / "out.txt"
    with atomic_path(target) as tmp:
        assert tmp.parent == target.parent and tmp != target
        tmp.write_text("new")
        assert not target.exists()  # nothing visible before the block ends
    assert target.read_text() == "new"
    assert [p.name for p in target.parent.iterdir()] == ["out.txt"]


def test_atomic_path_keeps_old_file_on_failure(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("writer failed")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


# ---------------------------------------------------------------- writers, readers, checks


def test_full_disk_is_an_output_error_and_leaves_nothing(tmp_path, full_disk):
    path = tmp_path / "d.h5"
    path.write_bytes(b"old")
    with pytest.raises(OutputError) as e:
        write_dataset(small_dataset(), path)
    assert str(e.value).startswith(f"{path}: cannot write (no space left on device)")
    assert "\n" not in str(e.value)
    assert path.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["d.h5"]


def test_check_output(tmp_path):
    check_output(tmp_path / "new" / "deeper" / "out.h5")
    assert (tmp_path / "new" / "deeper").is_dir()
    assert list((tmp_path / "new" / "deeper").iterdir()) == []  # the probe is gone
    (tmp_path / "file").write_text("x")
    with pytest.raises(OutputError, match=r"cannot write \(.*file is a file, not a folder\); "
                                          "choose another --out"):
        check_output(tmp_path / "file" / "sub" / "out.h5")
    with pytest.raises(OutputError, match="it is a folder"):
        check_output(tmp_path / "new")
    check_output(tmp_path / "new", directory=True)
    with pytest.raises(OutputError, match="choose another --cache-dir"):
        check_output(tmp_path / "file" / "m", directory=True, option="--cache-dir")


def test_output_lock_is_exclusive_reentrant_and_cleaned_up(tmp_path):
    out = tmp_path / "v.h5"
    lock = tmp_path / ".v.h5.lock"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, os, sys; f = open(sys.argv[1], 'w'); "
         "fcntl.flock(f, fcntl.LOCK_EX); f.write(str(os.getpid())); f.flush(); print('held', "
         "flush=True); sys.stdin.read()", str(lock)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(OutputError, match=rf"v.h5: another ips run \(pid {holder.pid}\)"):
            with output_lock(out):
                pass
    finally:
        holder.communicate("")
    with output_lock(out):
        with output_lock(out):  # the same process may take it again
            assert lock.read_text().strip() == str(os.getpid())
        with open(lock) as f, pytest.raises(BlockingIOError):
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)  # still held by the outer block
    assert not lock.exists()
