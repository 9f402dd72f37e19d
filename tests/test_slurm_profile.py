"""profiles/slurm with the real snakemake-executor-plugin-slurm against a stub Slurm.

The stub (tests/slurm_stub/) answers sbatch, srun, sacct, squeue, scancel, sinfo and sacctmgr
the way the plugin expects, runs every submitted job for real on this machine and logs each
sbatch/srun call as a JSON line in $IPS_SLURM_LOG. The test runs a tiny config up to the
values file of one shard and checks what each rule asked Slurm for: the scoring job the GPUs
of its model entry (`gpus`) on the GPU partition, the other jobs no GPU on the CPU partition,
all with the profile's account.
"""

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import xarray as xr
import yaml

ROOT = Path(__file__).resolve().parents[1]
STUB = Path(__file__).resolve().parent / "slurm_stub"
PROFILE = yaml.safe_load((ROOT / "profiles" / "slurm" / "config.yaml").read_text())
ACCOUNT = PROFILE["default-resources"]["slurm_account"]
CPU_PARTITION = PROFILE["default-resources"]["slurm_partition"]
GPU_PARTITION = PROFILE["set-resources"]["score"]["slurm_partition"]
# the scored model asks for 2 GPUs (the stub runs it on the CPU, where device_map is ignored)
TARGET = "results/values/tiny-2gpu/arc-easy/0.h5"
ONE_GPU_TARGET = "results/values/tiny/arc-easy/0.h5"
# Test-only settings (the plugin's defaults suit a real cluster): poll after 1 s, not 40 s;
# fail at once instead of retrying or waiting for a shared filesystem; keep the job logs.
FAST = ["--slurm-init-seconds-before-status-checks", "1", "--retries", "0", "--latency-wait", "3",
        "--slurm-keep-successful-logs"]


def tiny_config(model_dir) -> dict:
    tiny = {"source": {"path": str(model_dir)}, "family": "tiny", "series": "tiny",
            "type": "base", "architecture": "dense", "params": 100000}
    return {
        "n_max": 3,
        "shard_size": 1,
        "few_shot": {"shots": []},
        "templates": {"mcq": ["T1", "T2"]},
        "models": {"tiny": tiny, "tiny-2gpu": {**tiny, "gpus": 2, "device_map": "auto"}},
        "datasets": {"arc-easy": {"format": "arc", "subset": "ARC-Easy", "fields": ["question"],
                                  "n_items": 2}},
    }


@pytest.fixture
def work(tmp_path, tiny_llama_dir) -> Path:
    """A copy of the workflow (Snakefile, rules, schema, profiles, envs) with a tiny config."""
    work = tmp_path / "wf"
    work.mkdir()
    shutil.copy(ROOT / "Snakefile", work)
    for d in ("workflow", "profiles", "envs"):
        shutil.copytree(ROOT / d, work / d, symlinks=False)  # the schema is a link into src/
    (work / "config.yaml").write_text(yaml.safe_dump(tiny_config(tiny_llama_dir)))
    return work


def snakemake(work: Path, *args, timeout=240) -> tuple[subprocess.CompletedProcess, list[dict]]:
    """Run snakemake in `work` with the stub Slurm first on PATH; return it and the stub's log."""
    log = work.parent / "slurm_calls.jsonl"
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SLURM_", "SBATCH_", "SRUN_", "SNAKEMAKE_"))}
    env.update(
        # the stubs are Python scripts (#!/usr/bin/env python3): this interpreter runs them
        PATH=os.pathsep.join([str(STUB), str(Path(sys.executable).parent), env.get("PATH", "")]),
        IPS_SLURM_LOG=str(log),
        IPS_SLURM_STATE=str(work.parent / "slurm_state"),
        IPS_SLURM_ACCOUNTS=ACCOUNT,  # what sacctmgr lists: the plugin checks the account there
        IPS_SLURM_PARTITIONS=f"{CPU_PARTITION}*,{GPU_PARTITION}",
        # sbatch returns when its job has ended: the plugin backs off by 10 s more after each
        # poll that finds a job still running, which would double the test's time
        IPS_SLURM_SYNC="1",
    )
    cmd = [sys.executable, "-m", "snakemake", *map(str, args)]
    r = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=timeout)
    calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return r, calls


def rule_of(call: dict) -> str:
    """The rule of an sbatch call, from the plugin's --comment rule_<name>[_wildcards_...]."""
    return call["options"]["comment"].removeprefix("rule_").split("_wildcards_")[0]


def job_logs(work: Path) -> str:
    """The Slurm logs of the jobs (kept by --slurm-keep-successful-logs), for failure messages."""
    logs = sorted(work.glob(".snakemake/slurm_logs/**/*.log"))
    return "\n".join(f"--- {p}\n{p.read_text()[-3000:]}" for p in logs)


@pytest.mark.parametrize("profile", [["--workflow-profile", "profiles/slurm"],
                                     ["--profile", "profiles/slurm", "--workflow-profile", "none"]])
def test_profile_is_accepted_in_a_dry_run(work, profile):
    r, calls = snakemake(work, *profile, "-n", TARGET, ONE_GPU_TARGET)
    assert r.returncode == 0, r.stderr[-4000:]
    assert calls == []  # a dry run submits nothing
    out = r.stdout + r.stderr
    assert "checkpoint prepare_samples:" in out and "rule prepare_model:" in out and "rule score:" in out
    assert f"slurm_account={ACCOUNT}" in out
    # each score job's resources: the GPU partition and its entry's gpus (1 by default)
    jobs = [block for block in out.split("\nrule ")[1:] if block.startswith("score:")]
    gpus = {}
    for block in jobs:
        model = next(line.split("/")[2] for line in block.splitlines() if "output:" in line)
        resources = next(line for line in block.splitlines() if "resources:" in line)
        assert f"slurm_partition={GPU_PARTITION}" in resources, block
        gpus[model] = [r for r in resources.replace(",", " ").split() if r.startswith("gpu=")]
    assert gpus == {"tiny": ["gpu=1"], "tiny-2gpu": ["gpu=2"]}


def test_score_job_gets_a_gpu_the_others_do_not(work):
    t0 = time.perf_counter()
    r, calls = snakemake(work, "--workflow-profile", "profiles/slurm", *FAST, TARGET)
    elapsed = time.perf_counter() - t0
    assert r.returncode == 0, r.stderr[-6000:] + job_logs(work)
    print(f"slurm-profile run: {elapsed:.1f} s, {len(calls)} stub calls")

    values = work / TARGET
    with xr.open_dataset(values, engine="h5netcdf") as ds:
        assert ds.sizes["sample"] == 1 and ds.sizes["condition"] == 2
        assert ds["v"].notnull().any()

    sbatch = {rule_of(c): c for c in calls if c["cmd"] == "sbatch"}
    # prepare_samples is a local rule (workflow/rules/common.smk): it is not submitted
    assert sorted(sbatch) == ["prepare_model", "score"]
    for rule, call in sbatch.items():
        opts = call["options"]
        assert opts["account"] == ACCOUNT, rule
        assert "--wrap" in " ".join(call["argv"])  # the job command, which the stub really ran
        if rule == "score":
            assert opts["partition"] == GPU_PARTITION
            assert opts["gpus"] == "2"  # the entry's gpus: 2 -> gpu=2 -> sbatch --gpus=2
            assert opts["cpus-per-task"] == str(PROFILE["set-threads"]["score"])
            assert opts["time"] == "240"  # the rule's runtime, kept
        else:
            assert opts["partition"] == CPU_PARTITION, rule
            assert not {"gpus", "gres", "gpus-per-node", "cpus-per-gpu"} & set(opts), rule
            assert opts["cpus-per-task"] == "1", rule
    # inside the job the jobstep plugin starts the rule with srun; only score's asks for the GPU
    srun = {c["jobid"]: c["argv"] for c in calls if c["cmd"] == "srun"}
    assert "--gpus=2" in srun[sbatch["score"]["jobid"]]
    assert not any(a.startswith("--gpus") for a in srun[sbatch["prepare_model"]["jobid"]])


def test_stub_reports_running_failed_and_cancelled_jobs(tmp_path):
    """The stub's background jobs go RUNNING -> COMPLETED / FAILED, or CANCELLED by scancel."""
    path = os.pathsep.join([str(STUB), str(Path(sys.executable).parent), os.environ["PATH"]])
    env = {**os.environ, "PATH": path, "IPS_SLURM_STATE": str(tmp_path / "state"),
           "IPS_SLURM_LOG": str(tmp_path / "calls.jsonl")}
    env.pop("IPS_SLURM_SYNC", None)

    def run(*cmd):
        return subprocess.run(cmd, env=env, cwd=tmp_path, capture_output=True, text=True, check=True).stdout

    def states():
        out = run("sacct", "-X", "--parsable2", "--noheader", "--format=JobIdRaw,State", "--name", "t")
        return dict(line.split("|") for line in out.splitlines())

    sub = ["sbatch", "--parsable", "--job-name", "t", "--output", str(tmp_path / "%j.log")]
    ok = run(*sub, "--wrap=sleep 1; echo done $SLURM_JOB_ID").strip()
    bad = run(*sub, "--wrap=exit 3").strip()
    slow = run(*sub, "--wrap=sleep 60").strip()
    assert states()[ok] == "RUNNING"
    assert f"{slow}|RUNNING" in run("squeue", "--format=%i|%T", "--states=all", "--noheader", "--name", "t")
    run("scancel", slow)
    deadline = time.monotonic() + 20
    while states()[ok] == "RUNNING" and time.monotonic() < deadline:
        time.sleep(0.2)
    assert states() == {ok: "COMPLETED", bad: "FAILED", slow: "CANCELLED"}
    assert (tmp_path / f"{ok}.log").read_text() == f"done {ok}\n"
    with pytest.raises(subprocess.CalledProcessError):  # job arrays are not stubbed
        run(*sub, "--array=1-2", "--wrap=true")
