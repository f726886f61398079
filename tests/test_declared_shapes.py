"""Shapes come from declarations (docs/protection.md): an indexed row,col,count file or a labelled A,B,count file is
released only over a declared grid or declared levels; without one it can be explored but not released."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dplens.cli import main
from dplens.core.data.datasets import DataError, load_histogram, shape_from_data
from tests.test_app import open_page

BASE = b"row,col,count\n0,0,3\n1,2,4\n3,3,1\n"          # a 4 x 4 grid, sized by its largest index
NEIGHBOUR = BASE + b"5,5,1\n"                           # one record more, at (5, 5)
LABELLED = b"sex,region,count\nF,north,3\nM,south,2\n"


def test_row_col_count_neighbours_have_the_same_shape_under_a_declaration():
    base, neighbour = (load_histogram(d, grid_shape=(8, 8)) for d in (BASE, NEIGHBOUR))
    assert base.domain.shape == neighbour.domain.shape == (8, 8)
    assert neighbour.total - base.total == 1
    assert shape_from_data(BASE, grid_shape=(8, 8)) is None and shape_from_data(NEIGHBOUR, grid_shape=(8, 8)) is None


def test_row_col_count_neighbours_are_both_refused_without_one(tmp_path, capsys):
    # what the old inference did: 16 cells became 36, so the shape alone told the neighbours apart
    assert load_histogram(BASE).domain.shape == (4, 4) and load_histogram(NEIGHBOUR).domain.shape == (6, 6)
    for name, data in (("base.csv", BASE), ("neighbour.csv", NEIGHBOUR)):
        path = tmp_path / name
        path.write_bytes(data)
        assert "largest row and col index" in shape_from_data(data)
        code = main(["release", "--input", str(path), "--mechanism", "identity", "--epsilon", "1",
                     "--output", str(tmp_path / "out.json")])
        err = capsys.readouterr().err
        assert code == 2 and "is not released" in err and "--shape" in err and err.count("\n") == 1
        assert not (tmp_path / "out.json").exists()


def test_a_declared_grid_releases_and_a_too_small_one_is_refused(tmp_path, capsys):
    path = tmp_path / "grid.csv"
    path.write_bytes(NEIGHBOUR)
    out = tmp_path / "out.json"
    assert main(["release", "--input", str(path), "--shape", "8,8", "--mechanism", "identity", "--epsilon", "1",
                 "--output", str(out)]) == 0
    assert len(json.loads(out.read_text())["counts"]) == 64
    assert main(["release", "--input", str(path), "--shape", "4,4", "--mechanism", "identity", "--epsilon", "1",
                 "--output", str(out)]) == 2
    assert "declare at least 6 rows" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        main(["release", "--input", str(path), "--shape", "8", "--mechanism", "identity", "--epsilon", "1",
              "--output", str(out)])
    assert exit_.value.code == 2 and "--shape: must be two positive integers ROWS,COLS" in capsys.readouterr().err


def test_compare_explores_an_undeclared_grid(tmp_path):
    path = tmp_path / "grid.csv"
    path.write_bytes(NEIGHBOUR)
    assert main(["compare", "--input", str(path), "--mechanisms", "identity", "--epsilons", "1", "--trials", "1",
                 "--output", str(tmp_path / "c.csv")]) == 0


def test_labelled_levels_come_from_the_declaration():
    declared = [["F", "M", "X"], ["north", "south", "east"]]
    hist = load_histogram(LABELLED, levels=declared)
    assert hist.domain.shape == (3, 3) and hist.labels == tuple(tuple(a) for a in declared)
    neighbour = load_histogram(LABELLED + b"X,east,1\n", levels=declared)
    assert neighbour.domain.shape == hist.domain.shape and neighbour.counts[2, 2] == 1
    assert "labels present" in shape_from_data(LABELLED) and shape_from_data(LABELLED, levels=declared) is None
    with pytest.raises(DataError, match=r"row 4: region 'west' is not among the declared levels of 'region'"):
        load_histogram(LABELLED + b"F,west,1\n", levels=declared)


def test_a_labelled_release_needs_declared_levels(tmp_path, capsys):
    path, levels, out = tmp_path / "t.csv", tmp_path / "levels.json", tmp_path / "out.json"
    path.write_bytes(LABELLED)
    levels.write_text(json.dumps({"sex": ["F", "M"], "region": ["north", "south", "east"]}))
    base = ["release", "--input", str(path), "--mechanism", "identity", "--epsilon", "1", "--output", str(out)]
    assert main(base) == 2 and "--levels" in capsys.readouterr().err
    assert main([*base, "--levels", str(levels)]) == 0
    assert np.asarray(json.loads(out.read_text())["counts"]).size == 6


def test_one_d_labels_may_be_declared():
    hist = load_histogram(b"label,count\nb,2\n", levels=[["a", "b", "c"]])
    assert hist.vector.tolist() == [0.0, 2.0, 0.0] and hist.labels == (("a", "b", "c"),)
    with pytest.raises(DataError, match="list 'a' twice"):
        load_histogram(b"label,count\nb,2\n", levels=[["a", "a"]])


def test_samples_are_their_own_declaration(tmp_path):
    assert main(["release", "--input", "grid-2d", "--mechanism", "identity", "--epsilon", "1",
                 "--output", str(tmp_path / "g.json")]) == 0


def _release_on_the_page(grid: tuple[int, int] | None):
    at = open_page("pages/data.py")
    at.file_uploader(key="data_upload").set_value(("grid.csv", NEIGHBOUR, "text/csv")).run()
    if grid is not None:
        at.number_input(key="data_grid_rows").set_value(grid[0])
        at.number_input(key="data_grid_cols").set_value(grid[1])
    at = at.button(key="data_use").click().run()
    assert not at.exception, at.exception
    at = at.switch_page("pages/release.py").run()
    at.radio(key="release_noise_path").set_value("secure")
    at.selectbox(key="release_mechanism").set_value("identity")
    at.number_input(key="release_epsilon").set_value(1.0)
    return at.button(key="release_spend").click().run()


def test_the_release_page_refuses_an_undeclared_grid_and_says_why():
    at = _release_on_the_page(None)
    assert not at.exception and not at.session_state.releases
    assert any("not released" in e.value and "Grid rows" in e.value for e in at.error), [e.value for e in at.error]


def test_the_release_page_releases_over_a_declared_grid():
    at = _release_on_the_page((8, 8))
    assert not at.exception and at.session_state.releases
    assert at.session_state.uploads[at.session_state.dataset_key].domain.shape == (8, 8)


LABELLED_1D = b"label,count\na,3\nb,0\nc,2\n"


def test_a_labelled_one_d_release_needs_declared_levels_and_exploring_does_not(tmp_path, capsys):
    """label,count lists a row per bin: one person in a new category adds a bin, so the release needs --levels."""
    path, levels, out = tmp_path / "t.csv", tmp_path / "levels.json", tmp_path / "out.json"
    path.write_bytes(LABELLED_1D)
    levels.write_text(json.dumps({"label": ["a", "b", "c", "d"]}))
    assert "its bins are the labels present" in shape_from_data(LABELLED_1D)
    assert shape_from_data(LABELLED_1D, levels=[["a", "b", "c", "d"]]) is None
    base = ["release", "--input", str(path), "--mechanism", "identity", "--epsilon", "1", "--output", str(out)]
    assert main(base) == 2
    err = capsys.readouterr().err
    assert "is not released" in err and "--levels" in err and err.count("\n") == 1 and not out.exists()
    assert main(["compare", "--input", str(path), "--mechanisms", "identity", "--epsilons", "1", "--trials", "1",
                 "--output", str(tmp_path / "c.csv")]) == 0  # exploring needs no declaration
    assert main([*base, "--levels", str(levels)]) == 0
    assert np.asarray(json.loads(out.read_text())["counts"]).size == 4  # the declared 'd' is released too


def _release_labelled_on_the_page(levels: str | None):
    at = open_page("pages/data.py")
    at.file_uploader(key="data_upload").set_value(("t.csv", LABELLED_1D, "text/csv")).run()
    if levels is not None:
        at.text_area(key="data_levels").set_value(levels)
    at = at.button(key="data_use").click().run()
    assert not at.exception, at.exception
    notes = [i.value for i in at.info]
    at = at.switch_page("pages/release.py").run()
    at.radio(key="release_noise_path").set_value("secure")
    at.selectbox(key="release_mechanism").set_value("identity")
    at.number_input(key="release_epsilon").set_value(1.0)
    return at.button(key="release_spend").click().run(), notes


def test_the_release_page_refuses_undeclared_one_d_labels_and_releases_declared_ones():
    at, notes = _release_labelled_on_the_page(None)
    assert any("Levels \\(label,count" in n for n in notes), notes  # the Data page says so at once (escaped)
    assert not at.exception and not at.session_state.releases
    assert any("not released" in e.value and "label,count" in e.value for e in at.error), [e.value for e in at.error]
    at, _ = _release_labelled_on_the_page("a, b, c, d")
    assert not at.exception and at.session_state.releases
    assert at.session_state.uploads[at.session_state.dataset_key].labels == (("a", "b", "c", "d"),)


def test_the_gradual_page_starts_no_real_walk_on_undeclared_labels():
    """A walk releases the counts at every step, so their shape must not come from the private file either."""
    at = open_page("pages/data.py")
    at.file_uploader(key="data_upload").set_value(("t.csv", LABELLED_1D, "text/csv")).run()
    at = at.button(key="data_use").click().run()
    at = at.switch_page("pages/gradual.py").run()
    at.text_input(key="real_walk_schedule").set_value("0.1, 0.5")
    at = at.button(key="real_walk_start").click().run()
    assert not at.exception
    assert any("No walk started" in e.value and "label,count" in e.value for e in at.error), [e.value for e in at.error]
    from dplens.core.privacy.ledger_store import LedgerStore
    from dplens.core.release.walk_store import WalkStore

    assert not WalkStore(LedgerStore().path).walks()
