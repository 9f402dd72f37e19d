"""Bootstrap uncertainty of IPS numbers (confidence intervals and paired tests).

Every IPS number of the project is a mean over samples (of a per-sample value, or a mean
over template pairs of per-pair means over samples). Its uncertainty comes from which items
were drawn, so it is estimated by resampling *samples* with replacement:

* **Resampling.** ``B`` bootstrap replicates; replicate ``b`` draws ``S`` sample indices
  uniformly with replacement, stored as a count matrix ``W`` of shape ``(B, S)``
  (``W[b, s]`` = how often sample ``s`` was drawn; a multinomial draw). The generator is
  ``numpy.random.default_rng(seed)``, so equal seeds, equal sample sets and equal ``B`` give
  identical replicates - for every model, because the workflow draws the same items (same
  ids) for every model.
* **Statistic.** ``x`` has shape ``(S, K, ...)`` with NaN where a sample has no value for
  column ``k``. A replicate's statistic is the mean over the K columns of the NaN-aware
  column means ``Σ_s W[b,s]·x[s,k] / Σ_s W[b,s]·[x[s,k] finite]`` (columns without any value
  in a replicate are left out of the mean). For K = 1 this is the mean over the valued
  samples, i.e. IPS from per-sample IPS; with K template pairs it is the mean over pairs of
  the per-pair means (the `pair_ips` average of the few-shot comparison and of Appendix G).
  Everything is computed with one matrix product per array, no Python loop per replicate.
* **Confidence interval.** Percentile bootstrap: the ``(1 − level)/2`` and
  ``(1 + level)/2`` quantiles of the replicate statistics (``level`` = 0.95 by default).
  The point estimate (all samples, W = 1) is reported next to it; should a percentile
  interval miss it (possible with very few samples), the interval is widened to include it,
  so that every reported interval contains its estimate.
* **Paired test** of two sides A and B measured on the same samples (same ids): both sides
  are resampled with the *same* W (pairing by sample id), giving replicates of
  ``ΔIPS* = (A* − B*)/B*``. Its CI is the percentile interval of ``ΔIPS*``; the two-sided
  p-value of H0: IPS_A = IPS_B is the bootstrap-CI inversion
  ``p = min(1, 2·min(#(A* − B* ≤ 0) + 1, #(A* − B* ≥ 0) + 1) / (B + 1))``, the smallest
  α at which the percentile interval of A − B excludes 0 (with the usual +1 correction,
  so p > 0 always). It refers to the plain percentile interval: with very few samples the
  reported (widened) ΔIPS interval may contain 0 while p is small.
* **Pairing** is by sample id: both sides are resampled with the same counts over the ids
  they share; each side's statistic averages its own valued samples among them (a sample
  without a valued pair on one side still counts on the other).

Defaults (module constants, used by `ips metrics` / `ips factors` / `ips figures`):
``N_BOOT = 2000`` replicates and ``LEVEL = 0.95``; the seed comes from the config's
``seed`` (``--seed``).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

N_BOOT: int = 2000
"""Bootstrap replicates of every interval and test."""
LEVEL: float = 0.95
"""Confidence level of every interval."""
BOUNDS: tuple[str, str] = ("low", "high")
"""Coordinate of the interval axis in the tables."""

__all__ = ["N_BOOT", "LEVEL", "BOUNDS", "resample_counts", "replicate_means",
           "point_mean", "bootstrap_ci", "PairedTest", "paired_test", "percentile_ci",
           "p_value"]


def resample_counts(n_samples: int, n_boot: int = N_BOOT, seed: int = 0) -> NDArray[np.float64]:
    """Bootstrap count matrix W (n_boot, n_samples): how often each sample is drawn."""
    if n_samples < 0 or n_boot < 1:
        raise ValueError(f"need n_samples >= 0 and n_boot >= 1; got {n_samples}, {n_boot}")
    rng = np.random.default_rng(seed)
    if n_samples == 0:
        return np.zeros((n_boot, 0))
    return rng.multinomial(n_samples, np.full(n_samples, 1.0 / n_samples),
                           size=n_boot).astype(np.float64)


def _columns(x: ArrayLike) -> tuple[NDArray[np.float64], tuple[int, ...]]:
    """x as (S, K, R): samples, columns averaged together, and the rest (kept)."""
    a = np.asarray(x, dtype=np.float64)
    if a.ndim == 1:
        a = a[:, None]
    rest = a.shape[2:]
    return a.reshape(a.shape[0], a.shape[1], -1), rest


def replicate_means(x: ArrayLike, counts: ArrayLike) -> NDArray[np.float64]:
    """Statistic of every replicate: shape (B,) + x.shape[2:].

    x: (S,) or (S, K, ...), NaN = no value; counts: (B, S) from :func:`resample_counts`.
    The statistic is the mean over K of the NaN-aware weighted column means (see module).
    """
    a, rest = _columns(x)
    w = np.asarray(counts, dtype=np.float64)
    if w.ndim != 2 or w.shape[1] != a.shape[0]:
        raise ValueError(f"counts must have shape (B, {a.shape[0]}); got {w.shape}")
    valid = np.isfinite(a)
    total = np.einsum("bs,skr->bkr", w, np.where(valid, a, 0.0))
    n = np.einsum("bs,skr->bkr", w, valid.astype(np.float64))
    with np.errstate(invalid="ignore", divide="ignore"):
        col = np.where(n > 0, total / np.where(n > 0, n, 1.0), np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a replicate without any value
        out = np.nanmean(col, axis=1)
    return out.reshape((w.shape[0],) + rest)


def point_mean(x: ArrayLike) -> NDArray[np.float64] | float:
    """The statistic on all samples (W = 1): shape x.shape[2:] (a float for 1-D/2-D x)."""
    a, rest = _columns(x)
    out = replicate_means(a, np.ones((1, a.shape[0])))[0].reshape(rest)
    return float(out) if out.ndim == 0 else out


def percentile_ci(replicates: ArrayLike, level: float = LEVEL,
                  estimate: ArrayLike | None = None) -> NDArray[np.float64]:
    """Percentile interval over axis 0; last axis (low, high). NaN replicates are ignored;
    NaN where fewer than two replicates have a value. With ``estimate`` the interval is
    widened to contain it."""
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1); got {level}")
    r = np.asarray(replicates, dtype=np.float64)
    q = [(1 - level) / 2, (1 + level) / 2]
    enough = np.isfinite(r).sum(axis=0) >= 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ci = np.moveaxis(np.nanquantile(r, q, axis=0), 0, -1)
    ci = np.where(enough[..., None], ci, np.nan)
    if estimate is not None:
        e = np.asarray(estimate, dtype=np.float64)[..., None]
        ok = np.isfinite(e) & np.isfinite(ci)
        ci = np.where(ok, np.stack([np.minimum(ci[..., 0:1], e)[..., 0],
                                    np.maximum(ci[..., 1:2], e)[..., 0]], axis=-1), ci)
    return ci


def bootstrap_ci(x: ArrayLike, n_boot: int = N_BOOT, level: float = LEVEL, seed: int = 0,
                 counts: ArrayLike | None = None) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(estimate, ci) of the mean statistic of x (see module); ci has a last axis (low, high).

    x: (S,) per-sample values or (S, K, ...) per-sample values of K columns averaged together.
    ``counts`` (B, S) reuses given replicates (e.g. shared between the two sides of a test).
    """
    a, rest = _columns(x)
    w = resample_counts(a.shape[0], n_boot, seed) if counts is None else np.asarray(counts)
    est = np.asarray(point_mean(a)).reshape(rest)
    reps = replicate_means(a, w).reshape((w.shape[0],) + rest)
    return est, percentile_ci(reps, level, est)


def p_value(diff_replicates: ArrayLike) -> NDArray[np.float64]:
    """Two-sided bootstrap p-value of H0: difference = 0 over axis 0 (CI inversion)."""
    d = np.asarray(diff_replicates, dtype=np.float64)
    ok = np.isfinite(d)
    n = ok.sum(axis=0)
    le = (ok & (d <= 0)).sum(axis=0)
    ge = (ok & (d >= 0)).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.minimum(1.0, 2.0 * (np.minimum(le, ge) + 1) / (n + 1))
    return np.where(n >= 2, p, np.nan)


@dataclass(frozen=True)
class PairedTest:
    """Result of :func:`paired_test`; array fields have shape x.shape[2:]."""

    ips_a: NDArray[np.float64]
    ips_b: NDArray[np.float64]
    ci_a: NDArray[np.float64]  # (..., 2)
    ci_b: NDArray[np.float64]
    delta: NDArray[np.float64]
    """(IPS_A − IPS_B)/IPS_B on all samples."""
    delta_ci: NDArray[np.float64]
    """Percentile interval of ΔIPS (..., 2)."""
    p_value: NDArray[np.float64]
    """Two-sided p-value of IPS_A = IPS_B."""
    n_samples: int
    """Rows resampled (samples)."""
    delta_replicates: NDArray[np.float64]
    """ΔIPS* of every replicate, shape (B,) + x.shape[2:] (to average over comparisons)."""
    diff_replicates: NDArray[np.float64]
    """A* − B* of every replicate."""


def paired_test(a: ArrayLike, b: ArrayLike, n_boot: int = N_BOOT, level: float = LEVEL,
                seed: int = 0, counts: ArrayLike | None = None) -> PairedTest:
    """Paired bootstrap of ΔIPS = (IPS_A − IPS_B)/IPS_B.

    a: (S, Ka, ...) and b: (S, Kb, ...) (or (S,)), row s of both belonging to the same sample
    id; the trailing axes (e.g. the order band) must agree. Both sides are resampled with the
    same count matrix (``counts`` or a fresh one from ``seed``).
    """
    xa, rest = _columns(a)
    xb, rest_b = _columns(b)
    if xa.shape[0] != xb.shape[0] or rest != rest_b:
        raise ValueError(f"a and b must have the same samples and trailing axes; got "
                         f"{np.shape(a)} and {np.shape(b)}")
    S = xa.shape[0]
    w = resample_counts(S, n_boot, seed) if counts is None else np.asarray(counts, float)
    est_a, est_b = (np.asarray(point_mean(x)).reshape(rest) for x in (xa, xb))
    ra = replicate_means(xa, w).reshape((w.shape[0],) + rest)
    rb = replicate_means(xb, w).reshape((w.shape[0],) + rest)
    with np.errstate(invalid="ignore", divide="ignore"):
        delta = np.where(est_b != 0, (est_a - est_b) / est_b, np.nan)
        rdelta = np.where(rb != 0, (ra - rb) / rb, np.nan)
    return PairedTest(
        ips_a=est_a, ips_b=est_b, ci_a=percentile_ci(ra, level, est_a),
        ci_b=percentile_ci(rb, level, est_b), delta=delta,
        delta_ci=percentile_ci(rdelta, level, delta), p_value=p_value(ra - rb), n_samples=S,
        delta_replicates=rdelta, diff_replicates=ra - rb,
    )
