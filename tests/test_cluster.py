"""ips.cluster: the nodes sinfo reports, the partition the Slurm plugin picks, and the
one-line verdict on a job that no node can take (without a cluster; tests/pipeline/test_slurm.py runs
the same check on a real one)."""

from pathlib import Path

import pytest
import yaml

from ips.cluster import (
    Node,
    Partitions,
    Request,
    chosen_partition,
    gres_gpus,
    misfit,
    read_sinfo,
)

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "profiles" / "slurm" / "partitions.yaml"
CPU, GPU = list(yaml.safe_load(SHIPPED.read_text())["partitions"])

# two partitions as `sinfo --noheader --Node --format=%P|%c|%m|%G` prints them on a cluster
# of two CPU nodes and a 4-GPU node; the CPU partition is the default
SINFO = """cpu*|32|257000|(null)
cpu*|64|515000+|(null)
gpu|16|128000|gpu:a100:4(S:0-1),shard:8
"""


@pytest.mark.parametrize("gres, gpus", [("(null)", 0), ("gpu:2", 2), ("gpu:a100:4(S:0-1)", 4),
                                        ("gpu:a100:4(S:0-1),shard:8", 4),
                                        ("gpu:a100:2,gpu:v100:1", 3), ("mps:100", 0)])
def test_gpus_of_a_node_from_its_gres(gres, gpus):
    assert gres_gpus(gres) == gpus


def test_sinfo_lines_become_partitions_with_their_nodes():
    partitions = read_sinfo(SINFO)
    assert partitions.default == "cpu"
    assert partitions.nodes == {"cpu": [Node(32, 257000, 0), Node(64, 515000, 0)],
                                "gpu": [Node(16, 128000, 4)]}


@pytest.mark.parametrize("gpus, partition", [(0, CPU), (1, GPU), (2, GPU)])
def test_the_plugin_sends_gpu_jobs_to_the_gpu_partition_and_no_other(gpus, partition):
    """The shipped partitions.yaml through the plugin's own selection: every job that asks
    for a GPU lands on the GPU partition, every other one on the CPU partition."""
    for rule in ("score", "score_precision_null", "fit", "any_new_rule"):
        request = Request(rule=rule, model=None, threads=4, mem_mb=8000, gpus=gpus)
        assert chosen_partition(request, SHIPPED, read_sinfo("")) == partition, rule


def test_without_a_partition_config_the_job_s_own_partition_or_the_default():
    partitions = read_sinfo(SINFO)
    own = Request(rule="fit", model=None, threads=1, mem_mb=100, gpus=0, partition="gpu")
    assert chosen_partition(own, None, partitions) == "gpu"
    assert chosen_partition(Request("fit", None, 1, 100, 0), None, partitions) == "cpu"


def test_no_partition_with_enough_gpus(tmp_path):
    config = tmp_path / "partitions.yaml"
    config.write_text(yaml.safe_dump({"partitions": {"cpu": {"max_gpu": 0},
                                                     "gpu": {"max_gpu": 2}}}))
    request = Request(rule="score", model="big", threads=4, mem_mb=8000, gpus=4)
    assert chosen_partition(request, config, read_sinfo(SINFO)) is None
    assert misfit(request, None, read_sinfo(SINFO), config) == (
        f"rule score (model big): no partition of {config} takes a job with 4 GPUs; add one "
        "(a partition with max_gpu >= 4 for a GPU job)")


PARTITIONS = read_sinfo(SINFO)


@pytest.mark.parametrize("request_, partition, why", [
    (Request("fit", None, 64, 515000, 0), "cpu", None),  # the largest node takes it
    (Request("score", "m", 16, 128000, 4), "gpu", None),
    (Request("score", "m", 17, 1000, 1), "gpu",
     "rule score (model m): 17 threads, but the nodes of partition gpu have at most 16 CPUs "
     "(sinfo); lower `set-threads: score` in the profile"),
    (Request("fit", None, 1, 600000, 0), "cpu",
     "rule fit: mem_mb = 600000, but the nodes of partition cpu have at most 515000 MB "
     "(sinfo); lower `set-resources: fit: mem_mb` in the profile, or run on a partition "
     "with larger nodes (docs/workflow.md#memory)"),
    # the 64-CPU node has the memory, but not with 65 CPUs: threads are named first
    (Request("fit", None, 65, 1000, 0), "cpu",
     "rule fit: 65 threads, but the nodes of partition cpu have at most 64 CPUs (sinfo); "
     "lower `set-threads: fit` in the profile"),
    # 40 CPUs fit only the node with 515000 MB, 300000 MB only with those CPUs
    (Request("fit", None, 40, 300000, 0), "cpu", None),
    (Request("score", "m", 1, 1000, 1), "cpu",
     "rule score (model m): asks for 1 GPU (the model entry's `gpus`), but the nodes of "
     "partition cpu have at most 0 (sinfo); lower `gpus`, or route GPU jobs to a GPU "
     "partition in partitions.yaml"),
    (Request("fit", None, 1, 1000, 0), "bigmem",
     "rule fit: partition bigmem is not one of the cluster's (cpu, gpu; sinfo); correct "
     "partitions.yaml"),
])
def test_misfit_names_the_rule_and_the_setting(request_, partition, why):
    assert misfit(request_, partition, PARTITIONS, Path("partitions.yaml")) == why


def test_a_gpu_request_without_a_partition_config_names_the_profile():
    assert misfit(Request("score", "m", 1, 1000, 1), "cpu", PARTITIONS) == (
        "rule score (model m): asks for 1 GPU (the model entry's `gpus`), but the nodes of "
        "partition cpu have at most 0 (sinfo); lower `gpus`, or route GPU jobs to a GPU "
        "partition in the profile")


def test_memory_is_checked_on_the_nodes_with_the_cpus():
    partitions = Partitions({"p": [Node(4, 512000, 0), Node(64, 64000, 0)]}, None)
    assert misfit(Request("fit", None, 32, 100000, 0), "p", partitions) == (
        "rule fit: mem_mb = 100000, but the nodes of partition p have at most 64000 MB "
        "(sinfo); lower `set-resources: fit: mem_mb` in the profile, or run on a partition "
        "with larger nodes (docs/workflow.md#memory)")


@pytest.mark.parametrize("request_, why", [
    (Request("model", None, 2, 8000, 0, group=True), None),
    (Request("model", None, None, 8000, 0, group=True),
     "group model: a group job asks Slurm for the threads and memory of all its parallel jobs "
     "at once; bound them with --cores N and --resources mem_mb=M (at most a node's CPUs and "
     "memory), as profiles/miniature does"),
    (Request("model", None, 2, None, 0, group=True),
     "group model: a group job asks Slurm for the threads and memory of all its parallel jobs "
     "at once; bound them with --cores N and --resources mem_mb=M (at most a node's CPUs and "
     "memory), as profiles/miniature does"),
    (Request("model", None, 65, 8000, 0, group=True),
     "group model: 65 threads, but the nodes of partition cpu have at most 64 CPUs (sinfo); "
     "lower --cores in the profile"),
    (Request("model", None, 2, 600000, 0, group=True),
     "group model: mem_mb = 600000, but the nodes of partition cpu have at most 515000 MB "
     "(sinfo); lower --resources mem_mb in the profile, or run on a partition with larger "
     "nodes (docs/workflow.md#memory)"),
])
def test_a_group_job_is_bounded_by_cores_and_mem_mb(request_, why):
    """A group runs as one Slurm job that asks for all its parallel jobs' threads and memory
    at once unless --cores and --resources mem_mb bound it (tests/pipeline/test_slurm.py submits one)."""
    partition = chosen_partition(request_, SHIPPED, PARTITIONS)
    assert partition == CPU
    assert misfit(request_, "cpu", PARTITIONS, SHIPPED) == why


def test_the_miniature_profile_bounds_its_groups():
    profile = yaml.safe_load((ROOT / "profiles/miniature/config.yaml").read_text())
    groups = {g.split("=")[1] for g in profile["groups"]}
    assert groups == {"model"} and profile["cores"] >= 1
    assert any(r.startswith("mem_mb=") for r in profile["resources"])
