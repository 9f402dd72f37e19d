"""Null IPS (ips.analysis.nulls, fitted by ips.analysis.null_fits) against hand-computed games
and invariants, and in `ips metrics`."""

from __future__ import annotations

import json

import numpy as np
import pytest

from builders import make_values, write_pair
from ips.analysis import metrics, null_fits, nulls
from ips.analysis.interaction_types import interaction_types
from ips.analysis.summary import summarize
from ips.formats.shards import load
from ips.interactions import and_or

SWEEP = np.array([0.1, 0.2])


def exact(rows):
    res = and_or(rows, solver="exact")
    return res.and_, res.or_


def gaussian_null(v, n_games, norm, fit, level, eps, tau, sweep):
    """The Gaussian null as `ips metrics` makes it: fitted, then scored at τ."""
    fits = null_fits.gaussian_fit(v, n_games, fit, level, eps)
    return nulls.score_fits(*fits, n_games, norm, tau, sweep, "nonempty")


def matched_null(v, n_games, norm, pairs, fit, eps, tau, sweep):
    and_, or_, sigma, nv = null_fits.matched_fit(v, n_games, pairs, fit, eps)
    return nulls.matched_score(and_, or_, nv, norm, pairs, tau, sweep), sigma


def fitted_norm(v, n_vars):
    and_, or_ = null_fits.fit_games(v, n_vars, exact)
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
    and_, or_ = null_fits.fit_games(v, np.array([2, 2]), exact)
    assert np.allclose(and_[1], [0, delta / 2, 0, 1 - delta], atol=1e-9)
    norm = metrics.normalize(and_, or_, np.array([2, 2]))
    got = nulls.score_against(norm[0], norm[1], 0.1, SWEEP)
    assert got.bands[0] == pytest.approx(expected, abs=1e-12)
    assert np.isnan(got.bands[1])  # low: no set with 1 ≤ |S| ≤ ⌊2/3⌋ = 0
    assert got.bands[3] == pytest.approx(0.0, abs=1e-12)
    assert (np.isnan(got.bands[2]) if delta == 0.1 else got.bands[2] == pytest.approx(2.0))
    # τ = 0.2: 1/3 still salient for δ = 0.4
    assert got.sweep[1] == pytest.approx(expected, abs=1e-12)


def per_game(v, n_vars):
    """Each game's n (sample, condition) from its sample's."""
    return np.broadcast_to(n_vars[:, None], v.shape[:-1])


def test_without_noise_the_null_is_exactly_zero():
    """A game against itself (level 0, or ε = 0): every term |Ĩ − Ĩ| is 0."""
    rng = np.random.default_rng(1)
    v = rng.normal(size=(3, 2, 16)) * 2
    n_vars = np.array([4, 4, 3])
    v[2, :, 8:] = np.nan
    norm = fitted_norm(v, n_vars[:, None])
    eps = rng.standard_normal(v.shape)
    for level, noise in ((0.0, eps), (0.05, np.zeros_like(v))):
        got = gaussian_null(v, per_game(v, n_vars), norm, exact, level, noise, 0.1, SWEEP)
        assert np.all(got.bands[..., 0] == 0.0) and np.all(got.sweep == 0.0)
    pairs = np.array([[0, 1]])
    same = np.stack([v[:, 0], v[:, 0]], 1)
    got, sigma = matched_null(same, per_game(same, n_vars), fitted_norm(same, n_vars[:, None]), pairs,
                                    exact, rng.standard_normal((3, 2, 1, 16)), 0.1, SWEEP)
    # identical games: the slope is cov/var of the same numbers, exactly 1
    assert sigma.shape == (3, 1, 2) and np.all(sigma == 0.0)
    assert np.all(got.bands[..., 0] == 0.0)


def test_the_null_grows_with_the_noise_level():
    """Seeded: on random games the mean Gaussian null rises with the level (it is a
    measure of how much noise disturbs the salient interactions)."""
    rng = np.random.default_rng(2)
    v = rng.normal(size=(12, 1, 32)) * 2
    n_vars = np.full(12, 5)
    norm = fitted_norm(v, n_vars[:, None])
    eps = rng.standard_normal(v.shape)
    means = [np.nanmean(gaussian_null(v, per_game(v, n_vars), norm, exact, c, eps, 0.1, SWEEP)
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


def least_squares_residual(x, y):
    """sd of y − (a·x + b) at the least-squares (a, b) with a ≥ 0, by scipy's bounded-variable
    least squares (an independent solver of the same problem)."""
    from scipy.optimize import lsq_linear

    design = np.column_stack([x, np.ones_like(x)])
    a, b = lsq_linear(design, y, bounds=([0, -np.inf], [np.inf, np.inf]), method="bvls",
                      tol=1e-14).x
    return float(np.sqrt(np.mean((y - a * x - b) ** 2)))


def test_residual_size_by_hand():
    """By hand on n = 2: x = (0, 1, 2, 3) centres to (−1.5, −0.5, 0.5, 1.5), Σ = 5. y = 2x + 5:
    nothing left. y = (0, 2, 1, 3) centres to (−1.5, 0.5, −0.5, 1.5): cov 4, a = 0.8, residual
    (−0.3, 0.9, −0.9, 0.3), σ² = 1.8/4 = 0.45; the other way round the same by symmetry of
    the centred values. y = (3, 2, 1, 0): a clipped to 0, σ = sd(y) = sqrt(1.25). x = (0, 0, 1,
    1), y = (0, 1, 0, 1): uncorrelated, σ = sd(y) = 0.5."""
    x = np.array([[0.0, 1, 2, 3]] * 4)
    y = np.array([[5.0, 7, 9, 11], [0, 2, 1, 3], [3, 2, 1, 0], [0, 1, 0, 1]])
    x[3] = [0, 0, 1, 1]
    n = np.full(4, 2)
    assert np.allclose(nulls.residual_size(x, y, n), [0, np.sqrt(0.45), np.sqrt(1.25), 0.5],
                       atol=1e-12)
    assert np.allclose(nulls.residual_size(y, x, n), [0, np.sqrt(0.45), np.sqrt(1.25), 0.5],
                       atol=1e-12)
    # the raw size counts the scale and the shift that IPS cannot see: sd(x + 5) = sqrt(1.25)
    assert nulls.change_size(x[:1], y[:1], n[:1])[0] == pytest.approx(np.sqrt(1.25))


def test_residual_size_of_constant_and_padded_games():
    """A constant game explains nothing (a = 0, σ = sd of the other), and 0.1 repeated 8
    times, whose mean is not exactly 0.1, is constant too; a constant target has σ = 0.
    Entries beyond 2**n do not enter, whatever they hold."""
    y = np.random.default_rng(4).normal(size=8)
    flat = np.full(8, 0.1)
    assert nulls.residual_size(flat[None], y[None], np.array([3]))[0] == pytest.approx(
        np.std(y), rel=1e-12)
    assert nulls.residual_size(y[None], flat[None], np.array([3]))[0] == 0.0
    x = np.array([[1.0, 3.0, np.nan, np.nan], [1.0, 3.0, 7.0, -2.0]])
    y = np.array([[2.0, 0.0, 99.0, np.nan], [0.0, 4.0, np.nan, 5.0]])
    # n = 1: (1, 3) → (2, 0) falls (a = 0, σ = sd(2, 0) = 1); (1, 3) → (0, 4) is 2x − 2
    assert np.allclose(nulls.residual_size(x, y, np.array([1, 1])), [1.0, 0.0], atol=1e-12)


def test_residual_size_against_bounded_least_squares():
    """Seeded random pairs of several n, padded to 2**5, some exactly affine (a > 0), some
    reversed (a < 0): σ equals scipy's bounded least squares on the valid entries, is 0 on the
    affine ones, and both sides are the same share sqrt(1 − max(ρ, 0)²) of their own sd."""
    rng = np.random.default_rng(5)
    n_vars = np.array([1, 2, 3, 4, 5, 3, 4, 2])
    x, y = rng.normal(size=(2, 8, 32)) * rng.uniform(0.1, 10, size=(2, 8, 1))
    y[5] = 3.5 * x[5] - 7.0
    y[6] = -0.5 * x[6] + 1.0 + 0.1 * rng.normal(size=32)
    y[7] = 0.01 * x[7] + 100.0
    for k, n in enumerate(n_vars):
        x[k, 1 << n:], y[k, 1 << n:] = np.nan, rng.normal(size=32 - (1 << n))
    forward, backward = nulls.residual_size(x, y, n_vars), nulls.residual_size(y, x, n_vars)
    for k, n in enumerate(n_vars):
        xs, ys = x[k, :1 << n], y[k, :1 << n]
        assert forward[k] == pytest.approx(least_squares_residual(xs, ys), rel=1e-8, abs=1e-9)
        assert backward[k] == pytest.approx(least_squares_residual(ys, xs), rel=1e-8, abs=1e-9)
        share = np.sqrt(1 - max(np.corrcoef(xs, ys)[0, 1], 0.0) ** 2)
        assert forward[k] / ys.std() == pytest.approx(share, abs=1e-7)
        assert backward[k] / xs.std() == pytest.approx(share, abs=1e-7)
    assert np.allclose(forward[[5, 7]], 0.0, atol=1e-10) and forward[6] > 0.5 * y[6, :16].std()


def test_matched_null_gives_each_side_its_own_residual():
    """Rebuilt game by game, unpadded: side T gets v_T + σ_T·ε with σ_T the residual of v_T on
    v_T̂ (scipy's), side T̂ the other way round; each is fitted, normalised and scored
    against its own fit per band, and the null is the mean of the two sides."""
    rng = np.random.default_rng(6)
    n_vars = np.array([3, 2])
    v = rng.normal(size=(2, 2, 8))
    v[:, 1] = 2.0 * v[:, 0] + 1.0 + 0.3 * rng.normal(size=(2, 8))
    v[1, :, 4:] = np.nan
    eps = rng.standard_normal((2, 2, 1, 8))
    got, sigma = matched_null(v, per_game(v, n_vars), fitted_norm(v, n_vars[:, None]),
                                    np.array([[0, 1]]), exact, eps, 0.1, SWEEP)
    for s, n in enumerate(n_vars):
        games = v[s, 0, :1 << n], v[s, 1, :1 << n]
        sizes = least_squares_residual(games[1], games[0]), least_squares_residual(*games)
        assert sigma[s, 0] == pytest.approx(sizes, rel=1e-8)
        sides = []
        for side in (0, 1):
            own = metrics.normalize(*exact(games[side][None]))
            noisy = metrics.normalize(*exact((games[side] + sizes[side]
                                              * eps[s, side, 0, :1 << n])[None]))
            sides.append([metrics.pair_sensitivity(own, noisy, 0.1, band).value[0]
                          for band in (None, "low", "mid", "high")])
        # n = 2 has no low band: NaN on both sides, and in the mean
        expected = [c[np.isfinite(c)].mean() if np.isfinite(c).any() else np.nan
                    for c in np.array(sides).T]
        assert np.allclose(got.bands[s, 0], expected, atol=1e-9, equal_nan=True)


def test_an_affine_change_has_no_matched_null():
    """v_T̂ = a·v_T + b with a > 0: nothing is left after the affine map, so neither side
    gets noise to speak of (rounding) and the null is 0, where the raw sd(Δv) is not 0."""
    rng = np.random.default_rng(7)
    v = rng.normal(size=(3, 2, 16))
    a = np.array([0.2, 3.0, 40.0])
    v[:, 1] = a[:, None] * v[:, 0] + np.array([[-1.0], [5.0], [0.0]])
    n_vars = np.full(3, 4)
    got, sigma = matched_null(v, per_game(v, n_vars), fitted_norm(v, n_vars[:, None]),
                                    np.array([[0, 1]]), exact,
                                    rng.standard_normal((3, 2, 1, 16)), 0.1, SWEEP)
    assert np.all(sigma < 1e-12 * np.nanmax(np.abs(v)))
    assert np.nanmax(got.bands) < 1e-9
    # the raw size: sd((a − 1)·v_T + b) = |a − 1|·sd(v_T)
    assert np.allclose(nulls.change_size(v[:, 0], v[:, 1], n_vars),
                       np.abs(a - 1) * v[:, 0].std(-1), rtol=1e-12)


def test_ceiling_partners_form_a_seeded_ring_per_n():
    """Each sample is paired with min(K, m − 1) others of its own n (m of them), never itself
    nor twice; the pairing is a ring (partner d is partner 1 applied d times, and partner 1
    runs through all m samples of that n before it comes back), so each sample is a partner
    as often as it has partners; alone in its n, a sample has none. Seeded: the same seed
    pairs alike, another seed (here) otherwise."""
    k = nulls.CEILING_PARTNERS
    n_vars = np.array([3] * 9 + [4] * 3 + [5])
    got = nulls.ceiling_partners(n_vars, seed=0)
    assert got.shape == (13, k) and np.array_equal(got, nulls.ceiling_partners(n_vars, 0))
    assert not np.array_equal(got, nulls.ceiling_partners(n_vars, 1))
    assert np.all(got[12] == -1)
    for n, m in ((3, 9), (4, 3)):
        same = np.flatnonzero(n_vars == n)
        rows = got[same]
        used = min(k, m - 1)
        assert np.all(rows[:, used:] == -1) and np.all(np.isin(rows[:, :used], same))
        assert all(len(set(r[:used])) == used and s not in r for s, r in zip(same, rows))
        for d in range(1, used):
            assert np.array_equal(rows[:, d], got[rows[:, d - 1], 0])
        walk, seen = same[0], []
        for _ in range(m):
            walk = got[walk, 0]
            seen.append(walk)
        assert sorted(seen) == sorted(same) and walk == same[0]
        assert np.all(np.bincount(rows[:, :used].ravel(), minlength=13)[same] == used)


def _hand_games() -> np.ndarray:
    """Normalised games of n = 2 (sample, condition T/T̂, kind, mask), set by hand for the
    ceiling's tests; sample 2 has n = 1 (padded)."""
    nan = np.nan
    norm = np.zeros((3, 2, 2, 4))
    norm[..., 0] = nan
    norm[0, 0, 0, 1], norm[0, 0, 1, 3] = 1.0, 0.5
    norm[1, 1, 0, 1], norm[1, 1, 1, 3] = 0.5, -0.5
    norm[1, 0, 0, 2] = 1.0
    norm[0, 1, 0, 2] = 0.2
    norm[2, :, :, 2:] = nan
    norm[2, :, 0, 1] = [1.0, -1.0]
    return norm


def test_ceiling_by_hand():
    """Normalised games of n = 2 set by hand, one pair (T, T̂), samples 0 and 1 each other's
    partner. Sample 0: Ĩ_T of 0 has AND{1} = 1, OR{1,2} = 0.5; Ĩ_T̂ of 1 has AND{1} = 0.5,
    OR{1,2} = −0.5: terms 0.5/0.75 = 2/3 (mid band: singletons) and 1/0.5 = 2 (high band),
    ips 4/3. Sample 1: Ĩ_T of 1 has AND{2} = 1, Ĩ_T̂ of 0 AND{2} = 0.2: one term 0.8/0.6 =
    4/3 (mid). Sample 2 (n = 1, padded) has no partner: NaN. No band low at n ≤ 2."""
    nan = np.nan
    norm = _hand_games()
    got = nulls.ceiling(norm, np.array([[1], [0], [-1]]), np.array([[0, 1]]), 0.1)
    assert np.allclose(got[:, 0], [[4 / 3, nan, 2 / 3, 2.0], [4 / 3, nan, 4 / 3, nan],
                                   [nan] * 4], equal_nan=True)


def test_ceiling_types_by_hand():
    """The games of `test_ceiling_by_hand`: sample 0 against sample 1 has AND{1} 1 vs 0.5
    (same sign, ratio 2: similar) and OR{1,2} 0.5 vs −0.5 (opposite); sample 1 against
    sample 0 has AND{2} 1 vs 0.2 (same sign, ratio 5: a different effect); sample 2 has no
    partner. Types in the order opposite, different, similar."""
    norm = _hand_games()
    got = nulls.ceiling_types(norm, np.array([[1], [0], [-1]]), np.array([[0, 1]]), 0.1)
    assert got[:, 0].tolist() == [[1, 0, 1], [0, 1, 0], [0, 0, 0]]


def test_ceiling_is_the_mean_over_partners_of_the_pair_ips():
    """Seeded random fitted games of two n: the ceiling of each (sample, pair, band) equals a
    loop over its partners of pair_sensitivity(Ĩ_T of s, Ĩ_T̂ of s'), nan-averaged."""
    rng = np.random.default_rng(8)
    n_vars = np.array([3, 3, 4, 3, 4, 3, 3, 4])
    v = rng.normal(size=(8, 3, 16))
    for s, n in enumerate(n_vars):
        v[s, :, 1 << n:] = np.nan
    norm = fitted_norm(v, n_vars[:, None])
    pairs = metrics.all_pairs(3)
    partners = nulls.ceiling_partners(n_vars, seed=2)
    got = nulls.ceiling(norm, partners, pairs, 0.1)
    for s in range(8):
        for p, (i, j) in enumerate(pairs):
            for b, band in enumerate((None, "low", "mid", "high")):
                vals = [metrics.pair_sensitivity(norm[s, i], norm[o, j], 0.1, band).value
                        for o in partners[s] if o >= 0]
                vals = [x for x in vals if np.isfinite(x)]
                want = np.mean(vals) if vals else np.nan
                assert np.allclose(got[s, p, b], want, atol=1e-12, equal_nan=True)
    assert np.nanmean(got[..., 0]) > 0.5  # unrelated games: far apart


def test_noise_is_per_sample_and_seeded():
    """A sample's noise depends on its id, the seed and the stream, not on its neighbours
    (so sharding cannot change a null), and is standard normal."""
    one = null_fits.standard_noise(["a", "b"], (3, 8), 0, 1, 7)
    again = null_fits.standard_noise(["b", "c", "a"], (3, 8), 0, 1, 7)
    assert np.array_equal(one[0], again[2]) and np.array_equal(one[1], again[0])
    assert not np.array_equal(one, null_fits.standard_noise(["a", "b"], (3, 8), 1, 1, 7))
    assert not np.array_equal(one, null_fits.standard_noise(["a", "b"], (3, 8), 0, 2, 7))
    big = null_fits.standard_noise(["x"], (20000,), 0, 1)
    assert abs(big.mean()) < 0.03 and abs(big.std() - 1) < 0.03
    v = np.zeros((1, 2, 8))
    v[0, 1, 4:] = np.nan
    moved = null_fits.perturb(v, np.array([[3, 2]]), np.array([[2.0, 0.5]]), np.ones_like(v))
    assert np.array_equal(moved[0, 0], np.full(8, 2.0))
    assert np.array_equal(moved[0, 1, :4], np.full(4, 0.5)) and np.all(np.isnan(moved[0, 1, 4:]))


def test_fitter_follows_the_fit_file():
    v = np.random.default_rng(3).normal(size=(2, 8))
    for attrs, kwargs in (({"solver_requested": "exact", "noise": 0.0}, {"solver": "exact"}),
                          ({"solver_requested": "sgd", "noise": 0.0, "sgd_learning_rate": 1e-3,
                            "sgd_steps": 50}, {"solver": "sgd", "learning_rate": 1e-3,
                                               "steps": 50})):
        and_, or_ = null_fits.fitter(attrs)(v)
        ref = and_or(v, **kwargs)
        assert np.allclose(and_, ref.and_) and np.allclose(or_, ref.or_)


def test_variant_null_of_the_planted_game_by_hand():
    """v = AND{1,2} in one precision, v({1}) moved by 0.4 in the other (the planted game
    above): ips 4/3; salient sets {AND{1,2}} and {AND{1,2}, AND{1}, OR{1}}: Jaccard 1/3;
    |Δv| = (0, 0.4, 0, 0); sd(Δv) = sqrt(0.03) over a range of 1."""
    v = np.array([[[0.0, 0.0, 0.0, 1.0]]])
    half = np.array([[[0.0, 0.4, 0.0, 1.0]]])
    n_vars = np.array([2])
    got = nulls.variant_null(v, half, per_game(v, n_vars), fitted_norm(v, n_vars[:, None]),
                               fitted_norm(half, n_vars[:, None]), 0.1, SWEEP)
    assert got.game.bands[0, 0, 0] == pytest.approx(4 / 3, abs=1e-12)
    assert got.jaccard[0, 0] == pytest.approx(1 / 3)
    assert np.allclose(np.sort(got.abs_dv), [0, 0, 0, 0.4])
    assert got.dv_rel[0, 0] == pytest.approx(np.sqrt(0.03))
    same = nulls.variant_null(v, v, per_game(v, n_vars), fitted_norm(v, n_vars[:, None]),
                                fitted_norm(v, n_vars[:, None]), 0.1, SWEEP)
    assert same.game.bands[0, 0, 0] == 0.0 and same.jaccard[0, 0] == 1.0
    assert nulls.nan_median(np.array([np.nan, 1.0, 3.0])) == 2.0
    assert np.isnan(nulls.nan_median(np.array([np.nan])))


def test_metrics_file_holds_the_ceiling_and_both_sizes(tmp_path):
    """`ips metrics` with nulls on fitted random values (9 samples, n 3..4, the 0-shot group of
    5 templates and the 1-shot group of 2): per sample and group the ceiling is the mean over
    the group's pairs of the mean over the sample's partners (sorted ids) of the pair IPS of
    the files' own interactions, with the group mean over samples and its n; each pair keeps
    its raw sd(v_b − v_a) and gets the two residual sizes of scipy's bounded least squares."""
    ds = make_values([f"q{i}" for i in range(9)], seed=9, n_max=4)
    v, f = write_pair(tmp_path, "m", ds)
    out = summarize([v], [f], tau=0.1, tau_sweep=[0.1], n_boot=50,
                    null=nulls.Settings((0.01,), 1, True, seed=4))
    merged = load([v], [f])
    order = np.argsort(merged.samples.astype(str))
    x = merged.v[order]
    n_vars = merged.n_vars[order]
    norm = metrics.normalize(merged.and_, merged.or_, merged.n_vars[:, None])[order]
    partners = nulls.ceiling_partners(n_vars, 4)
    assert out["sample"].values.tolist() == merged.samples[order].astype(str).tolist()
    for group in out["group"].values:
        idx = merged.group_conditions(str(group))
        want = np.full(9, np.nan)
        for s in range(9):
            per_pair = []
            for i, j in metrics.all_pairs(idx.size):
                cells = [metrics.pair_sensitivity(norm[s, idx[i]], norm[o, idx[j]], 0.1).value
                         for o in partners[s] if o >= 0]
                cells = [c for c in cells if np.isfinite(c)]
                if cells:
                    per_pair.append(np.mean(cells))
            want[s] = np.mean(per_pair) if per_pair else np.nan
        got = out["sample_ceiling_ips"].sel(group=group, band="all").values
        assert np.allclose(got, want, atol=1e-12, equal_nan=True)
        assert float(out["ceiling_ips"].sel(group=group, band="all")) == pytest.approx(
            np.nanmean(want))
        assert int(out["ceiling_n_valued"].sel(group=group, band="all")) == np.isfinite(
            want).sum()
        types = sum(interaction_types(norm[s, idx[i]], norm[o, idx[j]], 0.1)
                    for s in range(9) for i, j in metrics.all_pairs(idx.size)
                    for o in partners[s] if o >= 0)
        assert out["ceiling_type_count"].sel(group=group).values.tolist() == list(types)
    pair_a = [list(merged.conditions["condition"]).index(c) for c in out["pair_a"].values]
    pair_b = [list(merged.conditions["condition"]).index(c) for c in out["pair_b"].values]
    for s, n in enumerate(n_vars):
        for p, (i, j) in enumerate(zip(pair_a, pair_b)):
            va, vb = x[s, i, :1 << n], x[s, j, :1 << n]
            assert float(out["sample_pair_change"][s, p]) == pytest.approx(np.std(vb - va))
            assert out["sample_pair_residual_change"][s, p].values == pytest.approx(
                [least_squares_residual(vb, va), least_squares_residual(va, vb)], rel=1e-8)
    assert out["pair_side"].values.tolist() == ["a", "b"]
    assert "ceiling" in json.loads(out.attrs["null"])
