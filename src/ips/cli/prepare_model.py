"""`ips prepare-model`."""

from __future__ import annotations

import argparse
import logging
import time

from ips.cli.arguments import add_model, mask_name, model_spec

log = logging.getLogger("ips")


def add_parser(sub, common) -> None:
    p = sub.add_parser(
        "prepare-model",
        parents=[common],
        help="resolve a configured model to a fast-loading directory (GGUF converted once)",
        description="Print the directory the model loads from; a GGUF is dequantised and saved "
        "as safetensors under the cache directory on the first call. With --mask, check another "
        "mask token of the mask null against the tokenizer instead and print it.",
    )
    add_model(p)
    p.add_argument("--mask", type=mask_name, metavar="OTHER",
                   help="check this other mask token (unk, pad, eos, bos, word:W, id:N) for the "
                   "model and print 'OTHER<TAB>ID<TAB>TOKEN' (docs/method.md#mask-null)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ips.config import load_config
    from ips.models.loading import load_tokenizer, model_mask, prepare_model

    spec = model_spec(args, load_config(args.config) if args.config else None)
    t0 = time.perf_counter()
    path = prepare_model(spec, cache_dir=args.cache_dir)
    log.info("model %s ready at %s (%.1f s)", args.model, path, time.perf_counter() - t0)
    if args.mask is None:
        print(path)
        return 0
    token_id, token, _ = model_mask(spec, load_tokenizer(spec, path), args.mask)
    log.info("model %s: mask %s is %r (id %d)", args.model, args.mask, token, token_id)
    print(f"{args.mask}\t{token_id}\t{token}")
    return 0
