"""The entry point :func:`and_or`: checks the games, picks a solver, fits every game on unit
scale (:func:`~ips.interactions.result.unit_scale`) and reshapes the result to the input.

Solvers: ``exact`` (:mod:`ips.interactions.exact`, the ground truth), ``first_order``
(:mod:`ips.interactions.first_order`), ``sgd`` (:mod:`ips.interactions.sgd`), and ``auto``,
which picks ``exact`` up to ``AUTO_EXACT_MAX_N`` variables and ``first_order`` beyond.
"""

from __future__ import annotations

import time

import numpy as np

from ips.interactions.exact import fit_exact
from ips.interactions.first_order import fit_first_order
from ips.interactions.result import AndOrResult, rescale_result, unit_scale
from ips.interactions.sgd import SGD_LEARNING_RATE, SGD_STEPS, fit_gradient_descent
from ips.interactions.transforms import DEFAULT_N_MAX, as_values

SOLVERS = ("auto", "exact", "first_order", "sgd")
#: ``solver="auto"`` uses the exact LP/QP up to this n and the first-order solver beyond
#: (measured on 2 cores: exact ≈ 1 s per game at n = 10 with a ~1e-12 gap, first-order ≈ 2 s
#: per game batched for a 1e-5 certified gap; exact at n = 12 takes minutes).
AUTO_EXACT_MAX_N = 10


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
        subgradient descent, :func:`ips.interactions.sgd._sgd`; another point of the optimal
        face, or near it; no noise term; certified gap as for the others, but loose at n ≥ 8).
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
    v, n = as_values(values, n_max)
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
        res = fit_exact(unit, n, noise)
    elif solver == "sgd":
        res = fit_gradient_descent(unit, n, float(learning_rate), int(steps))
    else:
        res = fit_first_order(unit, n, tol, max_iter)
    res = rescale_result(res, batch, scale)
    lead = v.shape[:-1]
    for name in ("and_", "or_", "gamma"):
        setattr(res, name, getattr(res, name).reshape(v.shape))
    for name in ("objective", "matching_error", "duality_gap", "lower_bound"):
        value = getattr(res, name).reshape(lead)
        setattr(res, name, value[()] if lead == () else value)
    res.info["seconds"] = time.perf_counter() - start
    return res
