"""The first-order solver: over-relaxed ADMM on butterflies, vectorised over all games.

ADMM (:func:`_admm`) solves Eq. 12 regularised by μ/2‖·‖² for a decreasing μ, each stage warm
started from the last; below a data-dependent threshold the regularised solution is the
canonical optimum (exact regularisation). Every step is O(n·2^n) per game, and the multiplier
gives the certified lower bound (:mod:`ips.interactions.certificate`). No noise term.
"""

from __future__ import annotations

import logging
from functools import lru_cache

import numpy as np

from ips.interactions.certificate import dual_bound, lambda_from_multiplier
from ips.interactions.result import AndOrResult, assemble_result
from ips.interactions.transforms import MOBIUS, and_or_blocks, butterfly, complement

log = logging.getLogger(__name__)

# Blocks: x = M a and y = MP (a − v) with a = v_and (a(∅) = v(∅)). The a-update solves
# H a = r with H = MᵀM + PᵀMᵀMP = ⊗A + ⊗B (A = mᵀm, B = (mJ)ᵀ(mJ) per variable). One 2×2
# generalised eigenproblem WᵀAW = I, WᵀBW = Λ diagonalises both Kronecker products, so
# H⁻¹ = (⊗W) (I + ⊗Λ)⁻¹ (⊗W)ᵀ is three butterflies: an exact solve in O(n·2^n).
_MP = MOBIUS @ np.array([[0.0, 1.0], [1.0, 0.0]])


@lru_cache(maxsize=1)
def _kron_eig():
    import scipy.linalg as sla

    lam, w = sla.eigh(_MP.T @ _MP, MOBIUS.T @ MOBIUS)
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
    t = butterfly(np.array(r, dtype=np.float64, copy=True), w.T)
    t *= inv_diag
    return butterfly(t, w)


def _shrink(t: np.ndarray, thresh) -> np.ndarray:
    return np.sign(t) * np.maximum(np.abs(t) - thresh, 0.0)



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
    (:func:`dual_bound`), and at every change of μ a Richardson-extrapolated multiplier gives
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
    c = butterfly(complement(v).copy(), MOBIUS)  # MP v
    u, w = and_or_blocks(a, c)
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
        r = butterfly(u - al, MOBIUS.T) + complement(butterfly(wv - be + c, MOBIUS.T))
        a = _h_solve(r, w_mat, inv_diag)
        a += ((flat[:, 0] - a[:, 0]) / h0[0])[:, None] * h0
        ma, mpa = and_or_blocks(a, c)
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
            bound = dual_bound(flat, lambda_from_multiplier(rho * al))
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
    lam = lambda_from_multiplier(_RHO * st["al"])
    if st["lam_prev"] is not None and mu_prev_rel > mu_rel:
        # Richardson extrapolation to μ = 0: on the support Aᵀλ_μ = sign(z) + μz with
        # the same z at both μ (exact regularisation), so the combination is exact there
        t = mu_prev_rel / (mu_prev_rel - mu_rel)
        extrapolated = t * lam + (1 - t) * st["lam_prev"]
        lower[idx] = np.maximum(lower[idx], dual_bound(flat, extrapolated))
    ma, mpa = and_or_blocks(st["a"], st["c"])
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


def fit_first_order(v: np.ndarray, n: int, tol: float, max_iter: int) -> AndOrResult:
    a, lower, done, info = _admm(v, n, tol, max_iter)
    c = butterfly(complement(v).copy(), MOBIUS)
    x, y = and_or_blocks(a, c)
    # AND{i} and OR{i} are the same column ([i ∈ T]): the canonical optimum splits their sum
    # evenly (least ℓ2; never more ℓ1), and matching is unchanged. Exact for any iterate.
    single = 1 << np.arange(n)
    half = 0.5 * (x[:, single] + y[:, single])
    x[:, single] = half
    y[:, single] = half
    res = assemble_result(v, x, y, lower, "first_order", info=info)
    info["certified"] = int(np.sum(res.duality_gap <= tol))
    rows = v.shape[0]
    if not done.all():
        log.warning("first-order AND-OR: %d of %d games not converged after %d iterations "
                    "(%d within the certified gap tol = %g; max gap %.2g; raise max_iter or use "
                    "solver='exact')", rows - int(done.sum()), rows, info["iterations"],
                    info["certified"], tol, float(res.duality_gap.max()))
    return res
