"""The trie against the plain scorer on a model dispatched over devices by accelerate.

Run:  .venv/bin/python benchmarks/bench_dispatched.py [--threads 2] [--models M ...] [--ns N ...]

Side by side in one process, for SmolLM2-135M-Instruct (converted once to resources/models/),
the ARC-Easy T1 prompts of benchmarks/bench_trie.py (0 and 3 solved examples, n variables):
all 2**n masked evaluations of the model split by `accelerate.dispatch_model` over the CPU
and disk (the first half of its layers on the CPU, the second half and the output head
offloaded to disk: what a model too large for its GPUs does, on a machine without GPUs),
by the trie and by the plain scorer, in the order trie, plain, trie (the trie's time is the
lower of its two runs). Printed per case: tokens run, time, evaluations per second, the
peak resident memory above the model's, the CPU share (below 85 %: other processes slowed
the case, a warning says so), and max |Δv| against the undispatched model's plain v. Every
run ends with one line per case:
`dispatched <model> <k>-shot n=<n>: trie <ratio>x time, <ratio>x tokens, <ratio>x peak of plain`.
An offloaded layer's weights are read from disk at every forward, so the time here counts
forwards more than tokens; on GPUs (`benchmarks/gpu_check.py`, its dispatched case) the
weights stay on their devices.
"""

from __future__ import annotations

import argparse
import gc
import tempfile

import numpy as np
import torch

from common import finish, load_named, measure, prompt_case, start, warn_if_slowed
from ips.models.loading import input_device
from ips.scoring.engine import Engine
from ips.scoring.trie import TrieScorer, trie_budget


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-tokens", type=int, default=1024)
    parser.add_argument("--models", nargs="*", default=["smollm2-135m-instruct"])
    parser.add_argument("--ns", nargs="*", type=int, default=[8])
    parser.add_argument("--shots", nargs="*", type=int, default=[0, 3])
    parser.add_argument("--cache-dir", default="resources/models")
    return parser.parse_args()


def dispatch(model, offload: str):
    """`model` with its first half of layers on the CPU, the rest and the head on disk."""
    from accelerate import dispatch_model

    layers = model.config.get_text_config().num_hidden_layers
    device_map = {"model.embed_tokens": "cpu", "model.rotary_emb": "cpu", "model.norm": "cpu",
                  "lm_head": "disk"}
    device_map |= {f"model.layers.{i}": "cpu" if i < layers // 2 else "disk"
                   for i in range(layers)}
    return dispatch_model(model, device_map=device_map, offload_dir=offload, force_hooks=True)


def main() -> None:
    args = parse_args()
    run = start(args.threads, f"plain batch_tokens {args.batch_tokens}, trie budget "
                f"{trie_budget(args.batch_tokens)}; half the layers and the head on disk")
    summary = []
    for name in args.models:
        whole = load_named(name, args.cache_dir, args.threads)
        cases = {}
        for n in args.ns:
            for k in args.shots:
                _, ids, owners, target = prompt_case(whole.tokenizer, run.items, run.order,
                                                     run.templates, n, k)
                ref = Engine(whole.model, whole.baseline, args.batch_tokens).values(
                    ids, owners, n, target)
                cases[(n, k)] = (ids, owners, target, ref)
        mask_id = whole.mask_token_id
        with tempfile.TemporaryDirectory() as offload:
            model = dispatch(whole.model, offload)
            device = input_device(model)
            print(f"\nmodel {name} dispatched: "
                  f"{sorted({str(d) for d in model.hf_device_map.values()})}")
            print(f"{'case':<14}{'tokens':>7}{'scorer':>7}{'tokens run':>12}{'s':>8}"
                  f"{'evals/s':>9}{'peak MB':>9}{'cpu%':>6}{'max|dv|':>10}")
            for (n, k), (ids, owners, target, ref) in cases.items():
                label = f"{k}-shot n={n}"
                rows = {}
                for scorer in ("trie", "plain", "trie"):
                    if scorer == "trie":
                        tr = TrieScorer(model, mask_id, trie_budget(args.batch_tokens), device,
                                        check=False)
                        v, t, peak, cpu = measure(lambda tr=tr: tr.values(ids, owners, n,
                                                                             target))
                        tokens = tr.stats.tokens
                    else:
                        eng = Engine(model, mask_id, args.batch_tokens, device)
                        v, t, peak, cpu = measure(lambda e=eng: e.values(ids, owners, n, target))
                        tokens = (1 << n) * len(ids)
                    if scorer not in rows or t < rows[scorer][1]:
                        rows[scorer] = (v, t, tokens, peak, cpu)
                for scorer, (v, t, tokens, peak, cpu) in rows.items():
                    print(f"{label:<14}{len(ids):>7}{scorer:>7}{tokens:>12}{t:>8.2f}"
                          f"{(1 << n) / t:>9.1f}{peak:>9.0f}{100 * cpu:>6.0f}"
                          f"{float(np.abs(v - ref).max()):>10.1e}")
                    warn_if_slowed(cpu)
                tr_, pl = rows["trie"], rows["plain"]
                summary.append(f"dispatched {name} {label}: trie {tr_[1] / pl[1]:.2f}x time, "
                               f"{tr_[2] / pl[2]:.2f}x tokens, "
                               f"{tr_[3] / max(pl[3], 1.0):.2f}x peak of plain")
            del model
        del whole
        gc.collect()
    finish(run, summary)


if __name__ == "__main__":
    with torch.inference_mode():
        main()
