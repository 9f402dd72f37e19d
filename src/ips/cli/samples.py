"""`ips samples`."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from ips.cli.arguments import add_compute, add_masking, json_arg, occlusion
from ips.config import MODEL_CACHE
from ips.errors import InputError

log = logging.getLogger("ips")


def add_parser(sub, common) -> None:
    p = sub.add_parser(
        "samples",
        parents=[common],
        help="draw a dataset's items, select their variables, render every condition (JSON out)",
        description="Load the dataset, draw n_items items with variables, reduce an item with "
        "more than n_max units to n_max (variables.reduce), fix the few-shot examples and "
        "render each item under every template condition, keeping the character span of "
        "every variable. Model-independent, except that `reduce: occlusion` ranks units with "
        "the reference model (variables.reference_model).",
    )
    p.add_argument("--config", type=Path, help="workflow configuration, with --dataset")
    p.add_argument("--dataset", help="dataset name under `datasets` in the config")
    p.add_argument("--settings", type=json_arg, metavar="JSON",
                   help="the dataset's settings as JSON (what the workflow passes), instead of "
                   "--config/--dataset")
    g = p.add_argument_group("reference model of `reduce: occlusion`")
    g.add_argument("--reference-entry", type=json_arg, metavar="JSON",
                   help="its config entry as JSON, with --settings (--config has it)")
    g.add_argument("--cache-dir", type=Path, default=MODEL_CACHE,
                   help="where converted models are kept (default: %(default)s)")
    add_compute(g)
    add_masking(g)
    p.add_argument("--out", type=Path, required=True, metavar="OUT.json")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ips.config import check_settings, dataset_settings, load_config
    from ips.prompts.samples import prepare_samples, save_samples

    config = None
    if args.settings is not None:
        settings = check_settings(args.settings)
    elif args.config is None or args.dataset is None:
        raise InputError("give --config and --dataset, or --settings")
    else:
        config = load_config(args.config)
        settings = dataset_settings(config, args.dataset)
    sample_set = prepare_samples(settings, occlusion(args, settings, config))
    save_samples(sample_set, args.out)
    log.info("wrote %s: %d samples, %d conditions, skipped %s", args.out, len(sample_set.samples),
             len(sample_set.conditions), sample_set.skipped or "none")
    return 0
