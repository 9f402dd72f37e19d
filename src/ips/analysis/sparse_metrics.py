"""Section 3.2's definitions on the entries of sparse estimates (`normalize`,
`salient`), their grid for `ips.analysis.metrics` (`entry_grid`), `pair_ips`, `keep_top`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
from numpy.typing import NDArray

from ips.analysis.layout import SetLayout
from ips.analysis.metrics import DEFAULT_TAU, pair_sensitivity
from ips.interactions.result import ZERO_TOL
from ips.interactions.sparse import SparseInteractions


def normalize(est: SparseInteractions) -> NDArray[np.float64]:
    """Ĩ of every entry (Section 3.2, as :func:`ips.analysis.metrics.normalize` on the dense set).

        Ĩ = sgn(I)·(|I| − Min)/(Max − Min),   Max, Min of |I| over Ω (2·(2^n − 1) values),

    where an interaction that is not an entry is 0: Min = 0 unless the entries cover all of
    Ω. |I| ≤ ZERO_TOL·Max counts as 0 first; Max == Min gives Ĩ = 0 everywhere.
    """
    x = np.asarray(est.values, dtype=np.float64)
    if len(x) == 0:
        return x.copy()
    absx = np.abs(x)
    hi = absx.max()
    zero = absx <= ZERO_TOL * hi
    x = np.where(zero, 0.0, x)
    absx = np.where(zero, 0.0, absx)
    complete = len(x) == 2 * ((1 << est.n) - 1)
    lo = absx.min() if complete else 0.0
    den = hi - lo
    if not den > 0:
        return np.zeros_like(x)
    return np.sign(x) * (absx - lo) / den


def salient(est: SparseInteractions, tau: float = DEFAULT_TAU) -> NDArray[np.bool_]:
    """|Ĩ| > τ for every entry (Section 4.1); an interaction that is not an entry never is."""
    return np.abs(normalize(est)) > tau


def entry_grid(games: Sequence[Sequence[SparseInteractions]]
               ) -> tuple[NDArray[np.float64], SetLayout]:
    """Ĩ (:func:`normalize`) of games[sample][condition] on one grid for ``ips.analysis.metrics``.

    The columns of sample s are ∅ and the sets that are an entry of any of its games (sorted
    bitmasks; −1 pads to the largest count): ``norm`` (sample, condition, 2, M) holds Ĩ of
    every (kind, S) there, 0 where (kind, S) is not an entry of that game, NaN at ∅ and in
    the padding. With the returned :class:`ips.analysis.layout.SetLayout`, ``ips.analysis.metrics``
    computes on it what it computes on the 2^n axis (every interaction off the grid is 0).
    """
    per = []
    for s, row in enumerate(games):
        if len(row) != len(games[0]) or not len(row):
            raise ValueError(f"entry_grid: sample {s} has {len(row)} games, sample 0 "
                             f"{len(games[0])}: every sample needs one per condition")
        if len({g.n for g in row}) != 1:
            raise ValueError(f"entry_grid: sample {s}: games of different n")
        per.append(np.unique(np.concatenate([g.masks for g in row])))
    S, C = len(games), len(games[0]) if games else 0
    M = 1 + max((len(u) for u in per), default=0)
    sets = np.full((S, M), -1, np.int64)
    sets[:, 0] = 0
    norm = np.full((S, C, 2, M), np.nan)
    for s, (row, u) in enumerate(zip(games, per)):
        sets[s, 1:1 + len(u)] = u
        norm[s, :, :, 1:1 + len(u)] = 0.0
        for c, g in enumerate(row):
            norm[s, c, g.kinds.astype(np.int64), 1 + np.searchsorted(u, g.masks)] = normalize(g)
    n = np.array([row[0].n for row in games], np.int64)
    return norm, SetLayout(sets, n)


def pair_ips(a: SparseInteractions, b: SparseInteractions, tau: float = DEFAULT_TAU,
             band: str | None = None) -> float:
    """ips(x, T, T̂) of Eq. 3 on entries: :func:`ips.analysis.metrics.pair_sensitivity` on their
    :func:`entry_grid` (Ĩ = 0 for an interaction that is not an entry on that side;
    ``band`` restricts U to an order band). NaN for an empty U."""
    norm, layout = entry_grid([[a, b]])
    one = SetLayout(layout.sets[0], layout.n[0])
    return float(pair_sensitivity(norm[0, 0], norm[0, 1], tau, band, one).value)


def keep_top(est: SparseInteractions, share: float) -> SparseInteractions:
    """The game with only its ⌈share·|Ω|⌉ (at least 1) largest |I|, as
    :func:`ips.analysis.diagnostics.keep_top` on the dense form (paper Fig. 2b; ties by kind, then
    S)."""
    k = max(1, int(np.ceil(share * 2 * ((1 << est.n) - 1) - 1e-9)))
    keep = np.sort(np.lexsort((est.masks, est.kinds, -np.abs(est.values)))[:k])
    return replace(est, kinds=est.kinds[keep], masks=est.masks[keep], values=est.values[keep])
