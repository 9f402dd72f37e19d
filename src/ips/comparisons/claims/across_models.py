"""Claims across models: consistency, tau robustness, factors, perturbations."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import xarray as xr

from ips import controls
from ips.comparisons.beside_controls import stored_test
from ips.comparisons.claims.controls import against, decide, decide_stored
from ips.comparisons.claims.verdicts import (
    MIN_MODELS,
    Claim,
    ControlSpec,
    binomial_row,
    directional,
    few_samples_note,
    join_notes,
    join_scope,
    rank_mde,
    spearman_permutation,
    spearman_statistic,
    unattainable_note,
)
from ips.comparisons.factors import FACTORS
from ips.comparisons.robustness import ROBUSTNESS_GROUP, tau_sweep
from ips.formats.metrics import WEIGHTS, Entry, weights
from ips.prompts.templates import ZERO_SHOT

TAU_SPEARMAN = 0.9
"""'Rankings stable across τ' (paper: mean Spearman 0.9905) read as: mean Spearman ≥ this."""


def _rank_claim(entries: list[Entry], dataset: str, claim: str, paper: str, value,
                sign: int, draws: int, seed: int) -> Claim:
    """Spearman ρ across the trained models of `dataset` between IPS (main group, band all)
    and `value(entry)`, with its permutation p; raw verdict: ρ has sign `sign`; beside the
    same ρ across their controls (`controls.against`, a swap test over models)."""
    def row(mine: list[Entry]) -> Claim:
        units = [(e.control_of or e.model, (float(e.ds["ips"].sel(group=ZERO_SHOT, band="all")),
                                         value(e)))
                 for e in mine if e.dataset == dataset and ZERO_SHOT in e.ds["group"].values]
        units = [u for u in units if all(np.isfinite(u[1]))]
        if len(units) < MIN_MODELS:
            return Claim(claim, dataset, paper, n=len(units),
                         note=f"{len(units)} model(s); a correlation across models needs at "
                         f"least {MIN_MODELS}")
        x, y = np.array([u[1] for u in units]).T
        r, p = spearman_permutation(x, y, draws, seed)
        return Claim(claim, dataset, paper, r, n=len(units),
                     test="Spearman ρ across models, permutation p", p_value=p,
                     verdict=directional(r, p, sign),
                     note=join_notes("n counts models; mde: |ρ|, approximate (Fisher z)",
                                 unattainable_note(len(units), "models")), mde=rank_mde(len(units)),
                     spec=ControlSpec(tuple(u[0] for u in units), np.stack([x, y], 1),
                                      spearman_statistic))

    trained = row([e for e in entries if not e.control_of])
    return against(trained, [row(mine) for mine in controls.draws(entries).values()], "models",
                   draws, seed)


def consistency_claims(entries: list[Entry], datasets: list[str], draws: int,
                       seed: int) -> list[Claim]:
    """IPS correlates negatively with output consistency across models (Section 3.4, Fig. 4b)."""
    paper = "IPS correlates negatively with output consistency across models (Fig. 4b)"
    return [_rank_claim(entries, d, "ips_vs_consistency", paper,
                        lambda e: float(e.ds["output_consistency"].sel(group=ZERO_SHOT)), -1,
                        draws, seed) for d in datasets]


PEER_CLAIMS = {
    "accuracy_spread": ("FormatSpread's spread of accuracy", 1),
    "pss": ("ProSA's PSS", 1),
    "consistency_rate": ("SCORE's consistency rate", -1),
    "dv_unmasked": ("the mean |Δv(x_N)| of the unmasked prompt", 1),
}
"""Beyond the paper: the output-level metric (`ips.analysis.peers`), in words, and the sign
of its Spearman ρ with IPS across models if the two views agree."""


def peer_claims(entries: list[Entry], datasets: list[str], draws: int,
                seed: int) -> list[Claim]:
    """Beyond the paper: does IPS rank the models as each output-level metric does?"""
    out = []
    for d in datasets:
        mine = [e for e in entries if e.dataset == d]
        if not mine or not all("peer_value" in e.ds for e in mine):
            continue
        for name, (words, sign) in PEER_CLAIMS.items():
            paper = (f"beyond the paper: IPS ranks the models as {words} does "
                     f"(Spearman ρ {'>' if sign > 0 else '<'} 0)")
            if not any(np.isfinite(e.ds["peer_value"].sel(peer=name)).any() for e in mine):
                out.append(Claim(f"ips_vs_{name}", d, paper,
                                 note="no model has this metric here (it needs a gold option, "
                                 "and an instruction dataset has none)"))
                continue
            out.append(_rank_claim(
                mine, d, f"ips_vs_{name}", paper,
                lambda e, k=name: float(e.ds["peer_value"].sel(group=ZERO_SHOT, peer=k)),
                sign, draws, seed))
    return out


def _tau_statistic(x: np.ndarray) -> float:
    """Mean Spearman ρ over the pairs of τ of the models' IPS (model, τ): `tau_sweep`'s."""
    return tau_sweep(x).spearman


def _tau_sweeps(entries: list[Entry], dataset: str) -> ControlSpec | None:
    """Each model's (or control's, under its model's name) IPS over the τ sweep on `dataset`."""
    units = [(e.control_of or e.model, e.ds["ips_sweep"].sel(group=ROBUSTNESS_GROUP).values)
             for e in entries if e.dataset == dataset and "ips_sweep" in e.ds
             and ROBUSTNESS_GROUP in e.ds["group"].values]
    units = [(m, np.asarray(x, float)) for m, x in units if np.isfinite(x).all()]
    if not units:
        return None
    return ControlSpec(tuple(m for m, _ in units), np.stack([x for _, x in units]),
                       _tau_statistic, TAU_SPEARMAN)


def tau_claims(factors: xr.Dataset, datasets: list[str], entries: Sequence[Entry] = (),
               draws: int = 9999, seed: int = 0) -> list[Claim]:
    """Model rankings are robust to τ (Section 3.4, Table 2/3): the factors file's mean
    Spearman of the trained models, beside that of their controls (a swap test over
    models of the difference)."""
    paper = (f"IPS rankings agree across τ = 0.05…0.20 (mean Spearman 0.9905); read as: mean "
             f"Spearman ≥ {TAU_SPEARMAN:g}")
    out = []
    for d in datasets:
        if d not in factors["dataset"].values:
            out.append(Claim("tau_robustness", d, paper, note="dataset not in the factors file"))
            continue
        n = int(factors["tau_n_models"].sel(dataset=d))
        r = float(factors["tau_spearman"].sel(dataset=d))
        if n < MIN_MODELS or not np.isfinite(r):
            out.append(Claim("tau_robustness", d, paper, n=n,
                             note=f"{n} model(s); rank correlations need at least {MIN_MODELS}"))
            continue
        row = Claim("tau_robustness", d, paper, r, n=n,
                    test=f"descriptive: mean Spearman vs {TAU_SPEARMAN:g} (no test)",
                    verdict="supported" if r >= TAU_SPEARMAN else "contradicted",
                    note="n counts models; with few models a rank correlation is coarse",
                    spec=_tau_sweeps([e for e in entries if not e.control_of], d))
        drawn = []
        for mine in controls.draws(entries).values():
            spec = _tau_sweeps(mine, d)
            if spec is not None and len(spec.units) >= MIN_MODELS:
                c = _tau_statistic(spec.records)
                drawn.append(replace(row, estimate=c, spec=spec, verdict="supported"
                                     if c >= TAU_SPEARMAN else "contradicted"))
        out.append(against(row, drawn, "models", draws, seed))
    return out


FACTOR_CLAIMS = {
    "instruct_vs_base": "instruct/chat models have lower IPS than their base models (Fig. 5)",
    "scale": "within a series, larger models have lower IPS (Fig. 6)",
    "dense_vs_moe": "dense models have lower IPS than MoE models of the same family (Fig. 7)",
    "few_shot": "k-shot prompting lowers IPS against 0-shot on the same templates (Fig. 8)",
}


def factor_claims(factors: xr.Dataset, entries: Sequence[Entry] = ()) -> list[Claim]:
    """One row per factor comparison (A has the factor; the paper: IPS_A < IPS_B); `entries`
    tell which models have random weights."""
    out = []
    absent = json.loads(factors.attrs.get("absent", "{}") or "{}")
    comp_factor = factors["comparison_factor"].values.astype(str)
    for f in FACTORS:
        claim = f"factor_{f}"
        rows = np.flatnonzero(comp_factor == f)
        if rows.size == 0:
            out.append(Claim(claim, "", FACTOR_CLAIMS[f],
                             note=absent.get(f, "no comparison in the factors file"),
                             weights=weights(entries)))
            continue
        for i in rows:
            row = factors.isel(comparison=i)
            c = row.sel(band="all")
            a, b = str(c["model_a"].values), str(c["model_b"].values)
            sa, sb = str(c["setting_a"].values), str(c["setting_b"].values)
            scope = join_scope(str(c["comparison_dataset"].values),
                           f"{a} vs {b}" if a != b else a,
                           f"{sa} vs {sb}" if f == "few_shot" else sa)
            n = int(c["n_tested"].values) if "n_tested" in c else 0
            est = float(c["delta_ips"].values)
            ci = c["delta_ips_ci"].values.astype(float)
            p = float(c["p_value"].values)
            mde = float(c["delta_ips_mde"].values) if "delta_ips_mde" in c else np.nan
            rows = [Claim(claim, scope, FACTOR_CLAIMS[f], est, float(ci[0]), float(ci[1]),
                          n, "paired sign-flip on per-sample IPS_A − IPS_B; interval: the "
                          "ΔIPS that test does not reject", p,
                          directional(est, p, -1),
                          join_notes("estimate: ΔIPS = (IPS_A − IPS_B)/IPS_B", few_samples_note(n)), mde=mde),
                    _beyond_null(c, f, scope), _low_falls_most(row, f, scope)]
            w = weights(e for e in entries if e.model in (a, b))
            out += [replace(_controlled(r, c), weights=w) for r in rows]
    return out


#: the factors file's control variables of a factor row, of its row beyond the null and of
#: its low-band row: (the control's estimate, its p, the p of trained − control, its n, its
#: mean, its mde, the estimate on each draw)
_CONTROL_VARIABLES = {
    "": ("control_delta_ips", "control_p_value", "control_p", "n_control",
         "control_difference", "control_mde", "control_delta_ips_draws"),
    "_beyond_null": ("control_excess", "control_p_excess", "control_p_excess_difference",
                     "n_control_excess", "control_excess_difference", "control_excess_mde",
                     "control_excess_draws"),
    "_low_falls_most": ("control_low_gap", "control_p_low_gap",
                        "control_p_low_gap_difference", "n_control_low_gap",
                        "control_low_gap_difference", "control_low_gap_mde",
                        "control_low_gap_draws"),
}


def _controlled(r: Claim, c: xr.Dataset) -> Claim:
    """A factor row beside the same comparison of the two models' controls
    (`ips.comparisons.beside_controls`): against the draws' estimates where there
    are two or more, else by the sign-flip test of the per-sample difference of the two
    sides' differences (of IPS, of the excess beyond the null, or of the two low-band
    gaps). A factors file written before draws and mdes has neither (NaN, ())."""
    names = next((v for k, v in _CONTROL_VARIABLES.items()
                  if r.claim in {f"factor_{f}{k}" for f in FACTORS}), None)
    if names is None or names[3] not in c:
        return decide(r, np.nan, "", None, "samples")

    def value(name: str) -> float:
        return float(c[name]) if name in c else np.nan

    drawn = c[names[6]].values.astype(float).ravel() if names[6] in c else ()
    prefix = names[0].removesuffix("_delta_ips")  # control, control_excess, control_low_gap
    return decide_stored(r, value(names[0]), value(names[1]), value(names[2]),
                         int(c[names[3]]), value(names[4]), -1, value(names[5]), drawn,
                         stored_test(c, prefix, drawn))


def _low_falls_most(c: xr.Dataset, factor: str, scope: str) -> Claim:
    """Does the factor lower low-order IPS most (one comparison, every band)?"""
    claim = f"factor_{factor}_low_falls_most"
    paper = ("the factor lowers IPS most in the low-order band: ΔIPS^low below ΔIPS^mid and "
             "ΔIPS^high (Section 4.3, Fig. 10)")
    if "low_gap_p" not in c:
        return Claim(claim, scope, paper, note="no low_gap_p in the factors file (an older "
                     "file)")
    n = int(c["low_gap_n"].values)
    if n == 0:
        return Claim(claim, scope, paper, note="no sample valued in the low, mid and high "
                     "bands on both sides")
    ci = c["low_gap_ci"].values.astype(float)
    est, p = float(c["low_gap"].values), float(c["low_gap_p"].values)
    return Claim(claim, scope, paper, est, float(ci[0]), float(ci[1]), n,
                 "paired sign-flip on per-sample ΔIPS^low − ΔIPS^mid and ΔIPS^low − ΔIPS^high "
                 "(ΔIPS_s = (A_s − B_s)/mean B per band), Bonferroni over the two: supported "
                 "when both lie below 0, contradicted when either lies above; interval: the "
                 "larger gap's, each inverted at 1 − α/2", p, directional(est, p, -1),
                 note=join_notes("estimate: max(ΔIPS^low − ΔIPS^mid, ΔIPS^low − ΔIPS^high) on the "
                             "samples valued in the three bands", few_samples_note(n)),
                 mde=float(c["low_gap_mde"].values))


def _beyond_null(c: xr.Dataset, factor: str, scope: str) -> Claim:
    """Does the factor lower IPS beyond how it moves the matched-size null (one comparison,
    band all)?"""
    claim, paper = f"factor_{factor}_beyond_null", (
        f"(not in the paper) {FACTOR_CLAIMS[factor]}, beyond the difference of the two sides' "
        "matched-size nulls")
    n = int(c["n_excess"].values) if "n_excess" in c else 0
    if n == 0:
        return Claim(claim, scope, paper, note="no per-sample matched-size null on both sides "
                     "(nulls.draws = 0 or nulls.matched: false, or an older file)")
    est, p = float(c["excess"].values), float(c["p_excess"].values)
    return Claim(claim, scope, paper, est, n=n,
                 test="paired sign-flip on per-sample (IPS_A − IPS_B) − (null_A − null_B)",
                 p_value=p, verdict=directional(est, p, -1),
                 note=join_notes("estimate: mean per-sample (IPS_A − IPS_B) − (null_A − null_B); "
                             f"ΔIPS of the nulls {float(c['delta_null'].values):+.3f}", few_samples_note(n)),
                 mde=float(c["excess_mde"].values) if "excess_mde" in c else np.nan)


ARCHITECTURE_NAMES = {"dense": "dense", "moe": "MoE"}


PERTURBATION_CLAIMS = {
    "dense": ("adding", "dense models are more sensitive to adding tokens than to altering "
              "them: 9 of the 10 dense models (Appendix G, Table 4)"),
    "moe": ("altering", "MoE models are more sensitive to altering tokens than to adding "
            "them: 5 of the 6 MoE models (Appendix G, Table 5)"),
}


def perturbation_claims(rows: Sequence[dict], datasets: Sequence[str],
                        control_of: dict[str, str | None] | None = None, draws: int = 9999,
                        seed: int = 0, draw_of: dict[str, int] | None = None) -> list[Claim]:
    """Appendix G: per dataset, how many dense (MoE) models have a higher mean IPS over the
    0-shot pairs that add tokens (alter tokens) than over those that alter (add) them, among
    the models valued on both kinds (`more_sensitive` of `perturbation_types_*.csv`; a tie
    counts for neither side and leaves n); beside the same share among their controls
    (`control_of`: model → the model it is a control of, or None; `draw_of`: a control →
    its draw, 1 if not given), draw by draw (`controls.against`)."""
    control_of, draw_of = control_of or {}, draw_of or {}
    out = []
    for d in datasets:
        for arch in PERTURBATION_CLAIMS:
            mine = [r for r in rows if r["dataset"] == d and r["architecture"] == arch]
            trained = [r for r in mine if not control_of.get(r["model"])]
            drawn: dict[int, list[dict]] = {}
            for r in mine:
                if control_of.get(r["model"]):
                    drawn.setdefault(draw_of.get(r["model"], 1), []).append(r)
            row = _count_row(trained, d, arch, control_of,
                             WEIGHTS[any(r["weights"] == WEIGHTS[1] for r in trained)])
            out.append(against(row, [_count_row(drawn[k], d, arch, control_of, WEIGHTS[1])
                                     for k in sorted(drawn)], "models", draws, seed))
    return out


def _count_row(rows: list[dict], dataset: str, arch: str, control_of: dict[str, str | None],
               weights_: str) -> Claim:
    """The count row of `perturbation_claims` over `rows` (one architecture), its records
    per model (1: more sensitive to the claim's side) under the trained model's name."""
    side, paper = PERTURBATION_CLAIMS[arch]
    told = [r for r in rows if r["more_sensitive"]]
    k = sum(r["more_sensitive"] == side for r in told)
    row = binomial_row(f"perturbation_{arch}_{side}", dataset, paper, k, len(told),
                       f"more sensitive to {side} tokens",
                       f"no {ARCHITECTURE_NAMES[arch]} model with IPS on both altering and "
                       "adding 0-shot pairs", weights_)
    units = tuple(control_of.get(r["model"]) or r["model"] for r in told)
    records = np.array([float(r["more_sensitive"] == side) for r in told])
    return replace(row, spec=ControlSpec(units, records, reference=0.5))
