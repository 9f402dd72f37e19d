"""The claims table (ips.comparisons.claims): verdict rules, the permutation tests it adds, and the
rows written from metrics and factors files."""

import json
import math
from itertools import permutations

import numpy as np
import pytest
import scipy.stats

from builders import (
    attrs,
    make_metrics,
    make_values,
    with_matched_null,
    write_all,
    write_pair,
)
from ips.analysis import uncertainty
from ips.analysis.summary import summarize
from ips.comparisons import compare as factors
from ips.comparisons import factors as comparisons_factors
from ips.comparisons.claims import across_models, nulls, per_model, verdicts
from ips.comparisons.claims.verdicts import directional, spearman_permutation, within
from ips.formats.metrics import Entry, read_metrics


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
    assert within(ci, 0.4, 0.6, n=10) == verdict


def test_within_needs_enough_samples():
    # an interval wholly outside the range decides nothing from 9 samples (or from 1, where the
    # percentile bootstrap interval has width 0)
    assert within((0.1, 0.2), 0.4, 0.6, n=9) == "undecided"
    assert within((0.2, 0.2), 0.4, 0.6, n=1) == "undecided"
    assert within((0.1, 0.2), 0.4, 0.6, n=uncertainty.MIN_RELIABLE_N) == "contradicted"


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


# ------------------------------------------------------------ rows from real metrics files


def entry(ds, path="m.nc"):
    return Entry(path, ds.attrs["model"], ds.attrs["dataset"],
                 json.loads(ds.attrs["model_attributes"]), ds)


@pytest.fixture(scope="module")
def metrics_entry(tmp_path_factory):
    """`ips metrics` of 12 random games (n in 3..5) under the test conditions."""
    tmp = tmp_path_factory.mktemp("claims")
    v, f = write_pair(tmp, "g", make_values([f"item{i:02d}" for i in range(12)], seed=11))
    return entry(summarize([v], [f], tau=0.1, seed=2, n_boot=300))


def by_claim(rows):
    return {r.claim: r for r in rows}


def test_order_rows_are_the_metrics_band_tests(metrics_entry):
    ds = metrics_entry.ds
    rows = by_claim(per_model.order_claims(metrics_entry))
    for claim, pair in (("order_low_below_mid", "low-mid"), ("order_mid_below_high", "mid-high")):
        r = rows[claim]
        sel = dict(group="0shot", band_pair=pair)
        assert r.estimate == float(ds["band_diff"].sel(**sel))
        assert r.p_value == float(ds["band_p_holm"].sel(**sel)) and "Holm" in r.test
        # independent: the mean per-sample difference of the two bands, over the samples
        # valued in both (a game with n = 3 may have no salient low-order interaction)
        lo, hi = pair.split("-")
        x = ds["sample_ips"].sel(group="0shot")
        d = (x.sel(band=lo) - x.sel(band=hi)).values
        assert r.n == int(ds["band_n"].sel(**sel)) == np.isfinite(d).sum() > 6
        assert r.estimate == pytest.approx(np.nanmean(d))
        assert r.verdict == verdicts.directional(r.estimate, r.p_value, -1)


def test_type_rows_pool_the_type_counts(metrics_entry):
    ds = metrics_entry.ds
    rows = by_claim(per_model.type_claims(metrics_entry))
    count = ds["type_count"].sel(group="0shot")  # pooled counts, computed by ips metrics
    for claim, changed, types, rng in (
            ("types_changed_opposite", "yes", [0], per_model.OPPOSITE_RANGE),
            ("types_changed_similar", "yes", [2], per_model.SIMILAR_RANGE),
            ("types_unchanged_unstable", "no", [0, 1], (0.5, 1.0))):
        r = rows[claim]
        c = count.sel(changed=changed).values
        if c.sum() == 0:
            assert r.verdict == "untestable"
            continue
        assert r.estimate == pytest.approx(c[types].sum() / c.sum())
        assert r.ci_low <= r.estimate <= r.ci_high and 0 <= r.ci_low and r.ci_high <= 1
        assert r.verdict == verdicts.within((r.ci_low, r.ci_high), *rng, r.n)
        if r.n < uncertainty.MIN_RELIABLE_N:
            assert r.verdict == "undecided" and "too few" in r.note


def test_sparsity_rows_average_the_samples(metrics_entry):
    ds = metrics_entry.ds
    rows = by_claim(per_model.sparsity_claims(metrics_entry))
    share = rows["sparse_salient_share"]
    assert share.estimate == pytest.approx(float(ds["salient_share"]))  # equal conditions
    assert share.n == 12 and share.ci_low <= share.estimate <= share.ci_high
    # random games are not sparse: far more than 10% of Ω is salient, with an interval to show
    assert share.ci_low > per_model.SPARSE_SHARE and share.verdict == "contradicted"
    err = rows["sparse_matching_top5"]
    assert err.estimate == pytest.approx(float(ds["matching_nrmse"].sel(keep=0.05)))


@pytest.fixture(scope="module")
def four_models():
    """Hand-made metrics files of 4 models (12 paired samples), 0-, 1- and 2-shot, and their
    factors."""
    ms = [
        make_metrics("base-1b", attrs("f", "s", params=1e9), ips0=1.6, shots={1: 1.3, 2: 1.25},
                     pair14=1.55, samples=12, own=0.05, own_seed=1),
        make_metrics("inst-1b", attrs("f", "s", "instruct", params=1e9), ips0=1.4,
                     shots={1: 1.3, 2: 1.2}, samples=12, own=0.05, own_seed=2),
        make_metrics("base-4b", attrs("f", "s", params=4e9), ips0=1.5, samples=12, own=0.05,
                     own_seed=3),
        make_metrics("other", attrs("g", "t", params=2e9), ips0=1.7, samples=12, own=0.05,
                     own_seed=4),
    ]
    for ds, c in zip(ms, (0.5, 0.6, 0.55, 0.4)):
        ds["output_consistency"] = ds["output_consistency"] * 0 + c
    entries = [entry(ds, f"{ds.attrs['model']}.nc") for ds in ms]
    return entries


def test_factor_rows_follow_the_factors_file(four_models, tmp_path):
    paths = []
    for e in four_models:
        p = tmp_path / f"{e.model}.nc"
        e.ds.to_netcdf(p, engine="h5netcdf")
        paths.append(p)
    fx = factors.compare(paths, seed=1, n_boot=200, draws=999)
    rows = across_models.factor_claims(fx)
    comp = fx["comparison_factor"].values.astype(str)
    for f in comparisons_factors.FACTORS:
        mine = [r for r in rows if r.claim == f"factor_{f}"]
        if f == "dense_vs_moe":
            assert len(mine) == 1 and mine[0].verdict == "untestable" and mine[0].note
            continue
        assert len(mine) == int((comp == f).sum()) > 0
        for r in mine:
            assert r.raw_verdict == verdicts.directional(r.estimate, r.p_value, -1)
            assert r.n == 12
    inst = [r for r in rows if r.claim == "factor_instruct_vs_base"]
    assert inst[0].estimate == pytest.approx((1.4 - 1.6) / 1.6)
    assert inst[0].raw_verdict == "supported"  # planted: 12 samples, all lower by 0.2 ± noise
    # no untrained twins in these files: no decided verdict without its control
    assert inst[0].verdict == "undecided" and "no control" in inst[0].note
    # no matched-size null in these files: each comparison's row against it says so
    beyond = [r for r in rows if r.claim.endswith("_beyond_null")]
    assert len(beyond) == len(comp) and all(r.verdict == "untestable" for r in beyond)


def test_factor_beyond_its_null(tmp_path):
    """Instruct lowers IPS by 0.2 while its matched-size null falls by 0.05 (both on 12
    paired samples): the row tests the per-sample difference of the two, −0.15."""
    base = make_metrics("base-1b", attrs("f", "s", params=1e9), ips0=1.6, samples=12,
                        own=0.05, own_seed=1)
    inst = make_metrics("inst-1b", attrs("f", "s", "instruct", params=1e9), ips0=1.4,
                        samples=12, own=0.05, own_seed=2)
    fx = factors.compare(write_all(tmp_path, [with_matched_null(base, 1.5, 1.5, 3),
                                              with_matched_null(inst, 1.45, 1.45, 4)]),
                         seed=0, draws=999)
    r = by_claim(across_models.factor_claims(fx))["factor_instruct_vs_base_beyond_null"]
    assert r.estimate == pytest.approx(-0.15) and r.n == 12
    assert r.p_value == float(fx["p_excess"].sel(band="all").values[0])
    assert r.raw_verdict == "supported" and "-0.033" in r.note  # ΔIPS of the nulls 1.45/1.5 − 1
    assert r.verdict == "undecided" and "no control" in r.note  # no untrained twins here


@pytest.mark.parametrize("inst_bands, verdict", [
    ([1.2, 0.8, 1.3, 1.5], "supported"),     # low falls by 50 %, mid 19 %, high 6 %
    ([1.2, 1.5, 1.1, 1.0], "contradicted"),  # low falls least (6 %), high most (38 %)
])
def test_factor_lowers_the_low_band_most(tmp_path, inst_bands, verdict):
    """max(ΔIPS^low − ΔIPS^mid, ΔIPS^low − ΔIPS^high) by hand, and its verdict on 12 paired
    samples with small noise: the two gaps' sign-flip tests recomputed from the per-sample
    gaps, Bonferroni-combined, with an interval that agrees with p about 0."""
    base = make_metrics("base-1b", attrs("f", "s", params=1e9), ips0=[1.6] * 4, samples=12,
                        own=0.02, own_seed=1)
    inst = make_metrics("inst-1b", attrs("f", "s", "instruct", params=1e9), ips0=inst_bands,
                        samples=12, own=0.02, own_seed=2)
    paths = write_all(tmp_path, [base, inst])
    fx = factors.compare(paths, seed=0, draws=999)
    d = [b / 1.6 - 1 for b in inst_bands[1:]]
    assert float(fx["low_gap"].values[0]) == pytest.approx(max(d[0] - d[1], d[0] - d[2]))
    r = by_claim(across_models.factor_claims(fx))["factor_instruct_vs_base_low_falls_most"]
    lo, hi = fx["low_gap_ci"].values[0]
    assert (r.estimate, r.ci_low, r.ci_high, r.n) == (pytest.approx(max(d[0] - d[1], d[0] - d[2])),
                                                      lo, hi, 12)
    assert lo <= r.estimate <= hi and hi - lo < 0.2
    # the per-sample gaps from the metrics files' per-sample IPS, tested by hand
    a, b = (e.ds["sample_ips"].sel(group="0shot", band=["low", "mid", "high"]).values
            for e in map(read_metrics, paths[::-1]))
    x = (a - b) / b.mean(axis=0)
    gaps = np.stack([x[:, 0] - x[:, 1], x[:, 0] - x[:, 2]], axis=1)
    assert r.estimate == pytest.approx(gaps.mean(axis=0).max())
    p = [uncertainty.sign_flip_test(gaps[:, k], draws=999, seed=0).p_value for k in (0, 1)]
    below = (gaps.mean(axis=0) < 0).all()
    assert r.p_value == pytest.approx(min(1, 2 * (max(p) if below else min(
        pk for pk, m in zip(p, gaps.mean(axis=0)) if m >= 0))))
    assert (r.p_value < 0.05) == (not lo <= 0 <= hi)
    assert r.raw_verdict == verdict and r.verdict == "undecided"  # no untrained twins here
    assert "no control" in r.note


def test_few_shot_curve_by_hand(four_models):
    e = four_models[0]
    r = per_model.few_shot_curve_claim(e, 999, 0)
    x = e.ds["sample_pair_ips"].sel(band="all")
    i0 = x.sel(pair="0shot:T1|T4").values
    i1 = x.sel(pair="1shot:T1-1shot|T4-1shot").values
    i2 = x.sel(pair="2shot:T1-2shot|T4-2shot").values
    d = (i0 - i1) - (i1 - i2)
    t = uncertainty.sign_flip_test(d, draws=999, seed=0)
    assert r.estimate == pytest.approx(np.mean(d)) and r.p_value == t.p_value and r.n == 12
    assert r.estimate == pytest.approx((1.55 - 1.3) - (1.3 - 1.25))
    assert r.verdict == "supported"  # every sample shares the drops: d is constant, > 0
    no_k = per_model.few_shot_curve_claim(four_models[2], 999, 0)
    assert no_k.verdict == "untestable" and "1-shot" in no_k.note
    # an instruction dataset has the row where it was scored with examples (Fig. 12d), and
    # none where it was not; an MCQ dataset always has it
    for e, rows in ((four_models[0], 1), (four_models[2], 0)):
        dolly = entry(e.ds.assign_attrs(kind="instruction"), "dolly.nc")
        assert len(per_model.few_shot_curve_claims(dolly, 999, 0)) == rows
        assert per_model.few_shot_curve_claims(e, 999, 0)[0].claim == "few_shot_most_from_0_to_1"


def test_consistency_across_models(four_models):
    (r,) = across_models.consistency_claims(four_models, ["arc"], draws=999, seed=0)
    x = [float(e.ds["ips"].sel(group="0shot", band="all")) for e in four_models]
    y = [0.5, 0.6, 0.55, 0.4]
    assert r.estimate == pytest.approx(scipy.stats.spearmanr(x, y)[0]) and r.n == 4
    # 4 models: even a perfect ordering has p = 2/24, so the row must say it cannot decide
    assert verdicts.spearman_permutation(np.arange(4.0), -np.arange(4.0))[1] == pytest.approx(2 / 24)
    assert r.verdict == "undecided" and "smallest attainable p is 2/4! = 0.083" in r.note
    (five,) = across_models.consistency_claims(four_models + four_models[:1], ["arc"], 999, 0)
    assert "attainable" not in five.note  # 2/120 < 0.05
    (two,) = across_models.consistency_claims(four_models[:2], ["arc"], draws=999, seed=0)
    assert two.verdict == "untestable" and "at least 3" in two.note


def test_peer_metrics_across_models(four_models):
    """Beyond the paper: one row per output-level metric, Spearman ρ of IPS against it across
    models; with 4 models the smallest attainable p says it cannot decide."""
    from ips.analysis.peers import PEERS

    values = np.array([[0.1, 0.2, 0.3, 2.0], [0.3, 0.1, 0.5, 1.0],
                       [0.2, 0.3, 0.4, 3.0], [0.4, 0.4, 0.2, 4.0]])  # model x peer
    with_peers = [Entry(e.path, e.model, e.dataset, e.attrs, e.ds.assign(
        peer_value=(("group", "peer"), np.tile(v, (e.ds.sizes["group"], 1))),
        peer=list(PEERS))) for e, v in zip(four_models, values)]
    rows = across_models.peer_claims(with_peers, ["arc"], draws=999, seed=0)
    assert [r.claim for r in rows] == [f"ips_vs_{p}" for p in PEERS]
    x = [float(e.ds["ips"].sel(group="0shot", band="all")) for e in four_models]
    for r, y in zip(rows, values.T):
        assert r.estimate == pytest.approx(scipy.stats.spearmanr(x, y)[0]) and r.n == 4
        assert r.verdict == "undecided" and "smallest attainable p is 2/4! = 0.083" in r.note
    assert across_models.peer_claims(four_models, ["arc"], 999, 0) == []  # files without them
    no_gold = [Entry(e.path, e.model, e.dataset, e.attrs, e.ds.assign(
        peer_value=e.ds["peer_value"].where(e.ds["peer"] == "dv_unmasked"))) for e in with_peers]
    rows = across_models.peer_claims(no_gold, ["arc"], draws=999, seed=0)
    assert [r.verdict for r in rows] == ["untestable"] * 3 + ["undecided"]
    assert "needs a gold option" in rows[0].note


@pytest.fixture(scope="module")
def null_entry(tmp_path_factory):
    """A metrics entry of 12 samples with the Gaussian and matched-size nulls."""
    from ips.analysis.nulls import Settings

    v, f = write_pair(tmp_path_factory.mktemp("nulls"), "g",
                      make_values([f"item{i:02d}" for i in range(12)], seed=11))
    return entry(summarize([v], [f], tau=0.1, seed=2, n_boot=300,
                           null=Settings((0.01,), 1, matched=True)))


def test_order_bands_beyond_the_matched_null(null_entry):
    """The order rows on IPS − matched-size null: per sample (IPS − N)^lo − (IPS − N)^hi of
    the 0-shot group, its sign-flip p Bonferroni-adjusted over the two rows and the interval
    at level 1 − α/2 that inverts it (recomputed here from the metrics file's per-sample
    variables)."""
    e = null_entry
    rows = by_claim(nulls.null_claims(e, 999, 0))
    x = (e.ds["sample_ips"] - e.ds["sample_matched_null_ips"]).sel(group="0shot")
    for lo, hi in (("low", "mid"), ("mid", "high")):
        d = (x.sel(band=lo) - x.sel(band=hi)).values
        r = rows[f"order_{lo}_below_{hi}_beyond_null"]
        assert r.estimate == pytest.approx(np.nanmean(d)) and r.n == np.isfinite(d).sum() > 6
        p = uncertainty.sign_flip_test(d, draws=999, seed=0).p_value
        assert r.p_value == pytest.approx(min(1.0, 2 * p)) and "Bonferroni" in r.test
        assert r.verdict == verdicts.directional(r.estimate, r.p_value, -1)
        ci = uncertainty.sign_flip_interval(d, level=1 - verdicts.ALPHA / 2, draws=999)
        assert (r.ci_low, r.ci_high) == (ci.low, ci.high)
        assert (r.p_value < verdicts.ALPHA) == (not r.ci_low <= 0 <= r.ci_high)


def test_ips_beyond_the_size_of_the_change(null_entry):
    """Per sample, R² of IPS and of the matched-size null on |Δv(x_N)| and sd(Δv) over the
    0-shot pairs, recomputed with the correlations' closed form; the row tests their
    difference. IPS that is a linear function of the two sizes is explained entirely."""
    e = null_entry
    ds = e.ds
    main = ds["pair_group"].values == "0shot"
    x1 = ds["sample_pair_dv_unmasked"].values[:, main]
    x2 = ds["sample_pair_change"].values[:, main]

    def r2(y):
        out = []
        for row in zip(y, x1, x2):
            ok = np.all(np.isfinite(row), axis=0)
            r = np.corrcoef([a[ok] for a in row])
            out.append((r[0, 1]**2 + r[0, 2]**2 - 2 * r[0, 1] * r[0, 2] * r[1, 2])
                       / (1 - r[1, 2]**2) if ok.sum() >= 4 else np.nan)
        return np.array(out)

    d = (r2(ds["sample_pair_matched_null"].sel(band="all").values[:, main])
         - r2(ds["sample_pair_ips"].sel(band="all").values[:, main]))
    row = by_claim(nulls.null_claims(e, 999, 0))["ips_beyond_change_size"]
    assert row.estimate == pytest.approx(np.nanmean(d)) and row.n == np.isfinite(d).sum() == 12
    assert row.p_value == pytest.approx(uncertainty.sign_flip_test(d, draws=999).p_value)
    assert row.verdict == verdicts.directional(row.estimate, row.p_value, +1)
    assert "mean R² of IPS" in row.note

    exact = ds["sample_pair_ips"].copy()
    exact.loc[{"band": "all"}] = 0.1 + ds["sample_pair_dv_unmasked"] + 2 * ds["sample_pair_change"]
    row = by_claim(nulls.null_claims(
        Entry(e.path, e.model, e.dataset, e.attrs, ds.assign(sample_pair_ips=exact)), 999, 0)
    )["ips_beyond_change_size"]
    assert "mean R² of IPS 1.00" in row.note
    assert row.estimate < 0 and row.verdict == "contradicted" and row.p_value < 0.01

    three = ds.assign(pair_group=ds["pair_group"].where(~main, "none"))  # no 0-shot pair left
    row = by_claim(nulls.null_claims(
        Entry(e.path, e.model, e.dataset, e.attrs, three), 999, 0))["ips_beyond_change_size"]
    assert row.verdict == "untestable" and "no sample has 4 template pairs" in row.note


def test_template_above_each_variant(null_entry):
    """One row per other baseline (and second dtype), group with samples scored again, and band:
    per sample the group's IPS − that null over the samples scored again (NaN elsewhere),
    paired sign-flip; the scope names the group and both settings. A group with no sample
    scored again has no row."""
    ds = null_entry.ds
    S, groups = ds.sizes["sample"], list(ds["group"].values)
    assert groups == ["0shot", "1shot"]
    null = np.full((S, 1, 2, 4), np.nan)
    null[:7, 0] = np.random.default_rng(4).uniform(0, 0.5, size=(7, 2, 4))
    n_valued = np.isfinite(null).sum(0)
    for name, value, dims in (("sample_baseline_null_ips", null,
                               ("sample", "baseline", "group", "band")),
                              ("baseline_null_n_valued", n_valued, ("baseline", "group", "band"))):
        ds = ds.assign({name: (dims, value)})
    with_other = ds.assign_coords(baseline=["eos"])
    with_other.attrs["baseline"] = json.dumps({"mask_source": "unk", "runs": {}})
    e = Entry(null_entry.path, null_entry.model, null_entry.dataset, null_entry.attrs, with_other)
    rows = nulls.variant_claims(e, 999, 0)
    bands = ("all", "low", "mid", "high")
    assert [r.scope.split(" / ", 2)[2] for r in rows] == [
        f"{g} / unk vs eos, band {b}" for g in groups for b in bands]
    for (g, b), r in zip([(g, b) for g in groups for b in bands], rows):
        d = (ds["sample_ips"].sel(group=g, band=b).values
             - null[:, 0, groups.index(g), list(ds["band"].values).index(b)])
        assert r.claim == "template_above_baseline_null" and r.n == np.isfinite(d).sum() > 3
        assert r.estimate == pytest.approx(np.nanmean(d))
        assert r.p_value == pytest.approx(uncertainty.sign_flip_test(d, draws=999).p_value)
        assert r.verdict == verdicts.directional(r.estimate, r.p_value, +1)
    assert nulls.variant_claims(null_entry, 999, 0) == []  # no precision or baseline run
    only_main = with_other.assign(baseline_null_n_valued=with_other["baseline_null_n_valued"].where(
        with_other["group"] == "0shot", 0))
    e = Entry(null_entry.path, null_entry.model, null_entry.dataset, null_entry.attrs, only_main)
    assert len(nulls.variant_claims(e, 999, 0)) == 4  # the 1-shot group has none


def test_too_few_samples_for_any_sign_flip_verdict_are_named():
    """5 paired samples: all signs alike gives p = 2/32 = 0.0625 at best, so no row can be
    decided, and its note says so; 6 samples can (2/64)."""
    d = np.full(5, 0.3)
    assert uncertainty.sign_flip_test(d).p_value == pytest.approx(2 / 32)
    assert "smallest attainable p is 2/2^5 = 0.0625" in verdicts.few_samples_note(5)
    assert uncertainty.sign_flip_test(np.full(6, 0.3)).p_value == pytest.approx(2 / 64)
    assert verdicts.few_samples_note(6) == "fewer than 10 samples: interval and test are rough"
    assert verdicts.few_samples_note(10) == "" and "bootstrap interval" in verdicts.few_samples_note(5, level=True)


def test_binomial_p_is_the_test_clopper_pearson_inverts():
    """For every k of n = 6 … 30: p < α exactly when the 95 % Clopper-Pearson interval
    excludes ½; by hand, 9 of 10: 2·P(X ≥ 9) = 2·11/1024."""
    for n in range(6, 31):
        for k in range(n + 1):
            ci = scipy.stats.binomtest(k, n).proportion_ci(0.95, method="exact")
            assert (verdicts.binomial_p(k, n) < 0.05) == (not ci.low <= 0.5 <= ci.high), (k, n)
    assert verdicts.binomial_p(9, 10) == pytest.approx(22 / 1024)


def test_binomial_mde_by_exact_power():
    """At share ½ + mde the test rejects with probability 0.8 (computed from the binomial
    pmf over its rejection region), below it with less; inf where n ≤ 5."""
    for n in (10, 40):
        mde = verdicts.binomial_mde(n)
        reject = np.array([verdicts.binomial_p(k, n) < 0.05 for k in range(n + 1)])
        power = scipy.stats.binom.pmf(np.arange(n + 1), n, 0.5 + mde)[reject].sum()
        lower = scipy.stats.binom.pmf(np.arange(n + 1), n, 0.5 + 0.98 * mde)[reject].sum()
        assert power == pytest.approx(0.8, abs=1e-6) and lower < 0.8
    assert verdicts.binomial_mde(5) == math.inf


def test_rank_mde():
    """Fisher z with Spearman's variance: tanh(2.80·√(1.06/(n − 3))); inf where the exact
    test over n ≤ 4 cannot reach α."""
    assert verdicts.rank_mde(20) == pytest.approx(math.tanh(2.8016 * math.sqrt(1.06 / 17)),
                                                  rel=1e-4)
    assert verdicts.rank_mde(4) == math.inf and verdicts.rank_mde(3) == math.inf


def test_factor_intervals_invert_their_tests(four_models, tmp_path):
    """Every comparison's ΔIPS interval inverts its sign-flip test (tests/analysis: the
    bounds by brute force), so a row's interval excludes 0 exactly when p < 0.05, and the
    planted 12-sample comparison's interval is finite around its ΔIPS."""
    paths = []
    for e in four_models:
        e.ds.to_netcdf(p := tmp_path / f"{e.model}.nc", engine="h5netcdf")
        paths.append(p)
    fx = factors.compare(paths, seed=1, n_boot=200, draws=999)
    rows = across_models.factor_claims(fx)
    checked = 0
    main = {f"factor_{f}" for f in comparisons_factors.FACTORS}
    for r in (r for r in rows if r.claim in main and r.n):
        assert (r.p_value < 0.05) == (not r.ci_low <= 0 <= r.ci_high), r
        assert r.mde >= 0  # 0 where every sample moves alike (no spread)
        checked += 1
    assert checked >= 3
    lo, hi = fx.isel(comparison=0).sel(band="all")["delta_ips_ci"].values
    assert np.isfinite([lo, hi]).all() and lo < float(fx["delta_ips"][0, 0]) < hi


def test_a_level_rows_p_agrees_with_its_interval():
    """A level row's bootstrap p (`per_model.level_p`) is the test its percentile interval
    inverts: over seeded pooled shares, p < 0.05 exactly where `within` decides (the interval
    wholly inside or wholly outside the band), and no p below 10 samples."""
    from ips.analysis import uncertainty
    from ips.comparisons.claims.per_model import level_p
    from ips.comparisons.claims.verdicts import within

    rng = np.random.default_rng(5)
    agree = 0
    for trial in range(200):
        n = int(rng.integers(10, 30))
        counts = rng.poisson(rng.uniform(1, 8, 3), (n, 3)).astype(float)
        num, den = counts[:, :2].sum(1), counts.sum(1)
        keep = den > 0
        num, den = num[keep], den[keep]
        w = uncertainty.resample_counts(num.size, 2000, trial)
        reps, est = (w @ num) / (w @ den), num.sum() / den.sum()
        ci = uncertainty.percentile_ci(reps, 0.95, est)
        bounds = [(0.5, 1.0), (0.4, 0.6), (0.0, 0.3)][trial % 3]
        p = level_p(est, reps, bounds, num.size)
        agree += (within(ci, *bounds, num.size) != "undecided") == (p < 0.05)
    assert agree == 200
    assert np.isnan(level_p(0.7, np.full(100, 0.7), (0.5, 1.0), 9))
