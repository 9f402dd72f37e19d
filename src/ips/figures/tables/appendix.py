"""The paper's appendix tables, one row per model or model pair: the models (Appendix E.2,
Table 1: `models_table.csv`), IPS by perturbation type (Appendix G, Table 4 of the dense models:
`perturbation_types_dense.csv`, Table 5 of the MoE models: `perturbation_types_moe.csv`),
the representation baseline of every
base/instruct pair (Appendix H, Table 6: `representation_pairs.csv`) and every MoE model
against the dense model of its family and type with the closest activated parameters
(Appendix I, Table 7: `moe_matched.csv`). The claims on them are `ips.comparisons.claims`
(`perturbation_claims`, `matched_claims`); the columns' meaning is in
`ips.figures.text.captions`."""

from __future__ import annotations

import math
import warnings
from collections import defaultdict

import numpy as np

from ips import controls
from ips.analysis import uncertainty
from ips.analysis.uncertainty import MIN_RELIABLE_N, sign_flip_label
from ips.comparisons.claims.verdicts import bootstrap_settings
from ips.config import MODEL_ATTRIBUTES
from ips.figures.numbers import ips_value, label_columns, label_mean
from ips.figures.tables.results import attr_text
from ips.formats.factors import FactorsFile
from ips.formats.metrics import Entry, weights
from ips.prompts.templates import ZERO_SHOT

PERTURBATION_COLUMNS = (
    "model", "dataset", *MODEL_ATTRIBUTES,
    "ips_altering", "altering_ci_low", "altering_ci_high", "n_altering", "pairs_altering",
    "ips_adding", "adding_ci_low", "adding_ci_high", "n_adding", "pairs_adding",
    "more_sensitive", "adding_minus_altering", "p_value", "test", "n_tested", "few_samples",
    "tau", "weights")
REPRESENTATION_COLUMNS = (
    "dataset", "family", "series", "params", "base_model", "instruct_model", "cosine_base",
    "cosine_instruct", "l2_base", "l2_instruct", "ips_base", "ips_instruct", "delta_ips",
    "delta_ips_ci_low", "delta_ips_ci_high", "p_value", "n_tested", "cosine_favours",
    "l2_favours", "ips_favours", "tau", "weights")
MATCHED_COLUMNS = (
    "dataset", "family", "type", "moe_model", "dense_model", "moe_active_params",
    "dense_active_params", "active_ratio", "matched", "ips_moe", "ips_moe_ci_low",
    "ips_moe_ci_high", "ips_dense", "ips_dense_ci_low", "ips_dense_ci_high", "delta_ips",
    "delta_ips_ci_low", "delta_ips_ci_high", "delta_ips_mde", "p_value", "test", "n_tested",
    "few_samples", "control_delta_ips", "control_p_value", "control_p", "n_control",
    "control_difference", "control_mde", "control_delta_ips_draws", "note", "tau", "weights")
MATCH_RATIO = 1.5
"""A dense model matches an MoE model when the larger of their activated parameter counts is
at most this many times the smaller (docs/method.md#tables-factors-figures)."""


def _nanmean(x: np.ndarray, axis: int) -> np.ndarray:
    """Mean over an axis ignoring NaN; NaN (without a warning) where nothing is left."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(x, axis=axis)


def _larger(a: float, b: float, smaller_wins: bool = False) -> str:
    """"a" or "b", whichever is larger (smaller with `smaller_wins`); "" for a tie or NaN."""
    if not (np.isfinite(a) and np.isfinite(b)) or a == b:
        return ""
    return "a" if (a > b) != smaller_wins else "b"


# ------------------------------------------------------------------- Appendix E.2, Table 1

MODEL_COLUMNS = ("model", *MODEL_ATTRIBUTES, "datasets", "control_of", "weights")


def model_rows(entries: list[Entry]) -> list[dict]:
    """One row per model, grouped by family and series as Table 1 is, smallest first: its
    attributes, the datasets it ran on and, for a control, the model it controls."""
    by_model: dict[str, list[Entry]] = {}
    for e in entries:
        by_model.setdefault(e.model, []).append(e)
    rows = [{"model": m, **{k: attr_text(es[0].attrs.get(k)) for k in MODEL_ATTRIBUTES},
             "datasets": " ".join(dict.fromkeys(e.dataset for e in es)),
             "control_of": es[0].control_of or "", "weights": weights(es)}
            for m, es in by_model.items()]
    return sorted(rows, key=lambda r: (r["family"], r["series"], r["control_of"] != "",
                                       _count(r["params"]), r["model"]))


def _count(text: str) -> float:
    """A parameter count as `attr_text` writes it, for sorting; unknown ones last."""
    try:
        return float(text)
    except ValueError:
        return math.inf


# ------------------------------------------------------------------- Appendix G, Tables 4/5



def perturbation_rows(entries: list[Entry], draws: int, seed: int) -> list[dict]:
    """Per model and dataset: mean IPS over the 0-shot pairs that alter tokens and over those
    that add tokens (`ips.figures.numbers.label_mean`), with intervals and samples; which
    is larger (`more_sensitive`, the paper's bold; "" for a tie); and the paired sign-flip test
    of d_s = A_s − L_s over the samples valued on both, where A_s (L_s) is the mean of
    sample s's ips over its adding (altering) pairs — whether the model's difference is more
    than sample noise."""
    rows = []
    for e in entries:
        alt, add = label_mean(e, "altering"), label_mean(e, "adding")
        side = {"a": "adding", "b": "altering", "": ""}[_larger(add.mean, alt.mean)]
        test = uncertainty.sign_flip_test(np.zeros(0))
        if "sample_pair_ips" in e.ds.variables:
            x = e.ds["sample_pair_ips"].sel(band="all").transpose("sample", "pair").values
            d = (_nanmean(x[:, label_columns(e, "adding")], 1)
                 - _nanmean(x[:, label_columns(e, "altering")], 1))
            test = uncertainty.sign_flip_test(d, draws=draws, seed=seed)
        rows.append({
            "model": e.model, "dataset": e.dataset,
            **{k: attr_text(e.attrs.get(k)) for k in MODEL_ATTRIBUTES},
            "ips_altering": alt.mean, "altering_ci_low": alt.ci[0],
            "altering_ci_high": alt.ci[1], "n_altering": alt.n, "pairs_altering": alt.pairs,
            "ips_adding": add.mean, "adding_ci_low": add.ci[0], "adding_ci_high": add.ci[1],
            "n_adding": add.n, "pairs_adding": add.pairs, "more_sensitive": side,
            "adding_minus_altering": test.mean_difference, "p_value": test.p_value,
            "test": sign_flip_label(test.n), "n_tested": test.n,
            "few_samples": test.n < MIN_RELIABLE_N, "tau": float(e.ds.attrs["tau"]),
            "weights": weights([e]),
        })
    return rows


# ----------------------------------------------------------------------- Appendix H, Table 6


def _rep_mean(e: Entry, name: str) -> float:
    """Mean over the 0-shot pairs of a representation measure (`rep_cosine`, `rep_l2`)."""
    ds = e.ds
    if name not in ds or ds.sizes.get("pair", 0) == 0:
        return float("nan")
    x = ds[name].values[ds["pair_group"].values.astype(str) == ZERO_SHOT].astype(float)
    return float(_nanmean(x, 0)) if x.size else float("nan")


def representation_rows(entries: list[Entry], factors: FactorsFile) -> list[dict]:
    """Every base/instruct pair of the `instruct_vs_base` factor (0-shot group) with the
    cosine similarity and L2 distance of each model's final hidden states (mean over the
    0-shot pairs; no interval: the metrics file holds their means only) beside the pair's
    IPS, ΔIPS and its test from the factors file; `*_favours` says which model each measure
    calls more stable (higher cosine, lower L2, lower IPS; "" for a tie)."""
    by_key = {(e.model, e.dataset): e for e in entries}
    comp = factors.comparisons("instruct_vs_base").sel(band="all")
    rows = []
    for i in range(comp.sizes["comparison"]):
        c = comp.isel(comparison=i)
        d = str(c["comparison_dataset"].values)
        inst, base = by_key.get((str(c["model_a"].values), d)), by_key.get(
            (str(c["model_b"].values), d))
        if inst is None or base is None:  # the factors file was made from other files
            continue
        cos = [_rep_mean(e, "rep_cosine") for e in (inst, base)]
        l2 = [_rep_mean(e, "rep_l2") for e in (inst, base)]
        ips = [float(c["ips_a"]), float(c["ips_b"])]
        names = {"a": "instruct", "b": "base", "": ""}
        ci = c["delta_ips_ci"].values.astype(float) if "delta_ips_ci" in c else [np.nan] * 2
        rows.append({
            "dataset": d, **{k: attr_text(base.attrs[k]) for k in ("family", "series", "params")},
            "base_model": base.model, "instruct_model": inst.model,
            "cosine_base": cos[1], "cosine_instruct": cos[0], "l2_base": l2[1],
            "l2_instruct": l2[0], "ips_base": ips[1], "ips_instruct": ips[0],
            "delta_ips": float(c["delta_ips"]), "delta_ips_ci_low": float(ci[0]),
            "delta_ips_ci_high": float(ci[1]),
            "p_value": float(c["p_value"]) if "p_value" in c else float("nan"),
            "n_tested": int(c["n_tested"]) if "n_tested" in c else 0,
            "cosine_favours": names[_larger(*cos)],
            "l2_favours": names[_larger(*l2, smaller_wins=True)],
            "ips_favours": names[_larger(*ips, smaller_wins=True)],
            "tau": float(inst.ds.attrs["tau"]), "weights": weights([inst, base]),
        })
    return rows


# ----------------------------------------------------------------------- Appendix I, Table 7


def matched_pairs(entries: list[Entry]) -> list[tuple[Entry, Entry | None]]:
    """Every MoE model of one dataset with its closest dense model: same family and type
    (base with base, instruct with instruct, as Appendix I pairs them), the least
    |log(active_params_dense / active_params_moe)|, ties to the smaller dense model, then by
    name; None where the family and type have no dense model. Whether the pair is close
    enough is `MATCH_RATIO`'s to say."""
    dense = defaultdict(list)
    for e in entries:
        if e.attrs["architecture"] == "dense":
            dense[e.attrs["family"], e.attrs["type"]].append(e)
    out = []
    for m in (e for e in entries if e.attrs["architecture"] == "moe"):
        pool = dense[m.attrs["family"], m.attrs["type"]]
        best = min(pool, default=None, key=lambda e: (
            abs(math.log(e.attrs["active_params"] / m.attrs["active_params"])),
            e.attrs["active_params"], e.model))
        out.append((m, best))
    return out


def _sample_ips(e: Entry) -> dict[str, float]:
    """Per-sample IPS of the 0-shot group (band all) by sample id; {} without them."""
    if "sample_ips" not in e.ds.variables or ZERO_SHOT not in e.ds["group"].values:
        return {}
    x = e.ds["sample_ips"].sel(group=ZERO_SHOT, band="all").values.astype(float)
    return dict(zip(e.ds["sample"].values.astype(str), x))


def _paired(dense: Entry, moe: Entry, draws: int, seed: int) -> dict:
    """The sign-flip test of the per-sample IPS_dense − IPS_MoE on the sample ids both hold
    (sorted), the interval of ΔIPS that inverts it and the ΔIPS it detects with 80 % power
    (`ips.analysis.uncertainty.sign_flip_interval`, `sign_flip_mde`); intervals of IPS_dense
    and IPS_MoE from a paired bootstrap (the MoE file's bootstrap settings)."""
    a, b = _sample_ips(dense), _sample_ips(moe)
    ids = sorted(set(a) & set(b))
    nan = float("nan")
    if not ids:
        return {"ips_moe_ci_low": nan, "ips_moe_ci_high": nan, "ips_dense_ci_low": nan,
                "ips_dense_ci_high": nan, "delta_ips_ci_low": nan, "delta_ips_ci_high": nan,
                "delta_ips_mde": nan, "p_value": nan, "test": "", "n_tested": 0}
    xa, xb = (np.array([x[s] for s in ids]) for x in (a, b))
    boot_seed, n_boot, level = bootstrap_settings(moe)
    t = uncertainty.paired_test(xa, xb, n_boot=n_boot, level=level, seed=boot_seed)
    flip = uncertainty.sign_flip_interval(xa - xb, xb, level, draws, seed)
    mde = uncertainty.sign_flip_mde_of(xa - xb, xb, level)
    return {"ips_moe_ci_low": float(t.ci_b[0]), "ips_moe_ci_high": float(t.ci_b[1]),
            "ips_dense_ci_low": float(t.ci_a[0]), "ips_dense_ci_high": float(t.ci_a[1]),
            "delta_ips_ci_low": flip.low, "delta_ips_ci_high": flip.high,
            "delta_ips_mde": float(mde), "p_value": flip.p_zero,
            "test": sign_flip_label(flip.n), "n_tested": flip.n}


def _control(dense: Entry, moe: Entry, control_dense: list[Entry], control_moe: list[Entry],
             draws: int, seed: int) -> dict:
    """The matched pair beside its controls (each model's, by draw): on the first draw their
    ΔIPS and its p, and the two-sided sign-flip test of the per-sample (IPS_dense − IPS_MoE)
    − (the controls') (`control_p`, `n_control`, `control_difference` its mean,
    `control_mde` the difference it detects at 80 % power); the controls' ΔIPS on every draw
    both models have (`control_delta_ips_draws`, ";"-joined); NaN / 0 without both controls."""
    out = {"control_delta_ips": np.nan, "control_p_value": np.nan, "control_p": np.nan,
           "n_control": 0, "control_difference": np.nan, "control_mde": np.nan,
           "control_delta_ips_draws": ""}
    by_draw = {e.control_draw: e for e in control_moe}
    pairs = [(c, by_draw[c.control_draw]) for c in control_dense if c.control_draw in by_draw]
    if not pairs:
        return out

    def delta(a: Entry, b: Entry) -> float:
        ips_b = ips_value(b)
        return (ips_value(a) - ips_b) / ips_b if ips_b else np.nan

    first_dense, first_moe = pairs[0]
    mine, theirs = ({s: x[s] - y[s] for s in x if s in y}
                    for x, y in ((_sample_ips(dense), _sample_ips(moe)),
                                 (_sample_ips(first_dense), _sample_ips(first_moe))))
    ids = sorted(set(mine) & set(theirs))
    d = np.array([mine[s] - theirs[s] for s in ids])
    own = uncertainty.sign_flip_test([theirs[s] for s in sorted(theirs)], draws, seed)
    both = uncertainty.sign_flip_test(d, draws, seed)
    return {"control_delta_ips": delta(first_dense, first_moe),
            "control_p_value": own.p_value, "control_p": both.p_value, "n_control": both.n,
            "control_difference": both.mean_difference,
            "control_mde": uncertainty.sign_flip_mde_of(d),
            "control_delta_ips_draws": ";".join(f"{delta(a, b):.17g}" for a, b in pairs)}


def matched_rows(entries: list[Entry], draws: int, seed: int) -> list[dict]:
    """Table 7: per dataset, every MoE model beside its closest dense model
    (`matched_pairs`), `matched` when their activated parameters differ by at most
    `MATCH_RATIO` times; IPS (0-shot, band all) of both from the metrics files, ΔIPS =
    (IPS_dense − IPS_MoE)/IPS_MoE (A = dense, as the dense_vs_moe factor), intervals and test
    from `_paired`; beside it, the same pair's controls (`_control`, `ips.controls.pair`).
    Controls are matched only as the controls of a matched pair."""
    rows = []
    for d in dict.fromkeys(e.dataset for e in entries):
        here = [e for e in entries if e.dataset == d]
        for moe, dense in matched_pairs([e for e in entries
                                         if e.dataset == d and not e.control_of]):
            a = moe.attrs
            base = {"dataset": d, "family": a["family"], "type": a["type"],
                    "moe_model": moe.model, "moe_active_params": attr_text(a["active_params"]),
                    "ips_moe": ips_value(moe), "tau": float(moe.ds.attrs["tau"])}
            if dense is None:
                rows.append({**base, "dense_model": "", "matched": False, "n_tested": 0,
                             "note": f"no dense model of family {a['family']} and type "
                             f"{a['type']}", "weights": weights([moe])})
                continue
            ratio = dense.attrs["active_params"] / a["active_params"]
            matched = max(ratio, 1 / ratio) <= MATCH_RATIO
            ips_d = ips_value(dense)
            delta = (ips_d - base["ips_moe"]) / base["ips_moe"] if base["ips_moe"] else np.nan
            test = _paired(dense, moe, draws, seed)
            rows.append({
                **base, "dense_model": dense.model,
                "dense_active_params": attr_text(dense.attrs["active_params"]),
                "active_ratio": ratio,
                "matched": matched, "ips_dense": ips_d, "delta_ips": delta, **test,
                **_control(dense, moe, controls.pair(dense.model, here),
                           controls.pair(moe.model, here), draws, seed),
                "few_samples": test["n_tested"] < MIN_RELIABLE_N,
                "note": "" if matched else (
                    f"closest dense model has {max(ratio, 1 / ratio):.2f}× the activated "
                    f"parameters (more than {MATCH_RATIO:g}×): not matched"),
                "weights": weights([moe, dense]),
            })
    return rows
