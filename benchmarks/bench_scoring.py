"""Benchmark of the scoring engine: masked evaluations per second, batched vs the naive loop.

Run:  .venv/bin/python benchmarks/bench_scoring.py [--quick] [--threads 2]

One 0-shot ARC-Easy T1 prompt with n = 8 variables (the first bundled item, in the seeded
sampling order, that has exactly 8 content variables), scored on all 2**n masks by SmolLM2-
135M-Instruct (converted once to resources/models/). Side by side in one run:

- naive: one prompt per forward, logits of every position (what a plain script does);
- batched: `ips.scoring.engine.Engine` with rows of equal length and only the last position
  projected, for batch sizes 16..256 rows.

Prints masked evaluations per second, the speed-up over naive, the peak resident memory of
each above the resident model (VmHWM, reset before each run) and max |v − v_naive|.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch

from common import MODELS, arc_easy, item_with, measure, status_mb
from ips.models.entries import ModelSpec
from ips.models.loading import load_model
from ips.prompts.templates import load_templates, render
from ips.scoring.engine import Engine, letter_tokens
from ips.scoring.log_odds import log_odds, masked_inputs, token_owners


def naive(loaded, rows: np.ndarray, target: int) -> np.ndarray:
    logp = np.empty(len(rows))
    with torch.inference_mode():
        for k, row in enumerate(rows):
            logits = loaded.model(input_ids=torch.as_tensor(row[None])).logits  # every position
            logp[k] = torch.log_softmax(logits[0, -1].double(), -1)[target].item()
    return log_odds(logp)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n = 6 and batch sizes 16, 64")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--cache-dir", type=Path, default=Path("resources/models"))
    args = parser.parse_args()
    n = 6 if args.quick else 8
    batches = (16, 64) if args.quick else (16, 32, 64, 128, 256)

    t0 = time.perf_counter()
    name = "smollm2-135m-instruct"
    loaded = load_model(ModelSpec.from_config(name, MODELS[name]), cache_dir=args.cache_dir,
                        threads=args.threads)
    print(f"model {loaded.spec.name}: loaded in {time.perf_counter() - t0:.1f} s, "
          f"{torch.get_num_threads()} threads, {loaded.dtype}, mask {loaded.mask_token!r}")
    item, variables = item_with(*arc_easy(), n)
    p = render(load_templates()["T1"], item, variables)
    enc = loaded.tokenizer(p.text, return_offsets_mapping=True)
    ids = np.asarray(enc["input_ids"])
    owners = token_owners(enc["offset_mapping"], p.spans)
    target = letter_tokens(loaded.tokenizer, p.cue, "ABCD")[0][item.gold]
    print(f"item {item.id}: n = {n}, {len(ids)} tokens, {1 << n} masks, "
          f"variables {[v.text for v in variables]}")

    rows = masked_inputs(ids, owners, n, loaded.mask_token_id)
    v_naive, t_naive, mb, _ = measure(lambda: naive(loaded, rows, target))
    print(f"model resident: {status_mb('VmRSS'):.0f} MB; peak is measured above it")
    print(f"\n{'scorer':<16}{'evals/s':>10}{'speed-up':>10}{'peak +MB':>10}{'max|dv|':>12}")
    print(f"{'naive':<16}{(1 << n) / t_naive:>10.1f}{1.0:>10.2f}{mb:>10.0f}{0.0:>12.1e}")
    for b in batches:
        engine = Engine(loaded.model, loaded.baseline, batch_tokens=b * len(ids))
        v, t, mb, _ = measure(lambda: engine.values(ids, owners, n, [target]))
        print(f"{f'batched {b}':<16}{(1 << n) / t:>10.1f}{t_naive / t:>10.2f}{mb:>10.0f}"
              f"{np.abs(v - v_naive).max():>12.1e}")


if __name__ == "__main__":
    main()
