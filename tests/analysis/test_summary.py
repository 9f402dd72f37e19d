"""`ips metrics` (ips.formats.shards, ips.formats.metrics): synthetic values cubes, fitted for real,
checked against an independent computation with `ips.analysis.metrics`, shard merging, labels,
baseline, bad inputs."""

import json

import numpy as np
import pytest
import xarray as xr

from builders import (
    ATTRS,
    CONDITIONS,
    GROUPS,
    TEMPLATES,
    make_fit,
    make_values,
    write_pair,
)
from ips.analysis import diagnostics, interaction_types, metrics
from ips.analysis.diagnostics import representation_baseline
from ips.analysis.summary import band_tests, summarize
from ips.cli.main import main
from ips.errors import InputError
from ips.formats.hdf5 import write_dataset
from ips.formats.metrics import BAND_PAIRS, BANDS, read_metrics


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    """Two shards of one (model, dataset), the unsharded file, and all their fits."""
    tmp = tmp_path_factory.mktemp("metrics")
    ids = [f"item{i}" for i in range(7)]
    full = make_values(ids, seed=1)
    parts = [full.isel(sample=slice(0, 4)), full.isel(sample=slice(4, None))]
    paths = {"full": write_pair(tmp, "full", full)}
    for k, part in enumerate(parts):
        part = part.assign_attrs(shard=k)
        paths[k] = write_pair(tmp, f"shard{k}", part)
    return full, paths, tmp


def run_metrics(out, values, fits, *extra):
    return main(["metrics", "--values", *map(str, values), "--interactions", *map(str, fits),
                 *map(str, extra), "--out", str(out)])


def test_metrics_equal_an_independent_computation(shards, tmp_path):
    full, paths, _ = shards
    out = tmp_path / "results" / "m.nc"
    sweep = [0.05, 0.1, 0.15]
    assert run_metrics(out, [paths[0][0], paths[1][0]], [paths[0][1], paths[1][1]],
                       "--tau", 0.12, "--tau-sweep", *sweep) == 0
    with xr.open_dataset(out, engine="h5netcdf") as ds:
        ds = ds.load()

    # independent computation on the unsharded arrays and the unsharded fit
    with xr.open_dataset(paths["full"][1], engine="h5netcdf") as fit:
        fit = fit.load()
    norm = metrics.normalize(fit["and"].values, fit["or"].values)
    pred, gold = full["pred"].values, full["gold"].values
    cond = list(full["condition"].values)
    assert list(ds["group"].values) == ["0shot", "1shot"]
    assert list(ds["band"].values) == list(BANDS)
    for g, names in GROUPS.items():
        idx = [cond.index(c) for c in names]
        sub = norm[:, idx]
        for band in BANDS:
            ref = metrics.ips(sub, tau=0.12, band=None if band == "all" else band)
            got = ds.sel(group=g, band=band)
            np.testing.assert_allclose(got["ips"], ref.value, rtol=1e-9, equal_nan=True)
            assert int(got["n_valued_samples"]) == ref.n_valued_samples
            assert int(got["n_empty_pairs"]) == ref.n_empty_pairs
        for t in sweep:
            np.testing.assert_allclose(ds["ips_sweep"].sel(tau=t, group=g),
                                       metrics.ips(sub, tau=t).value, rtol=1e-9)
        shares = interaction_types.interaction_type_shares(sub, pred[:, idx], tau=0.12)
        np.testing.assert_allclose(ds["type_share"].sel(group=g, changed="yes"), shares.changed,
                                   equal_nan=True)
        np.testing.assert_allclose(ds["type_share"].sel(group=g, changed="no"),
                                   shares.unchanged, equal_nan=True)
        np.testing.assert_array_equal(ds["type_count"].sel(group=g, changed="yes"),
                                      shares.counts_changed)
        assert float(ds["output_consistency"].sel(group=g)) == diagnostics.output_consistency(
            pred[:, idx])
        # per pair: the pair's mean over samples with a value, in all_pairs order
        pairs = metrics.all_pairs(len(idx))
        per_pair = metrics.ips(sub, tau=0.12).per_pair
        mine = ds.where(ds["pair_group"] == g, drop=True)
        np.testing.assert_allclose(mine["pair_ips"].sel(band="all"),
                                   np.nanmean(per_pair, axis=0), rtol=1e-9)
        np.testing.assert_allclose(mine["pair_consistency"],
                                   diagnostics.pair_consistency(pred[:, idx], pairs))
        assert list(mine["pair_a"].values) == [names[i] for i in pairs[:, 0]]
        assert list(mine["pair_b"].values) == [names[j] for j in pairs[:, 1]]
    np.testing.assert_allclose(ds["accuracy"], diagnostics.accuracy(pred, gold))
    assert int(ds["n_samples"]) == 7
    assert float(ds["matching_error_max"]) == pytest.approx(float(fit["matching_error"].max()))
    assert ds.attrs["model"] == "m" and ds.attrs["dataset"] == "d"
    assert ds.attrs["tau"] == 0.12 and ds.attrs["prediction"] == "pred"
    assert json.loads(ds.attrs["model_attributes"]) == ATTRS
    assert json.loads(ds.attrs["values_files"]) == [str(paths[0][0]), str(paths[1][0])]
    assert json.loads(ds.attrs["interactions_files"]) == [str(paths[0][1]), str(paths[1][1])]
    assert ds["condition"].values.tolist() == CONDITIONS
    assert ds["template"].values.tolist() == TEMPLATES


def test_the_papers_normalisation_reaches_ips_and_every_null(shards, tmp_path):
    """`--normalisation paper`: IPS per group and band is metrics.ips of the fit normalised
    over all 2^(n+1) effects, the file says which rule it used, and the nulls of a game
    against itself stay 0 (they normalise as the run does: a null fitted under the other
    rule than the run's would not)."""
    full, paths, _ = shards
    out = tmp_path / "paper.nc"
    assert run_metrics(out, [paths["full"][0]], [paths["full"][1]], "--normalisation", "paper",
                       "--null-levels", 1e-9) == 0
    with xr.open_dataset(paths["full"][1], engine="h5netcdf") as fit:
        norm = metrics.normalize(fit["and"].values, fit["or"].values, normalisation="paper")
    cond = list(full["condition"].values)
    with xr.open_dataset(out, engine="h5netcdf") as ds:
        assert ds.attrs["normalisation"] == "paper"
        for g, names in GROUPS.items():
            sub = norm[:, [cond.index(c) for c in names]]
            for band in BANDS:
                ref = metrics.ips(sub, tau=0.1, band=None if band == "all" else band)
                np.testing.assert_allclose(ds["ips"].sel(group=g, band=band), ref.value,
                                           rtol=1e-9, equal_nan=True)
        assert float(np.nanmax(ds["null_ips"].sel(band="all"))) < 1e-6
        default = tmp_path / "default.nc"
        assert run_metrics(default, [paths["full"][0]], [paths["full"][1]]) == 0
        with xr.open_dataset(default, engine="h5netcdf") as other:
            assert other.attrs["normalisation"] == "nonempty"
            assert not np.allclose(other["ips"], ds["ips"], equal_nan=True)


def test_shard_merge_equals_unsharded(shards):
    _, paths, _ = shards
    merged = summarize([paths[1][0], paths[0][0]], [paths[1][1], paths[0][1]], tau=0.1)
    whole = summarize([paths["full"][0]], [paths["full"][1]], tau=0.1)
    for name in whole.data_vars:
        if whole[name].dtype == object:  # strings (the case study's words)
            assert merged[name].values.tolist() == whole[name].values.tolist(), name
            continue
        np.testing.assert_allclose(merged[name].values, whole[name].values, rtol=1e-9,
                                   atol=1e-12, equal_nan=True, err_msg=name)
    # the bootstrap resamples samples in id order: sharding cannot change an interval
    assert merged["sample"].values.tolist() == sorted(whole["sample"].values.tolist())
    assert {k: v for k, v in merged.attrs.items() if k.startswith("case_")} == {
        k: v for k, v in whole.attrs.items() if k.startswith("case_")}


def test_pair_labels_and_default_sweep(shards):
    _, paths, _ = shards
    ds = summarize([paths["full"][0]], [paths["full"][1]])
    label = {(a, b): lab for a, b, lab in zip(ds["pair_a"].values, ds["pair_b"].values,
                                              ds["pair_label"].values)}
    assert label["T1", "T2"] == "altering"
    assert label["T1", "T3"] == "adding"
    assert label["T1", "T4"] == "mixed"
    assert label["T1", "T5"] == "adding"
    assert label["T1-1shot", "T4-1shot"] == "mixed"
    np.testing.assert_allclose(ds["tau"], metrics.default_tau_sweep())
    assert ds.sizes["pair"] == 10 + 1
    assert ds["pair"].values[0] == "0shot:T1|T2"


def test_representation_baseline_by_hand(shards):
    full, paths, _ = shards
    ds = summarize([paths["full"][0]], [paths["full"][1]])
    h = full["hidden"].values.astype(np.float64)
    cond = list(full["condition"].values)
    for a, b, cos, l2 in zip(ds["pair_a"].values, ds["pair_b"].values, ds["rep_cosine"].values,
                             ds["rep_l2"].values):
        i, j = cond.index(a), cond.index(b)
        cs = [h[s, i] @ h[s, j] / np.sqrt((h[s, i] @ h[s, i]) * (h[s, j] @ h[s, j]))
              for s in range(h.shape[0])]
        ds_ = [np.sqrt(np.sum((h[s, i] - h[s, j]) ** 2)) for s in range(h.shape[0])]
        assert cos == pytest.approx(np.mean(cs), rel=1e-9)
        assert l2 == pytest.approx(np.mean(ds_), rel=1e-9)
    # a zero hidden state has no cosine: that sample is left out
    hid = np.ones((2, 2, 3))
    hid[0, 0] = 0.0
    cos, l2 = representation_baseline(hid, np.array([[0, 1]]))
    assert cos[0] == pytest.approx(1.0)
    assert l2[0] == pytest.approx(np.sqrt(3) / 2)


def test_missing_group_and_single_condition_group(tmp_path):
    conds = ["T1", "T2", "T3", "T1-1shot"]
    ds = make_values(["a", "b", "c"], seed=5, conditions=conds, templates=["T1", "T2", "T3", "T1"],
                     shots=[0, 0, 0, 1], groups={"0shot": conds[:3], "1shot": conds[3:]})
    v, f = write_pair(tmp_path, "x", ds)
    out = summarize([v], [f], tau=0.1, tau_sweep=[0.1, 0.2])
    assert list(out["group"].values) == ["0shot", "1shot"]  # no 2shot, 3shot: not invented
    assert np.all(np.isnan(out["ips"].sel(group="1shot")))
    assert np.all(out["n_valued_samples"].sel(group="1shot") == 0)
    assert np.isnan(float(out["output_consistency"].sel(group="1shot")))
    assert np.isfinite(float(out["ips"].sel(group="0shot", band="all")))
    assert set(out["pair_group"].values) == {"0shot"}
    # only a 0-shot group at all
    ds = make_values(["a", "b"], seed=6, conditions=conds[:3], templates=conds[:3],
                     shots=[0, 0, 0], groups={"0shot": conds[:3]})
    v, f = write_pair(tmp_path, "y", ds)
    out = summarize([v], [f], tau=0.1, tau_sweep=[0.1, 0.2])
    assert list(out["group"].values) == ["0shot"]
    assert out.sizes["pair"] == 3


def test_instruction_dataset_uses_greedy_token_and_perturbation_labels(tmp_path):
    conds = ["A1", "A2", "A1-paraphrase"]
    ds = make_values(["r1", "r2", "r3"], seed=7, conditions=conds,
                     templates=["A1", "A2", "A1"], shots=[0, 0, 0],
                     perturbations=["", "", "paraphrase"], kind="instruction",
                     groups={"0shot": ["A1", "A2"], "perturbation": ["A1", "A1-paraphrase"]})
    v, f = write_pair(tmp_path, "dolly", ds)
    out = summarize([v], [f], tau=0.1, tau_sweep=[0.1, 0.2])
    assert out.attrs["prediction"] == "greedy_token" and out.attrs["kind"] == "instruction"
    assert np.all(np.isnan(out["accuracy"]))
    assert dict(zip(out["pair"].values, out["pair_label"].values)) == {
        "0shot:A1|A2": "altering", "perturbation:A1|A1-paraphrase": "perturbation"}
    greedy = ds["greedy_token"].values
    assert float(out["pair_consistency"][0]) == np.mean(greedy[:, 0] == greedy[:, 1])
    assert float(out["output_consistency"].sel(group="perturbation")) == np.mean(
        greedy[:, 0] == greedy[:, 2])


def test_mismatched_shards_name_the_file(shards, tmp_path, capsys):
    full, paths, tmp = shards
    other = full.isel(sample=slice(4, None)).assign_attrs(model="another-model")
    v, f = write_pair(tmp_path, "other", other)
    code = run_metrics(tmp_path / "m.nc", [paths[0][0], v], [paths[0][1], f])
    err = capsys.readouterr().err
    assert code == 2
    assert str(v) in err and "'model'" in err and "another-model" in err
    assert not (tmp_path / "m.nc").exists()
    # the same model name with other weights (a random model's seed changed between shards)
    other = full.isel(sample=slice(4, None)).assign_attrs(
        model_source='{"random": "llama", "seed": 99}')
    v, f = write_pair(tmp_path, "reseeded", other)
    with pytest.raises(InputError, match=rf"{v}: attribute 'model_source'"):
        summarize([paths[0][0], v], [paths[0][1], f])
    # other conditions
    other = full.isel(sample=slice(4, None), condition=slice(0, 6))
    v, f = write_pair(tmp_path, "fewer", other)
    with pytest.raises(InputError, match=str(v)):
        summarize([paths[0][0], v], [paths[0][1], f])
    # the same shard twice
    with pytest.raises(InputError, match="also in"):
        summarize([paths[0][0], paths[0][0]], [paths[0][1], paths[0][1]])


def test_fit_that_does_not_belong_to_the_values_names_the_fit(shards, tmp_path, capsys):
    full, paths, _ = shards
    # fits given in the wrong order: other samples
    code = run_metrics(tmp_path / "m.nc", [paths[0][0], paths[1][0]],
                       [paths[1][1], paths[0][1]])
    err = capsys.readouterr().err
    assert code == 2 and str(paths[1][1]) in err and str(paths[0][0]) in err
    # same labels and shapes but fitted to other values (e.g. another model's shard)
    twin = full.isel(sample=slice(0, 4)).copy(deep=True)
    twin["v"] = twin["v"] + 0.5 * np.sin(np.arange(twin["v"].shape[-1]))
    wrong_fit = tmp_path / "twin.fit.h5"
    write_dataset(make_fit(twin), wrong_fit)
    with pytest.raises(InputError, match=f"{wrong_fit}.*does not match.*reconstruct"):
        summarize([paths[0][0]], [wrong_fit])
    # one fit for two values files
    with pytest.raises(InputError, match="2 values files but 1 interactions"):
        summarize([paths[0][0], paths[1][0]], [paths[0][1]])
    # not an interactions file at all
    with pytest.raises(InputError, match=f"{paths[0][0]}: no variable 'and'"):
        summarize([paths[0][0]], [paths[0][0]])
    with pytest.raises(InputError, match="no such interactions file"):
        summarize([paths[0][0]], [tmp_path / "nope.h5"])


def test_group_naming_an_unknown_condition(tmp_path):
    ds = make_values(["a", "b"], seed=8, groups={"0shot": ["T1", "T2", "T9"]})
    v, f = write_pair(tmp_path, "g", ds)
    with pytest.raises(InputError, match=f"{v}: group '0shot' names condition"):
        summarize([v], [f])


def test_tau_outside_zero_one_is_refused(shards, tmp_path, capsys):
    _, paths, _ = shards
    with pytest.raises(SystemExit) as e:
        run_metrics(tmp_path / "m.nc", [paths[0][0]], [paths[0][1]], "--tau", "1.5")
    assert e.value.code == 2 and "must lie in (0, 1)" in capsys.readouterr().err


def test_bootstrap_options_reach_the_table(shards, tmp_path):
    """--resamples / --level / --seed are recorded, and a lower level gives nested, narrower
    intervals from the same replicates (same seed and count)."""
    _, paths, _ = shards
    width = {}
    for level in ("0.95", "0.5"):
        out = tmp_path / f"m{level}.nc"
        assert run_metrics(out, [paths["full"][0]], [paths["full"][1]], "--seed", "5",
                           "--resamples", "300", "--level", level) == 0
        with xr.open_dataset(out, engine="h5netcdf") as ds:
            assert json.loads(ds.attrs["bootstrap"]) == {"method": "percentile", "n_boot": 300,
                                                         "level": float(level), "seed": 5}
            width[level] = ds["ips_ci"].sel(group="0shot", band="all").values
    (lo95, hi95), (lo50, hi50) = width["0.95"], width["0.5"]
    assert lo95 <= lo50 <= hi50 <= hi95 and hi50 - lo50 < hi95 - lo95


def test_resamples_below_100_are_refused(shards, tmp_path, capsys):
    _, paths, _ = shards
    with pytest.raises(SystemExit) as e:
        run_metrics(tmp_path / "m.nc", [paths[0][0]], [paths[0][1]], "--resamples", "10")
    assert e.value.code == 2 and "--resamples" in capsys.readouterr().err


def test_per_sample_ips_intervals_sparsity_matching_and_case_study(shards):
    full, paths, _ = shards
    ds = summarize([paths["full"][0]], [paths["full"][1]], tau=0.1, seed=3, n_boot=400)
    with xr.open_dataset(paths["full"][1], engine="h5netcdf") as fit:
        fit = fit.load()
    norm = metrics.normalize(fit["and"].values, fit["or"].values)
    cond = list(full["condition"].values)
    ids = list(full["sample"].values)
    assert ds["sample"].values.tolist() == sorted(ids)
    for g, names in GROUPS.items():
        idx = [cond.index(c) for c in names]
        for band in BANDS:
            ref = metrics.ips(norm[:, idx], tau=0.1, band=None if band == "all" else band)
            got = ds["sample_ips"].sel(group=g, band=band).sel(sample=ids).values
            np.testing.assert_allclose(got, ref.per_sample, equal_nan=True)
            lo, hi = ds["ips_ci"].sel(group=g, band=band).values
            value = float(ds["ips"].sel(group=g, band=band))
            if np.isfinite(value):
                assert lo <= value <= hi and np.nanmean(got) == pytest.approx(value)
    sw, swci = ds["ips_sweep"].values, ds["ips_sweep_ci"].values
    ok = np.isfinite(sw)
    assert np.all((swci[..., 0][ok] <= sw[ok]) & (sw[ok] <= swci[..., 1][ok]))
    # per (sample, pair): the mean over samples is pair_ips
    np.testing.assert_allclose(ds["sample_pair_ips"].mean("sample", skipna=True),
                               ds["pair_ips"], equal_nan=True)
    assert json.loads(ds.attrs["bootstrap"]) == {"method": "percentile", "n_boot": 400,
                                                 "level": 0.95, "seed": 3}
    # sorted |Ĩ|: starts at 1 (the largest of every row), never increases, ends at 0
    curve = ds["sparsity_mean"].values
    assert curve[0] == pytest.approx(1.0) and curve[-1] == pytest.approx(0.0)
    assert np.all(np.diff(curve) <= 1e-12) and 0 < float(ds["salient_share"]) < 1
    # keeping every interaction reconstructs v; keeping few does not (random v is not sparse)
    err = ds["matching_nrmse"].sel(keep=[0.03, 0.05, 1.0]).values
    assert err[2] < 1e-6 and err[0] > err[2] and err[1] > err[2]
    # per sample, computed directly from the definition on that sample's rows (in id order)
    for sid in ids[:3]:
        s = ids.index(sid)
        rows = np.abs(norm[s, :, :, 1: 2 ** int(full["n_vars"].values[s])])
        share = (rows > 0.1).mean(axis=(1, 2))  # AND and OR of Ω, per condition
        assert float(ds["sample_salient_share"].sel(sample=sid)) == pytest.approx(share.mean())
    # every sample has all conditions: the mean of the per-sample values is the pooled one
    assert float(ds["sample_salient_share"].mean()) == pytest.approx(float(ds["salient_share"]))
    np.testing.assert_allclose(ds["sample_matching_nrmse"].mean("sample"), ds["matching_nrmse"])
    # case study: the changed-prediction 0shot cell with the largest ips(x, T, T^)
    idx = [cond.index(c) for c in GROUPS["0shot"]]
    pairs = metrics.all_pairs(len(idx))
    per_pair = metrics.ips(norm[:, idx], tau=0.1).per_pair
    pred = full["pred"].values[:, idx]
    changed = pred[:, pairs[:, 0]] != pred[:, pairs[:, 1]]
    best = np.where(changed & np.isfinite(per_pair), per_pair, -1.0)
    s, p = np.unravel_index(np.argmax(best), best.shape)
    a = ds.attrs
    assert a["case_sample"] == ids[s] and a["case_changed"] == 1
    assert (a["case_condition_a"], a["case_condition_b"]) == (
        GROUPS["0shot"][pairs[p, 0]], GROUPS["0shot"][pairs[p, 1]])
    assert a["case_ips"] == pytest.approx(per_pair[s, p])
    assert a["case_pred_a"] == "ABCD"[pred[s, pairs[p, 0]]]
    n = int(full["n_vars"].values[s])
    assert ds["case_norm"].shape == (2, 2, 2**n) and ds.sizes["case_var"] == n
    np.testing.assert_allclose(ds["case_norm"].sel(case_side="a").values,
                               norm[s, idx[pairs[p, 0]], :, : 2**n])
    np.testing.assert_allclose(ds["case_rec"].sel(keep=1.0).values, ds["case_v"].values,
                               atol=1e-6)
    assert ds["case_words"].values.tolist() == [f"x{k + 1}" for k in range(n)]
    # beside it, the unchanged-prediction cell with the largest ips(x, T, T^) (Fig. 3a)
    best = np.where(~changed & np.isfinite(per_pair), per_pair, -1.0)
    s, p = np.unravel_index(np.argmax(best), best.shape)
    assert best[s, p] > 0 and a["case_same_sample"] == ids[s] and a["case_same_changed"] == 0
    assert a["case_same_pred_a"] == a["case_same_pred_b"] == "ABCD"[pred[s, pairs[p, 0]]]
    assert a["case_same_ips"] == pytest.approx(per_pair[s, p])
    n = int(full["n_vars"].values[s])
    np.testing.assert_allclose(ds["case_same_norm"].sel(case_same_side="b").values,
                               norm[s, idx[pairs[p, 1]], :, : 2**n])
    assert ds.sizes["case_same_var"] == n


def test_band_tests_on_known_per_sample_values():
    S = 6
    x = np.full((S, 2, len(BANDS)), np.nan)  # (sample, group, band)
    base = np.arange(1.0, S + 1) / 10
    # group 0: low < mid < high in every sample -> each test at its smallest p, 2/2^6
    x[:, 0, 1], x[:, 0, 2], x[:, 0, 3] = base, base + 0.2, base + 0.5
    # group 1: low = mid everywhere; mid - high of alternating sign and equal size; one
    # sample without a mid value
    x[:, 1, 1] = x[:, 1, 2] = base
    x[:, 1, 3] = base + np.array([1, -1, 1, -1, 1, -1]) * 0.3
    x[0, 1, 2] = np.nan
    out = band_tests(x, draws=99, seed=0)
    assert BAND_PAIRS == ("low-mid", "mid-high", "low-high")
    np.testing.assert_allclose(out["band_diff"][0], [-0.2, -0.3, -0.5])
    np.testing.assert_array_equal(out["band_p"][0], [2 / 64] * 3)
    np.testing.assert_allclose(out["band_p_holm"][0], [3 * 2 / 64] * 3)  # Holm of 3 equal p
    assert out["band_n"][0].tolist() == [6, 6, 6]
    # group 1: zero differences tie with everything (p = 1); mid - high on the 5 samples
    # with a mid value is (+.3, -.3, +.3, -.3, +.3): an odd count of ±0.3, so |Σ ε d| ≥ 0.3
    # = |Σ d| for every ε (p = 1); low - high sums to 0 (p = 1)
    assert out["band_n"][1].tolist() == [5, 5, 6]
    np.testing.assert_allclose(out["band_diff"][1], [0.0, 0.3 / 5, 0.0], atol=1e-12)
    np.testing.assert_array_equal(out["band_p"][1], [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(out["band_p_holm"][1], [1.0, 1.0, 1.0])


def test_band_tests_and_per_sample_type_counts_in_the_metrics(shards):
    full, paths, _ = shards
    ds = summarize([paths[1][0], paths[0][0]], [paths[1][1], paths[0][1]], tau=0.1, seed=2,
                   draws=500)
    assert ds["band_p"].dims == ("group", "band_pair")
    assert ds["band_pair"].values.tolist() == list(BAND_PAIRS)
    ref = band_tests(ds["sample_ips"].values, draws=500, seed=2)
    for name, value in ref.items():
        np.testing.assert_array_equal(ds[name].values, value, err_msg=name)
    p, q = ds["band_p"].values, ds["band_p_holm"].values
    ok = np.isfinite(p)
    assert np.all(q[ok] >= p[ok]) and np.all(q[ok] <= 1)
    # 7 samples: exact test, p a multiple of 1/2^n
    n = ds["band_n"].values
    assert np.all(n <= 7) and np.allclose((p * 2.0 ** n)[ok], np.round(p * 2.0 ** n)[ok])
    test = json.loads(ds.attrs["test"])
    assert (test["draws"], test["seed"], test["exact_max"]) == (500, 2, 16)
    # per-sample type counts: they sum to the pooled counts, and each sample's equal the
    # pooled counts of that sample alone
    counts = ds["sample_type_count"]
    assert counts.dims == ("sample", "group", "type", "changed")
    np.testing.assert_array_equal(counts.sum("sample").values, ds["type_count"].values)
    with xr.open_dataset(paths["full"][1], engine="h5netcdf") as fit:
        norm = metrics.normalize(fit["and"].values, fit["or"].values)
    cond = list(full["condition"].values)
    idx = [cond.index(c) for c in GROUPS["0shot"]]
    s = list(full["sample"].values).index("item5")
    one = interaction_types.interaction_type_shares(norm[s:s + 1, idx], full["pred"].values[s:s + 1, idx],
                                          tau=0.1)
    got = counts.sel(sample="item5", group="0shot")
    np.testing.assert_array_equal(got.sel(changed="yes").values, one.counts_changed)
    np.testing.assert_array_equal(got.sel(changed="no").values, one.counts_unchanged)


def test_permutations_reach_the_file_and_are_bounded(shards, tmp_path, capsys):
    _, paths, _ = shards
    out = tmp_path / "m.nc"
    assert run_metrics(out, [paths[0][0]], [paths[0][1]], "--permutations", "199",
                       "--seed", "7") == 0
    with xr.open_dataset(out, engine="h5netcdf") as ds:
        assert json.loads(ds.attrs["test"])["draws"] == 199
        assert json.loads(ds.attrs["test"])["seed"] == 7
    with pytest.raises(SystemExit) as e:
        run_metrics(out, [paths[0][0]], [paths[0][1]], "--permutations", "50")
    assert e.value.code == 2 and "--permutations" in capsys.readouterr().err


def precision_run(full, tmp_path, name, noise, conditions=(0, 1), **attrs):
    """A second-precision run of samples item1, item2 under `conditions` (T1, T2: as `ips
    score --dtype bfloat16 --conditions T1 T2` writes it): v moved by `noise` (same shape)."""
    run = full.isel(sample=[1, 2], condition=list(conditions)).copy(deep=True)
    run["v"] = run["v"] + noise
    names = [str(c) for c in run["condition"].values]
    groups = {g: [c for c in names if c in members] for g, members in GROUPS.items()}
    run = run.assign_attrs(groups=json.dumps({g: c for g, c in groups.items() if c}), **attrs)
    return write_pair(tmp_path, name, run)


def pair_ips(a_fit, b_fit, s, c, n, tau=0.1):
    """ips(x, v, v') of sample s, condition c between two fits, as a two-condition sample."""
    and_ = np.stack([a_fit["and"].values[s, c], b_fit["and"].values[s, c]])
    or_ = np.stack([a_fit["or"].values[s, c], b_fit["or"].values[s, c]])
    return metrics.ips(metrics.normalize(and_[None], or_[None], n), tau=tau).value


def test_precision_null_against_the_pair_ips_of_each_game(shards, tmp_path):
    """The precision null of a re-scored sample is the mean over its re-scored conditions of
    ips(x, v, v') between the fits of the two precisions (here: metrics.ips of the two fits
    as a two-condition sample); samples not re-scored have none; identical values give 0,
    a salient-set Jaccard of 1 and |Δv| = 0."""
    full, paths, _ = shards
    values, fits = [paths[0][0], paths[1][0]], [paths[0][1], paths[1][1]]
    noise = 0.3 * np.random.default_rng(5).normal(size=(2, 2, full.sizes["mask"]))
    pv, pf = precision_run(full, tmp_path, "bf16", noise, dtype="bfloat16")
    out = tmp_path / "m.nc"
    assert run_metrics(out, values, fits, "--tau", 0.1, "--precision-values", pv,
                       "--precision-interactions", pf) == 0
    with xr.open_dataset(out, engine="h5netcdf") as ds:
        assert list(ds["precision"].values) == ["bfloat16"]
        at = {"precision": "bfloat16", "band": "all"}
        got = ds["sample_precision_null_ips"].sel(group="0shot", **at)
        assert np.isnan(got.sel(sample=["item0", "item3", "item6"]).values).all()
        assert int(ds["precision_null_n_valued"].sel(group="0shot", **at)) == 2
        # no 1-shot condition was scored again: that group has no precision null
        assert int(ds["precision_null_n_valued"].sel(group="1shot", **at)) == 0
        assert int(ds["precision_games"].sel(precision="bfloat16")) == 4
        main_fit, run_fit = make_fit(full.isel(sample=[1, 2], condition=[0, 1])), xr.open_dataset(
            pf, engine="h5netcdf")
        n = full["n_vars"].values[[1, 2]]
        for s, sid in enumerate(["item1", "item2"]):
            per_condition = [pair_ips(main_fit, run_fit, s, c, n[s]) for c in range(2)]
            assert float(got.sel(sample=sid)) == pytest.approx(np.mean(per_condition), abs=1e-12)
        run_fit.close()
        inside = np.isfinite(full["v"].values[[1, 2]][:, [0, 1]])
        assert float(ds["precision_max_abs_dv"].sel(precision="bfloat16")) == pytest.approx(np.abs(noise[inside]).max())
        assert json.loads(ds.attrs["precision"])["runs"]["bfloat16"] == {
            "conditions": ["T1", "T2"], "samples": 2}
    same_v, same_f = precision_run(full, tmp_path, "same", 0.0, dtype="float16")
    ds = summarize(values, fits, variant_runs={"precision": ([same_v], [same_f])})
    assert np.nanmax(np.abs(ds["sample_precision_null_ips"].values)) == 0.0
    assert ds["precision_jaccard"].values.tolist() == [1.0]
    assert ds["precision_max_abs_dv"].values.tolist() == [0.0]


def test_a_variant_is_computed_for_every_group_with_conditions_scored_again(
        shards, tmp_path):
    """A run re-scoring T1, T2 (0-shot) and T1-1shot (1-shot): each group's per-sample null
    is the mean over its own re-scored conditions only (recomputed here per condition), and
    the null table lists both groups."""
    from ips.figures.tables.results import null_rows

    full, paths, _ = shards
    values, fits = [paths[0][0], paths[1][0]], [paths[0][1], paths[1][1]]
    noise = 0.3 * np.random.default_rng(7).normal(size=(2, 3, full.sizes["mask"]))
    pv, pf = precision_run(full, tmp_path, "groups", noise, conditions=(0, 1, 5),
                           dtype="bfloat16")
    ds = summarize(values, fits, tau=0.1, variant_runs={"precision": ([pv], [pf])})
    main_fit = make_fit(full.isel(sample=[1, 2], condition=[0, 1, 5]))
    run_fit = xr.open_dataset(pf, engine="h5netcdf").load()
    n = full["n_vars"].values[[1, 2]]
    for s, sid in enumerate(["item1", "item2"]):
        each = [pair_ips(main_fit, run_fit, s, c, n[s]) for c in range(3)]
        at = {"precision": "bfloat16", "band": "all", "sample": sid}
        assert float(ds["sample_precision_null_ips"].sel(group="0shot", **at)) == pytest.approx(
            np.mean(each[:2]), abs=1e-12)
        assert float(ds["sample_precision_null_ips"].sel(group="1shot", **at)) == pytest.approx(
            each[2], abs=1e-12)
    m = tmp_path / "groups.nc"
    write_dataset(ds, m)
    rows = [r for r in null_rows([read_metrics(m)]) if r["null"] == "precision"
            and r["band"] == "all"]
    assert [(r["group"], r["n_valued_samples"]) for r in rows] == [("0shot", 2), ("1shot", 2)]


def test_a_precision_run_of_other_games_names_its_file(shards, tmp_path):
    full, paths, _ = shards
    values, fits = [paths[0][0]], [paths[0][1]]
    own_v, own_f = precision_run(full, tmp_path, "own", 0.0)  # no dtype attribute: the same
    with pytest.raises(InputError, match=f"{own_v}: dtype None is the values files' own"):
        summarize(values, fits, variant_runs={"precision": ([own_v], [own_f])})
    other_v, other_f = precision_run(full.assign_coords(sample=[f"x{i}" for i in range(7)]),
                                     tmp_path, "other", 0.0, dtype="bfloat16")
    with pytest.raises(InputError, match=f"{other_v}: sample or condition 'x1' is not in"):
        summarize(values, fits, variant_runs={"precision": ([other_v], [other_f])})
    with pytest.raises(InputError, match="1 precision values files but 0 precision interactions"):
        summarize(values, fits, variant_runs={"precision": ([other_v], [])})


def test_the_baseline_null_is_scored_as_the_precision_null(shards, tmp_path):
    """A run under another baseline (`ips score --baseline`) is read against the same games as
    a precision run: the same per-sample null, Jaccard and |Δv| for the same change of v, on
    its own coordinate `baseline` named by the run's mask source. A run with the values
    files' own mask token, or in another dtype, is not a baseline run of these games."""
    full, _, _ = shards
    full = full.assign_attrs(mask_token_id=0, mask_source="unk", mask_token="<unk>")
    noise = 0.3 * np.random.default_rng(6).normal(size=(2, 2, full.sizes["mask"]))
    mv, mf = precision_run(full, tmp_path, "eos", noise, mask_token_id=2, mask_source="eos",
                           mask_token="</s>")
    pv, pf = precision_run(full, tmp_path, "bf16", noise, dtype="bfloat16")
    v0, f0 = write_pair(tmp_path, "main", full.isel(sample=[0, 1, 2, 3]))
    ds = summarize([v0], [f0], variant_runs={"precision": ([pv], [pf]), "baseline": ([mv], [mf])})
    assert list(ds["baseline"].values) == ["eos"]
    for stat in ("null_ips", "jaccard", "max_abs_dv", "dv_rel", "games"):
        name = f"sample_{{}}_{stat}" if stat == "null_ips" else f"{{}}_{stat}"
        np.testing.assert_array_equal(ds[name.format("baseline")].values,
                                      ds[name.format("precision")].values)
    assert np.isfinite(ds["sample_baseline_null_ips"].sel(sample=["item1", "item2"],
                                                          group="0shot", band="all")).all()
    assert json.loads(ds.attrs["baseline"]) == {"mask_source": "unk", "mask_token": "<unk>", "runs": {
        "eos": {"conditions": ["T1", "T2"], "samples": 2, "mask_token": "</s>"}}}
    own_v, own_f = precision_run(full, tmp_path, "own", 0.0, mask_source="pad")
    with pytest.raises(InputError, match=f"{own_v}: mask_token_id 0 is the values files' own"):
        summarize([v0], [f0], variant_runs={"baseline": ([own_v], [own_f])})
    half_v, half_f = precision_run(full, tmp_path, "half", 0.0, mask_token_id=2,
                                   mask_source="eos", dtype="bfloat16")
    with pytest.raises(InputError, match=f"{half_v}: dtype 'bfloat16', but the values files"):
        summarize([v0], [f0], variant_runs={"baseline": ([half_v], [half_f])})


def test_peer_metrics_equal_loops_over_the_values_file(shards):
    """The metrics file's output-level metrics (`ips.analysis.peers`), recomputed here from the
    values file with loops: per group, accuracy spread, PSS, consistency rate, mean |Δv(x_N)|;
    and |Δv(x_N)| of every (sample, pair)."""
    full, paths, _ = shards
    ds = summarize([paths["full"][0]], [paths["full"][1]])
    pred, gold, n = full["pred"].values, full["gold"].values, full["n_vars"].values
    v_full = np.array([full["v"].values[s, :, (1 << n[s]) - 1] for s in range(len(n))])
    cond = list(full["condition"].values)
    for g, names in json.loads(full.attrs["groups"]).items():
        idx = [cond.index(c) for c in names]
        pairs = [(i, j) for a, i in enumerate(idx) for j in idx[a + 1:]]
        ok = pred == gold[:, None]
        acc = [ok[:, i].mean() for i in idx]
        want = {"accuracy_spread": max(acc) - min(acc),
                "pss": np.mean([np.mean([ok[s, i] != ok[s, j] for i, j in pairs])
                                for s in range(len(n))]),
                "consistency_rate": np.mean([np.mean([pred[s, i] == pred[s, j] for i, j in pairs])
                                             for s in range(len(n))]),
                "dv_unmasked": np.mean([np.mean([abs(v_full[s, i] - v_full[s, j])
                                                 for i, j in pairs]) for s in range(len(n))])}
        got = ds["peer_value"].sel(group=g)
        for name, value in want.items():
            assert float(got.sel(peer=name)) == pytest.approx(value), (g, name)
            low, high = ds["peer_ci"].sel(group=g, peer=name).values
            assert low <= float(got.sel(peer=name)) <= high
        assert ds["peer_n"].sel(group=g).values.tolist() == [len(n)] * 4
    order = np.argsort(full["sample"].values.astype(str))
    for k, (a, b) in enumerate(zip(ds["pair_a"].values, ds["pair_b"].values)):
        want = np.abs(v_full[:, cond.index(a)] - v_full[:, cond.index(b)])[order]
        assert ds["sample_pair_dv_unmasked"].values[:, k] == pytest.approx(want)
