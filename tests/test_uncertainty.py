"""ips.uncertainty: bootstrap intervals and the paired bootstrap test (fixed seeds)."""

import numpy as np
import pytest

from ips import uncertainty as u


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
    assert res.p_value < 0.01
    assert res.ci_a[0] <= res.ips_a <= res.ci_a[1]


def test_paired_test_finds_nothing_where_there_is_nothing():
    rng = np.random.default_rng(12)
    base = rng.uniform(1.2, 1.8, size=60)
    b = base + rng.normal(scale=0.05, size=60)  # same mean, sample noise only
    a = base + rng.normal(scale=0.05, size=60)
    res = u.paired_test(a, b, n_boot=2000, seed=0)
    assert res.p_value > 0.05
    assert res.delta_ci[0] < 0 < res.delta_ci[1]


def test_pairing_matters():
    """Large between-sample spread, small within-pair change: the paired test sees it."""
    rng = np.random.default_rng(13)
    base = rng.uniform(0.5, 2.0, size=40)
    a = base * 0.97
    assert u.paired_test(a, base, n_boot=1000, seed=1).p_value < 0.01


def test_paired_test_with_columns_and_bands():
    rng = np.random.default_rng(14)
    b = rng.uniform(1.0, 2.0, size=(50, 2, 4))  # two pairs, four bands
    a = b.copy()
    a[..., 3] *= 1.2  # only the last band differs
    res = u.paired_test(a, b, n_boot=1000, seed=2)
    assert res.delta.shape == (4,) and res.delta_ci.shape == (4, 2)
    assert res.p_value[3] < 0.01 and np.all(res.p_value[:3] == 1.0)
    np.testing.assert_allclose(res.delta[:3], 0.0)
    with pytest.raises(ValueError):
        u.paired_test(a, b[:10], n_boot=10)
