"""ips.analysis.uncertainty: bootstrap intervals, the paired sign-flip test and Holm (fixed
seeds)."""

import math

import numpy as np
import pytest

from ips.analysis import uncertainty as u


def test_counts_are_seeded_and_sum_to_the_sample_count():
    w = u.resample_counts(7, 50, seed=3)
    assert w.shape == (50, 7) and np.all(w.sum(axis=1) == 7)
    np.testing.assert_array_equal(w, u.resample_counts(7, 50, seed=3))
    assert not np.array_equal(w, u.resample_counts(7, 50, seed=4))


def test_replicate_means_equal_explicit_resampling():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(9, 3))
    x[2, 1] = np.nan
    w = u.resample_counts(9, 20, seed=1)
    got = u.replicate_means(x, w)
    for b in range(20):
        idx = np.repeat(np.arange(9), w[b].astype(int))
        cols = [np.nanmean(x[idx, k]) for k in range(3)]
        assert got[b] == pytest.approx(np.nanmean(cols))
    assert u.point_mean(x) == pytest.approx(np.mean([np.nanmean(x[:, k]) for k in range(3)]))


def test_interval_contains_the_estimate_and_shrinks_with_more_samples():
    rng = np.random.default_rng(5)
    widths = []
    for n in (20, 200, 2000):
        x = rng.uniform(1.0, 2.0, size=n)
        x[::7] = np.nan  # samples without a value are ignored
        est, ci = u.bootstrap_ci(x, n_boot=1000, seed=0)
        assert est == pytest.approx(np.nanmean(x))
        assert ci[0] <= est <= ci[1]
        widths.append(ci[1] - ci[0])
    assert widths[0] > widths[1] > widths[2]
    # 95% interval of a mean of U(1, 2): about 2 * 1.96 * 0.289 / sqrt(n)
    assert widths[2] == pytest.approx(2 * 1.96 * 0.2887 / np.sqrt(2000 * 6 / 7), rel=0.2)


def test_interval_is_deterministic_and_per_trailing_axis():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(30, 1, 4))  # (sample, column, band)
    est, ci = u.bootstrap_ci(x, n_boot=300, seed=9)
    est2, ci2 = u.bootstrap_ci(x, n_boot=300, seed=9)
    np.testing.assert_array_equal(ci, ci2)
    assert est.shape == (4,) and ci.shape == (4, 2)
    assert np.all((ci[:, 0] <= est) & (est <= ci[:, 1]))


def test_no_value_gives_nan():
    est, ci = u.bootstrap_ci(np.full(5, np.nan), n_boot=50)
    assert np.isnan(est) and np.isnan(ci).all()


def test_paired_test_finds_a_planted_difference():
    rng = np.random.default_rng(11)
    base = rng.uniform(1.2, 1.8, size=60)  # per-sample IPS of B
    a = base * 0.9 + rng.normal(scale=0.02, size=60)  # A is 10% lower, per sample
    res = u.paired_test(a, base, n_boot=2000, seed=0)
    assert res.delta == pytest.approx((a.mean() - base.mean()) / base.mean())
    assert res.delta_ci[1] < 0 and res.delta_ci[0] <= res.delta <= res.delta_ci[1]
    assert res.ci_a[0] <= res.ips_a <= res.ci_a[1]


def test_paired_test_finds_nothing_where_there_is_nothing():
    rng = np.random.default_rng(12)
    base = rng.uniform(1.2, 1.8, size=60)
    b = base + rng.normal(scale=0.05, size=60)  # same mean, sample noise only
    a = base + rng.normal(scale=0.05, size=60)
    res = u.paired_test(a, b, n_boot=2000, seed=0)
    assert res.delta_ci[0] < 0 < res.delta_ci[1]


def test_pairing_matters():
    """Large between-sample spread, small within-pair change: the paired test sees it."""
    rng = np.random.default_rng(13)
    base = rng.uniform(0.5, 2.0, size=40)
    a = base * 0.97
    assert u.paired_test(a, base, n_boot=1000, seed=1).delta_ci[1] < 0


def test_paired_test_with_columns_and_bands():
    rng = np.random.default_rng(14)
    b = rng.uniform(1.0, 2.0, size=(50, 2, 4))  # two pairs, four bands
    a = b.copy()
    a[..., 3] *= 1.2  # only the last band differs
    res = u.paired_test(a, b, n_boot=1000, seed=2)
    assert res.delta.shape == (4,) and res.delta_ci.shape == (4, 2)
    assert res.delta_ci[3, 0] > 0 and np.all(res.delta_ci[:3] == 0.0)
    np.testing.assert_allclose(res.delta[:3], 0.0)
    with pytest.raises(ValueError):
        u.paired_test(a, b[:10], n_boot=10)


# ----------------------------------------------------------------------- sign-flip test


def test_exact_sign_flip_by_hand():
    # d = [1, 2, 3, 4]: |Σ ε d| ≥ 10 only for ε = ±(1, 1, 1, 1): 2 of 16
    r = u.sign_flip_test([1.0, 2.0, 3.0, 4.0])
    assert (r.p_value, r.n, r.method, r.draws) == (2 / 16, 4, "exact", 16)
    assert r.mean_difference == 2.5
    # d = [1, -2, 3, 4], Σ = 6: the sums ±1 ±2 ±3 ±4 with |sum| ≥ 6 are 10, 8, 6 and their
    # negatives (flip none, flip the 1, flip the -2 back to +2): 6 of 16
    sums = [abs(a * 1 + b * -2 + c * 3 + e * 4) for a in (1, -1) for b in (1, -1)
            for c in (1, -1) for e in (1, -1)]
    assert sum(s >= 6 for s in sums) == 6
    assert u.sign_flip_test([1.0, -2.0, 3.0, 4.0]).p_value == 6 / 16
    # three positive differences: the smallest p three samples can give
    assert u.sign_flip_test([0.1, 0.2, 0.3]).p_value == 0.25


def test_nan_dropped_zeros_kept_ties_counted():
    r = u.sign_flip_test([1.0, np.nan, 2.0, 3.0, 4.0, np.nan])
    assert (r.p_value, r.n) == (2 / 16, 4)
    # a zero difference counts as a sample but does not change the exact p
    z = u.sign_flip_test([1.0, 2.0, 3.0, 4.0, 0.0])
    assert (z.p_value, z.n) == (2 / 16, 5)
    # all zeros: every sign vector ties with the observed 0
    assert u.sign_flip_test(np.zeros(6)).p_value == 1.0
    # a mean that is 0 up to rounding (0.1 + 0.2 + 0.3 − 0.6 = 1e-16) ties with everything
    assert u.sign_flip_test([0.1, 0.2, 0.3, -0.6]).p_value == 1.0
    none = u.sign_flip_test([np.nan, np.nan])
    assert np.isnan(none.p_value) and none.n == 0 and none.method == "none"
    assert np.isnan(u.sign_flip_test([]).p_value)


def test_exact_and_monte_carlo_agree_and_mc_is_b_plus_one_over_b_plus_one():
    d = np.random.default_rng(3).normal(0.4, 1.0, size=12)
    exact = u.sign_flip_test(d)
    mc = u.sign_flip_test(d, draws=20000, seed=1, exact_max=0)
    assert exact.method == "exact" and mc.method == "monte carlo" and mc.draws == 20000
    # binomial standard error of the MC estimate at this p is < 0.004
    assert mc.p_value == pytest.approx(exact.p_value, abs=0.015)
    # the MC p is (b + 1)/(B + 1) with b counted here independently, with the same signs
    B = 500
    signs = 1.0 - 2.0 * np.random.default_rng(7).integers(0, 2, size=(B, d.size))
    b = int(np.sum(np.abs(signs @ d) >= abs(d.sum()) - 1e-9))
    assert u.sign_flip_test(d, draws=B, seed=7, exact_max=0).p_value == (b + 1) / (B + 1)
    # never 0, even when no draw reaches the observed statistic
    far = u.sign_flip_test(np.full(40, 5.0), draws=99, seed=0)
    assert far.p_value == 1 / 100 and far.method == "monte carlo"


def test_sign_flip_is_calibrated_under_h0():
    rng = np.random.default_rng(2024)
    p = np.array([u.sign_flip_test(rng.standard_t(3, size=8)).p_value for _ in range(400)])
    # exact test: P(p ≤ 0.05) ≤ 0.05; 400 draws, 3 binomial standard errors ≈ 0.033
    assert np.mean(p <= 0.05) <= 0.05 + 0.033
    assert np.mean(p <= 0.5) == pytest.approx(0.5, abs=0.1)  # not trivially conservative


def test_sign_flip_is_invariant_to_sample_order_when_exact():
    d = np.random.default_rng(5).normal(size=10)
    assert u.sign_flip_test(d).p_value == u.sign_flip_test(d[::-1]).p_value
    assert u.sign_flip_test(d).p_value == u.sign_flip_test(-d).p_value
    assert u.sign_flip_label(10) == "sign-flip exact" and u.sign_flip_label(17) == "sign-flip MC"
    assert u.sign_flip_label(0) == ""


def test_holm_by_hand():
    p = [0.01, 0.04, np.nan, 0.03]
    # sorted finite: 0.01·3 = 0.03, 0.03·2 = 0.06, max(0.06, 0.04·1) = 0.06
    np.testing.assert_allclose(u.holm(p), [0.03, 0.06, np.nan, 0.06])
    np.testing.assert_allclose(u.holm([0.5, 0.6, 0.02]), [1.0, 1.0, 0.06])  # capped at 1
    assert np.isnan(u.holm([np.nan])).all()
    q = u.holm(np.random.default_rng(0).uniform(size=20))
    assert np.all(np.diff(q[np.argsort(np.random.default_rng(0).uniform(size=20))]) >= 0)


@pytest.mark.parametrize("m", [6, 8, 11, 20])
def test_interval_is_the_set_the_sign_flip_test_does_not_reject(m):
    """Brute force: just inside each bound the test of d − θ gives p ≥ α, just outside
    p < α (exact for m ≤ 16, the same Monte Carlo sign vectors beyond)."""
    d = np.random.default_rng(m).normal(0.4, 1.0, size=m)
    ci = u.sign_flip_interval(d, draws=999, seed=3)
    assert ci.low < d.mean() < ci.high and ci.n == m
    width = ci.high - ci.low
    for bound, inward in ((ci.low, +1), (ci.high, -1)):
        inside = u.sign_flip_test(d - (bound + inward * 1e-7 * width), draws=999, seed=3)
        outside = u.sign_flip_test(d - (bound - inward * 1e-7 * width), draws=999, seed=3)
        assert inside.p_value >= 0.05 > outside.p_value


def test_ratio_interval_inverts_the_test_of_a_minus_scaled_b():
    """θ = ΣA/ΣB − 1: at each bound the test of A − (1+θ)·B changes its decision, and the
    interval holds the pooled ratio."""
    rng = np.random.default_rng(4)
    b = rng.uniform(1.0, 1.8, size=10)
    a = 0.85 * b + rng.normal(0, 0.05, size=10)
    ci = u.sign_flip_interval(a - b, b)
    assert ci.low < a.sum() / b.sum() - 1 < ci.high < 0
    for bound, inward in ((ci.low, +1), (ci.high, -1)):
        p_in = u.sign_flip_test(a - (1 + bound + inward * 1e-9) * b).p_value
        p_out = u.sign_flip_test(a - (1 + bound - inward * 1e-9) * b).p_value
        assert p_in >= 0.05 > p_out


def test_interval_and_test_agree_about_zero():
    """Over many seeded data sets, small and large, with ties and zeros: the interval
    excludes 0 exactly when the test's p is below α."""
    rng = np.random.default_rng(9)
    for i in range(300):
        m = int(rng.integers(1, 24))
        d = rng.normal(rng.uniform(-1, 1), 1.0, size=m)
        if i % 5 == 0:
            d = np.round(d, 1)  # ties
        w = rng.uniform(0.5, 2.0, size=m) if i % 2 else None
        ci = u.sign_flip_interval(d, w, draws=499, seed=i)
        assert (ci.p_zero < 0.05) == (not ci.low <= 0 <= ci.high), (i, d, ci)
        assert ci.p_zero == u.sign_flip_test(d, draws=499, seed=i).p_value


def test_interval_is_unbounded_where_the_test_cannot_reject():
    """n ≤ 5: the exact test's smallest p is 2/2^n ≥ 0.05, so no θ is rejected; NaN without
    data or with a non-positive weight."""
    for m in (1, 3, 5):
        ci = u.sign_flip_interval(np.arange(1.0, m + 1) * 10)
        assert (ci.low, ci.high) == (-np.inf, np.inf)
    assert np.isnan(u.sign_flip_interval([np.nan, np.nan]).low)
    assert np.isnan(u.sign_flip_interval([1.0, 2.0], [1.0, 0.0]).high)
    assert np.isfinite(u.sign_flip_interval(np.arange(1.0, 7.0)).low)  # n = 6: 2/64 < 0.05


def test_inverted_interval_covers_at_its_level():
    """Symmetric noise (where the test is exact): the 95 % interval covers the true mean in
    at least 95 % of 400 seeded draws at n = 8, up to Monte Carlo error (sd about 1.1 %)."""
    rng = np.random.default_rng(21)
    cover = [(ci := u.sign_flip_interval(rng.normal(0.7, 2.0, size=8))).low <= 0.7 <= ci.high
             for _ in range(400)]
    assert np.mean(cover) >= 0.93


def test_mde_is_the_effect_detected_with_80_percent_power():
    """Simulated directly with the test on normal differences at the stated effect: power
    about 0.8 (1,000 draws: sd 0.013), clearly less at half of it; inf where n ≤ 5 cannot
    reach p < 0.05; proportional to the spread."""
    rng = np.random.default_rng(5)
    for n in (7, 10):
        mde = u.sign_flip_mde(n, 1.0)
        power = np.mean([u.sign_flip_test(rng.normal(mde, 1.0, size=n)).p_value < 0.05
                         for _ in range(1000)])
        half = np.mean([u.sign_flip_test(rng.normal(mde / 2, 1.0, size=n)).p_value < 0.05
                        for _ in range(1000)])
        assert 0.75 <= power <= 0.85 and half < 0.45
        assert u.sign_flip_mde(n, 3.0) == pytest.approx(3 * mde)
    assert u.sign_flip_mde(5, 1.0) == np.inf and u.sign_flip_mde(3, 1.0) == np.inf
    # beyond the exact test the noncentral t gives it: near (1.96 + 0.84)/√n at n = 40
    assert u.sign_flip_mde(40, 1.0) == pytest.approx(2.8 / np.sqrt(40), rel=0.05)


def test_mde_of_data_is_the_mde_of_its_finite_differences():
    """The finite entries' n and sample sd, and for a relative change ÷ the mean of w; inf
    for one sample (no test of one sign can reach α), NaN for none."""
    y = np.array([0.3, -0.1, np.nan, 0.5, 0.2, 0.0, 0.4, 0.1])
    w = np.array([1.2, 1.5, 1.1, np.nan, 1.4, 1.3, 1.6, 1.0])
    ok = np.isfinite(y) & np.isfinite(w)
    assert u.sign_flip_mde_of(y) == u.sign_flip_mde(7, np.std(y[np.isfinite(y)], ddof=1))
    assert u.sign_flip_mde_of(y, w) == pytest.approx(
        u.sign_flip_mde(6, np.std(y[ok], ddof=1)) / np.mean(w[ok]))
    assert u.sign_flip_mde_of([0.2, np.nan]) == math.inf == u.sign_flip_mde(1, 0.3)
    assert np.isnan(u.sign_flip_mde_of([np.nan, np.nan]))


def test_prediction_test_by_hand():
    """x = 1 against draws (0, 0.1, −0.1): t = 1 / (0.1·√(4/3)) with 2 df."""
    from scipy import stats

    t = u.prediction_test(1.0, [0.0, 0.1, -0.1])
    assert t.n == 3 and t.method == "t" and t.sd == pytest.approx(0.1)
    assert t.p_value == pytest.approx(2 * stats.t.sf(1 / (0.1 * np.sqrt(4 / 3)), 2))
    assert t.mean_difference == pytest.approx(1.0)
    # fewer than two draws: no spread, no test; draws without spread: the rank p
    assert np.isnan(u.prediction_test(1.0, [0.2]).p_value)
    assert u.prediction_test(1.0, [0.2, 0.2, 0.2]).p_value == pytest.approx(0.25)
    assert u.prediction_test(0.2, [0.2, 0.2, 0.2]).p_value == 1.0


@pytest.mark.parametrize("k", [2, 3, 5])
def test_prediction_test_holds_its_level_for_one_more_draw(k):
    """A held-out draw of the controls' own law falls outside their 95 % prediction interval
    5 % of the time (4,000 seeded sets; ±0.007 is one Monte Carlo standard error)."""
    x = np.random.default_rng(k).normal(3.0, 2.0, (4000, k + 1))
    rate = np.mean([u.prediction_test(r[0], r[1:]).p_value < 0.05 for r in x])
    assert abs(rate - 0.05) < 3 * np.sqrt(0.05 * 0.95 / 4000)


def test_prediction_mde_is_the_shift_detected_with_80_percent_power():
    """At the stated mde, 80 % of held-out draws shifted by it fall outside the interval."""
    k, sd = 4, 1.0
    rng = np.random.default_rng(7)
    c = rng.standard_normal((4000, k))
    unit = np.array([-1.5, -0.5, 0.5, 1.5]) / np.std([-1.5, -0.5, 0.5, 1.5], ddof=1)
    mde = u.prediction_test(0.0, unit).mde  # draws of sd 1: the mde per unit of spread
    x = mde * sd + rng.standard_normal(4000)
    power = np.mean([u.prediction_test(xi, ci).p_value < 0.05 for xi, ci in zip(x, c)])
    assert abs(power - 0.8) < 3 * np.sqrt(0.8 * 0.2 / 4000)


def test_a_fixed_offset_of_one_draw_is_signal_to_one_twin_and_not_to_several():
    """Draws that differ by a spread of their own (sd 1 between draws, item noise sd 1, 10
    items): the sign-flip test against one twin rejects far more than 5 % of trained draws
    that are draws of the same law; the prediction test against three twins about 5 %."""
    rng = np.random.default_rng(11)
    one = several = 0
    sims = 600
    for _ in range(sims):
        y = rng.standard_normal(4)[:, None] + rng.standard_normal((4, 10))
        one += u.sign_flip_test(y[0] - y[1]).p_value < 0.05
        several += u.prediction_test(y[0].mean(), y[1:].mean(1)).p_value < 0.05
    assert one / sims > 0.3
    assert several / sims < 0.05 + 3 * np.sqrt(0.05 * 0.95 / sims)
