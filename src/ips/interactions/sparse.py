r"""Sparse AND-OR interactions from a budget of masked prompts (beyond 2^n; paper App. J).

The exact fit (:func:`ips.interactions.and_or`, Section 3.1 and Appendix D) needs v on all
2^n masks. Write b(T) = v(x_T) − v(x_∅). Universal matching (Theorem 3.1) is one linear row
per mask T,

    b(T) = Σ_{∅≠S⊆T} x(S) + Σ_{S∩T≠∅} y(S),        x = I_AND, y = I_OR,

and Eq. 12 is basis pursuit over all 2^n rows: min ‖x‖₁ + ‖y‖₁ (S ≠ ∅). AND interactions are
the Möbius transform of v_and; OR interactions that of the dual game of v_or (Appendix C), so
the paper's sparsity property (Appendix B.2: a few salient interactions explain v) is the
compressed-sensing assumption: a K-sparse (x, y) is pinned down by far fewer than 2^n rows.

Method (the compressed-sensing form of Eq. 12 restricted to a design D ⊂ 2^N and a candidate
set C of interactions):

    min Σ_{S∈C} |x(S)| + |y(S)|   s.t.   |b(T) − Σ_{S∈C, S⊆T} x(S) − Σ_{S∈C, S∩T≠∅} y(S)| ≤ ε·|v(N) − v(∅)|
                                          for every T ∈ D (ε = 0: exact on the design),

solved as the exact fit is: HiGHS's LP for the optimum, then the least-ℓ2 point of its optimal
face (Clarabel), so ties (AND{i} and OR{i} are the same column; columns that the design does
not tell apart) are split the canonical way. With D = all masks, C = all sets and ε = 0 it *is*
Eq. 12 and returns ``and_or(v, solver="exact")``'s canonical optimum.

Design (:func:`design`): every mask of the outer size levels |T| ∈ {0, n, 1, n−1, 2, …} while
they fill ``extremes`` of the budget (a high-order AND(S) is nonzero only on T ⊇ S, a
high-order OR(S) is told apart from a constant only on T ⊆ N∖S: only near-full and near-empty
masks see them), the rest uniformly random masks (each variable kept with probability ½, which
probes every low-order interaction with 2^{-|S|} of them).

Candidates (``order``): all non-empty S for ``order=None`` (n ≤ ``FULL_MAX_N``), otherwise the
S with |S| ≤ k or |S| ≥ n − k, for both kinds.

Assumptions: (1) sparsity: v is matched by few interactions (Appendix B.2); (2) for
``order=k``: no salient interaction of order k < |S| < n − k. Failure modes: a dense game (many
interactions of similar size, e.g. a flat, noisy v) is not recovered from few rows: the ℓ1
fit then puts the mass on the interactions the design sees best and the salient set drifts;
interactions that no design row can tell apart from another candidate (``aliased``) or that
no row sees (``unobserved``, their value is 0 by the objective) are not determined by the
data; and with ``order=k`` the interactions outside C are folded into the ones inside.
``heldout_error`` measures all of these: the fit's error on design masks it did not use (see
:func:`estimate`), an NRMSE as in :func:`ips.analysis.diagnostics.matching_nrmse`; above
``UNRELIABLE_HELDOUT`` (1 %) the estimate is flagged (``reliable``).

Measured limits: games generated from ≤ 10 interactions of order ≤ 4 are recovered exactly
from 64-256 masks at n = 8-12, and low-order ones at n = 20 from 300 masks. Real LLM games
are not of that kind: SmolLM2's exact fit at n = 8 has ~270 of 510 interactions nonzero, a
dense tail under a few salient ones, and Eq. 12's salient set is itself fragile (noise of
0.3 % of the range of v already moves its Jaccard to ~0.8), so the salient set of a sparse
estimate agrees poorly with the exact one unless the budget approaches 2^n
(benchmarks/bench_sparse.py).

Sparse-form metrics: :func:`normalize` and :func:`salient` are the Section 3.2 definitions on
the entries alone (an interaction that is not an entry is 0); :func:`entry_grid` lays the
games of many samples on the sets of their entries, where every function of ``ips.analysis.metrics``
that takes a ``layout`` (IPS and its bands, types, sparsity) computes what it computes on
the 2^n axis, for any n (``ips metrics`` of sparse fits; :func:`pair_ips`, :func:`keep_top`).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from math import comb

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ips.interactions import l1_optimum, unit_scale
from ips.interactions.design import check_n, masks_of_size, popcount
from ips.interactions.result import ZERO_TOL

log = logging.getLogger(__name__)

__all__ = [
    "AND",
    "OR",
    "FULL_MAX_N",
    "SparseInteractions",
    "candidates",
    "default_order",
    "estimate",
    "UNRELIABLE_HELDOUT",
    "from_dense",
]

AND, OR = 0, 1
#: ``order=None`` (every S as a candidate) up to this n: the LP then has 4·(2^n − 1) columns
FULL_MAX_N = 14
#: share of the design's random masks held out by default to measure ``heldout_error``
HOLDOUT = 0.1
#: ``heldout_error`` above this marks an estimate unreliable. Measured on SmolLM2 games
#: (n = 8): the *exact* fit of v plus Gaussian noise of 0.1 / 0.3 / 1 / 3 % of the range of v
#: keeps a salient-set Jaccard of 0.9-1 / 0.75-0.8 / 0.56 / 0.1-0.4 with the exact fit of v
#: and moves ips(x,T,T̂) by 0.02 / 0.03 / 0.01 / 0.31: an estimate whose values are off by
#: more than 1 % of the range cannot pin down IPS, by more than ~0.3 % not the salient set.
#: Necessary, not sufficient: Gemma 3 estimates at n = 12 below it (0.7 %) still had
#: Jaccard 0.29-0.46 and |dIPS| 0.14-0.21 (bench_sparse; docs/method.md#sparse-estimation).
UNRELIABLE_HELDOUT = 0.01
#: ε tried in turn when the restricted problem has no exact solution on the design
_NOISE_STEPS = (0.0, 1e-4, 1e-3, 1e-2, 3e-2, 0.1, 0.3)


@dataclass
class SparseInteractions:
    """AND-OR interactions of one game as (kind, S, value) entries; all others are 0.

    Attributes
    ----------
    n : number of variables.
    kinds, masks, values : the entries, aligned: kind (``AND`` = 0, ``OR`` = 1), S as a
        bitmask (bit i set when variable i ∈ S; S ≠ ∅), and I_kind(S). Unique (kind, S).
    v_empty : v(x_∅) = I_AND(∅).
    objective : Σ |values| (Eq. 12 without its constant |v(∅)|).
    heldout_error : RMS over the held-out masks of φ(x_T) − v(x_T), divided by the range
        max v − min v over the design; NaN when nothing was held out.
    fit_error : the same over the masks the fit used (0 up to the solver's tolerance when
        ``noise`` is 0).
    n_fit, n_heldout : number of design masks fitted and held out.
    order : candidate order k (None: every S was a candidate).
    noise : ε of the fit (the first of ``_NOISE_STEPS`` that was feasible, or the one given).
    unobserved : candidates (kind, S) whose row pattern is constant on the fitted masks:
        no fitted mask tells them apart from 0 (AND) or from v(∅) (OR); their value is 0.
    aliased : candidates whose row pattern on the fitted masks equals that of another
        candidate with a different pattern on all 2^n masks (AND{i} ≡ OR{i} does not count):
        the data do not separate them; the least-ℓ2 rule splits their sum.
    info : solver details (seconds, LP size).
    complete : the design held all 2^n masks: the interactions are Eq. 12's exact fit
        (``ips.fitting.cube.fit_sparse``), reliable whatever ``heldout_error`` (NaN: nothing held out).
    """

    n: int
    kinds: NDArray[np.int8]
    masks: NDArray[np.int64]
    values: NDArray[np.float64]
    v_empty: float
    objective: float
    heldout_error: float
    fit_error: float
    n_fit: int
    n_heldout: int
    order: int | None
    noise: float
    unobserved: int
    aliased: int
    info: dict = field(default_factory=dict)
    complete: bool = False

    def __len__(self) -> int:
        return len(self.values)

    @property
    def reliable(self) -> bool:
        """``complete``, or ``heldout_error`` ≤ UNRELIABLE_HELDOUT (False when nothing was
        held out)."""
        return self.complete or bool(self.heldout_error <= UNRELIABLE_HELDOUT)

    def relative_error(self, masks: ArrayLike, values: ArrayLike) -> float:
        """RMS of φ(x_T) − v(x_T) over the masks given, divided by the range of their v (0
        for a constant v): ``fit_error`` when they are the whole design."""
        v = np.asarray(values, dtype=np.float64)
        return _nrmse(self.predict(masks), v, float(np.ptp(v)))

    def predict(self, masks: ArrayLike) -> NDArray[np.float64]:
        """φ(x_T) = v(∅) + Σ_{AND S⊆T} x(S) + Σ_{OR S∩T≠∅} y(S) for every mask T given."""
        t = np.asarray(masks, dtype=np.int64).ravel()
        out = np.full(t.shape, self.v_empty)
        for lo in range(0, len(t), _CHUNK_ROWS):
            tt = t[lo:lo + _CHUNK_ROWS, None]
            on = np.where(self.kinds == AND, (self.masks & ~tt) == 0, (self.masks & tt) != 0)
            out[lo:lo + _CHUNK_ROWS] += on @ self.values
        return out


_CHUNK_ROWS = 256


# ----------------------------------------------------------------------------- design


def candidates(n: int, order: int | None) -> NDArray[np.int64]:
    """Candidate sets S ≠ ∅ (bitmasks) for both kinds: all of them for ``order=None``,
    else those with |S| ≤ order or |S| ≥ n − order."""
    n = check_n(n)
    if order is None:
        if n > FULL_MAX_N:
            raise ValueError(f"order: every S as a candidate needs n ≤ {FULL_MAX_N} "
                             f"(n = {n}); give an order k (|S| ≤ k or |S| ≥ n − k)")
        return np.arange(1, 1 << n, dtype=np.int64)
    if isinstance(order, bool) or not isinstance(order, (int, np.integer)) or order < 1:
        raise ValueError(f"order: must be None or an integer ≥ 1, got {order!r}")
    sizes = sorted({s for s in range(1, n + 1) if s <= order or s >= n - order})
    return np.sort(np.concatenate([masks_of_size(n, s) for s in sizes]))


def default_order(n: int, budget: int) -> int | None:
    """None (all S) for n ≤ FULL_MAX_N; beyond, the largest k whose candidates number at
    most 4·budget per kind (at least 1)."""
    if n <= FULL_MAX_N:
        return None
    k = 1
    while 2 * (k + 1) < n and sum(comb(n, s) for s in range(1, k + 2)) * 2 <= 4 * budget:
        k += 1
    return k


# ----------------------------------------------------------------------------- estimate

def _row_matrices(rows: NDArray[np.int64], cand: NDArray[np.int64], full: int):
    """(A_and, A_out) as CSC: A_and[T, S] = [S ⊆ T] and A_out[T, S] = [S ⊆ N∖T].

    With y(∅) := −Σ_{S≠∅} y(S), the OR part of a row is Σ_{S∩T≠∅} y(S) = −y(∅) − Σ_{∅≠S⊆N∖T}
    y(S): both matrices are sparse (the OR column of S is −1 only where S misses T), as in
    the exact fit's equality form.
    """
    import scipy.sparse as sp

    r_and, c_and, r_out, c_out = [], [], [], []
    for lo in range(0, len(rows), _CHUNK_ROWS):
        t = rows[lo:lo + _CHUNK_ROWS, None]
        i, j = np.nonzero((cand & ~t) == 0)
        r_and.append(i + lo)
        c_and.append(j)
        i, j = np.nonzero((cand & t) == 0)
        r_out.append(i + lo)
        c_out.append(j)
    shape = (len(rows), len(cand))

    def build(r, c):
        r, c = np.concatenate(r), np.concatenate(c)
        return sp.csc_matrix((np.ones(len(r)), (r, c)), shape=shape)

    return build(r_and, c_and), build(r_out, c_out)


def _identifiability(a_and, a_out, cand: NDArray[np.int64]) -> tuple[int, int]:
    """(unobserved, aliased) candidates on the fitted rows (see SparseInteractions)."""
    n_rows = a_and.shape[0]
    cols = {}
    unobserved = aliased = 0
    singles = popcount(cand) == 1
    for kind, mat in ((AND, a_and), (OR, a_out)):
        nnz = np.diff(mat.indptr)
        # AND: all-zero column = never on; OR: S ⊆ N∖T on every row = never on
        unobserved += int(np.sum(nnz == 0 if kind == AND else nnz == n_rows))
        for j in range(mat.shape[1]):
            if nnz[j] == (0 if kind == AND else n_rows):
                continue  # unobserved, counted above
            rows = mat.indices[mat.indptr[j]:mat.indptr[j + 1]]
            key = rows.tobytes() if kind == AND else np.setdiff1d(
                np.arange(n_rows), rows, assume_unique=True).tobytes()
            if kind == OR and singles[j]:
                continue  # OR{i} ≡ AND{i} on every mask: not a sampling effect
            cols.setdefault(key, []).append(j)
    for group in cols.values():
        if len(group) > 1:
            aliased += len(group)
    return unobserved, aliased


def _solve(rows, b, cand, full: int, radius: float, n: int, canonical: bool = True):
    """Restricted Eq. 12 (`ips.interactions.l1_optimum`); z = (x⁺, x⁻, y⁺, y⁻, y∅, q) or None
    when infeasible. Row 0 must be T = ∅ (it defines y(∅); it carries no noise term)."""
    import scipy.sparse as sp

    a_and, a_out = _row_matrices(rows, cand, full)
    k = len(cand)
    ones = sp.csc_matrix(np.ones((len(rows), 1)))
    a_eq = sp.hstack([a_and, -a_and, -a_out, a_out, -ones]).tocsc()
    nq = len(rows) - 1 if radius > 0 else 0
    if nq:
        a_eq = sp.hstack([a_eq, -sp.eye(len(rows), format="csc")[:, 1:]]).tocsc()
    got = l1_optimum(a_eq, b, k, nq, radius, n, "sparse AND-OR fit", canonical)
    if got is None:
        return None, (a_and, a_out)
    z = got[0] if canonical else _split_singletons(got[0], cand)
    return z, (a_and, a_out)


def _split_singletons(z: np.ndarray, cand: np.ndarray) -> np.ndarray:
    """AND{i} and OR{i} are one column: give each half of their sum, the least-ℓ2 split."""
    k = len(cand)
    one = np.flatnonzero(popcount(cand) == 1)
    total = (z[one] - z[k + one]) + (z[2 * k + one] - z[3 * k + one])
    half = total / 2
    z = z.copy()
    for base in (0, 2 * k):
        z[base + one] = np.maximum(half, 0)
        z[base + k + one] = np.maximum(-half, 0)
    return z


def _nrmse(pred: np.ndarray, v: np.ndarray, span: float) -> float:
    if len(v) == 0:
        return float("nan")
    rms = float(np.sqrt(np.mean((pred - v) ** 2)))
    return rms / span if span > 0 else 0.0


def estimate(masks: ArrayLike, values: ArrayLike, n: int, *, order: int | None | str = "auto",
             noise: float | None = None, holdout: float = HOLDOUT, refit: bool = True,
             canonical: bool = True, seed: int = 0) -> SparseInteractions:
    """Sparse AND-OR interactions of one game from v on the masks of a design.

    Parameters
    ----------
    masks : int bitmasks T of the design (distinct; must contain 0, the empty mask).
    values : v(x_T) for those masks (finite).
    n : number of variables.
    order : candidate order (see :func:`candidates`); "auto" = :func:`default_order`.
    noise : ε of the bounded residual (|q_T| ≤ ε·|v(N) − v(∅)|; v(N) estimated by the largest
        design mask when N is not in it). None: 0 if the restricted problem is feasible, else
        the first feasible ε of ``_NOISE_STEPS``.
    holdout : share of the design's masks with 2 ≤ |T| ≤ n − 2 held out (drawn with ``seed``)
        to measure ``heldout_error``; 0 holds none out.
    refit : after measuring the held-out error, fit again on all design masks (the returned
        interactions then use every mask; the error is that of the held-out fit).
    """
    t0 = time.perf_counter()
    n = check_n(n)
    t, v = _checked_game(masks, values, n, holdout)
    full = (1 << n) - 1
    if order == "auto":
        order = default_order(n, len(t))
    cand = candidates(n, order)
    order_ = np.argsort(t != 0, kind="stable")  # row 0 first: T = ∅
    t, v = t[order_], v[order_]
    v0 = float(v[0])
    unit, scale = unit_scale(v - v0)  # the LP runs on unit scale (Eq. 12 is homogeneous)
    scale = float(scale[0])
    top = int(np.argmax(popcount(t)))
    span_n = abs(float(unit[top]))
    span = float(v.max() - v.min())
    sizes = popcount(t)
    pool = np.flatnonzero((sizes >= 2) & (sizes <= n - 2))
    n_out = int(round(holdout * len(pool)))
    out = np.random.default_rng(seed).choice(pool, size=n_out, replace=False) if n_out else \
        np.array([], dtype=np.int64)
    fit = np.setdiff1d(np.arange(len(t)), out)

    def run(idx):
        steps = _NOISE_STEPS if noise is None else (noise,)
        for eps in steps:
            z, mats = _solve(t[idx], unit[idx], cand, full, eps * span_n, n, canonical)
            if z is not None:
                return z * scale, mats, eps
        raise RuntimeError(f"sparse AND-OR fit: no feasible fit with ε ≤ {steps[-1]} "
                           f"(order {order}); raise the order or the noise")

    z, mats, eps = run(fit)
    k = len(cand)
    res = _entries(n, z, cand, v0)
    heldout = _nrmse(res.predict(t[out]), v[out], span)
    if refit and n_out:
        z, mats, eps = run(np.arange(len(t)))
        fit = np.arange(len(t))
        res = _entries(n, z, cand, v0)
    unobserved, aliased = _identifiability(*mats, cand)
    res.heldout_error = heldout
    res.fit_error = _nrmse(res.predict(t[fit]), v[fit], span)
    res.n_fit, res.n_heldout = len(fit), n_out
    res.order, res.noise, res.unobserved, res.aliased = order, eps, unobserved, aliased
    res.info = {"seconds": time.perf_counter() - t0, "candidates": k, "rows": len(fit)}
    return res


def _checked_game(masks: ArrayLike, values: ArrayLike, n: int,
                  holdout: float) -> tuple[np.ndarray, np.ndarray]:
    """`estimate`'s design and values as int64 / float64 arrays; ValueError naming what is
    wrong with them or with `holdout`."""
    t = np.asarray(masks)
    v = np.asarray(values, dtype=np.float64)
    if t.ndim != 1 or not np.issubdtype(t.dtype, np.integer):
        raise ValueError("masks: expected a 1-D array of integer bitmasks")
    t = t.astype(np.int64)
    if v.shape != t.shape:
        raise ValueError(f"values: shape {v.shape} does not match masks {t.shape}")
    if not np.all(np.isfinite(v)):
        raise ValueError("values: NaN or inf")
    full = (1 << n) - 1
    if np.any((t < 0) | (t > full)):
        raise ValueError(f"masks: every mask must lie in 0..2**n - 1 = {full}")
    if len(np.unique(t)) != len(t):
        raise ValueError("masks: repeated mask")
    if not np.any(t == 0):
        raise ValueError("masks: the empty mask 0 (v(x_∅) = I_AND(∅)) must be in the design")
    if not 0.0 <= holdout < 1.0:
        raise ValueError(f"holdout: must lie in [0, 1), got {holdout!r}")
    return t, v


def _entries(n: int, z: np.ndarray, cand: np.ndarray, v0: float) -> SparseInteractions:
    """Entries of the LP solution z: nonzero x, y (|I| > ZERO_TOL·max, as `normalize` does)."""
    k = len(cand)
    x = z[:k] - z[k:2 * k]
    y = z[2 * k:3 * k] - z[3 * k:4 * k]
    vals = np.r_[x, y]
    kinds = np.r_[np.full(k, AND, np.int8), np.full(k, OR, np.int8)]
    sets = np.r_[cand, cand]
    top = np.abs(vals).max() if len(vals) else 0.0
    keep = np.abs(vals) > ZERO_TOL * top
    return SparseInteractions(n, kinds[keep], sets[keep], vals[keep], v0,
                              float(np.abs(vals[keep]).sum()), float("nan"), float("nan"),
                              0, 0, None, 0.0, 0, 0)


# ----------------------------------------------------------------------------- dense layout


def from_dense(and_: ArrayLike, or_: ArrayLike) -> SparseInteractions:
    """Every (kind, S ≠ ∅) of dense interactions as an entry (zeros included), for comparing
    the sparse-form metrics with ``ips.analysis.metrics`` on the same interactions."""
    a = np.asarray(and_, dtype=np.float64)
    o = np.asarray(or_, dtype=np.float64)
    n = len(a).bit_length() - 1
    if a.shape != o.shape or a.ndim != 1 or len(a) != 1 << n or n < 1:
        raise ValueError("and_, or_: expected two 1-D arrays of the same length 2**n, n ≥ 1")
    m = np.arange(1, 1 << n, dtype=np.int64)
    vals = np.r_[a[1:], o[1:]]
    return SparseInteractions(n, np.r_[np.zeros(len(m), np.int8), np.ones(len(m), np.int8)],
                              np.r_[m, m], vals, float(a[0]), float(np.abs(vals).sum()),
                              float("nan"), 0.0, 1 << n, 0, None, 0.0, 0, 0)


# ----------------------------------------------------------------------------- metrics


# ----------------------------------------------------------------------------- file layout
