r"""AND-OR interactions of a masked-input game (paper Section 3.1, Appendices B-D).

Conventions
-----------
A game is a float64 array ``values`` of shape ``(..., 2**n)`` indexed by bitmask:
``values[m] = v(x_S)`` where bit ``i`` of ``m`` is set when variable ``i`` is kept
(``values[0] = v(x_∅)``, ``values[2**n - 1] = v(x_N)``). Interactions use the same
indexing: ``and_[m] = I_AND(S)``, ``or_[m] = I_OR(S)``.

Transforms (all O(n·2^n) butterflies over the last axis, batched over leading axes):

* zeta            (Z f)(T) = Σ_{S⊆T} f(S)
* Möbius          (M f)(S) = Σ_{T⊆S} (-1)^{|S|-|T|} f(T)   (M = Z^{-1}; Harsanyi dividends)
* complement      (P f)(T) = f(N∖T)                         (a reversal of the last axis)

AND-OR decomposition (Appendix D): with learnable γ, ``v_and = ½v + γ``, ``v_or = ½v − γ``,
``γ_∅ = ½v(∅)``::

    I_AND = M v_and,            I_OR(S) = −(M P v_or)(S)  for S ≠ ∅,   I_OR(∅) = v_or(∅) = 0,

and universal matching holds for every γ::

    v(T) = v(∅) + Σ_{∅≠S⊆T} I_AND(S) + Σ_{S∩T≠∅} I_OR(S).

Eq. 12 chooses γ to minimise Σ_{S≠∅} |I_AND(S)| + |I_OR(S)| (the constant |I_AND(∅)| = |v(∅)|
is left out of ``objective``). With x = I_AND and y = I_OR this is basis pursuit,
``min ‖x‖₁ + ‖y‖₁  s.t.  Z x − P Z y = v, x(∅) = v(∅)``, where y(∅) is a free slack forced to
−Σ_{S≠∅} y(S) by the row T = ∅. The optimum is not unique (AND{i} and OR{i} are the same
pattern); every solver but ``sgd`` returns the canonical optimum: the ℓ1-optimal point of
least ℓ2 norm.

Solvers. ``exact``: HiGHS (interior point + crossover) on the equality form gives the optimum
and a dual λ; the optimal set is exactly {feasible z: z_j = 0 where the reduced cost is > 0},
so the canonical point is the least-ℓ2 point of that face, a small QP (Clarabel).
``first_order``: ADMM on butterflies (:func:`_admm`). ``sgd`` is not canonical: the paper's own
optimiser (Appendix D), γ from 0 by subgradient descent on butterflies (:func:`_sgd`), which
lands on another point of (or near) the optimal face. All report a certified relative
duality gap: a dual point λ, scaled into the dual box ‖Aᵀλ‖_∞ ≤ 1, gives bᵀλ ≤ optimum by weak
duality (:func:`_dual_bound`), whatever the solver did.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

log = logging.getLogger(__name__)

DEFAULT_N_MAX = 16
SOLVERS = ("auto", "exact", "first_order", "sgd")
#: ``solver="auto"`` uses the exact LP/QP up to this n and the first-order solver beyond
#: (measured on 2 cores: exact ≈ 1 s per game at n = 10 with a ~1e-12 gap, first-order ≈ 2 s
#: per game batched for a 1e-5 certified gap; exact at n = 12 takes minutes).
AUTO_EXACT_MAX_N = 10


# ----------------------------------------------------------------------------- transforms

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


def _as_values(values, n_max: int = DEFAULT_N_MAX) -> tuple[np.ndarray, int]:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim == 0:
        raise ValueError("values: expected an array of shape (..., 2**n), got a scalar")
    n = _n_of(arr, n_max)
    if not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))[0]
        raise ValueError(f"values: non-finite entry (NaN or inf) at index {tuple(int(i) for i in bad)}")
    return arr, n


def _butterfly(f: np.ndarray, mat: np.ndarray) -> np.ndarray:
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


#: variables per dense block in :func:`_butterfly` (a 2^b × 2^b matrix), and the most values
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
_MOBIUS = np.array([[1.0, 0.0], [-1.0, 1.0]])


def zeta(f) -> np.ndarray:
    """(Z f)(T) = Σ_{S⊆T} f(S) over the last axis, O(n·2^n)."""
    arr = np.array(f, dtype=np.float64, copy=True)
    _n_of(arr, 64)
    return _butterfly(arr, _ZETA)


def mobius(f) -> np.ndarray:
    """(M f)(S) = Σ_{T⊆S} (-1)^{|S|-|T|} f(T), the inverse of :func:`zeta`, O(n·2^n)."""
    arr = np.array(f, dtype=np.float64, copy=True)
    _n_of(arr, 64)
    return _butterfly(arr, _MOBIUS)


def complement(f) -> np.ndarray:
    """(P f)(T) = f(N∖T): the mask of N∖T is ``2**n - 1 - m``, so P reverses the last axis."""
    return np.asarray(f)[..., ::-1]


def harsanyi(values, *, n_max: int = DEFAULT_N_MAX) -> np.ndarray:
    """Harsanyi dividends (AND interactions of v before the AND-OR split).

    ``I(S) = Σ_{T⊆S} (-1)^{|S|-|T|} v(x_T)`` for every S ⊆ N, batched over leading axes,
    O(n·2^n) time and O(2^n) extra memory per vector. Raises ``ValueError`` for a last axis
    that is not a power of two, NaN/inf, or n > ``n_max``.
    """
    arr, _ = _as_values(values, n_max)
    return _butterfly(arr.copy(), _MOBIUS)


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


# ----------------------------------------------------------------------------- result

@dataclass
class AndOrResult:
    """Fitted AND-OR interactions for a batch of games (leading shape ``batch_shape``).

    Attributes
    ----------
    and_, or_ : (..., 2**n) interactions by bitmask; ``and_[..., 0] = v(∅)``, ``or_[..., 0] = 0``.
    gamma : (..., 2**n) the split γ_T = v_and(x_T) − ½ v(x_T).
    objective : (...) Σ_{S≠∅} |I_AND(S)| + |I_OR(S)| (Eq. 12 without its constant |v(∅)|).
    matching_error : (...) max_T |v(x_T) − φ(x_T)| over all 2^n masks (against the input v).
    duality_gap : (...) relative gap (objective − lower_bound) / objective, clipped at 0, where
        the lower bound on Eq. 12's optimum comes from a dual-feasible point (weak duality,
        :func:`_dual_bound`; 0 for a zero objective). A certificate: the objective is within
        ``duality_gap`` (relative) of the optimum whatever the solver did.
    lower_bound : (...) that certified lower bound (for ``noise > 0``: HiGHS's LP optimum).
    solver : the solver that ran ("exact", "first_order" or "sgd").
    """

    and_: np.ndarray
    or_: np.ndarray
    gamma: np.ndarray
    objective: np.ndarray
    matching_error: np.ndarray
    duality_gap: np.ndarray
    solver: str
    n: int
    info: dict = field(default_factory=dict)
    #: (...) the certified lower bound on Eq. 12's optimum behind ``duality_gap``
    lower_bound: np.ndarray | None = None


def _finish(v: np.ndarray, x: np.ndarray, y: np.ndarray, lower: np.ndarray, solver: str,
            fit_values: np.ndarray | None = None, info: dict | None = None) -> AndOrResult:
    """Assemble the result from x = I_AND and y = I_OR on non-empty sets (x[...,0] = v(∅))."""
    x = x.copy()
    y = y.copy()
    x[..., 0] = v[..., 0]
    y[..., 0] = 0.0
    target = v if fit_values is None else fit_values
    gamma = zeta(x) - 0.5 * target
    objective = np.abs(x[..., 1:]).sum(-1) + np.abs(y[..., 1:]).sum(-1)
    matching = np.abs(reconstruct(x, y) - v).max(-1)
    gap = np.maximum(objective - lower, 0.0) / np.where(objective > 0, objective, 1.0)
    return AndOrResult(x, y, gamma, objective, matching, gap, solver, v.shape[-1].bit_length() - 1,
                       info or {}, np.asarray(lower, dtype=np.float64))


# ----------------------------------------------------------------------------- scale

def unit_scale(b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(u, s) with b = s·u and max|u| = 1 per game (last axis), s of shape (..., 1).

    Eq. 12 is positively homogeneous: the optimal points for s·u are s times those for u, and
    so is the canonical one. The solvers' tolerances are absolute, so every fit runs on u and
    is mapped back. A game whose variation float64 cannot resolve (all zero, or subnormal:
    s < 2.2e-308, fewer than 53 significant bits) is treated as constant: u = 0, s = 0.
    """
    s = np.abs(b).max(-1, keepdims=True)
    resolved = s >= np.finfo(np.float64).tiny
    u = np.where(resolved, b / np.where(resolved, s, 1.0), 0.0)
    return u, np.where(resolved, s, 0.0)


def _rescale(res: AndOrResult, v: np.ndarray, scale: np.ndarray) -> AndOrResult:
    """The fit of v = v(∅) + s·u from the fit ``res`` of u: interactions, γ − ½v(∅),
    objective and bound times s (relative gap unchanged), matching measured against v."""
    v0 = v[:, :1]
    res.and_ = res.and_ * scale
    res.and_[:, 0] = v0[:, 0]
    res.or_ = res.or_ * scale
    res.gamma = res.gamma * scale + 0.5 * v0
    res.objective = res.objective * scale[:, 0]
    res.lower_bound = res.lower_bound * scale[:, 0]
    res.matching_error = np.abs(reconstruct(res.and_, res.or_) - v).max(-1)
    return res


# ----------------------------------------------------------------------------- exact solver

@lru_cache(maxsize=8)
def _subset_matrix(n: int):
    """Sparse Z with Z[T, S] = 1 iff S ⊆ T (3^n non-zeros)."""
    import scipy.sparse as sp

    rows, cols = [], []
    for t in range(1 << n):
        s = t
        while True:
            rows.append(t)
            cols.append(s)
            if s == 0:
                break
            s = (s - 1) & t
    data = np.ones(len(rows))
    return sp.csc_matrix((data, (rows, cols)), shape=(1 << n, 1 << n))


@lru_cache(maxsize=8)
def _equality_form(n: int):
    """Rows T ⊆ N; columns x⁺, x⁻, y⁺, y⁻ (S ≠ ∅) and the free y(∅): Z x − P Z y = v − v(∅)."""
    import scipy.sparse as sp

    z = _subset_matrix(n)
    pz = z[::-1, :]
    ax, ay = z[:, 1:], -pz[:, 1:]
    return sp.hstack([ax, -ax, ay, -ay, -pz[:, [0]]]).tocsc()


def _solve_exact_one(v: np.ndarray, n: int, noise: float):
    """LP (HiGHS interior point + crossover) for the optimum f*, then the canonical point.

    Stage 2 restricts to the optimal face: with the LP dual λ, every ℓ1-optimal point has
    z_j = 0 where the reduced cost c_j − (Aᵀλ)_j > 0 (and q_T at its bound where λ_T ≠ 0), and
    every feasible point of that restricted set is optimal (complementary slackness). The least
    ℓ2 point of the face is a small QP (Clarabel). Should that fail (not observed here; once
    in a sparse fit at n = 20, `ips.sparse`), the fallback is exact ℓ2 regularisation over the
    whole feasible set (:func:`_regularised_exact`). All rows make the LP feasible (the
    Harsanyi dividends are a solution).
    """
    size = 1 << n
    k = size - 1
    b = v - v[0]
    if not np.any(b):  # a constant game: every interaction but I_AND(∅) is zero
        return np.r_[v[0], np.zeros(k)], np.zeros(size), 0.0, np.zeros(size), np.zeros(size)
    a_eq = _equality_form(n)
    radius = noise * abs(v[-1] - v[0])
    nq = size - 1 if radius > 0 else 0
    if nq:  # v' = v + q, |q_T| ≤ ε|v(N) − v(∅)|, q_∅ = 0 keeps I_AND(∅) = v(∅)
        import scipy.sparse as sp

        a_eq = sp.hstack([a_eq, -sp.eye(size, format="csc")[:, 1:]]).tocsc()
    z, f_star, lam = l1_optimum(a_eq, b, k, nq, radius, n, "exact AND-OR fit")
    x = np.r_[v[0], z[:k] - z[k:2 * k]]
    y = np.r_[0.0, z[2 * k:3 * k] - z[3 * k:4 * k]]
    q = np.r_[0.0, z[4 * k + 1:]] if nq else np.zeros(size)
    return x, y, f_star, q, lam


def l1_optimum(a_eq, b, k: int, nq: int, radius: float, n: int, what: str,
               canonical: bool = True):
    """Eq. 12 in equality form, z = (x⁺, x⁻, y⁺, y⁻, y∅, q): minimise Σ of the first 4k
    entries subject to a_eq z = b, z ≥ 0 but y∅ free and |q_T| ≤ radius (nq of them).

    HiGHS's LP gives the optimum f* and the dual λ; with `canonical` the least-ℓ2 point of
    the optimal face follows (:func:`_face_qp`, else :func:`_regularised_exact`), otherwise
    the LP's own vertex. Returns (z, f*, λ), or None when the constraints are infeasible.
    `what` names the fit in messages.
    """
    from scipy.optimize import linprog

    cost = np.r_[np.ones(4 * k), 0.0, np.zeros(nq)]
    bounds = [(0, None)] * (4 * k) + [(None, None)] + [(-radius, radius)] * nq
    lp = linprog(cost, A_eq=a_eq, b_eq=b, bounds=bounds, method="highs-ipm")
    if lp.status == 2:
        return None
    if lp.status != 0:
        raise RuntimeError(f"{what}: HiGHS failed ({lp.message})")
    f_star, lam = float(lp.fun), np.asarray(lp.eqlin.marginals)
    if not canonical:
        return np.asarray(lp.x), f_star, lam
    z = _face_qp(a_eq, b, cost, lam, k, nq, radius, f_star, np.asarray(lp.x))
    if z is None:
        log.warning("%s: optimal-face QP failed; falling back to regularisation", what)
        z = _regularised_exact(a_eq, b, cost, k, nq, radius, f_star, n)
    return z, f_star, lam


def _clarabel_settings():
    import clarabel

    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.tol_gap_abs = settings.tol_gap_rel = settings.tol_feas = 1e-12
    settings.max_iter = 400
    return settings


#: reduced costs below this (relative to the unit ℓ1 cost) count as zero: the optimal face
_FACE_TOL = 1e-9


def _face_qp(a_eq, b, cost, lam, k: int, nq: int, radius: float, f_star: float,
             x: np.ndarray):
    """Least-ℓ2 point of the LP's optimal face, or None when the QP does not solve cleanly.

    Columns: 4k split interactions (≥ 0, cost 1), the free y(∅), nq noise terms in [−r, r].
    The face: the columns of zero reduced cost, and those the LP's solution ``x`` uses (by
    complementary slackness they have zero reduced cost; the dual's rounding can put theirs
    just above the tolerance, which made the face infeasible on some games at n ≥ 20), so
    that ``x`` itself is a feasible point of the QP.
    """
    import clarabel
    import scipy.sparse as sp

    red = cost - a_eq.T @ lam
    nvar = a_eq.shape[1]
    fixed = np.zeros(nvar)
    keep = np.ones(nvar, dtype=bool)
    keep[: 4 * k] = (red[: 4 * k] <= _FACE_TOL) | (x[: 4 * k] > 0)
    if nq:
        qr = red[4 * k + 1:]
        free = (np.abs(qr) <= _FACE_TOL) | (np.abs(x[4 * k + 1:]) < radius * (1 - 1e-9))
        at_bound = np.where(qr < -_FACE_TOL, radius, 0.0)
        fixed[4 * k + 1:] = np.where(free, 0.0, np.where(qr > _FACE_TOL, -radius, at_bound))
        keep[4 * k + 1:] = free
    cols = np.flatnonzero(keep)
    split = cols < 4 * k
    noise = cols > 4 * k
    a_f = a_eq[:, cols]
    rhs_eq = b - a_eq @ fixed
    eye = sp.eye(len(cols), format="csc")
    rows = [a_f, -eye[split]]
    rhs = [rhs_eq, np.zeros(split.sum())]
    if noise.any():
        rows += [eye[noise], -eye[noise]]
        rhs += [np.full(noise.sum(), radius)] * 2
    quad = sp.diags(split.astype(float)).tocsc()
    cones = [clarabel.ZeroConeT(len(b)), clarabel.NonnegativeConeT(sum(len(r) for r in rhs[1:]))]
    sol = clarabel.DefaultSolver(quad, np.zeros(len(cols)), sp.vstack(rows).tocsc(),
                                 np.concatenate(rhs), cones, _clarabel_settings()).solve()
    if str(sol.status) not in ("Solved", "AlmostSolved"):
        return None
    z = fixed.copy()
    z[cols] = np.asarray(sol.x)
    z[: 4 * k] = np.maximum(z[: 4 * k], 0.0)
    scale = max(f_star, float(np.abs(b).max()))
    if abs(z[: 4 * k].sum() - f_star) > 1e-8 * scale or \
            np.abs(a_eq @ z - b).max() > 1e-8 * scale:
        return None
    return z


def _regularised_exact(a_eq, b, cost, k: int, nq: int, radius: float, f_star: float, n: int):
    """min ‖z‖₁ + μ/2‖z‖² over the whole feasible set (Clarabel), μ shrinking tenfold until
    ‖z_μ‖₁ = f*; then z_μ is the least-ℓ2 ℓ1-optimal point (Friedlander & Tseng 2007)."""
    import clarabel
    import scipy.sparse as sp

    size = len(b)
    bound_rows = [sp.hstack([-sp.eye(4 * k), sp.csc_matrix((4 * k, 1 + nq))])]
    bound_rhs = [np.zeros(4 * k)]
    if nq:
        qsel = sp.hstack([sp.csc_matrix((nq, 4 * k + 1)), sp.eye(nq)])
        bound_rows += [qsel, -qsel]
        bound_rhs += [np.full(nq, radius), np.full(nq, radius)]
    a_cl = sp.vstack([a_eq] + bound_rows).tocsc()
    rhs = np.concatenate([b] + bound_rhs)
    cones = [clarabel.ZeroConeT(size), clarabel.NonnegativeConeT(a_cl.shape[0] - size)]
    settings = _clarabel_settings()
    scale = float(np.abs(b).max())
    # The exact-regularisation threshold shrinks with n (measured: μ·scale = 1 suffices at
    # n = 4, 1e-3 at n = 8); start near it and shrink until the LP optimum is reached.
    mu = 10.0 ** (1.5 - n / 2) / scale
    tol = 1e-9 * max(f_star, scale)
    for _ in range(8):
        quad = sp.diags(np.r_[np.full(4 * k, mu), np.zeros(1 + nq)]).tocsc()
        sol = clarabel.DefaultSolver(quad, cost, a_cl, rhs, cones, settings).solve()
        z = np.asarray(sol.x)
        if float(z[: 4 * k].sum()) <= f_star + tol:
            return z
        mu /= 10
    raise RuntimeError("exact AND-OR fit: regularised solution did not reach the LP optimum")


def _exact(v: np.ndarray, n: int, noise: float) -> AndOrResult:
    """Exact fit of each row of ``v`` (rows, 2**n), one LP/QP pair per game.

    The lower bound is the LP dual's certified bound (:func:`_dual_bound`, recomputed here
    with butterflies) without noise, and HiGHS's optimum with it.
    """
    xs, ys, lows, fitv = [], [], [], []
    for row in v:
        x, y, f_star, q, lam = _solve_exact_one(row, n, noise)
        xs.append(x)
        ys.append(y)
        lows.append(f_star if noise > 0 else float(_dual_bound(row, lam)))
        fitv.append(row + q)
    return _finish(v, np.array(xs), np.array(ys), np.array(lows), "exact", np.array(fitv))


# ----------------------------------------------------------------------------- first-order

# Blocks: x = M a and y = MP (a − v) with a = v_and (a(∅) = v(∅)). The a-update solves
# H a = r with H = MᵀM + PᵀMᵀMP = ⊗A + ⊗B (A = mᵀm, B = (mJ)ᵀ(mJ) per variable). One 2×2
# generalised eigenproblem WᵀAW = I, WᵀBW = Λ diagonalises both Kronecker products, so
# H⁻¹ = (⊗W) (I + ⊗Λ)⁻¹ (⊗W)ᵀ is three butterflies: an exact solve in O(n·2^n).
_M = _MOBIUS
_MP = _MOBIUS @ np.array([[0.0, 1.0], [1.0, 0.0]])


@lru_cache(maxsize=1)
def _kron_eig():
    import scipy.linalg as sla

    lam, w = sla.eigh(_MP.T @ _MP, _M.T @ _M)
    return lam, w


@lru_cache(maxsize=32)
def _h_inverse_parts(n: int):
    lam, w = _kron_eig()
    diag = np.ones(1)
    for _ in range(n):
        diag = np.concatenate([diag * lam[0], diag * lam[1]])
    inv_diag = 1.0 / (1.0 + diag)
    e0 = np.zeros(1 << n)
    e0[0] = 1.0
    h0 = _h_solve(e0, w, inv_diag)
    return w, inv_diag, h0


def _h_solve(r: np.ndarray, w: np.ndarray, inv_diag: np.ndarray) -> np.ndarray:
    t = _butterfly(np.array(r, dtype=np.float64, copy=True), w.T)
    t *= inv_diag
    return _butterfly(t, w)


def _shrink(t: np.ndarray, thresh) -> np.ndarray:
    return np.sign(t) * np.maximum(np.abs(t) - thresh, 0.0)


def _dual_values(lam: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Aᵀλ over the columns S ≠ ∅: (AND part Σ_{T⊇S} λ(T), OR part Σ_{T∩S≠∅} λ(T)), λ(∅) unused."""
    lam = lam.copy()
    lam[..., 0] = 0.0
    sup = complement(zeta(complement(lam)))  # Σ_{T⊇S} λ(T)
    sub = zeta(lam)
    or_part = sub[..., -1:] - complement(sub)
    return sup[..., 1:], or_part[..., 1:]


def _dual_bound(v: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """Weak-duality lower bound on Eq. 12 from any λ over the non-empty masks T.

    Rows T ≠ ∅ read Σ_{∅≠S⊆T} x(S) + Σ_{S∩T≠∅} y(S) = v(T) − v(∅). For column S the dual
    values are (Aᵀλ)_AND(S) = Σ_{T⊇S} λ(T) and (Aᵀλ)_OR(S) = Σ_{T≠∅} λ(T) − Σ_{T⊆N∖S} λ(T);
    λ / max(1, ‖Aᵀλ‖_∞) is dual feasible and bᵀλ / max(1, ‖Aᵀλ‖_∞) ≤ optimum.
    """
    and_part, or_part = _dual_values(lam)
    norm = np.maximum(np.abs(and_part).max(-1), np.abs(or_part).max(-1))
    b = v - v[..., :1]
    lam = lam.copy()
    lam[..., 0] = 0.0
    return (b * lam).sum(-1) / np.maximum(norm, 1.0)


def _blocks(a: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The AND and OR blocks of a = v_and: (M a, MP a − MP v) with c = MP v."""
    return _butterfly(a.copy(), _M), _butterfly(complement(a).copy(), _M) - c


#: μ of the first continuation stage, the factor between stages and the floor (every game
#: runs on unit scale, :func:`unit_scale`, so these are relative to max|v − v(∅)|)
_MU_START, _MU_FACTOR, _MU_FLOOR = 1e-2, 0.1, 1e-6
#: a continuation stage ends at this many iterations even if ADMM has not converged on it.
#: Measured: stages converge within ~2-3k iterations up to n ≈ 7 (so they get room to, which
#: the canonical point needs); beyond, they do not converge within 10k iterations, and moving
#: on to small μ is what brings the objective and the certified bound to the optimum.
_STAGE_ITERS, _STAGE_ITERS_SMALL, _SMALL_N = 1000, 5000, 7
#: ADMM step ρ (measured: 0.3-1 work alike on random games at n = 8-10; 0.3 converges
#: faster on sparse planted games)
_RHO = 0.3
#: iterations between convergence checks (and dual bounds)
_CHECK_EVERY = 25


def _admm(v: np.ndarray, n: int, tol: float, max_iter: int):
    """Over-relaxed ADMM on the regularised Eq. 12, vectorised over all games.

    Variables a = v_and (a(∅) = v(∅) fixed), u = M a (AND), w = MP(a − v) (OR)::

        min ‖u_{≠∅}‖₁ + ‖w_{≠∅}‖₁ + μ/2 (‖u_{≠∅}‖² + ‖w_{≠∅}‖²)   s.t.  u = M a,  w = MP a − MP v.

    Every step is a butterfly; the a-step is an exact Kronecker solve (``_h_inverse_parts``).
    μ follows a continuation μ = 10⁻², 10⁻³, … down to 10⁻⁶ with warm starts; below a
    data-dependent threshold the regularised solution is the canonical optimum (exact
    regularisation). A stage ends when ADMM has converged on it or after ``_STAGE_ITERS``
    iterations. Every ``_CHECK_EVERY`` iterations the multiplier gives a certified lower bound
    (:func:`_dual_bound`), and at every change of μ a Richardson-extrapolated multiplier gives
    another (much tighter: the μ-regularised multiplier overshoots the ℓ1 dual box by ≈ μ·|z|);
    the best bound per game is kept. At the end of a stage a game is done, and leaves the
    batch, once its certified relative gap is ≤ ``tol`` and (n ≤ ``_SMALL_N``) this and the
    previous stage both converged and agree to ``tol``.

    Returns (a, lower, done, info).
    """
    rows = v.shape[0]
    kron = _h_inverse_parts(n)
    a_out = 0.5 * v
    a_out[:, 0] = v[:, 0]
    lower = np.full(rows, -np.inf)
    done = np.zeros(rows, dtype=bool)
    st = _admm_start(v, a_out)
    stage_iters = _STAGE_ITERS_SMALL if n <= _SMALL_N else _STAGE_ITERS
    total = stages = 0
    mu_rel, mu_prev_rel = _MU_START, None
    while total < max_iter and len(st["idx"]):
        iters = min(stage_iters, max_iter - total)
        stage_ok, ran = _admm_stage(st, kron, mu_rel, tol, iters, total + iters == max_iter,
                                    lower)
        total += ran
        stages += 1
        finished = _admm_stage_end(st, lower, mu_rel, mu_prev_rel, stage_ok, tol, n)
        mu_prev_rel = mu_rel
        if finished.any():
            done[st["idx"][finished]] = True
            _admm_retire(st, finished, a_out)
        mu_rel = max(mu_rel * _MU_FACTOR, _MU_FLOOR)
    a_out[st["idx"]] = st["a"]
    info = {"iterations": total, "stages": stages, "converged": int(done.sum()), "rows": rows}
    return a_out, lower, done, info


def _admm_start(v: np.ndarray, a: np.ndarray) -> dict[str, np.ndarray | None]:
    """The per-game state of `_admm` (row `k` is game `idx[k]`; compacted as games finish):
    the game, MP v, the iterate a, u, w and the scaled multipliers, and the
    previous stage's multiplier, interactions and convergence."""
    c = _butterfly(complement(v).copy(), _M)  # MP v
    u, w = _blocks(a, c)
    return {"idx": np.arange(v.shape[0]), "flat": v.copy(), "c": c,
            "a": a.copy(), "u": u, "w": w, "al": np.zeros_like(u), "be": np.zeros_like(w),
            "lam_prev": None, "z_prev": None, "ok_prev": None}


def _admm_stage(st: dict, kron, mu_rel: float, tol: float, iters: int, final: bool,
                lower: np.ndarray) -> tuple[np.ndarray, int]:
    """Up to ``iters`` over-relaxed ADMM iterations at one μ on the running games, updating
    `st` and the certified lower bounds (every ``_CHECK_EVERY`` iterations and, when
    ``final``, after the last). Returns which games converged at the last check and the
    iterations run (fewer when all converged)."""
    w_mat, inv_diag, h0 = kron
    relax = 1.6
    stage_ok = np.zeros(len(st["idx"]), dtype=bool)
    for it in range(1, iters + 1):
        flat, c, u, wv, al, be = (st[k] for k in ("flat", "c", "u", "w", "al", "be"))
        rho, mu = _RHO, mu_rel
        r = _butterfly(u - al, _M.T) + complement(_butterfly(wv - be + c, _M.T))
        a = _h_solve(r, w_mat, inv_diag)
        a += ((flat[:, 0] - a[:, 0]) / h0[0])[:, None] * h0
        ma, mpa = _blocks(a, c)
        ma_r = relax * ma + (1 - relax) * u
        mpa_r = relax * mpa + (1 - relax) * wv
        u_new = _shrink(rho * (ma_r + al), 1.0) / (rho + mu)
        u_new[:, 0] = ma_r[:, 0] + al[:, 0]
        w_new = _shrink(rho * (mpa_r + be), 1.0) / (rho + mu)
        w_new[:, 0] = mpa_r[:, 0] + be[:, 0]
        al += ma_r - u_new
        be += mpa_r - w_new
        st["a"], st["u"], st["w"] = a, u_new, w_new
        if it % _CHECK_EVERY == 0 or (final and it == iters):
            idx = st["idx"]
            bound = _dual_bound(flat, _lambda_from_multiplier(rho * al))
            lower[idx] = np.maximum(lower[idx], bound)
            primal = np.maximum(np.abs(ma - u_new).max(-1), np.abs(mpa - w_new).max(-1))
            dual = np.maximum(np.abs(u_new - u).max(-1), np.abs(w_new - wv).max(-1))
            stage_ok = np.maximum(primal, dual) <= 0.1 * tol
            if stage_ok.all():
                break
    return stage_ok, it


def _admm_stage_end(st: dict, lower: np.ndarray, mu_rel: float, mu_prev_rel: float | None,
                    stage_ok: np.ndarray, tol: float, n: int) -> np.ndarray:
    """The end of a stage: tighten the lower bounds with the extrapolated multiplier, remember
    this stage in `st`, and return which running games are done (see `_admm`)."""
    flat, idx = st["flat"], st["idx"]
    lam = _lambda_from_multiplier(_RHO * st["al"])
    if st["lam_prev"] is not None and mu_prev_rel > mu_rel:
        # Richardson extrapolation to μ = 0: on the support Aᵀλ_μ = sign(z) + μz with
        # the same z at both μ (exact regularisation), so the combination is exact there
        t = mu_prev_rel / (mu_prev_rel - mu_rel)
        extrapolated = t * lam + (1 - t) * st["lam_prev"]
        lower[idx] = np.maximum(lower[idx], _dual_bound(flat, extrapolated))
    ma, mpa = _blocks(st["a"], st["c"])
    z = np.concatenate([ma[:, 1:], mpa[:, 1:]], -1)
    obj = np.abs(z).sum(-1)
    certified = obj - lower[idx] <= tol * obj  # within tol of the optimum, proven
    if st["z_prev"] is not None:
        moved = np.abs(z - st["z_prev"]).max(-1) / np.maximum(np.abs(z).max(-1), 1e-300)
        finished = certified & stage_ok & st["ok_prev"] & (moved <= tol)
    else:
        finished = np.zeros(len(idx), dtype=bool)
    if n > _SMALL_N:  # stages do not converge here (see _STAGE_ITERS): the gap decides
        finished = certified
    st["lam_prev"], st["z_prev"], st["ok_prev"] = lam, z, stage_ok
    return finished


def _admm_retire(st: dict, finished: np.ndarray, a_out: np.ndarray) -> None:
    """Store the finished games' a and drop them from the running state."""
    a_out[st["idx"][finished]] = st["a"][finished]
    keep = ~finished
    for key, val in st.items():
        if val is not None:
            st[key] = val[keep]


def _first_order(v: np.ndarray, n: int, tol: float, max_iter: int) -> AndOrResult:
    a, lower, done, info = _admm(v, n, tol, max_iter)
    c = _butterfly(complement(v).copy(), _M)
    x, y = _blocks(a, c)
    # AND{i} and OR{i} are the same column ([i ∈ T]): the canonical optimum splits their sum
    # evenly (least ℓ2; never more ℓ1), and matching is unchanged. Exact for any iterate.
    single = 1 << np.arange(n)
    half = 0.5 * (x[:, single] + y[:, single])
    x[:, single] = half
    y[:, single] = half
    res = _finish(v, x, y, lower, "first_order", info=info)
    info["certified"] = int(np.sum(res.duality_gap <= tol))
    rows = v.shape[0]
    if not done.all():
        log.warning("first-order AND-OR: %d of %d games not converged after %d iterations "
                    "(%d within the certified gap tol = %g; max gap %.2g; raise max_iter or use "
                    "solver='exact')", rows - int(done.sum()), rows, info["iterations"],
                    info["certified"], tol, float(res.duality_gap.max()))
    return res


def _lambda_from_multiplier(p: np.ndarray) -> np.ndarray:
    """λ over masks T from the AND multiplier p(S) = Σ_{T⊇S} λ(T): superset Möbius inversion."""
    return complement(_butterfly(complement(p).copy(), _MOBIUS))


# ----------------------------------------------------------------------------- gradient descent

#: Defaults of ``solver="sgd"``. Optimiser, momentum, decay and the step count follow the public
#: code of the paper's lineage (see :func:`_sgd`); the learning rate, relative to the game's
#: range (games run on unit scale), is this package's choice.
SGD_LEARNING_RATE = 1e-4
SGD_STEPS = 20000
_SGD_MOMENTUM = 0.9
#: trailing share of the steps whose subgradient signs are averaged into the dual certificate
_SGD_AVERAGE = 0.1


def _lambda_from_or_multiplier(s: np.ndarray) -> np.ndarray:
    """λ over masks T whose OR dual values Σ_{T≠∅} λ(T) − Σ_{T⊆N∖S} λ(T) equal s(S), S ≠ ∅.

    With λ(∅) = 0 that is (Zλ)(U) = s(N) − s(N∖U) for every U, so λ = M(s(N) − P s).
    """
    return _butterfly(s[..., -1:] - complement(s), _MOBIUS)


def _mobius_masks_first(f: np.ndarray, transpose: bool = False) -> np.ndarray:
    """M f (or Mᵀ f) along axis 0 of a C-contiguous (2^n, cols) array, in place.

    Masks-first layout for the many steps of :func:`_sgd`: every level updates blocks of at
    least ``cols`` contiguous values (measured ≈ 3× faster than :func:`_butterfly` on the last
    axis at n = 10 with 40 columns, ≈ 2× at n = 6).
    """
    n = f.shape[0].bit_length() - 1
    cols = f.shape[1]
    for i in range(n):
        g = f.reshape(-1, 2, cols << i)
        if transpose:
            g[:, 0] -= g[:, 1]
        else:
            g[:, 1] -= g[:, 0]
    return f


def _l1_signs(a: np.ndarray, c: np.ndarray, fwd: np.ndarray, sgn: np.ndarray) -> None:
    """Fill ``fwd`` with [x, y] = [M a, MP a − c] and ``sgn`` with their signs, 0 at ∅ (not in
    the loss). Masks first: a, c (2^n, rows); buffers (2^n, 2·rows), x and y side by side so
    one butterfly transforms both."""
    rows = a.shape[1]
    fwd[:, :rows] = a
    fwd[:, rows:] = a[::-1]
    _mobius_masks_first(fwd)
    fwd[:, rows:] -= c
    np.sign(fwd, out=sgn)
    sgn[0] = 0.0


def _gradient_from_signs(sgn: np.ndarray) -> np.ndarray:
    """∂L/∂a = Mᵀ sgn(x) + P Mᵀ sgn(y), 0 at ∅ (γ_∅ is fixed); overwrites ``sgn``. Masks first."""
    rows = sgn.shape[1] // 2
    _mobius_masks_first(sgn, transpose=True)
    grad = sgn[:, :rows] + sgn[::-1, rows:]
    grad[0] = 0.0
    return grad


def _l1_loss_and_gradient(v: np.ndarray, gamma: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """L(γ) = Σ_{S≠∅} |I_AND(S)| + |I_OR(S)| and its (sub)gradient in γ, rows (rows, 2^n)."""
    a = np.ascontiguousarray((0.5 * v + gamma).T)
    c = np.ascontiguousarray(_butterfly(complement(v).copy(), _M).T)
    fwd = np.empty((a.shape[0], 2 * a.shape[1]))
    sgn = np.empty_like(fwd)
    _l1_signs(a, c, fwd, sgn)
    loss = np.abs(fwd[1:]).sum(0)
    rows = a.shape[1]
    return loss[:rows] + loss[rows:], _gradient_from_signs(sgn).T


def _sgd(v: np.ndarray, n: int, learning_rate: float, steps: int):
    """The paper's own optimiser of Eq. 12 (Appendix D): γ learned by gradient descent from 0.

    Parameter a = v_and = ½v + γ with a(∅) = v(∅) fixed (γ_∅ = ½v(∅)); all other γ_T start at
    0. The loss L(γ) = Σ_{S≠∅} |x(S)| + |y(S)| with x = M a and y = MP a − MP v (the module's
    I_AND and I_OR) has the subgradient

        ∂L/∂a = Mᵀ sgn(x) + P Mᵀ sgn(y)     (sgn(0) = 0; both signs zeroed at ∅),

    two transposed butterflies, so a step costs O(n·2^n) per game; the batch runs together
    (masks-first layout, :func:`_mobius_masks_first`).
    Updates are heavy-ball SGD, ``vel ← 0.9·vel + g``, ``a ← a − η_t·vel``, with η_t falling
    log-linearly from ``learning_rate`` to ``learning_rate``/10 over ``steps``; the last iterate
    is returned. This is the routine of Li & Zhang (2023, "Does a neural network really encode
    symbolic concepts?", ICML; public code sjtu-xai-lab/interaction-concept,
    ``harsanyi/and_or_harsanyi_utils.py``: ``optim.SGD(momentum=0.9)``, p = q = 0 at start,
    ``np.logspace(log lr, log lr − 1, niter)``), reused by Chen et al. (2024, "Defining and
    extracting generalizable interaction primitives from deep neural networks", ICLR; code
    sjtu-xai-lab/generalizable-interaction). Differences: their loss also holds the S = ∅
    terms with p(∅) free, and a clamped noise term q; here γ_∅ = ½v(∅) is fixed (Appendix D)
    and there is no q. Their step counts: 10,000 in the example of the first repository's
    README, 20,000 as the second's default ("commonly used: 20000, 50000"); we take 20,000.
    Their learning rates are absolute (v in log-odds) and tuned per task ("commonly used:
    depends"): 1e-5 (images), 1e-6 and 1e-7 (BERT). Here ``v`` is the game on unit scale
    (:func:`and_or` divides v − v(∅) by its largest |value|), so the rate is relative to the
    game's range and the fit is equivariant to the scale of v. Measured (20,000 steps),
    excess of the objective over the optimum, median: on random games (v ~ 2·N(0, 1), range
    ≈ 7) 1e-4 ends 0.01 % above at n = 6 and 0.2 % at n = 8, 1e-3 0.2 % and 1.5 %; on the
    default run's Gemma 3 games (n = 6, range 0.1-1.2 in log-odds) 1e-4 0.05 %, 3e-4 0.5 %,
    1e-3 3 %. So 1e-4 is the default (on a game of range ≈ 7 it is the absolute 1e-3 this
    package used before, which ended 0.5 % above on SmolLM2's n = 6 games). Real games at
    n = 7-8 converge slowly (a subgradient method); no fixed rate suits every n (the
    gradient grows like 2^n), and the result's objective and gap say how far it got.
    Cost: one step is four butterflies over the batch, ≈ 1 ms for 11 games at n = 10 on two
    busy cores (20,000 steps ≈ 25 s), ≈ 0.3 ms for 84 games at n = 6.

    Certificate: averaged over the last ``_SGD_AVERAGE`` of the steps, sgn(x) estimates the AND
    multiplier Σ_{T⊇S} λ(T) and sgn(y) the OR one; each gives a λ (and so does their mean), and
    the best of their weak-duality bounds (:func:`_dual_bound`, ≥ 0) is kept. Tight where the
    iterate settles on the optimal face (small n), loose (0.3-0.6 relative) at n ≥ 8, where the
    sign pattern keeps oscillating.

    Returns (a, lower, info).
    """
    rows, size = v.shape
    c = np.ascontiguousarray(_butterfly(complement(v).copy(), _M).T)  # MP v, masks first
    a = np.ascontiguousarray(0.5 * v.T)
    a[0] = v[:, 0]
    vel = np.zeros_like(a)
    fwd = np.empty((size, 2 * rows))
    sgn = np.empty_like(fwd)
    avg = np.zeros_like(fwd)
    rates = np.logspace(np.log10(learning_rate), np.log10(learning_rate) - 1, steps)
    start = steps - max(1, round(_SGD_AVERAGE * steps))
    for t in range(steps):
        _l1_signs(a, c, fwd, sgn)
        if t >= start:
            avg += sgn
        grad = _gradient_from_signs(sgn)
        vel *= _SGD_MOMENTUM
        vel += grad
        a -= rates[t] * vel
    avg = avg.T / (steps - start)
    a = np.ascontiguousarray(a.T)
    lam_and = _lambda_from_multiplier(avg[:rows])
    lam_or = _lambda_from_or_multiplier(avg[rows:])
    bounds = [_dual_bound(v, lam) for lam in (lam_and, lam_or, 0.5 * (lam_and + lam_or))]
    lower = np.maximum(np.max(bounds, axis=0), 0.0)
    info = {"steps": steps, "learning_rate": learning_rate, "momentum": _SGD_MOMENTUM,
            "rows": rows}
    return a, lower, info


def _gradient_descent(v: np.ndarray, n: int, learning_rate: float, steps: int) -> AndOrResult:
    a, lower, info = _sgd(v, n, learning_rate, steps)
    x, y = _blocks(a, _butterfly(complement(v).copy(), _M))
    return _finish(v, x, y, lower, "sgd", info=info)


# ----------------------------------------------------------------------------- entry point

def and_or(values, solver: str = "auto", noise: float = 0.0, *, n_max: int = DEFAULT_N_MAX,
           tol: float = 1e-5, max_iter: int = 50000, learning_rate: float = SGD_LEARNING_RATE,
           steps: int = SGD_STEPS) -> AndOrResult:
    """Sparsest AND-OR interactions (Eq. 12) of one or many games.

    Every solver but "sgd" returns the canonical optimum (the ℓ1-optimal point of least ℓ2
    norm); "sgd" returns the point the paper's own gradient descent lands on.

    Parameters
    ----------
    values : array (..., 2**n), v(x_S) by bitmask; leading axes are batched.
    solver : "exact" (LP by HiGHS's interior point method + crossover for the optimum and its
        dual, then the least-ℓ2 point of the optimal face by a small QP with Clarabel; the
        ground truth, ≈ 0.1 s per game at n = 8 and ≈ 1 s at n = 10), "first_order"
        (vectorised ADMM on butterflies with μ-continuation and a certified duality gap; no
        noise term), "auto" (exact for n ≤ AUTO_EXACT_MAX_N or noise > 0, first_order
        beyond), or "sgd" (the paper's optimiser, Appendix D: γ from 0 by heavy-ball
        subgradient descent, :func:`_sgd`; another point of the optimal face, or near it;
        no noise term; certified gap as for the others, but loose at n ≥ 8).
    noise : ε ≥ 0 of the bounded term q_T (paper Section 3.1): v' = v + q, |q_T| ≤ ε·|v(x_N) − v(x_∅)|,
        q_∅ = 0; q is chosen with γ to make the interactions sparsest. ε = 0 gives exact matching.
    n_max : largest n accepted (ValueError beyond).
    tol, max_iter : first-order stopping rule and iteration cap. A game stops once its
        certified relative duality gap is ≤ ``tol`` and, for n ≤ 7, two consecutive converged
        continuation stages also agree to ``tol`` (relative, max norm), which pins down the
        canonical point; games still running at ``max_iter`` keep their last iterate and its
        certified gap (``info["converged"]``, ``info["certified"]`` count the games that met
        the rule and the gap).
    learning_rate, steps : "sgd" only: initial learning rate η₀ (decaying to η₀/10) and the
        number of updates.
    """
    if solver not in SOLVERS:
        raise ValueError(f"solver: {solver!r} is not one of {', '.join(SOLVERS)}")
    if not np.isfinite(noise) or noise < 0:
        raise ValueError(f"noise: must be a finite number ≥ 0, got {noise!r}")
    v, n = _as_values(values, n_max)
    if solver in ("first_order", "sgd") and noise > 0:
        raise ValueError(f"noise: the {solver} solver has no noise term; use solver='exact' "
                         "(or 'auto') when noise > 0")
    if solver == "sgd":
        if not (np.isfinite(learning_rate) and learning_rate > 0):
            raise ValueError(f"learning_rate: must be a finite number > 0, got {learning_rate!r}")
        if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 1:
            raise ValueError(f"steps: must be an integer ≥ 1, got {steps!r}")
    if solver == "auto":
        solver = "exact" if (n <= AUTO_EXACT_MAX_N or noise > 0) else "first_order"
    start = time.perf_counter()
    batch = v.reshape((-1, 1 << n))  # a single game runs as a batch of one
    unit, scale = unit_scale(batch - batch[:, :1])
    if solver == "exact":
        res = _exact(unit, n, noise)
    elif solver == "sgd":
        res = _gradient_descent(unit, n, float(learning_rate), int(steps))
    else:
        res = _first_order(unit, n, tol, max_iter)
    res = _rescale(res, batch, scale)
    lead = v.shape[:-1]
    for name in ("and_", "or_", "gamma"):
        setattr(res, name, getattr(res, name).reshape(v.shape))
    for name in ("objective", "matching_error", "duality_gap", "lower_bound"):
        value = getattr(res, name).reshape(lead)
        setattr(res, name, value[()] if lead == () else value)
    res.info["seconds"] = time.perf_counter() - start
    return res
