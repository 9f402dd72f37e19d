"""AND-OR interactions for a whole values cube (sample, condition, mask).

Exhaustive sampling (`fit_values`): samples are grouped by their number of variables n;
each group's rows (sample x condition) go to `ips.interactions.and_or` in batches of shape
(rows, 2**n). Sparse sampling (`fit_sparse`): each (sample, condition) game is estimated
from its design's values by `ips.interactions.sparse.estimate` (a design of all 2**n masks is fitted
exactly by `and_or`) and stored as entries (`ips.formats.interactions.to_arrays`).
"""

from __future__ import annotations

import logging
import time

import numpy as np
import xarray as xr
from tqdm import tqdm

from ips import __version__
from ips.config import EXHAUSTIVE_MAX_N, default
from ips.errors import InputError
from ips.formats import interactions
from ips.formats.values import Values
from ips.interactions.design import scored_masks

log = logging.getLogger(__name__)

# values per and_or call: 256 rows at n = 10, one row at n = 18; keeps batches vectorised
# while the progress bar still moves
_BATCH_VALUES = 1 << 18

_PER_MASK = ("and", "or", "gamma")  # output name, from the result's and_ / or_ / gamma
_PER_ROW = ("objective", "matching_error", "duality_gap")


def fit_values(
    values: Values,
    *,
    solver: str = "auto",
    noise: float = 0.0,
    learning_rate: float | None = None,
    steps: int | None = None,
    progress: bool | None = None,
) -> xr.Dataset:
    """Fit every scored (sample, condition) row of `values`; return the interactions as a
    Dataset.

    `and`, `or`, `gamma` have dims (sample, condition, mask), NaN beyond each sample's 2**n
    entries like `values.v`; `objective`, `matching_error`, `duality_gap` have dims
    (sample, condition). A row that was not scored (`values.scored`) is not fitted: NaN in
    all of them, and `scored` is carried to the file. `learning_rate`, `steps`: settings of ``solver="sgd"`` (None: the
    defaults of `ips.interactions`). The attribute `optimum` says which point of Eq. 12's
    optimal face the numbers rest on. `progress=None` shows a progress bar only on a terminal.
    """
    from ips.interactions import SGD_LEARNING_RATE, SGD_STEPS, and_or

    learning_rate = SGD_LEARNING_RATE if learning_rate is None else learning_rate
    steps = SGD_STEPS if steps is None else steps

    v, n_vars = values.v, values.n_vars
    n_samples, n_cond = v.shape[:2]
    per_mask = {k: np.full(v.shape, np.nan) for k in _PER_MASK}
    per_row = {k: np.full((n_samples, n_cond), np.nan) for k in _PER_ROW}
    solvers_used = []

    disable = None if progress is None else not progress  # None: only on a terminal
    with tqdm(total=n_samples * n_cond, unit="row", desc="fit", disable=disable) as bar:
        for n in np.unique(n_vars).tolist():
            t0 = time.perf_counter()
            idx = np.flatnonzero(n_vars == n)
            size = 1 << n
            fitted = values.scored[idx].reshape(-1)  # the rows with values
            rows = v[idx, :, :size].reshape(-1, size)[fitted]
            batch = max(1, _BATCH_VALUES >> n)
            parts, ran = [], set()
            for start in range(0, len(rows), batch):
                res = and_or(rows[start : start + batch], solver=solver, noise=noise,
                             learning_rate=learning_rate, steps=steps)
                parts.append(res)
                ran.add(res.solver)
                bar.update(min(batch, len(rows) - start))
            for name, attr in zip(_PER_MASK, ("and_", "or_", "gamma")):
                got = np.full((fitted.size, size), np.nan)
                got[fitted] = np.concatenate([np.asarray(getattr(r, attr), float).reshape(-1, size)
                                              for r in parts])
                per_mask[name][idx, :, :size] = got.reshape(len(idx), n_cond, size)
            for name in _PER_ROW:
                got = np.full(fitted.size, np.nan)
                got[fitted] = np.concatenate([np.asarray(getattr(r, name), float).reshape(-1)
                                              for r in parts])
                per_row[name][idx] = got.reshape(len(idx), n_cond)
            used = ",".join(sorted(ran))
            solvers_used.append(f"n={n}: {used}")
            log.info(
                "n=%d: %d samples x %d conditions, solver %s (requested %s), "
                "max matching error %.3g, %.2f s",
                n, len(idx), n_cond, used, solver,
                np.nanmax(per_row["matching_error"][idx]), time.perf_counter() - t0,
            )

    attrs = {
        "solver_requested": solver,
        "solver_used": "; ".join(solvers_used),
        "optimum": _optimum(solver, learning_rate, steps),
        "noise": float(noise),
        "ips_version": __version__,
    }
    if solver == "sgd":
        attrs |= {"sgd_learning_rate": float(learning_rate), "sgd_steps": int(steps)}
    return interactions.exhaustive_dataset(per_mask, per_row, n_vars, values.scored,
                                           values.coords, attrs)


def _optimum(solver: str, learning_rate: float, steps: int) -> str:
    """Which point of Eq. 12's (non-unique) optimum the fit is, in words, for the file."""
    if solver != "sgd":
        return "canonical: the l1-optimal split of least l2 norm (Eq. 12)"
    return (
        f"sgd: gamma learned from 0 by subgradient descent on Eq. 12 (paper Appendix D), "
        f"momentum 0.9, learning rate {learning_rate:g} decaying to {learning_rate / 10:g}, "
        f"{steps} steps; not the canonical optimum"
    )


def fit_sparse(
    values: Values,
    *,
    budget: int | None = None,
    seed: int = 0,
    solver: str = "auto",
    noise: float = 0.0,
    progress: bool | None = None,
) -> xr.Dataset:
    """Sparse AND-OR interactions of every (sample, condition) game of `values`.

    The design of sample s is the file's (`values.masks`), or, for an exhaustively scored
    file and a `budget`, `ips.interactions.design.scored_masks(n, budget, seed)` taken from its
    values (what sparse scoring would have scored). A design of all 2**n masks is fitted exactly
    (`and_or(solver, noise)`; `complete` 1), any other by `ips.interactions.sparse.estimate` (its
    noise steps; `heldout_error` on held-out design masks, `reliable` 0 above
    `ips.interactions.sparse.UNRELIABLE_HELDOUT`). Returns the arrays of
    `ips.formats.interactions.to_arrays` with `n_vars`, the file's coordinates and
    `sampling`/`budget` attributes.
    """
    from ips.interactions import and_or, sparse

    if values.masks is None and budget is None:
        raise ValueError("budget: an exhaustively scored file needs a budget to fit sparsely")
    n_samples, n_cond = values.v.shape[:2]
    games, t0 = [], time.perf_counter()
    disable = None if progress is None else not progress
    with tqdm(total=n_samples * n_cond, unit="game", desc="fit sparse", disable=disable) as bar:
        for s in range(n_samples):
            n = int(values.n_vars[s])
            if values.masks is None:
                design = scored_masks(n, budget, seed)
                design = np.arange(1 << n) if design is None else design
                rows = values.v[s][:, design]
            else:
                design = values.design(s)
                rows = values.v[s, :, :len(design)]
            row = []
            for c in range(n_cond):
                if len(design) == 1 << n:
                    full = np.empty(1 << n)
                    full[design] = rows[c]
                    res = and_or(full, solver=solver, noise=noise)
                    g = sparse.from_dense(res.and_, res.or_)
                    g.complete = True
                    g.fit_error = g.relative_error(design, rows[c])  # > 0 only with noise
                else:
                    g = sparse.estimate(design, rows[c], n, seed=seed)
                row.append(g)
                bar.update(1)
            games.append(row)
            unreliable = sum(not g.reliable for g in row)
            log.info("sample %d/%d: n = %d, %d of 2**%d masks, held-out error %s%s", s + 1,
                     n_samples, n, len(design), n,
                     ", ".join("exact" if g.complete else f"{g.heldout_error:.3g}" for g in row),
                     f"; {unreliable} unreliable (> {sparse.UNRELIABLE_HELDOUT:g})"
                     if unreliable else "")
    attrs = {"sampling": "sparse", "unreliable_heldout": sparse.UNRELIABLE_HELDOUT,
             "solver_requested": solver, "noise": float(noise), "seed": int(seed),
             "ips_version": __version__}
    if values.masks is None:
        attrs["budget"] = int(budget)
    ds = interactions.sparse_dataset(games, values.n_vars, values.coords, attrs)
    log.info("fit %d games in %.1f s: %d unreliable", n_samples * n_cond,
             time.perf_counter() - t0, int((ds["reliable"] == 0).sum()))
    return ds


def default_sampling(values: Values) -> dict:
    """How a values file is fitted unless told otherwise: sparsely on its design if it has
    one, else exhaustively (the budget the schema's default)."""
    return {**default("sampling"), "mode": "sparse" if values.masks is not None else "exhaustive"}


def fit_file(values: Values, source, *, exhaustive: bool, budget: int | None, seed: int,
             solver: str, noise: float, learning_rate: float, steps: int) -> xr.Dataset:
    """Fit the values file `source` (read as `values`) the way it asks: on its design if it
    has one, sparsely from `budget` masks if one is given (`fit_sparse`), else exhaustively
    (`fit_values`). `exhaustive`: the caller asked for an exhaustive fit. A request the file
    cannot meet, or a fit that fails on its values, is an `InputError` naming the file."""
    designed = values.masks is not None
    if (designed or budget is not None) and not values.scored.all():
        s, c = (int(i[0]) for i in np.nonzero(~values.scored))
        raise InputError(f"{source}: sample {s}, condition {c} was not scored (dataset "
                         "'scored': a rewording its item lacks), and sparse fits need every "
                         "row; " + ("score it exhaustively" if designed
                                    else "fit it exhaustively (--sampling exhaustive)"))
    if designed and exhaustive:
        raise InputError(f"--sampling: {source} holds a sparse design (dataset 'masks'), "
                         "not every mask; fit it with --sampling sparse")
    sparse = designed or budget is not None
    if not sparse and values.n_vars.max() > EXHAUSTIVE_MAX_N:
        raise InputError(f"{source}: n = {values.n_vars.max()} variables: the exhaustive "
                         f"fit takes n <= {EXHAUSTIVE_MAX_N}; use --sampling sparse")
    n_samples, n_cond, _ = values.v.shape
    log.info(
        "fit %s: %d samples x %d conditions, n in %s, %s, solver %s, noise %g",
        source, n_samples, n_cond, sorted(set(values.n_vars.tolist())),
        "sparse " + ("(the file's design)" if designed else f"(budget {budget})") if sparse
        else "exhaustive", solver, noise,
    )
    try:
        if sparse:
            return fit_sparse(values, budget=None if designed else budget, seed=seed,
                              solver=solver, noise=noise)
        return fit_values(values, solver=solver, noise=noise, learning_rate=learning_rate,
                          steps=steps)
    except (ValueError, RuntimeError) as e:  # bad values or options; no feasible sparse fit
        log.debug("fit failed", exc_info=True)
        raise InputError(f"{source}: {e}") from e
