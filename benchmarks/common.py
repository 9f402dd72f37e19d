"""What the benchmark scripts share: the embedded models, ARC-Easy items, memory and time.

Memory is read from /proc/self/status (Linux): VmHWM, the peak resident set, is reset to the
current one before each measured call, so a call's peak is VmHWM after it minus VmRSS before.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch

from ips.config import load_config
from ips.prompts.datasets import load_items
from ips.prompts.templates import load_templates, render
from ips.prompts.variables import Skip, select_variables
from ips.scoring.engine import letter_tokens
from ips.scoring.log_odds import token_owners

# the embedded default's models and datasets, as the repository's config.yaml gives them
_CONFIG = load_config(Path(__file__).resolve().parents[1] / "config.yaml")
MODELS = _CONFIG["models"]
DATASETS = _CONFIG["datasets"]


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


def dataset_items(name: str):
    """The items of the config's dataset `name` and a seeded order over them (the same in
    every script)."""
    items = load_items(name, DATASETS[name]).items
    return items, np.random.default_rng(0).permutation(len(items))


def arc_easy():
    """The bundled ARC-Easy items and their seeded order (`dataset_items("arc-easy")`)."""
    return dataset_items("arc-easy")


def items_with(items, order, n: int, count: int):
    """The first `count` items in `order` with exactly n content variables, with them."""
    found = []
    for i in order:
        try:
            variables = select_variables(items[i], n_max=n, reduce="skip")
        except Skip:
            continue
        if len(variables) == n:
            found.append((items[i], variables))
            if len(found) == count:
                return found
    raise SystemExit(f"only {len(found)} ARC-Easy items have exactly {n} content variables")


def item_with(items, order, n: int):
    """The first item in `order` with exactly n content variables, and those variables."""
    return items_with(items, order, n, 1)[0]


def prompt_case(tokenizer, items, order, templates, n: int, k: int, template: str = "T1"):
    """The benchmark prompt with n variables and k solved examples, tokenized.

    The item is `item_with(items, order, n)`, the shots are the next items of `order`;
    returns (item, token ids, each token's variable, [target id]) with the target the gold
    option's letter, as `Engine.values` takes them.
    """
    item, variables = item_with(items, order, n)
    pool = [items[i] for i in order if items[i].id != item.id]
    p = render(templates[template], item, variables, pool[:k], templates)
    enc = tokenizer(p.text, return_offsets_mapping=True)
    ids = np.asarray(enc["input_ids"])
    owners = token_owners(enc["offset_mapping"], p.spans)
    target = [letter_tokens(tokenizer, p.cue, "ABCD")[0][item.gold]]
    return item, ids, owners, target


def matmul_rate(seconds: float = 1.0, size: int = 2048, device: str = "cpu",
                dtype: torch.dtype = torch.float32) -> float:
    """Best rate (FLOP/s) of a size³ matmul in `dtype` on `device` over about `seconds`.

    2·size³ FLOPs per product; on CUDA each product is timed between synchronisations.
    """
    a = torch.randn(size, size, device=device, dtype=dtype)
    b = torch.randn(size, size, device=device, dtype=dtype)
    c = torch.empty(size, size, device=device, dtype=dtype)
    sync = torch.cuda.synchronize if torch.device(device).type == "cuda" else (lambda: None)
    torch.mm(a, b, out=c)
    sync()
    best, end = 0.0, time.perf_counter() + seconds
    while time.perf_counter() < end:
        t = time.perf_counter()
        torch.mm(a, b, out=c)
        sync()
        best = max(best, 2 * size**3 / (time.perf_counter() - t))
    return best


class Start(NamedTuple):
    """What a model benchmark measures and loads before its first model."""

    time: float  # perf_counter at the start, for the total
    rate: float  # the float32 matmul rate (FLOP/s) the scorer's rates are read against
    items: list  # ARC-Easy test items and the order they are drawn in (`arc_easy`)
    order: list
    templates: object  # the built-in templates (`load_templates()`)


def start(threads: int, setup: str) -> Start:
    """Set torch's threads, measure and print the matmul rate beside `setup` (the run's
    settings, printed on the same line), and load ARC-Easy and the templates."""
    torch.set_num_threads(threads)
    t0 = time.perf_counter()
    rate = matmul_rate()
    print(f"{torch.get_num_threads()} threads; float32 matmul rate {rate / 1e9:.0f} GFLOP/s "
          f"(2048^3 sgemm); {setup}")
    return Start(t0, rate, *arc_easy(), load_templates())


def finish(run: Start, summary: Sequence[str] = ()) -> float:
    """Measure the matmul rate again, print it beside the first and the total time, then the
    run's `summary` lines and the date when there are any; return the better of the two rates
    (rates are read against it: a loaded machine lowers both)."""
    after = matmul_rate()
    print(f"\nfloat32 matmul rate: {run.rate / 1e9:.0f} GFLOP/s before, {after / 1e9:.0f} "
          f"after; total {time.perf_counter() - run.time:.0f} s")
    if summary:
        print("\n" + "\n".join(summary))
        print(f"({time.strftime('%Y-%m-%d %H:%M')})")
    return max(run.rate, after)


def warn_if_slowed(share: float) -> None:
    """Say under a row that other processes took CPU time while it ran (`measure`'s share
    below 85 %): its time is not comparable."""
    if share < 0.85:
        print(f"{'':<14}warning: other processes took CPU time (cpu%); this row's time is not "
              "comparable")


class Flops:
    """Useful FLOPs of a model: linear layers per token, attention per pair, head per position."""

    def __init__(self, model):
        cfg = model.config.get_text_config()
        layers = model.get_decoder().layers
        self.per_token = sum(2 * m.in_features * m.out_features
                             for m in layers.modules() if isinstance(m, torch.nn.Linear))
        head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
        self.per_pair = 4 * cfg.num_attention_heads * head_dim  # QK^T and PV, per layer
        self.per_logit_row = 2 * cfg.hidden_size * model.get_output_embeddings().weight.shape[0]
        self.layers = cfg.num_hidden_layers
        window = getattr(cfg, "sliding_window", None)
        kinds = getattr(cfg, "layer_types", None) or ["full_attention"] * self.layers
        self.windows = [window if k == "sliding_attention" else None for k in kinds]

    def plain(self, rows: int, length: int, k: int) -> float:
        pos = np.arange(length)
        pairs = sum(int(np.minimum(pos + 1, w or length).sum()) for w in self.windows)
        return rows * (length * self.per_token + pairs * self.per_pair + k * self.per_logit_row)

    def trie(self, st) -> float:
        return (st.tokens * self.per_token + st.key_pairs * self.per_pair
                + st.projected * self.per_logit_row)


def load_named(name: str, cache_dir: Path, threads: int):
    """Model `name` of config.yaml, or else the transformers directory `cache_dir/<name>`
    (a model converted by hand; its factor attributes are placeholders)."""
    from ips.models.entries import ModelSpec
    from ips.models.loading import load_model

    entry = MODELS.get(name) or {"source": {"path": str(Path(cache_dir) / name)},
                                 "family": "other", "series": "other", "type": "base",
                                 "architecture": "dense", "params": 1}
    return load_model(ModelSpec.from_config(name, entry), cache_dir=cache_dir, threads=threads)
