"""What the benchmark scripts share: the embedded models, ARC-Easy items, memory and time.

Memory is read from /proc/self/status (Linux): VmHWM, the peak resident set, is reset to the
current one before each measured call, so a call's peak is VmHWM after it minus VmRSS before.
"""

from __future__ import annotations

import gc
import time
from pathlib import Path

import numpy as np
import torch

from ips.datasets import load_items
from ips.config import load_config
from ips.variables import Skip, select_variables

# the embedded default's models, as the repository's config.yaml gives them
MODELS = load_config(Path(__file__).resolve().parents[1] / "config.yaml")["models"]


def reset_peak() -> None:
    Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS


def status_mb(key: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def measure(fn):
    """(result, seconds, peak MB above the resident set before the call, CPU share).

    The CPU share is the process's CPU time over wall time × threads: well below 1, the
    run was slowed by other processes on the machine (its time is then not comparable).
    """
    gc.collect()
    reset_peak()
    base = status_mb("VmRSS")
    c0, t0 = time.process_time(), time.perf_counter()
    out = fn()
    wall = time.perf_counter() - t0
    share = (time.process_time() - c0) / (wall * torch.get_num_threads())
    return out, wall, status_mb("VmHWM") - base, share


def arc_easy():
    """The bundled ARC-Easy items and a seeded order over them (the same in every script)."""
    items = load_items("arc-easy", {"format": "arc", "subset": "ARC-Easy"}).items
    return items, np.random.default_rng(0).permutation(len(items))


def item_with(items, order, n: int):
    """The first item in `order` with exactly n content variables, and those variables."""
    for i in order:
        try:
            variables = select_variables(items[i], n_max=n, reduce="skip")
        except Skip:
            continue
        if len(variables) == n:
            return items[i], variables
    raise SystemExit(f"no ARC-Easy item has exactly {n} content variables")
