"""YAML text read into plain data (configs, the schema, templates, the shipped data files),
by libyaml where PyYAML was built with it: about ten times faster than the pure-Python
parser on the schema, which every `ips` command and every Snakemake start reads."""

from __future__ import annotations

from typing import Any

import yaml

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the same safe subset of YAML


def load(text: str) -> Any:
    """`yaml.safe_load(text)`; a malformed text raises `yaml.YAMLError` as it does."""
    return yaml.load(text, Loader=_LOADER)
