"""Claims of IPS against its nulls (Gaussian, matched-size, precision)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from ips.analysis import peers, uncertainty
from ips.comparisons.claims.controls import decide_stored
from ips.comparisons.claims.verdicts import (
    ALPHA,
    Claim,
    ControlSpec,
    directional,
    few_samples_note,
    join_notes,
    join_scope,
    rank_mde,
    spearman_permutation,
    spearman_statistic,
    unattainable_note,
)
from ips.formats.metrics import Entry
from ips.nulls import variants
from ips.prompts.templates import ZERO_SHOT

NULL_CLAIMS = {
    "template_below_matched_null": (
        "(not in the paper) template changes disturb the interactions less than unstructured "
        "change of the same size (the matched-size null)"),
    "template_above_gaussian_null": (
        "(not in the paper; the paper assumes it) the template IPS exceeds the IPS of Gaussian "
        "noise on v"),
    "order_low_below_mid_beyond_null": (
        "(not in the paper) IPS^low < IPS^mid (Fig. 9) once each band's matched-size null is "
        "subtracted"),
    "order_mid_below_high_beyond_null": (
        "(not in the paper) IPS^mid < IPS^high (Fig. 9) once each band's matched-size null is "
        "subtracted"),
    "ips_falls_with_range": (
        "(not in the paper) samples whose v spans a wider range (a more decided model) have "
        "lower IPS"),
    "ips_beyond_change_size": (
        "(not in the paper; its thesis that interactions show what output-level metrics "
        "miss) within a sample, the size of a template pair's change (|Δv(x_N)| and "
        "sd(Δv)) explains less of IPS than of unstructured change of the size IPS can see "
        "(the matched-size null)"),
}


#: the rows of `variant_claims` (metrics files with a variant only: `ips.variants`)
VARIANT_CLAIMS = {v.claim: v.paper for v in variants()}


def _paired_row(e: Entry, claim: str, d: np.ndarray, sign: int, what: str, draws: int,
                seed: int, where: str = "", family: int = 1, group: str = ZERO_SHOT) -> Claim:
    """A directional row on per-sample differences d (S,): their mean, the two-sided paired
    sign-flip p, the interval that inverts that test and the mean it detects with 80 %
    power. A row of a ``family`` of k tests is Bonferroni-adjusted (p·k, interval and mde at
    level 1 − α/k), so that its interval and adjusted p still agree about 0."""
    d = np.asarray(d, float)
    level = 1 - ALPHA / family
    t = uncertainty.sign_flip_interval(d, level=level, draws=draws, seed=seed)
    finite = d[np.isfinite(d)]
    est = float(finite.mean()) if t.n else np.nan
    mde = uncertainty.sign_flip_mde_of(d, level=level)
    p = min(1.0, family * t.p_zero)
    paper = NULL_CLAIMS.get(claim) or VARIANT_CLAIMS[claim]
    adjusted = f"; Bonferroni over the {family} rows" if family > 1 else ""
    return Claim(claim, join_scope(e.model, e.dataset, group, where), paper, est, t.low,
                 t.high, t.n, f"paired sign-flip ({t.method}) on per-sample {what}; interval: "
                 f"inverts the test{adjusted}", p, directional(est, p, sign),
                 join_notes(f"estimate: mean per-sample {what}", few_samples_note(t.n)), mde=mde,
                 spec=ControlSpec(tuple(e.ds["sample"].values.astype(str)), d))


def null_claims(e: Entry, draws: int, seed: int) -> list[Claim]:
    """Each (model, dataset)'s IPS read against its nulls (main group, band all): below the
    matched-size null, above the Gaussian null at every level, and its association with the
    range of v over samples."""
    ds = e.ds
    scope = join_scope(e.model, e.dataset, ZERO_SHOT)
    if "sample_null_ips" not in ds or ZERO_SHOT not in ds["group"].values:
        return [Claim(c, scope, p, note="metrics file has no null IPS (nulls.draws = 0, a "
                      "sparse fit, or an older file); rerun ips metrics")
                for c, p in NULL_CLAIMS.items()]
    ips = ds["sample_ips"].sel(group=ZERO_SHOT, band="all").values.astype(float)
    out = []
    if "sample_matched_null_ips" in ds:
        matched = ds["sample_matched_null_ips"].sel(group=ZERO_SHOT, band="all").values
        out.append(_paired_row(e, "template_below_matched_null", ips - matched, -1,
                               "IPS − matched-size null IPS", draws, seed))
        out += _order_beyond_null(e, draws, seed)
        out.append(_beyond_size(e, draws, seed))
    for c in ds["null_level"].values:
        null = ds["sample_null_ips"].sel(group=ZERO_SHOT, null_level=c, band="all").values
        out.append(_paired_row(e, "template_above_gaussian_null", ips - null, +1,
                               "IPS − Gaussian null IPS", draws, seed,
                               f"noise {float(c):.3g} × range of v"))
    members = list(json.loads(ds.attrs["groups"])[ZERO_SHOT])
    spread = ds["sample_v_range"].sel(condition=members).values.mean(axis=1)
    ok = np.isfinite(ips) & np.isfinite(spread)
    n = int(ok.sum())
    if n < 3:
        out.append(Claim("ips_falls_with_range", scope, NULL_CLAIMS["ips_falls_with_range"], n=n,
                         note=f"{n} sample(s); a rank correlation needs at least 3"))
    else:
        r, p = spearman_permutation(spread[ok], ips[ok], draws, seed)
        out.append(Claim("ips_falls_with_range", scope, NULL_CLAIMS["ips_falls_with_range"], r,
                         n=n, test="Spearman ρ over samples of per-sample IPS and the mean "
                         "range of v over the group's conditions, permutation p", p_value=p,
                         verdict=directional(r, p, -1),
                         note=join_notes("n counts samples; mde: |ρ|, approximate (Fisher z)",
                                     unattainable_note(n)), mde=rank_mde(n),
                         spec=ControlSpec(tuple(ds["sample"].values.astype(str)),
                                          np.stack([spread, ips], 1), spearman_statistic)))
    return out


def _beyond_size(e: Entry, draws: int, seed: int) -> Claim:
    """Does IPS say more than the size of the change? Per sample, over the main group's
    pairs, R² of IPS on |Δv(x_N)| and sd(Δv) (`ips.analysis.peers.size_r2`) against the
    same R² of the pairs' matched-size null; the row tests R²_null − R²_IPS (sign +)."""
    ds, claim = e.ds, "ips_beyond_change_size"
    if "sample_pair_dv_unmasked" not in ds:
        return Claim(claim, join_scope(e.model, e.dataset, ZERO_SHOT), NULL_CLAIMS[claim],
                     note="metrics file without |Δv(x_N)| per pair; rerun ips metrics")
    pairs = ds["pair_group"].values == ZERO_SHOT
    sizes = (ds["sample_pair_dv_unmasked"].values[:, pairs],
             ds["sample_pair_change"].values[:, pairs])
    r2 = {name: peers.size_r2(ds[var].sel(band="all").values[:, pairs], *sizes)
          for name, var in (("ips", "sample_pair_ips"), ("null", "sample_pair_matched_null"))}
    if not np.isfinite(r2["null"] - r2["ips"]).any():
        return Claim(claim, join_scope(e.model, e.dataset, ZERO_SHOT), NULL_CLAIMS[claim],
                     note=f"no sample has 4 template pairs valued (the group has "
                     f"{int(pairs.sum())}): a fit of 3 coefficients leaves no residual")
    row = _paired_row(e, claim, r2["null"] - r2["ips"], +1, "R²(matched null) − R²(IPS)",
                      draws, seed)
    return replace(row, note=join_notes(
        row.note, f"mean R² of IPS {uncertainty.point_mean(r2['ips']):.2f}, of the null "
        f"{uncertainty.point_mean(r2['null']):.2f} (least squares on |Δv(x_N)| and sd(Δv) "
        f"over a sample's {int(pairs.sum())} pairs)"))


def _order_beyond_null(e: Entry, draws: int, seed: int) -> list[Claim]:
    """The order bands of IPS minus its matched-size null (the noise-aware reading of
    `order_claims`, beside it): per sample (IPS − N)^lo − (IPS − N)^hi, Bonferroni-adjusted
    over the two rows (Holm, as `order_claims`, would reject where no interval says so)."""
    x = (e.ds["sample_ips"] - e.ds["sample_matched_null_ips"]).sel(group=ZERO_SHOT)
    return [_paired_row(e, f"order_{lo}_below_{hi}_beyond_null",
                        (x.sel(band=lo) - x.sel(band=hi)).values, -1,
                        f"(IPS − matched null)^{lo} − (IPS − matched null)^{hi}", draws, seed,
                        family=2)
            for lo, hi in (("low", "mid"), ("mid", "high"))]


def variant_claims(e: Entry, draws: int, seed: int) -> list[Claim]:
    """Per variant (`ips.nulls.variants`: a second precision, another mask token),
    setting, condition group with conditions scored again, and band: is the group's template
    IPS above that null, on the samples that were scored again (paired over samples)? The
    scope names the group."""
    ds = e.ds
    out = []
    for v in variants():
        kind = v.kind
        if f"sample_{kind}_null_ips" not in ds:
            continue
        own = json.loads(ds.attrs.get(kind, "{}") or "{}").get(v.by, "?")
        n_valued = ds[f"{kind}_null_n_valued"]
        for setting in ds[kind].values:
            for group in ds["group"].values:
                if not n_valued.sel({kind: setting, "group": group}).values.any():
                    continue
                for band in ds["band"].values:
                    at = {"group": group, "band": band}
                    ips = ds["sample_ips"].sel(at).values.astype(float)
                    null = ds[f"sample_{kind}_null_ips"].sel({kind: setting, **at}).values
                    out.append(_paired_row(e, v.claim, ips - null, +1,
                                           f"IPS − {kind} null IPS", draws, seed,
                                           f"{own} vs {setting}, band {band}",
                                           group=str(group)))
    return out


MATCHED_CLAIM = ("MoE models are more sensitive than dense models with similar activated "
                 "parameters (Section 4.2, Appendix I, Table 7)")


def matched_claims(rows: Sequence[dict], datasets: Sequence[str]) -> list[Claim]:
    """Table 7: one row per MoE model and its matched dense model (`moe_matched.csv`; the
    paper: IPS_dense < IPS_MoE), tested like a factor comparison; an MoE model without a
    match is untestable with the reason."""
    out = []
    for d in datasets:
        mine = [r for r in rows if r["dataset"] == d]
        if not mine:
            out.append(Claim("moe_above_dense_matched", d, MATCHED_CLAIM,
                             note="no MoE model on this dataset"))
        for r in mine:
            scope = join_scope(d, f"{r['dense_model'] or '–'} vs {r['moe_model']}")
            if not r["matched"]:
                out.append(Claim("moe_above_dense_matched", scope, MATCHED_CLAIM,
                                 note=r["note"], weights=r["weights"]))
                continue
            est, p, n = r["delta_ips"], r["p_value"], r["n_tested"]
            if n == 0:
                out.append(Claim("moe_above_dense_matched", scope, MATCHED_CLAIM,
                                 note="no sample valued on both models (or metrics files "
                                 "without per-sample IPS)", weights=r["weights"]))
                continue
            out.append(_matched_control(r, Claim(
                "moe_above_dense_matched", scope, MATCHED_CLAIM, est, r["delta_ips_ci_low"],
                r["delta_ips_ci_high"], n, "paired sign-flip on per-sample IPS_dense − "
                "IPS_MoE; interval: the ΔIPS that test does not reject", p,
                directional(est, p, -1),
                join_notes("estimate: ΔIPS = (IPS_dense − IPS_MoE)/IPS_MoE; activated "
                       f"parameters dense/MoE {r['active_ratio']:.2f}", few_samples_note(n)),
                r["weights"], r.get("delta_ips_mde", np.nan))))
    return out


def _matched_control(r: dict, row: Claim) -> Claim:
    """A Table 7 row beside the same pair's controls (`ips.figures.tables.appendix._control`),
    read against their draws where there are two or more."""
    n = int(r.get("n_control", 0) or 0)
    drawn = [float(x) for x in str(r.get("control_delta_ips_draws", "") or "").split(";") if x]
    return decide_stored(row, float(r.get("control_delta_ips", np.nan)),
                         float(r.get("control_p_value", np.nan)),
                         float(r.get("control_p", np.nan)), n,
                         float(r.get("control_difference", np.nan)), -1,
                         float(r.get("control_mde", np.nan)), drawn)
