"""Interaction-based prompt-sensitivity metrics (paper Sections 3.2, 3.3, 4.1, 4.3, App. F.8).

Everything here works on interactions that the interaction core has already extracted, and
implements the definitions of the paper's Section 3.2-3.3 literally. The diagnostics that
`ips.formats.metrics` stores beside IPS (consistency, sparsity, universal matching, the hidden-state
baseline) are in `ips.analysis.diagnostics`.

Data layout
-----------
Interactions of one sample under one prompt template are two float arrays ``and_`` and ``or_``
of length ``2**n_max``, indexed by bitmask: entry ``m`` is ``I(S)`` with ``S = {i : bit i of m}``.
Entry 0 (``S = ∅``) is not part of Ω and is always ignored.  A sample with ``n < n_max``
variables has NaN in every entry ``m >= 2**n``, so its masks are exactly the first ``2**n``
entries.  Any number of leading (batch) axes is allowed.

    Ω(x|T) = {(kind, S) : kind ∈ {AND, OR}, ∅ ≠ S ⊆ N},   |Ω| = 2·(2^n − 1).

Normalised interactions (the output of :func:`normalize`) have shape ``(..., 2, 2**n_max)``,
kind axis ``0 = AND, 1 = OR``, and hold NaN exactly outside Ω (mask 0 and the padding).

Beyond 2^n arrays (sparse fits, ``ips.analysis.sparse_metrics.entry_grid``) the last axis may
instead list sets: a :class:`SetLayout` gives each column's bitmask, and the functions that take a
``layout`` (IPS, bands, types; ``ips.analysis.diagnostics.sparsity`` takes |Ω|) compute the same
numbers, every interaction off the listed sets being 0.

Conventions chosen here (where the paper is silent)
-------------------------------------------
* **Max == Min**: when every |I| in Ω is equal, nothing stands out, and the whole row is
  ``Ĩ = 0`` (so no interaction of that row is salient for any τ > 0).
* **Numerical zeros**: |I| ≤ ``ZERO_TOL``·Max (1e-6) is taken as 0 before normalising. A
  fit's zero interactions come out as ±1e-12 or so; their sign is noise, and it would make
  a pair (≈0, salient) "opposite sign" or "same sign" at random in :func:`interaction_types`.
* **n = 0**: a row whose masks 1.. are all NaN has an empty Ω; its normalised row is all NaN
  and contributes no salient interaction. It is how a condition a sample was not scored under
  (a rewording its item lacks, ``ips.formats.values``' ``scored``) enters: `ips.analysis.summary`
  normalises it with n = 0. A pair with such a row on either side is *missing*
  (:func:`pair_sides`): no value, counted in ``n_missing_pairs``, not as an empty U.
* **τ axis**: ``tau`` may be a scalar or a 1-D array.  For a 1-D array every result gets a
  *leading* τ axis (``result[t]`` belongs to ``tau[t]``); for a scalar there is no τ axis.
* **Zero on one side** (interaction types): with ``Ĩ_T = 0`` exactly and ``Ĩ_T̂`` salient, the
  sign is not reversed but the magnitude changed by more than 2×, so the interaction counts as
  *same sign & different effect*.
* Averages ignore missing values: IPS is the mean over samples of the mean over the sample's
  template pairs that have a value (non-empty U); samples without any valued pair are left out
  and counted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ips.analysis.layout import (
    SetLayout,
    as_float,
    check_band,
    check_norm_shape,
    check_pair_inputs,
    check_pairs,
    check_tau,
    n_max_of,
    row_n,
)
from ips.interactions.result import ZERO_TOL

__all__ = [
    "DEFAULT_TAU",
    "normalize",
    "salient",
    "SetLayout",
    "PairSensitivity",
    "pair_sensitivity",
    "all_pairs",
    "IPSResult",
    "ips",
    "pair_sides",
    "type_codes",
    "default_tau_sweep",
    "delta_ips",
]


DEFAULT_TAU: float = 0.1
#: the sets of effects the min-max normalisation runs over (`normalize`; config key
#: `normalisation`): Ω's non-empty interactions (the default), or all 2^(n+1), ∅'s included
NORMALISATIONS = ("nonempty", "paper")


def normalize(
    and_: ArrayLike, or_: ArrayLike, n_vars: ArrayLike | None = None, *,
    normalisation: str = "nonempty",
) -> NDArray[np.float64]:
    """Min-max normalised interactions Ĩ over Ω (Section 3.2).

        Ĩ(kind, S) = sgn(I) · (|I| − Min) / (Max − Min),   (kind, S) ∈ Ω,

    with Min / Max the minimum / maximum of |I| over the 2·(2^n − 1) non-empty AND and OR
    interactions of the row (``normalisation="nonempty"``, the default: mask 0 never
    enters), or over all 2^(n+1) AND and OR effects, the empty set's two included
    (``"paper"``: Section 3.1 read literally; docs/method.md#departures-from-the-paper).
    Ĩ is defined on Ω either way, ∅ being no interaction between variables. Hence |Ĩ| ≤ 1,
    the largest |I| maps to ±1 and the smallest to 0 (with ``"paper"`` the largest may be
    the empty set's, and then no Ĩ of Ω reaches 1).  If Max == Min (all |I| equal) nothing
    stands out and the whole row is Ĩ = 0.  An |I| ≤ ZERO_TOL·Max (1e-6: below the float32
    precision of v) is taken as exactly 0 first, so that a solver's ±1e-12 for a zero
    interaction has no sign.

    Parameters
    ----------
    and_, or_ : arrays of shape (..., 2**n_max), same shape, indexed by bitmask.
    n_vars : optional int array broadcastable to ``and_.shape[:-1]``.  If omitted, n of every
        row is read from its NaN padding (which must then be exactly the entries m >= 2**n).
        If given, the entries m >= 2**n are ignored whatever they hold.
    normalisation : "nonempty" or "paper" (`NORMALISATIONS`), the set Min and Max run over.

    Returns
    -------
    Array of shape (..., 2, 2**n_max): kind axis 0 = AND, 1 = OR; NaN outside Ω.

    Raises
    ------
    ValueError
        shapes of ``and_`` / ``or_`` differ or are not 2**n_max long; NaN or ±inf inside Ω;
        ``n_vars`` not an integer in 0..n_max or not broadcastable; AND and OR padding disagree.
    """
    if normalisation not in NORMALISATIONS:
        raise ValueError(f"normalisation must be one of {', '.join(NORMALISATIONS)}; "
                         f"got {normalisation!r}")
    a = as_float(and_, "and_")
    o = as_float(or_, "or_")
    if a.ndim == 0 or o.ndim == 0:
        raise ValueError("and_ and or_ must be arrays of shape (..., 2**n_max)")
    if a.shape != o.shape:
        raise ValueError(f"and_ and or_ must have the same shape; got {a.shape} and {o.shape}")
    n_max = n_max_of(a.shape[-1], "and_")
    M = a.shape[-1]
    n = row_n(a, o, n_vars, n_max)
    x = np.stack([a, o], axis=-2)  # (..., 2, M)
    masks = np.arange(M)
    in_omega = (masks >= 1) & (masks < (np.int64(1) << n)[..., None, None])  # (..., 1, M)
    # the effects Min and Max run over: Ω, and with "paper" the empty set's of a row with Ω
    scale = in_omega | ((masks == 0) & (n >= 1)[..., None, None]
                        if normalisation == "paper" else False)
    absx = np.abs(x)
    if np.any(scale & ~np.isfinite(x)):
        raise ValueError("normalisation 'paper' needs the empty set's AND and OR effects "
                         "(entry 0) finite in every row with variables")
    hi = np.max(np.where(scale, absx, -np.inf), axis=(-2, -1), keepdims=True)
    # numerical zeros (a solver's ±1e-12 where the fit is 0) are 0: their sign is noise
    zero = absx <= ZERO_TOL * hi
    x = np.where(zero, 0.0, x)
    absx = np.where(zero, 0.0, absx)
    lo = np.min(np.where(scale, absx, np.inf), axis=(-2, -1), keepdims=True)
    den = hi - lo
    flat = ~(den > 0)  # Max == Min (or empty Ω): nothing stands out
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.sign(x) * (absx - lo) / np.where(flat, 1.0, den)
    out = np.where(flat, 0.0, out)
    return np.where(in_omega, out, np.nan)


def salient(norm: ArrayLike, tau: ArrayLike = DEFAULT_TAU) -> NDArray[np.bool_]:
    """Salient-interaction indicator |Ĩ| > τ (Section 4.1); NaN (outside Ω) → False.

    ``tau`` is a scalar or a 1-D array in (0, 1); for a 1-D array the result gets a leading
    τ axis: shape ``(len(tau),) + norm.shape``.  Mask 0 is never salient.
    """
    x = as_float(norm, "norm")
    t, scalar = check_tau(tau)
    absx = np.abs(x)
    with np.errstate(invalid="ignore"):
        out = absx[None] > t.reshape((-1,) + (1,) * x.ndim)  # NaN > τ is False
    if x.ndim >= 1:
        out[..., 0] = False
    return out[0] if scalar else out


# --------------------------------------------------------------------------------------------
# core reduction over U for a τ grid
# --------------------------------------------------------------------------------------------
def _tail_sums(
    k: NDArray[np.int64], n_tau: int, weights: NDArray[np.float64] | None = None,
    group: NDArray[np.int64] | None = None, n_groups: int = 1,
) -> NDArray:
    """For rows r and sorted τ index t: Σ weight over elements with k > t (optionally per group).

    ``k`` (R, K) holds, per element, the number of sorted τ values strictly below its salience
    magnitude, i.e. the element belongs to U exactly for τ indices t < k.  Returns (R, G, T).
    """
    R, K = k.shape
    rows = np.arange(R, dtype=np.int64)[:, None]
    g = 0 if group is None else group
    idx = ((rows * n_groups + g) * (n_tau + 1) + k).ravel()
    h = np.bincount(idx, weights=None if weights is None else weights.ravel(),
                    minlength=R * n_groups * (n_tau + 1))
    h = h.reshape(R, n_groups, n_tau + 1)
    tail = np.cumsum(h[..., ::-1], axis=-1)[..., ::-1]  # tail[j] = Σ_{k' ≥ j} h[k']
    return tail[..., 1:]


def type_codes(norm_a: ArrayLike, norm_b: ArrayLike) -> NDArray[np.int64]:
    """The type of every interaction, as an index into `INTERACTION_TYPES` (same shape).

    0 ``opposite_sign`` (Ĩ_T · Ĩ_T̂ < 0); 2 ``same_sign_similar_effect`` (same sign, ratio of
    magnitudes within [1/2, 2]); 1 ``same_sign_different_effect`` otherwise (incl. exactly 0
    on one side). Meaningful for the interactions of U (see :func:`interaction_types`).
    """
    a = np.asarray(norm_a, dtype=np.float64)
    b = np.asarray(norm_b, dtype=np.float64)
    aa, bb = np.abs(a), np.abs(b)
    with np.errstate(invalid="ignore"):
        prod = a * b
        similar = (prod > 0) & ~((aa > 2.0 * bb) | (bb > 2.0 * aa))
        return np.where(prod < 0, 0, np.where(similar, 2, 1)).astype(np.int64)


def union_grid(
    a: NDArray[np.float64], b: NDArray[np.float64], layout: SetLayout,
    tau: ArrayLike, band: str | None, types: bool,
) -> tuple[NDArray, NDArray, bool]:
    """Shared core: (Σ_U term or per-type counts, |U|) over leading τ axis."""
    t, scalar = check_tau(tau)
    code = check_band(band)
    order = np.argsort(t, kind="stable")
    inv = np.argsort(order, kind="stable")
    ts = t[order]
    T = ts.size

    batch = a.shape[:-2]
    M = a.shape[-1]
    R = int(np.prod(batch, dtype=np.int64))
    aa, bb = np.abs(a), np.abs(b)
    m = np.fmax(aa, bb)  # salient under a or b  <=>  max(|Ĩa|, |Ĩb|) > τ
    keep = ~np.isnan(m)
    keep[..., 0] = False  # mask 0 is not in Ω
    if code:
        keep &= (layout.bands() == code)[..., None, :]
    m = np.where(keep, m, 0.0)  # 0 is below every τ > 0
    k = np.searchsorted(ts, m.reshape(R, 2 * M), side="left").astype(np.int64)

    if types:
        grp = type_codes(a, b).reshape(R, 2 * M)
        counts = _tail_sums(k, T, group=grp, n_groups=3)  # (R, 3, T)
        main = np.moveaxis(counts, -1, 0)[inv].reshape((T,) + batch + (3,))
        n_union = main.sum(axis=-1)
    else:
        with np.errstate(invalid="ignore", divide="ignore"):
            term = np.abs(a - b) / ((aa + bb) / 2.0)
        term = np.where(keep & (m > 0), term, 0.0).reshape(R, 2 * M)
        sums = _tail_sums(k, T, weights=term)[:, 0, :]  # (R, T)
        cnt = _tail_sums(k, T)[:, 0, :]
        main = sums.T[inv].reshape((T,) + batch)
        n_union = cnt.T[inv].reshape((T,) + batch)
    return main, n_union.astype(np.int64), scalar


class PairSensitivity(NamedTuple):
    """Result of :func:`pair_sensitivity`."""

    value: NDArray[np.float64]
    """ips(x, T, T̂) in [0, 2]; NaN where U is empty."""
    n_union: NDArray[np.int64]
    """|U| (restricted to the band if one was given)."""


def pair_sensitivity(
    norm_a: ArrayLike, norm_b: ArrayLike, tau: ArrayLike = DEFAULT_TAU, band: str | None = None,
    layout: SetLayout | None = None,
) -> PairSensitivity:
    """Prompt sensitivity of one template pair per row (Eq. 3, inner term).

        U = Ω_salient(x|T) ∪ Ω_salient(x|T̂),  Ω_salient(x|T) = {(kind,S) ∈ Ω : |Ĩ_T| > τ}
        ips(x,T,T̂) = (1/|U|) Σ_{(kind,S) ∈ U} |Ĩ_T − Ĩ_T̂| / ((|Ĩ_T| + |Ĩ_T̂|)/2)  ∈ [0, 2]

    With ``band`` ∈ {"low", "mid", "high"}, U is restricted to that order band of
    :func:`order_bands` (n of every row read from its NaN padding), giving the per-pair term
    of IPS^low/mid/high.

    Parameters
    ----------
    norm_a, norm_b : normalised interactions (output of :func:`normalize`) of the same samples
        under templates T and T̂, shape (..., 2, 2**n_max), same shape and same Ω per row.
    tau : scalar or 1-D array in (0, 1); a 1-D array adds a leading τ axis to both outputs.
    band : None (all of U) or "low" / "mid" / "high".
    layout : the sets of the last axis (:class:`SetLayout`, arrays broadcastable to the rows)
        when it is not the 2**n_max bitmasks.

    Returns
    -------
    PairSensitivity(value, n_union), each of shape ``[len(tau),] + norm_a.shape[:-2]``;
    ``value`` is NaN where U is empty.
    """
    a, b, layout = check_pair_inputs(norm_a, norm_b, layout)
    sums, cnt, scalar = union_grid(a, b, layout, tau, band, types=False)
    with np.errstate(invalid="ignore", divide="ignore"):
        value = np.where(cnt > 0, sums / np.where(cnt > 0, cnt, 1), np.nan)
    if scalar:
        return PairSensitivity(value[0], cnt[0])
    return PairSensitivity(value, cnt)


def all_pairs(n_conditions: int) -> NDArray[np.int64]:
    """All unordered pairs (i, j), i < j, of ``n_conditions`` conditions; shape (C(C−1)/2, 2)."""
    if isinstance(n_conditions, bool) or not isinstance(n_conditions, (int, np.integer)):
        raise ValueError(f"n_conditions must be an int; got {n_conditions!r}")
    if n_conditions < 2:
        raise ValueError(f"n_conditions must be >= 2 to form a pair; got {n_conditions}")
    i, j = np.triu_indices(int(n_conditions), k=1)
    return np.stack([i, j], axis=1).astype(np.int64)


@dataclass(frozen=True)
class IPSResult:
    """Result of :func:`ips`.  With a 1-D ``tau`` every field except ``pairs``/``band`` has a
    leading τ axis."""

    value: float | NDArray[np.float64]
    """IPS (or IPS^band): mean over valued samples of the per-sample mean over valued pairs."""
    per_pair: NDArray[np.float64]
    """ips(x, T, T̂), shape ([τ,] sample, pair); NaN where U is empty."""
    per_sample: NDArray[np.float64]
    """Mean over the sample's valued pairs, shape ([τ,] sample); NaN if none."""
    n_union: NDArray[np.int64]
    """|U| per (sample, pair)."""
    n_empty_pairs: int | NDArray[np.int64]
    """Number of (sample, pair) cells with an empty U (no value), missing cells aside."""
    n_valued_samples: int | NDArray[np.int64]
    """Number of samples with at least one valued pair (those averaged into ``value``)."""
    tau: float | NDArray[np.float64]
    band: str | None
    pairs: NDArray[np.int64]
    n_missing_pairs: int = 0
    """Number of (sample, pair) cells with a side of empty Ω (an unscored condition): no value,
    whatever τ (:func:`pair_sides`)."""


def pair_sides(
    norm: NDArray[np.float64], pairs: NDArray[np.int64],
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_]]:
    """Both sides (sample, pair, 2, M) of every (sample, pair) of ``norm`` (sample, condition,
    2, M), and which cells are missing (sample, pair): one side has an empty Ω (all NaN: a
    condition the sample was not scored under). A missing cell is NaN on both sides, so it
    has no U and no value."""
    absent = np.isnan(norm[..., 1:]).all(axis=(-2, -1))  # (sample, condition)
    missing = absent[:, pairs[:, 0]] | absent[:, pairs[:, 1]]
    a, b = norm[:, pairs[:, 0]], norm[:, pairs[:, 1]]
    if missing.any():
        a, b = (np.where(missing[..., None, None], np.nan, x) for x in (a, b))
    return a, b, missing


def ips(
    norm: ArrayLike,
    pairs: ArrayLike | None = None,
    tau: ArrayLike = DEFAULT_TAU,
    band: str | None = None,
    layout: SetLayout | None = None,
) -> IPSResult:
    """Interaction-based Prompt Sensitivity (Eq. 3) and IPS^low/mid/high (Section 4.3).

        IPS = E_x [ E_{(T,T̂)} [ ips(x, T, T̂) ] ]

    with ips(x, T, T̂) of :func:`pair_sensitivity`.  The inner mean runs over the given
    unordered condition pairs whose U is non-empty; the outer mean over samples with at least
    one such pair.  Empty pairs / unvalued samples are counted in the result, and so are the
    missing pairs (:func:`pair_sides`: a condition the sample was not scored under), which
    have no value: a group's IPS averages over the samples scored under its pairs.

    Parameters
    ----------
    norm : normalised interactions of shape (sample, condition, 2, 2**n_max).
    pairs : (n_pairs, 2) int condition indices; default :func:`all_pairs` of all conditions.
    tau : scalar or 1-D array in (0, 1) (1-D → leading τ axis in the result).
    band : None, "low", "mid" or "high".
    layout : :class:`SetLayout` of the last axis (sets (sample, M), n (sample,)) when it is
        not the 2**n_max bitmasks.
    """
    x = as_float(norm, "norm")
    if x.ndim != 4:
        raise ValueError(
            f"norm must have shape (sample, condition, 2, 2**n_max); got shape {x.shape}"
        )
    if layout is None:
        check_norm_shape(x, "norm")
    p = all_pairs(x.shape[1]) if pairs is None else check_pairs(pairs, x.shape[1])
    a, b, missing = pair_sides(x, p)  # (S, P, 2, M), (S, P)
    t, scalar = check_tau(tau)
    # always with τ axis here: (T, S, P)
    res = pair_sensitivity(a, b, t, band, None if layout is None else layout.rows(1))
    per_pair, n_union = res.value, res.n_union
    valued = ~np.isnan(per_pair)
    n_val = valued.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        per_sample = np.where(
            n_val > 0, np.where(valued, per_pair, 0.0).sum(axis=-1) / np.maximum(n_val, 1), np.nan
        )
    s_valued = ~np.isnan(per_sample)
    n_s = s_valued.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        value = np.where(
            n_s > 0, np.where(s_valued, per_sample, 0.0).sum(axis=-1) / np.maximum(n_s, 1), np.nan
        )
    n_empty = (~valued & ~missing).sum(axis=(-2, -1))
    n_missing = int(missing.sum())
    if scalar:
        return IPSResult(
            value=float(value[0]), per_pair=per_pair[0], per_sample=per_sample[0],
            n_union=n_union[0], n_empty_pairs=int(n_empty[0]), n_valued_samples=int(n_s[0]),
            tau=float(t[0]), band=band, pairs=p, n_missing_pairs=n_missing,
        )
    return IPSResult(
        value=value, per_pair=per_pair, per_sample=per_sample, n_union=n_union,
        n_empty_pairs=n_empty.astype(np.int64), n_valued_samples=n_s.astype(np.int64),
        tau=t, band=band, pairs=p, n_missing_pairs=n_missing,
    )


# --------------------------------------------------------------------------------------------
# τ robustness (Appendix F.8) and relative change (Section 4.3)
# --------------------------------------------------------------------------------------------
def default_tau_sweep() -> NDArray[np.float64]:
    """The τ sweep of Appendix F.8: 0.05, 0.06, …, 0.20 (16 values, exact decimals)."""
    return np.round(0.05 + 0.01 * np.arange(16), 2)


def delta_ips(ips_a: ArrayLike, ips_b: ArrayLike) -> float | NDArray[np.float64]:
    """Relative change ΔIPS = (IPS_A − IPS_B) / IPS_B (Section 4.3); A has the factor
    (instruct, dense, few-shot).  Works elementwise on arrays; ``ValueError`` if IPS_B == 0."""
    a = as_float(ips_a, "ips_a")
    b = as_float(ips_b, "ips_b")
    if np.any(b == 0):
        raise ValueError("ips_b must be non-zero (it is the denominator of ΔIPS)")
    out = (a - b) / b
    return float(out) if out.ndim == 0 else out
