"""Exports written in chunks (dplens.core.data.streamed_json): the same bytes as the writers that built whole lists
(json.dumps of lists, signed over its canonical JSON; csv rows from lists of every cell), and they verify and read
back. Chunks are made tiny here so that every array crosses chunk boundaries."""

from __future__ import annotations

import base64
import csv
import io
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dplens.core.analysis.intervals import Intervals
from dplens.core.data import signing, streamed_json
from dplens.core.data.domain import Histogram
from dplens.core.data.released import load_release
from dplens.core.data.streamed_json import NumberedNames, iter_json
from dplens.core.mechanisms import Release
from dplens.core.privacy.definitions import PureDP
from dplens.core.queries import describe
from dplens.core.queries.workloads import Identity, Prefix
from dplens.core.release import export
from dplens.core.release.export import (
    ExportKeys,
    neutralise,
    release_metadata,
    release_to_csv,
    release_to_json,
    write_release_json,
)

SETTINGS = ({"indent": 1}, {"indent": None}, {"indent": 0}, {"indent": 2, "sort_keys": True},
            {"separators": (",", ":"), "sort_keys": True})


@pytest.fixture(autouse=True)
def tiny_chunks(monkeypatch):
    monkeypatch.setattr(streamed_json, "CHUNK", 3)
    monkeypatch.setattr(export, "CHUNK", 3)


# ----------------------------------------------------------------------------- the JSON text itself
def _plain(value):
    """What ``iter_json`` stands for: arrays and lazy sequences as lists."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, list | tuple | NumberedNames):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


scalars = (st.none() | st.booleans() | st.integers(-10**20, 10**20) | st.floats(allow_nan=False, allow_infinity=False)
           | st.text(max_size=6))
arrays = (st.lists(st.floats(allow_nan=False, allow_infinity=False), max_size=8).map(np.array)
          | st.builds(NumberedNames, st.integers(0, 8), st.text(max_size=3), st.text(max_size=3)))
values = st.recursive(scalars | arrays, lambda inner: st.lists(inner, max_size=8) | st.tuples(inner, inner)
                      | st.dictionaries(st.text(max_size=4), inner, max_size=5), max_leaves=30)


@settings(max_examples=200, deadline=None)
@given(value=values)
def test_iter_json_is_json_dumps_of_the_lists(value):
    for options in SETTINGS:
        expected = json.dumps(_plain(value), ensure_ascii=True, allow_nan=False, **options)
        assert "".join(iter_json(value, **options)) == expected


@pytest.mark.parametrize("bad", [np.array([1.0, np.nan]), [1.0] * 4 + [float("inf")], np.array([-np.inf])],
                         ids=["nan-array", "inf-long-list", "inf-array"])
def test_iter_json_refuses_non_finite_floats_as_json_does(bad):
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        "".join(iter_json({"counts": bad}))


def test_iter_json_refuses_what_json_cannot_encode():
    with pytest.raises(TypeError):
        "".join(iter_json({"a": [object()] * 5}))
    with pytest.raises(TypeError, match="string keys"):
        "".join(iter_json({1: np.zeros(2)}))


def test_numbered_names_are_a_sequence_of_their_strings():
    names = NumberedNames(5, "row ", " of prefix")
    assert list(names) == [f"row {i} of prefix" for i in range(5)]
    assert names[-1] == "row 4 of prefix" and names[1:4:2] == ["row 1 of prefix", "row 3 of prefix"]
    with pytest.raises(IndexError):
        names[5]
    with pytest.raises(ValueError, match="length >= 0"):
        NumberedNames(-1)


def test_cell_slice_is_a_slice_of_the_cells():
    keys = ExportKeys(("a", "b"), (("x", "=y", "z"), NumberedNames(4)))
    assert [keys.cell_slice(i, i + 5) for i in range(0, 12, 5)] == [keys.cells()[i:i + 5] for i in range(0, 12, 5)]


# ----------------------------------------------------------------------------- the old writers, as oracles
def _old_json(release, *, created, keys=None, intervals=None, **metadata) -> str:
    """``release_to_json`` as it was: every array a Python list, ``json.dumps`` of all, signed over its canonical
    JSON."""
    doc = release_metadata(release, **metadata) | {"created": created}
    if release.estimate is not None:
        doc["counts"] = [float(v) for v in release.estimate]
        if keys is not None and keys.axis_labels:
            doc.update(axis_names=[neutralise(n) for n in keys.axis_names],
                       axis_labels=[[neutralise(v) for v in axis] for axis in keys.axis_labels],
                       labels=["|".join(neutralise(v) for v in cell) for cell in keys.cells()])
        if keys is not None and len(keys.query_texts) == len(release.answers):
            doc.update(workload_answers=[float(v) for v in release.answers],
                       query_descriptions=[neutralise(t) for t in keys.query_texts], query_specs=list(keys.query_specs))
    else:
        doc["answers"] = [float(v) for v in release.answers]
        if keys is not None and len(keys.query_texts) == len(doc["answers"]):
            doc.update(query_descriptions=[neutralise(t) for t in keys.query_texts],
                       query_specs=list(keys.query_specs))
    if intervals is not None:
        doc.update(lower=[float(v) for v in intervals.lower], upper=[float(v) for v in intervals.upper],
                   level=intervals.level, simultaneous=intervals.simultaneous, interval_method=intervals.method)
    payload = signing.PAYLOAD_TAG + json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                                               allow_nan=False).encode()
    signature = base64.b64encode(signing.signing_key().sign(payload)).decode()
    doc["signature"] = {"algorithm": "Ed25519", "key_id": signing.key_id(signing.public_key()), "value": signature}
    return json.dumps(doc, indent=1, allow_nan=False)


def _old_csv(release, keys=None, intervals=None) -> bytes:
    """``release_to_csv`` as it was: lists of every row's labels, one ``writerow`` each."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    spread = ("lower", "upper", "level") if intervals is not None else ()
    if release.estimate is not None:
        values = release.estimate
        labelled = keys is not None and keys.axis_labels
        lead = keys.cells() if labelled else [(str(i),) for i in range(len(values))]
        header, tail = (*(keys.axis_names if labelled else ("bin",)), "count"), [()] * len(values)
    else:
        values = release.answers
        described = keys is not None and len(keys.query_texts) == len(values)
        header, lead = ("query", "answer"), [(str(i),) for i in range(len(values))]
        tail = list(zip(keys.query_texts, keys.query_specs, strict=True)) if described else [()] * len(values)
        spread = (*spread, *(("description", "spec") if described else ()))
    writer.writerow([export._csv_text(name) for name in (*header, *spread)])
    for i, value in enumerate(values):
        extra = () if intervals is None else (export._number(intervals.lower[i]), export._number(intervals.upper[i]),
                                              export._number(intervals.level))
        writer.writerow((*(export._csv_text(k) for k in lead[i]), export._number(value), *extra,
                         *(export._csv_text(t) for t in tail[i])))
    return buffer.getvalue().encode()


def _case(name: str):
    """(release, keys, intervals) of one small export: labels a spreadsheet would evaluate, non-ASCII, quotes."""
    rng = np.random.default_rng(7)
    if name == "1d-prefix":
        hist = Histogram.from_counts(np.arange(7.0), labels=[["=a", "b,\"c\"", "é", "+1", "-", "@x", "z"]],
                                     axis_names=["=age"])
        workload = Prefix(7)
    elif name == "2d-identity":
        hist = Histogram.from_counts(np.arange(12.0).reshape(3, 4),
                                     labels=[["r0", "=r1", "r2"], ["c0", "c1", "ü", "c3"]], axis_names=["row", "col"])
        workload = Identity(12)
    else:  # unlabelled bins, a workload too large to describe query by query (its rows named lazily)
        hist = Histogram.from_counts(np.arange(8.0))
        workload = Prefix(8)
    n = hist.domain.size
    estimate = np.round(rng.normal(0, 50, n), 3) * np.array([1, -1, 1e-7, 1e16, 1, 1, 1, -0.0, 1, 1, 1, 1][:n])
    answers = workload.matvec(estimate)
    estimate = None if name == "answers-only" else estimate
    release = Release("identity", PureDP(0.5), 0.5, answers, estimate, {"noise_scale": 2.0, "shape": [n]})
    values = answers if estimate is None else estimate
    intervals = Intervals(values - 6.0, values + 6.0, 0.95, False, "exact Laplace quantiles (per value)")
    return release, ExportKeys.for_release(hist, release, workload), intervals


CASES = ("1d-prefix", "2d-identity", "rows-named-lazily", "answers-only")
METADATA = {"workload": "prefix", "noise_path": "secure", "dataset": "=data é",
            "noise_sampler": "opendp-lattice-laplace", "export_id": "abc123"}


@pytest.fixture
def few_described(monkeypatch):
    monkeypatch.setattr(describe, "MAX_DESCRIBED", 4)  # the 8-query case takes the lazy "row i" names


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("with_intervals", [True, False], ids=["intervals", "no-intervals"])
def test_json_export_is_the_old_writers_bytes_and_verifies(name, with_intervals, request):
    if name == "rows-named-lazily":
        request.getfixturevalue("few_described")
    release, keys, intervals = _case(name)
    intervals = intervals if with_intervals else None
    if name == "rows-named-lazily":
        assert isinstance(keys.query_texts, NumberedNames) and isinstance(keys.axis_labels[0], NumberedNames)
    text = release_to_json(release, keys=keys, intervals=intervals, **METADATA)
    out = io.BytesIO()
    write_release_json(out, release, keys=keys, intervals=intervals, **METADATA)
    created = json.loads(text)["created"]
    assert json.loads(out.getvalue())["created"] == created or pytest.skip("the clock crossed a second")
    assert text == _old_json(release, created=created, keys=keys, intervals=intervals, **METADATA)
    assert out.getvalue() == text.encode()
    assert signing.verify_export(out.getvalue(), [signing.public_key()]) == signing.key_id(signing.public_key())
    back = load_release(out.getvalue(), "x.json")
    np.testing.assert_array_equal(back.values, release.estimate if release.estimate is not None else release.answers)


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("with_intervals", [True, False], ids=["intervals", "no-intervals"])
def test_csv_export_is_the_old_writers_bytes(name, with_intervals, request):
    if name == "rows-named-lazily":
        request.getfixturevalue("few_described")
    release, keys, intervals = _case(name)
    intervals = intervals if with_intervals else None
    assert release_to_csv(release, keys, intervals) == _old_csv(release, keys, intervals)
    assert release_to_csv(release, None, intervals) == _old_csv(release, None, intervals)


def test_a_tampered_streamed_export_does_not_verify():
    release, keys, intervals = _case("1d-prefix")
    out = io.BytesIO()
    write_release_json(out, release, keys=keys, intervals=intervals, **METADATA)
    doc = json.loads(out.getvalue())
    doc["counts"][5] += 1.0
    assert signing.verify_export(json.dumps(doc, indent=1).encode(), [signing.public_key()]) is None
