"""The claims table's corrections (`ips.comparisons.claims.correction`): Benjamini–Hochberg
against its definition and hand-computed cases, a control's p joining its row's, one fact's
repeated rows counted once, and Holm over the declared hypotheses."""

import numpy as np
import pytest

from ips.analysis.uncertainty import benjamini_hochberg
from ips.comparisons.claims.correction import GAUSSIAN_CLAIM, corrected, repeats
from ips.comparisons.claims.verdicts import Claim


def by_definition(p):
    """q_i = min over j with p_j >= p_i of min(1, k p_j / rank_j), written out."""
    k = len(p)
    rank = {i: 1 + sum(p[j] < p[i] or (p[j] == p[i] and j < i) for j in range(k))
            for i in range(k)}
    return [min(min(1.0, k * p[j] / rank[j]) for j in range(k) if p[j] >= p[i])
            for i in range(k)]


def test_benjamini_hochberg_is_its_definition():
    rng = np.random.default_rng(0)
    for _ in range(20):
        p = list(rng.uniform(0, 0.2, size=rng.integers(1, 12)))
        np.testing.assert_allclose(benjamini_hochberg(p), by_definition(p), rtol=1e-12)
    q = benjamini_hochberg([0.01, np.nan, 0.04, 0.03, 0.5])
    np.testing.assert_allclose(q, [0.04, np.nan, 0.16 / 3, 0.16 / 3, 0.5])


def row(claim, scope, p, control_p=np.nan, verdict="supported"):
    return Claim(claim, scope, "", p_value=p, control_p=control_p, verdict=verdict)


def test_q_values_by_hand():
    """Three rows alone (p 0.01, 0.02, 0.5); one whose control's p (0.04) is larger than its
    own; a control's row and an untestable row are outside the family."""
    rows = corrected([row("a", "m / d", 0.01), row("b", "m / d", 0.02), row("c", "m / d", 0.5),
                      row("d", "m / d", 0.001, control_p=0.04),
                      row("a", "m-twin / d", 0.001, verdict="control"),
                      row("e", "m / d", np.nan, verdict="untestable")])
    # family p: 0.01, 0.02, 0.5, 0.04 (k = 4): q = 0.04, 0.04, 0.5, 0.16 / 3
    np.testing.assert_allclose([r.q_value for r in rows],
                               [0.04, 0.04, 0.5, 0.16 / 3, np.nan, np.nan])
    assert all(np.isnan(r.holm_p) for r in rows)


def test_rows_that_repeat_one_fact_count_once():
    """Three Gaussian levels at one scope (p 0.001, 0.2, 0.04) are one hypothesis of Simes'
    p min(3 × 0.001 / 1, 3 × 0.04 / 2, 3 × 0.2 / 3) = 0.003; beside one other row (0.03) BH
    gives the fact 0.006 and the row 0.03; each level's q is the larger of 0.006 and its BH
    q within the fact (0.003, 0.2, 0.06)."""
    assert GAUSSIAN_CLAIM in repeats() and "template_above_baseline_null" in repeats()
    levels = [row(GAUSSIAN_CLAIM, f"m / d / 0shot / noise {c} × range of v", p)
              for c, p in ((0.003, 0.001), (0.01, 0.2), (0.03, 0.04))]
    rows = corrected([*levels, row("a", "m / d", 0.03)])
    np.testing.assert_allclose([r.q_value for r in rows], [0.006, 0.2, 0.06, 0.03])


def test_a_row_its_control_leaves_undecided_counts_as_p_one():
    """Raw supported, left undecided by its control (the trained effect runs the other way
    against its twins): p = 1 in the family, whatever its own and its control's p."""
    rows = corrected([row("a", "m / d", 0.01),
                      Claim("b", "m / d", "", p_value=0.001, control_p=0.0005,
                            raw_verdict="supported", verdict="undecided"),
                      row("c", "m / d", 0.02)])
    # family p: 0.01, 1, 0.02 (k = 3): q = 0.03, 1, 0.03
    np.testing.assert_allclose([r.q_value for r in rows], [0.03, 1.0, 0.03])


def test_rows_within_a_fact_are_corrected_at_alpha_r_over_m():
    """Benjamini–Bogomolov: facts F (three Gaussian levels, p 0.001, 0.02, 0.03) and four
    single rows (p 0.01, 0.2, 0.4, 0.6). Simes' p of F: min(0.003, 0.03, 0.03) = 0.003. Fact
    q over m = 5 facts (0.003, 0.01, 0.2, 0.4, 0.6): 0.015, 0.025, 1/3, 0.5, 0.6; R = 2
    selected. Within F, BH q (0.003, 0.03, 0.03) times m/R = 2.5: 0.0075, 0.075, 0.075,
    so of F's rows only the first keeps q ≤ 0.05 (max with the fact's 0.015)."""
    levels = [row(GAUSSIAN_CLAIM, f"m / d / 0shot / noise {c} × range of v", p)
              for c, p in ((0.003, 0.001), (0.01, 0.02), (0.03, 0.03))]
    singles = [row(x, "m / d", p) for x, p in (("a", 0.01), ("b", 0.2), ("c", 0.4),
                                               ("e", 0.6))]
    rows = corrected([*levels, *singles])
    np.testing.assert_allclose([r.q_value for r in rows],
                               [0.015, 0.075, 0.075, 0.025, 1 / 3, 0.5, 0.6])


def test_holm_over_the_declared_hypotheses():
    """Holm over the named rows (p 0.01, 0.02) and a named row the table lacks (p = 1):
    0.03 and 0.04; other rows have no holm_p."""
    rows = corrected([row("a", "m / d", 0.01), row("b", "m / d", 0.02), row("c", "m / d", 0.3)],
                     [{"claim": "a", "scope": "m / d"}, {"claim": "b", "scope": "m / d"},
                      {"claim": "x", "scope": "m / d"}])
    assert [r.holm_p for r in rows[:2]] == pytest.approx([0.03, 0.04])
    assert np.isnan(rows[2].holm_p)
