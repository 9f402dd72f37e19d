"""ips.fitting.cube on scored designs: sparse scoring, fitting and metrics end to end."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

import reference
from ips.analysis.diagnostics import sparsity
from ips.analysis.interaction_types import interaction_type_shares
from ips.analysis.metrics import ips as ips_of
from ips.analysis.metrics import normalize
from ips.formats import interactions
from ips.interactions import and_or, design


def test_sparse_scoring_scores_the_design_and_fits_it(llama, tmp_path):
    """`score_shard(budget=B)` scores exactly the design's masks (the same v as exhaustive
    scoring there), the file round-trips through `read_values`, and `fit_sparse` of it equals
    `fit_sparse` of the exhaustive file at the same budget; a sample whose 2**n masks fit in
    the budget is fitted exactly, as `and_or`."""
    from builders import ITEMS, sample_set
    from ips.fitting.cube import fit_sparse
    from ips.formats.values import read_values
    from ips.scoring.shard import score_shard

    ss = sample_set(ITEMS[:1], n_max=6)
    ss.samples += sample_set(ITEMS[1:2], n_max=4).samples  # 16 masks: inside the budget
    full, part = tmp_path / "full.h5", tmp_path / "part.h5"
    common = dict(shard=0, shard_size=2, batch_tokens=512, progress=False, scorer="plain")
    score_shard(llama, ss, full, **common)
    score_shard(llama, ss, part, budget=24, **common)
    vf, vp = read_values(full), read_values(part)
    assert vf.masks is None and vp.masks.shape == (2, 24)
    assert list(vp.n_vars) == [6, 4]
    d0 = vp.design(0)
    assert len(d0) == 24 and np.array_equal(d0, design.design(6, 24, seed=0))
    assert np.array_equal(vp.design(1), np.arange(16)) and np.all(vp.masks[1, 16:] == -1)
    np.testing.assert_allclose(vp.v[0], vf.v[0][:, d0], atol=1e-6, rtol=0)
    np.testing.assert_allclose(vp.v[1, :, :16], vf.v[1, :, :16], atol=1e-6, rtol=0)
    assert np.all(np.isnan(vp.v[1, :, 16:]))

    a, b = fit_sparse(vp), fit_sparse(vf, budget=24)
    assert a.attrs["sampling"] == "sparse" and b.attrs["budget"] == 24
    for name in interactions.ENTRY_VARIABLES + interactions.ROW_VARIABLES:
        np.testing.assert_allclose(a[name].values, b[name].values, atol=1e-5, rtol=0,
                                   err_msg=name)
    assert list(a.complete.values[:, 0]) == [0, 1]
    g = interactions.from_arrays({k: a[k].values for k in a.data_vars}, a.n_vars.values, 1, 0)
    exact = and_or(vf.v[1, 0, :16])
    and_, or_ = reference.to_dense(g)
    np.testing.assert_allclose(and_, exact.and_, atol=1e-9)
    np.testing.assert_allclose(or_, exact.or_, atol=1e-9)
    assert g.reliable and g.complete
    est = interactions.from_arrays({k: a[k].values for k in a.data_vars}, a.n_vars.values, 0, 1)
    assert est.n == 6 and not est.complete and est.n_fit == 24 and est.n_heldout > 0
    np.testing.assert_allclose(est.predict(d0), vp.v[0, 1], atol=1e-6)  # exact on the design


def test_metrics_of_sparse_fits(llama, tmp_path):
    """`ips metrics` (summarize) on sparse fits: with a budget of all 2**n masks every number
    equals the exhaustive run's; with a partial design the pair IPS equals `sparse.pair_ips`
    of the stored games, and the file says which estimates are reliable."""
    from builders import sample_set
    from ips.analysis.summary import summarize
    from ips.fitting.cube import fit_sparse, fit_values
    from ips.formats.hdf5 import write_dataset
    from ips.formats.values import read_values
    from ips.scoring.shard import score_shard

    ss = sample_set(n_max=5)
    common = dict(shard=0, shard_size=4, batch_tokens=512, progress=False, scorer="plain")
    files = {}
    for name, budget in (("exhaustive", None), ("complete", 32), ("partial", 20)):
        values, fit = tmp_path / f"{name}.h5", tmp_path / f"{name}.fit.h5"
        score_shard(llama, ss, values, budget=budget, **common)
        vals = read_values(values)
        write_dataset(fit_values(vals) if budget is None else fit_sparse(vals), fit)
        files[name] = summarize([values], [fit], n_boot=100, draws=99)
    ex, co, pa = files["exhaustive"], files["complete"], files["partial"]
    assert co.attrs["sampling"] == "sparse" and co.attrs["unreliable_games"] == 0
    # every number on the entries' sets equals the exhaustive one on the 2**n axis
    cases = [c for c in ("case", "case_same") if f"{c}_norm" in ex]
    for name in set(ex.data_vars) - {f"{c}_{k}" for c in cases for k in ("norm", "words")}:
        assert ex[name].dims == co[name].dims, name
        np.testing.assert_allclose(co[name].values, ex[name].values, atol=1e-6, err_msg=name)
    for c in cases:
        assert ex.attrs[f"{c}_sample"] == co.attrs[f"{c}_sample"]
        assert ex.attrs[f"{c}_ips"] == pytest.approx(co.attrs[f"{c}_ips"])
        sets = co[f"{c}_set"].values
        np.testing.assert_allclose(co[f"{c}_norm"].values, ex[f"{c}_norm"].values[..., sets],
                                   atol=1e-6)
        assert np.all(co[f"{c}_mask"].values == ex[f"{c}_mask"].values)

    fit = xr.load_dataset(tmp_path / "partial.fit.h5", engine="h5netcdf")
    arrays = {k: fit[k].values for k in fit.data_vars}
    games = [[interactions.from_arrays(arrays, fit.n_vars.values, s, c) for c in range(2)]
             for s in range(4)]
    # a partial design: the metrics on the entries' sets equal ips.analysis.metrics on the games'
    # dense form (every interaction that is not an entry 0)
    dense = np.array([[np.stack(reference.to_dense(g)) for g in row] for row in games])
    norm = normalize(dense[:, :, 0], dense[:, :, 1])
    for band in ("all", "low", "mid", "high"):
        want = ips_of(norm, tau=0.1, band=None if band == "all" else band).value
        np.testing.assert_allclose(pa["ips"].sel(band=band).values, want, atol=1e-9,
                                   err_msg=band)
    pred = xr.load_dataset(tmp_path / "partial.h5", engine="h5netcdf")["pred"].values
    types = interaction_type_shares(norm, pred, tau=0.1)
    np.testing.assert_array_equal(pa["type_count"].sel(changed="yes").values[0],
                                  types.counts_changed)
    np.testing.assert_array_equal(pa["type_count"].sel(changed="no").values[0],
                                  types.counts_unchanged)
    want_sparsity, _ = sparsity(norm, 0.1)
    for name in ("sparsity_mean", "salient_share"):
        np.testing.assert_allclose(pa[name].values, want_sparsity[name][1], atol=1e-9)
    assert 0 < pa.attrs["case_ips"] and pa["case_set"].size < 32
    assert pa.attrs["games"] == 8 and pa.attrs["budget"] == 20
    assert pa.attrs["unreliable_games"] == int((pa["reliable"].values == 0).sum())
    assert np.all(np.isfinite(pa["heldout_error"].values))

    # a fit of other values, or of another sampling, is refused in one line
    from ips.errors import InputError

    other = xr.load_dataset(tmp_path / "partial.h5", engine="h5netcdf")
    other["v"] = other["v"] + 0.5 * (other["masks"] > 0).astype(float)
    write_dataset(other, tmp_path / "other.h5")
    with pytest.raises(InputError, match="do not reproduce v on the design of sample"):
        summarize([tmp_path / "other.h5"], [tmp_path / "partial.fit.h5"])
    with pytest.raises(InputError, match="one is of sparse sampling, the other not"):
        summarize([tmp_path / "exhaustive.h5"], [tmp_path / "complete.fit.h5"])
