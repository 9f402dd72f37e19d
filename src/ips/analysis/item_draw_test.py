"""Is a trained model's number beyond what K weight draws of its control give, counting both
the draws' spread and every model's noise over items (docs/method.md#the-control-test)?

Model. The row's statistic T is computed from per-unit records (items, or models for a row
across models) of the trained model, x = T(r_0), and of each control draw, c_k = T(r_k),
k = 1 … K, all on the same units. Each number is its model's value plus noise over units:
c_k = μ + b_k + e_k, x = μ_x + b_0 + e_0, with b the weight draw's own offset (variance
σ_b², the same for the trained model under H0) and e the unit noise, whose variance may
differ between the trained model and its twins (trained models vary over items far more).
H0: μ_x = μ, the trained model is one more weight draw in mean. Then

    Var(x − c̄) = σ_b²·(1 + 1/K) + Var_units(x − c̄ | the draws' weights),

the second term holding the trained model's unit noise, the twins' (divided by K) and their
covariance through shared units. Both are estimated:

* V_D, the delete-one-unit jackknife variance of D = x − c̄ (all K + 1 models lose the same
  unit): the unit part, paired, so unit effects shared by all models cancel;
* σ̂_b² = max(0, s² − R), s² the sample variance of c_1 … c_K and
  R = Σ_k V_jack(c_k − c̄)/(K − 1) its expected part from unit noise (for a mean statistic,
  the two-way ANOVA's MS_draw/n and MS_residual/n: σ̂_b² is the method-of-moments draw
  component).

t = (x − c̄)/√V with V = V_D + (1 + 1/K)·σ̂_b², on Satterthwaite's degrees of freedom for
that sum (V_D on n − 1, s² on K − 1, R on (K − 1)(n − 1)); ν = n − 1 where σ̂_b² is 0, and
at most K − 1 where the draws' part is the larger: Satterthwaite's plug-in ν grows exactly
when s² comes out small, so without the cap the test decided more than α of null rows at
K = 3 where the draws' spread dominates (the benchmark's simulation). With
the trained model's unit variance equal to the twins', V estimates what `prediction_test`'s
s²·(1 + 1/K) does. The p is one-sided where the row's claim gives a direction
(`uncertainty.one_sided`). Its
calibration (false positives at 1×, 3× and 10× the twins' unit noise, K = 3 and 5) is
measured in benchmarks/bench_control_rule.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import numpy as np
from numpy.typing import ArrayLike

from ips.analysis.uncertainty import LEVEL, POWER

Statistic = Callable[[np.ndarray], float]


@dataclass(frozen=True)
class ItemDrawTest:
    """Result of :func:`item_draw_test`; its first fields read as a `PredictionTest`'s."""

    p_value: float
    """Two-sided p of H0 "x is one more weight draw"; NaN where it cannot be computed."""
    n: int
    """Control draws K."""
    mean_difference: float
    """x − c̄."""
    method: str
    """"items × draws" (the model above) or "none"."""
    sd: float
    """The draws' sample sd (ddof 1) of the statistic: the spread between draws."""
    mde: float
    """The |x − c̄| a one-sided test at α detects with probability ``POWER``."""
    units: int = 0
    """Units n all K + 1 models have."""
    se: float = math.nan
    """√V, the standard error of x − c̄."""
    df: float = math.nan
    """Satterthwaite's degrees of freedom of V."""
    draw_sd: float = math.nan
    """σ̂_b, the spread between draws beyond their unit noise."""


def _leave_one_out(records: np.ndarray, statistic: Statistic | None) -> np.ndarray:
    """T of the records without unit i, for each i (n,)."""
    n = records.shape[0]
    if statistic is None:  # the mean: closed form
        return (records.sum(0) - records) / (n - 1)
    keep = ~np.eye(n, dtype=bool)
    return np.array([statistic(records[keep[i]]) for i in range(n)])


def _jackknife_variance(loo: np.ndarray) -> float:
    n = loo.shape[0]
    return float((n - 1) / n * np.sum((loo - loo.mean()) ** 2))


def item_draw_test(trained: ArrayLike, draws: ArrayLike, statistic: Statistic | None = None,
                   level: float = LEVEL, power: float = POWER) -> ItemDrawTest:
    """The test of the module docstring. ``trained``: the trained model's records (n, …);
    ``draws``: the K control draws' records (K, n, …) on the same units in the same order,
    rows with a non-finite record on any model dropped; ``statistic``: T of records (n, …)
    (None: the mean over units of 1-D records, jackknifed in closed form)."""
    r0 = np.asarray(trained, dtype=np.float64)
    rk = np.asarray(draws, dtype=np.float64)
    k = rk.shape[0] if rk.ndim >= 2 else 0
    if k >= 1 and r0.shape[0]:
        ok = np.isfinite(r0.reshape(r0.shape[0], -1)).all(1) & np.isfinite(
            rk.reshape(k, rk.shape[1], -1)).all((0, 2))
        r0, rk = r0[ok], rk[:, ok]
    n = r0.shape[0]
    if k < 2 or n < 2:
        return ItemDrawTest(math.nan, k, math.nan, "none", math.nan, math.inf, n)
    stat = (lambda r: float(np.mean(r))) if statistic is None else statistic
    x, c = stat(r0), np.array([stat(r) for r in rk])
    if not (np.isfinite(x) and np.isfinite(c).all()):
        return ItemDrawTest(math.nan, k, math.nan, "none", math.nan, math.inf, n)
    loo0 = _leave_one_out(r0, statistic)
    look = np.array([_leave_one_out(r, statistic) for r in rk])  # (K, n)
    v_d = _jackknife_variance(loo0 - look.mean(0))
    resid = sum(_jackknife_variance(look[j] - look.mean(0)) for j in range(k)) / (k - 1)
    s2 = float(np.var(c, ddof=1))
    a = 1.0 + 1.0 / k
    if s2 > resid:
        v = v_d + a * (s2 - resid)
        den = (v_d**2 / (n - 1) + (a * s2) ** 2 / (k - 1)
               + (a * resid) ** 2 / ((k - 1) * (n - 1)))
        df = v**2 / den if den > 0 else float(n - 1)
        if a * (s2 - resid) > v_d:  # plug-in ν overstates the df where the K − 1 dominate
            df = min(df, k - 1.0)
    else:
        v, df = v_d, float(n - 1)
    df = max(df, 1.0)  # the subtracted R can drive the plug-in ν below the one df it has
    delta = x - float(c.mean())
    draw_sd = math.sqrt(max(s2 - resid, 0.0))
    if not v > 0:  # no spread anywhere: the exchangeable rank p, as `prediction_test`'s
        p = 1.0 if abs(delta) <= 1e-12 * max(1.0, abs(x)) else 1.0 / (k + 1)
        return ItemDrawTest(p, k, delta, "rank", math.sqrt(s2), math.inf, n, 0.0, math.nan,
                            draw_sd)
    from scipy import stats

    se = math.sqrt(v)
    p = float(2.0 * stats.t.sf(abs(delta) / se, df))
    return ItemDrawTest(p, k, delta, "items × draws", math.sqrt(s2),
                        _one_sided_mde(round(df, 1), 1.0 - level, power) * se, n, se, df,
                        draw_sd)


@cache
def _one_sided_mde(df: float, alpha: float, power: float) -> float:
    """The noncentrality δ at which the one-sided t test on ν = df degrees of freedom
    rejects at ``alpha`` with probability ``power``: scipy's noncentral t from ν = 3, below
    it E_U[Φ(δ − c·U)] over U = χ_ν/√ν integrated numerically (c the critical t; the
    noncentral t is unreliable near ν = 1). The caller rounds ν to 0.1, which moves the
    mde by well under 1 %."""
    from scipy import integrate, optimize, stats

    crit = stats.t.ppf(1.0 - alpha, df)
    if df >= 3:
        def short(delta: float) -> float:
            return float(stats.nct.sf(crit, df, delta)) - power
    else:
        def short(delta: float) -> float:
            def at(u: float) -> float:
                return stats.norm.cdf(delta - crit * u) * stats.chi.pdf(u * math.sqrt(df),
                                                                         df) * math.sqrt(df)
            return integrate.quad(at, 0, np.inf, limit=200)[0] - power

    upper = max(crit, 1.0)
    while short(upper) < 0:
        upper *= 2
    return float(optimize.brentq(short, 1e-9, upper, xtol=1e-6))
