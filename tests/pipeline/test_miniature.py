"""The paper's study in miniature (workflow/configs/miniature.yaml): paper.yaml's 50 models,
each a random model of its class; a subset with every factor's real pairs runs through the
workflow to the figures. (Every architecture class is built and scored, by both scorers, in
tests/models/test_random_models.py and tests/scoring/test_deletion.py: the workflow runs each
the same way, so the subset leaves the other classes out.)"""

import copy
import csv
import json
import time
from pathlib import Path

import pytest
import xarray as xr
import yaml
from test_workflow import snakemake

from ips.config import MODEL_ATTRIBUTES, dataset_models, dataset_settings, validate
from ips.models.random_weights import CLASSES

ROOT = Path(__file__).resolve().parents[2]
PAPER = yaml.safe_load((ROOT / "workflow/configs/paper.yaml").read_text())
MINIATURE = yaml.safe_load((ROOT / "workflow/configs/miniature.yaml").read_text())

#: the class each of the paper's series runs as in transformers (InternLM2 and LLaMA-MoE ship
#: remote code: their nearest native class)
SERIES_CLASS = {"llama-2": "llama", "llama-3": "llama", "llama-moe": "mixtral",
                "mistral-v0.3": "mistral", "mixtral": "mixtral", "qwen1.5-moe": "qwen2_moe",
                "qwen2": "qwen2", "qwen2.5": "qwen2", "qwen3": "qwen3", "qwen3-moe": "qwen3_moe",
                "internlm2": "llama", "olmo": "olmo", "olmo-2": "olmo2", "olmoe": "olmoe"}

#: every factor's pairs: llama-2 7b/7b-chat (instruct vs base), 13b vs 7b (scale),
#: llama-2-7b-chat vs llama-moe-v1 (dense vs MoE, instruct), qwen2-7b vs qwen1.5-moe-a2.7b
#: (dense vs MoE, base); few-shot within every model
SUBSET = ["llama-2-7b", "llama-2-7b-chat", "llama-2-13b", "llama-moe-v1-3_5b-2_8-sft",
          "qwen2-7b", "qwen1.5-moe-a2.7b"]
TWINNED = "llama-2-7b"


def test_the_miniature_is_the_paper_study_model_for_model():
    validate(copy.deepcopy(MINIATURE), "config")
    assert list(MINIATURE["models"]) == list(PAPER["models"])
    # every model beside its untrained twin: random weights on both sides decide nothing
    assert MINIATURE["controls"]["twins"] == list(PAPER["models"])
    for name, entry in MINIATURE["models"].items():
        paper = PAPER["models"][name]
        assert {k: entry[k] for k in MODEL_ATTRIBUTES} == {k: paper[k] for k in MODEL_ATTRIBUTES}
        assert entry["source"]["random"] == SERIES_CLASS[paper["series"]], name
    seeds = [e["source"]["seed"] for e in MINIATURE["models"].values()]
    assert len(set(seeds)) == len(seeds) == 50
    assert {e["source"]["random"] for e in MINIATURE["models"].values()} == set(CLASSES)
    assert set(MINIATURE["datasets"]) == {"arc-challenge", "mmlu", "dolly"}
    assert MINIATURE["perturbations"]["names"] == ["paraphrase", "reorder"]
    # Appendix K as paper.yaml sets it: Dolly on the Llama-2 family (and its twins), merged
    assert MINIATURE["datasets"]["dolly"]["models"] == PAPER["datasets"]["dolly"]["models"]
    for study in (MINIATURE, PAPER):
        config = validate(copy.deepcopy(study), "config")
        llama2 = [m for m, e in config["models"].items() if e["series"] == "llama-2"]
        assert len(llama2) == 6 + 6 * (study is MINIATURE)  # the miniature's twins too
        assert dataset_models(config, "dolly") == llama2
        assert dataset_models(config, "mmlu") == list(config["models"])
        assert dataset_settings(config, "dolly")["variables"]["merge_phrases"] is True
        assert dataset_settings(config, "mmlu")["variables"]["merge_phrases"] is False


@pytest.fixture(scope="module")
def subset_run(tmp_path_factory):
    """The subset through results/figures on ARC-Challenge (few-shot included), with as few
    conditions, items and figure sets as keep every comparison (Dolly's perturbation group is paired in
    tests/pipeline/test_workflow.py)."""
    work = tmp_path_factory.mktemp("miniature")
    cfg = {**MINIATURE,
           "templates": {"mcq": ["T1", "T2", "T4"], "file": None},
           "few_shot": {"templates": ["T1", "T4"], "shots": [1]},
           "permutation": {"draws": 199}, "bootstrap": {"resamples": 200, "level": 0.95},
           # one figure set: the sets at other τ are drawn by test_workflow.py's tiny run
           "figure_taus": [],
           "nulls": {"noise": {"levels": [0.01], "draws": 1, "matched": True}},
           "models": {m: MINIATURE["models"][m] for m in SUBSET},
           # one twin runs the controls end to end (the others would double the run)
           "controls": {"twins": [TWINNED]},
           "datasets": {"arc-challenge": MINIATURE["datasets"]["arc-challenge"]}}
    (work / "subset.yaml").write_text(yaml.safe_dump(cfg))
    t0 = time.perf_counter()
    r = snakemake(work, "results/figures", "--configfile", work / "subset.yaml", timeout=1200)
    assert r.returncode == 0, r.stderr[-4000:]
    print(f"miniature subset ({len(SUBSET)} models): {time.perf_counter() - t0:.1f} s")
    return work


@pytest.mark.slow
def test_every_factor_has_its_real_pairs(subset_run):
    ds = xr.load_dataset(subset_run / "results/factors/factors.nc")
    pairs = {(str(f), str(a), str(b)) for f, a, b in zip(
        ds["comparison_factor"].values, ds["model_a"].values, ds["model_b"].values)}
    assert ("instruct_vs_base", "llama-2-7b-chat", "llama-2-7b") in pairs
    assert ("scale", "llama-2-13b", "llama-2-7b") in pairs
    assert ("dense_vs_moe", "llama-2-7b-chat", "llama-moe-v1-3_5b-2_8-sft") in pairs
    assert ("dense_vs_moe", "qwen2-7b", "qwen1.5-moe-a2.7b") in pairs
    few_shot = {a for f, a, _ in pairs if f == "few_shot"}
    assert few_shot == set(SUBSET)


@pytest.mark.slow
def test_the_twin_is_compared_with_twins_only_and_controls_its_model(subset_run):
    """The twin's prepare job ran after its model's, its metrics name it as a twin, no factor
    comparison pairs it with a trained model, and its model's claims rows carry its control."""
    twin = f"{TWINNED}-twin"
    m = xr.load_dataset(subset_run / f"results/metrics/{twin}/arc-challenge.nc")
    assert '"redraw": "llama-2-7b"' in m.attrs["model_source"]
    assert json.loads(m.attrs["model_control"]) == {"kind": "twins", "of": "llama-2-7b"}
    ds = xr.load_dataset(subset_run / "results/factors/factors.nc")
    assert twin not in set(ds["model_a"].values.astype(str)) | set(ds["model_b"].values.astype(str))
    with open(subset_run / "results/figures/claims.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    own = [r for r in rows if r["scope"].startswith(f"{TWINNED} /") and r["raw_verdict"]]
    assert own and all(r["control_test"] for r in own if r["raw_verdict"] != "untestable")
    assert {r["verdict"] for r in rows if r["scope"].startswith(f"{twin} /")} <= {"control"}


@pytest.mark.slow
def test_every_model_is_scored_and_every_output_says_random_weights(subset_run):
    figures = subset_run / "results/figures"
    for model in SUBSET:
        m = xr.load_dataset(subset_run / f"results/metrics/{model}/arc-challenge.nc")
        assert m.attrs["model"] == model
    readme = (figures / "README.md").read_text()
    assert "random weights" in readme.lower()
    for table in figures.glob("*.csv"):
        header = table.read_text().splitlines()[0].split(",")
        assert "weights" in header, table.name
