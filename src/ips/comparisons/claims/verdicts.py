"""A claim's row and verdict: thresholds, `Claim`, directional and interval tests."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from itertools import permutations

import numpy as np

from ips.analysis import uncertainty
from ips.formats.metrics import WEIGHTS, Entry

ALPHA = 0.05
"""Significance level of every directional verdict."""


VERDICTS = ("supported", "contradicted", "undecided", "untestable", "control")
"""`control`: the row of a control's entry, itself a control (its raw verdict says what
random weights earn)."""
DECIDED = ("supported", "contradicted")
"""The verdicts that decide a claim."""



MIN_MODELS = 3
"""Correlations across models need at least this many models."""


def mean_statistic(x: np.ndarray) -> float:
    """The statistic of a per-sample row: the mean of its per-sample values."""
    return float(np.mean(x))


@dataclass(frozen=True)
class ControlSpec:
    """What a row's control test needs: its units (sample ids, or model names) with one
    record each, the statistic the row computes from the records (`mean_statistic` for a
    per-sample row), the value its direction is read against (0 for a difference, ½ for a
    share of models) and, for a level row, the interval [lo, hi] it is read against
    (`bounds`; `ips.comparisons.claims.controls.level_side`). `ips.comparisons.claims.controls`
    pairs the records with the control's."""

    units: tuple[str, ...]
    records: np.ndarray
    statistic: Callable[[np.ndarray], float] = mean_statistic
    reference: float = 0.0
    bounds: tuple[float, float] | None = None


@dataclass(frozen=True)
class Claim:
    """One row of `claims.csv`."""

    claim: str
    scope: str
    paper: str
    estimate: float = math.nan
    ci_low: float = math.nan
    ci_high: float = math.nan
    n: int = 0
    test: str = ""
    p_value: float = math.nan
    verdict: str = "untestable"
    note: str = ""
    weights: str = WEIGHTS[0]
    mde: float = math.nan
    """The smallest effect (in the estimate's units) that the row's test detects with 80 %
    power at this n and spread; inf where n cannot reach p < ALPHA; NaN without a test."""
    raw_verdict: str = ""
    """The verdict of the row's own test, before its control (`ips.comparisons.claims.controls`)."""
    control_estimate: float = math.nan
    """The same statistic on the controls: the model's control entry, or those of all models
    for a row across models."""
    control_verdict: str = ""
    """The raw verdict the controls earn with the same test."""
    control_p: float = math.nan
    """p of the difference between the trained models and their controls, one-sided in the
    direction the row's verdict needs (`ips.analysis.uncertainty.one_sided`)."""
    control_test: str = ""
    """The test of the difference from the controls, and on how many units."""
    control_draws: int = 0
    """Draws of the control the row is read against (independent weight draws: twins of
    several seeds); 0 without a control."""
    control_sd: float = math.nan
    """The spread between those draws: the sd (ddof 1) of the row's estimate over them; NaN
    for one draw."""
    control_mde: float = math.nan
    """The smallest trained − control difference the control test detects with 80 % power
    (inf where its units cannot reach p < ALPHA; NaN where not computed)."""
    saturation: float = math.nan
    """The largest IPS / ceiling among the cells the row rests on (`claims.saturation`);
    SATURATED or above: saturated."""
    q_value: float = math.nan
    """Benjamini–Hochberg over the table's decidable rows (`correction.corrected`)."""
    holm_p: float = math.nan
    """Holm over the config's `hypotheses`, NaN for a row outside them (`correction`)."""
    spec: ControlSpec | None = field(default=None, repr=False, compare=False)
    """What the row's control test needs (not written)."""

    def row(self) -> dict:
        """The row's columns (`COLUMNS`) for claims.csv."""
        return {c: getattr(self, c) for c in COLUMNS}


#: claims.csv's columns: `weights` last, as in every table
COLUMNS = tuple(f.name for f in fields(Claim) if f.name not in ("spec", "weights")) + ("weights",)


def directional(estimate: float, p: float, sign: int) -> str:
    """Verdict of a claim that the effect has sign ``sign`` (−1 or +1)."""
    if not (np.isfinite(estimate) and np.isfinite(p)) or estimate == 0 or p >= ALPHA:
        return "undecided"
    return "supported" if np.sign(estimate) == sign else "contradicted"


def within(ci: Sequence[float], lo: float, hi: float, n: int) -> str:
    """Verdict of a claim that a quantity lies in [lo, hi], from its interval over n samples."""
    a, b = (float(x) for x in ci)
    if n < uncertainty.MIN_RELIABLE_N or not (np.isfinite(a) and np.isfinite(b)):
        return "undecided"
    if lo <= a and b <= hi:
        return "supported"
    if b < lo or a > hi:
        return "contradicted"
    return "undecided"


def level_mde(ci, n: int, power: float = uncertainty.POWER) -> float:
    """How far beyond a level claim's range an estimate must lie for a new interval over n
    samples to exclude the range with ``power``, reading the interval as normal:
    (z_(1−α/2) + z_power)·se with se = width/(2·z_(1−α/2)); inf below MIN_RELIABLE_N
    samples, where `within` decides nothing."""
    from scipy.stats import norm

    a, b = (float(x) for x in ci)
    if n < uncertainty.MIN_RELIABLE_N:
        return math.inf
    z = norm.ppf(1 - ALPHA / 2)
    return (z + norm.ppf(power)) * (b - a) / (2 * z) if np.isfinite(b - a) else math.nan


def few_samples_note(n: int, level: bool = False) -> str:
    """What n samples allow: a bootstrap interval (``level``) or a sign-flip test."""
    if not 0 < n < uncertainty.MIN_RELIABLE_N:
        return ""
    if level:
        return (f"fewer than {uncertainty.MIN_RELIABLE_N} samples: too few to decide from a "
                "bootstrap interval")
    if 2 / 2**n >= ALPHA:  # the exact two-sided sign flip: both all-same-sign vectors
        return (f"with {n} samples the smallest attainable p is 2/2^{n} = {2 / 2**n:.3g} ≥ "
                f"{ALPHA:g}: this test cannot decide, whatever the data")
    return f"fewer than {uncertainty.MIN_RELIABLE_N} samples: interval and test are rough"


def join_notes(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


def join_scope(*parts: str) -> str:
    return " / ".join(p for p in parts if p)


def bootstrap_settings(e: Entry) -> tuple[int, int, float]:
    """(seed, n_boot, level) recorded in a metrics file, so intervals match its tables."""
    b = json.loads(e.ds.attrs.get("bootstrap", "{}") or "{}")
    return (int(b.get("seed", 0)), int(b.get("n_boot", uncertainty.N_BOOT)),
            float(b.get("level", uncertainty.LEVEL)))


def spearman_permutation(x: np.ndarray, y: np.ndarray, draws: int = 9999,
                         seed: int = 0) -> tuple[float, float]:
    """Spearman ρ and its two-sided permutation p (exact over all n! pairings for n ≤ 8,
    else Monte Carlo with p = (b+1)/(B+1))."""
    from scipy.stats import rankdata

    rx, ry = rankdata(x), rankdata(y)

    def rho(a, b):
        a, b = a - a.mean(), b - b.mean()
        den = math.sqrt(float(a @ a) * float(b @ b))
        return float(a @ b) / den if den > 0 else math.nan

    r = rho(rx, ry)
    if not np.isfinite(r):
        return r, math.nan
    n = len(rx)
    if n <= 8:
        stats = np.array([rho(rx, ry[list(p)]) for p in permutations(range(n))])
        return r, float(np.mean(np.abs(stats) >= abs(r) - 1e-12))
    rng = np.random.default_rng(seed)
    b = sum(abs(rho(rx, rng.permutation(ry))) >= abs(r) - 1e-12 for _ in range(draws))
    return r, (b + 1) / (draws + 1)


def spearman_statistic(records: np.ndarray) -> float:
    """Spearman ρ of a row's records (n, 2): the statistic of a rank-correlation row."""
    from scipy.stats import spearmanr

    with np.errstate(invalid="ignore"):
        return float(spearmanr(records[:, 0], records[:, 1]).statistic)


def unattainable_note(n: int, what: str = "samples") -> str:
    """Why a two-sided exact Spearman test over `n` models or samples cannot decide: its
    smallest attainable p (both perfect orderings, 2 of n! pairings) is not below ALPHA."""
    if n > 8 or 2 / math.factorial(n) < ALPHA:
        return ""
    return (f"with {n} {what} the smallest attainable p is 2/{n}! = {2 / math.factorial(n):.3f}"
            f" ≥ {ALPHA:g}: this test cannot decide, whatever the data")


def binomial_p(k: int, n: int, rate: float = 0.5) -> float:
    """Two-sided exact binomial p of k successes in n against ``rate``, by doubling the
    smaller tail: min(1, 2·min(P(X ≤ k), P(X ≥ k))). The Clopper-Pearson interval is the
    inversion of exactly this test, so the two agree on whether ``rate`` is excluded."""
    import scipy.stats

    dist = scipy.stats.binom(n, rate)
    return float(min(1.0, 2 * min(dist.cdf(k), dist.sf(k - 1))))


def binomial_mde(n: int, rate: float = 0.5, power: float = uncertainty.POWER) -> float:
    """The smallest |share − rate| that the test of :func:`binomial_p` detects with
    ``power`` at n (exact: the rejection region is a fixed set of k); inf where even k = 0
    or k = n cannot reach p < ALPHA."""
    import scipy.stats

    ks = np.arange(n + 1)
    reject = np.array([binomial_p(int(k), n, rate) < ALPHA for k in ks])
    if not reject.any():
        return math.inf
    best = math.inf
    for side in (+1, -1):  # the power rises monotonically away from rate on either side
        lo, hi = 0.0, (1.0 - rate if side > 0 else rate)
        if scipy.stats.binom.pmf(ks, n, rate + side * hi)[reject].sum() < power:
            continue
        for _ in range(50):
            mid = (lo + hi) / 2
            if scipy.stats.binom.pmf(ks, n, rate + side * mid)[reject].sum() >= power:
                hi = mid
            else:
                lo = mid
        best = min(best, hi)
    return best


def rank_mde(n: int, power: float = uncertainty.POWER) -> float:
    """The |Spearman ρ| that a two-sided test over n pairs detects with ``power``: Fisher's z
    with Spearman's variance 1.06/(n − 3) (Fieller, Hartley and Pearson 1957), an
    approximation; inf where the exact permutation test cannot reach p < ALPHA."""
    from scipy.stats import norm

    if n < 4 or unattainable_note(n):
        return math.inf
    z = (norm.ppf(1 - ALPHA / 2) + norm.ppf(power)) * math.sqrt(1.06 / (n - 3))
    return math.tanh(z)


def binomial_row(claim: str, scope: str, paper: str, k: int, n: int, what: str,
                 empty: str, weights_: str) -> Claim:
    """A count claim: k of n models behave as the paper says. Estimate k/n with its exact
    (Clopper-Pearson) interval; two-sided exact binomial p of k against Binomial(n, 1/2)
    (`binomial_p`, the test that interval inverts), which is what n fair coins (noise alone)
    give; untestable where even k = 0 or k = n could not reach p < ALPHA (the smallest
    two-sided p is 2/2^n: n ≤ 5). `what` says what the k models do, `empty` why n is 0."""
    import scipy.stats

    if n == 0:
        return Claim(claim, scope, paper, note=empty, weights=weights_)
    est = k / n
    if 2 / 2**n >= ALPHA:
        return Claim(claim, scope, paper, est, n=n, mde=math.inf, note=(
            f"{k} of {n}; with {n} models the smallest two-sided binomial p is 2/2^{n} = "
            f"{2 / 2**n:.3g} ≥ {ALPHA:g}: at least 6 are needed"), weights=weights_)
    ci = scipy.stats.binomtest(k, n, 0.5).proportion_ci(confidence_level=1 - ALPHA,
                                                         method="exact")
    p = binomial_p(k, n)
    return Claim(claim, scope, paper, est, float(ci.low), float(ci.high), n,
                 "exact two-sided binomial test of k against n/2 (noise alone: each model's "
                 "side a fair coin; p: twice the smaller tail); interval: Clopper-Pearson 95%",
                 p, directional(est - 0.5, p, +1),
                 f"estimate: share of the n models {what} ({k} of {n}); mde: |share − 0.5|; "
                 "models counted as independent", weights_, binomial_mde(n))
