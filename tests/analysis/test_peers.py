"""ips.analysis.peers: the output-level metrics of other tools, against hand-computed cases,
brute-force loops over the pairs and the values a uniform guesser must give."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ips.analysis import peers, uncertainty

PRED = np.array([[0, 0, 1], [2, -1, 2]])
GOLD = np.array([0, 2])
V = np.array([[1.0, 2.0, 4.0], [0.0, 0.0, 3.0]])


def test_a_hand_computed_group():
    # sample 0: correct (1, 1, 0), agreeing pairs (0, 1); sample 1: correct (1, 0, 1), agreeing
    # pair (0, 2); |Δv| (1, 3, 2) and (0, 3, 3); accuracy per template (1, 0.5, 0.5)
    counts = uncertainty.resample_counts(2, 200, seed=0)
    value, ci, n = peers.peer_metrics(PRED, GOLD, V, True, counts)
    assert dict(zip(peers.PEERS, value)) == pytest.approx(
        {"accuracy_spread": 0.5, "pss": 2 / 3, "consistency_rate": 1 / 3, "dv_unmasked": 2.0})
    assert n.tolist() == [2, 2, 2, 2]
    assert np.all(ci[:, 0] <= value) and np.all(value <= ci[:, 1])


def test_per_sample_values_equal_loops_over_the_pairs():
    rng = np.random.default_rng(7)
    pred = rng.integers(-1, 4, size=(30, 5))
    gold = rng.integers(0, 4, size=30)
    v = rng.normal(size=(30, 5))
    got = peers.per_sample(pred, gold, v, True)
    for s in range(30):
        pairs = list(itertools.combinations(range(5), 2))
        ok = [pred[s, i] == gold[s] for i in range(5)]
        k = sum(ok)
        pss = sum(ok[i] != ok[j] for i, j in pairs) / len(pairs)
        assert got["pss"][s] == pytest.approx(pss)
        assert got["pss"][s] == pytest.approx(k * (5 - k) / 10)  # ProSA's closed form
        agree = sum(pred[s, i] == pred[s, j] and pred[s, i] >= 0 for i, j in pairs)
        assert got["consistency_rate"][s] == pytest.approx(agree / len(pairs))
        dv = sum(abs(v[s, i] - v[s, j]) for i, j in pairs) / len(pairs)
        assert got["dv_unmasked"][s] == pytest.approx(dv)


def test_a_uniform_guesser_gives_the_chance_values():
    """4 options, 5 templates: PSS E|c_i − c_j| = 2 · ¼ · ¾ = 0.375, agreement ¼."""
    rng = np.random.default_rng(3)
    pred = rng.integers(0, 4, size=(20_000, 5))
    got = peers.per_sample(pred, np.zeros(20_000, int), np.zeros((20_000, 5)), True)
    assert got["pss"].mean() == pytest.approx(0.375, abs=0.005)
    assert got["consistency_rate"].mean() == pytest.approx(0.25, abs=0.005)


def test_without_gold_only_the_change_of_v_is_defined():
    counts = uncertainty.resample_counts(2, 50, seed=0)
    value, _, n = peers.peer_metrics(PRED, GOLD, V, False, counts)
    assert np.isnan(value[:3]).all() and n[:3].tolist() == [0, 0, 0]
    assert value[3] == pytest.approx(2.0) and n[3] == 2


def test_one_condition_has_no_pair():
    counts = uncertainty.resample_counts(2, 50, seed=0)
    value, ci, n = peers.peer_metrics(PRED[:, :1], GOLD, V[:, :1], True, counts)
    assert np.isnan(value).all() and np.isnan(ci).all() and n.tolist() == [0, 0, 0, 0]


def test_unmasked_is_the_full_mask_of_each_sample():
    v = np.arange(2 * 1 * 8, dtype=float).reshape(2, 1, 8)
    assert peers.unmasked(v, np.array([3, 2]), None).tolist() == [[7.0], [11.0]]
    masks = np.array([[0, 7, 3, -1], [3, 0, 1, 2]])  # sparse designs: N at column 1 and 0
    v = np.arange(8, dtype=float).reshape(2, 1, 4)
    assert peers.unmasked(v, np.array([3, 2]), masks).tolist() == [[1.0], [4.0]]


def _r2_from_correlations(y, x1, x2):
    """R² of y on (1, x1, x2) from the three correlations (the textbook closed form)."""
    r = np.corrcoef([y, x1, x2])
    ry1, ry2, r12 = r[0, 1], r[0, 2], r[1, 2]
    return (ry1**2 + ry2**2 - 2 * ry1 * ry2 * r12) / (1 - r12**2)


def test_size_r2_is_the_closed_form_of_two_predictors():
    rng = np.random.default_rng(3)
    x1, x2 = rng.exponential(size=(6, 10)), rng.exponential(size=(6, 10))
    y = 0.5 * x1 - 0.2 * x2 + rng.normal(scale=0.3, size=(6, 10))
    got = peers.size_r2(y, x1, x2)
    assert got == pytest.approx([_r2_from_correlations(*row) for row in zip(y, x1, x2)])
    assert np.all((got > 0) & (got < 1))


def test_size_r2_exact_fit_missing_pairs_and_undefined_samples():
    x1 = np.array([[1.0, 2, 3, 4, 5], [1, 2, 3, 4, 5], [1, 2, 3, 4, 5], [1, 2, 3, 4, 5]])
    x2 = np.array([[0.0, 1, 0, 2, 1]] * 4)
    y = 2 + 3 * x1 - x2
    y[1, 0] = np.nan          # 4 complete pairs left: still a fit
    y[2, :2] = np.nan         # 3 left: 3 coefficients leave no residual
    y[3] = 1.0                # constant: nothing to explain
    got = peers.size_r2(y, x1, x2)
    assert got[:2] == pytest.approx([1.0, 1.0]) and np.isnan(got[2:]).all()
    noisy = y[0] + np.array([0.3, -0.3, 0.1, 0.2, -0.3])
    assert peers.size_r2(noisy[None], x1[:1], x2[:1])[0] == pytest.approx(
        _r2_from_correlations(noisy, x1[0], x2[0]))
