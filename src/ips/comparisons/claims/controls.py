"""Every claims row beside its control: what random weights earn on the same prompts.

A claim that an untrained model also earns says something about the metric and the templates,
not about trained models. So each row is computed again on its *controls*: a per-model row on
the entry its model's control adds (`ips.controls`; for instance the model's class,
tokenizer, mask token, samples and conditions with the weights its initialiser draws), a row
across models on the controls of all its models, a factor comparison on the controls of its
two models. Its columns:

* ``raw_verdict``: the row's own test, as before (`verdicts.directional`, `within`, …);
* ``control_estimate``, ``control_verdict``: the same statistic and test on the controls;
* ``control_p``, ``control_test``: a two-sided paired test of trained − control over the
  units both have (samples for a per-model row, models for a row across models): the
  sign-flip test of the per-sample differences for a row on per-sample values, else the swap
  test of the row's statistic (`ips.analysis.uncertainty.swap_test`);
* ``verdict``, the final verdict: ``supported`` or ``contradicted`` only when the raw verdict
  is, and the trained models differ from their controls (control_p < α) in the direction of
  the raw effect (the estimate's side of its reference: 0 for a difference, ½ for a share of
  models, the threshold of a descriptive row; for a level row, `level_side`). Otherwise a
  decided raw verdict becomes ``undecided`` and the note says why (no control, or the control
  earns it too). A row of a control entry is itself a control: its verdict is ``control``.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ips import controls
from ips.analysis import uncertainty
from ips.comparisons.claims.verdicts import ALPHA, Claim, directional, join_notes
from ips.formats.metrics import Entry

DECIDED = ("supported", "contradicted")


def level_side(raw: str, estimate: float, bounds: tuple[float, float]) -> int:
    """The direction of a level row's raw verdict against its interval [lo, hi]: a value
    above hi (contradicted) +1, below lo −1; inside (supported) towards the interval's one
    bound that binds, −1 below hi for [0, hi], +1 above lo for [lo, 1]; 0 (either way) for
    an interval bounded on both sides, such as 40–60 %."""
    lo, hi = bounds
    if raw == "contradicted":
        return 1 if estimate > hi else -1
    return -1 if lo <= 0 else (1 if hi >= 1 else 0)


def decide(row: Claim, control_estimate: float, control_verdict: str,
           test: uncertainty.SignFlipTest | None, units: str, reference: float = 0.0,
           bounds: tuple[float, float] | None = None) -> Claim:
    """The row with its control columns and its final verdict (module docstring). ``test``:
    trained − control over the paired ``units`` (None: the row has no control); ``bounds``:
    a level row's interval (`level_side`)."""
    raw = row.verdict
    if test is None or not np.isfinite(test.p_value):
        why = ("no control: no control entry of its models (controls), so a decided "
               f"raw verdict ({raw}) cannot be told from what random weights earn")
        return replace(row, raw_verdict=raw, verdict="undecided" if raw in DECIDED else raw,
                       note=join_notes(row.note, why if raw in DECIDED else ""))
    delta, p = float(test.mean_difference), float(test.p_value)
    side = (level_side(raw, row.estimate, bounds) if bounds is not None
            else np.sign(row.estimate - reference))
    beyond = p < ALPHA and (np.sign(delta) == side != 0 or (bounds is not None and side == 0))
    verdict = raw if raw not in DECIDED or beyond else "undecided"
    said = (f"control {control_estimate:.3g} ({control_verdict or 'no verdict'}); trained − "
            f"control {delta:+.3g}, p = {p:.2g} over {test.n} {units}")
    if raw in DECIDED and control_verdict == raw:
        said += f"; the control earns the same raw verdict, {raw}"
    elif raw in DECIDED and not beyond:
        said += "; the trained models do not differ from it beyond chance in that direction"
    return replace(row, raw_verdict=raw, verdict=verdict, control_estimate=control_estimate,
                   control_verdict=control_verdict, control_p=p,
                   control_test=f"paired {'sign-flip' if units == 'samples' else 'swap'} test "
                   f"({test.method}) of trained − control over {test.n} {units}",
                   note=join_notes(row.note, said))


def decide_stored(row: Claim, control: float, control_p: float, p_difference: float, n: int,
                  difference: float, sign: int) -> Claim:
    """`decide` a row whose control was tested where the per-sample data were (the factors
    file, Table 7): the control's estimate and own p (its raw verdict: `directional` with
    the row's ``sign``), and the sign-flip test of trained − control over n samples (its p
    and mean difference); n = 0: no control."""
    if not n:
        return decide(row, np.nan, "", None, "samples")
    test = uncertainty.SignFlipTest(p_difference, n, difference,
                                    "exact" if n <= uncertainty.EXACT_MAX else "monte carlo", 0)
    return decide(row, control, directional(control, control_p, sign), test, "samples")


def paired_records(a: Claim, b: Claim) -> tuple[np.ndarray, np.ndarray]:
    """The records of the units both rows have, in sorted order, finite on both sides."""
    pos_b = {u: i for i, u in enumerate(b.spec.units)}
    keep = sorted((u, i, pos_b[u]) for i, u in enumerate(a.spec.units) if u in pos_b)
    ra = np.asarray([a.spec.records[i] for _, i, _ in keep], float)
    rb = np.asarray([b.spec.records[j] for _, _, j in keep], float)
    if ra.size:
        ok = np.isfinite(ra.reshape(len(keep), -1)).all(1) & np.isfinite(
            rb.reshape(len(keep), -1)).all(1)
        ra, rb = ra[ok], rb[ok]
    return ra, rb


def against(row: Claim, control: Claim | None, units: str, draws: int, seed: int) -> Claim:
    """`decide` a row against the same row of its control, pairing their records."""
    if control is None or row.spec is None or control.spec is None:
        return decide(row, np.nan, "", None, units)
    ra, rb = paired_records(row, control)
    test = uncertainty.swap_test(ra, rb, row.spec.statistic, draws, seed)
    return decide(row, control.estimate, control.verdict, test, units, row.spec.reference,
                  row.spec.bounds)


def with_controls(rows: dict[str, list[Claim]], entries: list[Entry], draws: int,
                  seed: int) -> list[Claim]:
    """Per-model rows (by entry path, in `entries` order) with their controls: each row of a
    model beside the row of the same claim and scope of the control entry its kind pairs it
    with on the same dataset (`ips.controls.pair`); a control's own rows are controls."""
    out = []
    for e in entries:
        mine = rows[str(e.path)]
        if e.control_of:
            noun = e.control.noun if e.control else f"the {e.control_record['kind']} control"
            note = f"control: {noun} of {e.control_of}"
            out += [replace(r, raw_verdict=r.verdict, verdict="control",
                            note=join_notes(r.note, note)) for r in mine]
            continue
        t = controls.pair(e.model, [c for c in entries if c.dataset == e.dataset])
        theirs = {(r.claim, r.scope[len(t.model):]): r for r in rows[str(t.path)]} if t else {}
        out += [against(r, theirs.get((r.claim, r.scope[len(e.model):])), "samples", draws,
                        seed) for r in mine]
    return out
