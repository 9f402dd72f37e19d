r"""AND-OR interactions of a masked-input game (paper Section 3.1, Appendices B-D).

Conventions
-----------
A game is a float64 array ``values`` of shape ``(..., 2**n)`` indexed by bitmask:
``values[m] = v(x_S)`` where bit ``i`` of ``m`` is set when variable ``i`` is kept
(``values[0] = v(x_∅)``, ``values[2**n - 1] = v(x_N)``). Interactions use the same
indexing: ``and_[m] = I_AND(S)``, ``or_[m] = I_OR(S)``.

The transforms and the AND-OR decomposition with its universal matching:
:mod:`ips.interactions.transforms`.

Eq. 12 chooses γ to minimise Σ_{S≠∅} |I_AND(S)| + |I_OR(S)| (the constant |I_AND(∅)| = |v(∅)|
is left out of ``objective``). With x = I_AND and y = I_OR this is basis pursuit,
``min ‖x‖₁ + ‖y‖₁  s.t.  Z x − P Z y = v, x(∅) = v(∅)``, where y(∅) is a free slack forced to
−Σ_{S≠∅} y(S) by the row T = ∅. The optimum is not unique (AND{i} and OR{i} are the same
pattern); every solver but ``sgd`` returns the canonical optimum: the ℓ1-optimal point of
least ℓ2 norm.

Modules (each imports only those above it):

* ``transforms``   zeta, Möbius, complement, Harsanyi dividends, the surrogate φ
* ``result``       :class:`AndOrResult` and the unit scale every fit runs on
* ``certificate``  the weak-duality lower bound behind every result's duality gap
* ``exact``        LP (HiGHS) and the least-ℓ2 point of its optimal face (Clarabel)
* ``first_order``  ADMM on butterflies with μ-continuation
* ``sgd``          the paper's own optimiser, subgradient descent on γ
* ``solve``        :func:`and_or`, which validates the games and picks a solver
* ``design``       the masks a sparse game scores
* ``sparse``       sparse AND-OR interactions from a budget of masked prompts (App. J)
"""

from ips.interactions.exact import l1_optimum
from ips.interactions.result import AndOrResult, unit_scale
from ips.interactions.sgd import SGD_LEARNING_RATE, SGD_STEPS
from ips.interactions.solve import AUTO_EXACT_MAX_N, SOLVERS, and_or
from ips.interactions.transforms import (
                                         DEFAULT_N_MAX,
                                         complement,
                                         harsanyi,
                                         mobius,
                                         reconstruct,
                                         zeta,
)

__all__ = [
    "AUTO_EXACT_MAX_N",
    "AndOrResult",
    "DEFAULT_N_MAX",
    "SGD_LEARNING_RATE",
    "SGD_STEPS",
    "SOLVERS",
    "and_or",
    "complement",
    "harsanyi",
    "l1_optimum",
    "mobius",
    "reconstruct",
    "unit_scale",
    "zeta",
]
