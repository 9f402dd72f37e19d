"""The paper's claims, tested on the configured models (`claims.csv`; paper Sections 3-4).

Each row tests one claim of the paper in one *scope* (a model on a dataset, a dataset across
models, or one factor comparison) and gives the paper's statement, our estimate with its interval
and the number of samples (or models) ``n`` behind it, the test, its p-value and a verdict:

* **directional** claims (an effect has a sign: IPS^low < IPS^mid, few-shot lowers IPS, …):
  ``supported`` when the estimate has the paper's sign and p < ``ALPHA``, ``contradicted`` when
  it has the other sign and p < ``ALPHA``, else ``undecided``. The p-values are two-sided paired
  sign-flip permutation p on per-sample differences (`ips.uncertainty.sign_flip_test`); where one
  claim makes several tests in one scope (the order bands), they are Holm-adjusted over the
  three band tests and the test column says so.
* **level** claims (a share near the paper's, an error below a bound): the paper's statement is
  read as a range [lo, hi] (the reading is in the ``paper`` column); ``supported`` when the
  bootstrap interval lies inside it, ``contradicted`` when it lies wholly outside, else
  ``undecided``. No p-value. A percentile bootstrap interval from fewer than
  ``ips.uncertainty.MIN_RELIABLE_N`` samples undercovers (from one sample it has width 0), so
  such a row stays ``undecided`` whatever its interval.
* **count** claims (k of n models behave alike: Appendix G): the share k/n with its exact
  (Clopper-Pearson) interval and the two-sided exact binomial test of k against n/2, the
  count noise alone gives (each model's side a fair coin); ``supported`` / ``contradicted``
  as a directional claim on k/n − 1/2.
* ``untestable`` when the configured models, datasets or settings cannot test the claim; the
  ``note`` says why (e.g. a correlation across models needs at least 3 models, a binomial
  test at least 6).

Every row has ``weights``: ``random`` when a model it rests on has random weights (its
numbers measure nothing about an LLM), else ``trained`` (`ips.metrics_file.WEIGHTS`); a row
that rests on no one model (an absent factor) rests on the run's models.

``ALPHA = 0.05``. Rows are not adjusted across scopes: each row answers its own question, and a
reader who combines rows (e.g. "every model") should adjust for that. Rows whose interval or test
rests on fewer than ``ips.uncertainty.MIN_RELIABLE_N`` samples say so in ``note``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, fields, replace
from itertools import permutations
from typing import Sequence

import numpy as np
import xarray as xr

from ips import uncertainty
from ips.factors import FACTORS
from ips.metrics_file import WEIGHTS, Entry, weights
from ips.templates import ZERO_SHOT

ALPHA = 0.05
"""Significance level of every directional verdict."""
VERDICTS = ("supported", "contradicted", "undecided", "untestable")
MAIN_GROUP = ZERO_SHOT
SPARSE_SHARE = 0.10
"""'Only a small set of interactions is salient' read as: at most this share of Ω above τ."""
MATCHING_NRMSE = 0.05
"""'With the top 5% of interactions the matching error is minimal' read as: normalised RMS
error (÷ range of v) at most this."""
OPPOSITE_RANGE = (0.40, 0.60)
"""'Approximately 50% opposite sign' (prediction changed) read as 40-60%."""
SIMILAR_RANGE = (0.027, 0.068)
"""'Same sign, similar effect: a mere 2.7%-6.8%' (prediction changed), the paper's range."""
TAU_SPEARMAN = 0.9
"""'Rankings stable across τ' (paper: mean Spearman 0.9905) read as: mean Spearman ≥ this."""
MIN_MODELS = 3
"""Correlations across models need at least this many models."""


@dataclass(frozen=True)
class Claim:
    """One row of `claims.csv`."""

    claim: str
    scope: str
    paper: str
    estimate: float = math.nan
    ci_low: float = math.nan
    ci_high: float = math.nan
    n: int = 0
    test: str = ""
    p_value: float = math.nan
    verdict: str = "untestable"
    note: str = ""
    weights: str = WEIGHTS[0]


COLUMNS = tuple(f.name for f in fields(Claim))


# ------------------------------------------------------------------------------- verdicts


def directional(estimate: float, p: float, sign: int) -> str:
    """Verdict of a claim that the effect has sign ``sign`` (−1 or +1)."""
    if not (np.isfinite(estimate) and np.isfinite(p)) or estimate == 0 or p >= ALPHA:
        return "undecided"
    return "supported" if np.sign(estimate) == sign else "contradicted"


def within(ci: Sequence[float], lo: float, hi: float, n: int) -> str:
    """Verdict of a claim that a quantity lies in [lo, hi], from its interval over n samples."""
    a, b = (float(x) for x in ci)
    if n < uncertainty.MIN_RELIABLE_N or not (np.isfinite(a) and np.isfinite(b)):
        return "undecided"
    if lo <= a and b <= hi:
        return "supported"
    if b < lo or a > hi:
        return "contradicted"
    return "undecided"


def _few(n: int, level: bool = False) -> str:
    """What n samples allow: a bootstrap interval (``level``) or a sign-flip test."""
    if not 0 < n < uncertainty.MIN_RELIABLE_N:
        return ""
    if level:
        return (f"fewer than {uncertainty.MIN_RELIABLE_N} samples: too few to decide from a "
                "bootstrap interval")
    if 2 / 2**n >= ALPHA:  # the exact two-sided sign flip: both all-same-sign vectors
        return (f"with {n} samples the smallest attainable p is 2/2^{n} = {2 / 2**n:.3g} ≥ "
                f"{ALPHA:g}: this test cannot decide, whatever the data")
    return f"fewer than {uncertainty.MIN_RELIABLE_N} samples: interval and test are rough"


def _notes(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


def _scope(*parts: str) -> str:
    return " / ".join(p for p in parts if p)


# ----------------------------------------------------------------------- per-sample claims


def bootstrap_settings(e: Entry) -> tuple[int, int, float]:
    """(seed, n_boot, level) recorded in a metrics file, so intervals match its tables."""
    b = json.loads(e.ds.attrs.get("bootstrap", "{}") or "{}")
    return (int(b.get("seed", 0)), int(b.get("n_boot", uncertainty.N_BOOT)),
            float(b.get("level", uncertainty.LEVEL)))


def _level_row(e: Entry, claim: str, paper: str, x: np.ndarray, lo: float, hi: float,
               what: str) -> Claim:
    """A level claim on per-sample values x (S,): bootstrap mean and interval vs [lo, hi]."""
    seed, n_boot, level = bootstrap_settings(e)
    x = np.asarray(x, float)
    n = int(np.isfinite(x).sum())
    if n == 0:
        return Claim(claim, _scope(e.model, e.dataset), paper, note=f"no sample has {what}")
    est, ci = uncertainty.bootstrap_ci(x, n_boot=n_boot, level=level, seed=seed)
    return Claim(claim, _scope(e.model, e.dataset), paper, float(est), float(ci[0]),
                 float(ci[1]), n, f"{level:.0%} bootstrap interval vs [{lo:g}, {hi:g}]",
                 verdict=within(ci, lo, hi, n), note=_few(n, level=True))


def sparsity_claims(e: Entry) -> list[Claim]:
    """Salient share and matching error with the top 5% (paper Section 3.1, Fig. 2)."""
    ds = e.ds
    out = []
    paper = (f"only a small set of interactions is salient (Fig. 2a); read as: at most "
             f"{SPARSE_SHARE:.0%} of Ω has |Ĩ| > τ")
    if "sample_salient_share" in ds:
        out.append(_level_row(e, "sparse_salient_share", paper, ds["sample_salient_share"].values,
                              0.0, SPARSE_SHARE, "interactions"))
    else:
        out.append(Claim("sparse_salient_share", _scope(e.model, e.dataset), paper,
                         note="metrics file has no per-sample salient share; rerun ips metrics"))
    paper = (f"the top 5% of interactions reproduce v with minimal error (Fig. 2b); read as: "
             f"normalised RMS error ≤ {MATCHING_NRMSE:g}")
    if "sample_matching_nrmse" in ds:
        x = ds["sample_matching_nrmse"].sel(keep=0.05, method="nearest").values
        out.append(_level_row(e, "sparse_matching_top5", paper, x, 0.0, MATCHING_NRMSE,
                              "a matching error"))
    else:
        out.append(Claim("sparse_matching_top5", _scope(e.model, e.dataset), paper,
                         note="metrics file has no per-sample matching error; rerun ips metrics"))
    return out


def _share_ci(counts: np.ndarray, types: Sequence[int], seed: int, n_boot: int,
              level: float) -> tuple[float, np.ndarray, int]:
    """Pooled share of ``types`` among all typed interactions, with a bootstrap interval over
    samples. counts: (S, type) per-sample counts of one group and one `changed` value."""
    num = counts[:, list(types)].sum(axis=1)
    den = counts.sum(axis=1)
    keep = den > 0
    num, den = num[keep], den[keep]
    n = int(keep.sum())
    if n == 0:
        return math.nan, np.full(2, np.nan), 0
    w = uncertainty.resample_counts(n, n_boot, seed)
    with np.errstate(invalid="ignore", divide="ignore"):
        reps = (w @ num) / (w @ den)
    est = float(num.sum() / den.sum())
    return est, uncertainty.percentile_ci(reps, level, est), n


def type_claims(e: Entry) -> list[Claim]:
    """Interaction types of the 0-shot template pairs (paper Section 3.3, Fig. 3b)."""
    ds = e.ds
    scope = _scope(e.model, e.dataset)
    specs = [
        ("types_changed_opposite", "yes", (0,), OPPOSITE_RANGE,
         "prediction changed: about 50% of salient interactions reverse their sign; read as "
         f"{OPPOSITE_RANGE[0]:.0%}-{OPPOSITE_RANGE[1]:.0%}"),
        ("types_changed_similar", "yes", (2,), SIMILAR_RANGE,
         "prediction changed: a mere 2.7%-6.8% are 'same sign, similar effect'"),
        ("types_unchanged_unstable", "no", (0, 1), (0.5, 1.0),
         "prediction unchanged: most salient interactions are still unstable (opposite sign "
         "or a different effect); read as more than 50%"),
    ]
    if "sample_type_count" not in ds or MAIN_GROUP not in ds["group"].values:
        why = ("metrics file has no per-sample type counts; rerun ips metrics"
               if "sample_type_count" not in ds else f"no {MAIN_GROUP} group")
        return [Claim(c, scope, p, note=why) for c, *_, p in specs]
    seed, n_boot, level = bootstrap_settings(e)
    out = []
    for claim, changed, types, (lo, hi), paper in specs:
        counts = (ds["sample_type_count"].sel(group=MAIN_GROUP, changed=changed)
                  .transpose("sample", "type").values.astype(float))
        est, ci, n = _share_ci(counts, types, seed, n_boot, level)
        if n == 0:
            out.append(Claim(claim, scope, paper, note=f"no 0-shot template pair with the "
                             f"prediction {'changed' if changed == 'yes' else 'unchanged'}"))
            continue
        out.append(Claim(claim, scope, paper, est, float(ci[0]), float(ci[1]), n,
                         f"{level:.0%} bootstrap interval over samples vs [{lo:g}, {hi:g}]",
                         verdict=within(ci, lo, hi, n),
                         note=_notes("share of salient interactions pooled over samples",
                                     _few(n, level=True))))
    return out


def order_claims(e: Entry) -> list[Claim]:
    """IPS^low < IPS^mid < IPS^high (paper Section 4.3, Fig. 9)."""
    ds = e.ds
    scope = _scope(e.model, e.dataset)
    specs = [("order_low_below_mid", "low-mid", "IPS^low < IPS^mid for every model (Fig. 9)"),
             ("order_mid_below_high", "mid-high", "IPS^mid < IPS^high for every model (Fig. 9)")]
    if "band_p_holm" not in ds or MAIN_GROUP not in ds["group"].values:
        return [Claim(c, scope, p, note="metrics file has no band tests; rerun ips metrics")
                for c, _, p in specs]
    out = []
    for claim, pair, paper in specs:
        sel = dict(group=MAIN_GROUP, band_pair=pair)
        est = float(ds["band_diff"].sel(**sel))
        p = float(ds["band_p_holm"].sel(**sel))
        n = int(ds["band_n"].sel(**sel))
        out.append(Claim(claim, scope, paper, est, n=n,
                         test="paired sign-flip on per-sample differences, Holm-adjusted over "
                         "the 3 band tests", p_value=p, verdict=directional(est, p, -1),
                         note=_notes(f"estimate: mean per-sample IPS^{pair.split('-')[0]} − "
                                     f"IPS^{pair.split('-')[1]}",
                                     _few(n))))
    return out


def _group_pair_samples(e: Entry, group: str, keys: set[frozenset]) -> np.ndarray:
    """Per-sample mean (band all) of ips over the pairs of ``group`` whose templates are in
    ``keys``; NaN where the sample has none."""
    ds = e.ds
    template = dict(zip(map(str, ds["condition"].values), map(str, ds["template"].values)))
    rows = [i for i, (g, a, b) in enumerate(zip(ds["pair_group"].values.astype(str),
                                                ds["pair_a"].values, ds["pair_b"].values))
            if g == group and frozenset((template[str(a)], template[str(b)])) in keys]
    x = ds["sample_pair_ips"].sel(band="all").transpose("sample", "pair").values[:, rows]
    with np.errstate(invalid="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return np.nanmean(x, axis=1) if rows else np.full(x.shape[0], np.nan)


def _shot_groups(e: Entry) -> dict[int, str]:
    out = {}
    for g in e.ds["group"].values.astype(str):
        if g.endswith("shot") and g[:-4].isdigit():
            out[int(g[:-4])] = g
    return out


def few_shot_curve_claim(e: Entry, permutations_: int, seed: int) -> Claim:
    """'The most substantial drop occurs from 0-shot to 1-shot' (paper Section 4.2, Fig. 8)."""
    scope = _scope(e.model, e.dataset)
    paper = ("the largest drop in IPS is from 0-shot to 1-shot; more examples reduce it more "
             "slowly (Fig. 8)")
    groups = _shot_groups(e)
    more = sorted(k for k in groups if k > 1)
    if 0 not in groups or 1 not in groups or not more or "sample_pair_ips" not in e.ds:
        return Claim("few_shot_most_from_0_to_1", scope, paper,
                     note="needs 0-shot, 1-shot and a larger k (config few_shot.shots)")
    k = more[-1]
    ds = e.ds
    template = dict(zip(map(str, ds["condition"].values), map(str, ds["template"].values)))
    keys = {frozenset((template[str(a)], template[str(b)]))
            for g, a, b in zip(ds["pair_group"].values.astype(str), ds["pair_a"].values,
                               ds["pair_b"].values) if g == groups[k]}
    i0, i1, ik = (_group_pair_samples(e, groups[j], keys) for j in (0, 1, k))
    d = (i0 - i1) - (i1 - ik)
    t = uncertainty.sign_flip_test(d, draws=permutations_, seed=seed)
    return Claim("few_shot_most_from_0_to_1", scope, paper, float(t.mean_difference), n=int(t.n),
                 test=f"paired sign-flip ({t.method}) on per-sample (IPS0 − IPS1) − "
                 f"(IPS1 − IPS{k}), same template pairs", p_value=float(t.p_value),
                 verdict=directional(float(t.mean_difference), float(t.p_value), +1),
                 note=_notes("estimate: mean per-sample difference of the two drops",
                             _few(int(t.n))))


# ------------------------------------------------------------- against the nulls (ips.nulls)

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
}
#: the rows of `precision_claims` (metrics files with a precision run only)
PRECISION_CLAIMS = {
    "template_above_precision_null": (
        "(not in the paper; the paper assumes it) the template IPS exceeds the IPS that "
        "rounding alone gives (the precision null: the same prompts in another precision)"),
}


def _paired_row(e: Entry, claim: str, d: np.ndarray, sign: int, what: str, draws: int,
                seed: int, where: str = "") -> Claim:
    """A directional row on per-sample differences d (S,): their mean with a bootstrap
    interval over samples, and the two-sided paired sign-flip p."""
    boot_seed, n_boot, level = bootstrap_settings(e)
    t = uncertainty.sign_flip_test(d, draws=draws, seed=seed)
    n = int(t.n)
    _, ci = (uncertainty.bootstrap_ci(d, n_boot=n_boot, level=level, seed=boot_seed) if n
             else (None, np.full(2, np.nan)))
    est = float(t.mean_difference)
    paper = NULL_CLAIMS.get(claim) or PRECISION_CLAIMS[claim]
    return Claim(claim, _scope(e.model, e.dataset, MAIN_GROUP, where), paper, est,
                 float(ci[0]), float(ci[1]), n,
                 f"paired sign-flip ({t.method}) on per-sample {what}; interval: bootstrap",
                 float(t.p_value), directional(est, float(t.p_value), sign),
                 _notes(f"estimate: mean per-sample {what}", _few(n)))


def null_claims(e: Entry, draws: int, seed: int) -> list[Claim]:
    """Each (model, dataset)'s IPS read against its nulls (main group, band all): below the
    matched-size null, above the Gaussian null at every level, and its association with the
    range of v over samples."""
    ds = e.ds
    scope = _scope(e.model, e.dataset, MAIN_GROUP)
    if "sample_null_ips" not in ds or MAIN_GROUP not in ds["group"].values:
        return [Claim(c, scope, p, note="metrics file has no null IPS (nulls.draws = 0, a "
                      "sparse fit, or an older file); rerun ips metrics")
                for c, p in NULL_CLAIMS.items()]
    ips = ds["sample_ips"].sel(group=MAIN_GROUP, band="all").values.astype(float)
    out = []
    if "sample_matched_null_ips" in ds:
        matched = ds["sample_matched_null_ips"].sel(group=MAIN_GROUP, band="all").values
        out.append(_paired_row(e, "template_below_matched_null", ips - matched, -1,
                               "IPS − matched-size null IPS", draws, seed))
        out += _order_beyond_null(e, draws, seed)
    for c in ds["null_level"].values:
        null = ds["sample_null_ips"].sel(group=MAIN_GROUP, null_level=c, band="all").values
        out.append(_paired_row(e, "template_above_gaussian_null", ips - null, +1,
                               "IPS − Gaussian null IPS", draws, seed,
                               f"noise {float(c):.3g} × range of v"))
    members = list(json.loads(ds.attrs["groups"])[MAIN_GROUP])
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
                         note=_notes("n counts samples", _unattainable(n))))
    return out


def _order_beyond_null(e: Entry, draws: int, seed: int) -> list[Claim]:
    """The order bands of IPS minus its matched-size null (the noise-aware reading of
    `order_claims`, beside it): per sample (IPS − N)^lo − (IPS − N)^hi, Holm-adjusted over the
    two rows as `order_claims` adjusts over its band tests."""
    x = (e.ds["sample_ips"] - e.ds["sample_matched_null_ips"]).sel(group=MAIN_GROUP)
    rows = [_paired_row(e, f"order_{lo}_below_{hi}_beyond_null",
                        (x.sel(band=lo) - x.sel(band=hi)).values, -1,
                        f"(IPS − matched null)^{lo} − (IPS − matched null)^{hi}", draws, seed)
            for lo, hi in (("low", "mid"), ("mid", "high"))]
    adjusted = uncertainty.holm([r.p_value for r in rows])
    return [replace(r, p_value=float(p), verdict=directional(r.estimate, float(p), -1),
                    test=f"{r.test}; Holm-adjusted over the 2 rows")
            for r, p in zip(rows, adjusted)]


def precision_claims(e: Entry, draws: int, seed: int) -> list[Claim]:
    """Per second precision and band: is the template IPS above the precision null, on the
    samples that were scored again (paired over samples)?"""
    ds = e.ds
    if "sample_precision_null_ips" not in ds:
        return []
    own = json.loads(ds.attrs.get("precision", "{}") or "{}").get("dtype", "?")
    out = []
    for dtype in ds["precision"].values:
        for band in ds["band"].values:
            ips = ds["sample_ips"].sel(group=MAIN_GROUP, band=band).values.astype(float)
            null = ds["sample_precision_null_ips"].sel(precision=dtype, band=band).values
            out.append(_paired_row(e, "template_above_precision_null", ips - null, +1,
                                   "IPS − precision null IPS", draws, seed,
                                   f"{own} vs {dtype}, band {band}"))
    return out


# ------------------------------------------------------------------ claims across models


def spearman_permutation(x: np.ndarray, y: np.ndarray, draws: int = 9999,
                         seed: int = 0) -> tuple[float, float]:
    """Spearman ρ and its two-sided permutation p (exact over all n! pairings for n ≤ 8,
    else Monte Carlo with p = (b+1)/(B+1))."""
    from scipy.stats import rankdata

    rx, ry = rankdata(x), rankdata(y)

    def rho(a, b):
        a, b = a - a.mean(), b - b.mean()
        den = math.sqrt(float(a @ a) * float(b @ b))
        return float(a @ b) / den if den > 0 else math.nan

    r = rho(rx, ry)
    if not np.isfinite(r):
        return r, math.nan
    n = len(rx)
    if n <= 8:
        stats = np.array([rho(rx, ry[list(p)]) for p in permutations(range(n))])
        return r, float(np.mean(np.abs(stats) >= abs(r) - 1e-12))
    rng = np.random.default_rng(seed)
    b = sum(abs(rho(rx, rng.permutation(ry))) >= abs(r) - 1e-12 for _ in range(draws))
    return r, (b + 1) / (draws + 1)


def consistency_claims(entries: list[Entry], datasets: list[str], draws: int,
                       seed: int) -> list[Claim]:
    """IPS correlates negatively with output consistency across models (Section 3.4, Fig. 4b)."""
    paper = "IPS correlates negatively with output consistency across models (Fig. 4b)"
    out = []
    for d in datasets:
        rows = [(float(e.ds["ips"].sel(group=MAIN_GROUP, band="all")),
                 float(e.ds["output_consistency"].sel(group=MAIN_GROUP)))
                for e in entries if e.dataset == d and MAIN_GROUP in e.ds["group"].values]
        rows = [r for r in rows if all(np.isfinite(r))]
        if len(rows) < MIN_MODELS:
            out.append(Claim("ips_vs_consistency", d, paper, n=len(rows),
                             note=f"{len(rows)} model(s); a correlation across models needs at "
                             f"least {MIN_MODELS}"))
            continue
        x, y = np.array(rows).T
        r, p = spearman_permutation(x, y, draws, seed)
        out.append(Claim("ips_vs_consistency", d, paper, r, n=len(rows),
                         test="Spearman ρ across models, permutation p", p_value=p,
                         verdict=directional(r, p, -1),
                         note=_notes("n counts models", _unattainable(len(rows), "models"))))
    return out


def _unattainable(n: int, what: str = "samples") -> str:
    """Why a two-sided exact Spearman test over `n` models or samples cannot decide: its
    smallest attainable p (both perfect orderings, 2 of n! pairings) is not below ALPHA."""
    if n > 8 or 2 / math.factorial(n) < ALPHA:
        return ""
    return (f"with {n} {what} the smallest attainable p is 2/{n}! = {2 / math.factorial(n):.3f}"
            f" ≥ {ALPHA:g}: this test cannot decide, whatever the data")


def tau_claims(factors: xr.Dataset, datasets: list[str]) -> list[Claim]:
    """Model rankings are robust to τ (Section 3.4, Table 2/3)."""
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
        out.append(Claim("tau_robustness", d, paper, r, n=n,
                         test=f"descriptive: mean Spearman vs {TAU_SPEARMAN:g} (no test)",
                         verdict="supported" if r >= TAU_SPEARMAN else "contradicted",
                         note="n counts models; with few models a rank correlation is coarse"))
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
            scope = _scope(str(c["comparison_dataset"].values),
                           f"{a} vs {b}" if a != b else a,
                           f"{sa} vs {sb}" if f == "few_shot" else sa)
            n = int(c["n_tested"].values) if "n_tested" in c else 0
            est = float(c["delta_ips"].values)
            ci = c["delta_ips_ci"].values.astype(float)
            p = float(c["p_value"].values)
            rows = [Claim(claim, scope, FACTOR_CLAIMS[f], est, float(ci[0]), float(ci[1]),
                          n, "paired sign-flip on per-sample IPS_A − IPS_B; interval: "
                          "paired bootstrap of ΔIPS", p,
                          directional(est, p, -1),
                          _notes("estimate: ΔIPS = (IPS_A − IPS_B)/IPS_B", _few(n))),
                    _beyond_null(c, f, scope), _low_falls_most(row, f, scope)]
            w = weights(e for e in entries if e.model in (a, b))
            out += [replace(r, weights=w) for r in rows]
    return out


def _low_falls_most(c: xr.Dataset, factor: str, scope: str) -> Claim:
    """Does the factor lower low-order IPS most (one comparison, every band)?"""
    claim = f"factor_{factor}_low_falls_most"
    paper = ("the factor lowers IPS most in the low-order band: ΔIPS^low below ΔIPS^mid and "
             "ΔIPS^high (Section 4.3, Fig. 10)")
    if "low_gap" not in c:
        return Claim(claim, scope, paper, note="no low_gap in the factors file (an older file)")
    ci = c["low_gap_ci"].values.astype(float)
    n = int(min(c["n_tested"].sel(band=b) for b in ("low", "mid", "high")))
    return Claim(claim, scope, paper, float(c["low_gap"].values), float(ci[0]), float(ci[1]),
                 n, "paired bootstrap interval of max(ΔIPS^low − ΔIPS^mid, ΔIPS^low − "
                 "ΔIPS^high); supported when it lies below 0, contradicted when above",
                 verdict=within(ci, -math.inf, 0.0, n),
                 note=_notes("estimate: max(ΔIPS^low − ΔIPS^mid, ΔIPS^low − ΔIPS^high)",
                             _few(n, level=True)))


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
                 note=_notes("estimate: mean per-sample (IPS_A − IPS_B) − (null_A − null_B); "
                             f"ΔIPS of the nulls {float(c['delta_null'].values):+.3f}", _few(n)))


# ------------------------------------------------- appendix tables (ips.figures.appendix)

ARCHITECTURE_NAMES = {"dense": "dense", "moe": "MoE"}
PERTURBATION_CLAIMS = {
    "dense": ("adding", "dense models are more sensitive to adding tokens than to altering "
              "them: 9 of the 10 dense models (Appendix G, Table 4)"),
    "moe": ("altering", "MoE models are more sensitive to altering tokens than to adding "
            "them: 5 of the 6 MoE models (Appendix G, Table 5)"),
}


def binomial_row(claim: str, scope: str, paper: str, k: int, n: int, what: str,
                 empty: str, weights_: str) -> Claim:
    """A count claim: k of n models behave as the paper says. Estimate k/n with its exact
    (Clopper-Pearson) interval; two-sided exact binomial p of k against Binomial(n, 1/2),
    which is what n fair coins (noise alone) give; untestable where even k = 0 or k = n
    could not reach p < ALPHA (the smallest two-sided p is 2/2^n: n ≤ 5). `what` says what
    the k models do, `empty` why n is 0."""
    import scipy.stats

    if n == 0:
        return Claim(claim, scope, paper, note=empty, weights=weights_)
    est = k / n
    if 2 / 2**n >= ALPHA:
        return Claim(claim, scope, paper, est, n=n, note=(
            f"{k} of {n}; with {n} models the smallest two-sided binomial p is 2/2^{n} = "
            f"{2 / 2**n:.3g} ≥ {ALPHA:g}: at least 6 are needed"), weights=weights_)
    test = scipy.stats.binomtest(k, n, 0.5)
    ci = test.proportion_ci(confidence_level=0.95, method="exact")
    p = float(test.pvalue)
    return Claim(claim, scope, paper, est, float(ci.low), float(ci.high), n,
                 "exact two-sided binomial test of k against n/2 (noise alone: each model's "
                 "side a fair coin); interval: Clopper-Pearson 95%", p,
                 directional(est - 0.5, p, +1),
                 f"estimate: share of the n models {what} ({k} of {n}); models counted as "
                 "independent", weights_)


def perturbation_claims(rows: Sequence[dict], datasets: Sequence[str]) -> list[Claim]:
    """Appendix G: per dataset, how many dense (MoE) models have a higher mean IPS over the
    0-shot pairs that add tokens (alter tokens) than over those that alter (add) them, among
    the models valued on both kinds (`more_sensitive` of `perturbation_types.csv`; a tie
    counts for neither side and leaves n)."""
    out = []
    for d in datasets:
        for arch, (side, paper) in PERTURBATION_CLAIMS.items():
            mine = [r for r in rows if r["dataset"] == d and r["architecture"] == arch]
            told = [r for r in mine if r["more_sensitive"]]
            k = sum(r["more_sensitive"] == side for r in told)
            out.append(binomial_row(
                f"perturbation_{arch}_{side}", d, paper, k, len(told),
                f"more sensitive to {side} tokens",
                f"no {ARCHITECTURE_NAMES[arch]} model with IPS on both altering and adding "
                "0-shot pairs",
                WEIGHTS[any(r["weights"] == WEIGHTS[1] for r in mine)]))
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
            scope = _scope(d, f"{r['dense_model'] or '–'} vs {r['moe_model']}")
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
            out.append(Claim(
                "moe_above_dense_matched", scope, MATCHED_CLAIM, est, r["delta_ips_ci_low"],
                r["delta_ips_ci_high"], n, "paired sign-flip on per-sample IPS_dense − "
                "IPS_MoE; interval: paired bootstrap of ΔIPS", p, directional(est, p, -1),
                _notes("estimate: ΔIPS = (IPS_dense − IPS_MoE)/IPS_MoE; activated "
                       f"parameters dense/MoE {r['active_ratio']:.2f}", _few(n)),
                r["weights"]))
    return out


# --------------------------------------------------------------------------------- all


def claims(entries: list[Entry], factors: xr.Dataset, draws: int = 9999, seed: int = 0,
           perturbation: Sequence[dict] = (), matched: Sequence[dict] = ()) -> list[Claim]:
    """Every claim the configured models can test, and those they cannot (with the reason).
    `perturbation`, `matched`: the rows of the Appendix G and Table 7 tables
    (`ips.figures.appendix`), whose numbers the count and matched-MoE claims read."""
    datasets = list(dict.fromkeys(e.dataset for e in entries))
    out: list[Claim] = []

    def marked(rows: list[Claim], mine) -> list[Claim]:
        w = weights(mine)
        return [replace(r, weights=w) for r in rows]

    for e in entries:
        out += marked([*sparsity_claims(e), *type_claims(e), *order_claims(e),
                       *null_claims(e, draws, seed), *precision_claims(e, draws, seed)], [e])
    out += factor_claims(factors, entries)
    out += [replace(few_shot_curve_claim(e, draws, seed), weights=weights([e]))
            for e in entries if e.ds.attrs.get("kind", "mcq") == "mcq"]
    for d in datasets:
        mine = [e for e in entries if e.dataset == d]
        out += marked([*consistency_claims(entries, [d], draws, seed),
                       *tau_claims(factors, [d])], mine)
    out += perturbation_claims(perturbation, datasets)
    out += matched_claims(matched, datasets)
    return out


def summary(rows: Sequence[Claim]) -> dict[str, dict[str, int]]:
    """Verdict counts per claim."""
    out: dict[str, dict[str, int]] = {}
    for r in rows:
        out.setdefault(r.claim, dict.fromkeys(VERDICTS, 0))[r.verdict] += 1
    return out


def markdown(rows: Sequence[Claim]) -> list[str]:
    """The claims as a Markdown table (README of the figures)."""

    def num(x: float, digits: int = 3) -> str:
        return "" if not np.isfinite(x) else f"{x:.{digits}g}"

    lines = ["| claim | scope | estimate | interval | n | p | verdict | note |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ci = (f"[{num(r.ci_low)}, {num(r.ci_high)}]"
              if np.isfinite(r.ci_low) and np.isfinite(r.ci_high) else "")
        lines.append(f"| `{r.claim}` | {r.scope} | {num(r.estimate)} | {ci} | {r.n or ''} | "
                     f"{num(r.p_value, 2)} | **{r.verdict}** | {r.note} |")
    return lines


__all__ = ["ALPHA", "VERDICTS", "Claim", "COLUMNS", "claims", "directional", "within",
           "spearman_permutation", "binomial_row", "bootstrap_settings", "summary",
           "markdown"]
