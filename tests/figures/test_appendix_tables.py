"""The paper's tables beyond the main text and the figures drawn from them: τ robustness
(Table 2: Kendall, RMSE, MAD beside Spearman and Pearson; Table 3), IPS by perturbation type
(Tables 4/5) with the count claims, the representation baseline per base/instruct pair
(Table 6), MoE against dense at matched activated parameters (Table 7) with its claims, and
the figures by order across scales (Figs. 11, 14, 22), on the perturbation group (Figs. 12,
13) and few-shot by band (Fig. 23). Expected values come from hand-made metrics files with
planted numbers, scipy, or definitions computed here by brute force."""

import csv
import dataclasses
import json
import math

import matplotlib.pyplot as plt
import numpy as np
import pytest
import scipy.stats
import xarray as xr

from builders import LABELS, SWEEP, attrs, make_metrics, write_all
from ips.comparisons import compare as factors
from ips.comparisons.claims.across_models import perturbation_claims
from ips.comparisons.claims.nulls import matched_claims
from ips.comparisons.claims.verdicts import binomial_row
from ips.comparisons.robustness import tau_differences
from ips.figures.make import make_figures
from ips.figures.numbers import label_columns
from ips.figures.plots.factors import comparison_panel, group_factors_figure
from ips.figures.plots.scale import scale_figure, series_lines
from ips.figures.plots.shots import few_shot_band_figure, shot_curve_figure, shot_curves
from ips.figures.tables.appendix import (
    MATCH_RATIO,
    matched_pairs,
    matched_rows,
    perturbation_rows,
    representation_rows,
)
from ips.figures.tables.results import (
    tau_pair_rows,
    tau_rows,
    tau_table_columns,
    tau_table_rows,
)
from ips.figures.text.captions import TABLES
from ips.formats.factors import read_factors
from ips.formats.metrics import Entry, read_metrics


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


# ------------------------------------------------------------------------ Table 2: τ pairs


def test_tau_differences_by_hand():
    """Three models, two τ: IPS (1, 2, 3) and (2, 4, 3). Differences −1, −2, 0: RMSE
    sqrt(5/3), MAD 1; of the three model pairs two are concordant and one discordant:
    Kendall (2 − 1)/3."""
    x = np.array([[1.0, 2.0], [2.0, 4.0], [3.0, 3.0]])
    r = tau_differences(x)
    assert r.kendall[0, 1] == r.kendall[1, 0] == pytest.approx(1 / 3)
    assert r.rmse[0, 1] == pytest.approx(math.sqrt(5 / 3)) and r.mad[0, 1] == pytest.approx(1)
    np.testing.assert_array_equal(np.diag(r.kendall), [1, 1])
    np.testing.assert_array_equal(np.diag(r.rmse), [0, 0])
    # two models: no rank correlation, but their differences are defined
    two = tau_differences(x[:2])
    assert np.isnan(two.kendall[0, 1]) and two.mad[0, 1] == pytest.approx(1.5)


def test_tau_differences_match_scipy_and_numpy():
    rng = np.random.default_rng(7)
    x = rng.normal(size=(9, 5))
    x[3, 2] = x[4, 2]  # a tie: Kendall τ_b corrects for it, as scipy does
    r = tau_differences(x)
    for i in range(5):
        for j in range(5):
            if i != j:
                assert r.kendall[i, j] == pytest.approx(
                    scipy.stats.kendalltau(x[:, i], x[:, j]).statistic)
            assert r.rmse[i, j] == pytest.approx(np.linalg.norm(x[:, i] - x[:, j]) / 3)
            assert r.mad[i, j] == pytest.approx(np.abs(x[:, i] - x[:, j]).sum() / 9)


@pytest.fixture(scope="module")
def sweep_factors(tmp_path_factory):
    """Four models with different IPS sweeps over SWEEP (0.05 … 0.20)."""
    tmp = tmp_path_factory.mktemp("tau")
    sweeps = {"a": [1.5, 1.45, 1.4, 1.38], "b": [1.3, 1.35, 1.42, 1.5],
              "c": [1.6, 1.55, 1.5, 1.45], "d": [1.2, 1.25, 1.2, 1.1]}
    ms = [make_metrics(m, attrs(m, m, params=1e9), ips0=s[1], sweep=s)
          for m, s in sweeps.items()]
    paths = write_all(tmp, ms)
    out = tmp / "factors.nc"
    xr_ds = factors.compare(paths)
    xr_ds.to_netcdf(out, engine="h5netcdf")
    return [read_metrics(p) for p in paths], read_factors(out), np.array(list(sweeps.values()))


def test_tau_tables_against_scipy(sweep_factors):
    """Every row of tau_pairs.csv is the five measures of the two τ columns, recomputed
    with scipy / numpy; tau_robustness.csv holds their means over the 6 pairs."""
    entries, fac, x = sweep_factors
    pairs = tau_pair_rows(fac.ds, entries)
    assert len(pairs) == 6
    for r in pairs:
        i, j = (int(np.flatnonzero(np.isclose(SWEEP, t))[0]) for t in (r["tau_a"], r["tau_b"]))
        a, b = x[:, i], x[:, j]
        assert r["spearman"] == pytest.approx(scipy.stats.spearmanr(a, b).statistic)
        assert r["pearson"] == pytest.approx(scipy.stats.pearsonr(a, b).statistic)
        assert r["kendall"] == pytest.approx(scipy.stats.kendalltau(a, b).statistic)
        assert r["rmse"] == pytest.approx(np.sqrt(np.mean((a - b) ** 2)))
        assert r["mad"] == pytest.approx(np.mean(np.abs(a - b)))
        assert (r["n_models"], r["weights"]) == (4, "trained")
    (row,) = tau_rows(fac.tau, entries)
    for k in ("spearman", "pearson", "kendall", "rmse", "mad"):
        assert row[f"tau_{k}"] == pytest.approx(np.mean([r[k] for r in pairs]))
    assert row["tau_n_models"] == 4


def test_the_tau_rows_rest_on_the_models_not_their_twins(sweep_factors, tmp_path):
    """The factors leave the controls out, so a twin's random weights do not mark the row."""
    entries, fac, _ = sweep_factors
    ds = entries[0].ds.copy()
    ds.attrs.update(model="a-twin", model_source=json.dumps({"redraw": "a", "seed": 0}),
                    model_control=json.dumps({"kind": "twins", "of": "a"}))
    (twin,) = [read_metrics(p) for p in write_all(tmp_path, [ds])]
    assert twin.random_weights and twin.control_of == "a"
    (row,) = tau_rows(fac.tau, [*entries, twin])
    assert row["weights"] == "trained"
    assert {r["weights"] for r in tau_pair_rows(fac.ds, [*entries, twin])} == {"trained"}


def test_an_older_factors_file_has_no_kendall(sweep_factors, tmp_path):
    """A factors file written before Kendall, RMSE and MAD: NaN, not an error."""
    entries, fac, _ = sweep_factors
    old = fac.ds.drop_vars([v for v in fac.ds.data_vars if v.startswith(("tau_kendall",
                                                                          "tau_rmse",
                                                                          "tau_mad"))])
    old.to_netcdf(tmp_path / "old.nc", engine="h5netcdf")
    (row,) = tau_rows(read_factors(tmp_path / "old.nc").tau, entries)
    assert np.isnan(row["tau_kendall"]) and np.isfinite(row["tau_spearman"])
    assert all(np.isnan(r["rmse"]) for r in tau_pair_rows(old, entries))


def test_table_3_is_sorted_by_the_first_tau(sweep_factors):
    entries, _, x = sweep_factors
    rows = tau_table_rows(entries)
    assert [r["model"] for r in rows] == ["d", "b", "a", "c"]  # IPS at τ = 0.05 ascending
    assert tau_table_columns(entries)[-5:] == ("tau_0.05", "tau_0.1", "tau_0.15", "tau_0.2",
                                               "weights")
    for r in rows:
        np.testing.assert_allclose([r[f"tau_{t:g}"] for t in SWEEP], x["abcd".index(r["model"])])


def test_table_3_needs_one_sweep(sweep_factors, tmp_path):
    from ips.errors import InputError

    entries, _, _ = sweep_factors
    other = make_metrics("e", attrs(), ips0=1.5).assign_coords(tau=SWEEP + 0.01)
    (path,) = write_all(tmp_path, [other])
    with pytest.raises(InputError, match=f"{path}: τ sweep"):
        tau_table_rows([*entries, read_metrics(path)])


# ------------------------------------------------------------------ Tables 4/5: appendix G


def with_labels(ds, values, seed):
    """`pair_ips` of every 0-shot pair labelled altering / adding set to `values[label]`,
    per sample that value plus a noise shared by both labels (so the per-sample difference
    adding − altering is planted exactly)."""
    ds = ds.copy(deep=True)
    noise = np.random.default_rng(seed).normal(scale=0.05, size=ds.sizes["sample"])
    noise -= noise.mean()
    for k, (g, a, b) in enumerate(zip(ds["pair_group"].values, ds["pair_a"].values,
                                      ds["pair_b"].values)):
        label = LABELS.get((a, b)) if g == "0shot" else None
        if label in values:
            ds["pair_ips"][k] = values[label]
            ds["sample_pair_ips"][:, k] = (values[label] + noise)[:, None]
    return ds


def test_perturbation_rows_by_hand():
    """Altering pairs at 1.4, adding pairs at 1.6 on 12 samples: the model is more sensitive
    to adding, by 0.2 in every sample, so the exact sign-flip p is 2/2^12."""
    ds = with_labels(make_metrics("m", attrs(), samples=12), {"altering": 1.4, "adding": 1.6}, 3)
    e = Entry("m.nc", "m", "arc", attrs(), ds)
    (r,) = perturbation_rows([e], draws=999, seed=0)
    assert (r["ips_altering"], r["ips_adding"]) == (pytest.approx(1.4), pytest.approx(1.6))
    assert (r["pairs_altering"], r["pairs_adding"], r["n_altering"], r["n_adding"]) == (
        2, 4, 12, 12)
    assert r["altering_ci_low"] <= 1.4 <= r["altering_ci_high"]
    assert r["more_sensitive"] == "adding" and r["adding_minus_altering"] == pytest.approx(0.2)
    assert r["p_value"] == pytest.approx(2 / 2**12) and r["n_tested"] == 12
    assert (r["test"], r["few_samples"], r["architecture"]) == ("sign-flip exact", False,
                                                                "dense")
    tie = perturbation_rows([Entry("t.nc", "t", "arc", attrs(), make_metrics("t", attrs()))],
                            999, 0)[0]
    assert tie["more_sensitive"] == "" and tie["n_tested"] == 0  # no per-sample table


def rows_of(arch, sides, dataset="arc", weights="trained", prefix="m"):
    return [{"dataset": dataset, "architecture": arch, "more_sensitive": s, "weights": weights,
             "model": f"{prefix}{arch}{i}"} for i, s in enumerate(sides)]


def test_count_claims_by_hand():
    """9 of 10 dense models more sensitive to adding: two-sided binomial p = 2·11/1024 and
    the Clopper-Pearson interval from the beta quantiles; a tie leaves n."""
    rows = rows_of("dense", ["adding"] * 9 + ["altering", ""]) + rows_of("moe", ["altering"] * 5
                                                                         + ["adding"])
    dense, moe = perturbation_claims(rows, ["arc"])
    assert (dense.claim, dense.n, dense.estimate) == ("perturbation_dense_adding", 10, 0.9)
    assert dense.p_value == pytest.approx(22 / 1024)
    assert dense.ci_low == pytest.approx(scipy.stats.beta.ppf(0.025, 9, 2))
    assert dense.ci_high == pytest.approx(scipy.stats.beta.ppf(0.975, 10, 1))
    assert dense.raw_verdict == "supported" and "Clopper-Pearson" in dense.test
    assert dense.verdict == "undecided" and "no control" in dense.note  # no twins here
    # 5 of 6: P(X ≥ 5) = 7/64, doubled; noise alone can give this
    assert (moe.n, moe.p_value, moe.raw_verdict) == (6, pytest.approx(14 / 64), "undecided")
    # 1 of 10 the paper's way: the other side, significantly
    (few,) = [r for r in perturbation_claims(rows_of("dense", ["adding"] + ["altering"] * 9),
                                             ["arc"]) if r.claim.startswith("perturbation_dense")]
    assert few.raw_verdict == "contradicted" and few.p_value == pytest.approx(22 / 1024)


def test_count_claims_need_six_models():
    five = binomial_row("c", "arc", "p", 5, 5, "x", "none", "trained")
    assert five.verdict == "untestable" and "2/2^5 = 0.0625" in five.note and five.n == 5
    six = binomial_row("c", "arc", "p", 6, 6, "x", "none", "trained")
    assert six.p_value == pytest.approx(2 / 64) and six.verdict == "supported"
    none = perturbation_claims(rows_of("dense", ["", ""], weights="random"), ["arc"])
    assert all(r.verdict == "untestable" and r.n == 0 for r in none)
    assert none[0].weights == "random" and "dense model with IPS on both" in none[0].note
    assert "no MoE model" in none[1].note and none[1].weights == "trained"


# ----------------------------------------------------------------------- Table 6: appendix H


def test_representation_rows_pair_as_the_factor(tmp_path):
    """One base/instruct pair: cosine and L2 are means over the 0-shot pairs only (the 1-shot
    pair holds values that would change them), IPS and the test are the factor row's."""
    base = make_metrics("b", attrs("f", "s"), ips0=1.6, shots={1: 1.3}, samples=12, own=0.05,
                        own_seed=1)
    inst = make_metrics("i", attrs("f", "s", "instruct"), ips0=1.4, shots={1: 1.3}, samples=12,
                        own=0.05, own_seed=2)
    other = make_metrics("o", attrs("g", "t"), ips0=1.5)
    zero = base["pair_group"].values == "0shot"
    base["rep_cosine"][:] = np.where(zero, 0.95, 0.1)
    inst["rep_cosine"][:] = np.where(zero, 0.8, 0.1)
    inst["rep_l2"][:] = np.where(zero, 2.0, 50.0)
    paths = write_all(tmp_path, [base, inst, other])
    factors.compare(paths, draws=999).to_netcdf(tmp_path / "f.nc", engine="h5netcdf")
    fac = read_factors(tmp_path / "f.nc")
    (r,) = representation_rows([read_metrics(p) for p in paths], fac)
    assert (r["base_model"], r["instruct_model"], r["family"]) == ("b", "i", "f")
    assert (r["cosine_base"], r["cosine_instruct"]) == (pytest.approx(0.95), pytest.approx(0.8))
    assert (r["l2_base"], r["l2_instruct"]) == (pytest.approx(3.0), pytest.approx(2.0))
    assert (r["ips_base"], r["ips_instruct"]) == (pytest.approx(1.6), pytest.approx(1.4))
    comp = fac.comparisons("instruct_vs_base").sel(band="all")
    assert r["p_value"] == float(comp["p_value"][0]) and r["n_tested"] == 12
    assert (r["cosine_favours"], r["l2_favours"], r["ips_favours"]) == ("base", "instruct",
                                                                        "instruct")


# ----------------------------------------------------------------------- Table 7: appendix I


def entry(name, arch, active, type_="base", family="f", ds=None):
    a = attrs(family, name, type_, arch, params=active * (5 if arch == "moe" else 1),
              active_params=active)
    return Entry(f"{name}.nc", name, "arc", a, ds if ds is not None else xr.Dataset())


def test_matching_by_brute_force():
    """Each MoE model gets the dense model of its family and type with the least
    |log ratio| of activated parameters (checked against every candidate), ties to the
    smaller; none without a candidate."""
    es = [entry("moe3", "moe", 3e9), entry("d1", "dense", 1e9), entry("d4", "dense", 4e9),
          entry("d8", "dense", 8e9), entry("i3", "dense", 3e9, "instruct"),
          entry("moe-tie", "moe", 3e9, family="g"), entry("g1.5", "dense", 1.5e9, family="g"),
          entry("g6", "dense", 6e9, family="g"), entry("moe-alone", "moe", 1e9, family="h")]
    got = {m.model: d.model if d else None for m, d in matched_pairs(es)}
    for m in (e for e in es if e.attrs["architecture"] == "moe"):
        pool = [d for d in es if d.attrs["architecture"] == "dense"
                and (d.attrs["family"], d.attrs["type"]) == (m.attrs["family"], m.attrs["type"])]
        gaps = {d.model: abs(math.log(d.attrs["active_params"] / m.attrs["active_params"]))
                for d in pool}
        if not pool:
            assert got[m.model] is None
            continue
        assert gaps[got[m.model]] == pytest.approx(min(gaps.values()))
    assert got == {"moe3": "d4", "moe-tie": "g1.5", "moe-alone": None}


def test_matched_rows_and_claims_by_hand():
    """The MoE (3B active) at IPS 1.6 against the dense 4B at 1.4 on 12 paired samples:
    ΔIPS = −0.2/1.6, every sample lower (exact p = 2/2^12), supported; the 8B-only family is
    2.67× away: not matched, untestable."""
    moe = entry("moe", "moe", 3e9, ds=make_metrics("moe", attrs(), ips0=1.6, samples=12,
                                                   own=0.01, own_seed=1))
    dense = entry("d4", "dense", 4e9, ds=make_metrics("d4", attrs(), ips0=1.4, samples=12,
                                                      own=0.01, own_seed=2))
    far = entry("far", "moe", 3e9, family="g", ds=make_metrics("far", attrs(), ips0=1.7,
                                                              samples=12))
    big = entry("g8", "dense", 8e9, family="g", ds=make_metrics("g8", attrs(), ips0=1.3,
                                                               samples=12))
    rows = matched_rows([moe, dense, far, big], draws=999, seed=0)
    near, away = rows
    assert (near["moe_model"], near["dense_model"], near["matched"]) == ("moe", "d4", True)
    assert near["active_ratio"] == pytest.approx(4 / 3)
    assert near["delta_ips"] == pytest.approx((1.4 - 1.6) / 1.6)
    assert near["delta_ips_ci_low"] <= near["delta_ips"] <= near["delta_ips_ci_high"]
    assert near["p_value"] == pytest.approx(2 / 2**12) and near["n_tested"] == 12
    assert (away["matched"], away["active_ratio"]) == (False, pytest.approx(8 / 3))
    assert f"more than {MATCH_RATIO:g}×" in away["note"]
    got = matched_claims(rows, ["arc", "mmlu"])
    assert [r.raw_verdict or r.verdict for r in got] == ["supported", "untestable",
                                                          "untestable"]
    assert got[0].verdict == "undecided" and "no control" in got[0].note  # no twins here
    assert got[0].estimate == near["delta_ips"] and got[0].n == 12
    assert got[2].note == "no MoE model on this dataset"


# -------------------------------------------------------------------------------- figures


def with_perturbation(ds, value):
    """A copy of the 0-shot group as the `perturbation` group, every band at `value` (per
    sample shifted alike)."""
    zero = ds.sel(group="0shot")
    group = zero.copy(deep=True)
    group["ips"][:] = value
    if "sample_ips" in ds:
        group["sample_ips"] = zero["sample_ips"] + (value - zero["ips"])
    parts = [v for v in ds.data_vars if "group" in ds[v].dims]
    grown = xr.concat([ds[parts], group[parts].expand_dims(group=["perturbation"])], "group")
    return ds.drop_dims("group").assign(grown).assign_attrs(ds.attrs)


@pytest.fixture(scope="module")
def dolly(tmp_path_factory):
    """Five models on one dataset with a perturbation group: a 3-size series of each type's
    qwen (base 1B, 4B, 14B; instruct 1B), an MoE."""
    tmp = tmp_path_factory.mktemp("dolly")
    specs = [("q1", attrs("q", "qwen", params=1e9), 1.6, 1.65),
             ("q4", attrs("q", "qwen", params=4e9), 1.5, 1.55),
             ("q14", attrs("q", "qwen", params=14e9), 1.4, 1.5),
             ("q1-inst", attrs("q", "qwen", "instruct", params=1e9), 1.45, 1.5),
             ("qmoe", attrs("q", "qmoe", "base", "moe", params=14e9, active_params=3e9), 1.7,
              1.75)]
    ms = [with_perturbation(make_metrics(n, a, dataset="dolly", ips0=v, shots={1: v - 0.2},
                                         samples=12, own=0.05, own_seed=k), p)
          for k, (n, a, v, p) in enumerate(specs)]
    paths = write_all(tmp, ms)
    factors.compare(paths, draws=999).to_netcdf(tmp / "f.nc", engine="h5netcdf")
    return [read_metrics(p) for p in paths], read_factors(tmp / "f.nc"), paths, tmp


def test_series_lines_are_the_scale_factor_groups(dolly):
    entries, fac, _, _ = dolly
    lines = series_lines(entries)
    assert {k: [e.model for e in v] for k, v in lines.items()} == {
        ("qwen", "base", "dense"): ["q1", "q4", "q14"]}  # q1-inst and qmoe stand alone
    # the scale factor compares exactly the neighbours along that line
    comp = fac.comparisons("scale")
    assert sorted(zip(comp["model_b"].values, comp["model_a"].values)) == [("q1", "q4"),
                                                                           ("q4", "q14")]


def test_the_perturbation_group_rows(dolly):
    """The perturbation-group figures get the factors file's rows of that group; these five
    models' reworded prompts are scored at 0 shots only, so few-shot has none there."""
    _, fac, _, _ = dolly
    with xr.open_dataset(fac.path, engine="h5netcdf") as ds:
        f = ds["comparison_factor"].values.astype(str)
        g = ds["comparison_group"].values.astype(str)
        for name in ("instruct_vs_base", "scale", "dense_vs_moe"):
            got = fac.comparisons(name, "perturbation")
            assert got.sizes["comparison"] == int(np.sum((f == name) & (g == "perturbation")))
            assert got.sizes["comparison"] > 0
            assert set(got["comparison_group"].values.astype(str)) == {"perturbation"}
            assert fac.summaries(name, "perturbation").sizes["summary"] == 1
    assert fac.comparisons("few_shot", "perturbation").sizes["comparison"] == 0
    assert fac.comparisons("few_shot").sizes["comparison"] == 5


def _again(ds, dim, group, setting_b=None):
    """`ds` with its few-shot `dim` rows ("comparison", "summary") once more, in `group`
    (comparisons: with `setting_b` their group without examples)."""
    rows = np.flatnonzero(ds[f"{dim}_factor"].values.astype(str) == "few_shot")
    n = rows.size
    extra = ds.isel({dim: rows}).assign_coords(
        {dim: np.arange(ds.sizes[dim], ds.sizes[dim] + n), f"{dim}_group": (dim, [group] * n)})
    if setting_b:
        extra = extra.assign_coords(setting_a=(dim, [group] * n),
                                    setting_b=(dim, [setting_b] * n))
    return xr.concat([ds, extra], dim, data_vars="minimal", coords="minimal", compat="override")


@pytest.fixture(scope="module")
def reworded_shots(dolly, tmp_path_factory):
    """The five models' factors file with every 1-shot comparison and summary row once more
    as the reworded prompts' (`perturbation-1shot` against `perturbation`, Figs. 12d, 55)."""
    _, fac, _, _ = dolly
    ds = _again(_again(fac.ds, "comparison", "perturbation-1shot", "perturbation"), "summary",
                "perturbation-1shot")
    path = tmp_path_factory.mktemp("reworded") / "f.nc"
    ds.drop_encoding().to_netcdf(path, engine="h5netcdf")  # the file read had <U12 groups
    return fac, read_factors(path)


def test_few_shot_rows_are_cut_by_their_group_without_examples(reworded_shots, tmp_path):
    """The 0-shot figures keep the template few-shot rows (the shot curve unchanged); the
    perturbation-group figures get the reworded prompts' k-shot rows (Figs. 12d, 55), its
    panel naming both sides; the Appendix G mean of the reworded prompts keeps to the
    perturbation group."""
    fac, both = reworded_shots
    main, reworded = both.comparisons("few_shot"), both.comparisons("few_shot", "perturbation")
    assert set(main["setting_b"].values.astype(str)) == {"0shot"}
    assert main.sizes["comparison"] == reworded.sizes["comparison"] == 5
    assert set(reworded["comparison_group"].values.astype(str)) == {"perturbation-1shot"}
    assert set(reworded["setting_b"].values.astype(str)) == {"perturbation"}
    np.testing.assert_array_equal(main["ips_a"].values, fac.comparisons("few_shot")["ips_a"].values)
    assert list(both.summaries("few_shot", "perturbation")["summary_group"].values) == ["perturbation-1shot"]
    assert list(both.summaries("few_shot")["summary_group"].values) == ["1shot"]
    curves = shot_curves(main)
    assert curves.keys() == shot_curves(fac.comparisons("few_shot")).keys()
    fig, ax = plt.subplots()
    comparison_panel(ax, reworded, "few_shot")
    assert [t.get_text() for t in ax.get_yticklabels()] == [
        f"{m}\nperturbation-1shot vs perturbation" for m in reworded["model_a"].values]
    plt.close(fig)
    for draw in (group_factors_figure, shot_curve_figure):
        args = (both, "perturbation", 0.1) if draw is group_factors_figure else (both, 0.1)
        assert all(p.stat().st_size > 5000 for p in draw(*args, tmp_path / f"{draw.__name__}.png"))


def test_a_model_factors_k_shot_rows_do_not_move_the_few_shot_rows(dolly, tmp_path):
    """A model factor compares at k shots too (its group `1shot`, its `setting_b` that same
    group); placed after the few-shot rows in the file, those rows must not remap the group
    `1shot` to itself and so drop the few-shot rows from the 0-shot group."""
    _, fac, _, _ = dolly
    ds = fac.ds
    f = ds["comparison_factor"].values.astype(str)
    g = ds["comparison_group"].values.astype(str)
    scale = np.flatnonzero((f == "scale") & (g == "1shot"))
    assert scale.size > 0 and set(ds["setting_b"].values[scale].astype(str)) == {"1shot"}
    order = np.concatenate([np.flatnonzero(f == "few_shot"), scale])  # scale rows last
    rest = np.setdiff1d(np.arange(ds.sizes["comparison"]), order)
    path = tmp_path / "f.nc"
    ds.isel(comparison=np.concatenate([rest, order])).drop_encoding().to_netcdf(
        path, engine="h5netcdf")
    moved = read_factors(path)
    assert moved.comparisons("few_shot").sizes["comparison"] == 5
    assert set(moved.comparisons("few_shot")["setting_b"].values.astype(str)) == {"0shot"}
    assert moved.comparisons("scale", "1shot").sizes["comparison"] == scale.size


def test_the_reworded_prompts_mean_leaves_their_k_shot_pairs_out(dolly):
    """Appendix G's `perturbation` label marks every pair with a reworded condition; its mean
    is over the perturbation group's pairs, not those of its k-shot groups."""
    entries, _, _, _ = dolly
    ds = entries[0].ds
    groups = ds["pair_group"].values.astype(object)
    labels = ds["pair_label"].values.astype(object)
    groups[0], labels[0] = "perturbation", "perturbation"  # a pair of T1 and a rewording
    shot = int(np.flatnonzero(groups == "1shot")[0])
    groups[shot], labels[shot] = "perturbation-1shot", "perturbation"
    e = dataclasses.replace(entries[0], ds=ds.assign_coords(pair_group=("pair", groups),
                                                            pair_label=("pair", labels)))
    assert label_columns(e, "perturbation").tolist() == [0]


@pytest.mark.parametrize("name", ["scale", "scale_perturbation", "group_factors", "shots"])
def test_new_figures_write_png_and_pdf(dolly, tmp_path, name):
    entries, fac, _, _ = dolly
    draw = {"scale": lambda p: scale_figure(entries, "0shot", 0.1, p, "t"),
            "scale_perturbation": lambda p: scale_figure(entries, "perturbation", 0.1, p, "t"),
            "group_factors": lambda p: group_factors_figure(fac, "perturbation", 0.1, p),
            "shots": lambda p: few_shot_band_figure(fac, 0.1, p)}[name]
    written = draw(tmp_path / f"{name}.png")
    assert [p.name for p in written] == [f"{name}.png", f"{name}.pdf"]
    assert all(p.stat().st_size > 5000 for p in written)


def test_the_directory_holds_the_appendix_tables(dolly, tmp_path):
    """`ips figures` on the five models: the Table 7 row is the qwen MoE against the dense
    qwen of closest activated parameters (4B against 3B), tested in claims.csv."""
    _, _, paths, tmp = dolly
    make_figures(paths, tmp / "f.nc", tmp_path / "figs")
    for name in TABLES:
        assert (tmp_path / "figs" / name).exists()
    (row,) = read_csv(tmp_path / "figs" / "moe_matched.csv")
    assert (row["moe_model"], row["dense_model"], row["matched"]) == ("qmoe", "q4", "true")
    assert float(row["delta_ips"]) == pytest.approx((1.5 - 1.7) / 1.7, rel=1e-5)
    got = [r for r in read_csv(tmp_path / "figs" / "claims.csv")
           if r["claim"] == "moe_above_dense_matched"]
    assert len(got) == 1 and got[0]["raw_verdict"] == "supported" and got[0]["n"] == "12"
    assert got[0]["verdict"] == "undecided"  # no untrained twins: no control
    counts = {r["claim"]: r for r in read_csv(tmp_path / "figs" / "claims.csv")
              if r["claim"].startswith("perturbation_")}
    # make_metrics gives altering and adding pairs the same IPS: every model ties, n = 0
    assert counts["perturbation_dense_adding"]["verdict"] == "untestable"
    assert len(read_csv(tmp_path / "figs" / "tau_table.csv")) == 5
    rep = read_csv(tmp_path / "figs" / "representation_pairs.csv")
    assert [(r["base_model"], r["instruct_model"]) for r in rep] == [("q1", "q1-inst")]


def test_the_paper_models_match_as_table_7_chose():
    """On the 50 models of paper.yaml the rule matches the six Qwen and OLMo MoE models, the
    families the paper's Table 7 draws on, and none of LLaMA-MoE and Mixtral (1.8-1.9×)."""
    from pathlib import Path

    import yaml

    config = yaml.safe_load((Path(__file__).parents[2] / "workflow" / "configs"
                             / "paper.yaml").read_text())
    es = []
    for name, m in config["models"].items():
        a = {k: m.get(k) for k in ("family", "series", "type", "architecture")}
        a["params"] = float(m["params"])
        a["active_params"] = float(m.get("active_params") or m["params"])
        es.append(Entry(name, name, "arc", a, xr.Dataset()))
    pairs = matched_pairs(es)
    assert len(pairs) == 10
    matched = {m.model: d.model for m, d in pairs
               if max(d.attrs["active_params"] / m.attrs["active_params"],
                      m.attrs["active_params"] / d.attrs["active_params"]) <= MATCH_RATIO}
    assert {m.attrs["family"] for m, _ in pairs if m.model in matched} == {"qwen", "olmo"}
    assert len(matched) == 6 and matched["olmoe-7b"] == "olmo-1b"
    assert matched["qwen3-30b-a3b"] == "qwen3-4b"
