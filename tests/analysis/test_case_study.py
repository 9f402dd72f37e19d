"""The case study's choice of cell (ips.analysis.case_study.choose_cell), by hand."""

import numpy as np

from ips.analysis.case_study import choose_cell

NAN = np.nan


def test_changed_cells_win_over_larger_unchanged_ones():
    per_pair = np.array([[1.9, 0.5], [1.2, NAN]])
    changed = np.array([[False, True], [True, False]])
    # the largest value (1.9) kept its prediction; of the changed cells 1.2 > 0.5
    assert choose_cell(per_pair, changed, ["a", "b"]) == (1, 0)


def test_without_a_changed_cell_the_largest_value_wins():
    per_pair = np.array([[0.3, 0.8], [0.7, NAN]])
    assert choose_cell(per_pair, np.zeros((2, 2), bool), ["a", "b"]) == (0, 1)


def test_ties_go_to_the_smallest_sample_id_then_the_first_pair():
    per_pair = np.array([[1.0, 1.0], [1.0, 1.0]])
    changed = np.ones((2, 2), bool)
    assert choose_cell(per_pair, changed, ["z", "b"]) == (1, 0)  # id "b" < "z"
    assert choose_cell(per_pair, changed, ["a", "b"]) == (0, 0)


def test_no_valued_cell():
    assert choose_cell(np.full((2, 3), NAN), np.ones((2, 3), bool), ["a", "b"]) is None


def test_the_unchanged_cell_beside_the_changed_one():
    per_pair = np.array([[1.9, 0.5], [1.2, 0.4]])
    changed = np.array([[False, True], [True, False]])
    assert choose_cell(per_pair, changed, ["a", "b"], want=False) == (0, 0)  # 1.9 > 0.4
    assert choose_cell(per_pair, changed, ["a", "b"], want=True) == (1, 0)
    assert choose_cell(per_pair, np.ones((2, 2), bool), ["a", "b"], want=False) is None
