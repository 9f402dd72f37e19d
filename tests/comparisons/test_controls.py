"""Every claims row beside its control (ips.comparisons.claims.controls): the swap test, the
final-verdict rule, per-model rows beside the model's untrained twin, factor comparisons
beside the twins' comparison, and rows across models beside all twins."""

import json
import math
from itertools import product

import numpy as np
import pytest

from builders import attrs, make_metrics, write_all
from ips.analysis import uncertainty
from ips.comparisons import compare as factors
from ips.comparisons.claims import across_models, controls, verdicts
from ips.comparisons.claims.verdicts import Claim, ControlSpec
from ips.formats.metrics import read_metrics


def test_swap_test_of_the_mean_is_the_sign_flip_test_of_the_differences():
    rng = np.random.default_rng(3)
    a, b = rng.normal(0.3, 1, 9), rng.normal(0, 1, 9)
    t = uncertainty.swap_test(a, b, np.mean)
    assert t.p_value == uncertainty.sign_flip_test(a - b).p_value
    assert t.mean_difference == pytest.approx(np.mean(a) - np.mean(b)) and t.n == 9


def test_swap_test_by_hand():
    """Three units, statistic max: every one of the 8 swaps enumerated by hand."""
    a, b = np.array([5.0, 1.0, 2.0]), np.array([0.0, 1.5, 1.0])
    observed = 5.0 - 1.5
    hits = 0
    for keep in product((True, False), repeat=3):
        x = np.where(keep, a, b)
        y = np.where(keep, b, a)
        hits += abs(x.max() - y.max()) >= observed - 1e-12
    t = uncertainty.swap_test(a, b, np.max)
    assert (t.p_value, t.method, t.mean_difference) == (hits / 8, "exact", observed)


def row(verdict="supported", estimate=-0.2, n=12):
    return Claim("c", "m / d", "paper", estimate, n=n, p_value=0.01, verdict=verdict)


def flip(p, delta, n=12):
    return uncertainty.SignFlipTest(p, n, delta, "exact", 1 << n)


@pytest.mark.parametrize("raw, test, bounds, final", [
    ("supported", flip(0.01, -0.15), None, "supported"),      # beyond the twin, same way
    ("supported", flip(0.30, -0.05), None, "undecided"),      # the twin earns it too
    ("supported", flip(0.01, +0.15), None, "undecided"),      # the twin's effect is larger
    ("undecided", flip(0.001, -0.3), None, "undecided"),      # a control decides nothing
    ("untestable", flip(math.nan, math.nan), None, "untestable"),
    # level rows (estimate −0.2): read against the bound their verdict is about
    ("contradicted", flip(0.01, -0.1), (0.0, 0.5), "contradicted"),  # further below 0
    ("contradicted", flip(0.01, +0.1), (0.0, 0.5), "undecided"),     # the twin is lower
    ("supported", flip(0.01, -0.1), (-1.0, 0.1), "supported"),       # further below hi
    ("supported", flip(0.01, +0.1), (-1.0, 0.1), "undecided"),       # the twin is lower
    ("supported", flip(0.01, +0.1), (0.4, 0.6), "supported"),        # two bounds: either way
])
def test_final_verdict_rule(raw, test, bounds, final):
    r = controls.decide(row(raw), -0.05, "supported", test, "samples", bounds=bounds)
    assert (r.verdict, r.raw_verdict) == (final, raw)
    if raw == "supported" and test.p_value == 0.30:
        assert "the control earns the same raw verdict, supported" in r.note
    if np.isfinite(test.p_value):  # one-sided: half the two-sided p on its side
        assert r.control_p in (test.p_value / 2, 1 - test.p_value / 2)
        assert r.control_estimate == -0.05
        if raw in ("supported", "contradicted"):
            assert (r.control_p < 0.05) == (final == raw)


def test_one_sided_p_is_half_the_two_sided_on_the_observed_side():
    t = flip(0.04, -0.2)
    assert uncertainty.one_sided(t, -1) == 0.02
    assert uncertainty.one_sided(t, +1) == 0.98
    assert uncertainty.one_sided(t, 0) == 1.0


def test_no_control_decides_nothing():
    r = controls.decide(row(), math.nan, "", None, "samples")
    assert r.verdict == "undecided" and r.raw_verdict == "supported" and "no control" in r.note


def test_count_rows_read_their_direction_against_one_half():
    """9 of 10 models against twins that split evenly: beyond them; 9 of 10 against twins
    that do the same: not."""
    units = tuple(f"m{i}" for i in range(10))
    trained = replace_spec(row("supported", 0.9, 10), units, [1.0] * 9 + [0.0], 0.5)
    for twins, final in (([1.0, 0.0] * 5, "undecided"), ([0.0] * 10, "supported"),
                         ([1.0] * 9 + [0.0], "undecided")):
        control = replace_spec(row("undecided", np.mean(twins), 10), units, twins, 0.5)
        assert controls.against(trained, [control], "models", 999, 0).verdict == final


def replace_spec(r, units, records, reference=0.0):
    from dataclasses import replace

    return replace(r, spec=ControlSpec(units, np.asarray(records, float), reference=reference))


def twin_of(ds, model, seed=0, draw=1):
    """A metrics file of draw `draw` of the untrained twin of `model` (its source and control
    as `ips score` records them)."""
    ds = ds.copy()
    ds.attrs["model"] = f"{model}-twin" + (f"-{draw}" if draw > 1 else "")
    ds.attrs["model_source"] = json.dumps({"redraw": model, "seed": seed + draw - 1})
    ds.attrs["model_control"] = json.dumps({"kind": "twins", "of": model,
                                            **({"draw": draw} if draw > 1 else {})})
    return ds


@pytest.fixture
def four_with_twins(tmp_path):
    """Base and instruct models of one family (instruct 0.2 lower on 12 paired samples) and
    their twins, which are either alike (no instruct effect) or show the same drop."""
    def pair(inst, seed):
        base = make_metrics("base-1b", attrs("f", "s", params=1e9), ips0=1.6, samples=12,
                            own=0.05, own_seed=seed)
        other = make_metrics("inst-1b", attrs("f", "s", "instruct", params=1e9), ips0=inst,
                             samples=12, own=0.05, own_seed=seed + 1)
        return base, other

    def run(twin_inst):
        b, i = pair(1.4, 1)
        tb, ti = pair(twin_inst, 3)
        files = write_all(tmp_path / f"t{twin_inst}", [b, i, twin_of(tb, "base-1b"),
                                                      twin_of(ti, "inst-1b")])
        return files
    return run


@pytest.mark.parametrize("twin_inst, final", [(1.6, "supported"), (1.4, "undecided")])
def test_factor_row_beside_the_twins_comparison(four_with_twins, twin_inst, final):
    """The twins are compared only with each other (one instruct_vs_base comparison, not
    three), and the trained row is decided only when its drop exceeds the twins'."""
    paths = four_with_twins(twin_inst)
    fx = factors.compare(paths, seed=0, draws=999)
    comp = fx["comparison_factor"].values.astype(str)
    assert list(comp).count("instruct_vs_base") == 1
    c = fx.isel(comparison=list(comp).index("instruct_vs_base")).sel(band="all")
    assert int(c["n_control"]) == 12
    assert float(c["control_delta_ips"]) == pytest.approx(twin_inst / 1.6 - 1)
    entries = [read_metrics(p) for p in paths]
    (r,) = [r for r in across_models.factor_claims(fx, entries)
            if r.claim == "factor_instruct_vs_base"]
    assert r.raw_verdict == "supported" and r.verdict == final
    assert r.control_estimate == pytest.approx(twin_inst / 1.6 - 1)


def test_per_model_rows_beside_the_twins_rows(four_with_twins):
    """with_controls pairs each row of a model with the same row of its twin by sample, and
    marks the twin's rows as controls."""
    entries = [read_metrics(p) for p in four_with_twins(1.6)]
    rows = {str(e.path): [Claim("x", verdicts.join_scope(e.model, e.dataset), "p",
                                float(np.mean(d)), n=12, p_value=0.001, verdict="supported",
                                spec=ControlSpec(tuple(e.ds["sample"].values.astype(str)), d))]
            for e, d in zip(entries, (np.full(12, 1.0) + np.arange(12) * 0.01,
                                      np.full(12, 1.0), np.full(12, 0.1) - np.arange(12) * 0.01,
                                      np.full(12, 1.0)))}
    out = controls.with_controls(rows, entries, 999, 0)
    by_scope = {r.scope: r for r in out}
    assert by_scope["base-1b / arc"].verdict == "supported"  # far above its twin's 0.1
    assert by_scope["base-1b / arc"].control_p == pytest.approx(1 / 2**12)  # one-sided
    assert by_scope["inst-1b / arc"].verdict == "undecided"  # its twin gives the same
    assert by_scope["base-1b-twin / arc"].verdict == "control"
    assert by_scope["base-1b-twin / arc"].raw_verdict == "supported"


def test_table7_row_beside_its_twins(tmp_path):
    """A matched MoE/dense pair whose twins show no difference: the trained pair's drop is
    beyond its control; the twins are never matched with trained models."""
    from ips.comparisons.claims.nulls import matched_claims
    from ips.figures.tables.appendix import matched_rows

    def pair(dense_ips, seed):
        moe = make_metrics("qmoe", attrs("q", "m", architecture="moe", params=14e9,
                                         active_params=3e9), ips0=1.7, samples=12, own=0.05,
                           own_seed=seed)
        dense = make_metrics("q3", attrs("q", "d", params=3e9), ips0=dense_ips, samples=12,
                             own=0.05, own_seed=seed + 1)
        return moe, dense

    moe, dense = pair(1.5, 1)
    tmoe, tdense = pair(1.7, 3)
    entries = [read_metrics(p) for p in write_all(tmp_path, [
        moe, dense, twin_of(tmoe, "qmoe"), twin_of(tdense, "q3")])]
    (row,) = matched_rows(entries, 999, 0)
    assert (row["moe_model"], row["dense_model"], row["n_control"]) == ("qmoe", "q3", 12)
    assert row["control_delta_ips"] == pytest.approx(0.0, abs=1e-9)
    (claim,) = matched_claims([row], ["arc"])
    assert claim.raw_verdict == "supported" and claim.verdict == "supported"
    assert claim.control_p == pytest.approx(1 / 2**12)  # one-sided


def test_factor_row_beyond_the_null_beside_the_twins(tmp_path):
    """Instruct lowers IPS by 0.2 beyond a null that does not move; its twins show no
    drop: the row beyond the null is decided against the twins' excess."""
    from builders import with_matched_null

    def pair(inst, seed):
        base = make_metrics("base-1b", attrs("f", "s", params=1e9), ips0=1.6, samples=12,
                            own=0.05, own_seed=seed)
        other = make_metrics("inst-1b", attrs("f", "s", "instruct", params=1e9), ips0=inst,
                             samples=12, own=0.05, own_seed=seed + 1)
        return with_matched_null(base, 1.5, 1.5, seed), with_matched_null(other, 1.5, 1.5,
                                                                          seed + 1)

    b, i = pair(1.4, 1)
    tb, ti = pair(1.6, 3)
    paths = write_all(tmp_path, [b, i, twin_of(tb, "base-1b"), twin_of(ti, "inst-1b")])
    fx = factors.compare(paths, seed=0, draws=999)
    rows = {r.claim: r for r in across_models.factor_claims(fx, [read_metrics(p)
                                                               for p in paths])}
    r = rows["factor_instruct_vs_base_beyond_null"]
    assert r.raw_verdict == "supported" and r.verdict == "supported"
    assert r.control_estimate == pytest.approx(0.0, abs=0.05) and r.control_p < 0.05
    low = rows["factor_instruct_vs_base_low_falls_most"]
    assert low.control_test.startswith("paired sign-flip") and low.verdict == "undecided"


@pytest.mark.parametrize("twin_bands, verdict", [
    ([1.6] * 4, "supported"),             # the twins' low band does not move
    ([1.2, 0.8, 1.3, 1.5], "undecided"),  # the twins' low band falls as much
])
def test_low_band_row_beside_the_twins(tmp_path, twin_bands, verdict):
    """Instruct lowers the low band most (50 % against 19 % and 6 %); the row is decided
    against the same gaps of the twins: per sample the trained gaps minus the twins', both
    tested (Bonferroni), as the row's own test."""
    def jitter(ds, seed):  # noise of its own in every band (the builder's is band-free)
        noise = 0.03 * np.random.default_rng(seed).standard_normal(ds["sample_ips"].shape)
        return ds.assign(sample_ips=ds["sample_ips"] + noise)

    def pair(inst, seed):
        return (jitter(make_metrics("base-1b", attrs("f", "s", params=1e9), ips0=[1.6] * 4,
                                    samples=12), seed),
                jitter(make_metrics("inst-1b", attrs("f", "s", "instruct", params=1e9),
                                    ips0=inst, samples=12), seed + 1))

    b, i = pair([1.2, 0.8, 1.3, 1.5], 1)
    tb, ti = pair(twin_bands, 3)
    paths = write_all(tmp_path, [b, i, twin_of(tb, "base-1b"), twin_of(ti, "inst-1b")])
    fx = factors.compare(paths, seed=0, draws=999)
    rows = [r for r in across_models.factor_claims(fx, [read_metrics(p) for p in paths])
            if r.claim == "factor_instruct_vs_base_low_falls_most"]
    r = next(r for r in rows if "twin" not in r.scope)
    assert r.raw_verdict == "supported" and r.verdict == verdict
    assert r.control_estimate == pytest.approx(float(fx["control_low_gap"].values[0]))
    two_sided = float(fx["control_p_low_gap_difference"].values[0])
    assert r.control_p in (two_sided / 2, 1 - two_sided / 2)
    assert (r.control_p < 0.05) == (verdict == "supported")


@pytest.mark.parametrize("control, final", [(0.5, "undecided"), (0.2, "supported"),
                                            (0.8, "supported")])
def test_a_two_sided_band_counts_its_control_only_outside_the_band(control, final):
    """A share in 40-60 % beside a control inside the band too is not the model's own; beside
    a control below the band it is, when the model lies above it (p < α)."""
    r = controls.decide(row("supported", 0.5), control, "", flip(0.01, 0.5 - control),
                        "samples", bounds=(0.4, 0.6))
    assert r.verdict == final


def test_several_draws_are_read_against_their_spread(four_with_twins):
    """Three twins of one model: the row's control is the items × draws test of its estimate
    against the draws' (not a paired test over samples), with their mean, spread and count
    beside it. Without noise over samples it is the prediction test against the draws."""
    paths = four_with_twins(1.6)
    entries = [read_metrics(p) for p in paths]
    base, twin = entries[0], next(e for e in entries if e.model == "base-1b-twin")
    draws = [twin_of(twin.ds, "base-1b", draw=k) for k in (2, 3)]
    for k, ds in zip((2, 3), draws):
        ds.attrs["model"] = f"base-1b-twin-{k}"
    extra = [read_metrics(p) for p in write_all(paths[0].parent / "more", draws)]
    entries = [base, twin, *extra]
    ids = tuple(base.ds["sample"].values.astype(str))
    values = {"base-1b": 1.0, "base-1b-twin": 0.10, "base-1b-twin-2": 0.20,
              "base-1b-twin-3": 0.15}
    rows = {str(e.path): [Claim("x", verdicts.join_scope(e.model, e.dataset), "p",
                                values[e.model], n=12, p_value=0.001, verdict="supported",
                                spec=ControlSpec(ids, np.full(12, values[e.model])))]
            for e in entries}
    (r,) = [r for r in controls.with_controls(rows, entries, 999, 0) if r.scope == "base-1b / arc"]
    expected = uncertainty.prediction_test(1.0, [0.10, 0.20, 0.15])
    assert r.control_draws == 3 and r.control_sd == pytest.approx(0.05)
    assert r.control_estimate == pytest.approx(0.15)
    assert r.control_p == pytest.approx(expected.p_value / 2) and "ν = 2)" in r.control_test
    assert "items × draws test" in r.control_test
    assert r.verdict == ("supported" if expected.p_value / 2 < 0.05 else "undecided")


def test_factor_rows_read_the_draws_of_the_twins_comparison(tmp_path):
    """Two draws of each twin: the factors file holds the twins' ΔIPS per draw (draw 1 with
    draw 1, draw 2 with draw 2) and the items × draws test against them, by which the factor
    row is read (one-sided, in the direction of its drop)."""
    base = make_metrics("base-1b", attrs("f", "s", params=1e9), ips0=1.6, samples=12,
                        own=0.05, own_seed=1)
    inst = make_metrics("inst-1b", attrs("f", "s", "instruct", params=1e9), ips0=1.0,
                        samples=12, own=0.05, own_seed=2)
    twins = []
    for k, (b, i) in enumerate(((1.6, 1.5), (1.5, 1.5)), start=1):
        tb = make_metrics("x", attrs("f", "s", params=1e9), ips0=b, samples=12, own=0.05,
                          own_seed=10 + k)
        ti = make_metrics("y", attrs("f", "s", "instruct", params=1e9), ips0=i, samples=12,
                          own=0.05, own_seed=20 + k)
        twins += [twin_of(tb, "base-1b", draw=k), twin_of(ti, "inst-1b", draw=k)]
    paths = write_all(tmp_path, [base, inst, *twins])
    fx = factors.compare(paths, seed=0, draws=999)
    comp = list(fx["comparison_factor"].values.astype(str))
    assert comp.count("instruct_vs_base") == 1
    c = fx.isel(comparison=comp.index("instruct_vs_base")).sel(band="all")
    assert c["control_delta_ips_draws"].values == pytest.approx([1.5 / 1.6 - 1, 0.0])
    (r,) = [r for r in across_models.factor_claims(fx, [read_metrics(p) for p in paths])
            if r.claim == "factor_instruct_vs_base"]
    assert r.control_draws == 2 and "items × draws test" in r.control_test
    assert int(c["control_items_units"]) == 12
    # the test reads ΔIPS of the per-sample means: about the row's estimate minus the draws'
    assert float(c["control_items_difference"]) == pytest.approx(
        r.estimate - np.mean([1.5 / 1.6 - 1, 0.0]), abs=0.02)
    two_sided = float(c["control_items_p"])
    assert r.control_p == pytest.approx(two_sided / 2 if r.estimate < np.mean(
        [1.5 / 1.6 - 1, 0.0]) else 1 - two_sided / 2)


def test_the_control_table_gives_each_models_ips_beside_its_twins_draws(tmp_path):
    """control_table.csv and the README: the model's IPS beside its three twins' mean, sd
    and range, and the prediction test against them; nothing for a model without twins."""
    from ips.figures.tables.results import control_rows
    from ips.figures.text.readme import control_section

    model = make_metrics("m", attrs(), ips0=1.5)
    twins = [twin_of(make_metrics("x", attrs(), ips0=v), "m", draw=k)
             for k, v in zip((1, 2, 3), (1.0, 1.2, 1.1))]
    entries = [read_metrics(p) for p in write_all(
        tmp_path, [model, *twins, make_metrics("alone", attrs(), ips0=1.0)])]
    rows = [r for r in control_rows(entries) if (r["group"], r["band"]) == ("0shot", "all")]
    assert [r["model"] for r in rows] == ["m"]
    (r,) = rows
    expected = uncertainty.prediction_test(1.5, [1.0, 1.2, 1.1])
    assert r["control_draws"] == 3 and r["control_kind"] == "twins"
    assert (r["control_ips_mean"], r["control_ips_sd"]) == (pytest.approx(1.1),
                                                            pytest.approx(0.1))
    assert (r["control_ips_min"], r["control_ips_max"]) == (1.0, 1.2)
    assert r["p_value"] == pytest.approx(expected.p_value)
    line = next(x for x in control_section(entries) if x.startswith("| m | arc |"))
    assert "1.100 ± 0.100 (3)" in line and "1.000–1.200" in line
