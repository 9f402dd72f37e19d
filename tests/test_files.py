"""ips.files: atomic writes, checksummed HDF5, guarded reads (also of a values file),
destination checks, the lock."""

import fcntl
import os
import subprocess
import sys

import h5py
import numpy as np
import pytest
import xarray as xr

from ips.errors import InputError, OutputError
from ips.files import atomic_path, check_output, output_lock, read_dataset, write_dataset
from ips.values_file import read_values


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

def small_dataset():
    rng = np.random.default_rng(0)
    v = rng.normal(size=(4, 2, 8))
    v[0, :, 4:] = np.nan
    return xr.Dataset(
        {"v": (("sample", "condition", "mask"), v), "n_vars": (("sample",), [2, 3, 3, 3]),
         "hidden": (("sample", "dim"), rng.normal(size=(4, 5)).astype(np.float32)),
         "label": (("sample",), np.array(["a", "b", "c", "d"], dtype=object)),
         "total": ((), 1.5)},
        coords={"sample": np.array(["s0", "s1", "s2", "s3"], dtype=object)},
    )


def flip_in_chunk(path, name):
    """Flip one byte in the middle of the first stored chunk of dataset `name`."""
    with h5py.File(path, "r") as f:
        info = f[name].id.get_chunk_info(0)
    with open(path, "r+b") as f:
        f.seek(info.byte_offset + info.size // 2)
        b = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([b[0] ^ 0x10]))


def test_write_dataset_keeps_numbers_and_checksums_numeric_arrays(tmp_path):
    ds = small_dataset()
    path = tmp_path / "d.h5"
    write_dataset(ds, path)
    with xr.open_dataset(path, engine="h5netcdf") as back:
        assert back.load().identical(ds)
    with h5py.File(path, "r") as f:
        for name in ("v", "n_vars", "hidden"):
            assert f[name].fletcher32 and f[name].chunks, name
    assert "fletcher32" not in ds["v"].encoding  # the caller's dataset is not changed
    assert [p.name for p in tmp_path.iterdir()] == ["d.h5"]


def test_full_disk_is_an_output_error_and_leaves_nothing(tmp_path, full_disk):
    path = tmp_path / "d.h5"
    path.write_bytes(b"old")
    with pytest.raises(OutputError) as e:
        write_dataset(small_dataset(), path)
    assert str(e.value).startswith(f"{path}: cannot write (no space left on device)")
    assert "\n" not in str(e.value)
    assert path.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["d.h5"]


def test_flipped_byte_in_the_data_is_a_read_error(tmp_path):
    path = tmp_path / "v.h5"
    write_dataset(small_dataset(), path)
    flip_in_chunk(path, "v")
    with pytest.raises(InputError, match=r"v.h5: dataset 'v' cannot be read \(.*\); the file is"):
        read_values(path)
    with pytest.raises(InputError, match=r"v.h5: variable 'v' cannot be read"):
        read_dataset(path, "values")


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
