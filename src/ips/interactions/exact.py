"""The exact solver: Eq. 12 as an LP, then the canonical point of its optimal face.

HiGHS (interior point + crossover) on the equality form gives the optimum and a dual λ; the
optimal set is exactly {feasible z: z_j = 0 where the reduced cost is > 0}, so the canonical
point is the least-ℓ2 point of that face, a small QP (Clarabel).
"""

from __future__ import annotations

import logging
from functools import lru_cache

import numpy as np

from ips.interactions.certificate import dual_bound
from ips.interactions.result import AndOrResult, assemble_result

log = logging.getLogger(__name__)


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
    in a sparse fit at n = 20, `ips.interactions.sparse`), the fallback is exact ℓ2 regularisation
    over the whole feasible set (:func:`_regularised_exact`). All rows make the LP feasible (the
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


def fit_exact(v: np.ndarray, n: int, noise: float) -> AndOrResult:
    """Exact fit of each row of ``v`` (rows, 2**n), one LP/QP pair per game.

    The lower bound is the LP dual's certified bound (:func:`dual_bound`, recomputed here
    with butterflies) without noise, and HiGHS's optimum with it.
    """
    xs, ys, lows, fitv = [], [], [], []
    for row in v:
        x, y, f_star, q, lam = _solve_exact_one(row, n, noise)
        xs.append(x)
        ys.append(y)
        lows.append(f_star if noise > 0 else float(dual_bound(row, lam)))
        fitv.append(row + q)
    return assemble_result(v, np.array(xs), np.array(ys), np.array(lows), "exact", np.array(fitv))
