"""The result of an AND-OR fit (:class:`AndOrResult`), and the unit scale every fit runs on.

Eq. 12 is positively homogeneous, so each solver fits u with v − v(∅) = s·u, max|u| = 1
(:func:`unit_scale`), and :func:`rescale_result` maps the fit back to v.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ips.interactions.transforms import reconstruct, zeta


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
        :func:`ips.interactions.certificate.dual_bound`; 0 for a zero objective). A
        certificate: the objective is within ``duality_gap`` (relative) of the optimum
        whatever the solver did.
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


def assemble_result(v: np.ndarray, x: np.ndarray, y: np.ndarray, lower: np.ndarray, solver: str,
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


def rescale_result(res: AndOrResult, v: np.ndarray, scale: np.ndarray) -> AndOrResult:
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


#: |I| ≤ ZERO_TOL · max|I| of its row counts as 0 in `normalize` (below the float32
#: precision of v, so its sign carries no information)
ZERO_TOL = 1e-6
