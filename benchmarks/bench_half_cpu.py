"""Benchmark: what half precision costs on this CPU, one matmul of a model's MLP shape.

Run:  .venv/bin/python benchmarks/bench_half_cpu.py [--threads 1] [--repeats 20]

CPUs without native half-precision instructions emulate bfloat16 and float16 in PyTorch, so
the precision null (`nulls.precision` in the config: scoring again in a half precision) may cost a
little or a lot more than the float32 run. This prints the CPU's relevant flags and, for the
MLP up-projection of SmolLM2-135M (576 -> 1536) and Gemma 3 270M (640 -> 2048) on a batch of
256 token rows, the median time per matmul in each precision and its ratio to float32.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch

SHAPES = {"SmolLM2-135M": (576, 1536), "Gemma 3 270M": (640, 2048)}
FLAGS = ("avx2", "avx512f", "avx512_bf16", "avx512_fp16", "amx_bf16")
DTYPES = (torch.float32, torch.bfloat16, torch.float16)


def cpu_flags() -> list[str]:
    info = Path("/proc/cpuinfo")
    words = set(info.read_text().split()) if info.exists() else set()
    return [f for f in FLAGS if f in words]


def median_ms(a: torch.Tensor, b: torch.Tensor, repeats: int) -> float:
    a @ b  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--rows", type=int, default=256)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} thread(s), CPU flags: "
          f"{' '.join(cpu_flags()) or 'none of ' + ', '.join(FLAGS)}")
    gen = torch.Generator().manual_seed(0)
    for name, (k, m) in SHAPES.items():
        x = torch.randn(args.rows, k, generator=gen)
        w = torch.randn(k, m, generator=gen)
        base = None
        for dt in DTYPES:
            ms = median_ms(x.to(dt), w.to(dt), args.repeats)
            base = base or ms
            print(f"{name:14s} {args.rows}x{k} @ {k}x{m} {str(dt)[6:]:9s} {ms:9.2f} ms "
                  f"{ms / base:7.1f}x float32")


if __name__ == "__main__":
    main()
