"""Whether every job of a Slurm run fits a node of its partition, checked before submitting.

Slurm accepts a job that asks for more CPUs or memory than any node of its partition has and
leaves it PENDING for ever (reason PartitionConfig), while the workflow waits for it; a GPU
request on a partition whose nodes have no GPU fails only at submission. `misfit` tells both
apart from a fitting job for each kind of job the workflow submits, from the partition that
snakemake-executor-plugin-slurm will choose for it (its partition config, the same code the
plugin runs) and the nodes that `sinfo` reports, and names the setting to change
(docs/workflow.md#slurm).
"""

from __future__ import annotations

import functools
import logging
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

from ips.errors import InputError

# one line per node and partition: partition (default marked *), CPUs, memory in MB, GRES
SINFO = ["sinfo", "--noheader", "--Node", "--format=%P|%c|%m|%G"]


@dataclass(frozen=True)
class Node:
    """What one node offers a job."""

    cpus: int
    mem_mb: int
    gpus: int


@dataclass(frozen=True)
class Partitions:
    """The cluster's partitions, each with its nodes, and the default partition (or None)."""

    nodes: dict[str, list[Node]]
    default: str | None


@dataclass(frozen=True)
class Request:
    """What a job of `rule` asks Slurm for (`model`: the model it scores, if its resources
    depend on one). With `group`, `rule` names a group of rules (`--groups`) whose jobs run
    as one Slurm job: snakemake asks for the threads and memory of all the group's parallel
    jobs at once, bounded only by `--cores` and `--resources mem_mb` (None where unbounded)."""

    rule: str
    model: str | None
    threads: int | None
    mem_mb: int | None
    gpus: int
    partition: str | None = None  # the job's own slurm_partition resource, if it sets one
    group: bool = False

    @property
    def name(self) -> str:
        if self.group:
            return f"group {self.rule}"
        return f"rule {self.rule}" + (f" (model {self.model})" if self.model else "")

    def setting(self, what: str) -> str:
        """The setting that bounds `what` (threads or mem_mb) of this request."""
        if self.group:
            return "--cores" if what == "threads" else "--resources mem_mb"
        return (f"`set-threads: {self.rule}`" if what == "threads"
                else f"`set-resources: {self.rule}: mem_mb`")


def gres_gpus(gres: str) -> int:
    """GPUs in a node's GRES as `sinfo %G` prints it: `gpu:2`, `gpu:a100:4(S:0-1)`,
    `gpu:2,shard:8`, or `(null)` for none."""
    return sum(int(m.group(1)) for m in re.finditer(r"(?:^|,)gpu(?::[^:,()]+)*?:(\d+)", gres))


def read_sinfo(text: str) -> Partitions:
    """`Partitions` from the output of `SINFO`."""
    nodes: dict[str, list[Node]] = {}
    default = None
    for line in text.splitlines():
        if not line.strip():
            continue
        partition, cpus, mem, gres = line.strip().split("|")
        if partition.endswith("*"):
            partition = default = partition[:-1]
        nodes.setdefault(partition, []).append(
            Node(cpus=int(cpus), mem_mb=int(mem.rstrip("+")), gpus=gres_gpus(gres)))
    return Partitions(nodes, default)


def query_partitions() -> Partitions:
    """The cluster's partitions, as `sinfo` on this machine reports them."""
    try:
        r = subprocess.run(SINFO, capture_output=True, text=True, timeout=60, check=True)
    except (OSError, subprocess.SubprocessError) as e:
        detail = getattr(e, "stderr", None) or e
        raise InputError(
            f"sinfo: cannot list the cluster's nodes ({str(detail).strip()})") from None
    return read_sinfo(r.stdout)


def chosen_partition(request: Request, partition_config: Path | None,
                     partitions: Partitions) -> str | None:
    """The partition the executor plugin submits `request` to: the job's own, else the best
    fit of the plugin's partition config (its own selection code), else the default."""
    if request.partition:
        return request.partition
    if partition_config is not None:
        from snakemake_executor_plugin_slurm.partitions import get_best_partition

        threads = request.threads or 1  # an unbounded group is named by `misfit` itself
        job = SimpleNamespace(name=request.rule, threads=threads, resources={
            "gpu": request.gpus, "mem_mb": request.mem_mb or 0, "threads": threads})
        quiet = logging.getLogger("ips.cluster")
        quiet.disabled = True
        return get_best_partition(_plugin_partitions(partition_config), job, quiet)
    return partitions.default


@functools.cache
def _plugin_partitions(partition_config: Path) -> list:
    """The plugin's reading of its partition config, once per file for all requests."""
    from snakemake_executor_plugin_slurm.partitions import read_partition_file

    return read_partition_file(partition_config)


def misfit(request: Request, partition: str | None, partitions: Partitions,
           partition_config: Path | None = None) -> str | None:
    """Why no node of `partition` can run `request`, in one line naming the setting to
    change; None when one can."""
    gpus = f"{request.gpus} GPU{'s' * (request.gpus != 1)}"
    if request.group and (request.threads is None or request.mem_mb is None):
        return (f"{request.name}: a group job asks Slurm for the threads and memory of all its "
                "parallel jobs at once; bound them with --cores N and --resources mem_mb=M "
                "(at most a node's CPUs and memory), as profiles/miniature does")
    if partition is None:
        where = partition_config or "the job's slurm_partition resource"
        return (f"{request.name}: no partition of {where} takes a job with {gpus}; add one "
                f"(a partition with max_gpu >= {request.gpus} for a GPU job)")
    nodes = partitions.nodes.get(partition)
    if not nodes:
        return (f"{request.name}: partition {partition} is not one of the cluster's "
                f"({', '.join(sorted(partitions.nodes))}; sinfo); correct "
                f"{partition_config or 'slurm_partition'}")
    if request.gpus > max(n.gpus for n in nodes):
        return (f"{request.name}: asks for {gpus} (the model entry's `gpus`), but the nodes of "
                f"partition {partition} have at most {max(n.gpus for n in nodes)} (sinfo); "
                f"lower `gpus`, or route GPU jobs to a GPU partition in "
                f"{partition_config or 'the profile'}")
    fit = [n for n in nodes if n.gpus >= request.gpus]
    if request.threads > max(n.cpus for n in fit):
        return (f"{request.name}: {request.threads} threads, but the nodes of partition "
                f"{partition} have at most {max(n.cpus for n in fit)} CPUs (sinfo); lower "
                f"{request.setting('threads')} in the profile")
    fit = [n for n in fit if n.cpus >= request.threads]
    if request.mem_mb and request.mem_mb > max(n.mem_mb for n in fit):
        return (f"{request.name}: mem_mb = {request.mem_mb}, but the nodes of partition "
                f"{partition} have at most {max(n.mem_mb for n in fit)} MB (sinfo); lower "
                f"{request.setting('mem_mb')} in the profile, or run on a partition with "
                f"larger nodes (docs/workflow.md#memory)")
    return None
