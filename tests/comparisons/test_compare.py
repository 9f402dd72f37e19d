"""`ips factors` (ips.comparisons.compare): hand-built metrics files with known IPS give the
expected ΔIPS; factors the models cannot show are reported absent; τ robustness; bad inputs."""

import itertools
import json

import numpy as np
import pytest
import xarray as xr

from builders import BANDS, SWEEP, attrs, make_metrics, with_matched_null, write_all
from ips.analysis import metrics, uncertainty
from ips.cli.main import main
from ips.comparisons import robustness
from ips.comparisons.compare import compare
from ips.comparisons.factors import ABSENT, FACTORS
from ips.errors import InputError
from ips.formats.hdf5 import write_dataset


def rows(out, factor, group="0shot"):
    sel = (out["comparison_factor"] == factor) & (out["comparison_group"] == group)
    return out.isel(comparison=np.flatnonzero(sel.values))


def test_instruct_vs_base_delta(tmp_path):
    ms = [
        make_metrics("base-1b", attrs(type="base"), ips0=[1.5, 1.0, 1.6, 1.8]),
        make_metrics("inst-1b", attrs(type="instruct"), ips0=[1.2, 0.5, 1.6, 1.9]),
        # same series but other params: no instruct/base pair with it
        make_metrics("inst-7b", attrs(type="instruct", params=7e9), ips0=1.0),
    ]
    out_path = tmp_path / "factors.nc"
    assert main(["factors", "--metrics", *map(str, write_all(tmp_path, ms)),
                 "--out", str(out_path)]) == 0
    with xr.open_dataset(out_path, engine="h5netcdf") as out:
        out = out.load()
    r = rows(out, "instruct_vs_base")
    assert r.sizes["comparison"] == 1
    assert (r["model_a"].item(), r["model_b"].item()) == ("inst-1b", "base-1b")
    np.testing.assert_allclose(r["delta_ips"].values[0], [-0.2, -0.5, 0.0, 1.9 / 1.8 - 1])
    np.testing.assert_allclose(r["ips_a"].values[0], [1.2, 0.5, 1.6, 1.9])
    np.testing.assert_allclose(
        r["delta_ips"].values[0], metrics.delta_ips(r["ips_a"].values[0], r["ips_b"].values[0]))
    s = (out["summary_factor"] == "instruct_vs_base") & (out["summary_group"] == "0shot")
    np.testing.assert_allclose(out["delta_ips_mean"].values[s.values][0],
                               [-0.2, -0.5, 0.0, 1.9 / 1.8 - 1])
    present = dict(zip(out["factor"].values, out["factor_present"].values))
    assert present == {"instruct_vs_base": True, "scale": True, "dense_vs_moe": False,
                       "few_shot": False}
    # scale: inst-7b (larger) vs inst-1b
    r = rows(out, "scale")
    assert (r["model_a"].item(), r["model_b"].item()) == ("inst-7b", "inst-1b")
    np.testing.assert_allclose(r["delta_ips"].values[0], np.array([1.0] * 4) /
                               np.array([1.2, 0.5, 1.6, 1.9]) - 1)


def test_scale_compares_adjacent_sizes_of_one_series_type_and_architecture(tmp_path):
    ms = [
        make_metrics("s1", attrs(params=1e9), ips0=1.6),
        make_metrics("s4", attrs(params=4e9), ips0=1.4),
        make_metrics("s8", attrs(params=8e9), ips0=1.2),
        make_metrics("s8-other-series", attrs(series="x", params=8e9), ips0=1.0),
        make_metrics("s30-moe", attrs(architecture="moe", params=30e9, active_params=3e9)),
        make_metrics("s1-instruct", attrs(type="instruct", params=1e9, series="y")),
    ]
    out = compare(write_all(tmp_path, ms))
    r = rows(out, "scale")
    got = {(a, b): d for a, b, d in zip(r["model_a"].values, r["model_b"].values,
                                        r["delta_ips"].sel(band="all").values)}
    assert got == pytest.approx({("s4", "s1"): 1.4 / 1.6 - 1, ("s8", "s4"): 1.2 / 1.4 - 1})


def test_dense_vs_moe_pairs_within_family_and_type(tmp_path):
    ms = [
        make_metrics("dense-a", attrs(family="q", series="q2", params=7e9), ips0=1.4),
        make_metrics("dense-b", attrs(family="q", series="q3", params=4e9), ips0=1.5),
        make_metrics("moe", attrs(family="q", series="q3moe", architecture="moe", params=30e9,
                                  active_params=3e9), ips0=1.6),
        make_metrics("moe-instruct", attrs(family="q", series="q3moe", type="instruct",
                                           architecture="moe", params=30e9, active_params=3e9)),
        make_metrics("moe-other-family", attrs(family="l", architecture="moe")),
    ]
    out = compare(write_all(tmp_path, ms))
    r = rows(out, "dense_vs_moe")
    got = {(a, b): d for a, b, d in zip(r["model_a"].values, r["model_b"].values,
                                        r["delta_ips"].sel(band="all").values)}
    assert got == pytest.approx({("dense-a", "moe"): 1.4 / 1.6 - 1,
                                 ("dense-b", "moe"): 1.5 / 1.6 - 1})
    s = ((out["summary_factor"] == "dense_vs_moe") & (out["summary_group"] == "0shot")).values
    assert out["delta_ips_mean"].sel(band="all").values[s][0] == pytest.approx(
        np.mean([1.4 / 1.6 - 1, 1.5 / 1.6 - 1]))
    assert int(out["n_comparisons"].values[s][0]) == 2


def test_few_shot_against_the_same_template_pair_of_0shot(tmp_path):
    # 0-shot group IPS (1.5) averages 10 pairs; the k-shot groups have only T1|T4, so they
    # are compared with the 0-shot value of T1|T4 (1.6), not with 1.5
    ms = [make_metrics("m", attrs(), ips0=1.5, pair=1.45, pair14=1.6,
                       shots={1: 1.2, 2: [1.0, 0.8, 1.2, 1.6]})]
    out = compare(write_all(tmp_path, ms))
    for k, expected in ((1, [1.2 / 1.6 - 1] * 4), (2, [1.0 / 1.6 - 1, -0.5, 1.2 / 1.6 - 1, 0])):
        r = rows(out, "few_shot", f"{k}shot")
        assert r.sizes["comparison"] == 1
        assert r["setting_a"].item() == f"{k}shot" and r["setting_b"].item() == "0shot"
        assert r["templates"].item() == "T1–T4"
        np.testing.assert_allclose(r["ips_b"].values[0], 1.6)
        np.testing.assert_allclose(r["delta_ips"].values[0], expected)
    assert bool(out["factor_present"].sel(factor="few_shot"))
    # model factors absent, with the reason
    for f in ("instruct_vs_base", "scale", "dense_vs_moe"):
        assert not bool(out["factor_present"].sel(factor=f))
        assert out["factor_note"].sel(factor=f).item() == f"absent: {ABSENT[f]}"
    assert json.loads(out.attrs["absent"]) == {f: ABSENT[f] for f in FACTORS[:3]}


def with_reworded(ds, pairs):
    """`ds` (of `make_metrics`) with condition groups of T1's rewordings (Appendix L) and their
    pairs {(group, a, b): pair_ips}: each group a copy of the 0-shot group, each pair a copy
    of the first 0-shot pair at that value (its per-sample values shifted alike)."""
    first = ds.isel(pair=[0])
    pair_vars = [v for v in ds.data_vars if "pair" in ds[v].dims]
    parts = [ds[pair_vars]]
    for (g, a, b), value in pairs.items():
        p = first[pair_vars].copy(deep=True)
        if "sample_pair_ips" in p:
            p["sample_pair_ips"] = p["sample_pair_ips"] + (value - p["pair_ips"])
        p["pair_ips"][:] = value
        parts.append(p.assign_coords(pair=[f"{g}:{a}|{b}"], pair_a=("pair", [a]),
                                     pair_b=("pair", [b]), pair_group=("pair", [g]),
                                     pair_label=("pair", ["perturbation"])))
    groups = sorted({g for g, _, _ in pairs})
    group_vars = [v for v in ds.data_vars if "group" in ds[v].dims]
    zero = ds[group_vars].sel(group=["0shot"])
    grown = xr.concat([ds[group_vars], *(zero.assign_coords(group=[g]) for g in groups)],
                      "group")
    names = sorted({c for _, a, b in pairs for c in (a, b)} - set(ds["condition"].values))
    return (ds.drop_dims(["pair", "group", "condition"])
            .assign(xr.concat(parts, "pair", coords="minimal", compat="override"))
            .assign(grown)
            .assign_coords(condition=[*ds["condition"].values, *names],
                           template=("condition", [*ds["template"].values, *["T1"] * len(names)]))
            .assign_attrs(ds.attrs))


def test_few_shot_on_reworded_prompts_against_the_same_pairs_without_examples(tmp_path):
    """`perturbation-1shot` against `perturbation` pair by pair (Figs. 12d, 55), a pair keyed
    by its conditions less `-1shot`: (T1-1shot, T1-paraphrase-1shot) against (T1,
    T1-paraphrase); a 1-shot pair whose counterpart is not in `perturbation` is left out, and
    a model without that group gets a note. The 1-shot templates keep their comparison."""
    reworded = {("perturbation", "T1", "T1-paraphrase"): 1.8,
                ("perturbation", "T1", "T1-reorder"): 1.5,
                ("perturbation-1shot", "T1-1shot", "T1-paraphrase-1shot"): 1.2,
                ("perturbation-1shot", "T1-1shot", "T1-reorder-1shot"): 1.0,
                # (T1-paraphrase, T1-reorder) is not in `perturbation`: left out
                ("perturbation-1shot", "T1-paraphrase-1shot", "T1-reorder-1shot"): 0.9}
    alone = {k: v for k, v in reworded.items() if k[0] == "perturbation-1shot"}
    ms = [with_reworded(make_metrics("m", attrs(), pair=1.45, pair14=1.6, shots={1: 1.2},
                                     samples=12), reworded),
          with_reworded(make_metrics("n", attrs(series="other"), shots={1: 1.2}), alone)]
    out = compare(write_all(tmp_path, ms))
    r = rows(out, "few_shot", "perturbation-1shot")
    assert r.sizes["comparison"] == 1 and r["model_a"].item() == "m"
    assert (r["setting_a"].item(), r["setting_b"].item()) == ("perturbation-1shot",
                                                              "perturbation")
    assert r["templates"].item() == "T1–T1-paraphrase;T1–T1-reorder"
    np.testing.assert_allclose(r["ips_a"].values[0], (1.2 + 1.0) / 2)
    np.testing.assert_allclose(r["ips_b"].values[0], (1.8 + 1.5) / 2)
    np.testing.assert_allclose(r["delta_ips"].values[0], 1.1 / 1.65 - 1)
    assert int(r["n_paired"].item()) == 12
    s = ((out["summary_factor"] == "few_shot")
         & (out["summary_group"] == "perturbation-1shot")).values
    np.testing.assert_allclose(out["delta_ips_mean"].values[s][0], 1.1 / 1.65 - 1)
    # the template few-shot of both models as without the reworded prompts
    r = rows(out, "few_shot", "1shot")
    assert list(r["model_a"].values) == ["m", "n"]
    np.testing.assert_allclose(r["ips_b"].sel(band="all").values, [1.6, 1.6])
    assert json.loads(out.attrs["few_shot_notes"]) == [
        "arc: n: group perturbation-1shot has no template pair that is in perturbation"]
    assert out["factor_note"].sel(factor="few_shot").item() == (
        "present; arc: 3 (model, k-shot group) comparison(s)")


def test_no_factor_at_all_is_reported_not_faked(tmp_path):
    ms = [make_metrics("a", attrs(family="x", series="x")),
          make_metrics("b", attrs(family="y", series="y", type="instruct"))]
    out_path = tmp_path / "f.nc"
    assert main(["factors", "--metrics", *map(str, write_all(tmp_path, ms)),
                 "--out", str(out_path)]) == 0
    with xr.open_dataset(out_path, engine="h5netcdf") as out:
        out = out.load()
    assert out.sizes["comparison"] == 0 and out.sizes["summary"] == 0
    assert not out["factor_present"].values.any()
    assert all(n.startswith("absent: ") for n in out["factor_note"].values)
    assert "no base/instruct pair with equal family, series and params" in \
        out["factor_note"].sel(factor="instruct_vs_base").item()
    # two models: too few for the τ robustness, said so
    assert np.isnan(float(out["tau_spearman"].sel(dataset="arc")))
    assert "at least 3" in out["tau_note"].sel(dataset="arc").item()


def test_tau_robustness_per_dataset(tmp_path):
    rng = np.random.default_rng(3)
    sweeps = rng.uniform(1.2, 1.8, size=(4, len(SWEEP)))
    ms = [make_metrics(f"m{i}", attrs(family=f"f{i}", series=f"s{i}"), sweep=sweeps[i])
          for i in range(4)]
    ms += [make_metrics(f"m{i}", attrs(family=f"f{i}", series=f"s{i}"), dataset="mmlu",
                        sweep=sweeps[i][::-1]) for i in range(3)]
    ms.append(make_metrics("m3", attrs(family="f3", series="s3"), dataset="mmlu",
                           sweep=np.full(len(SWEEP), np.nan)))
    out = compare(write_all(tmp_path, ms))
    ref = robustness.tau_sweep(sweeps)
    assert float(out["tau_spearman"].sel(dataset="arc")) == pytest.approx(ref.spearman)
    assert float(out["tau_pearson"].sel(dataset="arc")) == pytest.approx(ref.pearson)
    np.testing.assert_allclose(out["tau_pearson_matrix"].sel(dataset="arc"), ref.pearson_matrix)
    ref = robustness.tau_sweep(sweeps[:3, ::-1])
    assert float(out["tau_spearman"].sel(dataset="mmlu")) == pytest.approx(ref.spearman)
    assert int(out["tau_n_models"].sel(dataset="mmlu")) == 3
    assert "m3 (no IPS at some τ)" in out["tau_note"].sel(dataset="mmlu").item()


def test_bad_inputs_name_the_file(tmp_path, capsys):
    a = make_metrics("a", attrs())
    paths = write_all(tmp_path, [a])
    dup = tmp_path / "copy.nc"
    write_dataset(a, dup)
    with pytest.raises(InputError, match=f"{dup}: model 'a' on dataset 'arc' is also in"):
        compare([paths[0], dup])
    other_tau = tmp_path / "tau.nc"
    write_dataset(make_metrics("b", attrs(), tau=0.15), other_tau)
    with pytest.raises(InputError, match=f"{other_tau}: computed at τ = 0.15"):
        compare([paths[0], other_tau])
    other_sweep = tmp_path / "sweep.nc"
    write_dataset(make_metrics("c", attrs()).assign_coords(tau=SWEEP + 0.01), other_sweep)
    with pytest.raises(InputError, match=f"{other_sweep}: τ sweep"):
        compare([paths[0], other_sweep])
    broken = tmp_path / "broken.nc"
    write_dataset(a.drop_vars("pair_ips"), broken)
    assert main(["factors", "--metrics", str(broken), "--out", str(tmp_path / "o.nc")]) == 2
    assert f"{broken}: no variable 'pair_ips'" in capsys.readouterr().err
    assert main(["factors", "--metrics", str(tmp_path / "nope.nc"),
                 "--out", str(tmp_path / "o.nc")]) == 2
    assert "no such metrics file" in capsys.readouterr().err


def test_paired_intervals_and_tests_find_a_planted_difference_and_no_phantom(tmp_path):
    ms = [
        make_metrics("b", attrs(), ips0=1.6, shots={1: 1.3}, pair=1.6, samples=40),
        make_metrics("i", attrs(type="instruct"), ips0=1.4, samples=40, own=0.02, own_seed=1),
        make_metrics("big", attrs(params=2e9), ips0=1.6, samples=40, own=0.3, own_seed=2),
        make_metrics("old", attrs(family="x", series="y"), ips0=1.5),  # no per-sample table
    ]
    out = compare(write_all(tmp_path, ms), seed=0, n_boot=1000)
    inst = rows(out, "instruct_vs_base").sel(band="all").isel(comparison=0)
    assert float(inst["delta_ips"]) == pytest.approx(-0.2 / 1.6)
    lo, hi = inst["delta_ips_ci"].values
    assert lo <= float(inst["delta_ips"]) <= hi < 0
    assert float(inst["p_value"]) < 0.01 and int(inst["n_paired"]) == 40
    a_lo, a_hi = inst["ips_a_ci"].values
    assert a_lo <= 1.4 <= a_hi
    # same IPS, noise of its own: no difference found
    scale = rows(out, "scale").sel(band="all").isel(comparison=0)
    assert float(scale["delta_ips"]) == pytest.approx(0.0)
    assert float(scale["p_value"]) > 0.05
    lo, hi = scale["delta_ips_ci"].values
    assert lo < 0 < hi
    # few-shot: 1-shot pair 1.3 vs the same pair of 0-shot, 1.6, paired within the model
    few = rows(out, "few_shot", "1shot").sel(band="all").isel(comparison=0)
    assert float(few["p_value"]) < 0.01 and float(few["delta_ips_ci"].values[1]) < 0
    # the summary row of one comparison has that comparison's interval
    sel = ((out["summary_factor"] == "instruct_vs_base") & (out["summary_group"] == "0shot"))
    k = int(np.flatnonzero(sel.values)[0])
    np.testing.assert_allclose(out["delta_ips_mean_ci"].values[k, 0],
                               inst["delta_ips_ci"].values)
    # deterministic from the seed
    again = compare(write_all(tmp_path, ms), seed=0, n_boot=1000)
    np.testing.assert_array_equal(again["delta_ips_ci"].values, out["delta_ips_ci"].values)
    assert json.loads(out.attrs["bootstrap"])["seed"] == 0


def test_no_per_sample_table_gives_nan_intervals(tmp_path):
    ms = [make_metrics("b", attrs(), ips0=1.6), make_metrics("i", attrs(type="instruct"))]
    out = compare(write_all(tmp_path, ms), n_boot=50)
    inst = rows(out, "instruct_vs_base")
    assert np.isnan(inst["delta_ips_ci"].values).all() and np.isnan(inst["p_value"]).all()
    assert int(inst["n_paired"].values[0]) == 0 and not inst["n_tested"].values.any()


def brute_p(d):
    """Two-sided sign-flip p by enumerating every sign vector (independent of ips)."""
    d = np.asarray(d, float)
    d = d[np.isfinite(d)]
    obs = abs(d.sum())
    sums = [abs(np.dot(s, d)) for s in itertools.product((1.0, -1.0), repeat=d.size)]
    return np.mean([x >= obs - 1e-9 for x in sums])


def test_sign_flip_p_values_of_comparisons_and_summary_rows(tmp_path):
    """p_value and p_value_mean against brute-force enumeration of the per-sample
    differences, with samples missing on one side of a comparison."""
    S = 9
    ms = [make_metrics(f"m{k}", attrs(params=p), ips0=1.6 - 0.05 * k, samples=S, own=0.1,
                       own_seed=k) for k, p in enumerate((1e9, 2e9, 4e9))]
    ms[0]["sample_ips"][0, 0, :] = np.nan  # item000 unvalued in the smallest model
    ms[2]["sample_ips"][1, 0, 1] = np.nan  # item001 unvalued in the largest, band low only
    out = compare(write_all(tmp_path, ms), seed=0, n_boot=100)
    sc = rows(out, "scale")
    x = [m["sample_ips"].sel(group="0shot").values for m in ms]  # (S, band)
    for i in range(sc.sizes["comparison"]):
        a = int(str(sc["model_a"].values[i])[1])
        d = x[a] - x[a - 1]  # larger minus next smaller, per sample and band
        for b, band in enumerate(BANDS):
            assert float(sc["p_value"].values[i, b]) == brute_p(d[:, b]), (i, band)
            assert int(sc["n_tested"].values[i, b]) == np.isfinite(d[:, b]).sum()
        assert int(sc["n_paired"].values[i]) == np.isfinite(d[:, 0]).sum()
    # the summary row: per-sample mean of both comparisons' d, samples valued in both
    k = int(np.flatnonzero(((out["summary_factor"] == "scale")
                            & (out["summary_group"] == "0shot")).values)[0])
    dm = ((x[1] - x[0]) + (x[2] - x[1])) / 2
    for b in range(len(BANDS)):
        assert float(out["p_value_mean"].values[k, b]) == brute_p(dm[:, b])
    assert out["n_tested_mean"].values[k].tolist() == [S - 1, S - 2, S - 1, S - 1]
    test = json.loads(out.attrs["test"])
    assert test["method"] == "paired sign-flip permutation" and test["exact_max"] == 16
    assert (test["draws"], test["seed"]) == (uncertainty.DRAWS, 0)


def test_three_samples_cannot_give_a_small_p(tmp_path):
    ms = [make_metrics("b", attrs(), ips0=1.6, samples=3),
          make_metrics("i", attrs(type="instruct"), ips0=1.2, samples=3, own=0.01)]
    inst = rows(compare(write_all(tmp_path, ms), n_boot=200), "instruct_vs_base")
    # three differences of one sign: 2 of the 2^3 sign vectors are as extreme
    assert inst["p_value"].values[0].tolist() == [0.25] * 4
    assert inst["n_tested"].values[0].tolist() == [3] * 4


def test_tests_do_not_depend_on_the_sample_order_of_the_files(tmp_path):
    """40 samples (Monte Carlo): samples are paired by id and tested in id order."""
    ms = [make_metrics("b", attrs(), ips0=1.5, shots={1: 1.45}, samples=40),
          make_metrics("i", attrs(type="instruct"), ips0=1.48, shots={1: 1.5}, samples=40,
                       own=0.2, own_seed=3)]
    out = compare(write_all(tmp_path / "a", ms), seed=4, n_boot=200, draws=999)
    flipped = [m.isel(sample=np.random.default_rng(k).permutation(40)) for k, m in enumerate(ms)]
    again = compare(write_all(tmp_path / "b", flipped), seed=4, n_boot=200, draws=999)
    for name in ("p_value", "n_tested", "p_value_mean", "n_tested_mean", "delta_ips_ci"):
        np.testing.assert_array_equal(again[name].values, out[name].values, err_msg=name)
    p = out["p_value"].values[np.isfinite(out["p_value"].values)]
    assert p.size and np.all(p >= 1 / 1000)  # Monte Carlo: (b + 1)/(B + 1) > 0
    assert not np.array_equal(
        compare(write_all(tmp_path / "c", ms), seed=5, n_boot=200, draws=999)["p_value"].values,
        out["p_value"].values)  # the seed drives the draws


def test_factor_against_the_difference_of_the_matched_nulls(tmp_path):
    """null_a, null_b and delta_null are the two sides' matched-size nulls; `excess` is the
    mean per-sample (A_s − B_s) − (N^A_s − N^B_s) with the sign-flip p of those differences,
    for a model factor and for few-shot (on the pairs compared); files without a null give
    NaN and n = 0."""
    base = make_metrics("base-1b", attrs(type="base"), ips0=1.6, shots={1: 1.3}, samples=12,
                        own=0.05, own_seed=1)
    inst = make_metrics("inst-1b", attrs(type="instruct"), ips0=1.4, shots={1: 1.3},
                        samples=12, own=0.05, own_seed=2)
    out = compare(write_all(tmp_path, [with_matched_null(base, 1.5, 1.55, 3),
                                       with_matched_null(inst, 1.45, 1.5, 4)]),
                  seed=0, draws=999)
    r = rows(out, "instruct_vs_base").isel(comparison=0).sel(band="all")
    assert float(r["null_a"]) == pytest.approx(1.45) and float(r["null_b"]) == pytest.approx(1.5)
    assert float(r["delta_null"]) == pytest.approx(1.45 / 1.5 - 1)
    a, b = (m["sample_ips"].sel(group="0shot", band="all").values for m in (inst, base))
    na, nb = (with_matched_null(m, v, v, s)["sample_matched_null_ips"]
              .sel(group="0shot", band="all").values
              for m, v, s in ((inst, 1.45, 4), (base, 1.5, 3)))
    d = (a - b) - (na - nb)
    assert float(r["excess"]) == pytest.approx(d.mean()) == pytest.approx(-0.15)
    assert float(r["p_excess"]) == uncertainty.sign_flip_test(d, draws=999, seed=0).p_value
    assert int(r["n_excess"]) == 12
    few = rows(out, "few_shot", "1shot")
    mine = few.isel(comparison=list(few["model_a"].values).index("base-1b")).sel(band="all")
    # 1-shot T1|T4 (null 1.55 + noise) against 0-shot T1|T4 (the same): excess = ΔIPS
    assert float(mine["null_a"]) == pytest.approx(1.55) == float(mine["null_b"])
    assert float(mine["excess"]) == pytest.approx(1.3 - 1.6)
    plain = compare(write_all(tmp_path / "plain", [base, inst]), seed=0, draws=999)
    r = rows(plain, "instruct_vs_base").isel(comparison=0).sel(band="all")
    assert np.isnan(float(r["null_a"])) and np.isnan(float(r["excess"]))
    assert int(r["n_excess"]) == 0


def test_scale_pair_of_two_sizes_of_one_series_end_to_end(tmp_path, tiny_llama_dir):
    """Two entries of one series, type and architecture that differ only in params, scored
    by the real commands (samples, score, fit, metrics): `ips factors` pairs them as a scale
    comparison, larger against smaller, and since both are the same weights ΔIPS is 0."""
    import yaml

    entry = {"source": {"path": str(tiny_llama_dir)}, "family": "tiny", "series": "tiny-coder",
             "type": "instruct", "architecture": "dense"}
    cfg = {"n_max": 3, "n_items": 2, "shard_size": 2, "templates": {"mcq": ["T1", "T2", "T4"]},
           "few_shot": {"templates": ["T1"], "shots": [1]},
           "models": {"tiny-0.5b": {**entry, "params": "0.5B"},
                      "tiny-1.5b": {**entry, "params": "1.5B"}},
           "datasets": {"arc-easy": {"format": "arc", "subset": "ARC-Easy",
                                     "fields": ["question"]}}}
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(cfg))
    samples = tmp_path / "samples.json"
    assert main(["samples", "--config", str(config), "--dataset", "arc-easy",
                 "--out", str(samples)]) == 0
    files = []
    for model in cfg["models"]:
        values, fits, out = (tmp_path / f"{model}.{x}" for x in ("v.h5", "f.h5", "nc"))
        assert main(["score", "--config", str(config), "--model", model, "--dataset", "arc-easy",
                     "--samples", str(samples), "--shard", "0", "--threads", "1",
                     "--out", str(values)]) == 0
        assert main(["fit", str(values), "--out", str(fits)]) == 0
        assert main(["metrics", "--values", str(values), "--interactions", str(fits),
                     "--no-matched-null", "--resamples", "100", "--out", str(out)]) == 0
        files.append(out)
    out = compare(files)
    r = rows(out, "scale")
    assert r.sizes["comparison"] == 1
    assert (r["model_a"].item(), r["model_b"].item()) == ("tiny-1.5b", "tiny-0.5b")
    np.testing.assert_array_equal(r["delta_ips"].values[0], 0.0)
    present = dict(zip(out["factor"].values, out["factor_present"].values))
    assert present["scale"] and not present["instruct_vs_base"]


def test_models_of_unknown_family_series_or_type_enter_no_pair(tmp_path, caplog):
    """Entries that give only their source (family, series, type unknown) are left out of
    the three model factors, one log line each, while few-shot still compares them."""
    ms = [make_metrics("u1", attrs("unknown", "unknown", "unknown", params=1e9), shots={1: 1.2}),
          make_metrics("u2", attrs("unknown", "unknown", "unknown", params=2e9)),
          make_metrics("u3", attrs("unknown", "unknown", "instruct", params=1e9)),
          make_metrics("u4", attrs("unknown", "unknown", "unknown", "moe", params=3e9,
                                   active_params=1e9))]
    with caplog.at_level("INFO", logger="ips.comparisons.compare"):
        out = compare(write_all(tmp_path, ms))
    factors_found = set(out["comparison_factor"].values.astype(str))
    assert factors_found == {"few_shot"}
    lines = [r.getMessage() for r in caplog.records if "unknown" in r.getMessage()]
    assert sorted(line.split(":")[0] for line in lines) == ["u1", "u2", "u3", "u4"]
