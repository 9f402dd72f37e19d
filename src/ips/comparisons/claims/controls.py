"""Every claims row beside its control: what random weights earn on the same prompts.

A claim that an untrained model also earns says something about the metric and the templates,
not about trained models. So each row is computed again on its *controls*: a per-model row on
the entries its model's control adds (`ips.controls`; for instance the model's class,
tokenizer, mask token, samples and conditions with the weights its initialiser draws), a row
across models on the controls of all its models (draw by draw), a factor comparison on the
controls of its two models. Its columns:

* ``raw_verdict``: the row's own test, as before (`verdicts.directional`, `within`, …);
* ``control_estimate``, ``control_verdict``: the same statistic and test on the controls (the
  mean over draws, and the first draw's verdict, where there are several);
* ``control_draws``, ``control_sd``: how many draws of the control, and the spread of the
  statistic between them;
* ``control_p``, ``control_test``, ``control_mde``: the test of trained − control, one-sided
  in the direction the row's verdict needs (below), and the difference it detects with 80 %
  power. With two or more draws (docs/method.md#the-control-test) the items × draws test
  (`ips.analysis.item_draw_test`): the trained estimate against the draws' mean, with the
  draws' spread and every model's noise over the row's units (samples, or models for a row
  across models) both in its variance, so neither a fixed offset of one draw nor a trained
  model's larger noise over items is read as signal. A row whose control draws are stored
  as estimates only reads them by the prediction test (`uncertainty.prediction_test`), the
  draws' spread alone. With one draw there is no spread between draws to read it against:
  a paired test over the units both have (the sign-flip test of the per-sample differences
  for a row on per-sample values, else the swap test of the row's statistic,
  `uncertainty.swap_test`), which reads that draw's offset as signal (its false-positive
  rate is in docs/method.md). Each of these tests is symmetric under H0, so its one-sided
  p is half its two-sided p on the side of the observed difference, and 1 minus that half on
  the other;
* ``verdict``, the final verdict: ``supported`` or ``contradicted`` only when the raw verdict
  is, and the trained models differ from their controls in the direction of the raw effect
  (control_p < α) (the estimate's side of its reference: 0 for a difference, ½ for a share of
  models, the threshold of a descriptive row; for a level row, `level_side`). Otherwise a
  decided raw verdict becomes ``undecided`` and the note says why (no control, or the control
  earns it too). A row of a control entry is itself a control: its verdict is ``control``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from ips import controls
from ips.analysis import uncertainty
from ips.analysis.item_draw_test import ItemDrawTest, item_draw_test
from ips.comparisons.claims.verdicts import (
    ALPHA,
    DECIDED,
    Claim,
    directional,
    join_notes,
    mean_statistic,
)
from ips.formats.metrics import Entry

#: what the control test of a row tests: one draw (over paired units) or several
ControlTest = uncertainty.SignFlipTest | uncertainty.PredictionTest | ItemDrawTest


def level_side(raw: str, estimate: float, bounds: tuple[float, float],
               control: float = np.nan) -> int:
    """The direction in which a level row's trained estimate must differ from its control's
    (``control``) for the raw verdict to be the trained model's own, against the interval
    [lo, hi]: a value above hi (contradicted) +1, below lo −1; inside (supported) towards
    the interval's one bound that binds, −1 below hi for [0, hi], +1 above lo for [lo, 1];
    for an interval bounded on both sides (such as 40–60 %) from the control into the
    interval, +1 for a control below lo, −1 above hi, and 0 for a control inside it, which
    earns the verdict too (no difference from it can make the verdict the model's)."""
    lo, hi = bounds
    if raw == "contradicted":
        return 1 if estimate > hi else -1
    if lo <= 0:
        return -1
    if hi >= 1:
        return 1
    return 1 if control < lo else -1 if control > hi else 0


def decide(row: Claim, control_estimate: float, control_verdict: str,
           test: ControlTest | None, units: str, reference: float = 0.0,
           bounds: tuple[float, float] | None = None, mde: float = np.nan) -> Claim:
    """The row with its control columns and its final verdict (module docstring). ``test``:
    trained − control, over the paired ``units`` of one draw, or against several draws (a
    `PredictionTest`; None: the row has no control); ``bounds``: a level row's interval
    (`level_side`); ``mde``: a one-draw test's (a prediction test carries its own)."""
    raw = row.verdict
    if test is None or not np.isfinite(test.p_value):
        why = ("no control: no control entry of its models (controls), so a decided "
               f"raw verdict ({raw}) cannot be told from what random weights earn")
        return replace(row, raw_verdict=raw, verdict="undecided" if raw in DECIDED else raw,
                       note=join_notes(row.note, why if raw in DECIDED else ""))
    delta = float(test.mean_difference)
    side = (level_side(raw, row.estimate, bounds, control_estimate) if bounds is not None
            else int(np.sign(row.estimate - reference)))
    p = uncertainty.one_sided(test, side)  # side 0: no difference makes it the model's
    beyond = p < ALPHA
    verdict = raw if raw not in DECIDED or beyond else "undecided"
    toward = {1: "above", -1: "below"}.get(side, "either way")
    if isinstance(test, ItemDrawTest):
        spread, mde = test.sd, test.mde
        said = (f"control {control_estimate:.3g} ± {spread:.2g} (mean ± sd over {test.n} "
                f"draws); trained − control {delta:+.3g} ± {test.se:.2g}, p = {p:.2g} "
                f"{toward}")
        what = (f"items × draws test of the trained estimate against {test.n} draws of the "
                f"control over {test.units} units (t, ν = {test.df:.3g}), one-sided")
    elif isinstance(test, uncertainty.PredictionTest):
        spread, mde = test.sd, test.mde
        said = (f"control {control_estimate:.3g} ± {spread:.2g} (mean ± sd over {test.n} "
                f"draws); trained − control {delta:+.3g}, p = {p:.2g} {toward} against the "
                "draws")
        what = (f"prediction test of the trained estimate against {test.n} draws of the "
                f"control (t, {test.n - 1} df), one-sided: the unit is the draw, its noise "
                "over items not counted (draws stored as estimates)")
    else:
        spread = np.nan
        said = (f"control {control_estimate:.3g} ({control_verdict or 'no verdict'}; one draw); "
                f"trained − control {delta:+.3g}, p = {p:.2g} {toward} over {test.n} {units}")
        what = (f"paired {'sign-flip' if units == 'samples' else 'swap'} test "
                f"({test.method}) of trained − control over {test.n} {units}, one draw, "
                "one-sided: its offset counts as signal")
    if raw in DECIDED and control_verdict == raw:
        said += f"; the control earns the same raw verdict, {raw}"
    elif raw in DECIDED and not beyond:
        said += "; the trained models do not differ from it beyond chance in that direction"
    return replace(row, raw_verdict=raw, verdict=verdict, control_estimate=control_estimate,
                   control_verdict=control_verdict, control_p=p, control_test=what,
                   control_draws=1 if isinstance(test, uncertainty.SignFlipTest) else test.n,
                   control_sd=spread,
                   control_mde=float(mde), note=join_notes(row.note, said))


def decide_draws(row: Claim, estimates: Sequence[float], verdict: str,
                 reference: float = 0.0, bounds: tuple[float, float] | None = None) -> Claim:
    """`decide` a row against two or more draws of its control, given the row's statistic
    on each (`uncertainty.prediction_test`); ``verdict``: the first draw's raw verdict."""
    values = np.asarray(estimates, float)
    test = uncertainty.prediction_test(row.estimate, values)
    return decide(row, float(np.nanmean(values)), verdict, test, "draws", reference, bounds)


def decide_stored(row: Claim, control: float, control_p: float, p_difference: float, n: int,
                  difference: float, sign: int, mde: float = np.nan,
                  draws: Sequence[float] = (), items: ItemDrawTest | None = None) -> Claim:
    """`decide` a row whose control was tested where the per-sample data were (the factors
    file, Table 7): the control's estimate and own p (its raw verdict: `directional` with
    the row's ``sign``), and the sign-flip test of trained − control over n samples (its p,
    mean difference and mde); n = 0: no control. ``draws``: the control's estimate on each
    draw; with two or more finite the row is read against them instead: by ``items``, their
    items × draws test where it was stored, else by their estimates (`decide_draws`)."""
    verdict = directional(control, control_p, sign) if np.isfinite(control) else ""
    if items is not None:
        return decide(row, float(np.nanmean(np.asarray(draws, float))), verdict, items,
                      "samples")
    if np.isfinite(np.asarray(draws, float)).sum() >= 2:
        return decide_draws(row, draws, verdict)
    if not n:
        return decide(row, np.nan, "", None, "samples")
    test = uncertainty.SignFlipTest(p_difference, n, difference,
                                    "exact" if n <= uncertainty.EXACT_MAX else "monte carlo", 0)
    return decide(row, control, verdict, test, "samples", mde=mde)


def paired_records(a: Claim, *others: Claim) -> tuple[np.ndarray, ...]:
    """The records of the units all rows have, in sorted order, finite on every row: row
    a's first, then each other's."""
    at = [{u: i for i, u in enumerate(o.spec.units)} for o in others]
    keep = sorted((u, i) for i, u in enumerate(a.spec.units) if all(u in p for p in at))
    out = [np.asarray([a.spec.records[i] for _, i in keep], float)]
    out += [np.asarray([o.spec.records[p[u]] for u, _ in keep], float)
            for o, p in zip(others, at, strict=True)]
    if keep:
        ok = np.logical_and.reduce([np.isfinite(r.reshape(len(keep), -1)).all(1) for r in out])
        out = [r[ok] for r in out]
    return tuple(out)


def against(row: Claim, controls: Sequence[Claim], units: str, draws: int,
            seed: int) -> Claim:
    """`decide` a row against the same row of each draw of its control, pairing their
    records by unit: with one draw by a paired test (its mde where the statistic is a
    per-sample mean), with two or more by the items × draws test."""
    controls = [c for c in controls if c is not None]
    if row.spec is None or not controls or any(c.spec is None for c in controls):
        return decide(row, np.nan, "", None, units)
    first = controls[0]
    mean = row.spec.statistic is mean_statistic and np.ndim(row.spec.records) == 1
    if len(controls) >= 2:
        mine, *theirs = paired_records(row, *controls)
        test = item_draw_test(mine, np.stack(theirs), None if mean else row.spec.statistic)
        return decide(row, float(np.nanmean([c.estimate for c in controls])), first.verdict,
                      test, units, row.spec.reference, row.spec.bounds)
    ra, rb = paired_records(row, first)
    test = uncertainty.swap_test(ra, rb, row.spec.statistic, draws, seed)
    mde = uncertainty.sign_flip_mde_of(ra - rb) if mean else np.nan
    return decide(row, first.estimate, first.verdict, test, units, row.spec.reference,
                  row.spec.bounds, mde)


def with_controls(rows: dict[str, list[Claim]], entries: list[Entry], draws: int,
                  seed: int) -> list[Claim]:
    """Per-model rows (by entry path, in `entries` order) with their controls: each row of a
    model beside the rows of the same claim and scope of the control entries (one per draw)
    its kind pairs it with on the same dataset (`ips.controls.pair`); a control's own rows
    are controls."""
    out = []
    for e in entries:
        mine = rows[str(e.path)]
        if e.control_of:
            noun = e.control.noun if e.control else f"the {e.control_record['kind']} control"
            draw = f" (draw {e.control_draw})" if e.control_draw > 1 else ""
            note = f"control: {noun} of {e.control_of}{draw}"
            out += [replace(r, raw_verdict=r.verdict, verdict="control",
                            note=join_notes(r.note, note)) for r in mine]
            continue
        paired = controls.pair(e.model, [c for c in entries if c.dataset == e.dataset])
        theirs = [{(r.claim, r.scope[len(t.model):]): r for r in rows[str(t.path)]}
                  for t in paired]
        out += [against(r, [t.get((r.claim, r.scope[len(e.model):])) for t in theirs],
                        "samples", draws, seed) for r in mine]
    return out
