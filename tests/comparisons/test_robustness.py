"""ips.comparisons.robustness: the tau sweep."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ips.analysis import metrics as M
from ips.comparisons import robustness
from reference import random_interactions


# --------------------------------------------------------------------------------------------
# τ sweep and ΔIPS
# --------------------------------------------------------------------------------------------
def test_default_tau_sweep():
    t = M.default_tau_sweep()
    assert t.shape == (16,)
    np.testing.assert_array_equal(
        t, [0.05, 0.06, 0.07, 0.08, 0.09, 0.10, 0.11, 0.12, 0.13, 0.14, 0.15, 0.16, 0.17,
            0.18, 0.19, 0.20],
    )
    assert 0.1 in t.tolist()


def test_tau_sweep_monotone_and_swapped():
    # same order at every τ (values differ but ranks agree) -> Spearman exactly 1
    base = np.array([1.0, 2.0, 3.0, 4.0])
    mono = np.stack([base, base * 2.0, base**2], axis=1)
    res = robustness.tau_sweep(mono)
    assert res.spearman == pytest.approx(1.0, abs=1e-12)
    assert res.spearman_matrix.shape == (3, 3)
    # Pearson of (1,2,3,4) vs (1,4,9,16): 25 / sqrt(5 * 129)
    r14 = 25 / math.sqrt(5 * 129)
    assert res.pearson == pytest.approx((1 + r14 + r14) / 3, rel=1e-12)
    # third τ swaps the first two models: ρ(col0, col2) = 1 - 6·2/(4·15) = 0.8, and Pearson of
    # (1,2,3,4) vs (2,1,3,4) = 4/5 = 0.8 -> mean over the 3 τ pairs (1 + .8 + .8)/3 = 13/15
    swapped = np.array([[1.0, 1.0, 2.0], [2.0, 2.0, 1.0], [3.0, 3.0, 3.0], [4.0, 4.0, 4.0]])
    res2 = robustness.tau_sweep(swapped)
    assert res2.spearman == pytest.approx(13 / 15, abs=1e-12)
    assert res2.pearson == pytest.approx(13 / 15, abs=1e-12)
    assert res2.spearman_matrix[0, 2] == pytest.approx(0.8)
    # fewer than 3 models -> NaN
    assert math.isnan(robustness.tau_sweep(swapped[:2]).spearman)
    assert math.isnan(robustness.tau_sweep(swapped[:2]).pearson)


def test_tau_sweep_on_real_ips_grid():
    rng = np.random.default_rng(11)
    grids = []
    for _ in range(4):  # 4 "models"
        and_, or_, _ = random_interactions(rng, 4, 3, n_max=4)
        grids.append(M.ips(M.normalize(and_, or_), tau=M.default_tau_sweep()).value)
    res = robustness.tau_sweep(np.stack(grids))
    assert -1.0 <= res.spearman <= 1.0 and -1.0 <= res.pearson <= 1.0
