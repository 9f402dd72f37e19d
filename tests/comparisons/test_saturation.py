"""IPS near its ceiling (ips.comparisons.claims.saturation, ips.analysis.nulls.saturation):
the ratio in the IPS table and on every claim that rests on the cell, flagged at 0.9."""

import numpy as np
import pytest

from builders import attrs, make_metrics, write_all
from ips.analysis.nulls import SATURATED, saturation
from ips.comparisons.claims.saturation import (
    UNSTABLE_CLAIM,
    cell_saturation,
    cells,
    flagged,
    unstable_ceilings,
)
from ips.comparisons.claims.verdicts import Claim
from ips.figures.tables.results import table_rows
from ips.formats.metrics import read_metrics


def with_ceiling(ds, ceiling):
    """`ds` with a ceiling of the same value in every group and band (as `ips metrics`
    writes it: IPS, interval, samples valued, per sample)."""
    ds = ds.copy()
    g, s = ds.sizes["group"], ds.sizes["sample"]
    ds["ceiling_ips"] = (("group", "band"), np.full((g, 4), ceiling))
    ds["ceiling_ips_ci"] = (("group", "band", "bound"), np.full((g, 4, 2), ceiling))
    ds["ceiling_n_valued"] = (("group", "band"), np.full((g, 4), s))
    ds["sample_ceiling_ips"] = (("group", "band", "sample"), np.full((g, 4, s), ceiling))
    return ds


@pytest.fixture
def two(tmp_path):
    """a: 1.5 against a ceiling of 1.6 (0.9375, saturated); b: 1.0 (0.625), its 1-shot
    1.55 (0.969, saturated)."""
    a = with_ceiling(make_metrics("a", attrs(params=2e9), samples=4), 1.6)
    b = with_ceiling(make_metrics("b", attrs(params=1e9), ips0=1.0, shots={1: 1.55},
                                  samples=4), 1.6)
    return [read_metrics(p) for p in write_all(tmp_path, [a, b])]


def test_the_ratio_by_hand():
    assert saturation(1.5, 1.6) == pytest.approx(0.9375)
    assert np.isnan(saturation(1.0, 0.0)) and np.isnan(saturation(np.nan, 1.0))
    assert SATURATED == 0.9


def test_each_claim_says_whether_it_rests_on_a_saturated_cell(two):
    a, b = two
    assert cell_saturation(a) == pytest.approx(0.9375)
    assert cell_saturation(b) == pytest.approx(0.625)
    assert cell_saturation(b, "1shot") == pytest.approx(1.55 / 1.6)
    rows = {r.scope: r for r in flagged([
        Claim("x", "a / arc", "p"), Claim("x", "b / arc", "p"),
        Claim("factor_scale", "arc / a vs b / 0shot", "p"),
        Claim("factor_few_shot", "arc / b / 1shot vs 0shot", "p"),
        Claim("ips_vs_consistency", "arc", "p")], cells(two), {"a", "b"})}
    assert rows["a / arc"].saturation == pytest.approx(0.9375)
    assert "saturated: IPS is 0.94 of its ceiling" in rows["a / arc"].note
    assert rows["b / arc"].saturation == pytest.approx(0.625) and rows["b / arc"].note == ""
    assert rows["arc / a vs b / 0shot"].saturation == pytest.approx(0.9375)  # a pair: the max
    assert rows["arc / b / 1shot vs 0shot"].saturation == pytest.approx(1.55 / 1.6)
    assert "saturated" in rows["arc"].note  # a ranking rests on every model of the dataset


def test_the_ips_table_holds_the_ratio_and_the_flag(two):
    rows = [r for r in table_rows(two) if r["band"] == "all"]
    got = {(r["model"], r["group"]): (r["ips_over_ceiling"], r["saturated"]) for r in rows}
    assert got[("a", "0shot")] == (pytest.approx(0.9375), True)
    assert got[("b", "0shot")] == (pytest.approx(0.625), False)
    assert got[("b", "1shot")] == (pytest.approx(1.55 / 1.6), True)


def test_the_unstable_share_is_read_against_its_own_ceiling(tmp_path):
    """a's ceiling games hold 6 opposite, 2 different and 2 similar salient interactions
    (unstable share 0.8); b's 3, 1 and 6 (0.4). a's unstable share 0.76 is 0.95 of its
    ceiling (saturated, though a's IPS is far below its own); b's 0.3 is 0.75 of its."""
    def types(ds, counts):
        ds = ds.copy()
        g = ds.sizes["group"]
        ds["ceiling_type_count"] = (("group", "type"), np.tile(counts, (g, 1)))
        return ds.assign_coords(type=np.array(["opposite_sign", "same_sign_different_effect",
                                               "same_sign_similar_effect"], dtype=object))

    a = types(with_ceiling(make_metrics("a", attrs(), ips0=0.5, samples=4), 1.6), [6, 2, 2])
    b = types(with_ceiling(make_metrics("b", attrs(), ips0=0.5, samples=4), 1.6), [3, 1, 6])
    entries = [read_metrics(p) for p in write_all(tmp_path, [a, b])]
    ceilings = unstable_ceilings(entries)
    assert ceilings == {("a", "arc"): pytest.approx(0.8), ("b", "arc"): pytest.approx(0.4)}
    rows = flagged([Claim(UNSTABLE_CLAIM, "a / arc", "p", 0.76),
                    Claim(UNSTABLE_CLAIM, "b / arc", "p", 0.3)], cells(entries), {"a", "b"},
                   ceilings)
    assert rows[0].saturation == pytest.approx(0.95)
    assert "the unstable share is 0.95 of what two unrelated items give (0.80" in rows[0].note
    assert rows[1].saturation == pytest.approx(0.75) and rows[1].note == ""
