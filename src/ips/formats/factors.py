"""The factors file of `ips factors`: its layout, and how the figures read it
(`read_factors`, `FactorsFile`, `TauRobustness`)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
import xarray as xr

from ips.formats.hdf5 import read_dataset
from ips.prompts.templates import ZERO_SHOT


class TauDifferences(NamedTuple):
    """Result of `tau_differences`: (τ, τ) matrices."""

    kendall: np.ndarray
    rmse: np.ndarray
    mad: np.ndarray


@dataclass(frozen=True)
class TauRobustness:
    """The τ robustness of one dataset as the factors file holds it (`tau_*`): the means
    over every two τ; Kendall, RMSE and MAD are NaN in a file written before they were."""

    dataset: str
    spearman: float
    pearson: float
    n_models: int
    note: str
    kendall: float = float("nan")
    rmse: float = float("nan")
    mad: float = float("nan")

    def text(self) -> str:
        if np.isnan(self.spearman) and np.isnan(self.pearson):
            return f"Spearman / Pearson: n/a ({self.n_models} model(s), need ≥ 3)"
        kendall = "" if np.isnan(self.kendall) else f", Kendall {self.kendall:.3f}"
        return (f"mean Spearman {self.spearman:.3f}, Pearson {self.pearson:.3f}{kendall} "
                f"({self.n_models} models)")


@dataclass(frozen=True)
class FactorsFile:
    """A factors file read once, cut the way its readers use it: the comparisons and summary
    rows of each factor, why a factor is absent, and the τ robustness per dataset."""

    path: Path
    ds: xr.Dataset
    notes: dict[str, str]  # every factor's `factor_note`, in file order
    absent: dict[str, str]  # factors without any comparison: why
    tau: dict[str, TauRobustness]  # by dataset

    @property
    def present(self) -> list[str]:
        return [f for f in self.notes if f not in self.absent]

    def comparisons(self, factor: str, group: str = ZERO_SHOT) -> xr.Dataset:
        """The `comparison` rows of `factor`: those on `group` (the 0-shot group unless
        given) for a model factor; for few-shot every k-shot group when `group` is the 0-shot
        group (their counterpart), else none."""
        return self._rows("comparison", factor, group)

    def summaries(self, factor: str, group: str = ZERO_SHOT) -> xr.Dataset:
        """The `summary` rows of `factor`, chosen like its comparisons."""
        return self._rows("summary", factor, group)

    def _rows(self, dim: str, factor: str, group: str) -> xr.Dataset:
        f = self.ds[f"{dim}_factor"].values.astype(str)
        g = self.ds[f"{dim}_group"].values.astype(str)
        rows = (f == factor) & ((g == group) if factor != "few_shot" else group == ZERO_SHOT)
        return self.ds.isel({dim: np.flatnonzero(rows)})


def read_factors(path: str | os.PathLike) -> FactorsFile:
    """Read a factors file of `ips factors`; a file that is not one is a one-line error."""
    path = Path(path)
    ds = read_dataset(path, "factors",
                      ("factor_present", "factor_note", "delta_ips_mean", "tau_spearman"),
                      "ips factors")
    notes = {str(f): str(t) for f, t in zip(ds["factor"].values, ds["factor_note"].values)}
    absent = {str(f): str(t).removeprefix("absent: ")
              for f, p, t in zip(ds["factor"].values, ds["factor_present"].values,
                                 ds["factor_note"].values) if not p}
    tau = {str(d): TauRobustness(str(d), float(ds["tau_spearman"].sel(dataset=d)),
                                 float(ds["tau_pearson"].sel(dataset=d)),
                                 int(ds["tau_n_models"].sel(dataset=d)),
                                 str(ds["tau_note"].sel(dataset=d).item()),
                                 **{k: float(ds[f"tau_{k}"].sel(dataset=d))
                                    for k in TauDifferences._fields if f"tau_{k}" in ds})
           for d in ds["dataset"].values}
    return FactorsFile(path, ds, notes, absent, tau)
