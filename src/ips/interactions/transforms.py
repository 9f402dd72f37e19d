r"""Transforms of set functions over the last axis, and the AND-OR decomposition.

All are O(n·2^n) butterflies over the last axis, batched over leading axes (the bitmask
layout of :mod:`ips.interactions`):

* zeta            (Z f)(T) = Σ_{S⊆T} f(S)
* Möbius          (M f)(S) = Σ_{T⊆S} (-1)^{|S|-|T|} f(T)   (M = Z^{-1}; Harsanyi dividends)
* complement      (P f)(T) = f(N∖T)                         (a reversal of the last axis)

AND-OR decomposition (Appendix D): with learnable γ, ``v_and = ½v + γ``, ``v_or = ½v − γ``,
``γ_∅ = ½v(∅)``::

    I_AND = M v_and,            I_OR(S) = −(M P v_or)(S)  for S ≠ ∅,   I_OR(∅) = v_or(∅) = 0,

and universal matching holds for every γ::

    v(T) = v(∅) + Σ_{∅≠S⊆T} I_AND(S) + Σ_{S∩T≠∅} I_OR(S).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

DEFAULT_N_MAX = 16


def _n_of(values: np.ndarray, n_max: int = DEFAULT_N_MAX) -> int:
    size = values.shape[-1] if values.ndim else 0
    if size < 1 or size & (size - 1):
        raise ValueError(
            f"values: last axis has length {size}, which is not a power of two 2**n "
            "(one entry per mask S ⊆ N)"
        )
    n = size.bit_length() - 1
    if n > n_max:
        raise ValueError(f"values: n = {n} variables exceeds the limit n_max = {n_max}")
    return n


def as_values(values, n_max: int = DEFAULT_N_MAX) -> tuple[np.ndarray, int]:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim == 0:
        raise ValueError("values: expected an array of shape (..., 2**n), got a scalar")
    n = _n_of(arr, n_max)
    if not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))[0]
        raise ValueError("values: non-finite entry (NaN or inf) at index "
                         f"{tuple(int(i) for i in bad)}")
    return arr, n


def butterfly(f: np.ndarray, mat: np.ndarray) -> np.ndarray:
    """Apply ⊗_{i<n} ``mat`` (one 2×2 factor per variable) to the last axis of ``f``, in place.

    Zeta, Möbius and their transposes (entries 0, ±1) run as n add/subtract passes. A general
    factor runs ``_BLOCK_BITS`` variables at a time as one small dense matrix ``mat^{⊗b}``
    applied by single-threaded BLAS calls of at most ``_CHUNK`` values: measured ≈ 4× faster
    than n generic per-level passes at n = 8-14. O((2^b/b)·n·2^n), b = 4.
    """
    n = f.shape[-1].bit_length() - 1
    lead = f.shape[:-1]
    (a, b), (c, d) = mat
    if a == d == 1 and 0 in (b, c) and abs(b + c) == 1:  # zeta, Möbius and their transposes
        for i in range(n):
            g = f.reshape(lead + (-1, 2, 1 << i))
            lo, hi = g[..., 0, :], g[..., 1, :]
            if c == 1:
                hi += lo
            elif c == -1:
                hi -= lo
            elif b == 1:
                lo += hi
            else:
                lo -= hi
        return f
    work = f if f.flags.c_contiguous else np.ascontiguousarray(f)
    done = 0
    while done < n:
        bits = min(_BLOCK_BITS, n - done)
        kron = _kron_power(float(a), float(b), float(c), float(d), bits)
        blocks = work.reshape(-1, 1 << bits, 1 << done)  # a view: updated in place
        if (1 << (bits + done)) <= _CHUNK:
            step = _CHUNK >> (bits + done)
            for s in range(0, blocks.shape[0], step):
                blocks[s:s + step] = np.matmul(kron, blocks[s:s + step])
        else:
            step = _CHUNK >> bits
            for s in range(0, 1 << done, step):
                blocks[:, :, s:s + step] = np.matmul(kron, blocks[:, :, s:s + step])
        done += bits
    if work is not f:
        f[...] = work
    return f


#: variables per dense block in :func:`butterfly` (a 2^b × 2^b matrix), and the most values
#: one BLAS call sees: 2^13 values keep m·n·k ≤ 2^17, below OpenBLAS's threading threshold
#: (2^18), so every call is single-threaded (measured: threaded calls were up to 6× slower on
#: this busy 2-core machine; einsum without BLAS was 2× slower than these)
_BLOCK_BITS, _CHUNK = 4, 1 << 13


@lru_cache(maxsize=64)
def _kron_power(a: float, b: float, c: float, d: float, bits: int) -> np.ndarray:
    """[[a, b], [c, d]]^{⊗bits} (bit i of the index picks the i-th factor), read-only."""
    out = np.ones((1, 1))
    for _ in range(bits):
        out = np.kron(np.array([[a, b], [c, d]]), out)
    out.setflags(write=False)
    return out


_ZETA = np.array([[1.0, 0.0], [1.0, 1.0]])
MOBIUS = np.array([[1.0, 0.0], [-1.0, 1.0]])


def zeta(f) -> np.ndarray:
    """(Z f)(T) = Σ_{S⊆T} f(S) over the last axis, O(n·2^n)."""
    arr = np.array(f, dtype=np.float64, copy=True)
    _n_of(arr, 64)
    return butterfly(arr, _ZETA)


def mobius(f) -> np.ndarray:
    """(M f)(S) = Σ_{T⊆S} (-1)^{|S|-|T|} f(T), the inverse of :func:`zeta`, O(n·2^n)."""
    arr = np.array(f, dtype=np.float64, copy=True)
    _n_of(arr, 64)
    return butterfly(arr, MOBIUS)


def complement(f) -> np.ndarray:
    """(P f)(T) = f(N∖T): the mask of N∖T is ``2**n - 1 - m``, so P reverses the last axis."""
    return np.asarray(f)[..., ::-1]


def harsanyi(values, *, n_max: int = DEFAULT_N_MAX) -> np.ndarray:
    """Harsanyi dividends (AND interactions of v before the AND-OR split).

    ``I(S) = Σ_{T⊆S} (-1)^{|S|-|T|} v(x_T)`` for every S ⊆ N, batched over leading axes,
    O(n·2^n) time and O(2^n) extra memory per vector. Raises ``ValueError`` for a last axis
    that is not a power of two, NaN/inf, or n > ``n_max``.
    """
    arr, _ = as_values(values, n_max)
    return butterfly(arr.copy(), MOBIUS)


def reconstruct(and_, or_) -> np.ndarray:
    """Surrogate model φ(x_T) = I_AND(∅) + Σ_{∅≠S⊆T} I_AND(S) + Σ_{S∩T≠∅} I_OR(S).

    ``and_[0]`` must hold v(∅); ``or_[0]`` is ignored (I_OR(∅) = 0). Uses
    Σ_{S∩T≠∅} y(S) = Σ_{S≠∅} y(S) − (Z y)(N∖T) for y with y(∅) = 0.
    """
    x = np.asarray(and_, dtype=np.float64)
    y = np.array(or_, dtype=np.float64, copy=True)
    y[..., 0] = 0.0
    zy = zeta(y)
    return zeta(x) + zy[..., -1:] - complement(zy)


def and_or_blocks(a: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The AND and OR blocks of a = v_and: (M a, MP a − MP v) with c = MP v."""
    return butterfly(a.copy(), MOBIUS), butterfly(complement(a).copy(), MOBIUS) - c
