"""The items × draws control test against its definition: the two-way ANOVA of a mean
statistic, a general statistic's jackknife, its direction and its limits."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from ips.analysis.item_draw_test import item_draw_test
from ips.analysis.uncertainty import one_sided


def _anova(y0: np.ndarray, yk: np.ndarray) -> tuple[float, float, float]:
    """(t, ν, x − c̄) from the textbook two-way decomposition of a mean, written out loop
    by loop: V_D = s²(d)/n, the draws' mean square over n, the residual mean square over n."""
    k, n = yk.shape
    d = [y0[i] - sum(yk[j, i] for j in range(k)) / k for i in range(n)]
    dbar = sum(d) / n
    v_d = sum((di - dbar) ** 2 for di in d) / (n - 1) / n
    m = [sum(yk[j]) / n for j in range(k)]
    col = [sum(yk[j, i] for j in range(k)) / k for i in range(n)]
    grand = sum(m) / k
    ms_draw = n * sum((mj - grand) ** 2 for mj in m) / (k - 1)
    ms_res = sum((yk[j, i] - m[j] - col[i] + grand) ** 2 for j in range(k)
                 for i in range(n)) / ((k - 1) * (n - 1))
    a = 1 + 1 / k
    s2, r = ms_draw / n, ms_res / n
    if s2 > r:
        v = v_d + a * (s2 - r)
        nu = v**2 / (v_d**2 / (n - 1) + (a * s2) ** 2 / (k - 1)
                     + (a * r) ** 2 / ((k - 1) * (n - 1)))
        if a * (s2 - r) > v_d:
            nu = min(nu, k - 1)
    else:
        v, nu = v_d, n - 1
    return dbar / math.sqrt(v), nu, dbar


@pytest.mark.parametrize("spread", [0.0, 0.3, 3.0])
def test_a_mean_is_the_two_way_anova(spread):
    rng = np.random.default_rng(11)
    theta = spread * rng.standard_normal(4)
    y = theta[:, None] + rng.standard_normal(12)[None] + rng.standard_normal((4, 12))
    y[0] *= 2.0
    t, nu, diff = _anova(y[0], y[1:])
    got = item_draw_test(y[0], y[1:])
    assert got.mean_difference == pytest.approx(diff, abs=1e-12)
    assert got.df == pytest.approx(nu, rel=1e-9)
    assert got.p_value == pytest.approx(2 * stats.t.sf(abs(t), nu), rel=1e-9)
    assert got.n == 3 and got.units == 12


def test_a_general_statistic_is_jackknifed_as_the_mean_is():
    """The closed form for the mean and the generic leave-one-out path agree."""
    rng = np.random.default_rng(5)
    y = rng.standard_normal((6, 9)) + np.arange(6)[:, None] * 0.2
    closed = item_draw_test(y[0], y[1:])
    generic = item_draw_test(y[0], y[1:], statistic=lambda r: float(r.mean()))
    assert generic.p_value == pytest.approx(closed.p_value, rel=1e-9)
    assert generic.se == pytest.approx(closed.se, rel=1e-9)


def test_shared_item_effects_cancel():
    """Item effects all models share move no number of the test."""
    rng = np.random.default_rng(2)
    y = rng.standard_normal((4, 10))
    shifted = y + 50.0 * rng.standard_normal(10)[None]
    a, b = item_draw_test(y[0], y[1:]), item_draw_test(shifted[0], shifted[1:])
    assert b.p_value == pytest.approx(a.p_value, rel=1e-8)


def test_the_one_sided_p_follows_the_direction():
    rng = np.random.default_rng(3)
    y = rng.standard_normal((4, 10))
    y[0] += 1.5
    got = item_draw_test(y[0], y[1:])
    assert got.mean_difference > 0
    assert one_sided(got, +1) == pytest.approx(got.p_value / 2)
    assert one_sided(got, -1) == pytest.approx(1 - got.p_value / 2)
    assert one_sided(got, 0) == 1.0


def test_units_missing_on_any_model_are_dropped_and_too_few_give_no_test():
    rng = np.random.default_rng(4)
    y = rng.standard_normal((3, 6))
    y[1, 2] = np.nan
    assert item_draw_test(y[0], y[1:]).units == 5
    assert math.isnan(item_draw_test(y[0], y[1:2]).p_value)  # one draw
    assert math.isnan(item_draw_test(y[0, :1], y[1:, :1]).p_value)  # one unit


def test_the_mde_is_the_shift_detected_with_eighty_percent_power():
    """Shifting the trained model by the mde rejects about 80 % of the time when the test's
    variance is known to be its expectation (large n and K)."""
    rng = np.random.default_rng(8)
    y = rng.standard_normal((31, 200))
    mde = item_draw_test(y[0], y[1:]).mde
    hits = 0
    for _ in range(400):
        z = rng.standard_normal((31, 200))
        z[0] += mde
        hits += one_sided(item_draw_test(z[0], z[1:]), +1) < 0.05
    assert 0.72 <= hits / 400 <= 0.88


def test_degrees_of_freedom_are_at_least_one():
    """Satterthwaite's ν with R subtracted can fall below 1 on small draws: it is floored."""
    rng = np.random.default_rng(9)
    for _ in range(300):
        k, n = rng.integers(2, 6), rng.integers(2, 12)
        y = rng.standard_normal((k + 1, n)) * rng.uniform(0.01, 3, (k + 1, 1))
        y += rng.uniform(0, 2) * rng.standard_normal((k + 1, 1))
        got = item_draw_test(y[0], y[1:])
        assert got.df >= 1.0 and np.isfinite(got.mde)
