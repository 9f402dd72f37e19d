"""`ips prepare-model`."""

from __future__ import annotations

import argparse
import logging
import time

from ips.cli.arguments import _model_args, _model_spec

log = logging.getLogger("ips")


def _add_prepare_model(sub, common) -> None:
    p = sub.add_parser(
        "prepare-model",
        parents=[common],
        help="resolve a configured model to a fast-loading directory (GGUF converted once)",
        description="Print the directory the model loads from; a GGUF is dequantised and saved "
        "as safetensors under the cache directory on the first call.",
    )
    _model_args(p)
    p.set_defaults(func=_prepare_model)


def _prepare_model(args: argparse.Namespace) -> int:
    from ips.config import load_config
    from ips.models.loading import prepare_model

    spec = _model_spec(args, load_config(args.config) if args.config else None)
    t0 = time.perf_counter()
    path = prepare_model(spec, cache_dir=args.cache_dir)
    log.info("model %s ready at %s (%.1f s)", args.model, path, time.perf_counter() - t0)
    print(path)
    return 0
