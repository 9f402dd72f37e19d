r"""The τ-independent part of the Gaussian and matched-size nulls (`ips.analysis.nulls`): the
fit of every perturbed game.

A null costs its fits: on a paper-sized (model, dataset) the Gaussian null at 3 levels and
the matched null of 13 pairs refit about 5,900 games (docs/workflow.md), while scoring those
fits against the game's own at a τ takes seconds. Neither the noise ε, nor its size σ, nor the
fit depends on τ, so `ips null-fits` fits them once per run (a file of their own,
`ips.formats.null_fits`) and `ips metrics` scores them at its τ, τ sweep and normalisation:
a new τ refits nothing. The numbers are the ones `ips metrics` computes without the file
(the same ε from the same seed and sample ids, the same fitter).
"""

from __future__ import annotations

import hashlib
import logging
import time
import zlib
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from ips.analysis import metrics
from ips.analysis.nulls import Settings, game_masks, game_range, residual_size
from ips.errors import InputError
from ips.formats.null_fits import NullFits
from ips.formats.shards import Merged

log = logging.getLogger(__name__)


#: fits games of one n: rows (k, 2**n) → (and_, or_) of the same shape
Fitter = Callable[[NDArray[np.float64]], tuple[NDArray[np.float64], NDArray[np.float64]]]


def standard_noise(samples, shape: tuple[int, ...], seed: int, *stream: int
                   ) -> NDArray[np.float64]:
    """ε iid N(0, 1) of shape (sample, *shape), each sample's drawn from its own generator
    seeded by (seed, *stream, CRC-32 of its id): the same sample gets the same noise whatever
    the shard it is in and whatever other samples are there (as the bootstrap's sorted ids)."""
    return np.stack([np.random.default_rng([seed, *stream, zlib.crc32(str(s).encode())])
                     .standard_normal(shape) for s in samples]) if len(samples) else \
        np.zeros((0, *shape))


def perturb(v: NDArray[np.float64], n_vars: NDArray[np.int64], sigma: NDArray[np.float64],
            eps: NDArray[np.float64]) -> NDArray[np.float64]:
    """v + σ·ε on each game's 2**n masks (ε of v's shape); the padding is left as it is."""
    return np.where(game_masks(v, n_vars), v + np.asarray(sigma)[..., None] * eps, v)


def fit_games(v: NDArray[np.float64], n_vars: NDArray[np.int64],
              fit: Fitter) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(and_, or_) of every game of v (..., 2**n_max), NaN beyond 2**n, grouped by n; a game
    of n = 0 (one that was not scored) is not fitted and stays NaN."""
    flat = v.reshape(-1, v.shape[-1])
    nv = np.broadcast_to(np.asarray(n_vars), v.shape[:-1]).reshape(-1)
    and_, or_ = np.full(flat.shape, np.nan), np.full(flat.shape, np.nan)
    for n in np.unique(nv[nv > 0]).tolist():
        idx = np.flatnonzero(nv == n)
        and_[idx, : 1 << n], or_[idx, : 1 << n] = fit(flat[idx, : 1 << n])
    return and_.reshape(v.shape), or_.reshape(v.shape)


def fitter(fit_attrs: dict) -> Fitter:
    """The fit that made an interactions file (its attributes `solver_requested`, `noise`, and sgd's
    `sgd_learning_rate`, `sgd_steps`), so that a null is fitted as its reference was."""
    from ips.interactions import and_or

    solver = str(fit_attrs.get("solver_requested", "auto"))
    options = {"noise": float(fit_attrs.get("noise", 0.0))}
    if solver == "sgd":
        options |= {"learning_rate": float(fit_attrs["sgd_learning_rate"]),
                    "steps": int(fit_attrs["sgd_steps"])}

    def fit(rows):
        res = and_or(rows, solver=solver, **options)
        return res.and_, res.or_

    return fit


def gaussian_fit(v: NDArray[np.float64], n_games: NDArray[np.int64], fit: Fitter,
                 level: float, eps: NDArray[np.float64]) -> tuple[NDArray, NDArray]:
    """(and_, or_) of every game of v (sample, condition, 2**n_max) perturbed at one level
    for one draw of ε (v's shape): the fit of v + level·range(v)·ε (τ plays no part).
    ``n_games`` (sample, condition): each game's n, 0 for one not scored (NaN out)."""
    noisy = perturb(v, n_games, level * game_range(v, n_games), eps)
    return fit_games(noisy, n_games, fit)


def matched_fit(v: NDArray[np.float64], n_games: NDArray[np.int64], pairs: NDArray[np.int64],
                fit: Fitter, eps: NDArray[np.float64]):
    """The perturbed fits of the matched-size null of every (sample, pair) of condition
    indices ``pairs`` (P, 2) for one draw ε (sample, 2, P, 2**n_max: side T, side T̂):
    ``and_``, ``or_`` (side, sample, P, 2**n_max), each side's noise size σ (sample, P, 2)
    (side T's `residual_size` of v_T on v_T̂, side T̂'s of v_T̂ on v_T) and the pairs' n
    (sample, P; 0 for a pair with a game not scored, NaN out)."""
    a, b = n_games[:, pairs[:, 0]], n_games[:, pairs[:, 1]]
    nv = np.where((a > 0) & (b > 0), a, 0)
    games = v[:, pairs[:, 0]], v[:, pairs[:, 1]]
    sigma = np.stack([residual_size(games[1], games[0], nv),
                      residual_size(games[0], games[1], nv)], -1)
    sides = [fit_games(perturb(games[k], nv, sigma[..., k], eps[:, k]), nv, fit)
             for k in (0, 1)]
    return np.stack([s[0] for s in sides]), np.stack([s[1] for s in sides]), sigma, nv


def group_pairs(merged: Merged, name: str) -> NDArray[np.int64]:
    """The unordered condition pairs of group ``name`` (pair, 2: condition indices), in the
    order its IPS takes them; none for a group of fewer than two conditions."""
    idx = merged.group_conditions(name)
    if idx.size < 2:
        return np.zeros((0, 2), np.int64)
    return idx[metrics.all_pairs(idx.size)]


def null_pairs(merged: Merged) -> NDArray[np.int64]:
    """Every group's pairs, concatenated in group order (the matched null's pairs)."""
    return np.concatenate([group_pairs(merged, g) for g in merged.groups]).reshape(-1, 2)


def digest(merged: Merged) -> str:
    """sha256 of what the nulls are fitted from: the values, each game's n and the fit's
    settings (solver, tolerance, sgd's), so that fits of other games are never scored."""
    h = hashlib.sha256()
    for a in (np.ascontiguousarray(merged.v, np.float64), merged.n_games.astype(np.int64)):
        h.update(a.tobytes())
    for key in ("solver_requested", "noise", "sgd_learning_rate", "sgd_steps"):
        h.update(f"{key}={merged.fit_attrs.get(key)};".encode())
    return h.hexdigest()


def settings(fits: NullFits) -> Settings:
    """The nulls' settings the fits were made with."""
    return Settings(tuple(fits.levels), fits.draws, fits.matched, fits.seed)


def fit_nulls(merged: Merged, null: Settings) -> NullFits:
    """Fit every perturbed game of the nulls ``null`` of a run. A run without nulls (no
    draws, or sparse fits: only exhaustive fits have nulls) gets fits of no draw."""
    if null.draws and merged.games is not None:
        log.warning("%s: null IPS not computed (sparse fits: only exhaustive fits have one)",
                    merged.values_files[0])
    if merged.games is not None:
        null = Settings((), 0, False, null.seed)
    t0 = time.perf_counter()
    fit = fitter(merged.fit_attrs)
    v, samples, n_games = merged.v, merged.samples, merged.n_games
    (S, C, M), L, D = v.shape, len(null.levels), null.draws
    gaussian = [[gaussian_fit(v, n_games, fit, c,
                              standard_noise(samples, (C, M), null.seed, 1, round(c * 1e9), d))
                 for d in range(D)] for c in null.levels]
    pairs = null_pairs(merged) if null.matched else np.zeros((0, 2), np.int64)
    P = len(pairs)
    matched_and = np.full((D, 2, S, P, M), np.nan)
    matched_or, sigma = matched_and.copy(), np.zeros((S, P, 2))
    pair_n = np.zeros((S, P), np.int64)
    for d in range(D if P else 0):
        eps = standard_noise(samples, (2, P, M), null.seed, 2, d)
        matched_and[d], matched_or[d], sigma, pair_n = matched_fit(v, n_games, pairs, fit, eps)
    if D:
        log.info("null fits: %d games x %d levels x %d draws, both sides of %d pairs x %d "
                 "samples, %.1f s", S * C, L, D, P, S, time.perf_counter() - t0)
    return NullFits(tuple(null.levels), D, null.matched, null.seed, samples,
                    np.asarray(merged.conditions["condition"]), pairs,
                    np.array([[g[0] for g in row] for row in gaussian]).reshape(L, D, S, C, M),
                    np.array([[g[1] for g in row] for row in gaussian]).reshape(L, D, S, C, M),
                    matched_and, matched_or, sigma, pair_n, digest(merged))


def check(fits: NullFits, merged: Merged, where) -> None:
    """`InputError` naming ``where`` (the null fits' file) unless ``fits`` were made from the
    games of ``merged``: the same samples and conditions in the same order, the same values
    and the same fit."""
    same = (np.array_equal(np.asarray(fits.samples, str), np.asarray(merged.samples, str))
            and np.array_equal(np.asarray(fits.conditions, str),
                               np.asarray(merged.conditions["condition"], str)))
    if not same or fits.digest != digest(merged):
        raise InputError(f"{where}: fitted from other games than the values and interactions "
                         "files given; run `ips null-fits` on them again")
