"""`ips prepare-model`."""

from __future__ import annotations

import argparse
import logging
import time

from ips.cli.arguments import add_model, model_spec

log = logging.getLogger("ips")


def add_parser(sub, common) -> None:
    p = sub.add_parser(
        "prepare-model",
        parents=[common],
        help="resolve a configured model to a fast-loading directory (GGUF converted once)",
        description="Print the directory the model loads from; a GGUF is dequantised and saved "
        "as safetensors under the cache directory on the first call.",
    )
    add_model(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ips.config import load_config
    from ips.models.loading import prepare_model

    spec = model_spec(args, load_config(args.config) if args.config else None)
    t0 = time.perf_counter()
    path = prepare_model(spec, cache_dir=args.cache_dir)
    log.info("model %s ready at %s (%.1f s)", args.model, path, time.perf_counter() - t0)
    print(path)
    return 0
