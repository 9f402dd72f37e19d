"""Many tests in one table: every row's q-value, and Holm over the declared hypotheses
(docs/method.md#corrected-tests).

Each row is tested at α alone; a table holds hundreds. Two corrections, over the table's
*decidable* rows: those of trained models (not a control's own rows) whose test gives a p.
A row's p for the correction is the one its final verdict rests on (`tested_p`): its own p,
and where its control was tested, the larger of that and the control's p, which is one-sided
in the direction of the row's verdict (`uncertainty.one_sided`): both must hold. A row whose
own test decides but whose control leaves it undecided (no control, the control earns it
too, or the trained effect runs the other way against it) counts as p = 1: it is in the
family, and it cannot be a discovery.

* ``q_value``: Benjamini–Hochberg over the decidable rows, where the rows that repeat one
  fact count as one hypothesis: a null's levels, bands or settings at one scope (`repeats`:
  the rows of such a claim that differ only in their scope's last part). The fact's p is
  Simes' combination of theirs, min_i k·p_(i)/i over its k rows (valid, as BH is, for
  positively dependent tests). Within a fact the rows are corrected as Benjamini and
  Bogomolov (2014) do after selecting R of m facts: BH at α·R/m, written as the q-value
  q_within·m/R. A row's q is the larger of its fact's BH q and that, so q ≤ α exactly when
  its fact is selected at α and the row survives its fact's correction at α·R/m (R counted
  at α = 0.05: read the column at that α). A fact of one row is its row: its q is the fact's
  (a selected fact's one p is below α·R/m already).
* ``holm_p``: Holm over the rows the config names in `hypotheses` (claim and scope: the
  confirmatory family), with the same p; NaN outside it. A named row that is not decidable,
  or that the table lacks, counts in the family as p = 1: it does not hold.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from ips import nulls
from ips.analysis.uncertainty import benjamini_hochberg, holm
from ips.comparisons.claims.verdicts import ALPHA, DECIDED, Claim

GAUSSIAN_CLAIM = "template_above_gaussian_null"


def repeats() -> set[str]:
    """The claims whose rows at one scope, but for its last part, repeat one fact: the
    Gaussian null's levels, and each variant's settings and bands (`ips.nulls`)."""
    return {GAUSSIAN_CLAIM, *(v.claim for v in nulls.variants())}


def tested_p(row: Claim) -> float:
    """The p the row's final verdict rests on (module docstring); NaN for a row that is not
    decidable."""
    if row.verdict in ("control", "untestable") or not np.isfinite(row.p_value):
        return np.nan
    if row.raw_verdict in DECIDED and row.verdict not in DECIDED:
        return 1.0
    return float(np.fmax(row.p_value, row.control_p))  # fmax: a NaN control_p is ignored


def fact(row: Claim, repeated: set[str]) -> tuple[str, str]:
    """The fact a row states: (claim, scope), its scope's last part left out for a claim
    that repeats one fact over it."""
    scope = row.scope.rpartition(" / ")[0] if row.claim in repeated else row.scope
    return row.claim, scope


def corrected(rows: Sequence[Claim], hypotheses: Sequence[dict] = ()) -> list[Claim]:
    """`rows` with `q_value` and `holm_p` (module docstring); `hypotheses`: the config's
    entries, each naming a row by `claim` and `scope`."""
    p = np.array([tested_p(r) for r in rows])
    repeated = repeats()
    facts: dict[tuple[str, str], list[int]] = {}
    for i, r in enumerate(rows):
        if np.isfinite(p[i]):
            facts.setdefault(fact(r, repeated), []).append(i)
    members = list(facts.values())
    within = [benjamini_hochberg(p[m]) for m in members]
    fact_q = benjamini_hochberg([w.min() for w in within]) if members else []  # Simes' p
    share = len(members) / max(int(np.sum(np.asarray(fact_q) <= ALPHA)), 1)  # m / R
    q = np.full(len(rows), np.nan)
    for m, w, fq in zip(members, within, fact_q, strict=True):
        q[m] = fq if len(m) == 1 else np.maximum(fq, np.minimum(1.0, w * share))
    at = {(r.claim, r.scope): i for i, r in enumerate(rows)}
    named = [at.get((h["claim"], h["scope"])) for h in hypotheses]
    # a hypothesis without a decidable row counts in the family, as p = 1
    adjusted = holm([1.0 if i is None or not np.isfinite(p[i]) else p[i] for i in named])
    h = np.full(len(rows), np.nan)
    for i, hp in zip(named, adjusted, strict=True):
        if i is not None:
            h[i] = hp
    return [replace(r, q_value=float(qi), holm_p=float(hi)) for r, qi, hi in zip(rows, q, h,
                                                                                   strict=True)]
