"""Core pieces of the curator flow (issue #17): long-form grids, multi-target epsilon, intervals, recipes."""

import pytest

from core.datasets import DataError, load_histogram

LONG_FORM = b"row,col,count\n0,0,5\n1,2,3\n"


def test_long_form_grid_inferred_from_the_largest_index_says_so():
    notes: list[str] = []
    hist = load_histogram(LONG_FORM, notes=notes)
    assert hist.domain.shape == (2, 3)
    assert len(notes) == 1 and "inferred from the largest row and col index" in notes[0]


def test_long_form_grid_uses_the_declared_size():
    notes: list[str] = []
    hist = load_histogram(LONG_FORM, grid_shape=(256, 256), notes=notes)
    assert hist.domain.shape == (256, 256)
    assert hist.total == 8
    assert "256 × 256 as declared" in notes[0]


def test_long_form_declared_size_too_small_names_the_index():
    with pytest.raises(DataError, match="col index 2 but the declared grid has 2 cols"):
        load_histogram(LONG_FORM, grid_shape=(4, 2))


def test_full_long_form_grid_needs_no_note():
    notes: list[str] = []
    load_histogram(b"row,col,count\n0,0,1\n0,1,1\n1,0,1\n1,1,0\n", notes=notes)
    assert notes == []
