"""Sparse AND-OR estimation (ips.sparse) against ground truth built by construction.

Games are generated from known sparse AND/OR interactions with `reconstruct`; their exact
Eq. 12 fit equals the generating interactions (checked), so recovery is measured against
both. The sparse-form metrics are checked against `ips.metrics` on the same dense arrays.
"""

from math import comb

import numpy as np
import pytest
import xarray as xr

from ips import sparse
from ips.diagnostics import sparsity
from ips.interactions import and_or, reconstruct
from ips.metrics import (band_of, interaction_type_shares, normalize, order_bands,
                         pair_sensitivity, salient)
from ips.metrics import ips as ips_of


def sparse_game(n: int, k: int, orders: tuple[int, int], seed: int):
    """v(∅) = 0.5 plus k AND and k OR interactions of orders in `orders`, |I| ∈ [0.5, 2]."""
    rng = np.random.default_rng(seed)
    masks = np.arange(1 << n)
    size = np.bitwise_count(masks)
    pool = masks[(size >= orders[0]) & (size <= orders[1])]
    x, y = np.zeros(1 << n), np.zeros(1 << n)
    x[0] = 0.5
    for arr in (x, y):
        arr[rng.choice(pool, k, replace=False)] = rng.choice([-1, 1], k) * rng.uniform(0.5, 2, k)
    return x, y, reconstruct(x, y)


def test_design_levels_and_budget():
    n, budget = 10, 128
    d = sparse.design(n, budget, seed=3)
    assert len(d) == budget == len(np.unique(d))
    size = np.bitwise_count(d)
    # sizes 0, 10, 1, 9 (22 masks) fit in half the budget; adding 2 and 8 (90 more) does not
    for s in (0, 1, 9, 10):
        assert np.sum(size == s) == comb(n, s)
    assert np.sum(size == 2) < comb(n, 2)
    assert np.array_equal(sparse.design(n, budget, seed=3), d)  # seeded
    assert np.array_equal(sparse.design(4, 16), np.arange(16))
    assert np.array_equal(sparse.design(4, 100), np.arange(16))


def test_all_masks_reproduce_the_exact_fit():
    rng = np.random.default_rng(0)
    v = rng.normal(size=1 << 6)  # a dense game: the estimate must be Eq. 12 itself
    ex = and_or(v, solver="exact")
    est = sparse.estimate(np.arange(1 << 6), v, 6, holdout=0)
    a, o = sparse.to_dense(est)
    assert est.objective == pytest.approx(float(ex.objective), rel=1e-9)
    assert np.abs(a - ex.and_).max() < 1e-8 and np.abs(o - ex.or_).max() < 1e-8
    assert est.unobserved == 0 and est.aliased == 0 and est.fit_error < 1e-10


@pytest.mark.parametrize("n, budget", [(8, 64), (10, 128)])
def test_sparse_game_recovered_from_a_fraction_of_masks(n, budget):
    x, y, v = sparse_game(n, 5, (2, 3), seed=n)
    if n == 8:  # the generating interactions are Eq. 12's canonical optimum (n = 10: 30 s)
        ex = and_or(v, solver="exact")
        assert np.abs(ex.and_ - x).max() < 1e-9 and np.abs(ex.or_ - y).max() < 1e-9
    d = sparse.design(n, budget, seed=1)
    est = sparse.estimate(d, v[d], n, refit=False)
    a, o = sparse.to_dense(est)
    # exact recovery: the LP's optimum is the generating 10-sparse vector (errors ~1e-13)
    assert np.abs(a - x).max() < 1e-7 and np.abs(o - y).max() < 1e-7
    assert len(est) == 10
    assert est.heldout_error < 1e-8 and est.n_heldout > 0 and est.reliable
    assert np.abs(est.predict(np.arange(1 << n)) - v).max() < 1e-7


@pytest.mark.slow
def test_sparse_game_recovered_n12():
    x, y, v = sparse_game(12, 5, (2, 4), seed=12)
    d = sparse.design(12, 256, seed=0)
    est = sparse.estimate(d, v[d], 12, refit=False)
    a, o = sparse.to_dense(est)
    assert np.abs(a - x).max() < 1e-7 and np.abs(o - y).max() < 1e-7


def test_too_few_masks_is_flagged_by_the_heldout_error():
    # 20 + 20 interactions of orders 1..4 at n = 8 from 24 masks: not identifiable
    x, y, v = sparse_game(8, 20, (1, 4), seed=5)
    d = sparse.design(8, 32, seed=0)
    est = sparse.estimate(d, v[d], 8)
    assert est.heldout_error > 0.05 and not est.reliable
    full_error = np.sqrt(np.mean((est.predict(np.arange(256)) - v) ** 2)) / np.ptp(v)
    assert full_error > 0.05


def test_low_order_candidates_beyond_the_dense_limit():
    n = 20
    pairs = [(0, 5), (3, 9), (11, 17)]
    weights = [1.5, -0.8, 1.1]
    ors = [(1, 7), (12, 19)]
    d = sparse.design(n, 160, seed=0)

    def v_of(t):  # three AND{i,j} and two OR{i,j} on other pairs, v(∅) = 0.2
        on_and = [((t >> i) & 1) & ((t >> j) & 1) for i, j in pairs]
        on_or = [((t >> i) & 1) | ((t >> j) & 1) for i, j in ors]
        return 0.2 + sum(w * a for w, a in zip(weights, on_and)) + 0.7 * on_or[0] - 0.4 * on_or[1]

    est = sparse.estimate(d, v_of(d), n, order=2)
    got = {(int(k), int(m)): val for k, m, val in zip(est.kinds, est.masks, est.values)}
    want = {(sparse.AND, (1 << i) | (1 << j)): w for (i, j), w in zip(pairs, weights)}
    want |= {(sparse.OR, (1 << 1) | (1 << 7)): 0.7, (sparse.OR, (1 << 12) | (1 << 19)): -0.4}
    assert got.keys() == want.keys()
    assert all(abs(got[key] - want[key]) < 1e-7 for key in want)
    assert est.heldout_error < 1e-8
    with pytest.raises(ValueError, match="dense layout"):
        sparse.to_dense(est)


def test_sparse_metrics_equal_dense_metrics_on_the_full_set():
    rng = np.random.default_rng(7)
    n = 6
    games = []
    for _ in range(2):
        a, o = rng.normal(size=(2, 1 << n)) * rng.exponential(size=(2, 1 << n))
        a[rng.random(1 << n) < 0.2] = 0.0  # some exact zeros
        games.append((a, o))
    ents = [sparse.from_dense(a, o) for a, o in games]
    norms = [normalize(a, o) for a, o in games]
    for e, nm in zip(ents, norms):
        dense_vals = np.r_[nm[0, 1:], nm[1, 1:]]
        assert np.array_equal(sparse.normalize(e), dense_vals)
        for tau in (0.05, 0.1, 0.3):
            dense_sal = salient(nm, tau)
            assert np.array_equal(sparse.salient(e, tau), np.r_[dense_sal[0, 1:], dense_sal[1, 1:]])
    for tau in (0.05, 0.1, 0.3):
        for band in (None, "low", "mid", "high"):
            want = float(pair_sensitivity(norms[0], norms[1], tau, band).value)
            got = sparse.pair_ips(ents[0], ents[1], tau, band)
            if np.isnan(want):
                assert np.isnan(got)
            else:
                assert got == pytest.approx(want, rel=1e-12, abs=1e-15)


def test_sparse_metrics_of_an_estimate_match_its_dense_form():
    """Entries without the zeros: Min = 0 (a missing interaction is 0), as in the dense array."""
    x, y, v = sparse_game(8, 5, (2, 3), seed=8)
    x2, y2, v2 = sparse_game(8, 5, (1, 3), seed=9)
    ests = [sparse.estimate(np.arange(256), w, 8, holdout=0) for w in (v, v2)]
    dense = [sparse.to_dense(e) for e in ests]
    norms = [normalize(a, o) for a, o in dense]
    for e, nm in zip(ests, norms):
        assert np.allclose(sparse.normalize(e), nm[e.kinds.astype(int), e.masks], atol=1e-15)
        assert sparse.salient(e).sum() == salient(nm).sum()
    for band in (None, "low", "mid", "high"):
        want = float(pair_sensitivity(norms[0], norms[1], 0.1, band).value)
        got = sparse.pair_ips(ests[0], ests[1], 0.1, band)
        if np.isnan(want):
            assert np.isnan(got)
        else:
            assert got == pytest.approx(want, rel=1e-12)
    assert np.allclose(ests[0].predict(np.arange(256)), reconstruct(*dense[0]), atol=1e-12)


def random_game(n: int, k: int, rng) -> sparse.SparseInteractions:
    """k random (kind, S) entries of a game of n variables (ties and exact zeros included)."""
    keys = rng.choice(2 * ((1 << n) - 1), size=k, replace=False)
    values = np.round(rng.normal(size=k) * rng.exponential(size=k), 1)  # ties, some 0.0
    return sparse.SparseInteractions(n, (keys % 2).astype(np.int8), keys // 2 + 1, values,
                                     0.3, 0.0, np.nan, 0.0, 0, 0, None, 0.0, 0, 0)


def test_metrics_on_the_entry_grid_equal_the_dense_axis():
    """`entry_grid` + `SetLayout`: IPS with its bands and τ sweep, types, sparsity and the
    kept-top surrogate on samples of different n equal `ips.metrics` on the padded 2^n_max
    axis of the games' dense form; among them a complete game (Min > 0), a sample whose
    games have no entry (constant v) and entries of value 0 and tied values."""
    from ips import diagnostics, metrics

    rng = np.random.default_rng(3)
    games = [[random_game(n, k, rng) for k in (12, 30, 5)] for n in (5, 7, 6)]
    games[0][1] = sparse.from_dense(*rng.normal(size=(2, 1 << 5)))  # every (kind, S)
    games.append([random_game(4, 0, rng) for _ in range(3)])
    norm, layout = sparse.entry_grid(games)
    dense = np.full((4, 3, 2, 1 << 7), np.nan)
    for s, row in enumerate(games):
        for c, g in enumerate(row):
            dense[s, c, :, :1 << g.n] = sparse.to_dense(g)
    ref = normalize(dense[:, :, 0], dense[:, :, 1])
    taus = np.array([0.05, 0.1, 0.3])
    for band in (None, "low", "mid", "high"):
        got, want = (metrics.ips(x, tau=taus, band=band, layout=lay)
                     for x, lay in ((norm, layout), (ref, None)))
        np.testing.assert_allclose(got.per_pair, want.per_pair, rtol=1e-12, err_msg=band)
        np.testing.assert_array_equal(got.n_union, want.n_union)
    pred = rng.integers(0, 2, size=(4, 3))
    got, want = (metrics.interaction_type_shares(x, pred, tau=taus, layout=lay)
                 for x, lay in ((norm, layout), (ref, None)))
    np.testing.assert_array_equal(got.sample_counts_changed, want.sample_counts_changed)
    np.testing.assert_array_equal(got.sample_counts_unchanged, want.sample_counts_unchanged)
    (got, got_share), (want, want_share) = (diagnostics.sparsity(norm, 0.1, layout.omega),
                                            diagnostics.sparsity(ref, 0.1))
    for name in got:
        np.testing.assert_allclose(got[name][1], want[name][1], rtol=1e-12, err_msg=name)
    np.testing.assert_allclose(got_share, want_share, rtol=1e-12)
    assert np.isfinite(got_share).all()  # the empty sample too: Ĩ = 0 on all of Ω
    for g in (games[1][1], games[0][1]):
        for share in diagnostics.KEEP:
            a, o = diagnostics.keep_top(*sparse.to_dense(g), share)
            np.testing.assert_allclose(sparse.keep_top(g, share).predict(np.arange(1 << g.n)),
                                       reconstruct(a, o), atol=1e-12)


def test_band_of_matches_order_bands():
    for n in (3, 7, 12):
        masks = np.arange(1, 1 << n)
        assert np.array_equal(band_of(np.bitwise_count(masks), n), order_bands(n)[1:])


@pytest.mark.parametrize("kwargs, match", [
    (dict(masks=[1, 2, 3], values=[0.0, 1.0, 2.0], n=2), "empty mask 0"),
    (dict(masks=[0, 1, 1], values=[0.0, 1.0, 2.0], n=2), "repeated mask"),
    (dict(masks=[0, 9], values=[0.0, 1.0], n=3), "0..2\\*\\*n - 1"),
    (dict(masks=[0, 1], values=[0.0, np.nan], n=2), "NaN"),
    (dict(masks=[0, 1], values=[0.0], n=2), "does not match"),
    (dict(masks=[0, 1], values=[0.0, 1.0], n=20, order=None), "n ≤ 14"),
])
def test_bad_inputs(kwargs, match):
    with pytest.raises(ValueError, match=match):
        sparse.estimate(**kwargs)


# ---------------------------------------------------------------- scoring and fitting a design


def test_sparse_scoring_scores_the_design_and_fits_it(llama, tmp_path):
    """`score_shard(budget=B)` scores exactly the design's masks (the same v as exhaustive
    scoring there), the file round-trips through `read_values`, and `fit_sparse` of it equals
    `fit_sparse` of the exhaustive file at the same budget; a sample whose 2**n masks fit in
    the budget is fitted exactly, as `and_or`."""
    from test_scoring import sample_set

    from ips.fit import fit_sparse
    from ips.values_file import read_values
    from ips.scoring import score_shard

    from test_scoring import ITEMS

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
    assert len(d0) == 24 and np.array_equal(d0, sparse.design(6, 24, seed=0))
    assert np.array_equal(vp.design(1), np.arange(16)) and np.all(vp.masks[1, 16:] == -1)
    np.testing.assert_allclose(vp.v[0], vf.v[0][:, d0], atol=1e-6, rtol=0)
    np.testing.assert_allclose(vp.v[1, :, :16], vf.v[1, :, :16], atol=1e-6, rtol=0)
    assert np.all(np.isnan(vp.v[1, :, 16:]))

    a, b = fit_sparse(vp), fit_sparse(vf, budget=24)
    assert a.attrs["sampling"] == "sparse" and b.attrs["budget"] == 24
    for name in sparse.ENTRY_VARIABLES + sparse.ROW_VARIABLES:
        np.testing.assert_allclose(a[name].values, b[name].values, atol=1e-5, rtol=0,
                                   err_msg=name)
    assert list(a.complete.values[:, 0]) == [0, 1]
    g = sparse.from_arrays({k: a[k].values for k in a.data_vars}, a.n_vars.values, 1, 0)
    exact = and_or(vf.v[1, 0, :16])
    and_, or_ = sparse.to_dense(g)
    np.testing.assert_allclose(and_, exact.and_, atol=1e-9)
    np.testing.assert_allclose(or_, exact.or_, atol=1e-9)
    assert g.reliable and g.complete
    est = sparse.from_arrays({k: a[k].values for k in a.data_vars}, a.n_vars.values, 0, 1)
    assert est.n == 6 and not est.complete and est.n_fit == 24 and est.n_heldout > 0
    np.testing.assert_allclose(est.predict(d0), vp.v[0, 1], atol=1e-6)  # exact on the design


def test_metrics_of_sparse_fits(llama, tmp_path):
    """`ips metrics` (summarize) on sparse fits: with a budget of all 2**n masks every number
    equals the exhaustive run's; with a partial design the pair IPS equals `sparse.pair_ips`
    of the stored games, and the file says which estimates are reliable."""
    from test_scoring import sample_set

    from ips.fit import fit_sparse, fit_values
    from ips.files import write_dataset
    from ips.values_file import read_values
    from ips.scoring import score_shard
    from ips.metrics_file import summarize

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
    for name in set(ex.data_vars) - {"case_norm", "case_words"}:
        assert ex[name].dims == co[name].dims, name
        np.testing.assert_allclose(co[name].values, ex[name].values, atol=1e-6, err_msg=name)
    assert ex.attrs["case_sample"] and ex.attrs["case_ips"] == pytest.approx(co.attrs["case_ips"])
    sets = co["case_set"].values
    np.testing.assert_allclose(co["case_norm"].values, ex["case_norm"].values[..., sets],
                               atol=1e-6)
    assert np.all(co["case_mask"].values == ex["case_mask"].values)

    fit = xr.load_dataset(tmp_path / "partial.fit.h5", engine="h5netcdf")
    arrays = {k: fit[k].values for k in fit.data_vars}
    games = [[sparse.from_arrays(arrays, fit.n_vars.values, s, c) for c in range(2)]
             for s in range(4)]
    # a partial design: the metrics on the entries' sets equal ips.metrics on the games'
    # dense form (every interaction that is not an entry 0)
    dense = np.array([[np.stack(sparse.to_dense(g)) for g in row] for row in games])
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
