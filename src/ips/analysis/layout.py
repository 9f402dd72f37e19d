"""The arrays the metrics take: 2**n rows with NaN padding or sets with a `SetLayout`;
kinds, order bands, and the checks of shapes, tau, bands and pairs."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

KINDS: tuple[str, str] = ("AND", "OR")
"""Order of the kind axis of normalised interactions."""


BANDS: tuple[str, str, str] = ("low", "mid", "high")
"""Order bands; :func:`order_bands` codes them 1, 2, 3 (0 = not in Ω)."""


_BAND_CODE = {"low": 1, "mid": 2, "high": 3}


_NORM_ATOL = 1e-9  # slack when checking that normalised values lie in [-1, 1]


# --------------------------------------------------------------------------------------------
# validation helpers
# --------------------------------------------------------------------------------------------
def n_max_of(length: int, name: str) -> int:
    if length < 2 or (length & (length - 1)) != 0:
        raise ValueError(
            f"{name}: the last axis must have length 2**n_max with n_max >= 1 (one entry per "
            f"bitmask); got length {length}"
        )
    return length.bit_length() - 1


def as_float(x: ArrayLike, name: str) -> NDArray[np.float64]:
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
    x = as_float(norm, name)
    check_norm_shape(x, name)
    n_and = _infer_n(x[..., 0, :], name)
    n_or = _infer_n(x[..., 1, :], name)
    if not np.array_equal(n_and, n_or):
        raise ValueError(f"{name}: the AND and OR rows of a sample have different Ω (NaN padding)")
    return n_and


def check_norm_shape(x: NDArray[np.float64], name: str) -> int:
    if x.ndim < 2 or x.shape[-2] != 2:
        raise ValueError(
            f"{name} must have shape (..., 2, 2**n_max) (kind axis 0 = AND, 1 = OR); "
            f"got shape {x.shape}"
        )
    return n_max_of(x.shape[-1], name)


def check_tau(tau: ArrayLike) -> tuple[NDArray[np.float64], bool]:
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


def check_band(band: str | None) -> int:
    if band is None:
        return 0
    if band not in _BAND_CODE:
        raise ValueError(f"band must be one of 'low', 'mid', 'high' or None; got {band!r}")
    return _BAND_CODE[band]


def check_pair_inputs(
    norm_a: ArrayLike, norm_b: ArrayLike, layout: SetLayout | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64], SetLayout]:
    """(a, b, the layout of their columns: the bitmasks 0..M-1 unless ``layout`` is given)."""
    a = as_float(norm_a, "norm_a")
    b = as_float(norm_b, "norm_b")
    if layout is None:
        check_norm_shape(a, "norm_a")
        check_norm_shape(b, "norm_b")
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


def check_pairs(pairs: ArrayLike, n_conditions: int) -> NDArray[np.int64]:
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
def row_n(a: NDArray[np.float64], o: NDArray[np.float64], n_vars: ArrayLike | None,
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


def band_of(sizes: ArrayLike, n: ArrayLike) -> NDArray[np.int8]:
    """Order band code (1 low, 2 mid, 3 high; :func:`order_bands`) of sets of the given sizes
    |S| ≥ 1 among n variables (``sizes`` and ``n`` broadcast together)."""
    s, nn = np.asarray(sizes, dtype=np.int64), np.asarray(n, dtype=np.int64)
    return np.where(s <= nn // 3, 1, np.where(s <= (2 * nn) // 3, 2, 3)).astype(np.int8)


@dataclass(frozen=True)
class SetLayout:
    """The last axis of normalised interactions as listed sets instead of all 2^n bitmasks.

    For n beyond what a 2^n axis holds, ``ips.analysis.sparse_metrics.entry_grid`` puts a sample's
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

    def rows(self, axes: int) -> SetLayout:
        """The layout of a grid with ``axes`` more row axes after the sample axis (e.g. the
        (sample, pair) rows of a pair comparison)."""
        sets, n = np.asarray(self.sets), np.asarray(self.n)
        return SetLayout(sets.reshape(sets.shape[:1] + (1,) * axes + sets.shape[1:]),
                         n.reshape(n.shape + (1,) * axes))
