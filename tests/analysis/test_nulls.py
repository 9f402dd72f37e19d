"""Null IPS (ips.analysis.nulls) against hand-computed games and invariants, and in `ips
metrics`."""

from __future__ import annotations

import numpy as np
import pytest

from ips.analysis import metrics, nulls
from ips.interactions import and_or

SWEEP = np.array([0.1, 0.2])


def exact(rows):
    res = and_or(rows, solver="exact")
    return res.and_, res.or_


def fitted_norm(v, n_vars):
    and_, or_ = nulls.fit_games(v, n_vars, exact)
    return metrics.normalize(and_, or_, n_vars)


@pytest.mark.parametrize("delta,expected", [(0.1, 0.0), (0.4, 4 / 3)])
def test_planted_game_null_by_hand(delta, expected):
    """v = AND{1,2} (v(N) = 1, else 0); the perturbation moves v({1}) by δ. By hand, the
    perturbed optimum is AND{1} = OR{1} = δ/2, AND{1,2} = 1 − δ (ℓ1 = 1, any other split
    costs more), so Ĩ(AND{1}) = Ĩ(OR{1}) = δ/(2(1 − δ)). At τ = 0.1 those are salient only for
    δ = 0.4 (1/3), and then U = {AND{1,2}, AND{1}, OR{1}} with terms 0, 2, 2: ips = 4/3; for
    δ = 0.1 (0.056) U = {AND{1,2}} and ips = 0. In the bands (n = 2): low is empty, mid
    (the singletons) 2 or no value, high (AND{1,2}) 0."""
    v = np.array([[0.0, 0.0, 0.0, 1.0], [0.0, delta, 0.0, 1.0]])
    and_, or_ = nulls.fit_games(v, np.array([2, 2]), exact)
    assert np.allclose(and_[1], [0, delta / 2, 0, 1 - delta], atol=1e-9)
    norm = metrics.normalize(and_, or_, np.array([2, 2]))
    got = nulls.score_against(norm[0], norm[1], 0.1, SWEEP)
    assert got.bands[0] == pytest.approx(expected, abs=1e-12)
    assert np.isnan(got.bands[1])  # low: no set with 1 ≤ |S| ≤ ⌊2/3⌋ = 0
    assert got.bands[3] == pytest.approx(0.0, abs=1e-12)
    assert (np.isnan(got.bands[2]) if delta == 0.1 else got.bands[2] == pytest.approx(2.0))
    # τ = 0.2: 1/3 still salient for δ = 0.4
    assert got.sweep[1] == pytest.approx(expected, abs=1e-12)


def test_without_noise_the_null_is_exactly_zero():
    """A game against itself (level 0, or ε = 0): every term |Ĩ − Ĩ| is 0."""
    rng = np.random.default_rng(1)
    v = rng.normal(size=(3, 2, 16)) * 2
    n_vars = np.array([4, 4, 3])
    v[2, :, 8:] = np.nan
    norm = fitted_norm(v, n_vars[:, None])
    eps = rng.standard_normal(v.shape)
    for level, noise in ((0.0, eps), (0.05, np.zeros_like(v))):
        got = nulls.gaussian_null(v, n_vars, norm, exact, level, noise, 0.1, SWEEP)
        assert np.all(got.bands[..., 0] == 0.0) and np.all(got.sweep == 0.0)
    pairs = np.array([[0, 1]])
    same = np.stack([v[:, 0], v[:, 0]], 1)
    got, sigma = nulls.matched_null(same, n_vars, fitted_norm(same, n_vars[:, None]), pairs,
                                    exact, rng.standard_normal((3, 2, 1, 16)), 0.1, SWEEP)
    assert np.all(sigma == 0.0) and np.all(got.bands[..., 0] == 0.0)


def test_the_null_grows_with_the_noise_level():
    """Seeded: on random games the mean Gaussian null rises with the level (it is a
    measure of how much noise disturbs the salient interactions)."""
    rng = np.random.default_rng(2)
    v = rng.normal(size=(12, 1, 32)) * 2
    n_vars = np.full(12, 5)
    norm = fitted_norm(v, n_vars[:, None])
    eps = rng.standard_normal(v.shape)
    means = [np.nanmean(nulls.gaussian_null(v, n_vars, norm, exact, c, eps, 0.1, SWEEP)
                        .bands[..., 0]) for c in (0.001, 0.01, 0.1)]
    assert 0 < means[0] < means[1] < means[2]


def test_change_size_and_range_by_hand():
    a = np.array([[0.0, 1.0, 2.0, 3.0], [1.0, 1.0, np.nan, np.nan]])
    b = np.array([[5.0, 6.0, 7.0, 8.0], [1.0, 3.0, np.nan, np.nan]])
    n_vars = np.array([2, 1])
    # a pure shift is no change; on n = 1, Δv = (0, 2): sd 1
    assert np.allclose(nulls.change_size(a, b, n_vars), [0.0, 1.0])
    assert np.allclose(nulls.game_range(a, n_vars), [3.0, 0.0])
    assert np.allclose(nulls.game_range(b, n_vars), [3.0, 2.0])


def test_noise_is_per_sample_and_seeded():
    """A sample's noise depends on its id, the seed and the stream, not on its neighbours
    (so sharding cannot change a null), and is standard normal."""
    one = nulls.standard_noise(["a", "b"], (3, 8), 0, 1, 7)
    again = nulls.standard_noise(["b", "c", "a"], (3, 8), 0, 1, 7)
    assert np.array_equal(one[0], again[2]) and np.array_equal(one[1], again[0])
    assert not np.array_equal(one, nulls.standard_noise(["a", "b"], (3, 8), 1, 1, 7))
    assert not np.array_equal(one, nulls.standard_noise(["a", "b"], (3, 8), 0, 2, 7))
    big = nulls.standard_noise(["x"], (20000,), 0, 1)
    assert abs(big.mean()) < 0.03 and abs(big.std() - 1) < 0.03
    v = np.zeros((1, 2, 8))
    v[0, 1, 4:] = np.nan
    moved = nulls.perturb(v, np.array([[3, 2]]), np.array([[2.0, 0.5]]), np.ones_like(v))
    assert np.array_equal(moved[0, 0], np.full(8, 2.0))
    assert np.array_equal(moved[0, 1, :4], np.full(4, 0.5)) and np.all(np.isnan(moved[0, 1, 4:]))


def test_fitter_follows_the_fit_file():
    v = np.random.default_rng(3).normal(size=(2, 8))
    for attrs, kwargs in (({"solver_requested": "exact", "noise": 0.0}, {"solver": "exact"}),
                          ({"solver_requested": "sgd", "noise": 0.0, "sgd_learning_rate": 1e-3,
                            "sgd_steps": 50}, {"solver": "sgd", "learning_rate": 1e-3,
                                               "steps": 50})):
        and_, or_ = nulls.fitter(attrs)(v)
        ref = and_or(v, **kwargs)
        assert np.allclose(and_, ref.and_) and np.allclose(or_, ref.or_)


def test_precision_null_of_the_planted_game_by_hand():
    """v = AND{1,2} in one precision, v({1}) moved by 0.4 in the other (the planted game
    above): ips 4/3; salient sets {AND{1,2}} and {AND{1,2}, AND{1}, OR{1}}: Jaccard 1/3;
    |Δv| = (0, 0.4, 0, 0); sd(Δv) = sqrt(0.03) over a range of 1."""
    v = np.array([[[0.0, 0.0, 0.0, 1.0]]])
    half = np.array([[[0.0, 0.4, 0.0, 1.0]]])
    n_vars = np.array([2])
    got = nulls.precision_null(v, half, n_vars, fitted_norm(v, n_vars[:, None]),
                               fitted_norm(half, n_vars[:, None]), 0.1, SWEEP)
    assert got.game.bands[0, 0, 0] == pytest.approx(4 / 3, abs=1e-12)
    assert got.jaccard[0, 0] == pytest.approx(1 / 3)
    assert np.allclose(np.sort(got.abs_dv), [0, 0, 0, 0.4])
    assert got.dv_rel[0, 0] == pytest.approx(np.sqrt(0.03))
    same = nulls.precision_null(v, v, n_vars, fitted_norm(v, n_vars[:, None]),
                                fitted_norm(v, n_vars[:, None]), 0.1, SWEEP)
    assert same.game.bands[0, 0, 0] == 0.0 and same.jaccard[0, 0] == 1.0
    assert nulls.nan_median(np.array([np.nan, 1.0, 3.0])) == 2.0
    assert np.isnan(nulls.nan_median(np.array([np.nan])))
