"""Tests of ips.analysis.metrics against an independent, loop-based reference written from the
paper's definitions (Sections 3.2-3.3).

The reference below works on plain dicts keyed by (kind, frozenset(S)) and never touches the
bitmask layout except to read the inputs, so it shares no code path with the vectorised module.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import reference
from ips.analysis import diagnostics as D
from ips.analysis import interaction_types, layout
from ips.analysis import metrics as M
from ips.comparisons import robustness
from reference import (
    N_MAX,
    TAUS,
    random_interactions,
    ref_band,
    ref_ips,
    ref_normalize,
    ref_omega,
    ref_pair,
    ref_samples,
    ref_types,
    ref_union,
    to_dict,
)

# --------------------------------------------------------------------------------------------
# reference implementation (plain Python, straight from the paper's definitions)
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(12345)
    and_, or_, n = random_interactions(rng, n_samples=12, n_conditions=4)
    norm = M.normalize(and_, or_)
    return and_, or_, n, norm, ref_samples(and_, or_, n)


# --------------------------------------------------------------------------------------------
# normalisation
# --------------------------------------------------------------------------------------------
def test_normalize_matches_reference(data):
    and_, or_, n, norm, ref = data
    assert norm.shape == and_.shape[:-1] + (2, 2**N_MAX)
    for s, (ns, conds) in enumerate(ref):
        for c, rd in enumerate(conds):
            got = to_dict(norm[s, c], ns)
            assert got.keys() == rd.keys()
            for key in rd:
                assert got[key] == pytest.approx(rd[key], abs=1e-15)
            # outside Ω (mask 0 and padding) is NaN
            assert np.all(np.isnan(norm[s, c, :, 0]))
            assert np.all(np.isnan(norm[s, c, :, 2**ns:]))
            mags = [abs(v) for v in got.values()]
            assert max(mags) == 1.0 and min(mags) == 0.0


def test_normalize_all_n_and_explicit_n_vars():
    rng = np.random.default_rng(7)
    for n_max in range(1, 7):
        and_, or_, n = random_interactions(rng, 6, 1, n_max=n_max)
        got = M.normalize(and_, or_)
        # explicit per-row n: the padding may then hold anything (it is ignored)
        a2 = np.where(np.isnan(and_), 123.0, and_)
        o2 = np.where(np.isnan(or_), -7.0, or_)
        got2 = M.normalize(a2, o2, n_vars=n[:, None])
        np.testing.assert_array_equal(got, got2)
        np.testing.assert_array_equal(layout.infer_n_vars(got), np.broadcast_to(n[:, None], (6, 1)))
        for s in range(6):
            rd = ref_normalize(ref_omega(and_[s, 0], or_[s, 0], int(n[s])))
            gd = to_dict(got[s, 0], int(n[s]))
            assert all(gd[k] == pytest.approx(rd[k], abs=1e-15) for k in rd)


def test_normalize_max_equals_min_is_zero():
    and_ = np.array([5.0, 1.0, -1.0, 1.0])
    or_ = np.array([0.0, -1.0, 1.0, -1.0])
    out = M.normalize(and_, or_)
    np.testing.assert_array_equal(out[:, 1:], np.zeros((2, 3)))
    assert np.all(np.isnan(out[:, 0]))
    # all-zero row as well
    out0 = M.normalize(np.zeros(4), np.zeros(4))
    np.testing.assert_array_equal(out0[:, 1:], np.zeros((2, 3)))


def test_the_papers_normalisation_takes_the_empty_set_into_min_and_max():
    """n = 2, AND (∅, {0}, {1}, {0,1}) = (8, 1, -0.5, 2), OR = (-2, 0.25, 0, 4): over the six
    non-empty effects Min = 0, Max = 4, so Ĩ = I / 4; over all eight (the paper's 2^(n+1))
    Max = |I_AND(∅)| = 8: Ĩ = I / 8, and no interaction of Ω reaches 1. With |I(∅)| the
    largest, the paper's rule halves every Ĩ here: at τ = 0.2 the non-empty rule keeps 3
    salient interactions (AND{0} 0.25, AND{0,1} 0.5, OR{0,1} 1), the paper's 2 (AND{0,1} at
    0.25, OR{0,1} at 0.5)."""
    and_ = np.array([8.0, 1.0, -0.5, 2.0])
    or_ = np.array([-2.0, 0.25, 0.0, 4.0])
    nonempty = M.normalize(and_, or_)
    paper = M.normalize(and_, or_, normalisation="paper")
    np.testing.assert_allclose(nonempty[:, 1:], np.stack([and_, or_])[:, 1:] / 4)
    np.testing.assert_allclose(paper[:, 1:], np.stack([and_, or_])[:, 1:] / 8)
    assert np.isnan(paper[:, 0]).all() and np.abs(paper[:, 1:]).max() == 0.5
    assert M.salient(nonempty, 0.2).sum() == 3 and M.salient(paper, 0.2).sum() == 2
    # Min over all eight: |I| = 0 is there either way; a row whose smallest |I| is ∅'s
    lo = M.normalize(np.array([0.1, 1.0, 2.0, 3.0]), np.array([0.2, 1.0, 2.0, 3.0]),
                     normalisation="paper")
    np.testing.assert_allclose(lo[0, 1:], (np.array([1.0, 2.0, 3.0]) - 0.1) / 2.9)
    # an empty Ω stays empty; an unknown rule or a NaN ∅ is refused
    assert np.isnan(M.normalize(and_, or_, 0, normalisation="paper")).all()
    with pytest.raises(ValueError, match="normalisation must be one of nonempty, paper"):
        M.normalize(and_, or_, normalisation="all")
    with pytest.raises(ValueError, match="the empty set's AND and OR effects"):
        M.normalize(np.r_[np.nan, and_[1:]], or_, 2, normalisation="paper")


def test_numerical_zeros_have_no_sign():
    """A fit's ±1e-12 for a zero interaction normalises to exactly 0, so a pair (≈0 under T,
    salient under T̂) is 'same sign, different effect' whatever the sign of the noise."""
    and_t = np.array([0.0, 2.0, -1e-12, 0.5])
    and_u = np.array([0.0, 2.0, -0.8, 0.5])
    or_ = np.array([0.0, 0.0, 0.0, 0.0])
    for noise in (-1e-12, 1e-12, 0.0):
        and_t[2] = noise
        na, nb = M.normalize(and_t, or_), M.normalize(and_u, or_)
        assert na[0, 2] == 0.0
        np.testing.assert_array_equal(interaction_types.interaction_types(na, nb, 0.1), [0, 1, 2])
    # above the tolerance the sign is kept: a real (if small) interaction
    na = M.normalize(np.array([0.0, 2.0, 1e-4, 0.5]), or_)
    assert na[0, 2] > 0
    np.testing.assert_array_equal(interaction_types.interaction_types(na, nb, 0.1), [1, 0, 2])


def test_type_codes_count_to_interaction_types(data):
    """Per-interaction types over U add up to the vectorised counts of interaction_types."""
    *_, norm, _ = data
    a, b = norm[:, 0], norm[:, 1]
    for tau in (0.05, 0.1, 0.3):
        u = M.salient(a, tau) | M.salient(b, tau)
        codes = M.type_codes(a, b)
        counts = np.stack([(u & (codes == c)).sum(axis=(-2, -1)) for c in range(3)], axis=-1)
        np.testing.assert_array_equal(counts, interaction_types.interaction_types(a, b, tau))


def test_normalize_empty_omega_row():
    a = np.array([[0.3, 1.0, 2.0, 3.0], [0.3, np.nan, np.nan, np.nan]])
    out = M.normalize(a, a.copy())
    assert np.all(np.isnan(out[1]))
    res = M.pair_sensitivity(out, out)
    assert np.isnan(res.value[1]) and res.n_union[1] == 0


# --------------------------------------------------------------------------------------------
# hand-computed 2-variable example
# --------------------------------------------------------------------------------------------
# masks: 1 = {x0}, 2 = {x1}, 3 = {x0, x1}
# Template A: Min |I| = 0 (OR{x0}), Max |I| = 2 (AND{x0})  -> Ĩ = I / 2
A_AND = [9.0, 2.0, -1.0, 0.5]
A_OR = [0.0, 0.0, 0.125, -0.375]
# Template B: Min |I| = 0 (OR{x0}), Max |I| = 4 (AND{x0,x1}) -> Ĩ = I / 4
B_AND = [-3.0, 3.0, 2.0, 4.0]
B_OR = [0.0, 0.0, -0.5, -0.25]
# Ĩ_A: AND {0}: 1.0, {1}: -0.5, {01}: 0.25 ; OR {0}: 0, {1}: 0.0625, {01}: -0.1875
# Ĩ_B: AND {0}: .75, {1}:  0.5, {01}: 1.0  ; OR {0}: 0, {1}: -0.125, {01}: -0.0625
# τ = 0.1: U = {AND{0}, AND{1}, AND{01}, OR{1}, OR{01}} (|U| = 5)
#   terms: AND{0} .25/.875 = 2/7; AND{1} 1/.5 = 2; AND{01} .75/.625 = 1.2;
#          OR{1} .1875/.09375 = 2; OR{01} .125/.125 = 1
#   ips = (2/7 + 2 + 1.2 + 2 + 1) / 5 = 9.08 / 7
# n = 2: ⌊2/3⌋ = 0, ⌊4/3⌋ = 1 -> low empty; mid |S| = 1; high |S| = 2
#   mid U = {AND{0}, AND{1}, OR{1}}: (2/7 + 2 + 2)/3 = 10/7 ; high: (1.2 + 1)/2 = 1.1
# types: opposite {AND{1}, OR{1}} = 2; different {AND{01} (ratio 1/4), OR{01} (ratio 3)} = 2;
#        similar {AND{0} (ratio 4/3)} = 1
# τ = 0.3: U = {AND{0}, AND{1}, AND{01}} -> (2/7 + 2 + 1.2)/3 = 24.4/21


@pytest.fixture()
def hand():
    na = M.normalize(np.array(A_AND), np.array(A_OR))
    nb = M.normalize(np.array(B_AND), np.array(B_OR))
    return na, nb


def test_hand_normalize(hand):
    na, nb = hand
    np.testing.assert_array_equal(na[:, 1:], [[1.0, -0.5, 0.25], [0.0, 0.0625, -0.1875]])
    np.testing.assert_array_equal(nb[:, 1:], [[0.75, 0.5, 1.0], [0.0, -0.125, -0.0625]])
    np.testing.assert_array_equal(
        M.salient(na, 0.1), [[False, True, True, True], [False, False, False, True]]
    )


def test_hand_pair_sensitivity(hand):
    na, nb = hand
    r = M.pair_sensitivity(na, nb, 0.1)
    assert r.value == pytest.approx(9.08 / 7, abs=1e-14)
    assert r.n_union == 5
    r3 = M.pair_sensitivity(na, nb, 0.3)
    assert r3.value == pytest.approx(24.4 / 21, abs=1e-14) and r3.n_union == 3
    # salience is strict: Ĩ_A(AND{x0,x1}) = 0.25 is not salient at τ = 0.25 (still in U via B)
    r25 = M.pair_sensitivity(na, nb, np.array([0.25, 0.5]))
    # at τ = 0.5: U = {AND{x0} (A: 1), AND{x0,x1} (B: 1)}; |Ĩ| = 0.5 is not salient
    np.testing.assert_array_equal(r25.n_union, [3, 2])
    assert r25.value[0] == pytest.approx(24.4 / 21, abs=1e-14)
    assert r25.value[1] == pytest.approx((2 / 7 + 1.2) / 2, abs=1e-15)
    low = M.pair_sensitivity(na, nb, 0.1, band="low")
    assert np.isnan(low.value) and low.n_union == 0
    mid = M.pair_sensitivity(na, nb, 0.1, band="mid")
    assert mid.value == pytest.approx(10 / 7, abs=1e-14) and mid.n_union == 3
    high = M.pair_sensitivity(na, nb, 0.1, band="high")
    assert high.value == pytest.approx(1.1, abs=1e-14) and high.n_union == 2
    # the pair is symmetric
    assert M.pair_sensitivity(nb, na, 0.1).value == pytest.approx(9.08 / 7, abs=1e-14)


def test_hand_ips_and_types(hand):
    na, nb = hand
    norm = np.stack([na, nb])[None]  # (sample=1, condition=2, 2, 4)
    res = M.ips(norm, tau=0.1)
    assert res.value == pytest.approx(9.08 / 7, abs=1e-14)
    assert res.n_empty_pairs == 0 and res.n_valued_samples == 1
    np.testing.assert_array_equal(res.pairs, [[0, 1]])
    res_low = M.ips(norm, tau=0.1, band="low")
    assert np.isnan(res_low.value) and res_low.n_empty_pairs == 1
    assert res_low.n_valued_samples == 0
    np.testing.assert_array_equal(interaction_types.interaction_types(na, nb, 0.1), [2, 2, 1])
    np.testing.assert_array_equal(interaction_types.interaction_types(na, nb, 0.1, band="mid"), [2, 0, 1])
    np.testing.assert_array_equal(interaction_types.interaction_types(na, nb, 0.1, band="high"), [0, 2, 0])
    # prediction changed between the two templates -> all counts land in "changed"
    sh = interaction_types.interaction_type_shares(norm, np.array([[0, 2]]), tau=0.1)
    np.testing.assert_allclose(sh.changed, [0.4, 0.4, 0.2])
    assert np.all(np.isnan(sh.unchanged))
    assert sh.n_pairs_changed == 1 and sh.n_pairs_unchanged == 0
    np.testing.assert_array_equal(sh.counts_changed, [2, 2, 1])


def test_zero_on_one_side_counts_as_different_effect():
    # A: only AND{x0,x1} is non-zero -> Ĩ_A(AND{x0}) = 0 exactly, Ĩ_A(AND{x0,x1}) = 1
    # B: AND{x0} = AND{x0,x1} = 2, rest 0 -> Ĩ_B(AND{x0}) = Ĩ_B(AND{x0,x1}) = 1
    na = M.normalize(np.array([0.0, 0.0, 0.0, 2.0]), np.zeros(4))
    nb = M.normalize(np.array([0.0, 2.0, 0.0, 2.0]), np.zeros(4))
    assert na[0, 1] == 0.0 and nb[0, 1] == 1.0
    # U at τ=0.1: AND{x0} (0 vs 1: different effect, term 2), AND{x0,x1} (1 vs 1: similar,
    # term 0); everything else is 0 on both sides
    np.testing.assert_array_equal(interaction_types.interaction_types(na, nb, 0.1), [0, 1, 1])
    r = M.pair_sensitivity(na, nb, 0.1)
    assert r.value == 1.0 and r.n_union == 2


# --------------------------------------------------------------------------------------------
# order bands
# --------------------------------------------------------------------------------------------
def test_order_bands_hand():
    # n = 3: ⌊1⌋ = 1, ⌊2⌋ = 2 -> |S|=1 low, 2 mid, 3 high
    np.testing.assert_array_equal(reference.order_bands(3), [0, 1, 1, 2, 1, 2, 2, 3])
    # n = 5: ⌊5/3⌋ = 1, ⌊10/3⌋ = 3 -> |S|=1 low, 2-3 mid, 4-5 high
    b5 = reference.order_bands(5)
    size = np.array([bin(m).count("1") for m in range(32)])
    expected5 = np.select([size == 0, size == 1, size <= 3], [0, 1, 2], 3)
    np.testing.assert_array_equal(b5, expected5)
    # n = 8: ⌊8/3⌋ = 2, ⌊16/3⌋ = 5 -> 1-2 low, 3-5 mid, 6-8 high
    b8 = reference.order_bands(8)
    size8 = np.array([bin(m).count("1") for m in range(256)])
    expected8 = np.select([size8 == 0, size8 <= 2, size8 <= 5], [0, 1, 2], 3)
    np.testing.assert_array_equal(b8, expected8)
    assert b8[0b11] == 1 and b8[0b111] == 2 and b8[0b11111] == 2 and b8[0b111111] == 3
    # n = 1: ⌊1/3⌋ = ⌊2/3⌋ = 0 -> the singleton is high; n = 2: singletons mid, pair high
    np.testing.assert_array_equal(reference.order_bands(1), [0, 3])
    np.testing.assert_array_equal(reference.order_bands(2), [0, 2, 2, 3])
    # per-row n with padding code 0
    np.testing.assert_array_equal(
        reference.order_bands(np.array([1, 3]), n_max=3),
        [[0, 3, 0, 0, 0, 0, 0, 0], [0, 1, 1, 2, 1, 2, 2, 3]],
    )


def test_order_bands_match_reference():
    for n in range(1, 10):
        got = reference.order_bands(n)
        for mask in range(1, 2**n):
            S = frozenset(i for i in range(n) if (mask >> i) & 1)
            assert layout.BANDS[got[mask] - 1] == ref_band(S, n)


# --------------------------------------------------------------------------------------------
# vectorised functions vs the reference on random inputs
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("band", [None, "low", "mid", "high"])
def test_pair_sensitivity_and_types_match_reference(data, band):
    _, _, n, norm, ref = data
    a, b = norm[:, 0], norm[:, 2]
    res = M.pair_sensitivity(a, b, np.array(TAUS), band=band)
    types = interaction_types.interaction_types(a, b, np.array(TAUS), band=band)
    assert res.value.shape == (len(TAUS), norm.shape[0])
    assert types.shape == (len(TAUS), norm.shape[0], 3)
    for t, tau in enumerate(TAUS):
        for s, (ns, conds) in enumerate(ref):
            want = ref_pair(conds[0], conds[2], ns, tau, band)
            if want is None:
                assert np.isnan(res.value[t, s]) and res.n_union[t, s] == 0
            else:
                assert res.value[t, s] == pytest.approx(want, rel=1e-12, abs=1e-14)
                assert res.n_union[t, s] == len(ref_union(conds[0], conds[2], ns, tau, band))
            assert types[t, s].tolist() == ref_types(conds[0], conds[2], ns, tau, band)
            assert types[t, s].sum() == res.n_union[t, s]


@pytest.mark.parametrize("band", [None, "low", "mid", "high"])
def test_ips_matches_reference(data, band):
    _, _, _, norm, ref = data
    pairs = M.all_pairs(4)
    for tau in (0.1, 0.2):
        res = M.ips(norm, pairs, tau, band=band)
        want, n_empty = ref_ips(ref, pairs.tolist(), tau, band)
        if math.isnan(want):
            assert math.isnan(res.value)
        else:
            assert res.value == pytest.approx(want, rel=1e-12)
        assert res.n_empty_pairs == n_empty
        assert res.per_pair.shape == (norm.shape[0], 6)


def test_ips_ignores_empty_pairs_and_samples():
    rng = np.random.default_rng(3)
    and_, or_, n = random_interactions(rng, 3, 3, n_max=3)
    # sample 2, condition 0 and 1: all |I| equal -> Ĩ = 0 -> only pairs with condition 2 valued
    for c in (0, 1):
        and_[2, c, 1 : 2 ** n[2]] = 1.0
        or_[2, c, 1 : 2 ** n[2]] = -1.0
    norm = M.normalize(and_, or_)
    ref = ref_samples(and_, or_, n)
    res = M.ips(norm, tau=0.1)
    want, n_empty = ref_ips(ref, M.all_pairs(3).tolist(), 0.1)
    assert n_empty == 1 and res.n_empty_pairs == 1
    assert np.isnan(res.per_pair[2, 0])
    assert res.value == pytest.approx(want, rel=1e-12)
    # make every pair of sample 2 empty -> the sample is left out of the mean
    and_[2, 2, 1 : 2 ** n[2]] = 3.0
    or_[2, 2, 1 : 2 ** n[2]] = 3.0
    res2 = M.ips(M.normalize(and_, or_), tau=0.1)
    assert res2.n_empty_pairs == 3 and res2.n_valued_samples == 2
    assert np.isnan(res2.per_sample[2])
    assert res2.value == pytest.approx(np.mean(res2.per_sample[:2]), rel=1e-12)


def test_identical_is_zero_and_sign_flip_is_two(data):
    and_, or_, n, norm, _ = data
    flipped = M.normalize(-and_, -or_)
    np.testing.assert_array_equal(np.isnan(flipped), np.isnan(norm))
    both = np.stack([norm[:, 0], norm[:, 0], flipped[:, 0]], axis=1)
    taus = M.default_tau_sweep()
    same = M.ips(both, [[0, 1]], taus)
    flip = M.ips(both, [[0, 2], [1, 2]], taus)
    assert np.all(same.value == 0.0)
    assert np.all(flip.value == 2.0)  # exactly
    assert np.all(flip.per_pair == 2.0)
    t = interaction_types.interaction_types(norm[:, 0], flipped[:, 0], taus)
    assert np.all(t[..., 1:] == 0) and np.all(t[..., 0] > 0)  # all opposite sign


def test_vectorised_grid_equals_loop_over_tau():
    rng = np.random.default_rng(99)
    and_, or_, _ = random_interactions(rng, n_samples=5, n_conditions=5)
    norm = M.normalize(and_, or_)
    pairs = M.all_pairs(5)
    assert len(pairs) == 10
    taus = M.default_tau_sweep()
    for band in (None, "mid"):
        grid = M.ips(norm, pairs, taus, band=band)
        assert grid.per_pair.shape == (16, 5, 10)
        assert grid.value.shape == (16,)
        for t, tau in enumerate(taus):
            one = M.ips(norm, pairs, float(tau), band=band)
            np.testing.assert_allclose(grid.per_pair[t], one.per_pair, rtol=1e-13, atol=0)
            np.testing.assert_array_equal(grid.n_union[t], one.n_union)
            assert grid.value[t] == pytest.approx(one.value, rel=1e-13)
            assert grid.n_empty_pairs[t] == one.n_empty_pairs
    # unsorted τ array: results follow the given order
    perm = rng.permutation(16)
    shuffled = M.ips(norm, pairs, taus[perm])
    np.testing.assert_allclose(shuffled.value, M.ips(norm, pairs, taus).value[perm], rtol=1e-13)


def test_salient_tau_axis_convention(data):
    norm = data[3]
    s = M.salient(norm, np.array([0.1, 0.2]))
    assert s.shape == (2,) + norm.shape
    np.testing.assert_array_equal(s[1], M.salient(norm, 0.2))
    assert not s[..., 0].any()
    assert not s[np.broadcast_to(np.isnan(norm), s.shape)].any()


def test_interaction_type_shares_split():
    rng = np.random.default_rng(5)
    and_, or_, _ = random_interactions(rng, 6, 3, n_max=4)
    norm = M.normalize(and_, or_)
    pred = np.array([[0, 0, 1], [2, 2, 2], [1, 0, 1], [3, 3, 3], [0, 1, 2], [1, 1, 0]])
    pairs = M.all_pairs(3)
    sh = interaction_types.interaction_type_shares(norm, pred, pairs, 0.1)
    counts = interaction_types.interaction_types(norm[:, pairs[:, 0]], norm[:, pairs[:, 1]], 0.1)
    changed = pred[:, pairs[:, 0]] != pred[:, pairs[:, 1]]
    want_ch = sum(counts[s, p] for s in range(6) for p in range(3) if changed[s, p])
    want_un = sum(counts[s, p] for s in range(6) for p in range(3) if not changed[s, p])
    np.testing.assert_array_equal(sh.counts_changed, want_ch)
    np.testing.assert_array_equal(sh.counts_unchanged, want_un)
    np.testing.assert_allclose(sh.changed, want_ch / want_ch.sum())
    assert sh.n_pairs_changed == int(changed.sum()) == 9
    grid = interaction_types.interaction_type_shares(norm, pred, pairs, np.array([0.1, 0.2]))
    assert grid.changed.shape == (2, 3)
    np.testing.assert_allclose(grid.changed[0], sh.changed)


# --------------------------------------------------------------------------------------------
# output-level metrics
# --------------------------------------------------------------------------------------------
def test_consistency_and_accuracy_hand():
    pred = np.array([[0, 0, 0], [1, 2, 1], [3, 3, 3], [0, 1, 2]])
    gold = np.array([0, 1, 3, 2])
    assert D.output_consistency(pred) == 0.5  # samples 0 and 2
    # pairs (0,1): s0, s2 agree -> 0.5; (0,2): s0, s1, s2 -> 0.75; (1,2): s0, s2 -> 0.5
    np.testing.assert_array_equal(D.pair_consistency(pred), [0.5, 0.75, 0.5])
    np.testing.assert_array_equal(D.pair_consistency(pred, [[0, 2]]), [0.75])
    # condition 0: 3/4 right; condition 1: 2/4; condition 2: 4/4
    np.testing.assert_array_equal(D.accuracy(pred, gold), [0.75, 0.5, 1.0])


def test_delta_ips():
    assert M.delta_ips(1.2, 1.5) == pytest.approx(-0.2)
    np.testing.assert_allclose(M.delta_ips([1.0, 3.0], [2.0, 2.0]), [-0.5, 0.5])
    with pytest.raises(ValueError, match="ips_b"):
        M.delta_ips(1.0, 0.0)


# --------------------------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------------------------
GOOD = M.normalize(np.array([[0.0, 1.0, 2.0, 3.0]]), np.array([[0.0, 1.0, -2.0, 0.5]]))


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: M.normalize(np.zeros(4), np.zeros(8)), "and_"),
        (lambda: M.normalize(np.zeros(6), np.zeros(6)), "and_"),
        (lambda: M.normalize(np.array([0, 1, np.nan, 2.0]), np.zeros(4)), "and_"),
        (lambda: M.normalize(np.array([0, np.nan, np.nan, 2.0]), np.zeros(4)), "and_"),
        (lambda: M.normalize(np.zeros(4), np.array([0, 1, np.nan, 2.0])), "or_"),
        (lambda: M.normalize(np.array([0, 1, np.inf, 2.0]), np.zeros(4)), "and_"),
        (lambda: M.normalize(np.array([0, 1, np.nan, 2.0]), np.zeros(4), n_vars=2), "and_"),
        (lambda: M.normalize(np.zeros(4), np.zeros(4), n_vars=3), "n_vars"),
        (lambda: M.normalize(np.zeros((3, 4)), np.zeros((3, 4)), n_vars=[1, 2]), "n_vars"),
        (lambda: M.normalize(np.zeros(4), np.zeros(4), n_vars=1.5), "n_vars"),
        (lambda: M.salient(GOOD, 0.0), "tau"),
        (lambda: M.salient(GOOD, 1.0), "tau"),
        (lambda: M.salient(GOOD, [0.1, 1.2]), "tau"),
        (lambda: M.pair_sensitivity(GOOD, GOOD, -0.1), "tau"),
        (lambda: M.pair_sensitivity(GOOD, GOOD, np.nan), "tau"),
        (lambda: M.pair_sensitivity(GOOD, GOOD[..., :2], 0.1), "norm_a"),
        (lambda: M.pair_sensitivity(GOOD, np.stack([GOOD, GOOD]), 0.1), "norm_a"),
        (lambda: M.pair_sensitivity(GOOD, GOOD, 0.1, band="middle"), "band"),
        (lambda: M.pair_sensitivity(GOOD * 3, GOOD, 0.1), "norm_a"),
        (lambda: M.pair_sensitivity(GOOD, np.where(np.arange(4) == 2, np.nan, GOOD), 0.1),
         "norm_b"),
        (lambda: M.pair_sensitivity(np.where(np.arange(4) == 3, np.nan, GOOD), GOOD, 0.1),
         "norm_a"),
        (lambda: interaction_types.interaction_types(GOOD, GOOD, 2.0), "tau"),
        (lambda: M.ips(GOOD, [[0, 1]]), "norm"),
        (lambda: M.ips(np.stack([GOOD, GOOD], axis=1), [[0, 2]]), "pairs"),
        (lambda: M.ips(np.stack([GOOD, GOOD], axis=1), [[1, 1]]), "pairs"),
        (lambda: M.ips(np.stack([GOOD, GOOD], axis=1), [[0, 1]], band="all"), "band"),
        (lambda: M.ips(np.stack([GOOD, GOOD], axis=1), [[0, 1]], tau=1.5), "tau"),
        (lambda: interaction_types.interaction_type_shares(np.stack([GOOD, GOOD], axis=1), [[0, 1, 2]]),
         "pred"),
        (lambda: D.accuracy([[0, 1]], [0, 1]), "gold"),
        (lambda: D.output_consistency([0, 1]), "pred"),
        (lambda: robustness.tau_sweep(np.ones(5)), "ips_by_model_tau"),
        (lambda: robustness.tau_sweep(np.array([[1.0, np.nan]] * 3)), "ips_by_model_tau"),
        (lambda: M.all_pairs(1), "n_conditions"),
        (lambda: reference.order_bands(-1), "n"),
    ],
)
def test_bad_input_raises_value_error_naming_argument(call, name):
    with pytest.raises(ValueError, match=rf"\b{name}\b"):
        call()
