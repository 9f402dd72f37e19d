"""Tau robustness: rank and linear agreement (`tau_sweep`) and the Kendall, RMSE and
MAD differences (`tau_differences`) of the models' IPS across tau."""

from __future__ import annotations

import logging
import warnings
from typing import NamedTuple

import numpy as np
import scipy.stats
from numpy.typing import ArrayLike, NDArray

from ips.analysis.layout import as_float
from ips.comparisons.factors import entry_groups
from ips.errors import InputError
from ips.formats.factors import TauDifferences
from ips.formats.hdf5 import labels
from ips.formats.metrics import Entry
from ips.prompts.templates import ZERO_SHOT

log = logging.getLogger(__name__)


ROBUSTNESS_GROUP = ZERO_SHOT


def tau_differences(x: np.ndarray) -> TauDifferences:
    """Kendall τ_b, RMSE and mean absolute difference of the models' IPS between every two τ
    (Appendix F.8.1, Table 2; Spearman and Pearson are `ips.comparisons.robustness.tau_sweep`).

    x: (model, τ), finite. For the columns i, j: Kendall τ_b of x[:, i] and x[:, j]
    (`scipy.stats.kendalltau`, ties corrected), RMSE_ij = sqrt(mean_m (x_mi − x_mj)²) and
    MAD_ij = mean_m |x_mi − x_mj|; the diagonal is 1, 0, 0. Kendall is NaN with fewer than 3
    models (as the correlations of `tau_sweep`) and where a column ties every model; RMSE and
    MAD are NaN only without any model."""
    n_model, n_tau = x.shape
    kendall = np.eye(n_tau)
    diff = x[:, :, None] - x[:, None, :]  # (model, τ, τ)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # no model: NaN, reported as such
        rmse = np.sqrt(np.mean(diff ** 2, axis=0))
        mad = np.mean(np.abs(diff), axis=0)
        for i, j in zip(*np.triu_indices(n_tau, k=1)):
            k = (scipy.stats.kendalltau(x[:, i], x[:, j]).statistic if n_model >= 3
                 else np.nan)
            kendall[i, j] = kendall[j, i] = k
    return TauDifferences(kendall, rmse, mad)


def _pair_mean(matrix: np.ndarray) -> float:
    """Mean over the pairs i < j of a (τ, τ) matrix (NaN if any pair is NaN, or none)."""
    i, j = np.triu_indices(matrix.shape[0], k=1)
    return float(np.mean(matrix[i, j])) if i.size else float("nan")


class _Robustness(NamedTuple):
    """τ robustness of one dataset."""

    sweep: TauSweep  # rank and linear agreement of the models' IPS across τ
    differences: TauDifferences  # Kendall, RMSE and MAD between every two τ
    n_models: int  # models with IPS at every τ (the rows of the sweep)
    note: str  # models left out and why; "" if none
    taus: np.ndarray  # the τ values of the sweep


def _robustness(dataset: str, entries: list[Entry]) -> _Robustness:
    """τ robustness of one dataset from the `ips_sweep` of its models' ROBUSTNESS_GROUP."""
    taus = None
    rows, left = [], []
    for e in entries:
        t = e.ds["tau"].values.astype(float)
        if taus is None:
            taus, first = t, e.path
        elif t.shape != taus.shape or not np.allclose(t, taus):
            raise InputError(f"{e.path}: τ sweep {t.tolist()} differs from {taus.tolist()} of "
                             f"{first}; run `ips metrics` with one --tau-sweep for all models")
        if ROBUSTNESS_GROUP not in entry_groups(e):
            left.append(f"{e.model} (no {ROBUSTNESS_GROUP} group)")
            continue
        row = e.ds["ips_sweep"].sel(group=ROBUSTNESS_GROUP).values.astype(float)
        if not np.all(np.isfinite(row)):
            left.append(f"{e.model} (no IPS at some τ)")
            continue
        rows.append(row)
    notes = []
    if left:
        notes.append("left out: " + ", ".join(left))
    if len(rows) < 3:
        notes.append(f"{len(rows)} model(s) with IPS at every τ; correlations need at least 3")
    x = np.array(rows).reshape(len(rows), taus.size)
    return _Robustness(tau_sweep(x), tau_differences(x), len(rows), "; ".join(notes),
                       taus)


def robustness_variables(datasets: list[str], by_dataset: dict[str, list[Entry]]):
    """τ robustness per dataset (`_robustness`); every dataset must share one τ sweep."""
    rob = [_robustness(d, by_dataset[d]) for d in datasets]
    taus = rob[0].taus
    for d, r in zip(datasets, rob):
        if r.taus.shape != taus.shape or not np.allclose(r.taus, taus):
            raise InputError(f"dataset {d}: τ sweep {r.taus.tolist()} differs from "
                             f"{taus.tolist()} of dataset {datasets[0]}")
        if r.note:
            log.info("tau robustness of %s: %s", d, r.note)
    data = {
        "tau_spearman": (("dataset",), np.array([r.sweep.spearman for r in rob], float)),
        "tau_pearson": (("dataset",), np.array([r.sweep.pearson for r in rob], float)),
        "tau_spearman_matrix": (("dataset", "tau", "tau_b"),
                                np.array([r.sweep.spearman_matrix for r in rob], float)),
        "tau_pearson_matrix": (("dataset", "tau", "tau_b"),
                               np.array([r.sweep.pearson_matrix for r in rob], float)),
        **{f"tau_{k}": (("dataset",), np.array([_pair_mean(getattr(r.differences, k))
                                                 for r in rob], float))
           for k in TauDifferences._fields},
        **{f"tau_{k}_matrix": (("dataset", "tau", "tau_b"),
                               np.array([getattr(r.differences, k) for r in rob], float))
           for k in TauDifferences._fields},
        "tau_n_models": (("dataset",), np.array([r.n_models for r in rob], np.int64)),
        "tau_note": (("dataset",), labels(r.note for r in rob)),
    }
    return data, {"tau": taus, "tau_b": ("tau_b", taus)}


class TauSweep(NamedTuple):
    """Result of :func:`tau_sweep`."""

    spearman: float
    """Mean Spearman ρ over all pairs of τ values (NaN if undefined)."""
    pearson: float
    """Mean Pearson r over all pairs of τ values (NaN if undefined)."""
    spearman_matrix: NDArray[np.float64]
    """(τ, τ) matrix of Spearman ρ between the models' IPS vectors."""
    pearson_matrix: NDArray[np.float64]


def tau_sweep(ips_by_model_tau: ArrayLike) -> TauSweep:
    """Robustness of the model ranking to τ (Section 4.1, Appendix F.8.1).

    For every pair of τ columns (τ_i, τ_j), i < j, of ``ips_by_model_tau`` (shape
    (model, τ)), the Spearman rank correlation and the Pearson correlation of the two vectors
    of model IPS values are computed (``scipy.stats``); both are averaged over the
    τ(τ−1)/2 pairs (the paper reports 0.9905 / 0.9957 for 50 models, 16 τ).

    With fewer than 3 models the correlations are meaningless (two points are always
    perfectly correlated), so everything is NaN; likewise with fewer than 2 τ values.  A τ
    column in which all models tie has no defined correlation; its pairs are NaN and so is
    the mean (nothing is silently dropped).
    """
    x = as_float(ips_by_model_tau, "ips_by_model_tau")
    if x.ndim != 2:
        raise ValueError(f"ips_by_model_tau must have shape (model, tau); got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("ips_by_model_tau must be finite (a model without IPS has no rank)")
    n_model, n_tau = x.shape
    nan_mat = np.full((n_tau, n_tau), np.nan)
    if n_model < 3 or n_tau < 2:
        return TauSweep(float("nan"), float("nan"), nan_mat, nan_mat.copy())
    i, j = np.triu_indices(n_tau, k=1)
    ranks = scipy.stats.rankdata(x, axis=0)  # Spearman ρ = Pearson r of (average) ranks
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # constant input → NaN, reported as such
        rho = np.atleast_1d(scipy.stats.pearsonr(ranks[:, i], ranks[:, j], axis=0).statistic)
        r = np.atleast_1d(scipy.stats.pearsonr(x[:, i], x[:, j], axis=0).statistic)
    s_mat, p_mat = np.eye(n_tau), np.eye(n_tau)
    s_mat[i, j] = s_mat[j, i] = rho
    p_mat[i, j] = p_mat[j, i] = r
    return TauSweep(float(np.mean(rho)), float(np.mean(r)), s_mat, p_mat)
