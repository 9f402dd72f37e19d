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
* **Several control draws.** Where a number is compared with K ≥ 2 independent draws of a
  control (twins with weights drawn from K seeds), the unit is the draw, not the sample:
  :func:`prediction_test` asks whether the number lies outside the draws' prediction
  interval, exact when the draws and the number are exchangeable normal draws.
* **Multiplicity.** :func:`holm` adjusts a family of p-values (Holm's step-down):
  with the k finite p-values sorted, ``p̃_(i) = max_{j ≤ i} min(1, (k − j + 1)·p_(j))``.

Defaults (module constants, used by `ips metrics` / `ips factors` / `ips figures`):
``N_BOOT = 2000`` replicates and ``LEVEL = 0.95``; ``DRAWS = 9999`` Monte Carlo sign
vectors and ``EXACT_MAX = 16``; the seed comes from the config's ``seed`` (``--seed``) and
the draws from ``permutation.draws`` (``--permutations``). Intervals and tests resting on
fewer than ``MIN_RELIABLE_N = 10`` samples are flagged in the tables and figures.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from functools import cache

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
           "SignFlipInterval", "sign_flip_interval", "swap_test", "POWER", "sign_flip_mde",
           "sign_flip_mde_of", "PredictionTest", "prediction_test", "one_sided",
           "holm", "benjamini_hochberg"]


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
        delta_ci=percentile_ci(rdelta, level, delta), n_samples=S,
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
        signs = _all_signs(m)
        hits = int(np.count_nonzero(np.abs(signs @ x) / m >= cut))
        return SignFlipTest(hits / (1 << m), m, float(x.mean()), "exact", 1 << m)
    hits = sum(int(np.count_nonzero(np.abs(signs @ x) / m >= cut))
               for signs in _random_signs(m, draws, seed))
    return SignFlipTest((hits + 1) / (draws + 1), m, float(x.mean()), "monte carlo",
                        int(draws))


def _random_signs(m: int, draws: int, seed: int):
    """The Monte Carlo sign vectors of :func:`sign_flip_test`, in chunks of about 32 MiB."""
    rng = np.random.default_rng(seed)
    chunk = max(1, (1 << 22) // m)
    left = int(draws)
    while left:
        k = min(chunk, left)
        yield 1.0 - 2.0 * rng.integers(0, 2, size=(k, m))
        left -= k


@dataclass(frozen=True)
class SignFlipInterval:
    """Result of :func:`sign_flip_interval`."""

    low: float
    high: float
    """The interval's bounds (±inf where the test cannot reject at this n; NaN without data)."""
    n: int
    """Samples tested (finite y and w)."""
    p_zero: float
    """:func:`sign_flip_test`'s p of θ = 0, which the interval excludes exactly when p_zero < α."""
    method: str
    """The test's method ("exact", "monte carlo" or "none", as :class:`SignFlipTest`)."""


def sign_flip_interval(y: ArrayLike, w: ArrayLike | None = None, level: float = LEVEL,
                       draws: int = DRAWS, seed: int = 0,
                       exact_max: int = EXACT_MAX) -> SignFlipInterval:
    """The interval of θ that inverts the paired sign-flip test: all θ whose differences
    d_s(θ) = y_s − θ·w_s it does not reject at α = 1 − ``level``.

    With w = 1, θ is a shift of the mean (the interval of mean(y)); with w_s = B_s > 0 and
    y_s = A_s − B_s, θ is the relative change ΔIPS = ΣA/ΣB − 1 (H0 of θ: A_s − (1+θ)·B_s is
    symmetric about 0). At θ = 0 the test is :func:`sign_flip_test` on y with the same sign
    vectors, so the interval excludes 0 exactly when that p is below α.

    Closed form: a sign vector ε splits the samples into the flipped F and the kept K, and
    counts as extreme at θ iff |Σ ε_s d_s(θ)| ≥ |Σ d_s(θ)|, i.e. iff
    (Σ_F d_s(θ))·(Σ_K d_s(θ)) ≤ 0, i.e. iff θ lies between r_F = Σ_F y/Σ_F w and
    r_K = Σ_K y/Σ_K w (ε = ±1: always). Every such interval contains θ̂ = Σy/Σw, so
    p(θ) falls monotonically on either side of θ̂, and the bounds are order statistics: with
    c the count of extreme vectors that p ≥ α needs (⌈α·2^m⌉ exact, ⌈α(B+1)⌉ − 1 of the B
    Monte Carlo vectors), low is the c-th smallest min(r_F, r_K) and high the c-th largest
    max(r_F, r_K); c ≤ the always-extreme vectors makes the interval unbounded.
    """
    yv = np.asarray(y, dtype=np.float64).ravel()
    wv = np.ones_like(yv) if w is None else np.asarray(w, dtype=np.float64).ravel()
    keep = np.isfinite(yv) & np.isfinite(wv)
    yv, wv = yv[keep], wv[keep]
    m = yv.size
    test = sign_flip_test(yv, draws, seed, exact_max)
    p0 = test.p_value
    if m == 0 or np.any(wv <= 0):
        return SignFlipInterval(math.nan, math.nan, m, p0, test.method)
    alpha = round(1.0 - level, 12)  # 1 − 0.95 is 0.05000000000000004 in floating point
    exact = m <= exact_max
    chunks = [_all_signs(m)] if exact else _random_signs(m, draws, seed)
    lows, highs = [], []
    for signs in chunks:
        flipped = signs < 0
        yf, wf = flipped @ yv, flipped @ wv
        with np.errstate(invalid="ignore", divide="ignore"):
            r_f, r_k = yf / wf, (yv.sum() - yf) / (wv.sum() - wf)
        lo, hi = np.minimum(r_f, r_k), np.maximum(r_f, r_k)
        either = flipped.all(1) | ~flipped.any(1)  # ε = ±1: extreme at every θ
        lows.append(np.where(either, -np.inf, lo))
        highs.append(np.where(either, np.inf, hi))
    lo_all, hi_all = np.concatenate(lows), np.concatenate(highs)
    # floating-point slack as in the test: a count c that α·K meets up to rounding suffices
    c = (math.ceil(alpha * lo_all.size - 1e-9) if exact
         else math.ceil(alpha * (draws + 1) - 1e-9) - 1)
    if c <= 0:
        return SignFlipInterval(-math.inf, math.inf, m, p0, test.method)
    low = float(np.partition(lo_all, c - 1)[c - 1])
    high = float(-np.partition(-hi_all, c - 1)[c - 1])
    # ties at θ = 0, which the test counts with a tolerance, decide for the test
    if p0 >= alpha and not low <= 0.0 <= high:
        low, high = min(low, 0.0), max(high, 0.0)
    elif p0 < alpha and low <= 0.0 <= high:
        low, high = ((np.nextafter(0.0, 1.0), high) if abs(low) <= abs(high)
                     else (low, np.nextafter(0.0, -1.0)))
    return SignFlipInterval(low, high, m, p0, test.method)


def swap_test(a: ArrayLike, b: ArrayLike, statistic, draws: int = DRAWS, seed: int = 0,
              exact_max: int = EXACT_MAX) -> SignFlipTest:
    """Two-sided paired swap test of statistic(a) − statistic(b) over n paired units.

    a, b: (n, ...) records of the same units under two conditions (a model and its
    control); ``statistic`` maps (n, ...) records to a number (a Spearman ρ across models, a
    share). H0: within each unit the two records are exchangeable, so swapping any subset of
    units leaves the law of Δ = statistic(a) − statistic(b) unchanged; p is the share of swap
    vectors with |Δ*| ≥ |Δ| (ties counted), exact over all 2^n for n ≤ ``exact_max``, else
    (hits + 1)/(draws + 1) over ``draws`` random ones, the sign vectors of
    :func:`sign_flip_test` (a swap is a flip). With statistic = mean it is the sign-flip
    test of a − b. `mean_difference` holds Δ; a unit with a NaN in either record is left
    out by the caller."""
    ra, rb = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if ra.shape != rb.shape:
        raise ValueError(f"a and b must have the same shape; got {ra.shape} and {rb.shape}")
    m = ra.shape[0]
    if m == 0:
        return SignFlipTest(float("nan"), 0, float("nan"), "none", 0)
    observed = float(statistic(ra) - statistic(rb))
    if not np.isfinite(observed):
        return SignFlipTest(float("nan"), m, observed, "none", 0)
    cut = abs(observed) - 1e-9 * max(1.0, abs(observed))
    exact = m <= exact_max
    hits = 0
    for signs in ([_all_signs(m)] if exact else _random_signs(m, draws, seed)):
        for eps in signs:
            keep = (eps > 0).reshape((m,) + (1,) * (ra.ndim - 1))
            hits += abs(statistic(np.where(keep, ra, rb)) - statistic(np.where(keep, rb, ra))) >= cut
    if exact:
        return SignFlipTest(hits / (1 << m), m, observed, "exact", 1 << m)
    return SignFlipTest((hits + 1) / (draws + 1), m, observed, "monte carlo", int(draws))


POWER: float = 0.8
"""Power at which a test's minimal detectable effect is stated."""


@cache
def _mde_per_sd(n: int, level: float, power: float, exact_max: int) -> float:
    """The smallest mean shift, in units of the differences' sd, that the two-sided sign-flip
    test of n normal differences rejects with probability ``power``: inf where it cannot
    reject at all.

    The test rejects d = δ + σz exactly when its interval excludes 0, and that interval is
    δ + σ·I(z): so the power at δ is P(low(z) > −δ/σ) + P(high(z) < −δ/σ) over pure
    noise z ~ N(0, 1)^n, estimated from 2,000 seeded draws of z (exact test, n ≤
    ``exact_max``). Beyond that the noncentral t of the one-sample t test, which the
    sign-flip test approaches, gives it."""
    if n < 2:
        return math.inf
    if n > exact_max:
        from scipy import optimize, stats

        crit = stats.t.ppf(1 - (1 - level) / 2, n - 1)

        def short(t: float) -> float:
            shift = t * math.sqrt(n)
            return (stats.nct.sf(crit, n - 1, shift) + stats.nct.cdf(-crit, n - 1, shift)
                    - power)

        # twice the normal-theory effect (z_α/2 + z_power)/√n brackets it (and keeps nct finite)
        upper = 2 * (stats.norm.ppf(1 - (1 - level) / 2) + stats.norm.ppf(power)) / math.sqrt(n)
        return float(optimize.brentq(short, 1e-6, upper))
    c = math.ceil(round(1.0 - level, 12) * (1 << n) - 1e-9)
    if c <= 2:  # the two all-same vectors are extreme at every θ: the test never rejects
        return math.inf
    flipped = (_all_signs(n) < 0).astype(np.float64)
    nf = flipped.sum(1)
    inner = (nf > 0) & (nf < n)
    flipped, nf = flipped[inner], nf[inner]
    z = np.random.default_rng([n, 20261204]).standard_normal((2000, n))
    lo = []
    for block in np.array_split(z, 20):  # the c-th smallest min(r_F, r_K) of each draw
        yf = block @ flipped.T
        r_f, r_k = yf / nf, (block.sum(1)[:, None] - yf) / (n - nf)
        lo.append(np.partition(np.minimum(r_f, r_k), c - 3, axis=1)[:, c - 3])
    lo = np.sort(np.concatenate(lo))

    def above(a: float) -> float:  # P(low(z) > a)
        return 1.0 - np.searchsorted(lo, a, side="right") / lo.size

    # z is symmetric, so P(high(z) < −t) = P(low(z) > t): power(t) = P(low > −t) + P(low > t)
    reach = [t for t in np.unique(np.abs(lo)) if above(-t) + above(t) >= power]
    return float(reach[0]) if reach else math.inf


def sign_flip_mde(n: int, sd: float, level: float = LEVEL, power: float = POWER,
                  exact_max: int = EXACT_MAX) -> float:
    """Minimal detectable effect of the paired sign-flip test on n differences of sample sd
    ``sd``: the mean difference it detects with probability ``power`` at α = 1 − level, if
    the differences were normal with that spread (inf where n samples cannot reach α)."""
    if not np.isfinite(sd):
        return math.nan
    k = _mde_per_sd(int(n), float(level), float(power), int(exact_max))
    return k * float(sd) if np.isfinite(k) else math.inf


def sign_flip_mde_of(y: ArrayLike, w: ArrayLike | None = None, level: float = LEVEL) -> float:
    """:func:`sign_flip_mde` of the differences y (their finite entries, with w), as the row
    of :func:`sign_flip_interval` on (y, w) states it: the mean of y it detects, divided by
    the mean of w for a relative change. One sample: inf (its two sign vectors give p = 1,
    so no effect is detectable); none: NaN."""
    yv = np.asarray(y, dtype=np.float64).ravel()
    wv = np.ones_like(yv) if w is None else np.asarray(w, dtype=np.float64).ravel()
    keep = np.isfinite(yv) & np.isfinite(wv)
    if keep.sum() < 2:
        return math.inf if keep.sum() == 1 else math.nan
    return sign_flip_mde(int(keep.sum()), float(np.std(yv[keep], ddof=1)), level) / float(
        np.mean(wv[keep]))


@dataclass(frozen=True)
class PredictionTest:
    """Result of :func:`prediction_test`; its first fields read as a `SignFlipTest`'s."""

    p_value: float
    """Two-sided p of H0 "x is one more draw of the controls' distribution"; NaN for K < 2."""
    n: int
    """Finite control draws K."""
    mean_difference: float
    """x − mean of the draws."""
    method: str
    """"t" (Student's t, K − 1 df), "rank" (draws without spread) or "none"."""
    sd: float
    """The draws' sample sd (ddof 1): the spread between draws."""
    mde: float
    """The |x − mean| the test detects with probability ``POWER`` (inf where K draws cannot
    reach α)."""


def prediction_test(x: float, controls: ArrayLike, level: float = LEVEL,
                    power: float = POWER) -> PredictionTest:
    """Is x outside the prediction interval of K control draws c_1 … c_K?

    Under H0, x and the c_k are K + 1 exchangeable normal draws, so
    t = (x − c̄) / (s·√(1 + 1/K)) has Student's t with K − 1 df (s the draws' sd); p is its
    two-sided tail, and p < 1 − level exactly when x lies outside the 1 − α prediction
    interval c̄ ± t_{K−1, 1−α/2}·s·√(1 + 1/K). The spread between draws is the control's
    own: a fixed offset of one draw is not read as signal. Draws without spread (s = 0)
    cannot support a normal model: their p is the exchangeable rank p, 1/(K + 1) for an x
    apart from them, 1 for an x among them. ``mde``: the shift δ whose noncentral t
    (noncentrality δ / (s·√(1 + 1/K))) rejects with probability ``power``."""
    c = np.asarray(controls, dtype=np.float64).ravel()
    c = c[np.isfinite(c)]
    k = int(c.size)
    if k < 2 or not np.isfinite(x):
        return PredictionTest(math.nan, k, math.nan, "none", math.nan, math.inf)
    from scipy import stats

    mean, sd, alpha = float(c.mean()), float(c.std(ddof=1)), 1.0 - level
    delta = float(x) - mean
    if sd <= 1e-12 * max(1.0, abs(mean)):  # equal draws, up to rounding
        p = 1.0 if abs(delta) <= 1e-12 * max(1.0, abs(mean)) else 1.0 / (k + 1)
        return PredictionTest(p, k, delta, "rank", 0.0, 0.0 if 1.0 / (k + 1) < alpha
                              else math.inf)
    scale = sd * math.sqrt(1.0 + 1.0 / k)
    p = float(2.0 * stats.t.sf(abs(delta) / scale, k - 1))
    return PredictionTest(p, k, delta, "t", sd, _prediction_mde_per_scale(k, alpha, power) * scale)


@cache
def _prediction_mde_per_scale(k: int, alpha: float, power: float) -> float:
    """The noncentrality δ at which the two-sided t test with ν = k − 1 df rejects at
    ``alpha`` with probability ``power``: the power E_V[Φ(δ − c·√(V/ν)) + Φ(−δ − c·√(V/ν))]
    over V ~ χ²_ν (c the critical t), integrated numerically (scipy's noncentral t fails at
    ν = 1)."""
    from scipy import integrate, optimize, stats

    nu = k - 1
    crit = stats.t.ppf(1.0 - alpha / 2, nu)

    def short(delta: float) -> float:
        def at(v: float) -> float:
            c = crit * math.sqrt(v / nu)
            return (stats.norm.cdf(delta - c) + stats.norm.cdf(-delta - c)) * stats.chi2.pdf(v, nu)
        return integrate.quad(at, 0, np.inf, limit=200)[0] - power

    upper = crit
    while short(upper) < 0:  # the power at δ = c is about ½: widen until it is reached
        upper *= 2
    return float(optimize.brentq(short, 1e-9, upper, xtol=1e-6))


def _all_signs(m: int) -> NDArray[np.float64]:
    """All 2^m sign vectors (2^m, m), the identity first."""
    codes = np.arange(1 << m, dtype=np.int64)[:, None] >> np.arange(m)
    return 1.0 - 2.0 * (codes & 1)


def one_sided(test, side: int) -> float:
    """The p of a test symmetric under H0 (sign-flip, swap, t) against a difference on
    ``side`` (+1 or −1): half its two-sided p on the observed side of its
    ``mean_difference``, 1 minus that half on the other; 1 for side 0."""
    if side == 0:
        return 1.0
    half = float(test.p_value) / 2
    return half if np.sign(test.mean_difference) == side else 1.0 - half


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


def benjamini_hochberg(p: ArrayLike) -> NDArray[np.float64]:
    """Benjamini–Hochberg q-values of one family (same shape as p; scipy's
    `false_discovery_control`).

    With the k finite p-values sorted ascending, q_(i) = min_{j ≥ i} min(1, k·p_(j)/j); NaN
    entries are not part of the family and stay NaN. Rejecting q ≤ α controls the expected
    share of false rejections among the rejections at α for independent or positively
    dependent tests.
    """
    from scipy.stats import false_discovery_control

    a = np.asarray(p, dtype=np.float64)
    out = np.full(a.shape, np.nan)
    ok = np.isfinite(a)
    if ok.any():
        out[ok] = false_discovery_control(a[ok], method="bh")
    return out
