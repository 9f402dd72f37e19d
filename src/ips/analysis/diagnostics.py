"""Diagnostics stored beside IPS by `ips.formats.metrics` (paper Section 4.1, Fig. 2, App. H).

* Output level (Section 4.1): :func:`output_consistency`, :func:`pair_consistency` and
  :func:`accuracy` of the (sample, condition) predictions; ``scored`` (sample, condition) leaves
  out the predictions of conditions a sample was not scored under (``ips.formats.values``).
* Hidden states (App. H): :func:`representation_baseline`, cosine and L2 distance of the final
  hidden states of a template pair.
* Sparsity (Fig. 2a): :func:`sparsity`, the sorted |Ĩ| of every row on relative ranks, from
  normalised interactions in the layout of :mod:`ips.analysis.metrics` (also on a `SetLayout`).
* Universal matching (Fig. 2b): :func:`matching_nrmse`, the error of the surrogate that keeps
  only the largest interactions (:func:`keep_top`, shares `KEEP`).
"""

from __future__ import annotations

import warnings

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ips.analysis.layout import check_pairs
from ips.analysis.metrics import all_pairs
from ips.interactions import reconstruct

__all__ = [
    "output_consistency",
    "pair_consistency",
    "accuracy",
    "representation_baseline",
    "SPARSITY_RANKS",
    "sparsity",
    "KEEP",
    "keep_top",
    "matching_nrmse",
]


# --------------------------------------------------------------------------------------------
# output-level metrics
# --------------------------------------------------------------------------------------------
def _check_pred(pred: ArrayLike, scored: ArrayLike | None) -> tuple[NDArray, NDArray[np.bool_]]:
    pr = np.asarray(pred)
    if pr.ndim != 2 or pr.shape[0] == 0 or pr.shape[1] == 0:
        raise ValueError(f"pred must have shape (sample, condition), non-empty; got {pr.shape}")
    ok = np.ones(pr.shape, bool) if scored is None else np.asarray(scored, bool)
    if ok.shape != pr.shape:
        raise ValueError(f"scored must have the shape of pred, {pr.shape}; got {ok.shape}")
    return pr, ok


def _share(hits: NDArray[np.bool_], ok: NDArray[np.bool_]) -> NDArray[np.float64]:
    """Mean of `hits` over the samples (axis 0) where `ok`; NaN where none is."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return (hits & ok).sum(axis=0) / np.where(ok.any(axis=0), ok.sum(axis=0), np.nan)


def output_consistency(pred: ArrayLike, scored: ArrayLike | None = None) -> float:
    """Share of samples whose prediction is the same under every condition (Section 4.1),
    over the samples scored under every condition (NaN if none is).

    ``pred``: (sample, condition) predictions.
    """
    pr, ok = _check_pred(pred, scored)
    return float(_share(np.all(pr == pr[:, :1], axis=1), ok.all(axis=1)))


def pair_consistency(pred: ArrayLike, pairs: ArrayLike | None = None,
                     scored: ArrayLike | None = None) -> NDArray[np.float64]:
    """Per condition pair (i, j): share of samples with ``pred[:, i] == pred[:, j]``, over the
    samples scored under both (NaN if none is).

    Returns shape (n_pairs,), aligned with ``pairs`` (default :func:`all_pairs`).
    """
    pr, ok = _check_pred(pred, scored)
    p = all_pairs(pr.shape[1]) if pairs is None else check_pairs(pairs, pr.shape[1])
    return _share(pr[:, p[:, 0]] == pr[:, p[:, 1]], ok[:, p[:, 0]] & ok[:, p[:, 1]])


def accuracy(pred: ArrayLike, gold: ArrayLike, scored: ArrayLike | None = None
             ) -> NDArray[np.float64]:
    """Accuracy per condition: mean over the samples scored under it of
    ``pred[s, c] == gold[s]``; shape (condition,)."""
    pr, ok = _check_pred(pred, scored)
    g = np.asarray(gold)
    if g.shape != (pr.shape[0],):
        raise ValueError(f"gold must have shape (sample,) = ({pr.shape[0]},); got {g.shape}")
    return _share(pr == g[:, None], ok)


# ----------------------------------------------- hidden states, sparsity, universal matching


def representation_baseline(hidden: np.ndarray, pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean over samples of cos(h_i, h_j) and ‖h_i − h_j‖₂ per pair (i, j), over the samples
    with both states (an unscored condition's state is NaN).

    hidden: (sample, condition, hidden); pairs: (n_pairs, 2) condition indices.
    """
    a = hidden[:, pairs[:, 0]]
    b = hidden[:, pairs[:, 1]]
    na, nb = np.linalg.norm(a, axis=-1), np.linalg.norm(b, axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = np.einsum("sph,sph->sp", a, b) / (na * nb)
    cos = np.where((na > 0) & (nb > 0), cos, np.nan)
    l2 = np.linalg.norm(a - b, axis=-1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a pair without any cosine: NaN
        return np.nanmean(cos, axis=0), np.nanmean(l2, axis=0)


SPARSITY_RANKS = np.round(np.linspace(0.0, 1.0, 101), 4)
"""Relative ranks (0 = largest) at which the sorted |Ĩ| curve is stored (Fig. 2a)."""
KEEP = (0.03, 0.05, 1.0)
"""Shares of the largest interactions kept in the universal-matching check (Fig. 2b)."""


def sparsity(norm: np.ndarray, tau: float,
             omega: np.ndarray | None = None) -> tuple[dict, np.ndarray]:
    """Sorted |Ĩ| of every (sample, condition), on relative ranks (paper Fig. 2a).

    Each row's 2·(2^n − 1) values of |Ĩ| over Ω, sorted in descending order, are read at
    the relative ranks `SPARSITY_RANKS` (linear interpolation; rank 0 is the largest, 1 the
    smallest), so rows with different n share one axis. Returns the data `sparsity_mean`,
    `sparsity_median` (rank) over all rows and `salient_share` (share of Ω above τ, mean over
    rows), and the share of every sample (mean over its conditions; NaN without a value).

    ``omega``: |Ω| of every sample when ``norm`` is on a `SetLayout` (its values are then Ω's
    nonzero ones and the rest of Ω is 0); by default a row's non-NaN values are all of Ω.
    """
    S, C = norm.shape[:2]
    flat = np.abs(norm.reshape(S * C, -1))
    finite = np.isfinite(flat)
    m = finite.sum(axis=1) if omega is None else np.repeat(np.asarray(omega, np.float64), C)
    # descending, NaN (no value) as 0: beyond a layout's columns Ω holds zeros
    vals = -np.sort(-np.where(finite, flat, 0.0), axis=1)
    curves = np.full((S * C, SPARSITY_RANKS.size), np.nan)
    share = np.full(S * C, np.nan)
    for size in np.unique(m[m > 0]).tolist():
        rows = np.flatnonzero(m == size)
        pos = SPARSITY_RANKS * (size - 1)
        lo = np.floor(pos).astype(np.int64)
        hi = np.minimum(lo + 1, size - 1).astype(np.int64)
        frac = pos - lo
        sorted_rows = vals[rows]
        curves[rows] = _ranked(sorted_rows, lo) * (1 - frac) + _ranked(sorted_rows, hi) * frac
        share[rows] = (sorted_rows > tau).sum(axis=1) / size
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return {
            "sparsity_mean": (("rank",), np.nanmean(curves, axis=0)),
            "sparsity_median": (("rank",), np.nanmedian(curves, axis=0)),
            "salient_share": ((), float(np.nanmean(share)) if np.isfinite(share).any()
                              else float("nan")),
        }, np.nanmean(share.reshape(S, C), axis=1)


def _ranked(vals: np.ndarray, i: np.ndarray) -> np.ndarray:
    """Column i of rows sorted in descending order, 0 beyond their stored columns."""
    return np.where(i < vals.shape[1], vals[:, np.minimum(i, vals.shape[1] - 1)], 0.0)


def keep_top(and_: np.ndarray, or_: np.ndarray, share: float) -> tuple[np.ndarray, np.ndarray]:
    """Zero all but the ⌈share·|Ω|⌉ (at least 1) largest |I| of Ω per row; I_AND(∅) stays.

    and_, or_: (..., 2**n) of one n (no padding)."""
    size = and_.shape[-1]
    omega = np.concatenate([and_[..., 1:], or_[..., 1:]], axis=-1)
    k = max(1, int(np.ceil(share * omega.shape[-1] - 1e-9)))
    rank = np.argsort(np.argsort(-np.abs(omega), axis=-1, kind="stable"), axis=-1)
    kept = np.where(rank < k, omega, 0.0)
    a = np.concatenate([and_[..., :1], kept[..., : size - 1]], axis=-1)
    o = np.concatenate([np.zeros_like(or_[..., :1]), kept[..., size - 1:]], axis=-1)
    return a, o


def matching_nrmse(v: np.ndarray, and_: np.ndarray, or_: np.ndarray,
                   n_vars: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Universal matching with only the largest interactions (paper Fig. 2b), per `KEEP`.

    For every (sample, condition): v̂_k = the surrogate φ of Eq. (2) keeping I_AND(∅) and the
    ⌈k·|Ω|⌉ interactions of largest |I|; error = RMS over the 2^n masks of v̂_k − v divided by
    the range max v − min v of the row (0 if v is constant; NaN for a row not scored, whose v
    is NaN). Returns the mean error per k over the rows with one, and per sample (sample, k:
    mean over its conditions; NaN for n = 0).

    v, and_, or_: (sample, condition, 2**n_max), NaN-padded; n_vars: (sample,). (Sparse fits:
    ``ips.analysis.sparse_metrics.keep_top`` on their design's masks.)
    """
    S, C = v.shape[:2]
    errs = np.full((S, C, len(KEEP)), np.nan)
    for n in np.unique(n_vars).tolist():
        if n < 1:
            continue
        idx = np.flatnonzero(n_vars == n)
        size = 1 << n
        vs = v[idx, :, :size]
        rng = np.ptp(vs, axis=-1)
        for j, share in enumerate(KEEP):
            a, o = keep_top(and_[idx, :, :size], or_[idx, :, :size], share)
            rms = np.sqrt(np.mean((reconstruct(a, o) - vs) ** 2, axis=-1))
            errs[idx, :, j] = np.where(rng > 0, rms / np.where(rng > 0, rng, 1.0),
                                       np.where(np.isnan(rng), np.nan, 0.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # no sample with n >= 1: NaN
        return np.nanmean(errs, axis=(0, 1)), np.nanmean(errs, axis=1)
