"""The factors file of `ips factors`: its layout, how it is written (`write_factors`) and
how the figures read it (`read_factors`, `FactorsFile`, `TauRobustness`).

Output layout (netCDF/HDF5):

| variable | dims | content |
|---|---|---|
| `ips_a`, `ips_b`, `delta_ips` | comparison, band | the two IPS values and ΔIPS of each comparison |
| (coords) `comparison_factor`, `comparison_dataset`, `comparison_group`, `model_a`, `model_b`, `setting_a`, `setting_b`, `templates` | comparison | what was compared; `setting_*` is the condition group on each side, `templates` the template pairs of a few-shot comparison |
| `ips_a_ci`, `ips_b_ci` | comparison, band, bound | paired percentile-bootstrap intervals (bound `low`, `high`) of IPS_A and IPS_B |
| `delta_ips_ci`, `delta_ips_mde` | comparison, band (, bound) | the interval of ΔIPS that inverts the sign-flip test of `p_value` (it excludes 0 exactly when p < 1 − level; ±inf where n samples cannot reach that p), and the ΔIPS that test detects with 80 % power |
| `p_value` | comparison, band | two-sided paired sign-flip p-value of the per-sample differences A_s − B_s (see below) |
| `n_tested` | comparison, band | samples in that test (valued on both sides in that band) |
| `n_paired` | comparison | samples with a value on both sides (paired by sample id; band all) |
| `null_a`, `null_b`, `delta_null` | comparison, band | the matched-size null (`ips.analysis.nulls`) of the same groups / template pairs on each side, and (null_A − null_B)/null_B |
| `low_gap`, `low_gap_ci`, `low_gap_p`, `low_gap_n`, `low_gap_mde` | comparison (, bound) | max(ΔIPS^low − ΔIPS^mid, ΔIPS^low − ΔIPS^high) on the samples valued in the three bands on both sides (ΔIPS_s^b = (A_s^b − B_s^b)/mean B^b): below 0 when the factor lowers low-order IPS most (the paper's common mechanism, Section 4.3, Fig. 10); the two gaps' sign-flip tests, Bonferroni-combined (`ips.comparisons.low_band.gap_test`), their interval, n and mde |
| `control_low_gap`, `control_p_low_gap`, `control_p_low_gap_difference`, `n_control_low_gap`, `control_low_gap_difference` | comparison | the same on the two models' controls, and the same test on the per-sample differences of the two sides' gaps (trained − controls) |
| `excess`, `p_excess`, `n_excess`, `excess_mde` | comparison, band | mean over samples of (A_s − B_s) − (N^A_s − N^B_s), the IPS difference beyond the null's difference, its two-sided paired sign-flip p-value, the samples in it (NaN / 0 without per-sample nulls) and the excess that test detects with 80 % power |
| `control_delta_ips`, `control_p_value` | comparison, band | the same comparison between the two models' controls (`ips.controls`; controls are compared only with controls): its ΔIPS and sign-flip p (NaN without both controls) |
| `control_p`, `n_control`, `control_difference` | comparison, band | the two-sided sign-flip test of the per-sample (A_s − B_s) − (A'_s − B'_s), trained minus controls, on the samples valued in both, and its mean (`ips.comparisons.claims.controls` decides the factor's row by it) |
| `control_excess`, `control_p_excess`, `control_p_excess_difference`, `n_control_excess`, `control_excess_difference` | comparison, band | the same for the excess beyond the matched-size null: the controls' excess and its p, and the test of the per-sample difference of the two excesses |
| `control_delta_ips_draws`, `control_excess_draws`, `control_low_gap_draws` | comparison (, band), control_draw | the controls' ΔIPS, excess and low-band gap on each draw of them |
| `control_items_*`, `control_excess_items_*`, `control_low_gap_items_*` (`p`, `difference`, `se`, `df`, `mde`, `units`) | comparison (, band) | with two or more draws: the items × draws test (`ips.analysis.item_draw_test`) of the trained ΔIPS (of the per-sample means), excess and gap against the draws', over the samples all of them have: its two-sided p, trained − mean of the draws, its standard error, degrees of freedom, the difference a one-sided test detects with 80 % power, and the samples (NaN with fewer than two draws) |
| `delta_ips_mean` | summary, band | mean ΔIPS over the comparisons of one (factor, dataset, group) |
| `delta_ips_mean_ci` | summary, band, bound | the interval of the pooled relative change Σ_s Ā_s/Σ_s B̄_s − 1 (Ā_s, B̄_s: means over the row's comparisons) that inverts the test of `p_value_mean` |
| `p_value_mean`, `n_tested_mean` | summary, band | sign-flip p-value of the per-sample mean over the row's comparisons of A_s − B_s, and the samples valued in every one of them |
| `n_comparisons` | summary | how many comparisons that mean holds (those with a finite ΔIPS, band all) |
| (coords) `summary_factor`, `summary_dataset`, `summary_group` | summary | the key of each row |
| `factor_present`, `factor_note` | factor | whether a factor has any comparison, and why not (`absent: …`) |
| `tau_spearman`, `tau_pearson` | dataset | mean Spearman / Pearson correlation of the models' IPS (0-shot, band all) between every pair of sweep τ values (`ips.comparisons.robustness.tau_sweep`); NaN with < 3 models |
| `tau_spearman_matrix`, `tau_pearson_matrix` | dataset, tau, tau_b | the pairwise correlations |
| `tau_kendall`, `tau_rmse`, `tau_mad` | dataset | the same models' Kendall τ_b, root mean square difference and mean absolute difference of IPS between every pair of sweep τ values, averaged over the pairs (`tau_differences`; Appendix F.8.1, Table 2); Kendall NaN with < 3 models, the differences with none |
| `tau_kendall_matrix`, `tau_rmse_matrix`, `tau_mad_matrix` | dataset, tau, tau_b | the pairwise values |
| `tau_n_models`, `tau_note` | dataset | models used; why the correlation is NaN or which models were left out |

Attributes: `tau`, `metrics_files` (JSON), `absent` (JSON: factor → reason, for factors with
no comparison at all), `bootstrap` (JSON: method, n_boot, level, seed), `test` (JSON:
method, exact_max, draws, seed), `ips_version`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
import xarray as xr

from ips.formats.hdf5 import read_dataset, write_dataset
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
        """The `comparison` rows of `factor` on `group` (the 0-shot group unless given). A
        few-shot row belongs to the group its prompts without examples come from (its
        `setting_b`): the `{k}shot` groups to the 0-shot templates, the `perturbation-{k}shot`
        groups to the reworded prompts (Figs. 12d, 55)."""
        return self._rows("comparison", factor, group)

    def summaries(self, factor: str, group: str = ZERO_SHOT) -> xr.Dataset:
        """The `summary` rows of `factor`, chosen like its comparisons."""
        return self._rows("summary", factor, group)

    def _rows(self, dim: str, factor: str, group: str) -> xr.Dataset:
        f = self.ds[f"{dim}_factor"].values.astype(str)
        g = self.ds[f"{dim}_group"].values.astype(str)
        if factor == "few_shot":  # a model factor's rows share group names: keep them out
            few = self.ds["comparison_factor"].values.astype(str) == factor
            without = dict(zip(self.ds["comparison_group"].values[few].astype(str),
                               self.ds["setting_b"].values[few].astype(str)))
            g = np.array([without.get(x, x) for x in g])
        return self.ds.isel({dim: np.flatnonzero((f == factor) & (g == group))})


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


def write_factors(ds: xr.Dataset, path: str | os.PathLike) -> None:
    """Write the comparisons of `ips.comparisons.compare.compare` as the factors file `path`."""
    write_dataset(ds, path)
