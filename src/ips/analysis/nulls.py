r"""Null IPS: what IPS reports when nothing but unstructured change separates two games
(beyond the paper; docs/method.md#nulls).

IPS compares the salient interactions of two templates (Section 4.1). Any change of v moves
them, so an IPS is read against what noise alone gives (the nulls) and against what two
unrelated games give (the ceiling):

*Gaussian null* at level c (a share of the game's range). Every value of the game moves,

    v'(x_T) = v(x_T) + σ·ε_T,   ε_T iid N(0, 1) for every T ⊆ N (∅ and N included),
    σ = c·(max_T v(x_T) − min_T v(x_T)),

v' is fitted like v (same solver and settings), and the pair (v, v') is scored as a template
pair: the game's null IPS is ips(x, v, v') (Eq. 3's inner term), per order band and τ. A
sample's null IPS in a condition group is the mean over the group's conditions (and draws),
and the group's null IPS the mean over samples, as for IPS. It models rounding of v as
independent noise; the precision null measures rounding itself.

*Matched-size null* of a template pair (T, T̂) of one sample. IPS does not see a change
v → a·v + b (a > 0): Ĩ cancels a, and b moves only I_AND(∅), outside Ω. So each side is
given noise of the size of what is left of the change after the best affine map between the
two games: side T̂ gets

    σ_T̂ = sd_T(v_T̂ − (a·v_T + b)),   (a, b) = argmin_{a ≥ 0, b} Σ_T (v_T̂ − a·v_T − b)²,

over the 2^n masks (population sd), that is a = max(0, cov(v_T, v_T̂) / var(v_T)) and
σ_T̂² = var(v_T̂)·(1 − max(ρ, 0)²), ρ the correlation of the two games over the masks. a ≥ 0
because a negative a flips the signs of the interactions, which IPS does see; clipped to 0
(and where v_T is constant), σ_T̂ is sd(v_T̂). Side T gets σ_T likewise, with the roles swapped
(`residual_size`). Each side is perturbed, v + σ·ε, fitted, and scored against its own fit;
the matched null is the mean of ips(x, v_T, v_T + σ_Tε) and ips(x, v_T̂, v_T̂ + σ_T̂ε'),
symmetric in the two templates (both σ are the same share sqrt(1 − max(ρ, 0)²) of their own
game's sd). Template IPS above it says that the template moved the interactions more than
unstructured change of the size IPS can see would; below it, that the template's change is
structured (it moves v in ways the interactions absorb). The raw size sd_T(v_T̂ − v_T)
(`change_size`), scale and shift included, is stored beside it as the output-level size of
the change.

*Ceiling* of a template pair (T, T̂) of one sample s: the IPS of unrelated games,
ips(x, v_T of s, v_T̂ of s') for other samples s' of the same n (and the same model and
dataset), their interactions matched by bitmask (variable position: unrelated games share no
words). Each n's samples, in sorted-id order, are laid on a ring in the order of a
permutation drawn from (seed, n), and each is paired with the next min(K, m − 1) samples of
its ring (m samples of that n, K = `CEILING_PARTNERS`; `ceiling_partners`). A pair's ceiling
is the mean over the partners, a sample's ceiling in a group the mean over the group's pairs,
and the group's the mean over samples, as for IPS. A sample with no other sample of its n has
none (NaN, counted). IPS near its ceiling says that the two templates' salient interactions
are as different as those of two unrelated samples: IPS cannot tell the template change from
replacing the sample (`ceiling`).

*Precision null* of a game: the same prompt scored again in half precision (`ips score
--dtype`), fitted alike, and the two fits scored as a template pair, ips(x, v_float32,
v_half). It measures the rounding of the forward pass itself, correlated across masks as
Gaussian noise is not (`variant_null`).

*Baseline null* of a game: the same prompt scored again with another baseline for an absent
word (`nulls.baseline.others`: another token, a word such as " the"), fitted alike and scored
against the game as a template pair, by the same `variant_null`. It measures how much of the
salient set the choice of baseline alone decides (docs/method.md#nulls); it is no noise
floor, as it changes what absence means.

What a null cannot show: it is a reference for the size of IPS, not a test that the model
is insensitive; a game's null depends on its own interactions (a flat game, whose Ĩ are all
near τ, is disturbed more by the same noise).
"""

from __future__ import annotations

import json
import logging
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ips.analysis import layout, metrics, uncertainty
from ips.errors import InputError
from ips.formats.hdf5 import labels
from ips.formats.metrics import BANDS
from ips.formats.shards import Merged
from ips.nulls import variant

if TYPE_CHECKING:
    from ips.formats.null_fits import NullFits

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Settings:
    """What `ips metrics` computes: Gaussian nulls at ``levels`` with ``draws`` draws per game
    and level (0: no null and no ceiling at all), the matched-size null of every pair when
    ``matched``, and the ceiling of every pair, all drawn from ``seed`` (the ceiling's
    pairing too). The defaults are the config schema's (`nulls`)."""

    levels: tuple[float, ...]
    draws: int
    matched: bool = True
    seed: int = 0


def game_masks(v: NDArray[np.float64], n_vars: NDArray[np.int64]) -> NDArray[np.bool_]:
    """True on the first 2**n entries of every game (v: (..., 2**n_max), n_vars: v.shape[:-1])."""
    return np.arange(v.shape[-1]) < (np.int64(1) << np.asarray(n_vars))[..., None]


def game_range(v: NDArray[np.float64], n_vars: NDArray[np.int64]) -> NDArray[np.float64]:
    """max_T v(x_T) − min_T v(x_T) of every game, over its 2**n masks."""
    inside = game_masks(v, n_vars)
    return (np.max(np.where(inside, v, -np.inf), -1) - np.min(np.where(inside, v, np.inf), -1))


def change_size(v_a: NDArray[np.float64], v_b: NDArray[np.float64],
                n_vars: NDArray[np.int64]) -> NDArray[np.float64]:
    """σ = sd_T(v_b − v_a) over each game's 2**n masks (population sd)."""
    inside = game_masks(v_a, n_vars)
    d = np.where(inside, v_b - v_a, 0.0)
    size = inside.sum(-1)
    mean = d.sum(-1) / size
    return np.sqrt(np.where(inside, (d - mean[..., None]) ** 2, 0.0).sum(-1) / size)


def residual_size(v_from: NDArray[np.float64], v_to: NDArray[np.float64],
                  n_vars: NDArray[np.int64]) -> NDArray[np.float64]:
    """σ = sd_T(v_to − (a·v_from + b)) over each game's 2**n masks (population sd), with (a, b)
    the least-squares affine map of v_from onto v_to under a ≥ 0:

        a = max(0, cov(v_from, v_to) / var(v_from)),  b = mean(v_to) − a·mean(v_from),

    a = 0 where v_from is constant (any a fits as well; then σ = sd(v_to)). The constraint is
    a clip: for a fixed a the best b is the one above, and what is left is a convex quadratic
    in a. The padding (entries ≥ 2**n) does not enter."""
    inside = game_masks(v_from, n_vars)
    size = inside.sum(-1)

    def centred(x):
        x = np.where(inside, x, 0.0)
        return np.where(inside, x - (x.sum(-1) / size)[..., None], 0.0)

    f, t = centred(v_from), centred(v_to)
    var, cov = (f * f).sum(-1), (f * t).sum(-1)
    # a constant game centres to ±1 ulp, not 0: its "slope" would fit rounding
    flat = game_range(v_from, n_vars) == 0
    with np.errstate(invalid="ignore", divide="ignore"):
        a = np.where(flat, 0.0, np.maximum(cov, 0.0) / np.where(flat, 1.0, var))
    r = t - a[..., None] * f
    return np.sqrt((r * r).sum(-1) / size)


@dataclass(frozen=True)
class GameNull:
    """ips(x, v, v') of every game against its perturbed fit: ``bands`` (..., band) over
    ("all", "low", "mid", "high"), ``sweep`` (..., tau); NaN where U is empty."""

    bands: NDArray[np.float64]
    sweep: NDArray[np.float64]


def score_against(norm: NDArray[np.float64], norm_null: NDArray[np.float64], tau: float,
                  sweep: NDArray[np.float64]) -> GameNull:
    """Score each game's normalised interactions (..., 2, M) against their null (same shape)
    as a template pair, in every band at ``tau`` and over ``sweep`` (band all)."""
    swept = metrics.pair_sensitivity(norm, norm_null, np.asarray(sweep, float)).value
    return GameNull(_band_scores(norm, norm_null, tau), np.moveaxis(swept, 0, -1))


def _band_scores(norm_a, norm_b, tau: float) -> NDArray[np.float64]:
    """ips(x, a, b) of every row (..., 2, M) in each band of `BANDS` (..., band)."""
    return np.stack([metrics.pair_sensitivity(norm_a, norm_b, tau, band).value
                     for band in (None, *layout.BANDS)], -1)


def matched_score(and_, or_, nv, norm: NDArray[np.float64], pairs: NDArray[np.int64],
                  tau: float, sweep: NDArray[np.float64],
                  normalisation: str = "nonempty") -> GameNull:
    """The matched-size null of every (sample, pair) from its `matched_fit`: each side's fit
    scored against its own game's ``norm``, and the mean of the two sides (nan-mean: a side
    with an empty U does not count)."""
    sides = [score_fits(and_[k], or_[k], nv, norm[:, pairs[:, k]], tau, sweep, normalisation)
             for k in (0, 1)]
    return GameNull(nan_mean(np.stack([s.bands for s in sides]), 0),
                    nan_mean(np.stack([s.sweep for s in sides]), 0))


#: how many other samples of its n each sample's ceiling compares it with (at most)
CEILING_PARTNERS = 5

SATURATED = 0.9
"""IPS at this share of its ceiling or above is *saturated*: the two templates' salient
interactions differ about as much as two unrelated samples', so IPS cannot tell the template
change from replacing the item (docs/method.md#saturation)."""


def saturation(ips: ArrayLike, ceiling: ArrayLike) -> NDArray[np.float64]:
    """IPS / its ceiling, elementwise; NaN where either is not finite or the ceiling is not
    positive."""
    a, c = np.asarray(ips, np.float64), np.asarray(ceiling, np.float64)
    ok = np.isfinite(a) & np.isfinite(c) & (c > 0)
    return np.divide(a, c, out=np.full(np.broadcast(a, c).shape, np.nan), where=ok)


def ceiling_partners(n_vars: NDArray[np.int64], seed: int,
                     k: int = CEILING_PARTNERS) -> NDArray[np.int64]:
    """The samples each sample's ceiling pairs it with: (sample, k) indices into ``n_vars``,
    −1 where it has fewer than k. The m samples of each n lie on a ring in the order of a
    permutation drawn from (seed, n), and each is paired with the next min(k, m − 1) of its
    ring, so each is as often a partner as it has partners. Given in sorted-id order, the
    samples pair up the same whatever the order they were stored in."""
    n_vars = np.asarray(n_vars)
    out = np.full((n_vars.size, k), -1, np.int64)
    for n in np.unique(n_vars).tolist():
        same = np.flatnonzero(n_vars == n)
        ring = same[np.random.default_rng([seed, 3, n]).permutation(same.size)]
        for d in range(1, min(k, same.size - 1) + 1):
            out[ring, d - 1] = np.roll(ring, -d)
    return out


def ceiling(norm: NDArray[np.float64], partners: NDArray[np.int64],
            pairs: NDArray[np.int64], tau: float) -> NDArray[np.float64]:
    """The ceiling of every (sample, pair) of condition indices ``pairs`` (P, 2), per band
    (sample, P, band): the mean over the sample's ``partners`` s' (`ceiling_partners`) of
    ips(x, Ĩ_T of s, Ĩ_T̂ of s'), from the normalised interactions ``norm`` (sample,
    condition, 2, 2**n_max) matched by bitmask (partners have the same n); NaN where the
    sample has no partner, lacks the pair (a game not scored) or every U is empty."""
    cells = []
    for own, other, ok in _partner_games(norm, partners, pairs):
        cell = np.full((*ok.shape, len(layout.BANDS) + 1), np.nan)
        cell[ok] = _band_scores(own[ok], other[ok], tau)
        cells.append(cell)
    return nan_mean(np.stack(cells), 0)


def ceiling_types(norm: NDArray[np.float64], partners: NDArray[np.int64],
                  pairs: NDArray[np.int64], tau: float) -> NDArray[np.int64]:
    """The interaction types of the ceiling's games (`interaction_types.interaction_types`
    of Ĩ_T of s against Ĩ_T̂ of each partner s', as `ceiling` pairs them), counted over the
    partners: (sample, P, type). Their share of unstable types (opposite sign or a different
    effect) is what replacing the item gives the unstable share of a template pair."""
    from ips.analysis.interaction_types import INTERACTION_TYPES, interaction_types

    out = np.zeros((len(norm), len(pairs), len(INTERACTION_TYPES)), np.int64)
    for own, other, ok in _partner_games(norm, partners, pairs):
        if ok.any():
            out[ok] += interaction_types(own[ok], other[ok], tau)
    return out


def _partner_games(norm: NDArray[np.float64], partners: NDArray[np.int64],
                   pairs: NDArray[np.int64]):
    """For each partner column: Ĩ_T of every sample, Ĩ_T̂ of its partner, and the (sample,
    pair) cells where both are valued and the sample has that partner and its own pair."""
    own = norm[:, pairs[:, 0]]
    rows = np.arange(len(norm))
    has_pair = _valued(own) & _valued(norm[:, pairs[:, 1]])  # the pair the sample's IPS has
    for col in partners.T:
        other = norm[np.where(col >= 0, col, rows)][:, pairs[:, 1]]
        yield own, other, (col >= 0)[:, None] & has_pair & _valued(other)


def _valued(norm: NDArray[np.float64]) -> NDArray[np.bool_]:
    """Which rows (..., 2, M) of normalised interactions have an Ω (n ≥ 1: a game that was
    scored); mask 1 ({0}) is in every non-empty Ω."""
    return np.isfinite(norm[..., 0, 1])


@dataclass(frozen=True)
class VariantNull:
    """A variant of the same games (sample, condition): ``game`` their ips(x, v, v'),
    ``jaccard`` |U ∩ U'| / |U ∪ U'| of their salient sets at τ (NaN where both are empty),
    ``abs_dv`` |v' − v| on every mask of every game, ``dv_rel`` sd_T(v' − v) / range of v per
    game."""

    game: GameNull
    jaccard: NDArray[np.float64]
    abs_dv: NDArray[np.float64]
    dv_rel: NDArray[np.float64]


def variant_null(v: NDArray[np.float64], v_other: NDArray[np.float64],
                 n_games: NDArray[np.int64], norm: NDArray[np.float64],
                 norm_other: NDArray[np.float64], tau: float,
                 sweep: NDArray[np.float64]) -> VariantNull:
    """The null of games (sample, condition, 2**n_max) scored twice, the second time with one
    setting changed (a variant: another precision, another baseline), from their values and
    normalised fits (sample, condition, 2, 2**n_max); ``n_games`` (sample, condition) their n,
    0 for a game not scored (left out)."""
    nv = np.broadcast_to(n_games, v.shape[:-1])
    a, b = metrics.salient(norm, tau), metrics.salient(norm_other, tau)
    union = (a | b).sum((-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        jaccard = np.where(union > 0, (a & b).sum((-2, -1)) / union, np.nan)
        dv_rel = change_size(v, v_other, nv) / game_range(v, nv)
    return VariantNull(score_against(norm, norm_other, tau, sweep), jaccard,
                       np.abs(v_other - v)[game_masks(v, nv) & (nv > 0)[..., None]], dv_rel)


def nan_mean(x: NDArray[np.float64], axis) -> NDArray[np.float64]:
    """Mean over ``axis`` ignoring NaN; NaN (silently) where every value is NaN."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(x, axis=axis)


def nan_median(x: NDArray[np.float64]) -> float:
    """Median of the finite entries of x; NaN where there is none."""
    x = np.asarray(x, np.float64)
    x = x[np.isfinite(x)]
    return float(np.median(x)) if x.size else float("nan")


def score_fits(and_, or_, n_vars, norm, tau, sweep, normalisation) -> GameNull:
    """Perturbed games' fits (..., 2**n_max) normalised as `norm` was and scored against
    `norm`, where n > 0 (NaN elsewhere: a game not scored, or a pair with one)."""
    n = np.broadcast_to(n_vars, and_.shape[:-1])
    norm_null = metrics.normalize(and_, or_, n, normalisation=normalisation)
    ok = n > 0
    got = score_against(norm[ok], norm_null[ok], tau, sweep)
    bands = np.full((*n.shape, got.bands.shape[-1]), np.nan)
    swept = np.full((*n.shape, len(sweep)), np.nan)
    bands[ok], swept[ok] = got.bands, got.sweep
    return GameNull(bands, swept)


def null_variables(merged: Merged, norm: np.ndarray, groups: list[str], per_group: list[dict],
                   tau: float, sweep: np.ndarray, fits: NullFits, order: np.ndarray,
                   counts: np.ndarray, level: float, normalisation: str = "nonempty"):
    """The null IPS beside IPS (`ips.analysis.nulls`), scored at τ from the perturbed games'
    ``fits`` (`ips.analysis.null_fits`; of no draw: no null): the Gaussian null per sample, group,
    level and band (with intervals over samples, n and the τ sweep), the matched-size null
    per sample and pair, the size of every pair's change, the ceiling per sample and group,
    and the range of every game."""
    if fits.draws == 0:
        return {}, {}
    t0 = time.perf_counter()
    null = fits  # its settings: levels, draws, matched, seed
    n_games = merged.n_games  # 0 for a game not scored: NaN in every null
    ranges = game_range(merged.v, n_games)
    data = {"sample_v_range": (("sample", "condition"), ranges[order])}
    coords = {"null_level": np.asarray(null.levels, np.float64)}
    game, game_sweep = [], []
    for k in range(len(null.levels)):
        runs = [score_fits(fits.gaussian_and[k, d], fits.gaussian_or[k, d], n_games, norm, tau,
                           sweep, normalisation) for d in range(null.draws)]
        game.append(nan_mean(np.stack([r.bands for r in runs]), 0))  # (S, C, B)
        game_sweep.append(nan_mean(np.stack([r.sweep for r in runs]), 0))
    game, game_sweep = np.stack(game, 2), np.stack(game_sweep, 2)  # (S, C, L, B|T)
    # a group's null per sample: the mean over its games in a pair of the group with both
    # sides scored, so that it rests on the samples and games that the group's IPS does
    paired = [_paired_games(merged.scored, g["pairs"]) for g in per_group]
    sample_null = np.stack([nan_mean(np.where(p[..., None, None], game, np.nan), 1)
                            for p in paired], 1)[order]
    sample_sweep = np.stack([nan_mean(np.where(p[..., None, None], game_sweep, np.nan), 1)
                             for p in paired], 1)[order]
    data |= _over_samples("null", sample_null, ("group", "null_level", "band"), counts, level)
    data["null_ips_sweep"] = (("tau", "group", "null_level"),
                              np.moveaxis(nan_mean(sample_sweep, 0), -1, 0))
    if null.matched:
        data |= _matched_variables(merged, norm, per_group, tau, sweep, fits, order, counts,
                                   level, ranges, normalisation)
        coords["pair_side"] = labels("ab")
    data |= _ceiling_variables(merged, norm, per_group, tau, null.seed, order, counts, level)
    log.info("null IPS scored at τ=%g: %d games x %d levels x %d draws%s, ceiling, %.1f s",
             tau, n_games.size, len(null.levels), null.draws,
             ", matched-size null of every pair" if null.matched else "",
             time.perf_counter() - t0)
    return data, coords


def _paired_games(scored: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """(sample, condition): the games that sit in one of `pairs` (P, 2) of condition indices
    with both sides scored."""
    pairs = np.asarray(pairs, np.int64).reshape(-1, 2)
    both = scored[:, pairs[:, 0]] & scored[:, pairs[:, 1]]
    out = np.zeros_like(scored)
    for side in (0, 1):
        for k, c in enumerate(pairs[:, side]):
            out[:, c] |= both[:, k]
    return out


def variant_variables(kind: str, merged: Merged, norm: np.ndarray, groups: Sequence[str],
                        runs: Sequence[Merged], tau: float, sweep: np.ndarray,
                        order: np.ndarray, counts: np.ndarray, level: float,
                        normalisation: str = "nonempty"):
    """A variant (`kind`: `precision`, the same games in another precision, or `baseline`,
    under another baseline; `variant_null` scores either pair of fits) of every run: per
    sample and condition group (the mean over the group's conditions scored again; NaN for a sample or group with none), setting and band with intervals, n and
    the τ sweep, and how far v moved (max and median |Δv|, median sd(Δv)/range of v, mean
    salient-set Jaccard, games compared; over all of a run's games). Variables
    `{kind}_null_ips` …, `{kind}_jaccard` …, on the coordinate `kind`."""
    if not runs:
        return {}, {}
    S, B, G = len(merged.samples), len(BANDS), len(groups)
    per_sample = np.full((S, len(runs), G, B), np.nan)
    per_sweep = np.full((S, len(runs), G, len(sweep)), np.nan)
    members = [np.isin(np.arange(merged.v.shape[1]), merged.group_conditions(g))
               for g in groups]
    stats = {k: np.full(len(runs), np.nan)
             for k in ("max_abs_dv", "median_abs_dv", "dv_rel", "jaccard", "games")}
    by = variant(kind).by
    for k, p in enumerate(runs):
        si, ci = _variant_index(kind, merged, p)
        got = variant_null(merged.v[si][:, ci], p.v, p.n_games, norm[si][:, ci],
                           metrics.normalize(p.and_, p.or_, p.n_games,
                                             normalisation=normalisation), tau, sweep)
        for gi, member in enumerate(members):
            mine = member[ci]
            if mine.any():
                per_sample[si, k, gi] = nan_mean(got.game.bands[:, mine], 1)
                per_sweep[si, k, gi] = nan_mean(got.game.sweep[:, mine], 1)
        stats["max_abs_dv"][k] = got.abs_dv.max(initial=0.0)
        stats["median_abs_dv"][k] = nan_median(got.abs_dv)
        stats["dv_rel"][k] = nan_median(got.dv_rel)
        stats["jaccard"][k] = nan_mean(got.jaccard, None)
        stats["games"][k] = got.jaccard.size
        log.info("%s null %s vs %s: %d games, IPS %.3f, max |dv| %.3g", kind, p.attrs.get(by),
                 merged.attrs.get(by, "?"), got.jaccard.size,
                 float(nan_mean(got.game.bands[..., 0], None)), stats["max_abs_dv"][k])
    data = _over_samples(f"{kind}_null", per_sample[order], (kind, "group", "band"), counts,
                         level)
    data[f"{kind}_null_ips_sweep"] = (("tau", kind, "group"),
                                      np.moveaxis(nan_mean(per_sweep, 0), -1, 0))
    data |= {f"{kind}_{k}": ((kind,), v) for k, v in stats.items()}
    return data, {kind: np.array([str(p.attrs.get(by, "")) for p in runs], dtype=object)}


def _variant_index(kind: str, merged: Merged, p: Merged) -> tuple[np.ndarray, np.ndarray]:
    """Where the samples and conditions of a variant's run `p` are in `merged`; `InputError`
    naming its file if it is not a run of the same games with the one setting changed."""
    where, chosen = p.values_files[0], variant(kind)
    for name in chosen.same:
        if p.attrs.get(name) != merged.attrs.get(name):
            raise InputError(f"{where}: {name} {p.attrs.get(name)!r}, but the values files "
                             f"have {merged.attrs.get(name)!r}; a {kind} run scores the "
                             "same games again")
    setting = p.attrs.get(chosen.differs)
    setting = setting.item() if isinstance(setting, np.generic) else setting
    if str(setting) == str(merged.attrs.get(chosen.differs)):
        raise InputError(f"{where}: {chosen.differs} {setting!r} is the values files' own; a "
                         f"{kind} run is scored with another (ips score {chosen.flag})")
    if p.games is not None or merged.games is not None:
        raise InputError(f"{where}: the {kind} null needs exhaustive fits on both sides")
    samples = {s: i for i, s in enumerate(merged.samples)}
    position = {c: i for i, c in enumerate(merged.conditions["condition"])}
    missing = ([s for s in p.samples if s not in samples]
               + [c for c in p.conditions["condition"] if c not in position])
    if missing:
        raise InputError(f"{where}: sample or condition {missing[0]!r} is not in the values "
                         f"files; a {kind} run scores some of their games again")
    si = np.array([samples[s] for s in p.samples], dtype=np.int64)
    ci = np.array([position[c] for c in p.conditions["condition"]], dtype=np.int64)
    if not np.array_equal(merged.n_vars[si], p.n_vars) or p.v.shape[2] != merged.v.shape[2]:
        raise InputError(f"{where}: its samples have other variables than in the values files")
    return si, ci


def _over_samples(name: str, per_sample: np.ndarray, dims: tuple[str, ...],
                  counts: np.ndarray, level: float) -> dict:
    """`sample_{name}_ips` (sample, *dims), its mean over samples `{name}_ips`, the bootstrap
    interval `{name}_ips_ci` and the samples valued `{name}_n_valued`."""
    est, ci = uncertainty.bootstrap_ci(per_sample[:, None], level=level, counts=counts)
    return {f"sample_{name}_ips": (("sample", *dims), per_sample),
            f"{name}_ips": (dims, np.asarray(est, np.float64).reshape(per_sample.shape[1:])),
            f"{name}_ips_ci": ((*dims, "bound"), ci.reshape(*per_sample.shape[1:], 2)),
            f"{name}_n_valued": (dims, np.isfinite(per_sample).sum(0).astype(np.int64))}


def _group_means(per_pair: np.ndarray, per_group: list[dict]) -> np.ndarray:
    """(sample, pair, band) → (sample, group, band): the mean over each group's pairs (they
    are concatenated in group order)."""
    bounds = np.cumsum([0] + [len(g["pairs"]) for g in per_group])
    return np.stack([nan_mean(per_pair[:, a:b], 1)
                     for a, b in zip(bounds[:-1], bounds[1:])], 1)


def _matched_variables(merged: Merged, norm: np.ndarray, per_group: list[dict], tau: float,
                       sweep: np.ndarray, fits: NullFits, order: np.ndarray,
                       counts: np.ndarray, level: float, ranges: np.ndarray,
                       normalisation: str) -> dict:
    """The matched-size null of every pair (sample, pair, band), per group and sample; the
    noise size of each side (`residual_size`); and the raw size of each pair's change
    sd(v_b − v_a), absolute and relative to the mean range of its games."""
    pairs, sigma = fits.pairs, fits.sigma
    runs = [matched_score(fits.matched_and[d], fits.matched_or[d], fits.pair_n, norm, pairs,
                          tau, sweep, normalisation).bands for d in range(fits.draws)]
    pair_null = nan_mean(np.stack(runs), 0)[order]  # (S, P, B)
    change = change_size(merged.v[:, pairs[:, 0]], merged.v[:, pairs[:, 1]],
                               merged.n_vars[:, None])
    mean_range = 0.5 * (ranges[:, pairs[:, 0]] + ranges[:, pairs[:, 1]])
    with np.errstate(invalid="ignore", divide="ignore"):
        relative = np.where(mean_range > 0, change / mean_range, np.nan)
    return {
        **_over_samples("matched_null", _group_means(pair_null, per_group), ("group", "band"),
                        counts, level),
        "sample_pair_matched_null": (("sample", "pair", "band"), pair_null),
        "pair_matched_null": (("pair", "band"), nan_mean(pair_null, 0)),
        "sample_pair_residual_change": (("sample", "pair", "pair_side"), sigma[order]),
        "sample_pair_change": (("sample", "pair"), change[order]),
        "sample_pair_change_rel": (("sample", "pair"), relative[order]),
    }


def _ceiling_variables(merged: Merged, norm: np.ndarray, per_group: list[dict], tau: float,
                       seed: int, order: np.ndarray, counts: np.ndarray, level: float) -> dict:
    """The ceiling (`ceiling`) per sample, group and band, with its mean, interval and n, and
    its interaction types per group (`ceiling_types`, pooled over samples, pairs and
    partners: `ceiling_type_count`); the samples are paired in sorted-id order, so the
    pairing depends on their set only."""
    pairs = np.concatenate([g["pairs"] for g in per_group]).reshape(-1, 2)
    partners = ceiling_partners(merged.n_vars[order], seed)
    pair_ceiling = ceiling(norm[order], partners, pairs, tau)  # (S, P, B)
    types = ceiling_types(norm[order], partners, pairs, tau)  # (S, P, type)
    bounds = np.cumsum([0] + [len(g["pairs"]) for g in per_group])
    pooled = np.stack([types[:, a:b].sum((0, 1)) for a, b in zip(bounds[:-1], bounds[1:])])
    return {**_over_samples("ceiling", _group_means(pair_ceiling, per_group),
                            ("group", "band"), counts, level),
            "ceiling_type_count": (("group", "type"), pooled)}


def null_attribute(merged: Merged, null: Settings) -> str:
    """How the null IPS was made (JSON): the perturbation models, levels, draws, seed, fit."""
    if null.draws == 0 or merged.games is not None:
        return json.dumps({"computed": False})
    return json.dumps({
        "computed": True,
        "gaussian": "v + level * (max v - min v) * N(0, 1) on every mask, fitted like v and "
                    "scored against v's fit as a template pair (ips.analysis.nulls)",
        "matched": ("each side of a pair + sigma * N(0, 1), sigma the sd over the masks of "
                    "its game minus the least-squares a * (other game) + b with a >= 0; "
                    "fitted and scored against its own fit; mean of the two sides"
                    ) if null.matched else "",
        "ceiling": (f"mean over the group's pairs (T, T^) and up to {CEILING_PARTNERS} "
                    "other samples s' of the same n (a seeded ring over the sorted ids) of "
                    "ips(x, fit of v_T of the sample, fit of v_T^ of s'), interactions matched "
                    "by bitmask"),
        "levels": list(null.levels), "draws": int(null.draws), "seed": int(null.seed),
        "fit": merged.fit_attrs.get("solver_requested", "auto")})
