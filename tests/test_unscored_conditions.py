"""Dolly at scale (issue 53 point 4): an item without a rewording runs its other conditions,
the perturbation group rests on the items that have it, and every file says which rows were
scored (`scored`)."""

import json

import numpy as np
import pytest
import xarray as xr
import yaml

from builders import make_values
from ips.analysis.summary import summarize
from ips.config import dataset_settings, validate
from ips.errors import InputError
from ips.fitting.cube import fit_file, fit_values
from ips.formats.hdf5 import write_dataset
from ips.formats.interactions import write_interactions
from ips.formats.shards import read_shard
from ips.formats.values import Values, read_values
from ips.models.testing import TINY_ATTRS
from ips.prompts.samples import load_samples, prepare_samples, save_samples

CONDITIONS = ["A1", "A2", "A3", "A1-paraphrase", "A1-reorder"]
GROUPS = {"0shot": CONDITIONS[:3], "perturbation": ["A1", *CONDITIONS[3:]]}
SAMPLES = [f"s{i}" for i in range(8)]
LACKING = [1, 4, 6]  # samples without rewordings: their last two conditions are not scored


def _perturbation_file(tmp_path, keep):
    """The bundled rewordings of the Dolly records `keep` only."""
    from importlib import resources

    raw = yaml.safe_load((resources.files("ips") / "data" / "dolly_perturbations.yaml")
                         .read_text(encoding="utf-8"))
    path = tmp_path / "rewordings.yaml"
    path.write_text(yaml.safe_dump({k: raw[k] for k in keep}))
    return path


def _dolly_settings(tmp_path, keep, n_items=8):
    config = validate({
        "n_max": 4, "n_items": n_items,
        "templates": {"instruction": ["A1", "A2"]},
        "few_shot": {"templates": [], "shots": []},
        "perturbations": {"names": ["paraphrase", "reorder"],
                          "file": str(_perturbation_file(tmp_path, keep))},
        "models": {"tiny": {"source": {"path": "unused"}, **TINY_ATTRS}},
        "datasets": {"dolly": {"format": "dolly", "fields": ["instruction"]}},
    })
    return dataset_settings(config, "dolly")


def test_an_item_without_rewordings_keeps_its_template_conditions(tmp_path):
    keep = [f"dolly-{i:03d}" for i in range(0, 20, 2)]
    got = prepare_samples(_dolly_settings(tmp_path, keep))
    assert len(got.samples) == 8  # none skipped for lacking a rewording
    for s in got.samples:
        has = s.item.id in keep
        assert set(s.prompts) == {"A1", "A2"} | ({"A1-paraphrase", "A1-reorder"} if has else set())
    n_with = sum(s.item.id in keep for s in got.samples)
    assert 0 < n_with < 8
    assert got.perturbed() == {"A1-paraphrase": n_with, "A1-reorder": n_with}
    path = tmp_path / "samples.json"
    save_samples(got, path)
    assert json.loads(path.read_text())["perturbed"] == got.perturbed()
    assert load_samples(path).perturbed() == got.perturbed()


def test_rewordings_of_no_item_are_one_line_errors(tmp_path):
    with pytest.raises(InputError, match="rewords none of its items") as e:
        prepare_samples(_dolly_settings(tmp_path, []))
    assert "\n" not in str(e.value)
    # rewordings exist, but the one item drawn has none
    settings = _dolly_settings(tmp_path, ["dolly-000"], n_items=1)
    drawn = prepare_samples({**settings, "perturbations": {"names": [], "file": None}})
    other = next(i for i in ("dolly-000", "dolly-001") if i != drawn.samples[0].item.id)
    with pytest.raises(InputError, match="none of the 1 drawn items has its rewording"):
        prepare_samples(_dolly_settings(tmp_path, [other], n_items=1))


def _run(tmp_path, name, ds, scored=None):
    """Write `ds` (with `scored`, if given: NaN where False) and its fit; their paths."""
    ds = ds.copy(deep=True)
    if scored is not None:
        ds["v"].values[~scored] = np.nan
        ds["scored"] = (("sample", "condition"), scored)
    v, f = tmp_path / f"{name}.values.h5", tmp_path / f"{name}.fit.h5"
    write_dataset(ds, v)
    write_interactions(fit_file(read_values(v), v, exhaustive=True, budget=None, seed=0,
                                solver="exact", noise=0.0, learning_rate=0.1, steps=10),
                       f, n_max=5, input_file=v)
    return v, f


def _dataset(conditions=CONDITIONS, groups=GROUPS, samples=SAMPLES):
    full = make_values(SAMPLES, 3, conditions=CONDITIONS, templates=["A1"] * 5,
                       shots=[0] * 5, perturbations=["", "", "", "paraphrase", "reorder"],
                       groups=GROUPS)
    return full.sel(sample=samples, condition=conditions).assign_attrs(groups=json.dumps(groups))


def _metrics(tmp_path, name, ds, scored=None):
    v, f = _run(tmp_path, name, ds, scored)
    return summarize([v], [f], n_boot=200, draws=99)


def test_missing_rows_leave_the_template_group_alone_and_the_perturbation_group_to_its_items(
        tmp_path):
    scored = np.ones((len(SAMPLES), len(CONDITIONS)), bool)
    scored[LACKING, 3:] = False
    got = _metrics(tmp_path, "missing", _dataset(), scored)
    # ground truth: the template conditions alone, and the items with rewordings alone
    templates = _metrics(tmp_path, "templates", _dataset(GROUPS["0shot"], {"0shot": GROUPS["0shot"]}))
    have = [s for i, s in enumerate(SAMPLES) if i not in LACKING]
    pert = _metrics(tmp_path, "pert", _dataset(GROUPS["perturbation"],
                                               {"perturbation": GROUPS["perturbation"]}, have))
    for truth, group in ((templates, "0shot"), (pert, "perturbation")):
        for name in ("ips", "n_valued_samples", "n_empty_pairs", "ips_sweep", "type_count",
                     "output_consistency"):
            assert np.allclose(got[name].sel(group=group), truth[name].sel(group=group),
                               equal_nan=True), (group, name)
        ours = got["sample_ips"].sel(group=group, sample=truth["sample"])
        assert np.allclose(ours, truth["sample_ips"].sel(group=group), equal_nan=True)
    assert got["n_missing_pairs"].sel(group="perturbation") == 3 * len(LACKING)
    assert got["n_missing_pairs"].sel(group="0shot") == 0
    assert got["n_valued_samples"].sel(group="perturbation", band="all") == len(have)
    lacking = got["sample_pair_ips"].sel(sample=[SAMPLES[i] for i in LACKING])
    is_pert = got["pair_group"] == "perturbation"
    assert np.isnan(lacking.sel(pair=is_pert)).all()
    assert np.isfinite(lacking.sel(pair=~is_pert, band="all")).all()
    assert np.allclose(got["accuracy"].sel(condition="A1-paraphrase"),
                       pert["accuracy"].sel(condition="A1-paraphrase"))



def test_the_nulls_leave_out_what_was_not_scored(tmp_path):
    """The template group's Gaussian null and ceiling equal a run over the template
    conditions alone (the noise of a condition is drawn by its position, and the templates
    come first); in the perturbation group every null rests on the items with rewordings,
    as its IPS does, and the matched null is NaN exactly where the pair is missing."""
    from ips.analysis.nulls import Settings

    scored = np.ones((len(SAMPLES), len(CONDITIONS)), bool)
    scored[LACKING, 3:] = False
    null = Settings((0.01, 0.1), 1)
    got = summarize(*([p] for p in _run(tmp_path, "nm", _dataset(), scored)), n_boot=200,
                    draws=99, null=null)
    truth = summarize(*([p] for p in _run(tmp_path, "nt", _dataset(
        GROUPS["0shot"], {"0shot": GROUPS["0shot"]}))), n_boot=200, draws=99, null=null)
    for name in ("null_ips", "null_n_valued", "ceiling_ips", "ceiling_n_valued"):
        assert np.allclose(got[name].sel(group="0shot"), truth[name].sel(group="0shot"),
                           equal_nan=True), name
    have = [s for i, s in enumerate(SAMPLES) if i not in LACKING]
    lacking = [SAMPLES[i] for i in LACKING]
    full = summarize(*([p] for p in _run(tmp_path, "nf", _dataset())), n_boot=200, draws=99,
                     null=null)
    for name in ("null", "matched_null", "ceiling"):
        per_sample = got[f"sample_{name}_ips"].sel(group="perturbation", band="all")
        assert np.isnan(per_sample.sel(sample=lacking)).all(), name
        # as where every row was scored (s7's n has no other sample: no ceiling either way)
        valued = np.isfinite(full[f"sample_{name}_ips"].sel(group="perturbation", band="all"))
        assert (np.isfinite(per_sample) == valued).sel(sample=have).all(), name
        assert valued.sel(sample=have).sum() >= 4, name
    pair = got["sample_pair_matched_null"].sel(band="all")
    is_pert = (got["pair_group"] == "perturbation").values
    assert np.isnan(pair.sel(sample=lacking).values[:, is_pert]).all()
    assert np.isfinite(pair.sel(sample=have).values).all()


def test_scored_round_trips_and_old_files_read_as_all_scored(tmp_path):
    scored = np.ones((len(SAMPLES), len(CONDITIONS)), bool)
    scored[LACKING, 4] = False
    v, f = _run(tmp_path, "r", _dataset(), scored)
    values = read_values(v)
    assert np.array_equal(values.scored, scored)
    fit = xr.open_dataset(f, engine="h5netcdf")
    assert np.array_equal(fit["scored"].values, scored)
    assert np.isnan(fit["and"].values[~scored]).all()
    assert np.isfinite(fit["matching_error"].values[scored]).all()
    fit.close()
    assert np.array_equal(read_shard(v).scored, scored)
    old, _ = _run(tmp_path, "old", _dataset())  # written without 'scored'
    assert read_values(old).scored.all() and read_shard(old).scored.all()
    # the fit of scored rows is the fit of the same rows alone
    whole = fit_values(Values(v=read_values(old).v, n_vars=values.n_vars), solver="exact")
    part = fit_values(values, solver="exact")
    assert np.allclose(part["and"].values[scored], whole["and"].values[scored], equal_nan=True)


@pytest.mark.parametrize("change, dims, message", [
    (lambda s: s[:, :2], ("sample", "pair"), "dataset 'scored' has shape"),
    (lambda s: np.zeros_like(s), ("sample", "condition"), "sample 0 has no scored condition"),
    # a scored row must have its values
    (lambda s: s | True, ("sample", "condition"), "non-finite value"),
])
def test_bad_scored_is_one_line(tmp_path, change, dims, message):
    ds = _dataset()
    scored = np.ones((len(SAMPLES), len(CONDITIONS)), bool)
    scored[LACKING, 3:] = False
    ds["v"].values[~scored] = np.nan
    ds["scored"] = (dims, change(scored))
    path = tmp_path / "bad.h5"
    write_dataset(ds, path)
    with pytest.raises(InputError, match=message) as e:
        read_values(path)
    assert "\n" not in str(e.value)


def test_sparse_fit_of_unscored_rows_is_refused(tmp_path):
    scored = np.ones((len(SAMPLES), len(CONDITIONS)), bool)
    scored[LACKING, 3:] = False
    v, _ = _run(tmp_path, "s", _dataset(), scored)
    with pytest.raises(InputError, match="sparse fits need every row; fit it exhaustively"):
        fit_file(read_values(v), v, exhaustive=False, budget=8, seed=0, solver="exact",
                 noise=0.0, learning_rate=0.1, steps=10)


def test_samples_score_fit_metrics_with_items_lacking_rewordings(tmp_path, tiny_llama_dir):
    """The CLI chain on a tiny random Llama: the items without rewordings are scored under
    the templates only, and the metrics count them as missing in the perturbation group."""
    from ips.cli.main import main

    keep = [f"dolly-{i:03d}" for i in range(0, 20, 2)]
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({
        "n_max": 3, "n_items": 4, "templates": {"instruction": ["A1", "A2"]},
        "few_shot": {"templates": [], "shots": []},
        "perturbations": {"names": ["paraphrase"],
                          "file": str(_perturbation_file(tmp_path, keep))},
        "models": {"tiny": {"source": {"path": str(tiny_llama_dir)}, **TINY_ATTRS}},
        "datasets": {"dolly": {"format": "dolly", "fields": ["instruction"]}},
    }))
    samples, values, fit, out = (tmp_path / n for n in ("s.json", "v.h5", "f.h5", "m.nc"))
    for args in (["samples", "--config", config, "--dataset", "dolly", "--out", samples],
                 ["score", "--config", config, "--model", "tiny", "--dataset", "dolly",
                  "--samples", samples, "--threads", 1, "--out", values],
                 ["fit", values, "--out", fit],
                 ["metrics", "--values", values, "--interactions", fit, "--null-levels", 0.01,
                  "--resamples", 100, "--permutations", 99, "--out", out]):
        assert main([str(a) for a in args]) == 0, args[0]
    lacking = [s.item.id not in keep for s in load_samples(samples).samples]
    assert 0 < sum(lacking) < 4
    with xr.open_dataset(values, engine="h5netcdf") as v:
        assert np.array_equal(v["scored"].values[:, 2], ~np.array(lacking))
        assert v["scored"].values[:, :2].all()
    with xr.open_dataset(out, engine="h5netcdf") as m:
        assert int(m["n_missing_pairs"].sel(group="perturbation")) == sum(lacking)
        assert int(m["n_missing_pairs"].sel(group="0shot")) == 0
        assert int(m["n_valued_samples"].sel(group="0shot", band="all")) <= 4
        assert int(m["n_valued_samples"].sel(group="perturbation", band="all")) <= 4 - sum(
            lacking)
        # the null rests on the items the perturbation group's IPS rests on
        assert (int(m["null_n_valued"].sel(group="perturbation", band="all").squeeze())
                == int(m["n_valued_samples"].sel(group="perturbation", band="all")))
