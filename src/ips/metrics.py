"""Interaction-based prompt-sensitivity metrics (paper Sections 3.2, 3.3, 4.1, 4.3, App. F.8).

Everything here works on interactions that the interaction core has already extracted, and
implements the definitions of the paper's Section 3.2-3.3 literally. The diagnostics that
`ips.metrics_file` stores beside IPS (consistency, sparsity, universal matching, the hidden-state
baseline) are in `ips.diagnostics`.

Data layout
-----------
Interactions of one sample under one prompt template are two float arrays ``and_`` and ``or_``
of length ``2**n_max``, indexed by bitmask: entry ``m`` is ``I(S)`` with ``S = {i : bit i of m}``.
Entry 0 (``S = ∅``) is not part of Ω and is always ignored.  A sample with ``n < n_max``
variables has NaN in every entry ``m >= 2**n``, so its masks are exactly the first ``2**n``
entries.  Any number of leading (batch) axes is allowed.

    Ω(x|T) = {(kind, S) : kind ∈ {AND, OR}, ∅ ≠ S ⊆ N},   |Ω| = 2·(2^n − 1).

Normalised interactions (the output of :func:`normalize`) have shape ``(..., 2, 2**n_max)``,
kind axis ``0 = AND, 1 = OR``, and hold NaN exactly outside Ω (mask 0 and the padding).

Beyond 2^n arrays (sparse fits, ``ips.sparse.entry_grid``) the last axis may instead list
sets: a :class:`SetLayout` gives each column's bitmask, and the functions that take a
``layout`` (IPS, bands, types; ``ips.diagnostics.sparsity`` takes |Ω|) compute the same
numbers, every interaction off the listed sets being 0.

Conventions chosen here (where the paper is silent)
-------------------------------------------
* **Max == Min**: when every |I| in Ω is equal, nothing stands out, and the whole row is
  ``Ĩ = 0`` (so no interaction of that row is salient for any τ > 0).
* **Numerical zeros**: |I| ≤ ``ZERO_TOL``·Max (1e-6) is taken as 0 before normalising. A
  fit's zero interactions come out as ±1e-12 or so; their sign is noise, and it would make
  a pair (≈0, salient) "opposite sign" or "same sign" at random in :func:`interaction_types`.
* **n = 0**: a row whose masks 1.. are all NaN has an empty Ω; its normalised row is all NaN,
  contributes no salient interaction, and a pair of such rows has no value.
* **τ axis**: ``tau`` may be a scalar or a 1-D array.  For a 1-D array every result gets a
  *leading* τ axis (``result[t]`` belongs to ``tau[t]``); for a scalar there is no τ axis.
* **Zero on one side** (interaction types): with ``Ĩ_T = 0`` exactly and ``Ĩ_T̂`` salient, the
  sign is not reversed but the magnitude changed by more than 2×, so the interaction counts as
  *same sign & different effect*.
* Averages ignore missing values: IPS is the mean over samples of the mean over the sample's
  template pairs that have a value (non-empty U); samples without any valued pair are left out
  and counted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple
import warnings

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "KINDS",
    "BANDS",
    "INTERACTION_TYPES",
    "INTERACTION_TYPE_NAMES",
    "DEFAULT_TAU",
    "normalize",
    "infer_n_vars",
    "salient",
    "order_bands",
    "band_of",
    "SetLayout",
    "PairSensitivity",
    "pair_sensitivity",
    "all_pairs",
    "IPSResult",
    "ips",
    "interaction_types",
    "type_codes",
    "TypeShares",
    "interaction_type_shares",
    "TauSweep",
    "tau_sweep",
    "default_tau_sweep",
    "delta_ips",
]

KINDS: tuple[str, str] = ("AND", "OR")
"""Order of the kind axis of normalised interactions."""

BANDS: tuple[str, str, str] = ("low", "mid", "high")
"""Order bands; :func:`order_bands` codes them 1, 2, 3 (0 = not in Ω)."""

INTERACTION_TYPES: tuple[str, str, str] = (
    "opposite_sign",
    "same_sign_different_effect",
    "same_sign_similar_effect",
)
#: how the interaction types read in tables and legends
INTERACTION_TYPE_NAMES = {
    "opposite_sign": "opposite sign",
    "same_sign_different_effect": "same sign, different effect",
    "same_sign_similar_effect": "same sign, similar effect",
}
"""Order of the last axis returned by :func:`interaction_types`."""

DEFAULT_TAU: float = 0.1

_BAND_CODE = {"low": 1, "mid": 2, "high": 3}
#: |I| ≤ ZERO_TOL · max|I| of its row counts as 0 in `normalize` (below the float32
#: precision of v, so its sign carries no information)
ZERO_TOL = 1e-6
_NORM_ATOL = 1e-9  # slack when checking that normalised values lie in [-1, 1]


# --------------------------------------------------------------------------------------------
# validation helpers
# --------------------------------------------------------------------------------------------
def _n_max_of(length: int, name: str) -> int:
    if length < 2 or (length & (length - 1)) != 0:
        raise ValueError(
            f"{name}: the last axis must have length 2**n_max with n_max >= 1 (one entry per "
            f"bitmask); got length {length}"
        )
    return length.bit_length() - 1


def _as_float(x: ArrayLike, name: str) -> NDArray[np.float64]:
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a numeric array: {exc}") from None
    return arr


def _infer_n(arr: NDArray[np.float64], name: str) -> NDArray[np.int64]:
    """n per row of ``arr`` (shape (..., 2**n_max)) from its NaN padding; validates the pattern."""
    M = arr.shape[-1]
    body = arr[..., 1:]
    if np.isinf(body).any():
        raise ValueError(f"{name} holds ±inf; interactions must be finite")
    finite = ~np.isnan(body)
    cnt = finite.sum(axis=-1)
    n = np.rint(np.log2(cnt + 1.0)).astype(np.int64)
    expected = np.arange(1, M) < (np.int64(1) << n)[..., None]
    if not np.array_equal(finite, expected):
        raise ValueError(
            f"{name} has NaN inside Ω: every row must hold finite values in exactly its first "
            f"2**n entries (masks 1..2**n-1) and NaN in the padding m >= 2**n"
        )
    return n


def infer_n_vars(norm: ArrayLike, name: str = "norm") -> NDArray[np.int64]:
    """Number of variables n of every row of normalised interactions ``(..., 2, 2**n_max)``.

    n is read from the NaN padding (2**n − 1 non-NaN entries among masks 1..2**n_max−1, for
    both kinds); a row whose NaN pattern is not such a prefix raises ``ValueError``.
    """
    x = _as_float(norm, name)
    _check_norm_shape(x, name)
    n_and = _infer_n(x[..., 0, :], name)
    n_or = _infer_n(x[..., 1, :], name)
    if not np.array_equal(n_and, n_or):
        raise ValueError(f"{name}: the AND and OR rows of a sample have different Ω (NaN padding)")
    return n_and


def _check_norm_shape(x: NDArray[np.float64], name: str) -> int:
    if x.ndim < 2 or x.shape[-2] != 2:
        raise ValueError(
            f"{name} must have shape (..., 2, 2**n_max) (kind axis 0 = AND, 1 = OR); "
            f"got shape {x.shape}"
        )
    return _n_max_of(x.shape[-1], name)


def _check_tau(tau: ArrayLike) -> tuple[NDArray[np.float64], bool]:
    """τ as a 1-D float array and whether it was a scalar."""
    try:
        t = np.asarray(tau, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"tau must be a number or 1-D array in (0, 1); got {tau!r}") from None
    if t.ndim > 1 or t.size == 0:
        raise ValueError(f"tau must be a scalar or a non-empty 1-D array; got shape {t.shape}")
    if not (np.all(np.isfinite(t)) and np.all(t > 0.0) and np.all(t < 1.0)):
        raise ValueError(f"tau must lie in the open interval (0, 1); got {tau!r}")
    return t.reshape(-1), t.ndim == 0


def _check_band(band: str | None) -> int:
    if band is None:
        return 0
    if band not in _BAND_CODE:
        raise ValueError(f"band must be one of 'low', 'mid', 'high' or None; got {band!r}")
    return _BAND_CODE[band]


def _check_pair_inputs(
    norm_a: ArrayLike, norm_b: ArrayLike, layout: SetLayout | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64], SetLayout]:
    """(a, b, the layout of their columns: the bitmasks 0..M-1 unless ``layout`` is given)."""
    a = _as_float(norm_a, "norm_a")
    b = _as_float(norm_b, "norm_b")
    if layout is None:
        _check_norm_shape(a, "norm_a")
        _check_norm_shape(b, "norm_b")
    elif a.ndim < 2 or a.shape[-2] != 2:
        raise ValueError(f"norm_a must have shape (..., 2, M) (kind axis 0 = AND, 1 = OR); "
                         f"got shape {a.shape}")
    if a.shape != b.shape:
        raise ValueError(f"norm_a and norm_b must have the same shape; got {a.shape} and {b.shape}")
    if layout is None:
        layout = SetLayout(np.arange(a.shape[-1], dtype=np.int64), infer_n_vars(a, "norm_a"))
    if not np.array_equal(np.isnan(a[..., 1:]), np.isnan(b[..., 1:])):
        raise ValueError(
            "norm_a and norm_b must have the same Ω (same n, same NaN padding) in every row"
        )
    for arr, nm in ((a, "norm_a"), (b, "norm_b")):
        if np.nanmax(np.abs(arr[..., 1:]), initial=0.0) > 1.0 + _NORM_ATOL:
            raise ValueError(
                f"{nm} must hold normalised interactions Ĩ in [-1, 1] (the output of normalize())"
            )
    return a, b, layout


def _check_pairs(pairs: ArrayLike, n_conditions: int) -> NDArray[np.int64]:
    p = np.asarray(pairs)
    if p.size == 0:
        raise ValueError("pairs must hold at least one (i, j) condition pair")
    if p.ndim != 2 or p.shape[1] != 2:
        raise ValueError(f"pairs must have shape (n_pairs, 2); got shape {p.shape}")
    if not np.issubdtype(p.dtype, np.integer):
        raise ValueError(f"pairs must hold integer condition indices; got dtype {p.dtype}")
    if p.min() < 0 or p.max() >= n_conditions:
        raise ValueError(f"pairs holds a condition index outside 0..{n_conditions - 1}")
    if np.any(p[:, 0] == p[:, 1]):
        raise ValueError("pairs must pair two different conditions (i != j)")
    return p.astype(np.int64)


# --------------------------------------------------------------------------------------------
# normalisation, salience, orders
# --------------------------------------------------------------------------------------------
def _row_n(a: NDArray[np.float64], o: NDArray[np.float64], n_vars: ArrayLike | None,
           n_max: int) -> NDArray[np.int64]:
    """n of every row of `normalize`: read from the NaN padding of both kinds (which must
    agree), or `n_vars` checked (integers in 0..n_max, broadcastable, finite inside Ω)."""
    if n_vars is None:
        n_a = _infer_n(a, "and_")
        if not np.array_equal(n_a, _infer_n(o, "or_")):
            raise ValueError("and_ and or_ have different NaN padding (different n) in some row")
        return n_a
    nv = np.asarray(n_vars)
    if nv.dtype == bool or not (
        np.issubdtype(nv.dtype, np.integer)
        or (np.issubdtype(nv.dtype, np.floating) and np.all(nv == np.round(nv)))
    ):
        raise ValueError(f"n_vars must hold integers; got {n_vars!r}")
    try:
        n = np.broadcast_to(nv.astype(np.int64), a.shape[:-1])
    except ValueError:
        raise ValueError(
            f"n_vars of shape {nv.shape} does not broadcast to the row shape {a.shape[:-1]}"
        ) from None
    if np.any(n < 0) or np.any(n > n_max):
        raise ValueError(f"n_vars must lie in 0..n_max = {n_max}; got {n_vars!r}")
    masks = np.arange(a.shape[-1])
    inside = (masks >= 1) & (masks < (np.int64(1) << n)[..., None])
    for arr, nm in ((a, "and_"), (o, "or_")):
        if np.any(inside & ~np.isfinite(arr)):
            raise ValueError(
                f"{nm} has NaN or inf inside Ω (masks 1..2**n-1 of a row with n = n_vars)"
            )
    return n


def normalize(
    and_: ArrayLike, or_: ArrayLike, n_vars: ArrayLike | None = None
) -> NDArray[np.float64]:
    """Min-max normalised interactions Ĩ over Ω (Section 3.2).

        Ĩ(kind, S) = sgn(I) · (|I| − Min) / (Max − Min),   (kind, S) ∈ Ω,

    with Min / Max the minimum / maximum of |I| over the 2·(2^n − 1) non-empty AND and OR
    interactions of the row (mask 0 never enters).  Hence |Ĩ| ∈ [0, 1], the largest |I| maps
    to ±1 and the smallest to 0.  If Max == Min (all |I| equal) nothing stands out and the
    whole row is Ĩ = 0.  An |I| ≤ ZERO_TOL·Max (1e-6: below the float32 precision of v) is
    taken as exactly 0 first, so that a solver's ±1e-12 for a zero interaction has no sign.

    Parameters
    ----------
    and_, or_ : arrays of shape (..., 2**n_max), same shape, indexed by bitmask.
    n_vars : optional int array broadcastable to ``and_.shape[:-1]``.  If omitted, n of every
        row is read from its NaN padding (which must then be exactly the entries m >= 2**n).
        If given, the entries m >= 2**n are ignored whatever they hold.

    Returns
    -------
    Array of shape (..., 2, 2**n_max): kind axis 0 = AND, 1 = OR; NaN outside Ω.

    Raises
    ------
    ValueError
        shapes of ``and_`` / ``or_`` differ or are not 2**n_max long; NaN or ±inf inside Ω;
        ``n_vars`` not an integer in 0..n_max or not broadcastable; AND and OR padding disagree.
    """
    a = _as_float(and_, "and_")
    o = _as_float(or_, "or_")
    if a.ndim == 0 or o.ndim == 0:
        raise ValueError("and_ and or_ must be arrays of shape (..., 2**n_max)")
    if a.shape != o.shape:
        raise ValueError(f"and_ and or_ must have the same shape; got {a.shape} and {o.shape}")
    n_max = _n_max_of(a.shape[-1], "and_")
    M = a.shape[-1]
    n = _row_n(a, o, n_vars, n_max)
    x = np.stack([a, o], axis=-2)  # (..., 2, M)
    masks = np.arange(M)
    in_omega = (masks >= 1) & (masks < (np.int64(1) << n)[..., None, None])  # (..., 1, M)
    absx = np.abs(x)
    hi = np.max(np.where(in_omega, absx, -np.inf), axis=(-2, -1), keepdims=True)
    # numerical zeros (a solver's ±1e-12 where the fit is 0) are 0: their sign is noise
    zero = absx <= ZERO_TOL * hi
    x = np.where(zero, 0.0, x)
    absx = np.where(zero, 0.0, absx)
    lo = np.min(np.where(in_omega, absx, np.inf), axis=(-2, -1), keepdims=True)
    den = hi - lo
    flat = ~(den > 0)  # Max == Min (or empty Ω): nothing stands out
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.sign(x) * (absx - lo) / np.where(flat, 1.0, den)
    out = np.where(flat, 0.0, out)
    return np.where(in_omega, out, np.nan)


def salient(norm: ArrayLike, tau: ArrayLike = DEFAULT_TAU) -> NDArray[np.bool_]:
    """Salient-interaction indicator |Ĩ| > τ (Section 4.1); NaN (outside Ω) → False.

    ``tau`` is a scalar or a 1-D array in (0, 1); for a 1-D array the result gets a leading
    τ axis: shape ``(len(tau),) + norm.shape``.  Mask 0 is never salient.
    """
    x = _as_float(norm, "norm")
    t, scalar = _check_tau(tau)
    absx = np.abs(x)
    with np.errstate(invalid="ignore"):
        out = absx[None] > t.reshape((-1,) + (1,) * x.ndim)  # NaN > τ is False
    if x.ndim >= 1:
        out[..., 0] = False
    return out[0] if scalar else out


def order_bands(n: ArrayLike, n_max: int | None = None) -> NDArray[np.int8]:
    """Order band of every bitmask for samples with n variables (Section 4.3).

    With |S| the popcount of the mask:

        low  (code 1):  1 ≤ |S| ≤ ⌊n/3⌋
        mid  (code 2):  ⌊n/3⌋ < |S| ≤ ⌊2n/3⌋
        high (code 3):  ⌊2n/3⌋ < |S| ≤ n
        code 0: not in Ω (mask 0 or mask ≥ 2**n).

    ``n`` may be an int or an int array (per row); the result has shape
    ``np.shape(n) + (2**n_max,)`` with ``n_max`` defaulting to ``max(n)``.
    """
    na = np.asarray(n)
    if not np.issubdtype(na.dtype, np.integer):
        raise ValueError(f"n must hold integers; got {n!r}")
    if na.size and na.min() < 0:
        raise ValueError(f"n must be >= 0; got {n!r}")
    top = int(na.max()) if na.size else 0
    if n_max is None:
        n_max = top
    if n_max < top:
        raise ValueError(f"n_max = {n_max} is smaller than the largest n = {top}")
    masks = np.arange(1 << n_max, dtype=np.int64)
    nn = na.astype(np.int64)
    code = SetLayout(masks, nn).bands()
    return np.where(masks < (np.int64(1) << nn)[..., None], code, 0).astype(np.int8)


def band_of(sizes: ArrayLike, n: ArrayLike) -> NDArray[np.int8]:
    """Order band code (1 low, 2 mid, 3 high; :func:`order_bands`) of sets of the given sizes
    |S| ≥ 1 among n variables (``sizes`` and ``n`` broadcast together)."""
    s, nn = np.asarray(sizes, dtype=np.int64), np.asarray(n, dtype=np.int64)
    return np.where(s <= nn // 3, 1, np.where(s <= (2 * nn) // 3, 2, 3)).astype(np.int8)


@dataclass(frozen=True)
class SetLayout:
    """The last axis of normalised interactions as listed sets instead of all 2^n bitmasks.

    For n beyond what a 2^n axis holds, ``ips.sparse.entry_grid`` puts a sample's
    interactions on the sets that are an entry of any of its games: column j of a row is the
    set with bitmask ``sets[..., j]``, column 0 is ∅ (never in Ω) and −1 pads a row (NaN in
    the grid). An interaction of Ω outside the listed sets is 0. Every function that takes a
    ``layout`` computes on such a grid exactly what it computes on the 2^n axis.

    sets : int64 (sample, M), the bitmask of every column of a sample's rows (for
        :func:`pair_sensitivity` and :func:`interaction_types`: broadcastable to the rows).
    n : int64 (sample,), the number of variables (likewise).
    """

    sets: NDArray[np.int64]
    n: NDArray[np.int64]

    def bands(self) -> NDArray[np.int8]:
        """Order band code of every column (0 for ∅ and padding)."""
        sets = np.asarray(self.sets, dtype=np.int64)
        code = band_of(np.bitwise_count(np.maximum(sets, 0)), np.asarray(self.n)[..., None])
        return np.where(sets > 0, code, 0).astype(np.int8)

    @property
    def omega(self) -> NDArray[np.float64]:
        """|Ω| = 2·(2^n − 1) of every row (a float: 2^n overflows nothing up to n = 62)."""
        return 2.0 * (np.exp2(np.asarray(self.n, dtype=np.float64)) - 1.0)

    def rows(self, axes: int) -> "SetLayout":
        """The layout of a grid with ``axes`` more row axes after the sample axis (e.g. the
        (sample, pair) rows of a pair comparison)."""
        sets, n = np.asarray(self.sets), np.asarray(self.n)
        return SetLayout(sets.reshape(sets.shape[:1] + (1,) * axes + sets.shape[1:]),
                         n.reshape(n.shape + (1,) * axes))


# --------------------------------------------------------------------------------------------
# core reduction over U for a τ grid
# --------------------------------------------------------------------------------------------
def _tail_sums(
    k: NDArray[np.int64], n_tau: int, weights: NDArray[np.float64] | None = None,
    group: NDArray[np.int64] | None = None, n_groups: int = 1,
) -> NDArray:
    """For rows r and sorted τ index t: Σ weight over elements with k > t (optionally per group).

    ``k`` (R, K) holds, per element, the number of sorted τ values strictly below its salience
    magnitude, i.e. the element belongs to U exactly for τ indices t < k.  Returns (R, G, T).
    """
    R, K = k.shape
    rows = np.arange(R, dtype=np.int64)[:, None]
    g = 0 if group is None else group
    idx = ((rows * n_groups + g) * (n_tau + 1) + k).ravel()
    h = np.bincount(idx, weights=None if weights is None else weights.ravel(),
                    minlength=R * n_groups * (n_tau + 1))
    h = h.reshape(R, n_groups, n_tau + 1)
    tail = np.cumsum(h[..., ::-1], axis=-1)[..., ::-1]  # tail[j] = Σ_{k' ≥ j} h[k']
    return tail[..., 1:]


def type_codes(norm_a: ArrayLike, norm_b: ArrayLike) -> NDArray[np.int64]:
    """The type of every interaction, as an index into `INTERACTION_TYPES` (same shape).

    0 ``opposite_sign`` (Ĩ_T · Ĩ_T̂ < 0); 2 ``same_sign_similar_effect`` (same sign, ratio of
    magnitudes within [1/2, 2]); 1 ``same_sign_different_effect`` otherwise (incl. exactly 0
    on one side). Meaningful for the interactions of U (see :func:`interaction_types`).
    """
    a = np.asarray(norm_a, dtype=np.float64)
    b = np.asarray(norm_b, dtype=np.float64)
    aa, bb = np.abs(a), np.abs(b)
    with np.errstate(invalid="ignore"):
        prod = a * b
        similar = (prod > 0) & ~((aa > 2.0 * bb) | (bb > 2.0 * aa))
        return np.where(prod < 0, 0, np.where(similar, 2, 1)).astype(np.int64)


def _union_grid(
    a: NDArray[np.float64], b: NDArray[np.float64], layout: SetLayout,
    tau: ArrayLike, band: str | None, types: bool,
) -> tuple[NDArray, NDArray, bool]:
    """Shared core: (Σ_U term or per-type counts, |U|) over leading τ axis."""
    t, scalar = _check_tau(tau)
    code = _check_band(band)
    order = np.argsort(t, kind="stable")
    inv = np.argsort(order, kind="stable")
    ts = t[order]
    T = ts.size

    batch = a.shape[:-2]
    M = a.shape[-1]
    R = int(np.prod(batch, dtype=np.int64))
    aa, bb = np.abs(a), np.abs(b)
    m = np.fmax(aa, bb)  # salient under a or b  <=>  max(|Ĩa|, |Ĩb|) > τ
    keep = ~np.isnan(m)
    keep[..., 0] = False  # mask 0 is not in Ω
    if code:
        keep &= (layout.bands() == code)[..., None, :]
    m = np.where(keep, m, 0.0)  # 0 is below every τ > 0
    k = np.searchsorted(ts, m.reshape(R, 2 * M), side="left").astype(np.int64)

    if types:
        grp = type_codes(a, b).reshape(R, 2 * M)
        counts = _tail_sums(k, T, group=grp, n_groups=3)  # (R, 3, T)
        main = np.moveaxis(counts, -1, 0)[inv].reshape((T,) + batch + (3,))
        n_union = main.sum(axis=-1)
    else:
        with np.errstate(invalid="ignore", divide="ignore"):
            term = np.abs(a - b) / ((aa + bb) / 2.0)
        term = np.where(keep & (m > 0), term, 0.0).reshape(R, 2 * M)
        sums = _tail_sums(k, T, weights=term)[:, 0, :]  # (R, T)
        cnt = _tail_sums(k, T)[:, 0, :]
        main = sums.T[inv].reshape((T,) + batch)
        n_union = cnt.T[inv].reshape((T,) + batch)
    return main, n_union.astype(np.int64), scalar


class PairSensitivity(NamedTuple):
    """Result of :func:`pair_sensitivity`."""

    value: NDArray[np.float64]
    """ips(x, T, T̂) in [0, 2]; NaN where U is empty."""
    n_union: NDArray[np.int64]
    """|U| (restricted to the band if one was given)."""


def pair_sensitivity(
    norm_a: ArrayLike, norm_b: ArrayLike, tau: ArrayLike = DEFAULT_TAU, band: str | None = None,
    layout: SetLayout | None = None,
) -> PairSensitivity:
    """Prompt sensitivity of one template pair per row (Eq. 3, inner term).

        U = Ω_salient(x|T) ∪ Ω_salient(x|T̂),  Ω_salient(x|T) = {(kind,S) ∈ Ω : |Ĩ_T| > τ}
        ips(x,T,T̂) = (1/|U|) Σ_{(kind,S) ∈ U} |Ĩ_T − Ĩ_T̂| / ((|Ĩ_T| + |Ĩ_T̂|)/2)  ∈ [0, 2]

    With ``band`` ∈ {"low", "mid", "high"}, U is restricted to that order band of
    :func:`order_bands` (n of every row read from its NaN padding), giving the per-pair term
    of IPS^low/mid/high.

    Parameters
    ----------
    norm_a, norm_b : normalised interactions (output of :func:`normalize`) of the same samples
        under templates T and T̂, shape (..., 2, 2**n_max), same shape and same Ω per row.
    tau : scalar or 1-D array in (0, 1); a 1-D array adds a leading τ axis to both outputs.
    band : None (all of U) or "low" / "mid" / "high".
    layout : the sets of the last axis (:class:`SetLayout`, arrays broadcastable to the rows)
        when it is not the 2**n_max bitmasks.

    Returns
    -------
    PairSensitivity(value, n_union), each of shape ``[len(tau),] + norm_a.shape[:-2]``;
    ``value`` is NaN where U is empty.
    """
    a, b, layout = _check_pair_inputs(norm_a, norm_b, layout)
    sums, cnt, scalar = _union_grid(a, b, layout, tau, band, types=False)
    with np.errstate(invalid="ignore", divide="ignore"):
        value = np.where(cnt > 0, sums / np.where(cnt > 0, cnt, 1), np.nan)
    if scalar:
        return PairSensitivity(value[0], cnt[0])
    return PairSensitivity(value, cnt)


def all_pairs(n_conditions: int) -> NDArray[np.int64]:
    """All unordered pairs (i, j), i < j, of ``n_conditions`` conditions; shape (C(C−1)/2, 2)."""
    if isinstance(n_conditions, bool) or not isinstance(n_conditions, (int, np.integer)):
        raise ValueError(f"n_conditions must be an int; got {n_conditions!r}")
    if n_conditions < 2:
        raise ValueError(f"n_conditions must be >= 2 to form a pair; got {n_conditions}")
    i, j = np.triu_indices(int(n_conditions), k=1)
    return np.stack([i, j], axis=1).astype(np.int64)


@dataclass(frozen=True)
class IPSResult:
    """Result of :func:`ips`.  With a 1-D ``tau`` every field except ``pairs``/``band`` has a
    leading τ axis."""

    value: float | NDArray[np.float64]
    """IPS (or IPS^band): mean over valued samples of the per-sample mean over valued pairs."""
    per_pair: NDArray[np.float64]
    """ips(x, T, T̂), shape ([τ,] sample, pair); NaN where U is empty."""
    per_sample: NDArray[np.float64]
    """Mean over the sample's valued pairs, shape ([τ,] sample); NaN if none."""
    n_union: NDArray[np.int64]
    """|U| per (sample, pair)."""
    n_empty_pairs: int | NDArray[np.int64]
    """Number of (sample, pair) cells with an empty U (no value)."""
    n_valued_samples: int | NDArray[np.int64]
    """Number of samples with at least one valued pair (those averaged into ``value``)."""
    tau: float | NDArray[np.float64]
    band: str | None
    pairs: NDArray[np.int64]


def ips(
    norm: ArrayLike,
    pairs: ArrayLike | None = None,
    tau: ArrayLike = DEFAULT_TAU,
    band: str | None = None,
    layout: SetLayout | None = None,
) -> IPSResult:
    """Interaction-based Prompt Sensitivity (Eq. 3) and IPS^low/mid/high (Section 4.3).

        IPS = E_x [ E_{(T,T̂)} [ ips(x, T, T̂) ] ]

    with ips(x, T, T̂) of :func:`pair_sensitivity`.  The inner mean runs over the given
    unordered condition pairs whose U is non-empty; the outer mean over samples with at least
    one such pair.  Empty pairs / unvalued samples are counted in the result.

    Parameters
    ----------
    norm : normalised interactions of shape (sample, condition, 2, 2**n_max).
    pairs : (n_pairs, 2) int condition indices; default :func:`all_pairs` of all conditions.
    tau : scalar or 1-D array in (0, 1) (1-D → leading τ axis in the result).
    band : None, "low", "mid" or "high".
    layout : :class:`SetLayout` of the last axis (sets (sample, M), n (sample,)) when it is
        not the 2**n_max bitmasks.
    """
    x = _as_float(norm, "norm")
    if x.ndim != 4:
        raise ValueError(
            f"norm must have shape (sample, condition, 2, 2**n_max); got shape {x.shape}"
        )
    if layout is None:
        _check_norm_shape(x, "norm")
    p = all_pairs(x.shape[1]) if pairs is None else _check_pairs(pairs, x.shape[1])
    a, b = x[:, p[:, 0]], x[:, p[:, 1]]  # (S, P, 2, M)
    t, scalar = _check_tau(tau)
    # always with τ axis here: (T, S, P)
    res = pair_sensitivity(a, b, t, band, None if layout is None else layout.rows(1))
    per_pair, n_union = res.value, res.n_union
    valued = ~np.isnan(per_pair)
    n_val = valued.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        per_sample = np.where(
            n_val > 0, np.where(valued, per_pair, 0.0).sum(axis=-1) / np.maximum(n_val, 1), np.nan
        )
    s_valued = ~np.isnan(per_sample)
    n_s = s_valued.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        value = np.where(
            n_s > 0, np.where(s_valued, per_sample, 0.0).sum(axis=-1) / np.maximum(n_s, 1), np.nan
        )
    n_empty = (~valued).sum(axis=(-2, -1))
    if scalar:
        return IPSResult(
            value=float(value[0]), per_pair=per_pair[0], per_sample=per_sample[0],
            n_union=n_union[0], n_empty_pairs=int(n_empty[0]), n_valued_samples=int(n_s[0]),
            tau=float(t[0]), band=band, pairs=p,
        )
    return IPSResult(
        value=value, per_pair=per_pair, per_sample=per_sample, n_union=n_union,
        n_empty_pairs=n_empty.astype(np.int64), n_valued_samples=n_s.astype(np.int64),
        tau=t, band=band, pairs=p,
    )


# --------------------------------------------------------------------------------------------
# interaction types (Section 3.3)
# --------------------------------------------------------------------------------------------
def interaction_types(
    norm_a: ArrayLike, norm_b: ArrayLike, tau: ArrayLike = DEFAULT_TAU, band: str | None = None,
    layout: SetLayout | None = None,
) -> NDArray[np.int64]:
    """Count the interactions of U of every row by type (Section 3.3).

    For (kind, S) ∈ U (see :func:`pair_sensitivity`; optionally restricted to ``band``):

    * ``opposite_sign``:               Ĩ_T · Ĩ_T̂ < 0;
    * ``same_sign_different_effect``:  Ĩ_T · Ĩ_T̂ > 0 and |Ĩ_T|/|Ĩ_T̂| > 2 or < 1/2;
      also when one side is exactly 0 and the other salient (its magnitude changed by more
      than 2×, the sign did not flip);
    * ``same_sign_similar_effect``:    Ĩ_T · Ĩ_T̂ > 0 and 1/2 ≤ |Ĩ_T|/|Ĩ_T̂| ≤ 2.

    ``layout`` as in :func:`pair_sensitivity`.

    Returns
    -------
    int array of shape ``[len(tau),] + norm_a.shape[:-2] + (3,)``, last axis in the order of
    :data:`INTERACTION_TYPES`; it sums to |U| over the last axis.
    """
    a, b, layout = _check_pair_inputs(norm_a, norm_b, layout)
    counts, _, scalar = _union_grid(a, b, layout, tau, band, types=True)
    return counts[0] if scalar else counts


@dataclass(frozen=True)
class TypeShares:
    """Result of :func:`interaction_type_shares`.  Arrays have a leading τ axis for a 1-D tau;
    the last axis follows :data:`INTERACTION_TYPES`."""

    changed: NDArray[np.float64]
    """Share of each type among all salient interactions of pairs whose prediction changed."""
    unchanged: NDArray[np.float64]
    """Same for pairs whose prediction stayed the same."""
    counts_changed: NDArray[np.int64]
    counts_unchanged: NDArray[np.int64]
    sample_counts_changed: NDArray[np.int64]
    """Per-sample counts ([T,] sample, type) over the sample's changed pairs; their sum over
    samples is ``counts_changed``."""
    sample_counts_unchanged: NDArray[np.int64]
    n_pairs_changed: int
    """Number of (sample, pair) cells whose prediction changed."""
    n_pairs_unchanged: int


def interaction_type_shares(
    norm: ArrayLike,
    pred: ArrayLike,
    pairs: ArrayLike | None = None,
    tau: ArrayLike = DEFAULT_TAU,
    band: str | None = None,
    layout: SetLayout | None = None,
) -> TypeShares:
    """Shares of the three interaction types, split by whether the prediction changed (Fig. 3b).

    For every (sample, pair (i, j)) the type counts of :func:`interaction_types` are pooled
    over all cells with ``pred[s, i] != pred[s, j]`` ("changed") and over all other cells
    ("unchanged"); a share is a pooled count divided by the pooled |U| (NaN if that is 0).

    Parameters
    ----------
    norm : (sample, condition, 2, 2**n_max) normalised interactions.
    pred : (sample, condition) predictions (any comparable labels).
    pairs : (n_pairs, 2) condition pairs; default all unordered pairs.
    layout : as in :func:`ips`.
    """
    x = _as_float(norm, "norm")
    if x.ndim != 4:
        raise ValueError(
            f"norm must have shape (sample, condition, 2, 2**n_max); got shape {x.shape}"
        )
    pr = np.asarray(pred)
    if pr.shape != x.shape[:2]:
        raise ValueError(
            f"pred must have shape (sample, condition) = {x.shape[:2]}; got {pr.shape}"
        )
    p = all_pairs(x.shape[1]) if pairs is None else _check_pairs(pairs, x.shape[1])
    counts = interaction_types(x[:, p[:, 0]], x[:, p[:, 1]], tau, band,
                               None if layout is None else layout.rows(1))  # ([T,] S, P, 3)
    changed = pr[:, p[:, 0]] != pr[:, p[:, 1]]  # (S, P)
    s_ch = np.where(changed[..., None], counts, 0).sum(axis=-2)  # ([T,] S, 3)
    s_un = np.where(changed[..., None], 0, counts).sum(axis=-2)
    c_ch, c_un = s_ch.sum(axis=-2), s_un.sum(axis=-2)
    with np.errstate(invalid="ignore", divide="ignore"):
        sh_ch = c_ch / c_ch.sum(axis=-1, keepdims=True)
        sh_un = c_un / c_un.sum(axis=-1, keepdims=True)
    return TypeShares(
        changed=sh_ch, unchanged=sh_un, counts_changed=c_ch, counts_unchanged=c_un,
        sample_counts_changed=s_ch, sample_counts_unchanged=s_un,
        n_pairs_changed=int(changed.sum()), n_pairs_unchanged=int((~changed).sum()),
    )


# --------------------------------------------------------------------------------------------
# τ robustness (Appendix F.8) and relative change (Section 4.3)
# --------------------------------------------------------------------------------------------
def default_tau_sweep() -> NDArray[np.float64]:
    """The τ sweep of Appendix F.8: 0.05, 0.06, …, 0.20 (16 values, exact decimals)."""
    return np.round(0.05 + 0.01 * np.arange(16), 2)


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
    x = _as_float(ips_by_model_tau, "ips_by_model_tau")
    if x.ndim != 2:
        raise ValueError(f"ips_by_model_tau must have shape (model, tau); got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("ips_by_model_tau must be finite (a model without IPS has no rank)")
    n_model, n_tau = x.shape
    nan_mat = np.full((n_tau, n_tau), np.nan)
    if n_model < 3 or n_tau < 2:
        return TauSweep(float("nan"), float("nan"), nan_mat, nan_mat.copy())
    # here, not at the top: scoring and fitting import this module (through ips.sparse), and
    # SciPy's statistics cost each of their jobs 0.6 s (measured on a miniature score job)
    import scipy.stats

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


def delta_ips(ips_a: ArrayLike, ips_b: ArrayLike) -> float | NDArray[np.float64]:
    """Relative change ΔIPS = (IPS_A − IPS_B) / IPS_B (Section 4.3); A has the factor
    (instruct, dense, few-shot).  Works elementwise on arrays; ``ValueError`` if IPS_B == 0."""
    a = _as_float(ips_a, "ips_a")
    b = _as_float(ips_b, "ips_b")
    if np.any(b == 0):
        raise ValueError("ips_b must be non-zero (it is the denominator of ΔIPS)")
    out = (a - b) / b
    return float(out) if out.ndim == 0 else out
