"""A factor comparison beside the same comparison of the two models' controls (`ips.controls`),
on every draw of them: what `ips.comparisons.compare` writes as the factors file's `control_*`
variables and `ips.comparisons.claims` reads beside each factor row."""

from __future__ import annotations

import numpy as np

from ips.analysis import uncertainty
from ips.analysis.item_draw_test import ItemDrawTest, item_draw_test
from ips.comparisons import low_band, per_sample
from ips.comparisons.per_sample import Comparison
from ips.formats.metrics import BANDS


def control_variables(comps: list[Comparison], controls: list[Comparison],
                       control_of: dict[str, str | None], draw_of: dict[str, int], draws: int,
                       seed: int, level: float) -> dict:
    """Each comparison beside the same comparison of the two models' controls (same
    factor, dataset, groups and templates, one draw of each model's control): on the first
    draw its ΔIPS and sign-flip p, and the two-sided sign-flip test of the per-sample
    (A_s − B_s) − (A'_s − B'_s) on the samples valued in both (`control_p`, `n_control`,
    `control_difference` their mean, `control_mde` the difference it detects at 80 % power);
    likewise for the excess beyond the matched-size null (`control_excess`,
    `control_p_excess`, and the test of the per-sample difference of the two excesses
    `control_p_excess_difference`, `n_control_excess`, `control_excess_difference`,
    `control_excess_mde`), and for the low-band gap (`low_band.gap_test`: `control_low_gap`,
    `control_p_low_gap`, and on the per-sample differences of the two sides' gaps
    `control_p_low_gap_difference`, `n_control_low_gap`, `control_low_gap_difference`,
    `control_low_gap_mde`). On every draw (`control_draw`, 1 …): the control's ΔIPS, excess
    and gap (`*_draws`); with two or more draws, the items × draws test of each
    (`ips.analysis.item_draw_test`, over the samples all models have: `*_items_p`,
    `*_items_difference`, `*_items_se`, `*_items_df`, `*_items_mde`, `*_items_units`), by
    which a row is read (`ITEM_TESTS`). NaN / 0 where the controls are missing."""
    C, nb = len(comps), len(BANDS)
    K = max(draw_of.values(), default=1)
    v = {k: np.full((C, nb), np.nan) for k in _BANDED}
    v.update({k: np.full(C, np.nan) for k in _GAP})
    v.update({k: np.zeros((C, nb), np.int64) for k in ("n_control", "n_control_excess")})
    v["n_control_low_gap"] = np.zeros(C, np.int64)
    v.update({k: np.full((C, nb, K), np.nan) for k in _DRAWN})
    v["control_low_gap_draws"] = np.full((C, K), np.nan)
    for prefix, banded in ITEM_TESTS.items():
        v.update({f"{prefix}_items_{f}": np.full((C, nb) if banded else C, np.nan)
                  for f in ITEM_FIELDS})
    found: dict[tuple, dict[int, Comparison]] = {}
    for c in controls:
        if draw_of.get(c.model_a, 1) == draw_of.get(c.model_b, 1):  # one draw on both sides
            found.setdefault((c.factor, c.dataset, c.group, control_of.get(c.model_a),
                              control_of.get(c.model_b), c.setting_a, c.setting_b,
                              c.templates), {})[draw_of.get(c.model_a, 1)] = c
    for i, c in enumerate(comps):
        drawn = found.get((c.factor, c.dataset, c.group, c.model_a, c.model_b, c.setting_a,
                           c.setting_b, c.templates), {})
        for k, t in drawn.items():
            _draw(v, i, k, t)
        if 1 in drawn:
            _first_draw(v, i, c, drawn[1], draws, seed, level)
        if len(drawn) >= 2:
            _items_and_draws(v, i, c, [drawn[k] for k in sorted(drawn)], level)
    dims = {"control_low_gap_draws": ("comparison", "control_draw"),
            **{f"control_low_gap_items_{f}": ("comparison",) for f in ITEM_FIELDS},
            **dict.fromkeys(_DRAWN, ("comparison", "band", "control_draw")),
            **dict.fromkeys((*_GAP, "n_control_low_gap"), ("comparison",))}
    return {k: (dims.get(k, ("comparison", "band")), x) for k, x in v.items()}


#: the variables per comparison and band, per comparison (the low-band gap), and per draw
_BANDED = ("control_delta_ips", "control_p_value", "control_p", "control_difference",
           "control_mde", "control_excess", "control_p_excess", "control_p_excess_difference",
           "control_excess_difference", "control_excess_mde")
_GAP = ("control_low_gap", "control_p_low_gap", "control_p_low_gap_difference",
        "control_low_gap_difference", "control_low_gap_mde")
_DRAWN = ("control_delta_ips_draws", "control_excess_draws")


#: the items × draws tests stored, by prefix: banded (per comparison and band) or not
ITEM_TESTS = {"control": True, "control_excess": True, "control_low_gap": False}
#: the fields of each (`ItemDrawTest`'s), as `<prefix>_items_<field>`
ITEM_FIELDS = ("p", "difference", "se", "df", "mde", "units")


def stored_test(c, prefix: str, estimates: np.ndarray) -> ItemDrawTest | None:
    """The items × draws test stored under ``prefix`` for one comparison (and band) ``c``
    of a factors file, with its draws' ``estimates`` (their sd); None where none is."""
    name = f"{prefix}_items_p"
    if name not in c or not np.isfinite(float(c[name])):
        return None
    x = np.asarray(estimates, float)
    x = x[np.isfinite(x)]

    def get(f: str) -> float:
        return float(c[f"{prefix}_items_{f}"])

    return ItemDrawTest(get("p"), int(x.size), get("difference"), "items × draws",
                        float(np.std(x, ddof=1)) if x.size > 1 else np.nan, get("mde"),
                        int(get("units")), get("se"), get("df"))


def _put(v: dict, prefix: str, at: tuple, t: ItemDrawTest) -> None:
    for f, x in zip(ITEM_FIELDS, (t.p_value, t.mean_difference, t.se, t.df, t.mde,
                                  t.units), strict=True):
        v[f"{prefix}_items_{f}"][at] = x


def _ratio(r: np.ndarray) -> float:
    """ΔIPS (`per_sample.delta`) of the means of records (n, 2) of (A_s, B_s)."""
    return float(per_sample.delta(r[:, :1].mean(0), r[:, 1:].mean(0))[0])


def _max_mean(r: np.ndarray) -> float:
    """The low-band gap of records (n, 2) of per-sample gaps: the larger mean."""
    return float(r.mean(0).max())


def _stacked(tables: list[dict | None]) -> tuple[np.ndarray, np.ndarray] | None:
    """The records of the samples every model has, (n, …) for the trained model and
    (K, n, …) for the draws; None where a model has none."""
    if any(t is None for t in tables):
        return None
    ids = sorted(set.intersection(*(set(t) for t in tables)))
    if len(ids) < 2:
        return None
    x = np.array([[np.asarray(t[s], float) for s in ids] for t in tables])
    return x[0], x[1:]


def _items_and_draws(v: dict, i: int, c: Comparison, drawn: list[Comparison],
                     level: float) -> None:
    """Comparison i against its K ≥ 2 draws by the items × draws test, per band for ΔIPS
    (records: the per-sample sides) and the excess (per-sample excess), and for the gap."""
    both = _stacked([per_sample.sides(x.samples_a, x.samples_b) for x in (c, *drawn)])
    if both is not None:  # (…, n, 2, band)
        for b in range(both[0].shape[-1]):
            _put(v, "control", (i, b), item_draw_test(both[0][..., b], both[1][..., b],
                                                      _ratio, level))
    both = _stacked([per_sample.excess(x) for x in (c, *drawn)])
    if both is not None:  # (…, n, band)
        for b in range(both[0].shape[-1]):
            _put(v, "control_excess", (i, b), item_draw_test(both[0][:, b], both[1][:, :, b],
                                                             None, level))
    both = _stacked([low_band.gaps(per_sample.sides(x.samples_a, x.samples_b))
                     for x in (c, *drawn)])
    if both is not None:  # (…, n, 2)
        _put(v, "control_low_gap", (i,), item_draw_test(both[0], both[1], _max_mean, level))


def _draw(v: dict, i: int, k: int, t: Comparison) -> None:
    """Draw k's estimates of comparison i: the controls' ΔIPS, excess and low-band gap."""
    v["control_delta_ips_draws"][i, :, k - 1] = per_sample.delta(
        np.asarray(t.ips_a, float)[None], np.asarray(t.ips_b, float)[None])[0]
    theirs = per_sample.excess(t)
    if theirs:
        v["control_excess_draws"][i, :, k - 1] = per_sample.nanmean(
            np.array(list(theirs.values())))
    gaps = low_band.gaps(per_sample.sides(t.samples_a, t.samples_b))
    if gaps:  # the estimate of `low_band.gap_test`, without its tests
        v["control_low_gap_draws"][i, k - 1] = float(low_band.gap_means(gaps).max())


def _mde(both: dict) -> np.ndarray:
    """Per band: the mean of the per-sample differences the sign-flip test detects."""
    y = np.array(list(both.values()), float).reshape(len(both), -1)
    return np.array([uncertainty.sign_flip_mde_of(y[:, b]) for b in range(y.shape[1])])


def _first_draw(v: dict, i: int, c: Comparison, t: Comparison, draws: int, seed: int,
                level: float) -> None:
    """Comparison i beside the first draw's: the paired tests of the one-draw rule."""
    v["control_delta_ips"][i] = v["control_delta_ips_draws"][i, :, 0]
    mine, theirs = (per_sample.differences(x.samples_a, x.samples_b) for x in (c, t))
    if mine is None or theirs is None:
        return
    v["control_p_value"][i] = per_sample.sign_flip([theirs], draws, seed, None).p
    both = {s: mine[s] - theirs[s] for s in mine if s in theirs}
    if both:
        test = per_sample.sign_flip([both], draws, seed, None)
        v["control_p"][i], v["n_control"][i] = test.p, test.n
        v["control_difference"][i] = per_sample.nanmean(np.array(list(both.values())))
        v["control_mde"][i] = _mde(both)
    mine, theirs = per_sample.excess(c), per_sample.excess(t)
    if mine and theirs:
        v["control_excess"][i] = v["control_excess_draws"][i, :, 0]
        v["control_p_excess"][i] = per_sample.sign_flip([theirs], draws, seed, None).p
        both = {s: mine[s] - theirs[s] for s in mine if s in theirs}
        test = per_sample.sign_flip([both], draws, seed, None)
        v["control_p_excess_difference"][i], v["n_control_excess"][i] = test.p, test.n
        v["control_excess_difference"][i] = per_sample.nanmean(np.array(list(both.values())))
        v["control_excess_mde"][i] = _mde(both)
    mine, theirs = (low_band.gaps(per_sample.sides(x.samples_a, x.samples_b)) for x in (c, t))
    if mine and theirs:
        own = low_band.gap_test(theirs, draws, seed, level)
        v["control_low_gap"][i], v["control_p_low_gap"][i] = own.estimate, own.p
        both = {s: mine[s] - theirs[s] for s in mine if s in theirs}
        if both:
            test = low_band.gap_test(both, draws, seed, level)
            v["control_p_low_gap_difference"][i], v["n_control_low_gap"][i] = test.p, test.n
            v["control_low_gap_difference"][i] = test.estimate
            v["control_low_gap_mde"][i] = test.mde
