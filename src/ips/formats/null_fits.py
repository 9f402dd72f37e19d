"""The null-fits file of one (model, dataset): what `ips null-fits` writes
(`write_null_fits`) and `ips metrics --null-fits` reads (`read_null_fits`); the fits of every
perturbed game of the Gaussian and matched-size nulls (`ips.analysis.null_fits`).

Layout (one netCDF/HDF5 file, float64 throughout so that the scores equal those of fits made
in `ips metrics`):

| variable | dims | content |
|---|---|---|
| `gaussian_and`, `gaussian_or` | null_level, draw, sample, condition, mask | the fits of v + c·range(v)·ε |
| `matched_and`, `matched_or` | draw, pair_side, sample, pair, mask | the fits of each side of every pair plus its noise |
| `sigma` | sample, pair, pair_side | each side's noise size |
| `pair_n` | sample, pair | each pair's n (0: a game not scored) |
| `pair_conditions` | pair, end | the pair's condition indices |

Coordinates `sample` and `condition` are the values files' (merged in order); attributes
`draws`, `matched`, `seed` (the nulls' settings), `digest` (`ips.analysis.null_fits.digest`)
and `ips_version`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import xarray as xr

from ips import __version__
from ips.formats.hdf5 import decode_labels, labels, read_dataset, write_dataset


@dataclass(frozen=True)
class NullFits:
    """The fits of every perturbed game of one run (samples and conditions in the merged
    order of its shards), made with the nulls' settings ``levels``, ``draws``, ``matched``
    and ``seed`` (`ips.analysis.nulls.Settings`): ``gaussian_and``/``gaussian_or`` (level,
    draw, sample, condition, 2**n_max); ``matched_and``/``matched_or`` (draw, side, sample,
    pair, 2**n_max) of ``pairs`` (pair, 2: condition indices, every group's in group order),
    each side's noise size ``sigma`` (sample, pair, side) and the pairs' n ``pair_n``
    (sample, pair), empty along pair without the matched null. ``digest`` identifies the
    values and the fit they were made from (`ips.analysis.null_fits.digest`)."""

    levels: tuple[float, ...]
    draws: int
    matched: bool
    seed: int
    samples: np.ndarray
    conditions: np.ndarray
    pairs: np.ndarray
    gaussian_and: np.ndarray
    gaussian_or: np.ndarray
    matched_and: np.ndarray
    matched_or: np.ndarray
    sigma: np.ndarray
    pair_n: np.ndarray
    digest: str


VARIABLES = ("gaussian_and", "gaussian_or", "matched_and", "matched_or", "sigma", "pair_n",
             "pair_conditions")


def write_null_fits(fits: NullFits, path: str | os.PathLike) -> None:
    """Write ``fits`` atomically as the layout above."""
    game = ("null_level", "draw", "sample", "condition", "mask")
    side = ("draw", "pair_side", "sample", "pair", "mask")
    ds = xr.Dataset(
        {"gaussian_and": (game, fits.gaussian_and), "gaussian_or": (game, fits.gaussian_or),
         "matched_and": (side, fits.matched_and), "matched_or": (side, fits.matched_or),
         "sigma": (("sample", "pair", "pair_side"), fits.sigma),
         "pair_n": (("sample", "pair"), fits.pair_n.astype(np.int64)),
         "pair_conditions": (("pair", "end"), fits.pairs.astype(np.int64))},
        coords={"null_level": np.asarray(fits.levels, np.float64),
                "sample": labels(fits.samples), "condition": labels(fits.conditions)},
        attrs={"draws": int(fits.draws), "matched": int(fits.matched), "seed": int(fits.seed),
               "digest": fits.digest, "ips_version": __version__})
    write_dataset(ds, path)


def read_null_fits(path: str | os.PathLike) -> NullFits:
    """The fits of a file of `write_null_fits`; `InputError` naming it if it is not one."""
    ds = read_dataset(path, "null fits", VARIABLES, "ips null-fits")
    a = ds.attrs
    return NullFits(tuple(float(c) for c in ds["null_level"].values), int(a["draws"]),
                    bool(a["matched"]), int(a["seed"]), decode_labels(ds["sample"].values),
                    decode_labels(ds["condition"].values),
                    ds["pair_conditions"].values.astype(np.int64),
                    ds["gaussian_and"].values, ds["gaussian_or"].values,
                    ds["matched_and"].values, ds["matched_or"].values, ds["sigma"].values,
                    ds["pair_n"].values.astype(np.int64), str(a["digest"]))
