"""A study's committed CSV tables beside the same tables made again (a rebuild from its
archive, or a run of other code): which cells differ, and by how much.

Two tables agree when they have the same header and rows and every cell is equal: as text,
or, where both cells are numbers, within ``tolerance`` (absolute; NaN equals NaN). With
``tolerance = 0`` a rebuild must give the committed numbers exactly.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from pathlib import Path

from ips.errors import InputError


@dataclass
class TableDiff:
    """How one table differs: ``cells`` differing cells, the largest numeric difference
    ``max_abs`` (0 when none is numeric) and a few examples ``(row, column, a, b)``; or a
    ``problem`` (missing file, other header, other row count) that stops the comparison."""

    name: str
    cells: int = 0
    max_abs: float = 0.0
    examples: list[tuple[int, str, str, str]] = field(default_factory=list)
    problem: str = ""

    @property
    def equal(self) -> bool:
        return not self.problem and not self.cells

    def line(self) -> str:
        """One line for a person."""
        if self.problem:
            return f"{self.name}: {self.problem}"
        if not self.cells:
            return f"{self.name}: equal"
        row, col, a, b = self.examples[0]
        return (f"{self.name}: {self.cells} cells differ (largest numeric difference "
                f"{self.max_abs:.3g}); first at row {row}, column {col}: {a!r} vs {b!r}")


def _rows(path: Path) -> list[list[str]]:
    try:
        with open(path, newline="", encoding="utf-8") as f:
            return list(csv.reader(f))
    except OSError as e:
        raise InputError(f"{path}: cannot be read ({e.strerror})") from None


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def compare_table(committed: Path, rebuilt: Path, tolerance: float = 0.0) -> TableDiff:
    """The differences of ``rebuilt`` from ``committed`` (two CSV files)."""
    diff = TableDiff(Path(committed).name)
    if not Path(rebuilt).is_file():
        diff.problem = f"not made again ({rebuilt} is missing)"
        return diff
    a, b = _rows(Path(committed)), _rows(Path(rebuilt))
    if a[:1] != b[:1]:
        diff.problem = "other columns"
        return diff
    if len(a) != len(b):
        diff.problem = f"{len(b) - 1} rows made again, {len(a) - 1} committed"
        return diff
    header = a[0] if a else []
    for r, (ra, rb) in enumerate(zip(a[1:], b[1:]), start=1):
        for c, (x, y) in enumerate(zip(ra, rb)):
            if x == y:
                continue
            fx, fy = _number(x), _number(y)
            if fx is not None and fy is not None:
                if math.isnan(fx) and math.isnan(fy):
                    continue
                gap = abs(fx - fy)
                if gap <= tolerance:
                    continue
                diff.max_abs = max(diff.max_abs, gap if math.isfinite(gap) else math.inf)
            diff.cells += 1
            if len(diff.examples) < 5:
                diff.examples.append((r, header[c] if c < len(header) else str(c), x, y))
        if len(ra) != len(rb):
            diff.cells += abs(len(ra) - len(rb))
    return diff


def compare_tables(committed: Path, rebuilt: Path, tolerance: float = 0.0) -> list[TableDiff]:
    """Every CSV table of the folder ``committed`` against the file of the same name in
    ``rebuilt`` (sorted by name)."""
    tables = sorted(Path(committed).glob("*.csv"))
    if not tables:
        raise InputError(f"{committed}: no CSV tables to compare")
    return [compare_table(t, Path(rebuilt) / t.name, tolerance) for t in tables]
