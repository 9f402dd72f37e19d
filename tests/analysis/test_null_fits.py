"""The nulls' fits made once (`ips null-fits`, ips.analysis.null_fits) and scored at any τ by
`ips metrics --null-fits`: the same numbers as fitting them in `ips metrics`, at every τ;
fits of other games refused in one line."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import xarray as xr

from builders import make_values, write_pair
from ips.analysis import nulls
from ips.analysis.null_fits import check, fit_nulls, null_pairs
from ips.analysis.summary import summarize
from ips.errors import InputError
from ips.formats.null_fits import read_null_fits, write_null_fits
from ips.formats.shards import load

NULL = nulls.Settings((0.01, 0.05), 2, True, seed=3)


def same(a: xr.Dataset, b: xr.Dataset) -> None:
    assert set(a.variables) == set(b.variables)
    for k in a.variables:
        np.testing.assert_array_equal(a[k].values, b[k].values, err_msg=k)
    assert a.attrs == b.attrs


@pytest.fixture
def run(tmp_path):
    ds = make_values([f"q{i}" for i in range(6)], seed=5, n_max=4)
    return write_pair(tmp_path, "m", ds)


@pytest.mark.parametrize("tau", [0.1, 0.25])
def test_fits_made_once_score_as_fits_made_in_metrics(run, tmp_path, tau):
    v, f = run
    fits = fit_nulls(load([v], [f]), NULL)
    write_null_fits(fits, tmp_path / "nf.h5")
    back = read_null_fits(tmp_path / "nf.h5")
    assert (back.levels, back.draws, back.matched, back.seed) == (NULL.levels, 2, True, 3)
    np.testing.assert_array_equal(back.gaussian_and, fits.gaussian_and)
    np.testing.assert_array_equal(back.matched_or, fits.matched_or)
    # 6 samples x 7 conditions x 2 levels x 2 draws; both sides of 10 + 1 pairs
    assert back.gaussian_and.shape == (2, 2, 6, 7, 16)
    assert back.matched_and.shape == (2, 2, 6, 11, 16) and len(null_pairs(load([v], [f]))) == 11
    direct = summarize([v], [f], tau=tau, tau_sweep=[0.1, 0.2], n_boot=50, null=NULL)
    cached = summarize([v], [f], tau=tau, tau_sweep=[0.1, 0.2], n_boot=50,
                       null_fits=tmp_path / "nf.h5")
    same(direct, cached)
    assert np.isfinite(cached["null_ips"].values).any()
    assert np.isfinite(cached["matched_null_ips"].values).any()


def test_no_draw_makes_no_null(run):
    v, f = run
    fits = fit_nulls(load([v], [f]), nulls.Settings((0.01,), 0))
    out = summarize([v], [f], tau=0.1, n_boot=50, null=nulls.Settings((0.01,), 0))
    assert fits.draws == 0 and "null_ips" not in out and "ceiling_ips" not in out


def test_fits_of_other_games_are_refused(run, tmp_path):
    v, f = run
    other = make_values([f"q{i}" for i in range(6)], seed=6, n_max=4)
    v2, f2 = write_pair(tmp_path, "other", other)
    write_null_fits(fit_nulls(load([v2], [f2]), NULL), tmp_path / "other.h5")
    with pytest.raises(InputError, match="other.h5: fitted from other games"):
        check(read_null_fits(tmp_path / "other.h5"), load([v], [f]), tmp_path / "other.h5")
    out = tmp_path / "m.nc"
    r = subprocess.run([sys.executable, "-m", "ips", "metrics", "--values", str(v),
                        "--interactions", str(f), "--null-fits", str(tmp_path / "other.h5"),
                        "--out", str(out)], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and not out.exists()
    assert "fitted from other games than the values and interactions files" in r.stderr
    r = subprocess.run([sys.executable, "-m", "ips", "metrics", "--values", str(v),
                        "--interactions", str(f), "--null-fits", str(v), "--out", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "is this a file of `ips null-fits`?" in r.stderr
