"""Interaction types over U (opposite sign, same sign with a different or similar
effect) and their shares by whether the prediction changed (paper Fig. 3b)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ips.analysis.layout import SetLayout, as_float, check_pair_inputs, check_pairs
from ips.analysis.metrics import DEFAULT_TAU, all_pairs, pair_sides, union_grid

INTERACTION_TYPES: tuple[str, str, str] = (
    "opposite_sign",
    "same_sign_different_effect",
    "same_sign_similar_effect",
)


#: how the interaction types read in tables and legends
INTERACTION_TYPE_NAMES = {
    "opposite_sign": "opposite sign",
    "same_sign_different_effect": "same sign, different effect",
    "same_sign_similar_effect": "same sign, similar effect",
}
"""Order of the last axis returned by :func:`interaction_types`."""


# --------------------------------------------------------------------------------------------
# interaction types (Section 3.3)
# --------------------------------------------------------------------------------------------
def interaction_types(
    norm_a: ArrayLike, norm_b: ArrayLike, tau: ArrayLike = DEFAULT_TAU, band: str | None = None,
    layout: SetLayout | None = None,
) -> NDArray[np.int64]:
    """Count the interactions of U of every row by type (Section 3.3).

    For (kind, S) ∈ U (see :func:`pair_sensitivity`; optionally restricted to ``band``):

    * ``opposite_sign``:               Ĩ_T · Ĩ_T̂ < 0;
    * ``same_sign_different_effect``:  Ĩ_T · Ĩ_T̂ > 0 and |Ĩ_T|/|Ĩ_T̂| > 2 or < 1/2;
      also when one side is exactly 0 and the other salient (its magnitude changed by more
      than 2×, the sign did not flip);
    * ``same_sign_similar_effect``:    Ĩ_T · Ĩ_T̂ > 0 and 1/2 ≤ |Ĩ_T|/|Ĩ_T̂| ≤ 2.

    ``layout`` as in :func:`pair_sensitivity`.

    Returns
    -------
    int array of shape ``[len(tau),] + norm_a.shape[:-2] + (3,)``, last axis in the order of
    :data:`INTERACTION_TYPES`; it sums to |U| over the last axis.
    """
    a, b, layout = check_pair_inputs(norm_a, norm_b, layout)
    counts, _, scalar = union_grid(a, b, layout, tau, band, types=True)
    return counts[0] if scalar else counts


@dataclass(frozen=True)
class TypeShares:
    """Result of :func:`interaction_type_shares`.  Arrays have a leading τ axis for a 1-D tau;
    the last axis follows :data:`INTERACTION_TYPES`."""

    changed: NDArray[np.float64]
    """Share of each type among all salient interactions of pairs whose prediction changed."""
    unchanged: NDArray[np.float64]
    """Same for pairs whose prediction stayed the same."""
    counts_changed: NDArray[np.int64]
    counts_unchanged: NDArray[np.int64]
    sample_counts_changed: NDArray[np.int64]
    """Per-sample counts ([T,] sample, type) over the sample's changed pairs; their sum over
    samples is ``counts_changed``."""
    sample_counts_unchanged: NDArray[np.int64]
    n_pairs_changed: int
    """Number of (sample, pair) cells whose prediction changed."""
    n_pairs_unchanged: int


def interaction_type_shares(
    norm: ArrayLike,
    pred: ArrayLike,
    pairs: ArrayLike | None = None,
    tau: ArrayLike = DEFAULT_TAU,
    band: str | None = None,
    layout: SetLayout | None = None,
) -> TypeShares:
    """Shares of the three interaction types, split by whether the prediction changed (Fig. 3b).

    For every (sample, pair (i, j)) the type counts of :func:`interaction_types` are pooled
    over all cells with ``pred[s, i] != pred[s, j]`` ("changed") and over all other cells
    ("unchanged"), missing cells (:func:`ips.analysis.metrics.pair_sides`) left out; a share is a pooled count divided by the pooled |U| (NaN if that is 0).

    Parameters
    ----------
    norm : (sample, condition, 2, 2**n_max) normalised interactions.
    pred : (sample, condition) predictions (any comparable labels).
    pairs : (n_pairs, 2) condition pairs; default all unordered pairs.
    layout : as in :func:`ips`.
    """
    x = as_float(norm, "norm")
    if x.ndim != 4:
        raise ValueError(
            f"norm must have shape (sample, condition, 2, 2**n_max); got shape {x.shape}"
        )
    pr = np.asarray(pred)
    if pr.shape != x.shape[:2]:
        raise ValueError(
            f"pred must have shape (sample, condition) = {x.shape[:2]}; got {pr.shape}"
        )
    p = all_pairs(x.shape[1]) if pairs is None else check_pairs(pairs, x.shape[1])
    a, b, missing = pair_sides(x, p)  # a missing cell (unscored condition) counts nowhere
    counts = interaction_types(a, b, tau, band,
                               None if layout is None else layout.rows(1))  # ([T,] S, P, 3)
    changed = (pr[:, p[:, 0]] != pr[:, p[:, 1]]) & ~missing  # (S, P)
    unchanged = ~changed & ~missing
    s_ch = np.where(changed[..., None], counts, 0).sum(axis=-2)  # ([T,] S, 3)
    s_un = np.where(unchanged[..., None], counts, 0).sum(axis=-2)
    c_ch, c_un = s_ch.sum(axis=-2), s_un.sum(axis=-2)
    with np.errstate(invalid="ignore", divide="ignore"):
        sh_ch = c_ch / c_ch.sum(axis=-1, keepdims=True)
        sh_un = c_un / c_un.sum(axis=-1, keepdims=True)
    return TypeShares(
        changed=sh_ch, unchanged=sh_un, counts_changed=c_ch, counts_unchanged=c_un,
        sample_counts_changed=s_ch, sample_counts_unchanged=s_un,
        n_pairs_changed=int(changed.sum()), n_pairs_unchanged=int(unchanged.sum()),
    )
