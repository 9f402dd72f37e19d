"""Labelled interactions: a run's interactions as tidy tables of words, not arrays of bitmasks
(`ips export`; docs/cli.md#ips-export). The result object owns its I/O, as shapiq's
`InteractionValues` does: a data frame out, save and load.

`LabelledInteractions` holds two `pandas.DataFrame`s of one model on one dataset, read from
its values and interactions files (`ips.formats.shards.load`):

* ``interactions``: one row per sample, condition and subset S of the sample's variables
  (mask, bitmask of the variables' positions; ∅ included): ``model``, ``dataset``,
  ``sample``, ``condition``, ``mask``, ``words`` (the variables of S in position order,
  joined by " | "), ``order`` (|S|), ``and_effect``, ``or_effect`` (I_AND(S), I_OR(S)),
  ``and_normalised``, ``or_normalised`` (Ĩ of Section 3.2, `ips.analysis.metrics.normalize`;
  empty for ∅, which lies outside Ω) and ``and_salient``, ``or_salient`` (|Ĩ| > τ);
* ``values``: one row per sample, condition and mask: the same labels, the words kept in the
  masked prompt x_S (``words``), and ``v``, the scored output v(x_S).

It writes and reads itself (`save`, `load`: Parquet, or CSV for a path ending in .csv), and
its ``tau`` and ``normalisation`` (the set `normalize` ran over) and the model and dataset
travel in the file names' directory (`save`) or the columns. Only exhaustive fits carry every subset; a sparse fit's estimate is refused.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ips.errors import InputError

#: what separates the words of S in the `words` column
SEPARATOR = " | "
#: the files `save` writes in its directory, per table and format
FILES = {"interactions": "interactions", "values": "values"}
FORMATS = ("parquet", "csv")


@dataclass
class LabelledInteractions:
    """A run's interactions and values with their words (module docstring)."""

    interactions: object  # pandas.DataFrame
    values: object  # pandas.DataFrame
    tau: float
    normalisation: str = "nonempty"  # ips.analysis.metrics.NORMALISATIONS

    @classmethod
    def from_files(cls, values: Sequence[str | os.PathLike],
                   interactions: Sequence[str | os.PathLike], tau: float,
                   normalisation: str = "nonempty") -> LabelledInteractions:
        """Read the shards of one model on one dataset (values files and, in the same order,
        their interactions files) and label them; `InputError` for a sparse fit."""
        from ips.formats.shards import load

        merged = load(values, interactions)
        if merged.and_ is None:
            raise InputError(f"{values[0]}: a sparse fit holds no value of most subsets; "
                             "export reads exhaustive fits (sampling: exhaustive)")
        return cls.from_arrays(merged.attrs["model"], merged.attrs["dataset"],
                               merged.samples, merged.conditions["condition"], merged.n_vars,
                               merged.words, merged.and_, merged.or_, merged.v, tau,
                               merged.scored, normalisation)

    @classmethod
    def from_arrays(cls, model: str, dataset: str, samples, conditions, n_vars, words,
                    and_, or_, v, tau: float, scored=None,
                    normalisation: str = "nonempty") -> LabelledInteractions:
        """The tables of arrays indexed (sample, condition, mask) as the files hold them;
        `scored` (sample, condition; None: all): a row not scored (a rewording the sample
        lacks) has no row in either table."""
        import pandas as pd

        from ips.analysis.metrics import normalize

        n_vars = np.asarray(n_vars, np.int64)
        scored = np.ones(and_.shape[:2], bool) if scored is None else np.asarray(scored, bool)
        norm = normalize(and_, or_, np.where(scored, n_vars[:, None], 0),
                         normalisation=normalisation)
        rows, value_rows = [], []
        for s, sample in enumerate(samples):
            n = int(n_vars[s])
            masks = np.arange(1 << n)
            names = [str(words[s][i]) if words is not None else f"x{i}" for i in range(n)]
            subset = [SEPARATOR.join(w for i, w in enumerate(names) if m >> i & 1)
                      for m in masks]
            order = [int(m).bit_count() for m in masks]
            for c, condition in enumerate(conditions):
                if not scored[s, c]:
                    continue
                label = {"model": model, "dataset": dataset, "sample": str(sample),
                         "condition": str(condition)}
                a, o = norm[s, c, 0, :1 << n], norm[s, c, 1, :1 << n]
                rows.append(pd.DataFrame({
                    **label, "mask": masks, "words": subset, "order": order,
                    "and_effect": and_[s, c, :1 << n], "or_effect": or_[s, c, :1 << n],
                    "and_normalised": a, "or_normalised": o,
                    "and_salient": np.abs(np.nan_to_num(a)) > tau,
                    "or_salient": np.abs(np.nan_to_num(o)) > tau}))
                value_rows.append(pd.DataFrame({**label, "mask": masks, "words": subset,
                                                "order": order, "v": v[s, c, :1 << n]}))
        return cls(pd.concat(rows, ignore_index=True), pd.concat(value_rows, ignore_index=True),
                   float(tau), normalisation)

    def to_frame(self):
        """The interactions table (a `pandas.DataFrame`)."""
        return self.interactions

    def salient(self):
        """The rows with a salient AND or OR effect at τ."""
        t = self.interactions
        return t[t["and_salient"] | t["or_salient"]]

    def save(self, directory: str | os.PathLike) -> list[Path]:
        """Write both tables into `directory` in every format of `FORMATS`
        (`interactions.parquet`, `interactions.csv`, `values.parquet`, `values.csv`); τ is
        the directory's `tau` file, the normalisation its `normalisation` file. Returns the
        paths written."""
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        written = []
        for name, table in (("interactions", self.interactions), ("values", self.values)):
            for fmt in FORMATS:
                path = out / f"{FILES[name]}.{fmt}"
                if fmt == "parquet":
                    table.to_parquet(path, index=False)
                else:
                    table.to_csv(path, index=False)
                written.append(path)
        (out / "tau").write_text(f"{self.tau!r}\n", encoding="utf-8")
        (out / "normalisation").write_text(f"{self.normalisation}\n", encoding="utf-8")
        return [*written, out / "tau", out / "normalisation"]

    @classmethod
    def load(cls, directory: str | os.PathLike, fmt: str = "parquet") -> LabelledInteractions:
        """The tables `save` wrote into `directory`, in format `fmt`; `InputError` naming a
        missing file."""
        import pandas as pd

        out = Path(directory)
        paths = {name: out / f"{FILES[name]}.{fmt}" for name in FILES} | {"tau": out / "tau"}
        for path in paths.values():
            if not path.is_file():
                raise InputError(f"{path}: missing; export the run first (ips export)")
        read = pd.read_parquet if fmt == "parquet" else (
            lambda p: pd.read_csv(p, dtype={"sample": str, "condition": str},
                                  keep_default_na=False, na_values=[""]))
        tables = {name: read(paths[name]) for name in FILES}
        if fmt == "csv":
            tables["interactions"]["words"] = tables["interactions"]["words"].fillna("")
            tables["values"]["words"] = tables["values"]["words"].fillna("")
        rule = out / "normalisation"  # exports before the setting: the one rule there was
        return cls(tables["interactions"], tables["values"],
                   float(paths["tau"].read_text(encoding="utf-8")),
                   rule.read_text(encoding="utf-8").strip() if rule.is_file() else "nonempty")
