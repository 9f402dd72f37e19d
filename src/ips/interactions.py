r"""AND-OR interactions of a masked-input game (SPEC §3; paper Section 3.1, Appendices B-D).

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
pattern); every solver returns the canonical optimum: the ℓ1-optimal point of least ℓ2 norm.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

log = logging.getLogger(__name__)

DEFAULT_N_MAX = 16
SOLVERS = ("auto", "exact", "first_order")
#: ``solver="auto"`` uses the exact LP/QP up to this n and the first-order solver beyond.
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
    """Apply ⊗_{i<n} ``mat`` (one 2×2 factor per variable) to the last axis of ``f``, in place."""
    n = f.shape[-1].bit_length() - 1
    lead = f.shape[:-1]
    (a, b), (c, d) = mat
    for i in range(n):
        g = f.reshape(lead + (-1, 2, 1 << i))
        lo, hi = g[..., 0, :], g[..., 1, :]
        if (a, b, c, d) == (1, 0, 1, 1):
            hi += lo
        elif (a, b, c, d) == (1, 0, -1, 1):
            hi -= lo
        else:
            tmp = lo.copy()
            lo *= a
            lo += b * hi
            hi *= d
            hi += c * tmp
    return f


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
    duality_gap : (...) relative gap (objective − lower bound) / objective, where the lower
        bound on Eq. 12's optimum comes from a dual-feasible point (0 for a zero objective).
    solver : the solver that ran ("exact" or "first_order").
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
                       info or {})


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
    """LP (HiGHS) for the optimum f*, then the canonical point by exact ℓ2 regularisation.

    Stage 2 solves min ‖z‖₁ + μ/2‖z‖² over the same feasible set with Clarabel's interior
    point method. Whenever its solution is ℓ1-optimal (‖z_μ‖₁ = f*), it is the least-ℓ2
    ℓ1-optimal point (Friedlander & Tseng 2007); μ shrinks tenfold until that holds.
    """
    import clarabel
    import scipy.sparse as sp
    from scipy.optimize import linprog

    size = 1 << n
    k = size - 1
    b = v - v[0]
    if not np.any(b):  # a constant game: every interaction but I_AND(∅) is zero
        return np.r_[v[0], np.zeros(k)], np.zeros(size), 0.0, np.zeros(size)
    a_eq = _equality_form(n)
    radius = noise * abs(v[-1] - v[0])
    if radius > 0:  # v' = v + q, |q_T| ≤ ε|v(N) − v(∅)|, q_∅ = 0 keeps I_AND(∅) = v(∅)
        q_cols = sp.eye(size, format="csc")[:, 1:]
        a_eq = sp.hstack([a_eq, -q_cols]).tocsc()
    nvar = a_eq.shape[1]
    nq = nvar - 4 * k - 1
    cost = np.r_[np.ones(4 * k), 0.0, np.zeros(nq)]
    bounds = [(0, None)] * (4 * k) + [(None, None)] + [(-radius, radius)] * nq
    lp = linprog(cost, A_eq=a_eq, b_eq=b, bounds=bounds, method="highs-ipm")
    if lp.status != 0:
        raise RuntimeError(f"exact AND-OR fit: HiGHS failed ({lp.message})")
    f_star = float(lp.fun)

    # Clarabel: min ½ zᵀPz + cᵀz  s.t.  A z + s = rhs, s ∈ {0}^rows × R_+^(4k + 2nq)
    bound_rows = [sp.hstack([-sp.eye(4 * k), sp.csc_matrix((4 * k, 1 + nq))])]
    bound_rhs = [np.zeros(4 * k)]
    if nq:
        qsel = sp.hstack([sp.csc_matrix((nq, 4 * k + 1)), sp.eye(nq)])
        bound_rows += [qsel, -qsel]
        bound_rhs += [np.full(nq, radius), np.full(nq, radius)]
    a_cl = sp.vstack([a_eq] + bound_rows).tocsc()
    rhs = np.concatenate([b] + bound_rhs)
    cones = [clarabel.ZeroConeT(size), clarabel.NonnegativeConeT(a_cl.shape[0] - size)]
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.tol_gap_abs = settings.tol_gap_rel = settings.tol_feas = 1e-12
    settings.max_iter = 400
    scale = float(np.abs(b).max())
    # The exact-regularisation threshold shrinks with n (measured: μ·scale = 1 suffices at
    # n = 4, 1e-3 at n = 8); start near it and shrink until the LP optimum is reached.
    mu = 10.0 ** (1.5 - n / 2) / scale
    tol = 1e-9 * max(f_star, scale)
    for _ in range(8):
        quad = sp.diags(np.r_[np.full(4 * k, mu), np.zeros(1 + nq)]).tocsc()
        sol = clarabel.DefaultSolver(quad, cost, a_cl, rhs, cones, settings).solve()
        z = np.asarray(sol.x)
        l1 = float(z[: 4 * k].sum())
        if l1 <= f_star + tol:
            break
        mu /= 10
    else:
        raise RuntimeError("exact AND-OR fit: regularised solution did not reach the LP optimum")
    x = np.r_[v[0], z[:k] - z[k:2 * k]]
    y = np.r_[0.0, z[2 * k:3 * k] - z[3 * k:4 * k]]
    q = np.r_[0.0, z[4 * k + 1:]] if nq else np.zeros(size)
    return x, y, f_star, q


def _exact(v: np.ndarray, n: int, noise: float) -> AndOrResult:
    """Exact fit of each row of ``v`` (rows, 2**n), one LP/QP pair per game."""
    xs, ys, lows, fitv = [], [], [], []
    for row in v:
        x, y, f_star, q = _solve_exact_one(row, n, noise)
        xs.append(x)
        ys.append(y)
        lows.append(f_star)
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


def _dual_bound(v: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """Weak-duality lower bound on Eq. 12 from any λ over the non-empty masks T.

    Rows T ≠ ∅ read Σ_{∅≠S⊆T} x(S) + Σ_{S∩T≠∅} y(S) = v(T) − v(∅). For column S the dual
    values are (Aᵀλ)_AND(S) = Σ_{T⊇S} λ(T) and (Aᵀλ)_OR(S) = Σ_{T≠∅} λ(T) − Σ_{T⊆N∖S} λ(T);
    λ / max(1, ‖Aᵀλ‖_∞) is dual feasible and bᵀλ / max(1, ‖Aᵀλ‖_∞) ≤ optimum.
    """
    lam = lam.copy()
    lam[..., 0] = 0.0
    sup = complement(zeta(complement(lam)))  # Σ_{T⊇S} λ(T)
    sub = zeta(lam)
    or_part = sub[..., -1:] - complement(sub)
    norm = np.maximum(np.abs(sup[..., 1:]).max(-1), np.abs(or_part[..., 1:]).max(-1))
    b = v - v[..., :1]
    return (b * lam).sum(-1) / np.maximum(norm, 1.0)


def _blocks(a: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The AND and OR blocks of a = v_and: (M a, MP a − MP v) with c = MP v."""
    return _butterfly(a.copy(), _M), _butterfly(complement(a).copy(), _M) - c


def _first_order(v: np.ndarray, n: int, tol: float, max_iter: int) -> AndOrResult:
    """Over-relaxed ADMM on the regularised Eq. 12, vectorised over all games.

    Variables a = v_and (a(∅) = v(∅) fixed), u = M a (AND), w = MP(a − v) (OR)::

        min ‖u_{≠∅}‖₁ + ‖w_{≠∅}‖₁ + μ/2 (‖u_{≠∅}‖² + ‖w_{≠∅}‖²)   s.t.  u = M a,  w = MP a − MP v.

    Every step is a butterfly; the a-step is an exact Kronecker solve (``_h_inverse_parts``).
    μ follows a continuation μ·scale = 10⁻², 10⁻³, … with warm starts: below a data-dependent
    threshold the regularised solution no longer moves and equals the canonical optimum
    (exact regularisation), so a game is done when two consecutive stages agree to ``tol``.
    """
    flat = v  # (rows, 2**n)
    rows = flat.shape[0]
    w_mat, inv_diag, h0 = _h_inverse_parts(n)
    c = _butterfly(complement(flat).copy(), _M)  # MP v
    scale = np.abs(flat - flat[:, :1]).max(-1, keepdims=True)
    scale[scale == 0] = 1.0  # a constant game stays at its zero interactions
    rho = 0.3 / scale
    relax = 1.6
    a = 0.5 * flat
    a[:, 0] = flat[:, 0]
    u, wv = _blocks(a, c)
    al = np.zeros_like(u)
    be = np.zeros_like(wv)
    done = np.zeros(rows, dtype=bool)
    previous = None
    total = 0
    stages = 0
    mu_rel = 1e-2
    while total < max_iter and not done.all():
        mu = mu_rel / scale
        for _ in range(max_iter - total):
            total += 1
            r = _butterfly(u - al, _M.T) + complement(_butterfly(wv - be + c, _M.T))
            a = _h_solve(r, w_mat, inv_diag)
            a += ((flat[:, 0] - a[:, 0]) / h0[0])[:, None] * h0
            ma, mpa = _blocks(a, c)
            ma_r = relax * ma + (1 - relax) * u
            mpa_r = relax * mpa + (1 - relax) * wv
            u_old, w_old = u, wv
            u = _shrink(rho * (ma_r + al), 1.0) / (rho + mu)
            u[:, 0] = ma_r[:, 0] + al[:, 0]
            wv = _shrink(rho * (mpa_r + be), 1.0) / (rho + mu)
            wv[:, 0] = mpa_r[:, 0] + be[:, 0]
            al += ma_r - u
            be += mpa_r - wv
            if total % 25 == 0:
                primal = np.maximum(np.abs(ma - u).max(-1), np.abs(mpa - wv).max(-1))
                dual = np.maximum(np.abs(u - u_old).max(-1), np.abs(wv - w_old).max(-1))
                if np.all(np.maximum(primal, dual) <= 0.1 * tol * scale[:, 0]):
                    break
        stages += 1
        z = np.concatenate([ma[:, 1:], mpa[:, 1:]], -1)
        if previous is not None:
            moved = np.abs(z - previous).max(-1) / np.maximum(np.abs(z).max(-1), 1e-300)
            done |= moved <= tol
        previous = z
        mu_rel /= 10
    x, y = _blocks(a, c)
    lower = _dual_bound(flat, _lambda_from_multiplier(rho * al))
    info = {"iterations": total, "stages": stages, "converged": int(done.sum()), "rows": rows}
    if not done.all():
        log.warning("first-order AND-OR: %d of %d games not converged after %d iterations "
                    "(raise max_iter or use solver='exact')", rows - int(done.sum()), rows, total)
    return _finish(v, x, y, lower, "first_order", info=info)


def _lambda_from_multiplier(p: np.ndarray) -> np.ndarray:
    """λ over masks T from the AND multiplier p(S) = Σ_{T⊇S} λ(T): superset Möbius inversion."""
    return complement(_butterfly(complement(p).copy(), _MOBIUS))


# ----------------------------------------------------------------------------- entry point

def and_or(values, solver: str = "auto", noise: float = 0.0, *, n_max: int = DEFAULT_N_MAX,
           tol: float = 1e-5, max_iter: int = 50000) -> AndOrResult:
    """Sparsest AND-OR interactions (Eq. 12) of one or many games, canonical optimum.

    Parameters
    ----------
    values : array (..., 2**n), v(x_S) by bitmask; leading axes are batched.
    solver : "exact" (LP by HiGHS for the optimum, then the least-ℓ2 optimal point by exact
        regularisation with Clarabel; the ground truth), "first_order" (vectorised ADMM on
        butterflies with μ-continuation; no noise term), or "auto" (exact for
        n ≤ AUTO_EXACT_MAX_N or noise > 0, first_order beyond).
    noise : ε ≥ 0 of the bounded term q_T (SPEC §3): v' = v + q, |q_T| ≤ ε·|v(x_N) − v(x_∅)|,
        q_∅ = 0; q is chosen with γ to make the interactions sparsest. ε = 0 gives exact matching.
    n_max : largest n accepted (ValueError beyond).
    tol, max_iter : first-order stopping rule (relative change of the solution between two
        continuation steps) and iteration cap.
    """
    if solver not in SOLVERS:
        raise ValueError(f"solver: {solver!r} is not one of {', '.join(SOLVERS)}")
    if not np.isfinite(noise) or noise < 0:
        raise ValueError(f"noise: must be a finite number ≥ 0, got {noise!r}")
    v, n = _as_values(values, n_max)
    if solver == "first_order" and noise > 0:
        raise ValueError("noise: the first_order solver has no noise term; use solver='exact' "
                         "(or 'auto') when noise > 0")
    if solver == "auto":
        solver = "exact" if (n <= AUTO_EXACT_MAX_N or noise > 0) else "first_order"
    start = time.perf_counter()
    batch = v.reshape((-1, 1 << n))  # a single game runs as a batch of one
    res = _exact(batch, n, noise) if solver == "exact" else _first_order(batch, n, tol, max_iter)
    lead = v.shape[:-1]
    for name in ("and_", "or_", "gamma"):
        setattr(res, name, getattr(res, name).reshape(v.shape))
    for name in ("objective", "matching_error", "duality_gap"):
        value = getattr(res, name).reshape(lead)
        setattr(res, name, value[()] if lead == () else value)
    res.info["seconds"] = time.perf_counter() - start
    return res
