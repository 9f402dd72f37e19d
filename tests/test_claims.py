"""The claims table (ips.claims): verdict rules, the permutation tests it adds, and the rows
written from metrics and factors files."""

import math
from itertools import permutations

import numpy as np
import pytest
import scipy.stats

from ips.claims import directional, spearman_permutation, within


@pytest.mark.parametrize("est, p, sign, verdict", [
    (-0.2, 0.01, -1, "supported"),
    (0.2, 0.01, -1, "contradicted"),
    (-0.2, 0.05, -1, "undecided"),      # p must be below alpha
    (0.2, 0.2, +1, "undecided"),
    (0.0, 0.001, -1, "undecided"),      # no sign, no direction
    (math.nan, 0.01, -1, "undecided"),
    (0.3, math.nan, +1, "undecided"),
])
def test_directional(est, p, sign, verdict):
    assert directional(est, p, sign) == verdict


@pytest.mark.parametrize("ci, verdict", [
    ((0.45, 0.55), "supported"),
    ((0.40, 0.60), "supported"),         # the bounds belong to the range
    ((0.30, 0.50), "undecided"),
    ((0.61, 0.70), "contradicted"),
    ((0.10, 0.39), "contradicted"),
    ((0.30, 0.70), "undecided"),         # wider than the range: cannot decide
    ((math.nan, 0.5), "undecided"),
])
def test_within(ci, verdict):
    assert within(ci, 0.4, 0.6) == verdict


def test_spearman_permutation_exact_by_hand():
    # 4 models in the same order on both: rho = 1; of the 4! = 24 pairings only the identity
    # (rho = 1) and the reversal (rho = -1) reach |rho| >= 1, so p = 2/24
    r, p = spearman_permutation(np.array([1.0, 2, 3, 4]), np.array([10.0, 20, 30, 40]))
    assert r == pytest.approx(1.0)
    assert p == pytest.approx(2 / 24)
    # 3 models: rho takes the values ±1, ±0.5 (each twice); reversed order -> rho = -1, p = 2/6
    r, p = spearman_permutation(np.array([1.0, 2, 3]), np.array([3.0, 2, 1]))
    assert r == pytest.approx(-1.0) and p == pytest.approx(2 / 6)


def test_spearman_permutation_matches_brute_force_and_scipy():
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=6), rng.normal(size=6)
    r, p = spearman_permutation(x, y)
    assert r == pytest.approx(scipy.stats.spearmanr(x, y)[0])
    rx, ry = scipy.stats.rankdata(x), scipy.stats.rankdata(y)
    rhos = [np.corrcoef(rx, ry[list(q)])[0, 1] for q in permutations(range(6))]
    assert p == pytest.approx(np.mean(np.abs(rhos) >= abs(r) - 1e-12))


def test_spearman_permutation_monte_carlo_beyond_8():
    rng = np.random.default_rng(0)
    x = rng.normal(size=12)
    y = -x + rng.normal(scale=0.1, size=12)
    r, p = spearman_permutation(x, y, draws=999, seed=1)
    assert r < -0.9
    assert p == pytest.approx(1 / 1000)  # no random pairing comes near: (0 + 1)/(999 + 1)
