"""Reference implementations the tests compare with (never used by ips)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ips.analysis.layout import SetLayout
from ips.interactions.sgd import gradient_from_signs, l1_signs
from ips.interactions.sparse import AND, OR, SparseInteractions
from ips.interactions.transforms import MOBIUS, butterfly, complement


def _l1_loss_and_gradient(v: np.ndarray, gamma: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """L(γ) = Σ_{S≠∅} |I_AND(S)| + |I_OR(S)| and its (sub)gradient in γ, rows (rows, 2^n)."""
    a = np.ascontiguousarray((0.5 * v + gamma).T)
    c = np.ascontiguousarray(butterfly(complement(v).copy(), MOBIUS).T)
    fwd = np.empty((a.shape[0], 2 * a.shape[1]))
    sgn = np.empty_like(fwd)
    l1_signs(a, c, fwd, sgn)
    loss = np.abs(fwd[1:]).sum(0)
    rows = a.shape[1]
    return loss[:rows] + loss[rows:], gradient_from_signs(sgn).T


def order_bands(n: ArrayLike, n_max: int | None = None) -> NDArray[np.int8]:
    """Order band of every bitmask for samples with n variables (Section 4.3).

    With |S| the popcount of the mask:

        low  (code 1):  1 ≤ |S| ≤ ⌊n/3⌋
        mid  (code 2):  ⌊n/3⌋ < |S| ≤ ⌊2n/3⌋
        high (code 3):  ⌊2n/3⌋ < |S| ≤ n
        code 0: not in Ω (mask 0 or mask ≥ 2**n).

    ``n`` may be an int or an int array (per row); the result has shape
    ``np.shape(n) + (2**n_max,)`` with ``n_max`` defaulting to ``max(n)``.
    """
    na = np.asarray(n)
    if not np.issubdtype(na.dtype, np.integer):
        raise ValueError(f"n must hold integers; got {n!r}")
    if na.size and na.min() < 0:
        raise ValueError(f"n must be >= 0; got {n!r}")
    top = int(na.max()) if na.size else 0
    if n_max is None:
        n_max = top
    if n_max < top:
        raise ValueError(f"n_max = {n_max} is smaller than the largest n = {top}")
    masks = np.arange(1 << n_max, dtype=np.int64)
    nn = na.astype(np.int64)
    code = SetLayout(masks, nn).bands()
    return np.where(masks < (np.int64(1) << nn)[..., None], code, 0).astype(np.int8)


#: :func:`to_dense` up to this n (the dense layout of ``ips.interactions``)
DENSE_MAX_N = 16


def to_dense(est: SparseInteractions) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(and_, or_) of length 2^n in the layout of ``ips.interactions`` (n ≤ DENSE_MAX_N):
    ``and_[0] = v(∅)``, ``or_[0] = 0``, every interaction that is not an entry 0."""
    if est.n > DENSE_MAX_N:
        raise ValueError(f"n = {est.n}: the dense layout holds n ≤ {DENSE_MAX_N}")
    dense = np.zeros((2, 1 << est.n))
    dense[est.kinds.astype(np.int64), est.masks] = est.values
    dense[AND, 0] = est.v_empty
    return dense[AND], dense[OR]


def template_pairs(names: Iterable[str]) -> list[tuple[str, str]]:
    """Unordered pairs of conditions compared by IPS, in a fixed order."""
    return list(itertools.combinations(list(names), 2))


def subsets(mask: int):
    """All submasks of ``mask`` (including 0 and mask)."""
    return [s for s in range(mask + 1) if s & mask == s]


def popcount(m: int) -> int:
    return bin(m).count("1")


def brute_harsanyi(v: np.ndarray) -> np.ndarray:
    """I(S) = Σ_{T⊆S} (-1)^{|S|-|T|} v(T), literally (O(3^n))."""
    out = np.zeros_like(v)
    for s in range(len(v)):
        out[s] = sum((-1) ** (popcount(s) - popcount(t)) * v[t] for t in subsets(s))
    return out


def brute_and_or(v: np.ndarray, gamma: np.ndarray):
    """The paper's definitions of I_AND and I_OR from γ (Section 3.1), literally (O(3^n))."""
    full = len(v) - 1
    v_and = 0.5 * v + gamma
    v_or = 0.5 * v - gamma
    i_and = np.zeros_like(v)
    i_or = np.zeros_like(v)
    for s in range(len(v)):
        i_and[s] = sum((-1) ** (popcount(s) - popcount(t)) * v_and[t] for t in subsets(s))
        if s:
            i_or[s] = -sum((-1) ** (popcount(s) - popcount(t)) * v_or[full ^ t] for t in subsets(s))
    return i_and, i_or


def indicator_matrices(n: int):
    """[S ⊆ T] and [S ∩ T ≠ ∅] for rows T and columns S (S ≠ ∅ columns only are used)."""
    masks = np.arange(1 << n)
    inter = masks[:, None] & masks[None, :]
    return (inter == masks[None, :]).astype(float), (inter != 0).astype(float)


def brute_matching(v, i_and, i_or) -> float:
    """max_T |v(T) − v(∅) − Σ_{∅≠S⊆T} I_AND(S) − Σ_{S∩T≠∅} I_OR(S)|, summed as written."""
    n = len(v).bit_length() - 1
    sub, meets = indicator_matrices(n)
    phi = v[0] + sub[:, 1:] @ i_and[1:] + meets[:, 1:] @ i_or[1:]
    return float(np.abs(v - phi).max())


def planted_game(n: int, terms, base: float = 0.0) -> np.ndarray:
    """v(T) = base + Σ c·[S ⊆ T] (AND terms) + Σ c·[S ∩ T ≠ ∅] (OR terms)."""
    t = np.arange(1 << n)
    v = np.full(1 << n, base, dtype=float)
    for kind, s, c in terms:
        v += c * (((t & s) == s) if kind == "and" else ((t & s) != 0))
    return v


def lp_optimum(v: np.ndarray) -> float:
    """Eq. 12's optimum by a dense LP over rows T ≠ ∅ (HiGHS simplex), independent of ips."""
    from scipy.optimize import linprog

    n = len(v).bit_length() - 1
    sub, meets = indicator_matrices(n)
    a = np.hstack([sub[1:, 1:], meets[1:, 1:]])
    lp = linprog(np.ones(2 * a.shape[1]), A_eq=np.hstack([a, -a]), b_eq=v[1:] - v[0],
                 bounds=(0, None), method="highs-ds")
    assert lp.status == 0
    return float(lp.fun)


def canonical_reference(v: np.ndarray) -> np.ndarray:
    """The canonical optimum by its definition: LP optimum f*, then least ℓ2 over ‖z‖₁ ≤ f*.

    Dense formulation over rows T ≠ ∅ (independent of the package's sparse equality form).
    """
    import clarabel
    import scipy.sparse as sp
    from scipy.optimize import linprog

    n = len(v).bit_length() - 1
    sub, meets = indicator_matrices(n)
    a = np.hstack([sub[1:, 1:], meets[1:, 1:]])
    b = v[1:] - v[0]
    m = a.shape[1]
    split = np.hstack([a, -a])
    lp = linprog(np.ones(2 * m), A_eq=split, b_eq=b, bounds=(0, None), method="highs")
    assert lp.status == 0
    f_star = lp.fun
    rows = sp.vstack([sp.csc_matrix(split), sp.csc_matrix(np.ones((1, 2 * m))), -sp.eye(2 * m)]).tocsc()
    rhs = np.r_[b, f_star * (1 + 1e-10) + 1e-12, np.zeros(2 * m)]
    s = clarabel.DefaultSettings()
    s.verbose = False
    s.tol_gap_abs = s.tol_gap_rel = s.tol_feas = 1e-12
    sol = clarabel.DefaultSolver(sp.eye(2 * m, format="csc"), np.zeros(2 * m), rows, rhs,
                                 [clarabel.ZeroConeT(len(b)), clarabel.NonnegativeConeT(1 + 2 * m)],
                                 s).solve()
    z = np.asarray(sol.x)
    return z[:m] - z[m:]


def stacked(res) -> np.ndarray:
    return np.concatenate([res.and_[..., 1:], res.or_[..., 1:]], -1)


def ref_omega(and_row, or_row, n):
    """Ω(x|T) as {(kind, S): I}."""
    omega = {}
    for mask in range(1, 2**n):
        S = frozenset(i for i in range(n) if (mask >> i) & 1)
        omega[("AND", S)] = float(and_row[mask])
        omega[("OR", S)] = float(or_row[mask])
    return omega


def sgn(v):
    return (v > 0) - (v < 0)


def ref_normalize(omega):
    mags = [abs(v) for v in omega.values()]
    lo, hi = min(mags), max(mags)
    if hi == lo:
        return {key: 0.0 for key in omega}
    return {key: sgn(v) * (abs(v) - lo) / (hi - lo) for key, v in omega.items()}


def ref_salient(norm, tau):
    return {key for key, v in norm.items() if abs(v) > tau}


def ref_band(S, n):
    s = len(S)
    if 1 <= s <= n // 3:
        return "low"
    if n // 3 < s <= (2 * n) // 3:
        return "mid"
    return "high"


def ref_union(na, nb, n, tau, band=None):
    U = ref_salient(na, tau) | ref_salient(nb, tau)
    if band is not None:
        U = {key for key in U if ref_band(key[1], n) == band}
    return U


def ref_pair(na, nb, n, tau, band=None):
    U = ref_union(na, nb, n, tau, band)
    if not U:
        return None
    terms = [abs(na[k] - nb[k]) / ((abs(na[k]) + abs(nb[k])) / 2) for k in U]
    return sum(terms) / len(terms)


def ref_types(na, nb, n, tau, band=None):
    counts = {"opposite": 0, "different": 0, "similar": 0}
    for k in ref_union(na, nb, n, tau, band):
        a, b = na[k], nb[k]
        if a * b < 0:
            counts["opposite"] += 1
        elif a == 0 or b == 0:
            counts["different"] += 1  # documented convention: zero on one side
        elif abs(a) / abs(b) > 2 or abs(a) / abs(b) < 0.5:
            counts["different"] += 1
        else:
            counts["similar"] += 1
    return [counts["opposite"], counts["different"], counts["similar"]]


def ref_ips(samples, pairs, tau, band=None):
    """samples: list of (n, [norm dict per condition]). Returns (IPS, n_empty_pairs)."""
    per_sample, n_empty = [], 0
    for n, conds in samples:
        vals = []
        for i, j in pairs:
            v = ref_pair(conds[i], conds[j], n, tau, band)
            if v is None:
                n_empty += 1
            else:
                vals.append(v)
        if vals:
            per_sample.append(sum(vals) / len(vals))
    value = sum(per_sample) / len(per_sample) if per_sample else math.nan
    return value, n_empty


# --------------------------------------------------------------------------------------------
# random inputs with per-row n and NaN padding
# --------------------------------------------------------------------------------------------
N_MAX = 6


TAUS = [0.05, 0.1, 0.15, 0.3]


def random_interactions(rng, n_samples, n_conditions, n_max=N_MAX, n_min=1):
    """and_/or_ of shape (sample, condition, 2**n_max), NaN-padded, plus n per sample."""
    size = 2**n_max
    n = rng.integers(n_min, n_max + 1, size=n_samples)
    shape = (n_samples, n_conditions, size)
    # heavy tails so that salience varies; exact zeros and repeated values for ties
    vals = rng.standard_normal(shape) * np.exp(rng.normal(0.0, 1.5, shape))
    vals[rng.random(shape) < 0.1] = 0.0
    rep = rng.random(shape) < 0.05
    vals[rep] = 0.5
    and_ = vals.copy()
    or_ = rng.standard_normal(shape) * np.exp(rng.normal(0.0, 1.5, shape))
    or_[rng.random(shape) < 0.1] = 0.0
    and_[..., 0] = rng.standard_normal((n_samples, n_conditions))  # I_AND(∅): ignored
    or_[..., 0] = 0.0
    pad = np.broadcast_to(np.arange(size)[None, None, :] >= (2**n)[:, None, None], shape)
    and_[pad] = np.nan
    or_[pad] = np.nan
    return and_, or_, n


def ref_samples(and_, or_, n):
    return [
        (int(n[s]), [ref_normalize(ref_omega(and_[s, c], or_[s, c], int(n[s])))
                     for c in range(and_.shape[1])])
        for s in range(and_.shape[0])
    ]


def to_dict(norm_row, n):
    """Vectorised normalised row (2, 2**n_max) → {(kind, S): Ĩ}."""
    return ref_omega(norm_row[0], norm_row[1], n)
