"""The values file: what `ips score` writes and `ips fit` reads.

Layout (HDF5; `values_dataset` builds it from scored samples, `write_values` writes it,
`read_values` reads it):

- `v`: float64, dims (sample, condition, mask). `v[s, c, m]` is v(x_S) for sample s under
  template condition c, where bit i of m is set when variable i is kept. A sample with
  n < n_max variables uses the first 2**n entries of the mask axis; the rest are NaN.
- `n_vars`: int, dims (sample,): the number of variables of each sample. May be omitted when
  every sample has the same n, the mask axis then has length 2**n and holds no NaN.
- `masks` (sparse sampling, `ips.interactions.sparse`): int64, dims (sample, mask): the bitmask of
each
  scored mask; a sample's design fills the first entries, −1 (and NaN in `v`) pad the rest.
  Without it the mask axis is the bitmask itself. Needs `n_vars`.
- `scored` (optional): bool, dims (sample, condition): whether the row was scored. A sample
  lacking a condition (a rewording its item does not have, `ips.prompts.samples`) has the row
  unscored: `v` is NaN there on every mask and the row's other arrays hold their fill (NaN,
  −1, 0, ""). Absent from the file: every row is scored (files written before it).
- `sample`, `condition`: optional 1-D labels, carried over to derived files.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from importlib.metadata import version as _version
from pathlib import Path

import h5py
import numpy as np
import xarray as xr

from ips import __version__
from ips.errors import InputError, reason
from ips.formats.hdf5 import READ_ERRORS, labels, reading, write_dataset

DIMS = ("sample", "condition", "mask")

# h5netcdf marks a dimension without coordinate values with this NAME attribute
_PURE_DIMENSION = b"This is a netCDF dimension but not a netCDF variable"


@dataclass
class Values:
    """The content of a values file, validated."""

    v: np.ndarray  # (sample, condition, mask) float64
    n_vars: np.ndarray  # (sample,) int64
    coords: dict[str, np.ndarray] = field(default_factory=dict)
    masks: np.ndarray | None = None  # (sample, mask) int64 bitmasks of a sparse design
    scored: np.ndarray | None = None  # (sample, condition) bool; None: every row scored

    def __post_init__(self):
        if self.scored is None:
            self.scored = np.ones(self.v.shape[:2], dtype=bool)

    def design(self, s: int) -> np.ndarray:
        """The bitmasks of sample s's scored masks, in the order of its entries of `v`."""
        if self.masks is None:
            return np.arange(1 << int(self.n_vars[s]), dtype=np.int64)
        return design_row(self.masks[s])


def design_row(masks: np.ndarray) -> np.ndarray:
    """The scored bitmasks of one sample's row of `masks` (−1 pads it), in the order of its
    entries of `v`."""
    return masks[masks >= 0]


def read_values(path: str | os.PathLike, n_max: int | None = None) -> Values:
    """Read and check a values file; raise `InputError` naming the file and dataset."""
    path = Path(path)
    v, n_vars, masks, scored, coords = _open_values(path)
    scored = check_scored(path, scored, v.shape[:2])
    if masks is not None:
        return _sparse_values(path, v, n_vars, masks, scored, coords, n_max)
    return _dense_values(path, v, n_vars, scored, coords, n_max)


def check_scored(path: Path, scored, shape: tuple[int, int]) -> np.ndarray:
    """The dataset `scored` of a file (None: every row scored) as a bool (sample, condition)
    array; `InputError` for another shape or dtype, or a sample without any scored row."""
    if scored is None:
        return np.ones(shape, dtype=bool)
    scored = np.asarray(scored)
    if scored.shape != shape or not (scored.dtype == bool
                                     or np.issubdtype(scored.dtype, np.integer)):
        raise InputError(f"{path}: dataset 'scored' has shape {scored.shape} and dtype "
                         f"{scored.dtype}, expected booleans of shape {shape} "
                         "(sample, condition of 'v')")
    scored = scored.astype(bool)
    bad = np.flatnonzero(~scored.any(axis=1))
    if bad.size:
        raise InputError(f"{path}: dataset 'scored': sample {bad[0]} has no scored condition")
    return scored


def _open_values(path: Path) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None,
                                      np.ndarray | None, dict]:
    """The arrays of a values file as stored: `v` (checked for rank, size and dtype),
    `n_vars`, `masks` and `scored` (None where absent) and the label coordinates."""
    try:
        f = h5py.File(path, "r")
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except READ_ERRORS as e:
        raise InputError(f"{path}: not a readable HDF5 file ({reason(e)})") from None
    with f:
        with reading(path, "dataset 'v'"):
            if "v" not in f or not isinstance(f["v"], h5py.Dataset):
                raise InputError(f"{path}: no dataset 'v'")
            v = f["v"]
            if v.ndim != 3:
                raise InputError(
                    f"{path}: dataset 'v' has rank {v.ndim} (shape {v.shape}), "
                    "expected 3 dims (sample, condition, mask)"
                )
            if 0 in v.shape:
                raise InputError(f"{path}: dataset 'v' is empty (shape {v.shape})")
            if not np.issubdtype(v.dtype, np.floating):
                raise InputError(f"{path}: dataset 'v' has dtype {v.dtype}, "
                                 "expected floating point")
            v = v[()].astype(np.float64, copy=False)
        with reading(path, "dataset 'n_vars'"):
            n_vars = f["n_vars"][()] if "n_vars" in f else None
        with reading(path, "dataset 'masks'"):
            masks = f["masks"][()] if "masks" in f else None
        with reading(path, "dataset 'scored'"):
            scored = f["scored"][()] if "scored" in f else None
        coords = {}
        for name, size in (("sample", v.shape[0]), ("condition", v.shape[1])):
            with reading(path, f"dataset {name!r}"):
                if _is_label(f, name, size):
                    coords[name] = _decode(f[name][()])

    return v, n_vars, masks, scored, coords


def _dense_values(path: Path, v: np.ndarray, n_vars, scored: np.ndarray, coords: dict,
                  n_max: int | None) -> Values:
    """`read_values` of a file without `masks` (every mask of each sample scored)."""
    width = v.shape[2]
    if width & (width - 1):
        raise InputError(
            f"{path}: dataset 'v' has mask axis of length {width}, not a power of two"
        )
    width_n = width.bit_length() - 1

    if n_vars is None:
        n_vars = np.full(v.shape[0], width_n, dtype=np.int64)
        dataset = "v"  # n comes from the mask axis
    else:
        n_vars = np.asarray(n_vars)
        if n_vars.shape != (v.shape[0],) or not np.issubdtype(n_vars.dtype, np.integer):
            raise InputError(
                f"{path}: dataset 'n_vars' has shape {n_vars.shape} and dtype {n_vars.dtype}, "
                f"expected integers of shape ({v.shape[0]},) (one per sample of 'v')"
            )
        n_vars = n_vars.astype(np.int64)
        dataset = "n_vars"
        bad = np.flatnonzero((n_vars < 1) | (n_vars > width_n))
        if bad.size:
            s = bad[0]
            raise InputError(
                f"{path}: dataset 'n_vars' of sample {s} is {n_vars[s]}, "
                f"expected 1..{width_n} (the mask axis of 'v' has length {width})"
            )

    if n_max is not None and n_vars.size and n_vars.max() > n_max:
        s = int(np.argmax(n_vars))
        raise InputError(
            f"{path}: dataset '{dataset}': sample {s} has n = {n_vars[s]} variables, "
            f"beyond --n-max {n_max}"
        )

    # every scored row's first 2**n entries must be finite (the rest is padding)
    used = np.arange(width) < (1 << n_vars)[:, None]  # (sample, mask)
    bad = ~np.isfinite(v) & used[:, None, :] & scored[:, :, None]
    if bad.any():
        s, c, m = (int(i[0]) for i in np.nonzero(bad))
        hint = "" if dataset == "n_vars" else " (NaN padding needs a dataset 'n_vars')"
        raise InputError(
            f"{path}: dataset 'v' has a non-finite value ({v[s, c, m]}) at sample {s}, "
            f"condition {c}, mask {m}, inside the sample's first 2**{n_vars[s]} entries{hint}"
        )
    return Values(v=v, n_vars=n_vars, coords=coords, scored=scored)


def _sparse_values(path: Path, v: np.ndarray, n_vars, masks, scored: np.ndarray, coords: dict,
                   n_max: int | None) -> Values:
    """`read_values` of a file with `masks` (a sparse design per sample)."""
    S, _, width = v.shape
    if n_vars is None:
        raise InputError(f"{path}: dataset 'masks' needs a dataset 'n_vars'")
    n_vars, masks = np.asarray(n_vars), np.asarray(masks)
    if n_vars.shape != (S,) or not np.issubdtype(n_vars.dtype, np.integer):
        raise InputError(f"{path}: dataset 'n_vars' has shape {n_vars.shape} and dtype "
                         f"{n_vars.dtype}, expected integers of shape ({S},)")
    if masks.shape != (S, width) or not np.issubdtype(masks.dtype, np.integer):
        raise InputError(f"{path}: dataset 'masks' has shape {masks.shape} and dtype "
                         f"{masks.dtype}, expected integers of shape ({S}, {width})")
    n_vars, masks = n_vars.astype(np.int64), masks.astype(np.int64)
    for s in range(S):
        n, m = int(n_vars[s]), masks[s]
        used = m >= 0
        count = int(used.sum())
        problem = None
        if not 1 <= n <= 62:
            problem = f"n_vars is {n}, expected 1..62"
        elif n_max is not None and n > n_max:
            problem = f"n = {n} variables, beyond --n-max {n_max}"
        elif not used[:count].all():
            problem = "its masks are not a prefix of the mask axis (-1 only at the end)"
        elif np.any(m[used] >= 1 << n) or len(np.unique(m[used])) != count:
            problem = f"its masks are not distinct bitmasks of 0..2**{n} - 1"
        elif not np.any(m[used] == 0):
            problem = "its design lacks the empty mask 0"
        elif not np.all(np.isfinite(v[s, scored[s], :count])):
            problem = "'v' is not finite on its design"
        if problem:
            raise InputError(f"{path}: dataset 'masks': sample {s}: {problem}")
    return Values(v=v, n_vars=n_vars, coords=coords, masks=masks, scored=scored)


def _is_label(f: h5py.File, name: str, size: int) -> bool:
    """Whether `name` is a 1-D dataset of `size` labels (not a bare netCDF dimension)."""
    d = f.get(name)
    return (
        isinstance(d, h5py.Dataset)
        and d.shape == (size,)
        and not bytes(d.attrs.get("NAME", b"")).startswith(_PURE_DIMENSION)
    )


def _decode(a: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "OS":
        return np.array([x.decode() if isinstance(x, bytes) else x for x in a], dtype=object)
    return a


def values_dataset(sample_set, samples, results, loaded, target: str, shard: int,
                   budget: int | None = None, designs=None, masking: str = "tokens"
                   ) -> xr.Dataset:
    """The values file of scored `samples`: v (sample, condition, mask) and what explains it
    (the layout above); `masking` as scored (`ips.scoring.engine.Engine`)."""
    coords = {
        "sample": labels(s.item.id for s in samples),
        "condition": labels(c.name for c in sample_set.conditions),
        "template": ("condition", labels(c.template for c in sample_set.conditions)),
        "shots": ("condition", np.array([c.shots for c in sample_set.conditions])),
        "perturbation": ("condition", labels(c.perturbation or "" for c in sample_set.conditions)),
    }
    data = {**_variable_arrays(sample_set, samples, results, budget, designs),
            **_prediction_arrays(sample_set, samples, results, loaded)}
    attrs = _provenance(sample_set, loaded, target, shard)
    attrs["sampling"] = "exhaustive" if budget is None else "sparse"
    attrs["masking"] = masking
    if budget is not None:
        attrs["budget"] = int(budget)
    return xr.Dataset(data, coords=coords, attrs=attrs)


def write_values(ds: xr.Dataset, path: str | os.PathLike) -> None:
    """Write a values file (`values_dataset`) to `path`, atomically and checksummed."""
    write_dataset(ds, path)


def _variable_arrays(sample_set, samples, results, budget: int | None = None, designs=None) -> dict:
    """v over the 2**n_max masks (NaN beyond a sample's 2**n), or with a `budget` over the
    design's masks (`masks`, −1 and NaN beyond each sample's design), which rows were scored
    (`scored`), and the variables: their text, field, character span and token count in
    every prompt (span −1 where the sample lacks the condition)."""
    n_vars = np.array([len(s.variables) for s in samples])
    # every shard of a dataset gets the same mask axis (2**n_max, or the largest design the
    # budget allows), so that shards concatenate
    n_max = max(int(n_vars.max()), sample_set.settings.get("n_max", 0))
    S, C = len(samples), len(sample_set.conditions)
    width = 1 << n_max if budget is None else min(budget, 1 << n_max)
    v = np.full((S, C, width), np.nan)
    spans = np.full((S, C, n_max, 2), -1, dtype=np.int64)
    var_tokens = np.zeros((S, C, n_max), dtype=np.int64)
    var_text = np.full((S, n_max), "", dtype=object)
    var_field = np.full((S, n_max), "", dtype=object)
    for i, (s, r) in enumerate(zip(samples, results)):
        n = n_vars[i]
        v[i, :, : r["v"].shape[1]] = r["v"]
        var_tokens[i, :, :n] = r["var_tokens"]
        for j, c in enumerate(sample_set.conditions):
            if c.name in s.prompts:
                spans[i, j, :n] = np.asarray(s.prompts[c.name].spans).reshape(n, 2)
        var_text[i, :n] = [x.text for x in s.variables]
        var_field[i, :n] = [x.field for x in s.variables]
    sc, scv = ("sample", "condition"), ("sample", "condition", "var")
    design = {}
    if budget is not None:
        masks = np.full((S, width), -1, dtype=np.int64)
        for i, d in enumerate(designs):
            d = np.arange(1 << n_vars[i]) if d is None else d
            masks[i, :len(d)] = d
        design = {"masks": (("sample", "mask"), masks)}
    return {
        "v": (sc + ("mask",), v),
        **design,
        "n_vars": (("sample",), n_vars),
        "scored": (sc, np.array([[c.name in s.prompts for c in sample_set.conditions]
                                 for s in samples], dtype=bool)),
        "variable": (("sample", "var"), var_text),
        "variable_field": (("sample", "var"), var_field),
        "span": (scv + ("bound",), spans),
        "var_tokens": (scv, var_tokens),
    }


def storable_text(text: str) -> str:
    """`text` as HDF5 can store it: a NUL (the decoded byte-level token 0x00, which a model
    may predict) written as the four characters \\x00."""
    return text.replace("\x00", "\\x00")


def _prediction_arrays(sample_set, samples, results, loaded) -> dict:
    """What the model predicts on the unmasked prompts: letter logits and option
    log-probabilities with the predictions they give, the greedy token, the scored target,
    the final hidden state, and the prompts themselves."""
    stack = lambda k: np.stack([r[k] for r in results])  # noqa: E731
    S, C = len(samples), len(sample_set.conditions)
    letter_logit, option_logp = stack("letter_logit"), stack("option_logp")
    target_ids = np.full((S, C, max(r["target_ids"].shape[1] for r in results)), -1)
    for i, r in enumerate(results):
        target_ids[i, :, : r["target_ids"].shape[1]] = r["target_ids"]
    sc = ("sample", "condition")
    mcq = sample_set.kind == "mcq"
    return {
        "gold": (("sample",), np.array([s.item.gold if mcq else -1 for s in samples])),
        # the prediction is the option letter with the highest logit (−1 without letters)
        "pred": (sc, best_option(letter_logit)),
        # the option whose text is most probable (what `target: choice_text` scores)
        "pred_text": (sc, best_option(option_logp)),
        "letter_logit": (sc + ("option",), letter_logit),
        "letter_token": (sc + ("option",), stack("letter_token")),
        "option_logp": (sc + ("option",), option_logp),
        "greedy_token": (sc, stack("greedy")),
        # "" for an unscored row (greedy −1)
        "greedy_text": (sc, np.vectorize(
            lambda t: storable_text(loaded.tokenizer.decode(t)) if t >= 0 else "",
            otypes=[object])(stack("greedy"))),
        "target_ids": (sc + ("target_pos",), target_ids),
        "target_form": (sc, stack("target_form").astype(object)),
        "n_tokens": (sc, stack("n_tokens")),
        "hidden": (sc + ("hidden_dim",), stack("hidden").astype(np.float32)),
        "prompt": (sc, np.array([[s.prompts[c.name].text if c.name in s.prompts else ""
                                  for c in sample_set.conditions]
                                 for s in samples], dtype=object)),
    }


def _provenance(sample_set, loaded, target: str, shard: int) -> dict:
    """The values file's attributes: the model, the dataset and settings, the versions."""
    import torch  # loaded by the scoring that calls this; not by `ips fit`, which reads the file

    from ips.models.attributes import recorded_attributes

    return {
        "model": loaded.spec.name,
        "model_attributes": json.dumps(recorded_attributes(loaded.spec, loaded.model)),
        "model_source": json.dumps(loaded.spec.source.to_dict()),
        "model_weights": "random" if loaded.spec.random_weights else "trained",
        "model_control": json.dumps(loaded.spec.control) if loaded.spec.control else "",
        "mask_token": loaded.mask_token,
        "mask_token_id": int(loaded.mask_token_id),
        "mask_source": loaded.mask_source,
        "dtype": str(loaded.dtype).removeprefix("torch."),
        "device": str(loaded.device),
        "dataset": sample_set.dataset,
        "kind": sample_set.kind,
        "shard": shard,
        "target": target,
        "groups": json.dumps(sample_set.groups),
        "shots_ids": json.dumps([i.id for i in sample_set.shots]),
        "settings": json.dumps(sample_set.settings),
        "skipped": json.dumps(sample_set.skipped),
        "ips_version": __version__,
        "torch_version": str(torch.__version__),
        "transformers_version": _version("transformers"),
    }


def best_option(scores: np.ndarray) -> np.ndarray:
    """Index of the best option per row, −1 where there are no scores (empty or NaN)."""
    if scores.shape[-1] == 0:
        return np.full(scores.shape[:-1], -1)
    best = np.nan_to_num(scores, nan=-np.inf).argmax(-1)
    return np.where(np.isnan(scores).all(-1), -1, best)
