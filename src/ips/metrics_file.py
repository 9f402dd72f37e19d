"""The metrics file of `ips metrics` (one per model and dataset) as the later steps read it.

`read_metrics` checks the attributes every reader relies on and returns an `Entry`: the
file's model, dataset and model attributes (`ips.config.MODEL_ATTRIBUTES`; `active_params`
defaults to `params`, as for a dense model) next to the dataset itself.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import xarray as xr

from ips.config import MODEL_ATTRIBUTES
from ips.errors import InputError
from ips.files import read_dataset


@dataclass
class Entry:
    """One metrics file."""

    path: Path
    model: str
    dataset: str
    attrs: dict  # model attributes
    ds: xr.Dataset



def read_metrics(path: str | os.PathLike) -> Entry:
    """Read one metrics file of `ips metrics`; `InputError` names the file."""
    path = Path(path)
    ds = read_dataset(path, "metrics", ("ips", "pair_ips", "ips_sweep"), "ips metrics")
    for name in ("model", "dataset", "model_attributes", "tau"):
        if name not in ds.attrs:
            raise InputError(f"{path}: attribute {name!r} is missing")
    try:
        attrs = json.loads(ds.attrs["model_attributes"])
    except json.JSONDecodeError as e:
        raise InputError(f"{path}: attribute 'model_attributes' is not JSON ({e})") from None
    missing = [k for k in MODEL_ATTRIBUTES[:5] if k not in attrs]
    if missing:
        raise InputError(f"{path}: model_attributes lacks {missing}")
    attrs = {k: attrs.get(k) for k in MODEL_ATTRIBUTES}
    for k in ("params", "active_params"):
        if attrs[k] is not None:
            attrs[k] = float(attrs[k])
    if attrs["active_params"] is None:
        attrs["active_params"] = attrs["params"]
    return Entry(path, str(ds.attrs["model"]), str(ds.attrs["dataset"]), attrs, ds)
