"""The workflow through the shipped Slurm profile on a real single-node Slurm (tests/slurm/cluster).

Only the site values of profiles/slurm change: the account, the two partitions and threads that
fit the node. The cluster's CPU partition refuses GPU jobs, as real clusters' do. The tests
need root (the script starts munged, MariaDB and Slurm's daemons) and the packages
(`tests/slurm/cluster install`); without them they are skipped with the reason, unless
IPS_SLURM_TESTS=required (as .ci/run sets), where they fail instead.
"""

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import yaml

from ips.config import DEFAULT_MODEL

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "slurm" / "cluster"
SNAKEMAKE = Path(sys.executable).parent / "snakemake"
ACCOUNT, CPU, GPU = "ips", "cpu", "gpu"  # what tests/slurm/cluster sets up and profiles
# The plugin waits 40 s before its first look at a job, and 10 s longer after each look that
# finds nothing finished; a 2-second start keeps the tests' jobs from waiting on it.
POLL = ["--slurm-init-seconds-before-status-checks", "2"]
RERUN = "run the same command again: finished outputs are kept"

pytestmark = pytest.mark.slurm


def unavailable() -> str | None:
    """Why a real Slurm cannot be started here, or None."""
    if os.geteuid() != 0:
        return "needs root (tests/slurm/cluster starts munged, MariaDB and Slurm's daemons)"
    missing = [c for c in ("slurmctld", "slurmd", "slurmdbd", "munged", "mariadbd", "sacct")
               if shutil.which(c) is None]
    if missing:
        return f"Slurm is not installed ({', '.join(missing)}): run `tests/slurm/cluster install`"
    return None


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> dict[str, str]:
    """A started single-node cluster for this module; the environment its clients need."""
    if why := unavailable():
        if os.environ.get("IPS_SLURM_TESTS") == "required":
            pytest.fail(f"the real-Slurm tests are required here but cannot run: {why}")
        pytest.skip(why)
    state = tmp_path_factory.mktemp("slurm")
    t0 = time.perf_counter()
    r = subprocess.run([SCRIPT, "start", state], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    print(f"cluster start: {time.perf_counter() - t0:.1f} s")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SLURM_", "SBATCH_", "SRUN_", "SNAKEMAKE_"))}
    env["SLURM_CONF"] = str(state / "slurm.conf")
    yield env
    subprocess.run([SCRIPT, "stop", state], timeout=300)


def slurm(env, *cmd) -> str:
    return subprocess.run(cmd, env=env, capture_output=True, text=True, check=True,
                          timeout=60).stdout


def site_profile(path: Path) -> Path:
    """profiles/slurm with this cluster's site values (tests/slurm/cluster profile)."""
    subprocess.run([SCRIPT, "profile", path], check=True, timeout=60)
    return path


def embedded_study() -> dict:
    """The embedded SmolLM2 and a random Llama that asks for 2 GPUs (on the CPU, its
    device_map is ignored) on 2 ARC-Easy items in one shard, n = 3, T1/T2, the baseline null.
    (Gemma 3, the default's other model, would add minutes of conversion and scoring to what
    SmolLM2 already shows; few-shot prompts are longer prompts to score; the precision null's
    rules are the baseline null's with another setting, ips.nulls.Variant.)"""
    smollm2 = yaml.safe_load((ROOT / "config.yaml").read_text())["models"][DEFAULT_MODEL]
    random = {"source": {"random": "llama", "seed": 1}, "family": "tiny", "series": "tiny",
              "type": "base", "architecture": "dense", "params": 1000, "gpus": 2,
              "device_map": "auto"}
    models = {DEFAULT_MODEL: smollm2, "random-llama": random}
    return {
        "n_max": 3, "n_items": 2, "shard_size": 2,
        "templates": {"mcq": ["T1", "T2"]},
        "few_shot": {"templates": [], "shots": []},
        "nulls": {"noise": {"levels": [0.01], "draws": 1},
                  "baseline": {"others": ["pad"], "shards": 1}},
        "permutation": {"draws": 199},
        "models": models,
        "datasets": {"arc-easy": {"format": "arc", "subset": "ARC-Easy", "fields": ["question"]}},
    }


def workdir(path: Path, study: dict) -> Path:
    """A working directory with the study's config file and, as a decoy, the embedded
    default config.yaml: a run of the study must not see the default's models or datasets."""
    path.mkdir()
    (path / "study.yaml").write_text(yaml.safe_dump(study))
    shutil.copy(ROOT / "config.yaml", path / "config.yaml")
    return path


def start(work: Path, env, profile: Path, *targets,
          use=("--workflow-profile",)) -> subprocess.Popen:
    """snakemake on the study of `work` through `profile` (given as `use`), in the background."""
    cmd = [SNAKEMAKE, "--snakefile", ROOT / "Snakefile", "--directory", work, *use, profile,
           *POLL, *targets, "--configfile", work / "study.yaml"]
    log = work / f"snakemake-{time.monotonic_ns()}.log"
    with open(log, "w") as f:
        proc = subprocess.Popen(list(map(str, cmd)), cwd=work, env=env, stdout=f,
                                stderr=subprocess.STDOUT)
    proc.log = log
    return proc


def finish(proc: subprocess.Popen, timeout=900) -> tuple[int, str]:
    """The run's exit code and output, once it has ended."""
    return proc.wait(timeout=timeout), proc.log.read_text()


def accounted(env, since: str) -> list[dict]:
    """Every job sacct knows since `since`: id, partition, state, GPUs and CPUs allocated,
    time limit, account, rule (from the plugin's comment `rule_<name>_wildcards_...`)."""
    out = slurm(env, "sacct", "-X", "-n", "-P", "-S", since,
                "-o", "JobIDRaw,Partition,State,AllocTRES,Timelimit,Account,Comment")
    jobs = []
    for line in out.splitlines():
        jobid, partition, state, tres, limit, account, comment = line.split("|", 6)
        tres = dict(t.split("=") for t in tres.split(",") if t)
        jobs.append({"id": int(jobid), "partition": partition, "state": state.split()[0],
                     "gpus": int(tres.get("gres/gpu", 0)), "cpus": int(tres.get("cpu", 0)),
                     "time": limit, "account": account, "comment": comment,
                     "rule": comment.removeprefix("rule_").split("_wildcards_")[0]})
    return jobs


def queue(env) -> list[tuple[int, str, str]]:
    """The jobs in the queue: id, state, comment."""
    out = slurm(env, "squeue", "-h", "-o", "%i|%T|%k")
    return [(int(i), s, c) for i, s, c in (line.split("|", 2) for line in out.splitlines())]


class Faults(threading.Thread):
    """While a run goes on: scancel the first running score job; once its resubmitted copy
    has completed, set the node DOWN while the next job runs, and back."""

    def __init__(self, env, since):
        super().__init__(daemon=True)
        self.env, self.since = env, since
        self.cancelled: tuple[int, str] | None = None
        self.node_failed: tuple[int, str] | None = None
        self.stop = threading.Event()

    def wait_for(self, pick):
        while not self.stop.is_set():
            if found := pick():
                return found
            time.sleep(0.3)
        return None

    def run(self):
        def running(prefix):
            """A job of rule_<prefix>... that started under 3 s ago: every job here runs 7 s
            or more, so it is still running when the fault lands."""
            out = slurm(self.env, "squeue", "-h", "-t", "RUNNING", "-o", "%i|%M|%k")
            for jobid, used, comment in (line.split("|", 2) for line in out.splitlines()):
                if used in ("0:00", "0:01", "0:02") and comment.startswith(f"rule_{prefix}"):
                    return int(jobid), comment
            return None

        def resubmitted_and_done():
            return any(j["comment"] == self.cancelled[1] and j["state"] == "COMPLETED"
                       for j in accounted(self.env, self.since))

        self.cancelled = self.wait_for(lambda: running("score_wildcards"))
        if self.cancelled is None:
            return
        slurm(self.env, "scancel", str(self.cancelled[0]))
        if self.wait_for(resubmitted_and_done) is None:
            return
        self.node_failed = self.wait_for(lambda: running(""))
        if self.node_failed is None:
            return
        node = slurm(self.env, "sinfo", "-h", "-N", "-o", "%N").split()[0]
        slurm(self.env, "scontrol", "update", f"nodename={node}", "state=down",
              "reason=ips-test")
        time.sleep(2)
        subprocess.run(["scontrol", "update", f"nodename={node}", "state=resume"], env=self.env,
                       capture_output=True, timeout=60)  # refused if it came back by itself


def values(work: Path, pattern: str) -> dict[str, np.ndarray]:
    out = {}
    for path in sorted((work / "results").glob(pattern)):
        with xr.open_dataset(path, engine="h5netcdf") as ds:
            out[str(path.relative_to(work))] = ds["v"].values
    return out


def test_the_embedded_study_runs_through_faults_as_a_local_run_does(cluster, tmp_path,
                                                                   smollm2_dir):
    """scancel of a running score job, the node DOWN and back: the run completes (or says to
    rerun, and the rerun completes), every job ran on its partition, numbers as a local run.
    SmolLM2 is in the run's model cache already (converted once for the session, tested in
    tests/models/test_gguf.py): its prepare_model job finds it there."""
    env = cluster
    work = workdir(tmp_path / "slurm", embedded_study())
    shutil.copytree(smollm2_dir, work / "resources/models" / DEFAULT_MODEL,
                    copy_function=os.link)
    profile = site_profile(tmp_path / "profile")
    since = slurm(env, "date", "+%Y-%m-%dT%H:%M:%S").strip()
    faults = Faults(env, since)
    t0 = time.perf_counter()
    proc = start(work, env, profile, "results/figures")
    faults.start()
    rc, out = finish(proc)
    faults.stop.set()
    faults.join()
    first = time.perf_counter() - t0
    assert faults.cancelled and faults.node_failed, out[-4000:]
    if rc != 0:  # a node failure leaves its job failed; the run says to rerun
        assert RERUN in out, out[-4000:]
        rc, out = finish(start(work, env, profile, "results/figures"))
    assert rc == 0, out[-6000:]
    print(f"slurm run: {first:.0f} s to the first stop, {time.perf_counter() - t0:.0f} s in all")
    assert queue(env) == []  # nothing left behind

    jobs = accounted(env, since)
    by_id = {j["id"]: j for j in jobs}
    assert by_id[faults.cancelled[0]]["state"] == "CANCELLED"
    assert by_id[faults.node_failed[0]]["state"] == "NODE_FAIL"
    entries = embedded_study()["models"]
    completed = [j for j in jobs if j["state"] == "COMPLETED"]
    assert {j["rule"] for j in completed} >= {
        "prepare_model", "score", "score_baseline_null", "fit", "fit_baseline_null", "metrics",
        "factors", "figures"}
    for j in completed:
        assert j["account"] == ACCOUNT and j["cpus"] == 1, j  # score: site set-threads 1
        if j["rule"] in ("score", "score_baseline_null"):
            # the comment's wildcard values, "_"-joined (no model name holds "_")
            model = next(m for m in entries
                         if m in j["comment"].split("_wildcards_")[1].split("_"))
            assert (j["partition"], j["gpus"]) == (GPU, entries[model].get("gpus", 1)), j
            assert j["time"] == "04:00:00", j  # the rule's runtime: 240 minutes
        else:
            assert (j["partition"], j["gpus"]) == (CPU, 0), j

    # the same study run locally, on the models the cluster converted
    local = workdir(tmp_path / "local", embedded_study())
    (local / "resources").symlink_to(work / "resources")
    r = subprocess.run(list(map(str, [SNAKEMAKE, "--snakefile", ROOT / "Snakefile", "--directory",
                                      local, "--cores", "2", "results/figures",
                                      "--configfile", local / "study.yaml"])),
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-4000:]
    for pattern in ("values/*/*/*.h5", "nulls/baseline/*/values/*/*.h5"):
        ours, theirs = values(work, pattern), values(local, pattern)
        assert sorted(ours) == sorted(theirs) and ours
        for name in ours:
            np.testing.assert_array_equal(ours[name], theirs[name], err_msg=name)
    for table in ("ips_table.csv", "claims.csv", "null_table.csv"):
        assert ((work / "results/figures" / table).read_text()
                == (local / "results/figures" / table).read_text()), table


def tiny_study() -> dict:
    tiny = {"source": {"random": "llama", "seed": 0}, "family": "tiny", "series": "tiny",
            "type": "base", "architecture": "dense", "params": 1000}
    return {"n_max": 3, "n_items": 4, "shard_size": 2, "templates": {"mcq": ["T1", "T2"]},
            "few_shot": {"shots": []}, "models": {"tiny": tiny},
            "datasets": {"arc-easy": {"format": "arc", "subset": "ARC-Easy",
                                      "fields": ["question"]}}}


def test_sigterm_then_rerun_redoes_no_finished_shard(cluster, tmp_path):
    env = cluster
    work = workdir(tmp_path / "work", tiny_study())
    profile = site_profile(tmp_path / "profile")
    target = [f"results/interactions/tiny/arc-easy/{k}.h5" for k in (0, 1)]
    shards = [work / f"results/values/tiny/arc-easy/{k}.h5" for k in (0, 1)]
    # the profile as `--profile`, which then needs `--workflow-profile none`
    proc = start(work, env, profile, *target, use=("--workflow-profile", "none", "--profile"))
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not (
            any(s.exists() for s in shards)
            and any(s == "RUNNING" for _, s, _ in queue(env))):
        time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)
    rc, out = finish(proc, timeout=300)
    assert rc != 0
    left = queue(env)
    assert left == [], f"jobs of the killed run left in the queue: {left}"
    finished = {s: s.stat().st_mtime_ns for s in shards if s.exists()}
    assert finished, out[-3000:]

    rc, out = finish(start(work, env, profile, *target))
    assert rc == 0, out[-4000:]
    assert "Nothing to be done" not in out
    for shard, stamp in finished.items():
        assert shard.stat().st_mtime_ns == stamp, f"{shard.name} was scored again"
    assert all((work / t).exists() for t in target)


@pytest.mark.parametrize("change, message", [
    ({"set-threads": {"score": 4}},  # the shipped profile's
     "ips: rule score: 4 threads, but the nodes of partition gpu have at most 2 CPUs "
     "(sinfo); lower `set-threads: score` in the profile"),
    ({"set-resources": {"fit": {"mem_mb": 10**8}}},
     "ips: rule fit: mem_mb = 100000000, but the nodes of partition cpu have at most"),
    ({"groups": ["score=model", "fit=model"]},  # not bounded by --cores / --resources mem_mb
     "ips: group model: a group job asks Slurm for the threads and memory of all its parallel "
     "jobs at once; bound them with --cores N and --resources mem_mb=M"),
])
def test_a_job_larger_than_every_node_stops_the_run_in_one_line(cluster, tmp_path, change,
                                                                message):
    env = cluster
    work = workdir(tmp_path / "work", tiny_study())
    profile = site_profile(tmp_path / "profile")
    settings = yaml.safe_load((profile / "config.yaml").read_text())
    (profile / "config.yaml").write_text(yaml.safe_dump({**settings, **change}))
    before = slurm(env, "sacct", "-X", "-n", "-P", "-o", "JobIDRaw", "-S", "now-1hour")
    rc, out = finish(start(work, env, profile, "results/figures"), timeout=120)
    assert rc != 0
    assert message in out, out[-3000:]
    assert "Traceback" not in out and 'File "' not in out  # one line, no stack
    assert slurm(env, "sacct", "-X", "-n", "-P", "-o", "JobIDRaw", "-S", "now-1hour") == before


def test_grouped_models_run_as_one_slurm_job_each(cluster, tmp_path):
    """profiles/miniature over the site profile: two random models of the miniature, each
    model's prepare, score, fit and metrics jobs in a Slurm job of its own within --cores and
    --resources mem_mb; undrawn samples stop the grouped run before any job."""
    env = cluster
    mini = yaml.safe_load((ROOT / "workflow/configs/miniature.yaml").read_text())
    models = {m: mini["models"][m] for m in ("llama-2-7b", "mixtral-8x7b")}
    study = {**tiny_study(), "n_items": 2, "shard_size": 2, "models": models,
             "permutation": {"draws": 199},
             "nulls": {"noise": {"levels": [0.01], "draws": 1}}}
    work = workdir(tmp_path / "work", study)
    profile = site_profile(tmp_path / "profile")
    grouped = ("--workflow-profile", ROOT / "profiles/miniature", "--profile")
    metrics = [f"results/metrics/{m}/arc-easy.nc" for m in models]
    since = slurm(env, "date", "+%Y-%m-%dT%H:%M:%S").strip()

    rc, out = finish(start(work, env, profile, *metrics, use=grouped), timeout=120)
    assert rc != 0 and "ips: jobs are grouped (--groups)" in out, out[-3000:]
    assert "the target `samples`" in out and accounted(env, since) == []

    rc, out = finish(start(work, env, profile, "samples", use=grouped), timeout=300)
    assert rc == 0, out[-4000:]
    t0 = time.perf_counter()
    rc, out = finish(start(work, env, profile, *metrics, use=grouped))
    assert rc == 0, out[-6000:]
    print(f"grouped slurm run: {time.perf_counter() - t0:.0f} s")
    # the plugin names a group job rule_<group>_<its rules>; one group job per model
    jobs = accounted(env, since)
    assert len(jobs) == len(models), jobs
    for job in jobs:
        assert job["rule"].startswith("model_") and "score" in job["rule"], job
        assert (job["cpus"], job["partition"], job["state"]) == (1, CPU, "COMPLETED"), job
    assert all((work / m).exists() for m in metrics)
