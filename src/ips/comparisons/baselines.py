"""Across baselines (`baselines.others`, docs/method.md#baselines): does a verdict survive the
choice of baseline, and do the baselines agree on what a template changes?

*Robust verdicts* (`robust_claims`). Every claims row (claim, scope, weights) of the first
baseline (each model's own mask token) beside the same row under every other baseline; its
robust verdict is the decided verdict (supported, contradicted) that every baseline gives,
otherwise undecided, with the baselines whose verdict differs from the first's named; the
same for the raw verdicts (before the controls: a study without controls has no decided final
verdict), with each baseline's estimate and p beside them. A row no other baseline has (its
scope absent there) is undecided.

*Agreement* (`agreement`), per (model, dataset) and other baseline, on the samples both
scored, every condition pair of every group:

- the IPS between the baselines: per sample the mean over its conditions of ips(x, v, v')
  between the two baselines' games of one prompt (the baseline null on every condition), its
  mean over samples and n;
- the Spearman ρ of per-sample IPS (the main group's, band all) and of per-pair IPS
  (ips(x, T, T̂) averaged over the common samples), each with its permutation p and n
  (`ips.comparisons.claims.verdicts.spearman_permutation`: exact for n ≤ 8);
- the mean Jaccard |C ∩ C'| / |C ∪ C'| of the changed interactions C = U_T Δ U_T̂ (salient at
  τ under one template of the pair and not under the other) under the two baselines, over
  the (sample, pair) cells where either changes something, with that number of cells.

IPS that agrees across baselines while C does not says that IPS measures how much a template
changes, not what it changes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ips.analysis import metrics
from ips.analysis.nulls import nan_mean
from ips.comparisons.claims.verdicts import spearman_permutation
from ips.errors import InputError
from ips.formats.shards import Merged
from ips.prompts.templates import ZERO_SHOT

DECIDED = ("supported", "contradicted")


#: what `robust_claims` shows of each baseline's row, beside its final verdict
SHOWN = ("raw_verdict", "estimate", "p_value")


def _robust(verdicts: dict[str, str]) -> tuple[str, str]:
    """The decided verdict every baseline gives (else undecided), and the baselines whose
    verdict differs from the first's, with it."""
    first = next(iter(verdicts.values()))
    same = len(set(verdicts.values())) == 1
    return (first if same and first in DECIDED else "undecided",
            "; ".join(f"{b}: {v}" for b, v in verdicts.items() if v != first))


def robust_claims(tables: Mapping[str, Sequence[Mapping[str, str]]]) -> list[dict]:
    """The first table's rows, each with every baseline's final verdict (a column named by
    the baseline, in the order of `tables`) and its raw verdict, estimate and p
    (`{baseline} raw_verdict`, …), the robust final and raw verdicts and `disagree` /
    `disagree_raw` (the baselines whose verdict differs from the first's, with it)."""
    names = list(tables)
    keyed = {b: {(r["claim"], r["scope"], r.get("weights", "")): r for r in rows}
             for b, rows in tables.items()}
    out = []
    for r in tables[names[0]]:
        key = (r["claim"], r["scope"], r.get("weights", ""))
        found = {b: keyed[b].get(key) for b in names}
        final = {b: x["verdict"] if x else "absent" for b, x in found.items()}
        raw = {b: x.get("raw_verdict", x["verdict"]) if x else "absent"
               for b, x in found.items()}
        row = {"claim": r["claim"], "scope": r["scope"], "weights": r.get("weights", ""),
               "paper": r["paper"], **final}
        for b, x in found.items():
            row |= {f"{b} {k}": (x.get(k, "") if x else "") for k in SHOWN}
            row[f"{b} raw_verdict"] = raw[b]
        row["robust_verdict"], row["disagree"] = _robust(final)
        row["robust_raw_verdict"], row["disagree_raw"] = _robust(raw)
        out.append(row)
    return out


def robust_columns(names: Sequence[str]) -> tuple[str, ...]:
    """The columns of `robust_claims`' rows for baselines `names`."""
    return ("claim", "scope", "weights", "paper", *names,
            *(f"{b} {k}" for b in names for k in SHOWN),
            "robust_verdict", "disagree", "robust_raw_verdict", "disagree_raw")


def changed_interactions(norm: np.ndarray, pairs: np.ndarray, tau: float) -> np.ndarray:
    """`(sample, pair, 2, 2**n_max)`: the interactions salient at τ under exactly one of the
    pair's two conditions (`norm`: (sample, condition, 2, 2**n_max), `ips.analysis.metrics.
    normalize`)."""
    salient = metrics.salient(norm, tau)
    return salient[:, pairs[:, 0]] ^ salient[:, pairs[:, 1]]


def jaccard(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|a ∩ b| / |a ∪ b| over the last two axes of two boolean arrays; NaN where both are
    empty."""
    union = (a | b).sum((-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(union > 0, (a & b).sum((-2, -1)) / union, np.nan)


@dataclass(frozen=True)
class Agreement:
    """`agreement`: the IPS between the baselines and its n samples, Spearman ρ, permutation
    p and n of per-sample and per-pair IPS, and the mean changed-interactions Jaccard over
    its n cells."""

    baseline_ips: float
    n_valued: int
    sample_rho: float
    sample_p: float
    n_samples: int
    pair_rho: float
    pair_p: float
    n_pairs: int
    changed_jaccard: float
    n_cells: int


def _common(own: Merged, other: Merged, where: str) -> tuple[np.ndarray, np.ndarray]:
    """Row indices of the samples both scored, in one order; `InputError` where the two do
    not hold the same conditions or fits are not exhaustive."""
    if own.and_ is None or other.and_ is None:
        raise InputError(f"{where}: the baselines' agreement needs exhaustive fits")
    names = [list(map(str, m.conditions["condition"])) for m in (own, other)]
    if names[0] != names[1]:
        raise InputError(f"{where}: the baselines hold other conditions ({names[0]} and "
                         f"{names[1]}); score both from the same samples")
    ids = sorted(set(map(str, own.samples)) & set(map(str, other.samples)))
    if not ids:
        raise InputError(f"{where}: no sample is scored under both baselines")
    index = [{str(s): i for i, s in enumerate(m.samples)} for m in (own, other)]
    return tuple(np.array([ix[s] for s in ids]) for ix in index)


def _rho(x: np.ndarray, y: np.ndarray, draws: int, seed: int) -> tuple[float, float, int]:
    ok = np.isfinite(x) & np.isfinite(y)
    if ok.sum() < 3:
        return math.nan, math.nan, int(ok.sum())
    rho, p = spearman_permutation(x[ok], y[ok], draws, seed)
    return rho, p, int(ok.sum())


def agreement(own: Merged, other: Merged, tau: float, draws: int = 9999, seed: int = 0,
              where: str = "baselines") -> Agreement:
    """How two baselines' games of one (model, dataset) agree (module docstring)."""
    rows = _common(own, other, where)
    norm = [metrics.normalize(m.and_[r], m.or_[r], m.n_vars[r, None]) for m, r in zip(
        (own, other), rows)]
    groups = [own.group_conditions(g) for g in own.groups]
    pairs = np.concatenate([idx[metrics.all_pairs(len(idx))] for idx in groups if len(idx) > 1])
    per_pair = [metrics.ips(n, pairs, tau).per_pair for n in norm]  # (sample, pair)
    main = own.group_conditions(ZERO_SHOT if ZERO_SHOT in own.groups else next(iter(own.groups)))
    per_sample = [metrics.ips(n[:, main], None, tau).per_sample for n in norm]
    pair_means = [nan_mean(p, 0) for p in per_pair]
    between = metrics.pair_sensitivity(*norm, tau).value  # (sample, condition)
    per_game = nan_mean(between, 1)
    changed = jaccard(*(changed_interactions(n, pairs, tau) for n in norm))
    cells = np.isfinite(changed)
    return Agreement(float(nan_mean(per_game, 0)), int(np.isfinite(per_game).sum()),
                     *_rho(*per_sample, draws, seed), *_rho(*pair_means, draws, seed),
                     float(changed[cells].mean()) if cells.any() else math.nan,
                     int(cells.sum()))
