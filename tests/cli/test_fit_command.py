"""`python -m ips` and `ips fit`: help, a real fit checked by universal matching, bad input."""

import subprocess
import sys

import h5py
import numpy as np
import pytest
import xarray as xr

from ips.cli.main import main
from ips.formats import interactions
from ips.interactions.design import design


def run_ips(*args):
    return subprocess.run(
        [sys.executable, "-m", "ips", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=600,
    )


def write_h5(path, **datasets):
    with h5py.File(path, "w") as f:
        for name, data in datasets.items():
            f[name] = data
    return path


def values_cube(n_vars, n_cond=2, seed=0):
    """Random v of dims (sample, condition, 2**max(n)), NaN beyond each sample's 2**n."""
    rng = np.random.default_rng(seed)
    n_vars = np.asarray(n_vars)
    v = rng.normal(scale=3.0, size=(len(n_vars), n_cond, 1 << n_vars.max()))
    for s, n in enumerate(n_vars):
        v[s, :, 1 << n :] = np.nan
    return v


def reconstruct(and_, or_, v_empty, n):
    """Universal matching (paper Section 3.1) by brute force:
    v(T) = v(∅) + Σ_{∅≠S⊆T} I_AND(S) + Σ_{S∩T≠∅} I_OR(S), masks as bitsets."""
    out = np.empty(1 << n)
    for t in range(1 << n):
        out[t] = v_empty
        for s in range(1, 1 << n):
            if s & t == s:
                out[t] += and_[s]
            if s & t:
                out[t] += or_[s]
    return out


def test_help_lists_fit():
    r = run_ips("--help")
    assert r.returncode == 0, r.stderr
    assert "fit" in r.stdout
    r = run_ips("fit", "--help")
    assert r.returncode == 0, r.stderr
    for option in ("--out", "--solver", "--noise", "--n-max", "--sgd-learning-rate",
                   "--sgd-steps", "--log-level"):
        assert option in r.stdout


def test_fit_mixed_n_matches_v(tmp_path):
    n_vars = [2, 3, 3, 2]
    v = values_cube(n_vars)
    src = write_h5(tmp_path / "values.h5", v=v, n_vars=np.array(n_vars, dtype=np.int32))
    out = tmp_path / "sub" / "fit.h5"
    r = run_ips("fit", src, "--out", out, "--solver", "exact")
    assert r.returncode == 0, r.stderr
    assert "n=3" in r.stderr  # the log names what ran

    with xr.open_dataset(out, engine="h5netcdf") as ds:
        ds = ds.load()
    assert ds["and"].dims == ds["or"].dims == ds["gamma"].dims == ("sample", "condition", "mask")
    assert ds["and"].shape == v.shape
    for name in ("objective", "matching_error", "duality_gap"):
        assert ds[name].dims == ("sample", "condition")
    np.testing.assert_array_equal(ds["n_vars"].values, n_vars)
    assert ds.attrs["solver_requested"] == "exact"
    assert ds.attrs["noise"] == 0.0
    assert ds.attrs["input_file"] == str(src)
    assert ds.attrs["ips_version"]
    assert ds.attrs["solver_used"]
    assert ds.attrs["optimum"].startswith("canonical")
    assert "sgd_steps" not in ds.attrs
    assert [p.name for p in out.parent.iterdir()] == ["fit.h5"]  # no temporary file left

    tol = 1e-6 * np.nanmax(np.abs(v))
    for s, n in enumerate(n_vars):
        for c in range(v.shape[1]):
            a, o = ds["and"].values[s, c], ds["or"].values[s, c]
            assert np.isnan(a[1 << n :]).all() and np.isnan(o[1 << n :]).all()
            rec = reconstruct(a, o, v[s, c, 0], n)
            np.testing.assert_allclose(rec, v[s, c, : 1 << n], rtol=0, atol=tol)
            assert ds["matching_error"].values[s, c] <= tol


def test_fit_sgd_settings_reach_the_solver_and_the_file(tmp_path):
    """`--solver sgd --sgd-learning-rate --sgd-steps` give the same interactions as and_or
    with those settings (not the defaults), and the file says which optimum it holds."""
    from ips.interactions import and_or

    n_vars = [3, 2]
    v = values_cube(n_vars, seed=4)
    src = write_h5(tmp_path / "values.h5", v=v, n_vars=np.array(n_vars, dtype=np.int32))
    out = tmp_path / "fit.h5"
    options = ["--solver", "sgd", "--sgd-learning-rate", "0.02", "--sgd-steps", "40"]
    assert main(["fit", str(src), "--out", str(out), *options]) == 0
    with xr.open_dataset(out, engine="h5netcdf") as ds:
        ds = ds.load()
    assert ds.attrs["solver_used"] == "n=2: sgd; n=3: sgd"
    assert ds.attrs["sgd_learning_rate"] == 0.02 and ds.attrs["sgd_steps"] == 40
    assert ds.attrs["optimum"].startswith("sgd") and "40 steps" in ds.attrs["optimum"]
    ref = and_or(v[0], solver="sgd", learning_rate=0.02, steps=40)
    np.testing.assert_allclose(ds["and"].values[0], ref.and_, rtol=0, atol=1e-12)
    np.testing.assert_allclose(ds["objective"].values[0], ref.objective, rtol=1e-12)
    default = and_or(v[0], solver="sgd", steps=40)  # another learning rate: another point
    assert np.abs(default.and_ - ref.and_).max() > 1e-3
    tol = 1e-6 * np.nanmax(np.abs(v))
    assert np.all(ds["matching_error"].values <= tol)


def test_fit_without_n_vars(tmp_path):
    v = values_cube([3, 3, 3])
    src = write_h5(tmp_path / "values.h5", v=v)
    out = tmp_path / "fit.h5"
    assert main(["fit", str(src), "--out", str(out), "--log-level", "warning"]) == 0
    with xr.open_dataset(out, engine="h5netcdf") as ds:
        np.testing.assert_array_equal(ds["n_vars"].values, [3, 3, 3])
        rec = reconstruct(ds["and"].values[1, 0], ds["or"].values[1, 0], v[1, 0, 0], 3)
    np.testing.assert_allclose(rec, v[1, 0], rtol=0, atol=1e-6 * np.abs(v).max())


def _nan_inside(v):
    v = v.copy()
    v[1, 0, 2] = np.nan  # sample 1 has n = 3: entry 2 is inside its first 8
    return v


BAD_INPUTS = {
    "missing v": (dict(w=np.zeros((2, 2, 4))), [], "no dataset 'v'"),
    "rank 2": (dict(v=np.zeros((2, 4))), [], "rank 2"),
    "mask length 6": (dict(v=np.zeros((2, 2, 6))), [], "not a power of two"),
    "NaN inside": (
        dict(v=_nan_inside(values_cube([2, 3])), n_vars=np.array([2, 3])),
        [],
        "non-finite value",
    ),
    "NaN padding without n_vars": (dict(v=values_cube([2, 3])), [], "'n_vars'"),
    "n beyond --n-max": (
        dict(v=values_cube([2, 3]), n_vars=np.array([2, 3])),
        ["--n-max", "2"],
        "beyond --n-max 2",
    ),
    "n_vars beyond mask axis": (
        dict(v=values_cube([2, 2]), n_vars=np.array([2, 3])),
        [],
        "dataset 'n_vars'",
    ),
    "n_vars wrong shape": (dict(v=values_cube([2, 2]), n_vars=np.array([2])), [], "'n_vars'"),
}


@pytest.mark.parametrize("case", BAD_INPUTS, ids=list(BAD_INPUTS))
def test_fit_bad_input_exit_2(tmp_path, capsys, case):
    datasets, extra, message = BAD_INPUTS[case]
    src = write_h5(tmp_path / "bad.h5", **datasets)
    out = tmp_path / "fit.h5"
    assert main(["fit", str(src), "--out", str(out), *extra]) == 2
    err = capsys.readouterr().err
    assert str(src) in err and message in err, err
    assert not out.exists()


def test_fit_missing_or_unreadable_file(tmp_path, capsys):
    missing = tmp_path / "missing.h5"
    assert main(["fit", str(missing), "--out", str(tmp_path / "o.h5")]) == 2
    assert f"{missing}: no such file" in capsys.readouterr().err

    text = tmp_path / "text.h5"
    text.write_text("not hdf5")
    assert main(["fit", str(text), "--out", str(tmp_path / "o.h5")]) == 2
    assert "not a readable HDF5 file" in capsys.readouterr().err


def test_fit_bad_options_exit_2(tmp_path, capsys):
    src = write_h5(tmp_path / "values.h5", v=values_cube([2]))
    for args in (["--solver", "simplex"], ["--noise", "-1"], ["--n-max", "33"],
                 ["--sgd-learning-rate", "0"], ["--sgd-steps", "0"], ["--budget", "8"],
                 ["--sampling", "random"]):
        with pytest.raises(SystemExit) as exc:
            main(["fit", str(src), "--out", str(tmp_path / "o.h5"), *args])
        assert exc.value.code == 2, args
        assert args[0] in capsys.readouterr().err


def test_fit_sparse_from_an_exhaustive_file_and_from_a_design(tmp_path, capsys):
    """--sampling sparse --budget B fits the B masks sparse scoring would score; a file with
    a design (`masks`) is fitted sparsely without flags, and refuses --sampling exhaustive."""

    v = values_cube([6, 3])
    src = write_h5(tmp_path / "values.h5", v=v, n_vars=np.array([6, 3]))
    out = tmp_path / "sparse.h5"
    assert main(["fit", str(src), "--out", str(out), "--sampling", "sparse", "--budget", "20"]) == 0
    with xr.open_dataset(out, engine="h5netcdf") as ds:
        assert ds.attrs["sampling"] == "sparse" and ds.attrs["budget"] == 20
        assert list(ds.complete.values[:, 0]) == [0, 1]  # 2**3 masks fit in the budget
        g = interactions.from_arrays({k: ds[k].values for k in ds.data_vars}, ds.n_vars.values, 0, 1)
    chosen = design(6, 20, seed=0)
    np.testing.assert_allclose(g.predict(chosen), v[0, 1, chosen], atol=1e-6)

    masks = np.full((2, 20), -1)
    masks[0], masks[1, :8] = chosen, np.arange(8)
    vd = np.full((2, 2, 20), np.nan)
    vd[0], vd[1, :, :8] = v[0][:, chosen], v[1, :, :8]
    designed = write_h5(tmp_path / "designed.h5", v=vd, n_vars=np.array([6, 3]), masks=masks)
    again = tmp_path / "again.h5"
    assert main(["fit", str(designed), "--out", str(again)]) == 0
    with xr.open_dataset(out, engine="h5netcdf") as a, xr.open_dataset(again, engine="h5netcdf") as b:
        np.testing.assert_allclose(a.entry_value.values, b.entry_value.values, atol=1e-6)
    capsys.readouterr()
    for args, message in ((["--sampling", "exhaustive"], "holds a sparse design"),
                          (["--budget", "20"], None)):
        target = designed if message else src
        assert main(["fit", str(target), "--out", str(tmp_path / "x.h5"), *args]) == 2
        err = capsys.readouterr().err
        assert (message or "--budget: applies to --sampling sparse only") in err
        assert err.count("\n") == 1


def test_fit_options_rejected_by_and_or_exit_2(tmp_path, capsys):
    src = write_h5(tmp_path / "values.h5", v=values_cube([2]))
    options = ["--solver", "first_order", "--noise", "0.1"]
    assert main(["fit", str(src), "--out", str(tmp_path / "o.h5"), *options]) == 2
    err = capsys.readouterr().err
    assert f"ips fit: error: {src}: " in err and "noise" in err
