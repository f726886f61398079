"""Loaders: every documented format, the sample datasets, and a one-line DataError for every bad-input rule."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

from dplens.core.data.datasets import (
    DEFAULT_DATASET,
    MAX_UPLOAD_BYTES,
    SAMPLE_DATASETS,
    DataError,
    histogram_from_records,
    load_histogram,
)
from dplens.core.data.domain import MAX_CELLS, Histogram


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


# ----------------------------------------------------------------------------- formats
@pytest.mark.parametrize("data, counts, labels", [
    (b"count\n3\n0\n5\n", [3, 0, 5], ()),
    (b"label,count\na,3\nb,0\nc,5\n", [3, 0, 5], (("a", "b", "c"),)),
    (b"Bin;Count\nx;1\ny;2\n", [1, 2], (("x", "y"),)),
    (b"bin\tcount\nx\t4\n", [4], (("x",),)),
    (b"3\n0\n5\n", [3, 0, 5], ()),
    (b'{"counts": [3, 0, 5], "labels": ["a", "b", "c"]}', [3, 0, 5], (("a", "b", "c"),)),
    (b"[1, 2.5]", [1, 2.5], ()),
], ids=["count", "label-count", "semicolon", "tab", "headerless-column", "json", "json-list"])
def test_1d_formats(data, counts, labels):
    h = load_histogram(data)
    assert h.counts.shape == (len(counts),)
    assert h.vector.tolist() == counts
    assert h.labels == labels


@pytest.mark.parametrize("data, filename", [
    (b"row,col,count\n0,0,1\n1,2,5\n0,1,2\n1,2,1\n", None),  # repeated cells add up
    (b"1,2,0\n0,0,6\n", None),
    (b'{"counts": [[1, 2, 0], [0, 0, 6]]}', "grid.json"),
    (_npy(np.array([[1, 2, 0], [0, 0, 6]])), "grid.npy"),
], ids=["row-col-count", "matrix", "json", "npy"])
def test_2d_formats(data, filename):
    h = load_histogram(data, filename=filename)
    np.testing.assert_array_equal(h.counts, [[1, 2, 0], [0, 0, 6]])
    assert h.domain.shape == (2, 3)


def test_npy_1d_and_names_from_paths(tmp_path):
    path = tmp_path / "my_counts.npy"
    np.save(path, np.array([1, 0, 7], dtype=np.int32))
    h = load_histogram(path)
    assert h.vector.tolist() == [1.0, 0.0, 7.0] and h.name == "my_counts"
    assert load_histogram(str(path)).name == "my_counts"
    assert load_histogram(b"count\n1\n", filename="up.csv").name == "up"
    assert load_histogram(b'{"counts": [1], "name": "mine"}').name == "mine"


def test_sample_datasets_all_load():
    assert DEFAULT_DATASET in SAMPLE_DATASETS
    shapes = {}
    for name, (_, description) in SAMPLE_DATASETS.items():
        h = load_histogram(name)
        assert isinstance(h, Histogram) and h.name == name and description
        assert h.total > 0 and np.all(h.counts >= 0)
        assert ("2-D" in description) == (h.counts.ndim == 2)
        shapes[name] = h.counts.shape
    assert sum(len(s) == 1 for s in shapes.values()) >= 3
    assert any(len(s) == 2 for s in shapes.values())


# ----------------------------------------------------------------------------- raw records
RECORDS = b"age,city,score\n23,A,1.5\n35,B,2\n41,A,x\n"


def test_records_numeric_with_bins_and_edges():
    by_bins = histogram_from_records(RECORDS, "age", bins=2)
    assert by_bins.vector.tolist() == [1.0, 2.0]
    assert by_bins.labels == (("[23, 32)", "[32, 41)"),)
    by_edges = histogram_from_records(RECORDS, "age", edges=[0, 30, 60, 90], name="ages")
    assert by_edges.vector.tolist() == [1.0, 2.0, 0.0] and by_edges.name == "ages"


def test_records_categorical_and_from_a_path(tmp_path):
    path = tmp_path / "people.csv"
    path.write_bytes(RECORDS)
    h = histogram_from_records(path, "city")
    assert h.vector.tolist() == [2.0, 1.0] and h.labels == (("A", "B"),)
    assert histogram_from_records(b"v\n7\n7\n7\n", "v", bins=1).vector.tolist() == [3.0]


@pytest.mark.parametrize("kwargs, message", [
    ({"column": "zzz"}, r"no column 'zzz' in the records; columns are \['age', 'city', 'score'\]"),
    ({"column": "score", "bins": 3}, r"row 4, column 'score': 'x' is not a number"),
    ({"column": "age", "edges": [5, 1]}, "bin edges must be at least two strictly increasing numbers"),
    ({"column": "age", "edges": [5]}, "bin edges must be at least two"),
    ({"column": "age", "bins": 0}, "bins must be an integer in"),
])
def test_records_errors(kwargs, message):
    with pytest.raises(DataError, match=message):
        histogram_from_records(RECORDS, **kwargs)


def test_records_missing_file_is_a_data_error(tmp_path):
    with pytest.raises(DataError, match="no records file"):
        histogram_from_records(tmp_path / "nope.csv", "a")


# ----------------------------------------------------------------------------- bad input: one line, names the rule
BAD = [
    (b"", "file is empty"),
    (b"\n \n", "file is empty"),
    (b"a,b\n1,2\n", r"needs a 'count' column .*found \['a', 'b'\]"),
    (b"count\n", "header but no data rows"),
    (b"label,count\na,3\nb,x\n", r"row 3, column 'count': 'x' is not a finite number"),
    (b"count\n1\nnan\n", r"row 3, column 'count': 'nan' is not a finite number"),
    (b"count\n1\ninf\n", r"row 3, column 'count': 'inf' is not a finite number"),
    (b"label,count\na,1\nb,\n", r"row 3, column 'count': the value is missing"),
    (b"count\n1\n-2\n", r"cell 1 .* is -2; counts must be >= 0"),
    (b"1,2\n3,-4\n", r"cell \(1, 1\) is -4; counts must be >= 0"),
    (b"1,2,3\n4,5\n", r"row 2 has 2 values but earlier rows have 3; .*ragged"),
    (b"label,count\na,1,5\nb,2,6", r"row 2 has 3 values but earlier rows have 2; .*ragged"),
    (b"count\n1,9\n2,8", r"row 2 has 2 values but earlier rows have 1; .*ragged"),
    (b"label,count\na,1\n\nb\n", r"row 4 has 1 value but earlier rows have 2; .*ragged"),
    (b"1,2\n4,5,6\n", r"row 2 has 3 values but earlier rows have 2; .*ragged"),
    (b"row,col,count\n0,0,1\n-1,0,2\n", "column 'row' must hold non-negative integer indices"),
    (b"row,col,count\n0,0.5,1\n", "column 'col' must hold non-negative integer indices"),
    (b"row,col,count\n0,0,1\n3000,3000,2\n", r"grid 3001 × 3001 has more than 4194304 cells \(2\^22\)"),
    (b'{"counts": [[1, 2], [3]]}', r'"counts" is ragged: rows have lengths \[1, 2\]'),
    (b'{"counts": [1, "a"]}', r'"counts" entry 1 is \'a\'; every entry must be a number'),
    (b'{"counts": [1, NaN]}', "is nan; counts must be finite numbers"),
    (b'{"counts": [1, -1]}', "counts must be >= 0"),
    (b'{"counts": []}', '"counts" must be a non-empty list'),
    (b'{"x": 1}', 'JSON must be an object with a "counts" list'),
    (b'{"counts": [1, 2', r"invalid JSON: .*\(line 1\)"),
    (b"\x00\x01binary", "file looks binary"),
    ("count\n\xe9\n".encode("latin-1"), r"file is not UTF-8 text \(byte 6\)"),
    (b"\x93NUMPYgarbage", "not a readable .npy array"),
    (_npy(np.zeros((2, 2, 2))), r"non-empty 1-D or 2-D array, got shape \(2, 2, 2\)"),
    (_npy(np.array(["a"])), ".npy array must be real numbers"),
    (_npy(np.array([1, np.inf])), "is inf; counts must be finite numbers"),
    (_npy(np.zeros(MAX_CELLS + 1, dtype=np.uint8)), r"histogram has 4194305 cells; the limit is 4194304 \(2\^22\)"),
]


@pytest.mark.parametrize("data, message", BAD, ids=[f"bad{i}" for i in range(len(BAD))])
def test_bad_input_gives_a_one_line_data_error(data, message):
    with pytest.raises(DataError, match=message) as info:
        load_histogram(data)
    assert "\n" not in str(info.value) and len(str(info.value)) < 200


def test_files_over_50_mb_are_refused_before_reading(tmp_path):
    path = tmp_path / "huge.csv"
    with path.open("wb") as f:
        f.truncate(MAX_UPLOAD_BYTES + 1)  # sparse file: nothing is written
    with pytest.raises(DataError, match="file is 50.0 MB; the limit is 50 MB"):
        load_histogram(path)
    with pytest.raises(DataError, match="the limit is 50 MB"):
        load_histogram(b"1\n" * (MAX_UPLOAD_BYTES // 2 + 1))
    with pytest.raises(DataError, match="the limit is 50 MB"):
        histogram_from_records(path, "a")


def test_unknown_path_or_sample_lists_the_samples(tmp_path):
    with pytest.raises(DataError, match="no sample dataset of that name .*smooth"):
        load_histogram(str(tmp_path / "missing.csv"))
    with pytest.raises(DataError, match="cannot read a histogram from int"):
        load_histogram(3)  # type: ignore[arg-type]


def test_json_round_trip_of_a_2d_histogram():
    counts = [[0.0, 1.5], [2.0, 0.0]]
    h = load_histogram(json.dumps({"counts": counts, "labels": [["r0", "r1"], ["c0", "c1"]]}).encode())
    assert h.counts.tolist() == counts
    assert h.bin_labels() == ["r0|c0", "r0|c1", "r1|c0", "r1|c1"]


def test_labelled_2d_long_format_and_notes_on_what_was_ignored():
    notes = []
    hist = load_histogram(b"age_band,region,count\n17-24,West,3\n17-24,East,5\n25-34,West,7\n", notes=notes)
    assert hist.domain.shape == (2, 2) and hist.vector.tolist() == [3.0, 5.0, 7.0, 0.0]
    assert hist.labels == (("17-24", "25-34"), ("West", "East"))
    assert "1 cells not listed are 0" in notes[0]
    notes = []
    assert load_histogram(b"label,extra,count\n1,2,3\n4,5,6\n", notes=notes).domain.shape == (2,)
    assert "column 'extra' ignored" in notes[0]
    notes = []
    histogram = load_histogram(b"bin,count,lower,upper,level\na,3,1,5,0.95\nb,4,2,6,0.95\n", notes=notes)
    assert histogram.domain.shape == (2,)
    assert "lower, upper, level" in notes[0]
    with pytest.raises(DataError, match="3 label columns"):
        load_histogram(b"a,b,c,count\nx,y,z,1\n")
    with pytest.raises(DataError, match="listed twice"):
        load_histogram(b"a,b,count\nx,y,1\nx,y,2\n")
