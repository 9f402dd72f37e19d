"""AND-OR interactions for a whole values cube (sample, condition, mask).

Samples are grouped by their number of variables n; each group's rows (sample x condition)
go to `ips.interactions.and_or` in batches of shape (rows, 2**n).
"""

from __future__ import annotations

import logging
import time

import numpy as np
import xarray as xr
from tqdm import tqdm

from ips import __version__
from ips.io import DIMS, Values

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
    """Fit every (sample, condition) row of `values`; return the interactions as a Dataset.

    `and`, `or`, `gamma` have dims (sample, condition, mask), NaN beyond each sample's 2**n
    entries like `values.v`; `objective`, `matching_error`, `duality_gap` have dims
    (sample, condition). `learning_rate`, `steps`: settings of ``solver="sgd"`` (None: the
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
            rows = v[idx, :, :size].reshape(-1, size)
            batch = max(1, _BATCH_VALUES >> n)
            parts, ran = [], set()
            for start in range(0, len(rows), batch):
                res = and_or(rows[start : start + batch], solver=solver, noise=noise,
                             learning_rate=learning_rate, steps=steps)
                parts.append(res)
                ran.add(res.solver)
                bar.update(min(batch, len(rows) - start))
            for name, attr in zip(_PER_MASK, ("and_", "or_", "gamma")):
                got = np.concatenate([np.asarray(getattr(r, attr), float) for r in parts])
                per_mask[name][idx, :, :size] = got.reshape(len(idx), n_cond, size)
            for name in _PER_ROW:
                got = np.concatenate([np.asarray(getattr(r, name), float) for r in parts])
                per_row[name][idx] = got.reshape(len(idx), n_cond)
            used = ",".join(sorted(ran))
            solvers_used.append(f"n={n}: {used}")
            log.info(
                "n=%d: %d samples x %d conditions, solver %s (requested %s), "
                "max matching error %.3g, %.2f s",
                n, len(idx), n_cond, used, solver,
                np.max(per_row["matching_error"][idx]), time.perf_counter() - t0,
            )

    data = {k: (DIMS, a) for k, a in per_mask.items()}
    data |= {k: (DIMS[:2], a) for k, a in per_row.items()}
    data["n_vars"] = (DIMS[:1], n_vars)
    coords = {k: ((k,), a) for k, a in values.coords.items()}
    attrs = {
        "solver_requested": solver,
        "solver_used": "; ".join(solvers_used),
        "optimum": _optimum(solver, learning_rate, steps),
        "noise": float(noise),
        "ips_version": __version__,
    }
    if solver == "sgd":
        attrs |= {"sgd_learning_rate": float(learning_rate), "sgd_steps": int(steps)}
    return xr.Dataset(data, coords=coords, attrs=attrs)


def _optimum(solver: str, learning_rate: float, steps: int) -> str:
    """Which point of Eq. 12's (non-unique) optimum the fit is, in words, for the file."""
    if solver != "sgd":
        return "canonical: the l1-optimal split of least l2 norm (Eq. 12)"
    return (
        f"sgd: gamma learned from 0 by subgradient descent on Eq. 12 (paper Appendix D), "
        f"momentum 0.9, learning rate {learning_rate:g} decaying to {learning_rate / 10:g}, "
        f"{steps} steps; not the canonical optimum"
    )
