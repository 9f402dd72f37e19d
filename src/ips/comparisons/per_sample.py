"""Two sides of a comparison (`Comparison`), sample by sample: the per-sample values both sides hold, their
differences, and the paired sign-flip test of their mean (`ips.comparisons.compare`; the
tests are described there and in `ips.analysis.uncertainty`)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from ips.analysis import metrics, uncertainty
from ips.formats.metrics import BANDS


@dataclass
class Comparison:
    """One factor comparison: side A (with the factor) and side B of one dataset and group,
    their IPS per band and the per-sample values behind them."""

    factor: str
    dataset: str
    group: str
    model_a: str
    model_b: str
    setting_a: str
    setting_b: str
    templates: str
    ips_a: np.ndarray  # (band,)
    ips_b: np.ndarray
    # per-sample values behind ips_a / ips_b: (sample ids, (S, K, band)); None if the
    # metrics file has none
    samples_a: tuple[np.ndarray, np.ndarray] | None = None
    samples_b: tuple[np.ndarray, np.ndarray] | None = None
    # the matched-size null of the same groups / pairs (`ips.analysis.nulls`), and per sample; NaN /
    # None where the metrics files have none
    null_a: np.ndarray | None = None
    null_b: np.ndarray | None = None
    null_samples_a: tuple[np.ndarray, np.ndarray] | None = None
    null_samples_b: tuple[np.ndarray, np.ndarray] | None = None


def nanmean(x: np.ndarray, axis: int = 0) -> np.ndarray:
    """Mean over an axis ignoring NaN; NaN (without a warning) where nothing is left."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(x, axis=axis)


def delta(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """ΔIPS = (a − b)/b elementwise (`metrics.delta_ips`); NaN where either is not finite or
    b is 0."""
    ok = np.isfinite(a) & np.isfinite(b) & (b != 0)
    out = np.full(a.shape, np.nan)
    if ok.any():
        out[ok] = metrics.delta_ips(a[ok], b[ok])
    return out


def sides(samples_a, samples_b) -> dict[str, tuple[np.ndarray, np.ndarray]] | None:
    """(A_s, B_s) (band,) of the samples on both sides, by id.

    A_s is the NaN-aware mean over side A's K columns of sample s (likewise B_s); NaN in a
    band where the side has no value. None without per-sample tables."""
    if samples_a is None or samples_b is None:
        return None
    side_a, side_b = ({str(s): nanmean(x, axis=0) for s, x in zip(ids, xs)}
                      for ids, xs in (samples_a, samples_b))
    return {s: (side_a[s], side_b[s]) for s in side_a if s in side_b}


def differences(samples_a, samples_b) -> dict[str, np.ndarray] | None:
    """Per-sample differences d_s = A_s − B_s (band,) of the samples on both sides, by id
    (NaN in a band where either side has no value); None without per-sample tables."""
    both = sides(samples_a, samples_b)
    return None if both is None else {s: a - b for s, (a, b) in both.items()}


def excess(c: Comparison) -> dict[str, np.ndarray] | None:
    """Per-sample (A_s − B_s) − (N^A_s − N^B_s): how far the factor moves IPS beyond how it
    moves the matched-size null (None without per-sample nulls)."""
    ips, null = (differences(c.samples_a, c.samples_b),
                 differences(c.null_samples_a, c.null_samples_b))
    if ips is None or null is None:
        return None
    return {s: ips[s] - null[s] for s in ips if s in null}


@dataclass(frozen=True)
class Tested:
    """Per band: the sign-flip p and n, the interval that inverts that test and the effect
    it detects at 80 % power (`ips.analysis.uncertainty.sign_flip_interval`, `sign_flip_mde`)."""

    p: np.ndarray
    n: np.ndarray
    ci: np.ndarray  # (band, 2)
    mde: np.ndarray


def sign_flip(diffs: list[dict], draws: int, seed: int, level: float | None,
               relative: bool = False) -> Tested:
    """The sign-flip test per band of the per-sample mean over ``diffs`` (d_s of one or more
    comparisons, or their (A_s, B_s) with ``relative``) on the samples, sorted by id, valued
    in every one of them; its interval is of the mean difference, or with ``relative`` of
    the relative change θ = Σ_s A_s/Σ_s B_s − 1 (d_s(θ) = A_s − (1+θ)·B_s; at θ = 0 the
    same test), its mde of the same quantity. ``level`` None: the test alone (p and n; the
    interval and mde stay NaN)."""
    nb = len(BANDS)
    out = Tested(np.full(nb, np.nan), np.zeros(nb, np.int64), np.full((nb, 2), np.nan),
                  np.full(nb, np.nan))
    ids = sorted(set.intersection(*(set(d) for d in diffs)))
    if not ids:
        return out
    x = np.array([[x[s] for s in ids] for x in diffs], float)  # (comp, S[, 2], band)
    y = np.mean(x[:, :, 0] - x[:, :, 1] if relative else x, axis=0)  # (S, band)
    w = np.mean(x[:, :, 1], axis=0) if relative else np.ones_like(y)
    for b in range(nb):
        if level is None:
            t = uncertainty.sign_flip_test(y[:, b], draws, seed)
            out.p[b], out.n[b] = t.p_value, t.n
            continue
        t = uncertainty.sign_flip_interval(y[:, b], w[:, b], level, draws, seed)
        out.p[b], out.n[b], out.ci[b] = t.p_zero, t.n, (t.low, t.high)
        out.mde[b] = uncertainty.sign_flip_mde_of(y[:, b], w[:, b], level)
    return out
