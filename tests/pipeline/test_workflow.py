"""The Snakemake workflow end to end on a tiny config: lint, the full DAG, what a change reruns
(the runs of their own configs are in test_workflow_runs.py)."""

import csv
import json
import math
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import yaml

ROOT = Path(__file__).resolve().parents[2]
#: a baseline of a user's own, a plug-in file outside `ips` (tests/baselines/test_plugins.py)
PLUGIN = str(ROOT / "tests" / "plugins" / "random_token.py")
CONTROL_PLUGIN = str(ROOT / "tests" / "plugins" / "reseeded.py")
SNAKEMAKE = Path(sys.executable).parent / "snakemake"


def snakemake(workdir, *args, timeout=600):
    cmd = [str(SNAKEMAKE), "--snakefile", str(ROOT / "Snakefile"), "--directory", str(workdir),
           "--cores", "2", *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def jobs(dry_run_output: str) -> dict[str, int]:
    """The 'Job stats' table of a dry run: rule -> count."""
    table = dry_run_output.split("Job stats:", 1)
    if len(table) < 2:
        return {}
    counts = {}
    for line in table[1].splitlines()[3:]:
        m = re.match(r"^(\w+)\s+(\d+)$", line.strip())
        if not m:
            break
        counts[m.group(1)] = int(m.group(2))
    counts.pop("total", None)
    return counts


def tiny_config(model_dir, **overrides):
    cfg = {
        "n_max": 3,
        "n_items": 3,
        "shard_size": 2,
        "templates": {"mcq": ["T1", "T2", "T4"]},
        "few_shot": {"templates": ["T1", "T4"], "shots": [1]},
        "permutation": {"draws": 199},
        "nulls": {"noise": {"levels": [0.01, 0.05], "draws": 1},
                  "precision": {"dtypes": ["bfloat16"], "shards": 1},
                  "baseline": {"others": ["eos"], "shards": 1}},
        "models": {
            "tiny-a": {"source": {"path": str(model_dir)}, "family": "tiny", "series": "tiny",
                       "type": "base", "architecture": "dense", "params": 1000},
            "tiny-b": {"source": {"path": str(model_dir)}, "family": "tiny", "series": "tiny",
                       "type": "instruct", "architecture": "dense", "params": 1000},
        },
        "datasets": {"arc-easy": {"format": "arc", "subset": "ARC-Easy", "fields": ["question"]}},
    }
    cfg.update(overrides)
    return cfg


DOLLY = {"dolly": {"format": "dolly", "fields": ["instruction"], "n_items": 2}}
"""The bundled Dolly records with their paraphrase and reorder wordings, as the default runs."""


@pytest.fixture(scope="module")
def finished(tmp_path_factory, tiny_llama_dir):
    """A workdir where the whole tiny workflow has run through results/figures."""
    work = tmp_path_factory.mktemp("workflow")
    # the reworded prompts at 1 shot too (Figs. 12d, 55)
    cfg = tiny_config(tiny_llama_dir, perturbations={"names": ["paraphrase", "reorder"],
                                                     "shots": [1]},
                      baselines={"others": ["delete"], "shards": 1},
                      # the baseline null with the plug-in's baseline: named in the config alone
                      plugins=[PLUGIN],
                      nulls={"noise": {"levels": [0.01, 0.05], "draws": 1},
                             "precision": {"dtypes": ["bfloat16"], "shards": 1},
                             "baseline": {"others": ["random:3"], "shards": 1}},
                      few_shot={"templates": ["T1", "T4", "A1", "A4"], "shots": [1]},
                      figure_taus=[0.2, 0.1])
    cfg["datasets"] |= DOLLY
    (work / "config.yaml").write_text(yaml.safe_dump(cfg))
    t0 = time.perf_counter()
    r = snakemake(work, timeout=1200)  # 4-5 min alone; past 10 min on a loaded machine
    assert r.returncode == 0, r.stderr[-4000:]
    print(f"tiny workflow: {time.perf_counter() - t0:.1f} s")
    return work


def test_lint_is_clean():
    r = subprocess.run([str(SNAKEMAKE), "--lint", "--snakefile", str(ROOT / "Snakefile")],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0 and "Congratulations" in r.stdout + r.stderr, r.stdout + r.stderr


def expected_figures(models=("tiny-a", "tiny-b"), datasets=("arc-easy", "dolly")):
    from ips.figures.make import figure_files
    from ips.figures.text.captions import TABLES, case_study_name

    cases = [f"{case_study_name(m, d)}.{ext}" for m in models for d in datasets
             for ext in ("png", "pdf")]
    return sorted([*figure_files(), *cases, *TABLES, "README.md"])


def test_whole_dag_produces_tables_and_figures(finished):
    figures = finished / "results" / "figures"
    files = [p for p in figures.iterdir() if not p.name.startswith(".")]  # .snakemake_timestamp
    assert sorted(p.name for p in files) == expected_figures()
    for p in files:
        assert p.stat().st_size > 100, p.name
    assert (figures / "ips_table.csv").read_text().count("\n") > 2
    # intervals and per-sample IPS in the metrics tables, paired tests in factors.nc
    with xr.open_dataset(finished / "results/metrics/tiny-a/arc-easy.nc",
                         engine="h5netcdf") as m:
        assert m["sample_ips"].dims == ("sample", "group", "band") and m.sizes["sample"] == 3
        lo, hi = m["ips_ci"].sel(group="0shot", band="all").values
        assert lo <= float(m["ips"].sel(group="0shot", band="all")) <= hi
        assert m["band_p_holm"].dims == ("group", "band_pair")
        assert json.loads(m.attrs["test"])["draws"] == 199  # permutation.draws via params
        # the noise null of config `nulls.noise` (via params): per sample, group, level, band
        assert list(m["null_level"].values) == [0.01, 0.05]
        assert m["sample_null_ips"].dims == ("sample", "group", "null_level", "band")
        assert m["sample_pair_matched_null"].sizes["pair"] == m.sizes["pair"]
        assert json.loads(m.attrs["null"])["levels"] == [0.01, 0.05]
        # the precision null of config `nulls.precision`: T1 of the first shard (2 samples)
        assert list(m["precision"].values) == ["bfloat16"]
        assert int(m["precision_games"].sel(precision="bfloat16")) == 2
        assert int(m["precision_null_n_valued"].sel(precision="bfloat16", group="0shot",
                                                    band="all")) <= 2
        assert json.loads(m.attrs["precision"])["runs"]["bfloat16"]["conditions"] == ["T1"]
        # the baseline null of config `nulls.baseline`: T1 of the first shard with the
        # plug-in's baseline (random tokens, no single one)
        assert list(m["baseline"].values) == ["random:3"]
        assert int(m["baseline_games"].sel(baseline="random:3")) == 2
        assert json.loads(m.attrs["baseline"])["runs"]["random:3"]["mask_token"] == ""
    # one score_baseline_null job a model scores the first shard of both datasets, one file each
    for dataset, condition in (("arc-easy", "T1"), ("dolly", "A1")):
        with xr.open_dataset(finished / f"results/nulls/baseline/random-3/values/tiny-a/{dataset}.h5",
                             engine="h5netcdf") as v:
            assert (v.attrs["mask_source"], v.attrs["mask_token_id"]) == ("random:3", -1)
            assert v.attrs["dataset"] == dataset
            assert list(v["condition"].values) == [condition] and v.sizes["sample"] == 2
    log = (finished / "logs/nulls/baseline/random-3/score/tiny-a.log").read_text()
    assert "loaded tiny-a" in log and "baseline random:3" in log
    with xr.open_dataset(finished / "results/factors/factors.nc", engine="h5netcdf") as f:
        assert "p_value" in f and "delta_ips_ci" in f
        assert json.loads(f.attrs["test"])["draws"] == 199
    # few-shot on both datasets, each with the templates of its kind (Dolly: Fig. 48), and
    # on Dolly's reworded prompts against the same prompts at 0 shots (Figs. 12d, 55)
    with open(figures / "factors_table.csv", newline="") as fh:
        few = {(r["dataset"], r["setting_a"], r["setting_b"], r["templates"])
               for r in csv.DictReader(fh) if r["factor"] == "few_shot" and r["band"] == "all"}
    assert few == {("arc-easy", "1shot", "0shot", "T1–T4"), ("dolly", "1shot", "0shot", "A1–A4"),
                   ("dolly", "perturbation-1shot", "perturbation",
                    "A1-paraphrase–A1-reorder;A1–A1-paraphrase;A1–A1-reorder")}
    for model in ("tiny-a", "tiny-b"):
        m = xr.open_dataset(finished / f"results/metrics/{model}/arc-easy.nc", engine="h5netcdf")
        value = float(m["ips"].sel(group="0shot", band="all"))
        assert 0 <= value <= 2
        m.close()
    # two shards of 2 + 1 samples, each fitted with universal matching
    for shard in (0, 1):
        fit = xr.open_dataset(finished / f"results/interactions/tiny-a/arc-easy/{shard}.h5",
                              engine="h5netcdf")
        assert float(fit.matching_error.max()) < 1e-6 * 50
        fit.close()
    # Dolly: stop words and phrase merging select the variables, long instructions are
    # reduced to n_max, and the reworded prompts form the perturbation group
    samples = json.loads((finished / "results/samples/dolly.json").read_text())
    assert samples["kind"] == "instruction" and len(samples["samples"]) == 2
    for s in samples["samples"]:
        words = [v["text"] for v in s["variables"]]
        assert len(words) == 3 and not {w.lower() for w in words} & {"the", "a", "of", "in"}
        assert s["reduction"]["reduced"] and s["reduction"]["n_units"] > 3
        assert set(s["prompts"]) == {"A1", "A2", "A3", "A4", "A1-paraphrase", "A1-reorder",
                                     "A1-1shot", "A4-1shot", "A1-paraphrase-1shot",
                                     "A1-reorder-1shot"}
    log = (finished / "logs/prepare_samples/dolly.log").read_text()
    assert "reduced to n_max = 3 (longest)" in log
    with xr.open_dataset(finished / "results/metrics/tiny-a/dolly.nc", engine="h5netcdf") as m:
        assert list(m["group"].values) == ["0shot", "1shot", "perturbation",
                                           "perturbation-1shot"]
        assert np.isfinite(float(m["ips"].sel(group="perturbation", band="all")))
        assert set(m["pair_label"].values) >= {"perturbation", "altering", "adding"}
    # the claims table: every verdict from the allowed set, n beside every estimate
    with open(finished / "results/figures/claims.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert {r["verdict"] for r in rows} <= {"supported", "contradicted", "undecided",
                                           "untestable"}
    assert {"order_low_below_mid", "types_changed_opposite", "factor_instruct_vs_base",
            "ips_vs_consistency", "template_below_matched_null",
            "template_above_gaussian_null"} <= {r["claim"] for r in rows}
    for r in rows:
        assert r["verdict"] == "untestable" or int(r["n"]) > 0, r
    assert "## The paper's claims on these models" in (
        finished / "results/figures/README.md").read_text()
    # every rule left a log
    for rule in ("prepare_model", "prepare_samples", "score", "fit", "metrics"):
        assert any((finished / "logs" / rule).rglob("*.log")), rule


def test_report_holds_every_figure_and_table(finished):
    r = snakemake(finished, "--report", "report.html", timeout=300)
    assert r.returncode == 0, r.stderr[-4000:]
    html = (finished / "report.html").read_text(encoding="utf-8")
    # docutils renders a caption error as a "System Message" block inside the caption
    assert "System Message" not in html and "system-message" not in html
    for name in expected_figures():
        if name.endswith((".png", ".csv")):
            assert name in html, name
    assert "Universal matching with the largest interactions" in html  # a caption
    assert "Instruct vs base models" in html
    # the case studies under their dataset, apart from the section's own figures
    start = html.index("categories = ") + len("categories = ")
    categories, _ = json.JSONDecoder().raw_decode(html[start:])
    section = categories["1 Interactions"]
    cases = [f for f in expected_figures() if f.startswith("case_study_") and f.endswith(".png")]
    assert cases
    for name in cases:
        dataset = next(d for d in ("arc-easy", "dolly") if name.endswith(f"_{d}.png"))
        assert f"results/figures/{name}" in section[f"case studies: {dataset}"], name
    assert not any("case_study" in f for f in section["Other"])
    assert "results/figures/sparsity.png" in section["Other"]


def test_nothing_to_do_after_a_run(finished):
    r = snakemake(finished, "-n")
    assert r.returncode == 0 and "Nothing to be done" in r.stdout + r.stderr


#: the analysis of both baselines' trees (the main one and `baselines.others`' deletion) and of
#: the figure set at τ = 0.2 (`figure_taus`)
ANALYSIS = {"metrics": 4, "factors": 1, "figures": 1, "metrics_baseline": 4,
            "factors_baseline": 1, "figures_baseline": 1, "baselines": 1, "all": 1,
            "metrics_tau": 4, "factors_tau": 1, "figures_tau": 1}


def test_another_baseline_gets_its_own_analysis(finished):
    """`baselines`: the first shard of every model and dataset scored again with the absent
    words deleted, fitted, and analysed as the main run is, under results/baselines/delete/."""
    tree = finished / "results/baselines/delete"
    files = sorted(p.name for p in (tree / "figures").iterdir() if not p.name.startswith("."))
    assert files == expected_figures()
    for model in ("tiny-a", "tiny-b"):
        for dataset in ("arc-easy", "dolly"):
            assert not (tree / f"values/{model}/{dataset}/1.h5").exists()  # shards: 1
            with xr.open_dataset(tree / f"values/{model}/{dataset}/0.h5",
                                 engine="h5netcdf") as v, \
                    xr.open_dataset(finished / f"results/values/{model}/{dataset}/0.h5",
                                    engine="h5netcdf") as own:
                assert (v.attrs["mask_source"], v.attrs["mask_token_id"]) == ("delete", -1)
                assert list(v["condition"].values) == list(own["condition"].values)
                # the unmasked prompts agree, the masked ones do not
                full = 2 ** v["n_vars"].values - 1
                np.testing.assert_allclose([v["v"].values[s, :, m] for s, m in enumerate(full)],
                                           [own["v"].values[s, :, m] for s, m in enumerate(full)],
                                           atol=1e-5)
                assert not np.allclose(v["v"].values, own["v"].values, equal_nan=True)
            with xr.open_dataset(tree / f"metrics/{model}/{dataset}.nc", engine="h5netcdf") as m:
                assert m.sizes["sample"] == 2 and "baseline" not in m.dims  # no variants
    assert "baseline delete: ''" in (
        finished / "logs/baselines/delete/score/tiny-a/arc-easy/0.log").read_text()
    assert (tree / "factors/factors.nc").exists()
    # what holds under both baselines: the main claims rows, each with both verdicts
    summary = finished / "results/baselines/summary"
    with open(summary / "claims.csv", newline="") as f:
        robust = list(csv.DictReader(f))
    with open(finished / "results/figures/claims.csv", newline="") as f:
        main = list(csv.DictReader(f))
    assert [(r["claim"], r["scope"], r["own"]) for r in robust] == [
        (r["claim"], r["scope"], r["verdict"]) for r in main]
    for r in robust:
        both = {r["own"], r["delete"]}
        assert r["robust_verdict"] == (both.pop() if len(both) == 1 and r["own"] in (
            "supported", "contradicted") else "undecided")
    with open(summary / "agreement.csv", newline="") as f:
        agree = list(csv.DictReader(f))
    assert {(r["model"], r["dataset"], r["baseline"]) for r in agree} == {
        (m, d, "delete") for m in ("tiny-a", "tiny-b") for d in ("arc-easy", "dolly")}
    assert all(int(r["n_valued"]) == 2 and float(r["baseline_ips"]) > 0 for r in agree)


def test_changing_tau_reruns_only_the_analysis(finished):
    r = snakemake(finished, "-n", "--config", "tau=0.15")
    assert r.returncode == 0, r.stderr
    # figure_taus' 0.2 set stays; its 0.1, the main set's τ before, is now a set of its own
    assert jobs(r.stdout + r.stderr) == ANALYSIS
    # no fit of any kind: the games' and the nulls' fits (null_fits) read no τ
    alt = finished / "config-tau.yaml"
    alt.write_text(yaml.safe_dump({"tau": 0.15, "tau_sweep": [0.1, 0.3],
                                   "figure_taus": [0.2, 0.3]}))
    r = snakemake(finished, "-n", "--configfile", finished / "config.yaml", alt)
    assert r.returncode == 0, r.stderr
    assert not [rule for rule in jobs(r.stdout + r.stderr) if "fit" in rule]


def test_figure_sets_at_other_taus_from_the_same_fits(finished):
    """`figure_taus`: the whole figure set again at τ = 0.2 under results/tau/0.2/figures (the
    0.1 of the list is the main set's `tau`), from the main fits; another τ in the list reruns
    only the analysis."""
    assert sorted(p.name for p in (finished / "results/tau").iterdir()) == ["0.2"]
    figures = finished / "results/tau/0.2/figures"
    assert sorted(p.name for p in figures.iterdir() if not p.name.startswith(".")) == \
        expected_figures()
    for dataset in ("arc-easy", "dolly"):
        with xr.open_dataset(finished / f"results/tau/0.2/metrics/tiny-a/{dataset}.nc",
                             engine="h5netcdf") as at, \
                xr.open_dataset(finished / f"results/metrics/tiny-a/{dataset}.nc",
                                engine="h5netcdf") as main:
            assert at.attrs["tau"] == 0.2 and main.attrs["tau"] == 0.1
            # the same games: IPS at 0.2 is the τ sweep's value at 0.2 in the main file
            sweep = main["ips_sweep"].sel(tau=0.2, method="nearest")
            np.testing.assert_allclose(float(at["ips"].sel(group="0shot", band="all")),
                                       float(sweep.sel(group="0shot")), rtol=1e-9)
    alt = finished / "config-taus.yaml"
    alt.write_text(yaml.safe_dump({"figure_taus": [0.2, 0.3]}))
    r = snakemake(finished, "-n", "--configfile", finished / "config.yaml", alt)
    assert r.returncode == 0, r.stderr
    assert jobs(r.stdout + r.stderr) == {"metrics_tau": 4, "factors_tau": 1, "figures_tau": 1,
                                         "figures": 1, "baselines": 1, "all": 1}


def test_changing_a_null_reruns_only_what_it_needs(finished):
    alt = finished / "config-null.yaml"
    alt.write_text(yaml.safe_dump({"nulls": {"noise": {"levels": [0.02]}}}))
    base = finished / "config.yaml"  # a config file on the command line replaces config.yaml
    r = snakemake(finished, "-n", "--configfile", base, alt)
    assert r.returncode == 0, r.stderr
    # the nulls' fits of both trees of games again, and what reads them
    assert jobs(r.stdout + r.stderr) == ANALYSIS | {"null_fits": 4, "null_fits_baseline": 4}
    alt.write_text(yaml.safe_dump({"nulls": {"precision": {"dtypes": ["float16"]}}}))
    r = snakemake(finished, "-n", "--configfile", base, alt)
    assert r.returncode == 0, r.stderr
    # one scoring job a model for both datasets, one fit a dataset
    assert jobs(r.stdout + r.stderr) == {"score_precision_null": 2, "fit_precision_null": 4,
                                         "metrics": 4, "factors": 1, "figures": 1, "baselines": 1, "all": 1,
                                         "metrics_tau": 4, "factors_tau": 1, "figures_tau": 1}
    alt.write_text(yaml.safe_dump({"nulls": {"noise": {"levels": [0.0]}}}))
    r = snakemake(finished, "-n", "--configfile", base, alt)
    assert r.returncode != 0
    assert "nulls.noise.levels.0: 0.0 is less than or equal to the minimum of 0" in r.stdout + r.stderr


def test_a_baseline_the_tokenizer_lacks_stops_the_run_in_one_line(finished):
    """The baseline null's scoring checks its baseline against the tokenizer before the
    weights load: a word of several tokens fails the job with one line naming the model."""
    alt = finished / "config-baseline.yaml"
    alt.write_text(yaml.safe_dump({"nulls": {"baseline": {"others": ["word:abcdefghij"]}}}))
    r = snakemake(finished, "--configfile", finished / "config.yaml", alt)
    assert r.returncode != 0
    log = (finished / "logs/nulls/baseline/word-abcdefghij/score/tiny-a.log").read_text()
    last = log.strip().splitlines()[-1]
    assert last.startswith("ips score: error: model tiny-a: baseline 'word:abcdefghij'"), last
    assert "not one" in last and "Traceback" not in log


def test_a_config_file_given_is_the_whole_study(finished):
    """`--configfile X` runs X's study alone: config.yaml's models and datasets are not
    merged in (its jobs get the same --configfiles); several files merge in order."""
    cfg = yaml.safe_load((finished / "config.yaml").read_text())
    study = finished / "config-study.yaml"
    study.write_text(yaml.safe_dump({**cfg, "models": {"tiny-c": cfg["models"]["tiny-a"]},
                                     "datasets": {"dolly": DOLLY["dolly"]}}))
    r = snakemake(finished, "-n", "--configfile", study)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-3000:]
    assert set(re.findall(r"wildcards: model=([\w.-]+), dataset=([\w.-]+)", out)) == {
        ("tiny-c", "dolly")}
    r = snakemake(finished, "-n", "--configfile", finished / "config.yaml", study)
    assert r.returncode == 0  # merged: config.yaml's arc-easy too (its models have run)
    pairs = re.findall(r"wildcards: model=([\w.-]+), dataset=([\w.-]+)", r.stdout + r.stderr)
    assert set(pairs) == {("tiny-c", "arc-easy"), ("tiny-c", "dolly")}


def test_changing_n_items_or_a_model_reruns_what_it_must(finished):
    r = snakemake(finished, "-n", "--config", "n_items=4")
    assert r.returncode == 0, r.stderr
    ran = jobs(r.stdout + r.stderr)
    assert ran.get("prepare_samples") == 1 and "prepare_model" not in ran  # dolly sets its own
    cfg = yaml.safe_load((finished / "config.yaml").read_text())
    cfg["models"]["tiny-b"]["params"] = 2000  # an attribute: scores of tiny-b are redone
    alt = finished / "config-alt.yaml"
    alt.write_text(yaml.safe_dump(cfg))
    r = snakemake(finished, "-n", "--configfile", alt)
    ran = jobs(r.stdout + r.stderr)
    assert ran.get("score") == 3 and ran.get("prepare_model") == 1 and "prepare_samples" not in ran


def test_a_dataset_runs_its_own_models_and_variables(finished):
    """`datasets.dolly.models` keeps tiny-b off Dolly: no job of tiny-b on Dolly, its variant
    run scores arc-easy alone (a second scoring rule), and nothing is drawn again; Dolly's
    own `variables` redraw Dolly's samples alone, with its settings."""
    cfg = yaml.safe_load((finished / "config.yaml").read_text())
    cfg["datasets"]["dolly"]["models"] = [{"type": "base"}]  # tiny-a
    cfg["nulls"]["precision"]["dtypes"] = ["float16"]
    alt = finished / "config-dataset-models.yaml"
    alt.write_text(yaml.safe_dump(cfg))
    r = snakemake(finished, "-n", "-p", "--configfile", alt)
    out = r.stdout + r.stderr
    assert r.returncode == 0, r.stderr[-4000:]
    ran = jobs(out)
    assert ran["score_precision_null"] == ran["score_precision_null_2"] == 1
    assert ran["fit_precision_null"] == 3 and ran["metrics"] == 3 and "prepare_samples" not in ran
    pairs = set(re.findall(r"model=([\w.-]+), dataset=([\w.-]+)", out))
    assert ("tiny-a", "dolly") in pairs and ("tiny-b", "dolly") not in pairs
    assert "results/metrics/tiny-b/dolly.nc" not in out
    tiny_b = re.search(r"--model tiny-b .*", out).group(0)  # its variant run: arc-easy alone
    assert "samples/arc-easy.json" in tiny_b and "dolly" not in tiny_b
    cfg = yaml.safe_load((finished / "config.yaml").read_text())
    cfg["datasets"]["dolly"]["variables"] = {"strategy": "all"}
    alt.write_text(yaml.safe_dump(cfg))
    r = snakemake(finished, "-n", "-p", "--configfile", alt)
    out = r.stdout + r.stderr
    assert r.returncode == 0, r.stderr[-4000:]
    assert jobs(out)["prepare_samples"] == 1 and '"strategy": "all"' in out


def test_occlusion_gives_the_samples_the_reference_model(finished):
    cfg = yaml.safe_load((finished / "config.yaml").read_text())
    cfg["variables"] = {"reduce": "occlusion", "reference_model": "tiny-b"}
    alt = finished / "config-occlusion.yaml"
    alt.write_text(yaml.safe_dump(cfg))
    r = snakemake(finished, "-n", "-p", "--configfile", alt)
    out = r.stdout + r.stderr
    assert r.returncode == 0, r.stderr[-4000:]
    assert jobs(out).get("prepare_samples") == 2  # new settings: new samples
    assert "input: resources/models/tiny-b.path" in out
    assert "--reference-entry" in out and '"type": "instruct"' in out  # tiny-b's entry
    cfg["variables"] = {"reduce": "occlusion"}
    alt.write_text(yaml.safe_dump(cfg))
    r = snakemake(finished, "-n", "--configfile", alt)
    assert r.returncode != 0 and "variables.reference_model: required when" in r.stdout + r.stderr


def test_changing_the_sampling_reruns_the_scores(finished):
    alt = finished / "config-sparse.yaml"
    alt.write_text(yaml.safe_dump({"sampling": {"mode": "sparse", "budget": 16}}))
    r = snakemake(finished, "-n", "--configfile", finished / "config.yaml", alt)
    assert r.returncode == 0, r.stdout[-3000:]
    ran = jobs(r.stdout + r.stderr)
    assert ran.get("score") == 6 and ran.get("fit") == 6 and "prepare_samples" not in ran


def test_the_export_target_writes_each_runs_tidy_tables(finished):
    """`snakemake export`: one directory per model and dataset, whose tables hold every
    subset of every sample and condition of the run's values files, and one log each."""
    import xarray as xr

    from ips.analysis.labelled import LabelledInteractions

    r = snakemake(finished, "export")
    assert r.returncode == 0, r.stderr[-4000:]
    for model in ("tiny-a", "tiny-b"):
        for dataset in ("arc-easy", "dolly"):
            run = LabelledInteractions.load(finished / "results/export" / model / dataset)
            values = [xr.open_dataset(p, engine="h5netcdf") for p in sorted(
                (finished / "results/values" / model / dataset).glob("*.h5"))]
            want = sum(ds.sizes["condition"] * int((1 << ds["n_vars"].values).sum())
                       for ds in values)
            assert len(run.interactions) == len(run.values) == want
            assert set(run.interactions["model"]) == {model}
            for ds in values:
                ds.close()
            assert (finished / "logs/export" / model / f"{dataset}.log").is_file()


def test_a_run_restores_its_archive_instead_of_scoring(finished, tmp_path):
    """`ips archive pack` keeps the run's samples and values files; a run of the same config
    with `archive:` has no rule that scores or prepares a model, and restores every archived
    file byte for byte. (tests/pipeline/test_studies.py rebuilds a whole study's tables from
    its committed archive and compares them cell by cell.)"""
    from ips.formats.archive import manifest

    archive = tmp_path / "archive"
    r = subprocess.run([sys.executable, "-m", "ips", "archive", "pack", "--results",
                        finished / "results", "--config", finished / "config.yaml",
                        "--archive", archive], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    packed = list(manifest(archive))
    values = [p for p in packed if "/values/" in f"/{p}"]
    # 2 models x (arc-easy 2 shards + dolly 1) main, deletion's first shards, 2 nulls' runs
    assert len(values) == 6 + 4 + 4 + 4 and len(packed) == len(values) + 2  # + 2 samples files
    rebuild = tmp_path / "rebuild"
    args = ("--configfile", archive / "config.yaml", "--config", f"archive={archive}")
    r = snakemake(rebuild, "--list-rules", *args)
    assert r.returncode == 0, r.stderr
    rules = r.stdout.split()
    assert "restore_values" in rules and "prepare_samples" in rules and "fit" in rules
    assert not [rule for rule in rules if rule.startswith(("score", "prepare_model"))]
    r = snakemake(rebuild, *[f"results/{p}" for p in packed], *args)
    assert r.returncode == 0, r.stderr[-4000:]
    assert not (rebuild / "resources").exists()  # where models are prepared
    for path in packed:
        assert (rebuild / "results" / path).read_bytes() == \
            (finished / "results" / path).read_bytes(), path


def test_explain_agrees_with_the_workflow_on_a_reduced_item(finished, tmp_path):
    """An ARC-Easy item of the tiny run with more question units than n_max (3), so its
    samples file keeps 3 of them: `ips explain --sample` from the run's config keeps the
    same 3 and gives the ips(x, T1, T2) that `ips metrics` stored for that sample."""
    from ips.prompts.samples import load_samples

    drawn = load_samples(finished / "results/samples/arc-easy.json")
    reduced = [s for s in drawn.samples if s.reduction is not None and s.reduction.reduced]
    assert reduced, "no item of the tiny run has more than n_max units"
    sample = reduced[0]
    js = tmp_path / "case.json"
    r = subprocess.run([sys.executable, "-m", "ips", "explain", "--config",
                        str(finished / "config.yaml"), "--model", "tiny-a", "--dataset",
                        "arc-easy", "--sample", sample.item.id, "--templates", "T1", "T2",
                        "--threads", "1", "--out", str(tmp_path / "case.png"), "--json",
                        str(js)], capture_output=True, text=True, cwd=finished, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    case = json.loads(js.read_text())
    assert case["words"] == [v.text for v in sample.variables]
    with xr.open_dataset(finished / "results/metrics/tiny-a/arc-easy.nc",
                         engine="h5netcdf") as m:
        stored = float(m["sample_pair_ips"].sel(sample=sample.item.id, pair="0shot:T1|T2",
                                                band="all"))
    if math.isnan(stored):
        assert case["ips"] is None or math.isnan(case["ips"])
    else:
        assert case["ips"] == pytest.approx(stored, abs=1e-4)
