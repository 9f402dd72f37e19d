"""Does the low band fall most? The test behind the claims rows `factor_*_low_falls_most`
(paper Section 4.3, Fig. 10: a factor that lowers IPS lowers low-order IPS most).

Per sample, the two gaps ΔIPS_s^low − ΔIPS_s^mid and ΔIPS_s^low − ΔIPS_s^high (`gaps`);
`gap_test` tests both means by the paired sign-flip test, Bonferroni-combined, on a
comparison's gaps or on their per-sample differences from its control's
(docs/method.md#controls).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ips.analysis import uncertainty
from ips.formats.metrics import BANDS

#: the bands of the low-band row: (low, mid, high)
ORDER_BANDS = [BANDS.index(b) for b in ("low", "mid", "high")]


def gaps(sides: dict[str, tuple[np.ndarray, np.ndarray]] | None
         ) -> dict[str, np.ndarray] | None:
    """Per sample the two gaps (ΔIPS_s^low − ΔIPS_s^mid, ΔIPS_s^low − ΔIPS_s^high), with
    ΔIPS_s^b = (A_s^b − B_s^b) / mean_s B^b over the samples valued in low, mid and high on
    both sides: their means are the comparison's ΔIPS^low − ΔIPS^mid and ΔIPS^low −
    ΔIPS^high on those samples. None without such samples (or a mean B of 0)."""
    if sides is None:
        return None
    ids = sorted(s for s, (a, b) in sides.items()
                 if np.isfinite(a[ORDER_BANDS]).all() and np.isfinite(b[ORDER_BANDS]).all())
    if not ids:
        return None
    a, b = (np.array([sides[s][k][ORDER_BANDS] for s in ids], float) for k in (0, 1))
    scale = b.mean(axis=0)
    if not (scale > 0).all():
        return None
    x = (a - b) / scale
    return dict(zip(ids, np.stack([x[:, 0] - x[:, 1], x[:, 0] - x[:, 2]], axis=1)))


@dataclass(frozen=True)
class GapTest:
    """`gap_test`: max of the two gaps' means, its interval, p, n and mde."""

    estimate: float
    ci: tuple[float, float]
    p: float
    n: int
    mde: float


def gap_means(gaps: dict[str, np.ndarray]) -> np.ndarray:
    """The means of the two per-sample gaps (ḡ, h̄), samples in id order."""
    return np.array([gaps[s] for s in sorted(gaps)], float).mean(axis=0)


def gap_test(gaps: dict[str, np.ndarray], draws: int, seed: int, level: float) -> GapTest:
    """Does the low band fall most? On the per-sample gaps g, h (`gaps`, or their
    differences from a control's), each mean tested by the sign-flip test and its interval
    inverted at level 1 − α/2 (Bonferroni over the two). The estimate is max(ḡ, h̄); its
    interval [max of the lows, max of the highs]; p is 2·max(p_g, p_h) where both means are
    below 0 (the low band falls most: both gaps below 0), else 2·min of the p of the means
    at or above 0 (either gap above 0). The interval excludes 0 exactly when p < α."""
    y = np.array([gaps[s] for s in sorted(gaps)], float)
    half = 1 - (1 - level) / 2
    tests = [uncertainty.sign_flip_interval(y[:, k], None, half, draws, seed) for k in (0, 1)]
    means = gap_means(gaps)
    p = (max(t.p_zero for t in tests) if (means < 0).all()
         else min(t.p_zero for t, m in zip(tests, means) if m >= 0))
    return GapTest(float(means.max()), (max(t.low for t in tests), max(t.high for t in tests)),
                   min(1.0, 2 * p), len(y),
                   max(uncertainty.sign_flip_mde_of(y[:, k], None, half) for k in (0, 1)))
