"""Claims on each model's own IPS: sparsity, types, band order, few-shot curve."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ips.analysis import uncertainty
from ips.comparisons.claims.verdicts import (
    ALPHA,
    Claim,
    ControlSpec,
    bootstrap_settings,
    directional,
    few_samples_note,
    join_notes,
    join_scope,
    level_mde,
    within,
)
from ips.formats.metrics import Entry
from ips.prompts.templates import ZERO_SHOT

SPARSE_SHARE = 0.10
"""'Only a small set of interactions is salient' read as: at most this share of Ω above τ."""


MATCHING_NRMSE = 0.05
"""'With the top 5% of interactions the matching error is minimal' read as: normalised RMS
error (÷ range of v) at most this."""


OPPOSITE_RANGE = (0.40, 0.60)
"""'Approximately 50% opposite sign' (prediction changed) read as 40-60%."""


SIMILAR_RANGE = (0.027, 0.068)
"""'Same sign, similar effect: a mere 2.7%-6.8%' (prediction changed), the paper's range."""


def _level_row(e: Entry, claim: str, paper: str, x: np.ndarray, lo: float, hi: float,
               what: str) -> Claim:
    """A level claim on per-sample values x (S,): bootstrap mean and interval vs [lo, hi],
    and the p that interval inverts (`level_p`)."""
    seed, n_boot, level = bootstrap_settings(e)
    x = np.asarray(x, float)
    n = int(np.isfinite(x).sum())
    if n == 0:
        return Claim(claim, join_scope(e.model, e.dataset), paper, note=f"no sample has {what}")
    counts = uncertainty.resample_counts(x.size, n_boot, seed)  # bootstrap_ci's replicates
    est, ci = uncertainty.bootstrap_ci(x, level=level, counts=counts)
    p = level_p(float(est), uncertainty.replicate_means(x, counts), (lo, hi), n)
    return Claim(claim, join_scope(e.model, e.dataset), paper, float(est), float(ci[0]),
                 float(ci[1]), n, f"{level:.0%} bootstrap interval vs [{lo:g}, {hi:g}]; p: the "
                 "bootstrap test it inverts", p,
                 verdict=within(ci, lo, hi, n), note=few_samples_note(n, level=True),
                 mde=level_mde(ci, n), spec=ControlSpec(_ids(e), x, bounds=(lo, hi)))


def _ids(e: Entry) -> tuple[str, ...]:
    return tuple(e.ds["sample"].values.astype(str))


def _pooled_share(records: np.ndarray) -> float:
    """Σ num / Σ den of records (n, 2): a type row's pooled share."""
    return float(records[:, 0].sum() / records[:, 1].sum())


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
        out.append(Claim("sparse_salient_share", join_scope(e.model, e.dataset), paper,
                         note="metrics file has no per-sample salient share; rerun ips metrics"))
    paper = (f"the top 5% of interactions reproduce v with minimal error (Fig. 2b); read as: "
             f"normalised RMS error ≤ {MATCHING_NRMSE:g}")
    if "sample_matching_nrmse" in ds:
        x = ds["sample_matching_nrmse"].sel(keep=0.05, method="nearest").values
        out.append(_level_row(e, "sparse_matching_top5", paper, x, 0.0, MATCHING_NRMSE,
                              "a matching error"))
    else:
        out.append(Claim("sparse_matching_top5", join_scope(e.model, e.dataset), paper,
                         note="metrics file has no per-sample matching error; rerun ips metrics"))
    return out


def _share_ci(counts: np.ndarray, types: Sequence[int], seed: int, n_boot: int,
              level: float, bounds: tuple[float, float]
              ) -> tuple[float, np.ndarray, int, np.ndarray, float]:
    """Pooled share of ``types`` among all typed interactions, with a bootstrap interval over
    samples, the per-sample (num, den) records (NaN where a sample has none) and the
    bootstrap p of its side of ``bounds`` (`level_p`). counts: (S, type) per-sample counts
    of one group and one `changed` value."""
    num = counts[:, list(types)].sum(axis=1)
    den = counts.sum(axis=1)
    keep = den > 0
    records = np.where(keep[:, None], np.stack([num, den], 1), np.nan)
    num, den = num[keep], den[keep]
    n = int(keep.sum())
    if n == 0:
        return math.nan, np.full(2, np.nan), 0, records, math.nan
    w = uncertainty.resample_counts(n, n_boot, seed)
    with np.errstate(invalid="ignore", divide="ignore"):
        reps = (w @ num) / (w @ den)
    est = float(num.sum() / den.sum())
    return est, uncertainty.percentile_ci(reps, level, est), n, records, level_p(est, reps,
                                                                                 bounds, n)


def level_p(estimate: float, replicates: np.ndarray, bounds: tuple[float, float],
            n: int) -> float:
    """The bootstrap p of a level row, the test its percentile interval inverts: for an
    estimate inside [lo, hi], twice the larger share of replicates beyond a bound that binds
    (lo > 0, hi < 1); outside it, twice the share back inside the nearer bound; at
    most 1. So p < α about when the interval lies wholly inside (supported) or wholly
    outside (contradicted). NaN below MIN_RELIABLE_N samples, where the interval undercovers
    and `within` decides nothing."""
    lo, hi = bounds
    reps = np.asarray(replicates, float)
    reps = reps[np.isfinite(reps)]
    if n < uncertainty.MIN_RELIABLE_N or not reps.size:
        return math.nan
    if estimate > hi:
        share = np.mean(reps <= hi)
    elif estimate < lo:
        share = np.mean(reps >= lo)
    else:
        # the bounds belong to the band, as in `within`
        share = max(np.mean(reps < lo) if lo > 0 else 0.0,
                    np.mean(reps > hi) if hi < 1 else 0.0)
    return float(min(1.0, 2.0 * share))


def type_claims(e: Entry) -> list[Claim]:
    """Interaction types of the 0-shot template pairs (paper Section 3.3, Fig. 3b)."""
    ds = e.ds
    scope = join_scope(e.model, e.dataset)
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
    if "sample_type_count" not in ds or ZERO_SHOT not in ds["group"].values:
        why = ("metrics file has no per-sample type counts; rerun ips metrics"
               if "sample_type_count" not in ds else f"no {ZERO_SHOT} group")
        return [Claim(c, scope, p, note=why) for c, *_, p in specs]
    seed, n_boot, level = bootstrap_settings(e)
    out = []
    for claim, changed, types, (lo, hi), paper in specs:
        counts = (ds["sample_type_count"].sel(group=ZERO_SHOT, changed=changed)
                  .transpose("sample", "type").values.astype(float))
        est, ci, n, records, p = _share_ci(counts, types, seed, n_boot, level, (lo, hi))
        if n == 0:
            out.append(Claim(claim, scope, paper, note=f"no 0-shot template pair with the "
                             f"prediction {'changed' if changed == 'yes' else 'unchanged'}"))
            continue
        out.append(Claim(claim, scope, paper, est, float(ci[0]), float(ci[1]), n,
                         f"{level:.0%} bootstrap interval over samples vs [{lo:g}, {hi:g}]; "
                         "p: the bootstrap test it inverts", p,
                         verdict=within(ci, lo, hi, n),
                         note=join_notes("share of salient interactions pooled over samples",
                                     few_samples_note(n, level=True)), mde=level_mde(ci, n),
                         spec=ControlSpec(_ids(e), records, _pooled_share,
                                          bounds=(lo, hi))))
    return out


def order_claims(e: Entry) -> list[Claim]:
    """IPS^low < IPS^mid < IPS^high (paper Section 4.3, Fig. 9)."""
    ds = e.ds
    scope = join_scope(e.model, e.dataset)
    specs = [("order_low_below_mid", "low-mid", "IPS^low < IPS^mid for every model (Fig. 9)"),
             ("order_mid_below_high", "mid-high", "IPS^mid < IPS^high for every model (Fig. 9)")]
    if "band_p_holm" not in ds or ZERO_SHOT not in ds["group"].values:
        return [Claim(c, scope, p, note="metrics file has no band tests; rerun ips metrics")
                for c, _, p in specs]
    out = []
    for claim, pair, paper in specs:
        sel = dict(group=ZERO_SHOT, band_pair=pair)
        est = float(ds["band_diff"].sel(**sel))
        p = float(ds["band_p_holm"].sel(**sel))
        n = int(ds["band_n"].sel(**sel))
        lo, hi = pair.split("-")
        d = (ds["sample_ips"].sel(group=ZERO_SHOT, band=lo)
             - ds["sample_ips"].sel(group=ZERO_SHOT, band=hi)).values.astype(float)
        # Holm's first step tests at α/3: a conservative level for its power
        mde = (uncertainty.sign_flip_mde_of(d, level=1 - ALPHA / 3)
               if np.isfinite(d).sum() == n else np.nan)
        out.append(Claim(claim, scope, paper, est, n=n,
                         test="paired sign-flip on per-sample differences, Holm-adjusted over "
                         "the 3 band tests", p_value=p, verdict=directional(est, p, -1),
                         note=join_notes(f"estimate: mean per-sample IPS^{lo} − IPS^{hi}; mde at "
                                     "α/3", few_samples_note(n)), mde=mde, spec=ControlSpec(_ids(e), d)))
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


def few_shot_curve_claims(e: Entry, permutations_: int, seed: int) -> list[Claim]:
    """`few_shot_curve_claim` where the dataset has k-shot conditions, or is MCQ (few-shot's
    home, Appendix E.6: there a missing k-shot group is an untestable row); none for an
    instruction dataset scored without examples."""
    if e.ds.attrs.get("kind", "mcq") != "mcq" and len(_shot_groups(e)) < 2:
        return []
    return [few_shot_curve_claim(e, permutations_, seed)]


def few_shot_curve_claim(e: Entry, permutations_: int, seed: int) -> Claim:
    """'The most substantial drop occurs from 0-shot to 1-shot' (paper Section 4.2, Fig. 8)."""
    scope = join_scope(e.model, e.dataset)
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
    mde = uncertainty.sign_flip_mde_of(d, level=1 - ALPHA)
    return Claim("few_shot_most_from_0_to_1", scope, paper, float(t.mean_difference), n=int(t.n),
                 test=f"paired sign-flip ({t.method}) on per-sample (IPS0 − IPS1) − "
                 f"(IPS1 − IPS{k}), same template pairs", p_value=float(t.p_value),
                 verdict=directional(float(t.mean_difference), float(t.p_value), +1),
                 note=join_notes("estimate: mean per-sample difference of the two drops",
                             few_samples_note(int(t.n))), mde=mde, spec=ControlSpec(_ids(e), d))
