"""Each file format written by its module's writer and read back by its reader: values,
interactions (exhaustive and sparse), metrics and factors (small synthetic data, no model)."""

from __future__ import annotations

import numpy as np

from builders import attrs, make_fit, make_metrics, make_values
from ips.analysis import layout
from ips.comparisons.compare import compare
from ips.fitting.cube import fit_sparse
from ips.formats import metrics as metrics_format
from ips.formats.factors import read_factors, write_factors
from ips.formats.interactions import attach_interactions, write_interactions
from ips.formats.metrics import read_metrics, write_metrics
from ips.formats.shards import read_shard
from ips.formats.values import read_values, write_values
from ips.interactions import design


def test_values_round_trip(tmp_path):
    ds = make_values(["a", "b", "c"], seed=1)
    write_values(ds, tmp_path / "v.h5")
    back = read_values(tmp_path / "v.h5", n_max=5)
    np.testing.assert_array_equal(back.v, ds["v"].values)  # NaN padding included
    np.testing.assert_array_equal(back.n_vars, ds["n_vars"].values)
    assert back.masks is None
    assert list(back.coords["sample"]) == ["a", "b", "c"]
    assert list(back.coords["condition"]) == list(ds["condition"].values)


def test_exhaustive_interactions_round_trip(tmp_path):
    values = make_values(["a", "b"], seed=2)
    write_values(values, tmp_path / "v.h5")
    fit = make_fit(values)
    write_interactions(fit, tmp_path / "i.h5", n_max=5, input_file=tmp_path / "v.h5")
    shard = read_shard(tmp_path / "v.h5")
    attach_interactions(shard, tmp_path / "i.h5")  # checks the fit reconstructs these values
    np.testing.assert_array_equal(shard.and_, fit["and"].values)
    np.testing.assert_array_equal(shard.or_, fit["or"].values)
    assert shard.fit_attrs["n_max"] == 5
    assert shard.fit_attrs["input_file"] == str(tmp_path / "v.h5")


def _sparse_values(samples, n=6, budget=24, seed=3):
    """A values file of sparse scoring: each sample's design `design.design(n, budget)` in
    `masks` (-1 padded), v on it, NaN beyond."""
    ds = make_values(samples, seed, n_max=n)
    masks = design.design(n, budget)
    v = np.full(ds["v"].shape, np.nan)
    v[:, :, :len(masks)] = np.random.default_rng(seed).normal(size=v[:, :, :len(masks)].shape)
    padded = np.full((len(samples), v.shape[2]), -1)
    padded[:, :len(masks)] = masks
    ds["v"] = (ds["v"].dims, v)
    ds["n_vars"] = ("sample", np.full(len(samples), n))
    ds["masks"] = (("sample", "mask"), padded)
    ds.attrs |= {"sampling": "sparse", "budget": budget}
    return ds


def test_sparse_interactions_round_trip(tmp_path):
    write_values(_sparse_values(["a", "b"]), tmp_path / "v.h5")
    values = read_values(tmp_path / "v.h5")
    assert values.masks is not None
    fit = fit_sparse(values, progress=False)
    write_interactions(fit, tmp_path / "i.h5", n_max=6, input_file=tmp_path / "v.h5")
    shard = read_shard(tmp_path / "v.h5")
    attach_interactions(shard, tmp_path / "i.h5")  # checks each game against its design
    for s in range(2):
        for c in range(values.v.shape[1]):
            got = shard.games[s][c]
            want = values.v[s, c, :len(values.design(s))]
            np.testing.assert_allclose(got.predict(values.design(s)), want, atol=1e-6)


def test_metrics_round_trip(tmp_path):
    ds = make_metrics("m", attrs(type="instruct", params=7e9, active_params=2e9), ips0=1.25)
    write_metrics(ds, tmp_path / "m.nc")
    entry = read_metrics(tmp_path / "m.nc")
    assert (entry.model, entry.dataset, entry.attrs["type"]) == ("m", "arc", "instruct")
    assert (entry.attrs["params"], entry.attrs["active_params"]) == (7e9, 2e9)
    assert float(entry.ds["ips"].sel(group="0shot", band="all")) == 1.25
    assert metrics_format.weights([entry]) == "trained"


def test_factors_round_trip(tmp_path):
    paths = []
    for name, kind in (("base", "base"), ("chat", "instruct")):
        ds = make_metrics(name, attrs(type=kind), samples=6, ips0=1.0 if kind == "base" else 2.0)
        paths.append(tmp_path / f"{name}.nc")
        write_metrics(ds, paths[-1])
    write_factors(compare(paths, n_boot=50, draws=99), tmp_path / "f.nc")
    factors = read_factors(tmp_path / "f.nc")
    assert factors.present == ["instruct_vs_base"]
    rows = factors.comparisons("instruct_vs_base")
    assert list(rows["model_a"].values) == ["chat"] and list(rows["model_b"].values) == ["base"]
    assert float(rows["delta_ips"].sel(band="all")[0]) == 1.0  # (2 - 1) / 1
    assert set(factors.absent) == {"scale", "dense_vs_moe", "few_shot"}


def test_the_metrics_file_names_the_analysis_bands():
    assert metrics_format.BANDS == ("all", *layout.BANDS)
