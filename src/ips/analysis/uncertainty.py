"""Uncertainty of IPS numbers: bootstrap intervals and paired sign-flip tests.

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
* **Paired intervals** of two sides A and B measured on the same samples (same ids): both
  sides are resampled with the *same* W (pairing by sample id), giving replicates of
  ``ΔIPS* = (A* − B*)/B*``; its CI is the percentile interval of ``ΔIPS*``.
* **Pairing** is by sample id: both sides are resampled with the same counts over the ids
  they share; each side's statistic averages its own valued samples among them (a sample
  without a valued pair on one side still counts on the other).

Paired tests (p-values) are *not* bootstrapped: a percentile-bootstrap inversion gives
p-values that a handful of samples cannot support. They come from an exact or Monte Carlo
**paired sign-flip permutation test** (:func:`sign_flip_test`):

* **Hypothesis and statistic.** d_1 … d_m are the per-sample differences A_s − B_s of the
  samples valued on both sides (NaN entries are dropped, so m counts the finite ones).
  H0: the d_s are symmetric about 0 (exchangeable signs), which holds when A and B are
  the same measurement up to sample noise. Statistic ``T = |mean(d)|``; a sign vector
  ε ∈ {−1, +1}^m gives ``T*(ε) = |Σ ε_s d_s| / m``.
* **Exact** for m ≤ ``exact_max`` (16): all 2^m sign vectors (the identity included) are
  enumerated as one (2^m, m) matrix product, and
  ``p = #{ε : T*(ε) ≥ T − tol} / 2^m`` with ``tol = 1e-9·Σ|d_s|/m`` so that floating-point
  ties count as at least as extreme (ties are always counted, which is conservative).
  The smallest attainable p is 2/2^m: 0.25 for m = 3, 0.0625 for m = 5.
* **Monte Carlo** for m > ``exact_max``: B = ``draws`` sign vectors drawn uniformly (in
  chunks, from ``numpy.random.default_rng(seed)``), b of them with ``T* ≥ T − tol``, and
  ``p = (b + 1)/(B + 1)`` - a valid p-value (never 0) that counts the observed vector.
* **Zero differences** (d_s = 0) stay in m: they add nothing to any T*, so the exact p is
  the one without them, but they count as tested samples.
* **Multiplicity.** :func:`holm` adjusts a family of p-values (Holm's step-down):
  with the k finite p-values sorted, ``p̃_(i) = max_{j ≤ i} min(1, (k − j + 1)·p_(j))``.

Defaults (module constants, used by `ips metrics` / `ips factors` / `ips figures`):
``N_BOOT = 2000`` replicates and ``LEVEL = 0.95``; ``DRAWS = 9999`` Monte Carlo sign
vectors and ``EXACT_MAX = 16``; the seed comes from the config's ``seed`` (``--seed``) and
the draws from ``permutation.draws`` (``--permutations``). Intervals and tests resting on
fewer than ``MIN_RELIABLE_N = 10`` samples are flagged in the tables and figures.
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
DRAWS: int = 9999
"""Monte Carlo sign vectors of a sign-flip test with more than EXACT_MAX samples."""
EXACT_MAX: int = 16
"""Largest number of samples whose 2^m sign vectors are all enumerated."""
MIN_RELIABLE_N: int = 10
"""Intervals and tests from fewer samples are flagged as resting on few samples."""

__all__ = ["N_BOOT", "LEVEL", "BOUNDS", "DRAWS", "EXACT_MAX", "MIN_RELIABLE_N",
           "resample_counts", "replicate_means", "point_mean", "bootstrap_ci", "PairedTest",
           "paired_test", "percentile_ci", "SignFlipTest", "sign_flip_test", "sign_flip_label",
           "holm"]


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
    n_samples: int
    """Rows resampled (samples)."""
    delta_replicates: NDArray[np.float64]
    """ΔIPS* of every replicate, shape (B,) + x.shape[2:] (to average over comparisons)."""


def paired_test(a: ArrayLike, b: ArrayLike, n_boot: int = N_BOOT, level: float = LEVEL,
                seed: int = 0, counts: ArrayLike | None = None) -> PairedTest:
    """Paired bootstrap intervals of IPS_A, IPS_B and ΔIPS = (IPS_A − IPS_B)/IPS_B.

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
        delta_ci=percentile_ci(rdelta, level, delta), n_samples=S, delta_replicates=rdelta,
    )


@dataclass(frozen=True)
class SignFlipTest:
    """Result of :func:`sign_flip_test`."""

    p_value: float
    """Two-sided p-value of H0 "d is symmetric about 0"; NaN without any finite d."""
    n: int
    """Finite differences tested (m)."""
    mean_difference: float
    """mean(d) over them (NaN when n = 0)."""
    method: str
    """"exact" (all 2^n sign vectors), "monte carlo" (``draws`` random ones) or "none"."""
    draws: int
    """Sign vectors compared against: 2^n, the Monte Carlo draws, or 0."""


def sign_flip_label(n: int, exact_max: int = EXACT_MAX) -> str:
    """Short name of the test :func:`sign_flip_test` runs on n differences ("" for none)."""
    return "" if n < 1 else ("sign-flip exact" if n <= exact_max else "sign-flip MC")


def sign_flip_test(d: ArrayLike, draws: int = DRAWS, seed: int = 0,
                   exact_max: int = EXACT_MAX) -> SignFlipTest:
    """Two-sided paired sign-flip permutation test of the mean of the differences d.

    Statistic |mean(d)| over the finite entries (NaN entries are dropped); exact over all
    2^m sign vectors for m ≤ ``exact_max``, else ``draws`` uniform random sign vectors with
    p = (b + 1)/(draws + 1) (see the module docstring). Exact p-values do not depend on the
    order of d; Monte Carlo ones do through which sign meets which entry, so callers pass d
    in a fixed order (sorted sample ids).
    """
    if draws < 1 or exact_max < 0:
        raise ValueError(f"need draws >= 1 and exact_max >= 0; got {draws}, {exact_max}")
    x = np.asarray(d, dtype=np.float64).ravel()
    x = x[np.isfinite(x)]
    m = x.size
    if m == 0:
        return SignFlipTest(float("nan"), 0, float("nan"), "none", 0)
    observed = abs(float(x.mean()))
    # floating-point ties (e.g. the identity computed as a matrix product) count as extreme
    cut = observed - 1e-9 * float(np.abs(x).sum()) / m
    if m <= exact_max:
        codes = np.arange(1 << m, dtype=np.int64)[:, None] >> np.arange(m)
        signs = 1.0 - 2.0 * (codes & 1)
        hits = int(np.count_nonzero(np.abs(signs @ x) / m >= cut))
        return SignFlipTest(hits / (1 << m), m, float(x.mean()), "exact", 1 << m)
    rng = np.random.default_rng(seed)
    chunk = max(1, (1 << 22) // m)  # about 32 MiB of signs at a time
    hits, left = 0, int(draws)
    while left:
        k = min(chunk, left)
        signs = 1.0 - 2.0 * rng.integers(0, 2, size=(k, m))
        hits += int(np.count_nonzero(np.abs(signs @ x) / m >= cut))
        left -= k
    return SignFlipTest((hits + 1) / (draws + 1), m, float(x.mean()), "monte carlo",
                        int(draws))


def holm(p: ArrayLike) -> NDArray[np.float64]:
    """Holm step-down adjusted p-values of one family (same shape as p).

    With the k finite p-values sorted ascending, p̃_(i) = max_{j ≤ i} min(1, (k − j + 1)·p_(j));
    NaN entries are not part of the family and stay NaN. Rejecting p̃ ≤ α controls the
    family-wise error rate at α under any dependence between the tests.
    """
    a = np.asarray(p, dtype=np.float64)
    out = np.full(a.shape, np.nan)
    flat, res = a.ravel(), out.reshape(-1)
    idx = np.flatnonzero(np.isfinite(flat))
    if idx.size:
        order = idx[np.argsort(flat[idx], kind="stable")]
        k = order.size
        res[order] = np.minimum(1.0, np.maximum.accumulate((k - np.arange(k)) * flat[order]))
    return out
