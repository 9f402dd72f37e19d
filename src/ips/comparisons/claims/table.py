"""The paper's claims, tested on the configured models (`claims.csv`; paper Sections 3-4).

Each row tests one claim of the paper in one *scope* (a model on a dataset, a dataset across
models, or one factor comparison) and gives the paper's statement, our estimate with its interval
and the number of samples (or models) ``n`` behind it, the test, its p-value and a verdict:

* **directional** claims (an effect has a sign: IPS^low < IPS^mid, few-shot lowers IPS, …):
  ``supported`` when the estimate has the paper's sign and p < ``ALPHA``, ``contradicted`` when
  it has the other sign and p < ``ALPHA``, else ``undecided``. The p-values are two-sided paired
  sign-flip permutation p on per-sample differences (`ips.analysis.uncertainty.sign_flip_test`);
  where one claim makes several tests in one scope (the order bands), they are Holm-adjusted over
  the three band tests (no interval) or Bonferroni-adjusted (with an interval at 1 − α/k), and
  the test column says so. A directional row's interval is the set of effects that same test
  does not reject (`sign_flip_interval`), so it excludes 0 exactly when p < ``ALPHA``; it is
  unbounded where n samples cannot reach that p (n ≤ 5).
* **level** claims (a share near the paper's, an error below a bound): the paper's statement is
  read as a range [lo, hi] (the reading is in the ``paper`` column); ``supported`` when the
  bootstrap interval lies inside it, ``contradicted`` when it lies wholly outside, else
  ``undecided``. Its p is the bootstrap test that interval inverts (`per_model.level_p`:
  twice the share of replicates beyond the binding bound), so p < α where the interval
  decides. A percentile bootstrap interval from fewer than
  ``ips.analysis.uncertainty.MIN_RELIABLE_N`` samples undercovers (from one sample it has width 0),
  so such a row stays ``undecided`` whatever its interval, and has no p.
* **count** claims (k of n models behave alike: Appendix G): the share k/n with its exact
  (Clopper-Pearson) interval and the two-sided exact binomial test of k against n/2, the
  count noise alone gives (each model's side a fair coin); ``supported`` / ``contradicted``
  as a directional claim on k/n − 1/2.
* ``untestable`` when the configured models, datasets or settings cannot test the claim; the
  ``note`` says why (e.g. a correlation across models needs at least 3 models, a binomial
  test at least 6).

Each row stands beside its control, what random weights earn on the same prompts
(`ips.comparisons.claims.controls`): the verdicts above are its ``raw_verdict``; ``verdict`` is
``supported`` or ``contradicted`` only where the trained models also differ from their
controls, and a control entry's own rows read ``control``.

Every tested row states ``mde``, the smallest effect its test detects with 80 % power at its n
and spread (in the estimate's units; ∞ where n cannot reach p < ``ALPHA``): an undecided row
rules out effects of that size or larger no more than a test of that power can
(docs/method.md#intervals).

Every row has ``weights``: ``random`` when a model it rests on has random weights (its
numbers measure nothing about an LLM), else ``trained`` (`ips.formats.metrics.WEIGHTS`); a row
that rests on no one model (an absent factor) rests on the run's models.

``ALPHA = 0.05``. Each verdict is read at α alone; the table's corrections for many tests stand
beside it (`correction`: ``q_value`` over the decidable rows, ``holm_p`` over the config's
hypotheses). Rows whose interval or test rests on fewer than
``ips.analysis.uncertainty.MIN_RELIABLE_N`` samples say so in ``note``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import xarray as xr

from ips.comparisons.claims.across_models import (
    consistency_claims,
    factor_claims,
    peer_claims,
    perturbation_claims,
    tau_claims,
)
from ips.comparisons.claims.controls import with_controls
from ips.comparisons.claims.correction import corrected
from ips.comparisons.claims.nulls import matched_claims, null_claims, variant_claims
from ips.comparisons.claims.per_model import (
    few_shot_curve_claims,
    order_claims,
    sparsity_claims,
    type_claims,
)
from ips.comparisons.claims.saturation import cells, flagged, unstable_ceilings
from ips.comparisons.claims.verdicts import VERDICTS, Claim
from ips.formats.metrics import Entry, weights


def claims(entries: list[Entry], factors: xr.Dataset, draws: int = 9999, seed: int = 0,
           perturbation: Sequence[dict] = (), matched: Sequence[dict] = (),
           hypotheses: Sequence[dict] = ()) -> list[Claim]:
    """Every claim the configured models can test, and those they cannot (with the reason),
    with their corrections (`correction.corrected`: q-values, Holm over `hypotheses`, the
    config's) and their saturation (`saturation.flagged`). `perturbation`, `matched`: the rows
    of the Appendix G and Table 7 tables (`ips.figures.tables.appendix`), whose numbers the
    count and matched-MoE claims read."""
    datasets = list(dict.fromkeys(e.dataset for e in entries))
    trained = [e for e in entries if not e.control_of]

    def marked(rows: list[Claim], mine) -> list[Claim]:
        w = weights(mine)
        return [replace(r, weights=w) for r in rows]

    per_entry = {}
    for e in entries:
        per_entry[str(e.path)] = marked(
            [*sparsity_claims(e), *type_claims(e), *order_claims(e),
             *few_shot_curve_claims(e, draws, seed),
             *null_claims(e, draws, seed), *variant_claims(e, draws, seed)], [e])
    out = with_controls(per_entry, entries, draws, seed)
    out += factor_claims(factors, trained)
    for d in datasets:
        mine = [e for e in trained if e.dataset == d]
        out += marked([*consistency_claims(entries, [d], draws, seed),
                       *peer_claims(entries, [d], draws, seed),
                       *tau_claims(factors, [d], entries, draws, seed)], mine)
    out += perturbation_claims(perturbation, datasets, {e.model: e.control_of for e in entries},
                               draws, seed, {e.model: e.control_draw for e in entries})
    out += matched_claims(matched, datasets)
    return corrected(flagged(out, cells(entries), {e.model for e in trained},
                             unstable_ceilings(entries)), hypotheses)


def claims_summary(rows: Sequence[Claim]) -> dict[str, dict[str, int]]:
    """Verdict counts per claim."""
    out: dict[str, dict[str, int]] = {}
    for r in rows:
        out.setdefault(r.claim, dict.fromkeys(VERDICTS, 0))[r.verdict] += 1
    return out


def claims_markdown(rows: Sequence[Claim]) -> list[str]:
    """The claims as a Markdown table (README of the figures)."""

    def num(x: float, digits: int = 3) -> str:
        return "" if not np.isfinite(x) else f"{x:.{digits}g}"

    def raw(r: Claim) -> str:
        return f" (raw: {r.raw_verdict})" if r.raw_verdict not in ("", r.verdict) else ""

    def bound(x: float) -> str:
        return "∞" if x == np.inf else "−∞" if x == -np.inf else num(x)

    lines = ["| claim | scope | estimate | interval | n | p | mde | verdict | note |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ci = (f"[{bound(r.ci_low)}, {bound(r.ci_high)}]"
              if not (np.isnan(r.ci_low) or np.isnan(r.ci_high)) else "")
        lines.append(f"| `{r.claim}` | {r.scope} | {num(r.estimate)} | {ci} | {r.n or ''} | "
                     f"{num(r.p_value, 2)} | {bound(r.mde)} | **{r.verdict}**{raw(r)} | "
                     f"{r.note} |")
    return lines


__all__ = [
    "VERDICTS",
    "Claim",
    "claims",
    "claims_summary",
    "claims_markdown",
]
