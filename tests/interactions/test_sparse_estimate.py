"""Sparse AND-OR estimation (ips.interactions.sparse) against ground truth built by construction.

Games are generated from known sparse AND/OR interactions with `reconstruct`; their exact
Eq. 12 fit equals the generating interactions (checked), so recovery is measured against
both. The sparse-form metrics are checked against `ips.analysis.metrics` on the same dense arrays.
"""

from math import comb

import numpy as np
import pytest

import reference
from builders import sparse_game
from ips.interactions import and_or, design, sparse


def test_design_levels_and_budget():
    n, budget = 10, 128
    d = design.design(n, budget, seed=3)
    assert len(d) == budget == len(np.unique(d))
    size = np.bitwise_count(d)
    # sizes 0, 10, 1, 9 (22 masks) fit in half the budget; adding 2 and 8 (90 more) does not
    for s in (0, 1, 9, 10):
        assert np.sum(size == s) == comb(n, s)
    assert np.sum(size == 2) < comb(n, 2)
    assert np.array_equal(design.design(n, budget, seed=3), d)  # seeded
    assert np.array_equal(design.design(4, 16), np.arange(16))
    assert np.array_equal(design.design(4, 100), np.arange(16))


def test_all_masks_reproduce_the_exact_fit():
    rng = np.random.default_rng(0)
    v = rng.normal(size=1 << 6)  # a dense game: the estimate must be Eq. 12 itself
    ex = and_or(v, solver="exact")
    est = sparse.estimate(np.arange(1 << 6), v, 6, holdout=0)
    a, o = reference.to_dense(est)
    assert est.objective == pytest.approx(float(ex.objective), rel=1e-9)
    assert np.abs(a - ex.and_).max() < 1e-8 and np.abs(o - ex.or_).max() < 1e-8
    assert est.unobserved == 0 and est.aliased == 0 and est.fit_error < 1e-10


@pytest.mark.parametrize("n, budget", [(8, 64), (10, 128)])
def test_sparse_game_recovered_from_a_fraction_of_masks(n, budget):
    x, y, v = sparse_game(n, 5, (2, 3), seed=n)
    if n == 8:  # the generating interactions are Eq. 12's canonical optimum (n = 10: 30 s)
        ex = and_or(v, solver="exact")
        assert np.abs(ex.and_ - x).max() < 1e-9 and np.abs(ex.or_ - y).max() < 1e-9
    d = design.design(n, budget, seed=1)
    est = sparse.estimate(d, v[d], n, refit=False)
    a, o = reference.to_dense(est)
    # exact recovery: the LP's optimum is the generating 10-sparse vector (errors ~1e-13)
    assert np.abs(a - x).max() < 1e-7 and np.abs(o - y).max() < 1e-7
    assert len(est) == 10
    assert est.heldout_error < 1e-8 and est.n_heldout > 0 and est.reliable
    assert np.abs(est.predict(np.arange(1 << n)) - v).max() < 1e-7


@pytest.mark.slow
def test_sparse_game_recovered_n12():
    x, y, v = sparse_game(12, 5, (2, 4), seed=12)
    d = design.design(12, 256, seed=0)
    est = sparse.estimate(d, v[d], 12, refit=False)
    a, o = reference.to_dense(est)
    assert np.abs(a - x).max() < 1e-7 and np.abs(o - y).max() < 1e-7


def test_too_few_masks_is_flagged_by_the_heldout_error():
    # 20 + 20 interactions of orders 1..4 at n = 8 from 24 masks: not identifiable
    x, y, v = sparse_game(8, 20, (1, 4), seed=5)
    d = design.design(8, 32, seed=0)
    est = sparse.estimate(d, v[d], 8)
    assert est.heldout_error > 0.05 and not est.reliable
    full_error = np.sqrt(np.mean((est.predict(np.arange(256)) - v) ** 2)) / np.ptp(v)
    assert full_error > 0.05


def test_low_order_candidates_beyond_the_dense_limit():
    n = 20
    pairs = [(0, 5), (3, 9), (11, 17)]
    weights = [1.5, -0.8, 1.1]
    ors = [(1, 7), (12, 19)]
    d = design.design(n, 160, seed=0)

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
        reference.to_dense(est)


# ---------------------------------------------------------------- scoring and fitting a design
