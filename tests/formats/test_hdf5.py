"""ips.formats.hdf5: checksummed writes, guarded reads."""

from __future__ import annotations

import h5py
import pytest
import xarray as xr

from builders import flip_in_chunk, small_dataset
from ips.errors import InputError
from ips.formats.hdf5 import read_dataset, write_dataset
from ips.formats.values import read_values


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


def test_flipped_byte_in_the_data_is_a_read_error(tmp_path):
    path = tmp_path / "v.h5"
    write_dataset(small_dataset(), path)
    flip_in_chunk(path, "v")
    with pytest.raises(InputError, match=r"v.h5: dataset 'v' cannot be read \(.*\); the file is"):
        read_values(path)
    with pytest.raises(InputError, match=r"v.h5: variable 'v' cannot be read"):
        read_dataset(path, "values")
