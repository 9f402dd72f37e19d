"""`ips prepare-model`."""

from __future__ import annotations

import argparse
import logging
import time

from ips.cli.arguments import add_baseline, add_model, json_arg, model_spec
from ips.errors import InputError

log = logging.getLogger("ips")


def add_parser(sub, common) -> None:
    p = sub.add_parser(
        "prepare-model",
        parents=[common],
        help="resolve a configured model to a fast-loading directory (GGUF converted once)",
        description="Print the directory the model loads from; a GGUF is dequantised and saved "
        "as safetensors under the cache directory on the first call, and a model with re-drawn "
        "weights (source redraw) is built from its original's directory. With --baseline, check "
        "another baseline against the tokenizer instead and print it.",
    )
    add_model(p)
    p.add_argument("--original-entry", type=json_arg, metavar="JSON",
                   help="with --entry of a redraw source: the config entry of the model it re-draws "
                   "(with --config it is taken from the config)")
    add_baseline(p, "check this other baseline for the model and print "
                 "'SETTING<TAB>ID<TAB>TOKEN' (ID -1: no single token)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ips.config import load_config
    from ips.models.loading import (
        embedding_rows,
        load_tokenizer,
        model_baseline,
        prepare_model,
    )

    config = load_config(args.config) if args.config else None
    spec = model_spec(args, config)
    t0 = time.perf_counter()
    if spec.source.kind == "redraw":
        path = _prepare_redrawn(args, spec, config)
    elif args.original_entry is not None:
        raise InputError(f"--original-entry: model {args.model} has no redraw source; "
                         "leave it out")
    else:
        path = prepare_model(spec, cache_dir=args.cache_dir)
    log.info("model %s ready at %s (%.1f s)", args.model, path, time.perf_counter() - t0)
    if args.baseline is None:
        print(path)
        return 0
    other = model_baseline(spec, load_tokenizer(spec, path), args.baseline, embedding_rows(path))
    log.info("model %s: baseline %s is %r (id %d)", args.model, args.baseline, other.token,
             other.recorded_id)
    print(f"{args.baseline}\t{other.recorded_id}\t{other.token}")
    return 0


def _prepare_redrawn(args: argparse.Namespace, spec, config: dict | None):
    """Prepare the model a redraw source names (at once when it is) and build the re-drawn
    one from it (at once when it is built); the original's entry is --original-entry's, else
    the config's."""
    from ips.models.entries import ModelSpec
    from ips.models.loading import prepare_model
    from ips.models.redraw import prepare_redrawn

    name = spec.source.redraw
    entry = args.original_entry
    if entry is None and config is not None:
        entry = config["models"].get(name)
    if entry is None:
        raise InputError(f"--original-entry: model {args.model} re-draws {name!r}: give "
                         f"{name!r}'s config entry as JSON (or --config holding both)")
    original = ModelSpec.from_config(name, entry)
    if original.source.kind == "redraw":
        raise InputError(f"--original-entry: {name!r} is itself re-drawn; give the entry of "
                         "the model it re-draws")
    t0 = time.perf_counter()
    original_dir = prepare_model(original, cache_dir=args.cache_dir)
    log.info("original %s ready at %s (%.1f s)", name, original_dir, time.perf_counter() - t0)
    return prepare_redrawn(spec, original_dir, args.cache_dir)
