"""What other prompt-sensitivity tools report, computed on the outputs `ips score` already
scored (no forward pass): one number per condition group, beside IPS (docs/method.md#peers).

For a group of C conditions (templates) and sample s, with c_s,i = 1 when the prediction
under condition i is the gold option (a missing prediction, -1, is wrong), p_s,i the
prediction and v_s,i = v(x_N) the score of the unmasked prompt, over the C(C-1)/2 unordered
pairs i < j:

- `accuracy_spread` (FormatSpread, Sclar et al. 2024): max_i acc_i - min_i acc_i, acc_i the
  mean of c_s,i over samples.
- `pss` (ProSA's prompt sensitivity score, Zhuo et al. 2024): the mean over samples of the
  mean over pairs of |c_s,i - c_s,j|; a uniform 4-option guesser gives 0.375.
- `consistency_rate` (the SCORE tasks of lm-evaluation-harness): the mean over samples of the
  share of pairs with p_s,i = p_s,j; two missing predictions do not agree; a uniform
  K-option guesser gives 1/K.
- `dv_unmasked` (POSIX-style, Chatterjee et al. 2024, on a fixed target): the mean over
  samples of the mean over pairs of |v_s,i - v_s,j|. POSIX scores the model's own response
  to each prompt and divides by its length; here the target is the one v scores (the gold
  letter's log-odds, or the instruction target's log-probability), so this is the size of
  the change in v(x_N) that IPS explains.

The first three need a gold option: NaN for instruction datasets. A condition a sample was not
scored under (a rewording its item lacks) has no prediction and no v: its pairs are left out
of the sample's means, and `accuracy_spread`, which compares conditions over the same
samples, is NaN for a group where any sample lacks a condition. Every value comes with
the percentile-bootstrap interval over samples of `ips.analysis.uncertainty` (the spread is
recomputed in every replicate) and the samples it rests on.

Within a model, `size_r2` asks how much of IPS the size of the change explains: per sample,
over its pairs p, the share of the variance of y_p (IPS, or a null) that the least-squares
fit y_p ≈ a + b·|Δv_p(x_N)| + c·sd_p(Δv) explains (R²).
"""

from __future__ import annotations

import numpy as np

from ips.analysis import uncertainty
from ips.analysis.metrics import all_pairs

PEERS = ("accuracy_spread", "pss", "consistency_rate", "dv_unmasked")
"""The output-level metrics, in the order of the metrics file's `peer` axis."""


def per_sample(pred: np.ndarray, gold: np.ndarray, v_full: np.ndarray,
               mcq: bool, scored: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Per-sample values over the unordered condition pairs of a group: `pss`,
    `consistency_rate`, `dv_unmasked` (sample,), and `correct` (sample, condition); NaN where
    undefined (fewer than two conditions, or no gold for the first three). `scored`
    (sample, condition; None: all): a pair with an unscored side is left out, its
    `correct` NaN."""
    pred, v_full = np.asarray(pred), np.asarray(v_full, dtype=np.float64)
    S, C = pred.shape
    ok = np.ones((S, C), bool) if scored is None else np.asarray(scored, bool)
    pairs = all_pairs(C) if C >= 2 else np.zeros((0, 2), np.int64)
    a, b = pairs[:, 0], pairs[:, 1]
    nan = np.full(S, np.nan)
    out = {"pss": nan, "consistency_rate": nan, "dv_unmasked": nan,
           "correct": np.full((S, C), np.nan)}
    if len(pairs) == 0:
        return out
    both = ok[:, a] & ok[:, b]

    def pair_mean(x: np.ndarray) -> np.ndarray:  # over the sample's pairs with both sides
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(both, x, 0.0).sum(axis=1) / np.where(both.any(1), both.sum(1), np.nan)

    out["dv_unmasked"] = pair_mean(np.abs(v_full[:, a] - v_full[:, b]))
    if mcq:
        correct = ((pred == np.asarray(gold)[:, None]) & (pred >= 0)).astype(np.float64)
        agree = (pred[:, a] == pred[:, b]) & (pred[:, a] >= 0)
        out |= {"pss": pair_mean(np.abs(correct[:, a] - correct[:, b])),
                "consistency_rate": pair_mean(agree), "correct": np.where(ok, correct, np.nan)}
    return out


def unmasked(v: np.ndarray, n_vars: np.ndarray, masks: np.ndarray | None) -> np.ndarray:
    """v(x_N) of every (sample, condition): the entry of the full mask 2**n - 1, found in the
    sample's design when the values are sparse (a design always holds N)."""
    full = (1 << np.asarray(n_vars, dtype=np.int64)) - 1
    if masks is None:
        col = full
    else:
        col = np.array([int(np.flatnonzero(row == f)[0]) for row, f in zip(masks, full)])
    return np.take_along_axis(v, col[:, None, None], axis=2)[:, :, 0]


def size_r2(y: np.ndarray, dv_unmasked: np.ndarray, change: np.ndarray) -> np.ndarray:
    """R² of each sample's ordinary least-squares fit y ≈ a + b·dv_unmasked + c·change over
    its pairs (all three (sample, pair)); pairs with a NaN are left out. NaN for a sample
    with fewer than 4 complete pairs (3 coefficients leave no residual) or a constant y."""
    y, x1, x2 = (np.asarray(a, np.float64) for a in (y, dv_unmasked, change))
    out = np.full(y.shape[0], np.nan)
    for s in range(y.shape[0]):
        ok = np.isfinite(y[s]) & np.isfinite(x1[s]) & np.isfinite(x2[s])
        ys = y[s, ok]
        total = float(((ys - ys.mean()) ** 2).sum()) if ys.size else 0.0
        if ys.size < 4 or total <= 0:
            continue
        design = np.column_stack([np.ones(ys.size), x1[s, ok], x2[s, ok]])
        coef = np.linalg.lstsq(design, ys, rcond=None)[0]
        out[s] = 1.0 - float(((ys - design @ coef) ** 2).sum()) / total
    return out


def _spread(accuracy: np.ndarray) -> np.ndarray:
    """max - min over the last axis (conditions)."""
    return accuracy.max(axis=-1) - accuracy.min(axis=-1)


def peer_metrics(pred: np.ndarray, gold: np.ndarray, v_full: np.ndarray, mcq: bool,
                 counts: np.ndarray, level: float = uncertainty.LEVEL,
                 scored: np.ndarray | None = None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(value, interval, n) of every metric of `PEERS` for one group: shapes (4,), (4, 2)
    (low, high), (4,). `counts` (B, S): the bootstrap replicates over the samples (rows of
    `pred`, as `uncertainty.resample_counts` draws them); `scored` as in `per_sample`."""
    ps = per_sample(pred, gold, v_full, mcq, scored)
    value, ci = np.full(len(PEERS), np.nan), np.full((len(PEERS), 2), np.nan)
    n = np.zeros(len(PEERS), np.int64)
    correct = ps["correct"]
    if np.isfinite(correct).all() and correct.shape[1] >= 2:
        reps = _spread(uncertainty.replicate_means(correct[:, None, :], counts))
        value[0] = float(_spread(correct.mean(axis=0)))
        ci[0] = uncertainty.percentile_ci(reps, level, value[0])
        n[0] = len(correct)
    for k, name in enumerate(PEERS[1:], start=1):
        x = ps[name]
        if np.isfinite(x).any():
            est, interval = uncertainty.bootstrap_ci(x, level=level, counts=counts)
            value[k], ci[k], n[k] = float(est), interval, int(np.isfinite(x).sum())
    return value, ci, n
