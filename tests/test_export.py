"""Exports: CSV/JSON round trips, full metadata, only released values, spreadsheet-formula neutralisation."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dplens import __version__
from dplens.core.mechanisms import MECHANISMS, NEIGHBOURING, Release
from dplens.core.privacy.definitions import PureDP
from dplens.core.queries.workloads import Prefix
from dplens.core.release.export import (
    ExportKeys,
    history_to_csv,
    neutralise,
    release_metadata,
    release_to_csv,
    release_to_json,
)

labels_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")) | st.sampled_from("\t\r\n,\""),
                      max_size=12)


def _keys(labels) -> ExportKeys:
    return ExportKeys(("bin",), (tuple(labels),))


def _rows(data: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(data.decode())))


@settings(max_examples=50, deadline=None)
@given(values=st.lists(st.floats(-1e12, 1e12), min_size=1, max_size=20), data=st.data())
def test_csv_round_trip(values, data):
    labels = data.draw(st.lists(labels_text, min_size=len(values), max_size=len(values)))
    release = Release("identity", PureDP(1.0), 1.0, np.array(values), np.array(values))
    rows = _rows(release_to_csv(release, _keys(labels)))
    assert rows[0] == ["bin", "count"] and len(rows) == len(values) + 1
    # a CR inside a label comes back as LF (a bare CR would break the CSV)
    assert [r[0] for r in rows[1:]] == [neutralise(label).replace("\r\n", "\n").replace("\r", "\n")
                                        for label in labels]
    np.testing.assert_allclose([float(r[1]) for r in rows[1:]], values, rtol=1e-9)


def test_csv_without_estimate_writes_query_answers():
    release = Release("laplace-on-answers", PureDP(1.0), 1.0, np.array([1.25, -3.0]), None)
    assert _rows(release_to_csv(release, _keys(["ignored", "too"]))) == [["query", "answer"], ["0", "1.25"],
                                                                          ["1", "-3"]]
    with pytest.raises(ValueError, match="3 labelled cells for 2 released values"):
        release_to_csv(Release("identity", PureDP(1.0), 1.0, np.ones(2), np.ones(2)), _keys(["a", "b", "c"]))


@settings(max_examples=30, deadline=None)
@given(values=st.lists(st.floats(-1e12, 1e12), min_size=1, max_size=20))
def test_json_round_trip_with_metadata(values):
    release = Release("identity", PureDP(0.5), 0.5, np.array(values), np.array(values),
                      params={"noise_scale": np.float64(2)})
    doc = json.loads(release_to_json(release, workload="prefix", noise_path="secure", export_id="e1",
                                     dataset="mine", keys=_keys([f"b{i}" for i in range(len(values))])))
    assert doc["counts"] == [float(v) for v in values]
    assert doc["labels"] == [f"b{i}" for i in range(len(values))]
    assert doc["export_id"] == "e1" and doc["params"] == {"noise_scale": 2.0}
    assert {"mechanism", "epsilon", "privacy_loss", "workload", "params", "neighbouring", "version",
            "created", "export_id"} <= set(doc)
    assert doc["neighbouring"] == NEIGHBOURING and doc["version"] == __version__
    assert doc["epsilon"] == 0.5 and doc["privacy_loss"] == 0.5 and doc["delta"] == 0.0


def test_json_of_answers_only():
    release = Release("laplace-on-answers", PureDP(1.0), 1.0, np.array([2.5]), None)
    doc = json.loads(release_to_json(release, workload="total", noise_path="secure"))
    assert doc["answers"] == [2.5] and "counts" not in doc and doc["noise_path"] == "secure"


def test_exports_hold_only_released_values_never_true_counts_or_details():
    x = np.array([1234.0, 5678.0, 91011.0])
    release = MECHANISMS["identity"].run(x, Prefix(3), 1.0, np.random.default_rng(0))
    release = Release(release.mechanism, release.budget, release.privacy_loss, release.answers,
                      release.estimate, release.params, details={"tree": "SECRET-DETAIL"})
    as_csv = release_to_csv(release, _keys(["a", "b", "c"])).decode()
    as_json = release_to_json(release, workload="prefix", noise_path="secure", keys=_keys(["a", "b", "c"]))
    released = [float(r[1]) for r in _rows(as_csv.encode())[1:]]
    np.testing.assert_allclose(released, release.estimate, rtol=1e-9)
    doc = json.loads(as_json)
    numbers = set(released) | set(doc["counts"]) | {v for v in doc.values() if isinstance(v, float)}
    assert numbers.isdisjoint(x) and numbers.isdisjoint(np.cumsum(x))
    for text in (as_csv, as_json):
        assert "SECRET-DETAIL" not in text
    assert "tree" not in json.dumps(release_metadata(release, workload="prefix", noise_path="secure"))


@pytest.mark.parametrize("cell, safe", [
    ("=SUM(A1:A9)", "'=SUM(A1:A9)"), ("+1", "'+1"), ("-2", "'-2"), ("@cmd", "'@cmd"), ("\tx", "'\tx"),
    ("\rx", "'\rx"), ("plain", "plain"), ("a=b", "a=b"), (3, "3"),
])
def test_formula_neutralisation(cell, safe):
    assert neutralise(cell) == safe


def test_labels_dataset_names_and_history_are_neutralised():
    release = Release("identity", PureDP(1.0), 1.0, np.ones(2), np.ones(2))
    assert _rows(release_to_csv(release, _keys(["=HYPERLINK(x)", "ok"])))[1][0] == "'=HYPERLINK(x)"
    doc = json.loads(release_to_json(release, workload="identity", noise_path="secure",
                                     dataset="=cmd|' /C calc'!A0", keys=_keys(["@a", "b"])))
    assert doc["dataset"].startswith("'=") and doc["labels"] == ["'@a", "b"]
    rows = _rows(history_to_csv([{"label": "=evil()", "epsilon": 0.5}, {"label": "a\rb", "epsilon": 0.25}]))
    assert rows == [["epsilon", "label"], ["0.5", "'=evil()"], ["0.25", "a\nb"]]
    assert _rows(history_to_csv([])) == [["label", "epsilon"]]


def test_headers_are_neutralised_too():
    release = Release("identity", PureDP(1.0), 1.0, np.ones(2), np.ones(2))
    keys = ExportKeys(("=cmd()", "@sum"), (("a",), ("b", "c")))  # an upload's axis names, of the uploader's choosing
    assert _rows(release_to_csv(release, keys))[0] == ["'=cmd()", "'@sum", "count"]
    assert _rows(history_to_csv([{"=HYPERLINK(x)": "y", "epsilon": 0.5}]))[0] == ["'=HYPERLINK(x)", "epsilon"]


def test_a_downloaded_table_has_its_header_and_text_neutralised_and_its_numbers_kept():
    import pandas as pd

    from dplens.core.release.export import frame_to_csv

    frame = pd.DataFrame({"=cmd()": ["-x", "ok"], "dataset": pd.Categorical(["=a.csv", "b"]), "value": [-1.5, 2.0]})
    assert _rows(frame_to_csv(frame)) == [["'=cmd()", "dataset", "value"], ["'-x", "'=a.csv", "-1.5"],
                                          ["ok", "b", "2.0"]]
    assert list(frame.columns) == ["=cmd()", "dataset", "value"]  # the caller's frame is left as it was


def test_the_exploration_path_cannot_be_exported():
    release = Release("identity", PureDP(1.0), 1.0, np.ones(2), np.ones(2))
    for export in (release_to_json, release_metadata):
        with pytest.raises(ValueError, match="simulation, not a private release"):
            export(release, workload="identity", noise_path="exploration")


def test_no_export_contains_a_noise_seed():
    release = Release("identity", PureDP(1.0), 1.0, np.ones(2), np.ones(2))
    doc = json.loads(release_to_json(release, workload="identity", noise_path="secure"))
    assert not {"seed", "stream"} & set(doc)
    history = [{"number": 1, "epsilon": 1.0, "noise_path": "exploration", "seed": 12345, "stream": 0}]
    rows = _rows(history_to_csv(history))
    assert rows[0] == ["epsilon", "noise_path", "number"] and "12345" not in rows[1]


def test_exports_keep_the_uploads_column_names_and_come_back_with_them():
    from dplens.core.data.datasets import load_histogram
    from dplens.core.data.released import load_release

    hist = load_histogram(b"age,count\n0-17,3\n18-64,9\n65+,2\n")
    release = Release("identity", PureDP(1.0), 1.0, np.array([2.5, 9.25, -1.0]), np.array([2.5, 9.25, -1.0]))
    keys = ExportKeys.for_release(hist, release, Prefix(3))
    as_csv = release_to_csv(release, keys)
    assert _rows(as_csv)[0] == ["age", "count"] and _rows(as_csv)[1] == ["0-17", "2.5"]
    doc = json.loads(release_to_json(release, workload="prefix", noise_path="secure", keys=keys))
    assert doc["query_descriptions"][2] == "bins 0-17 to 65+" and len(doc["workload_answers"]) == 3
    for data in (as_csv, release_to_json(release, workload="prefix", noise_path="secure", keys=keys).encode()):
        back = load_release(data).as_histogram()
        assert back.domain.names == ("age",) and back.labels == (("0-17", "18-64", "65+"),)


def test_a_two_way_export_is_a_labelled_long_table_that_comes_back_two_way():
    from dplens.core.data.datasets import load_histogram
    from dplens.core.data.released import load_release

    hist = load_histogram(b"age_band,region,count\nyoung,N,3\nyoung,S,4\nold,N,5\nold,S,6\n")
    values = np.array([2.5, 4.0, -1.0, 6.5])
    release = Release("identity", PureDP(1.0), 1.0, values, values)
    keys = ExportKeys.for_release(hist, release, None)
    as_csv = release_to_csv(release, keys)
    assert _rows(as_csv)[:2] == [["age_band", "region", "count"], ["young", "N", "2.5"]]
    as_json = release_to_json(release, workload="identity", noise_path="secure", keys=keys).encode()
    for data in (as_csv, as_json):
        back = load_release(data).as_histogram()
        assert back.domain.shape == (2, 2) and back.domain.names == ("age_band", "region")
        assert back.labels == (("young", "old"), ("N", "S"))
        np.testing.assert_allclose(back.vector, np.clip(values, 0, None))


def test_answers_carry_each_query_in_words_and_as_a_spec():
    from dplens.core.data.datasets import load_histogram

    hist = load_histogram(b"age,count\n0-17,3\n18-64,9\n65+,2\n")
    release = Release("laplace-on-answers", PureDP(1.0), 1.0, np.array([3.5, 11.0, 13.25]), None)
    keys = ExportKeys.for_release(hist, release, Prefix(3))
    rows = _rows(release_to_csv(release, keys))
    assert rows[0] == ["query", "answer", "description", "spec"]
    assert rows[3] == ["2", "13.25", "bins 0-17 to 65+", "range:0:2"]
    doc = json.loads(release_to_json(release, workload="prefix", noise_path="secure", keys=keys))
    assert doc["query_descriptions"][1] == "bins 0-17 to 18-64" and doc["query_specs"][1] == "range:0:1"
