"""ips.analysis.sparse_metrics: the metrics of sparse estimates equal the dense ones."""

from __future__ import annotations

import numpy as np
import pytest

import reference
from builders import sparse_game
from ips.analysis import interaction_types, sparse_metrics
from ips.analysis.layout import band_of
from ips.analysis.metrics import normalize, pair_sensitivity, salient
from ips.interactions import reconstruct, sparse
from reference import order_bands


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
        assert np.array_equal(sparse_metrics.normalize(e), dense_vals)
        for tau in (0.05, 0.1, 0.3):
            dense_sal = salient(nm, tau)
            assert np.array_equal(sparse_metrics.salient(e, tau), np.r_[dense_sal[0, 1:], dense_sal[1, 1:]])
    for tau in (0.05, 0.1, 0.3):
        for band in (None, "low", "mid", "high"):
            want = float(pair_sensitivity(norms[0], norms[1], tau, band).value)
            got = sparse_metrics.pair_ips(ents[0], ents[1], tau, band)
            if np.isnan(want):
                assert np.isnan(got)
            else:
                assert got == pytest.approx(want, rel=1e-12, abs=1e-15)


def test_sparse_metrics_of_an_estimate_match_its_dense_form():
    """Entries without the zeros: Min = 0 (a missing interaction is 0), as in the dense array."""
    x, y, v = sparse_game(8, 5, (2, 3), seed=8)
    x2, y2, v2 = sparse_game(8, 5, (1, 3), seed=9)
    ests = [sparse.estimate(np.arange(256), w, 8, holdout=0) for w in (v, v2)]
    dense = [reference.to_dense(e) for e in ests]
    norms = [normalize(a, o) for a, o in dense]
    for e, nm in zip(ests, norms):
        assert np.allclose(sparse_metrics.normalize(e), nm[e.kinds.astype(int), e.masks], atol=1e-15)
        assert sparse_metrics.salient(e).sum() == salient(nm).sum()
    for band in (None, "low", "mid", "high"):
        want = float(pair_sensitivity(norms[0], norms[1], 0.1, band).value)
        got = sparse_metrics.pair_ips(ests[0], ests[1], 0.1, band)
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
    kept-top surrogate on samples of different n equal `ips.analysis.metrics` on the padded 2^n_max
    axis of the games' dense form; among them a complete game (Min > 0), a sample whose
    games have no entry (constant v) and entries of value 0 and tied values."""
    from ips.analysis import diagnostics, metrics

    rng = np.random.default_rng(3)
    games = [[random_game(n, k, rng) for k in (12, 30, 5)] for n in (5, 7, 6)]
    games[0][1] = sparse.from_dense(*rng.normal(size=(2, 1 << 5)))  # every (kind, S)
    games.append([random_game(4, 0, rng) for _ in range(3)])
    norm, layout = sparse_metrics.entry_grid(games)
    dense = np.full((4, 3, 2, 1 << 7), np.nan)
    for s, row in enumerate(games):
        for c, g in enumerate(row):
            dense[s, c, :, :1 << g.n] = reference.to_dense(g)
    ref = normalize(dense[:, :, 0], dense[:, :, 1])
    taus = np.array([0.05, 0.1, 0.3])
    for band in (None, "low", "mid", "high"):
        got, want = (metrics.ips(x, tau=taus, band=band, layout=lay)
                     for x, lay in ((norm, layout), (ref, None)))
        np.testing.assert_allclose(got.per_pair, want.per_pair, rtol=1e-12, err_msg=band)
        np.testing.assert_array_equal(got.n_union, want.n_union)
    pred = rng.integers(0, 2, size=(4, 3))
    got, want = (interaction_types.interaction_type_shares(x, pred, tau=taus, layout=lay)
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
            a, o = diagnostics.keep_top(*reference.to_dense(g), share)
            np.testing.assert_allclose(sparse_metrics.keep_top(g, share).predict(np.arange(1 << g.n)),
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
