"""The certified duality gap that every solver reports.

All solvers report a certified relative duality gap: a dual point λ, scaled into the dual box
‖Aᵀλ‖_∞ ≤ 1, gives bᵀλ ≤ optimum by weak duality (:func:`dual_bound`), whatever the solver
did.

Each solver supplies its own λ: HiGHS's dual (exact), or a λ recovered from the AND or OR
multiplier of the iterates (first_order, sgd; :func:`lambda_from_multiplier`,
:func:`lambda_from_or_multiplier`).
"""

from __future__ import annotations

import numpy as np

from ips.interactions.transforms import MOBIUS, butterfly, complement, zeta


def _dual_values(lam: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Aᵀλ over the columns S ≠ ∅: (AND part Σ_{T⊇S} λ(T), OR part Σ_{T∩S≠∅} λ(T)), λ(∅) unused."""
    lam = lam.copy()
    lam[..., 0] = 0.0
    sup = complement(zeta(complement(lam)))  # Σ_{T⊇S} λ(T)
    sub = zeta(lam)
    or_part = sub[..., -1:] - complement(sub)
    return sup[..., 1:], or_part[..., 1:]


def dual_bound(v: np.ndarray, lam: np.ndarray) -> np.ndarray:
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


def lambda_from_multiplier(p: np.ndarray) -> np.ndarray:
    """λ over masks T from the AND multiplier p(S) = Σ_{T⊇S} λ(T): superset Möbius inversion."""
    return complement(butterfly(complement(p).copy(), MOBIUS))


def lambda_from_or_multiplier(s: np.ndarray) -> np.ndarray:
    """λ over masks T whose OR dual values Σ_{T≠∅} λ(T) − Σ_{T⊆N∖S} λ(T) equal s(S), S ≠ ∅.

    With λ(∅) = 0 that is (Zλ)(U) = s(N) − s(N∖U) for every U, so λ = M(s(N) − P s).
    """
    return butterfly(s[..., -1:] - complement(s), MOBIUS)
