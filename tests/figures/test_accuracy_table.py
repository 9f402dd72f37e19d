"""Accuracy per model, dataset and template (`accuracy_table.csv` and the README's section):
the metrics' accuracy with its counts and exact interval, checked by hand."""

import numpy as np
import pytest

from builders import attrs, make_metrics, write_all
from ips.figures.tables.results import accuracy_rows
from ips.figures.text.readme import accuracy_section
from ips.formats.metrics import read_metrics


def test_accuracy_rows_give_k_of_n_and_the_clopper_pearson_interval(tmp_path):
    """4 of 10 correct: the exact 95 % interval is [0.1216, 0.7376] (Clopper and Pearson's
    tables); a condition no sample was scored under has no row."""
    ds = make_metrics("m", attrs())
    C = ds.sizes["condition"]
    acc = np.linspace(0.4, 0.8, C)
    n = np.full(C, 10)
    n[-1] = 0
    ds = ds.assign(accuracy=("condition", acc), accuracy_n=("condition", n))
    (path,) = write_all(tmp_path, [ds])
    rows = accuracy_rows([read_metrics(path)])
    assert [r["condition"] for r in rows] == list(ds["condition"].values[:-1])
    first = rows[0]
    assert (first["correct"], first["n"], first["template"]) == (4, 10, "T1")
    assert first["ci_low"] == pytest.approx(0.1216, abs=1e-4)
    assert first["ci_high"] == pytest.approx(0.7376, abs=1e-4)
    lines = accuracy_section([read_metrics(path)])
    assert any(line.startswith("| m | ") and "T1 4/10 (0.40)" in line for line in lines)


def test_metrics_files_before_the_counts_give_no_rows(tmp_path):
    (path,) = write_all(tmp_path, [make_metrics("m", attrs())])
    assert accuracy_rows([read_metrics(path)]) == []
    assert accuracy_section([read_metrics(path)]) == []
