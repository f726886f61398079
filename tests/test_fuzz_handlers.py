"""Hostile input through the release door's own entry points, and through the app's upload handlers.

* ``recognise`` (is this file a known export?) and ``load_table`` (records and domain files) get 1,000 generated
  inputs each (Hypothesis, derandomised): they answer with their documented error or a valid result, never
  anything else. Together with tests/test_fuzz.py's loaders that is well over 3,000 inputs.
* Every upload handler of the app (Data, Tables records and domain, Workloads query matrix, Grids parquet, Release
  config) receives a set of hostile files in a real AppTest session: no exception reaches the page, every refusal
  is one line, and each stays within a budget of work (function calls counted, not seconds). An uploader the page
  does not show fails the test: a skip would hide a handler that is never tested.
"""

from __future__ import annotations

import io
import json
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dplens.core.data.datasets import DataError
from dplens.core.privacy.ledger_store import LedgerStore
from dplens.core.release.provenance import recognise
from dplens.core.tables.records import load_table
from tests.test_app import open_page
from tests.work_budget import call_budget

FUZZ = settings(max_examples=1000, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])

EXPORT_LIKE = st.one_of(
    st.binary(max_size=512),
    st.builds(lambda rows: ("bin,count\n" + "\n".join(f"{a},{b}" for a, b in rows)).encode(),
              st.lists(st.tuples(st.text(max_size=6), st.one_of(st.floats(), st.text(max_size=6))), max_size=12)),
    st.builds(lambda counts, extra: json.dumps({"mechanism": "identity", "epsilon": 1, "delta": 0, "privacy_loss": 1,
                                                "workload": "identity", "noise_path": "secure", "noise_sampler": "x",
                                                "neighbouring": "x", "counts": counts, **extra}).encode(),
              st.one_of(st.lists(st.floats(allow_nan=False, allow_infinity=False), max_size=8),
                        st.dictionaries(st.text(max_size=3), st.integers(), max_size=3), st.text(max_size=5)),
              st.dictionaries(st.sampled_from(["labels", "answers", "lower"]),
                              st.one_of(st.lists(st.text(max_size=3), max_size=4), st.integers()), max_size=2)),
)


@FUZZ
@given(EXPORT_LIKE)
def test_recognise_answers_none_or_a_known_export_never_crashes(tmp_path_factory, data):
    store = LedgerStore(tmp_path_factory.getbasetemp() / "fuzz.sqlite3")
    released, record = recognise(store, data, "x.csv")
    assert record is None  # nothing was ever released into this store
    if released is not None:
        assert np.all(np.isfinite(released.values))


TABLE_CELLS = st.one_of(st.sampled_from(["", "NA", "null", "x", "y", "0", "1", "2", "-1", "1.5", "=cmd", "nan", "inf"]),
                        st.text(max_size=4))
DOMAINS = st.one_of(st.none(), st.binary(max_size=64),
                    st.dictionaries(st.sampled_from(["a", "b", "count", "z"]),
                                    st.one_of(st.integers(-2, 5), st.lists(st.text(max_size=2), max_size=4),
                                              st.floats(), st.none(), st.dictionaries(st.text(max_size=2),
                                                                                       st.integers(), max_size=2)),
                                    max_size=3).map(lambda d: json.dumps(d).encode()))


@FUZZ
@given(st.lists(st.tuples(TABLE_CELLS, TABLE_CELLS, TABLE_CELLS), max_size=8),
       st.sampled_from(["a,b", "a,b,count", "a,a", "", "count"]), DOMAINS,
       st.sampled_from(["refuse", "drop", "level"]))
def test_table_loader_gives_a_table_or_one_line(rows, header, domain, missing):
    width = len(header.split(",")) if header else 1
    text = header + "\n" + "\n".join(",".join(row[:width]) for row in rows) + "\n"
    try:
        table = load_table(text.encode(), domain, missing=missing)
    except (DataError, ValueError) as err:
        assert str(err) and "\n" not in str(err) and "Traceback" not in str(err)
        return
    assert table.records.ndim == 2 and table.records.shape[1] == len(table.domain.names)
    assert np.all(table.records >= 0) and np.all(table.records < np.array(table.domain.sizes))


def _npy(array) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


HOSTILE = [
    ("empty.csv", b""), ("nul.csv", b"\x00" * 64), ("npy.csv", _npy(np.arange(64))), ("brackets.json", b"[" * 100_000),
    ("ragged.csv", b"1,2,3\n4,5\n6\n"), ("formula.csv", b"label,count\n=cmd|' /C calc'!A0,3\n+1,2\n"),
    ("fractional.csv", b"bin,count\n0,1.5\n1,-3\n"), ("dict-counts.json", b'{"counts": {"a": 1}}'),
    ("huge-number.csv", b"count\n" + b"9" * 400 + b"\n"), ("utf16.csv", "count\n1\n".encode("utf-16")),
    ("nested.json", json.dumps({"counts": [[[1]]]}).encode()), ("markdown ![x](http://e.com/a.png).csv", b"count\n1\n"),
    ("domain-bins.json", b'{"a": {"bins": 1e9, "low": 0, "high": 1}}'), ("parquet.parquet", b"PAR1" + b"\x00" * 32),
]
HANDLERS = [  # page, uploader key, the button that uses the file (if any), an extension the uploader accepts
    ("pages/data.py", "data_upload", "data_use", "csv"),
    ("pages/data.py", "data_upload", "data_use", "json"),
    ("pages/tables.py", "tables_upload", None, "csv"),
    ("pages/tables.py", "tables_domain_upload", None, "json"),
    ("pages/workloads.py", "workloads_upload", None, "csv"),
    ("pages/grid.py", "grid_upload", None, "parquet"),
    ("pages/release.py", "release_config_upload", "release_config_load", "json"),
]


SCRIPT_THREAD = "ScriptRunner.scriptThread"  # where AppTest runs a page (streamlit.runtime.scriptrunner)
# Work, not wall time (tests/work_budget.py): the calls the page's script makes for one upload (and its button).
# The largest measured, the Data page reading a file and drawing it, makes about 265,000; a handler that loops or
# blows up on a hostile file goes past the budget and is stopped there.
UPLOAD_CALLS = 5_000_000


@pytest.mark.parametrize(("page", "uploader", "button", "extension"), HANDLERS,
                         ids=[f"{p}:{u}:{e}" for p, u, _, e in HANDLERS])
def test_every_upload_handler_refuses_hostile_files_in_one_line(page, uploader, button, extension):
    at = open_page(page)
    shown = sorted(u.key for u in at.get("file_uploader") if getattr(u, "key", None))
    assert uploader in shown, f"{page} shows no uploader {uploader!r} (it shows {shown}): the test cannot reach it"
    for name, data in HOSTILE:
        name = f"{name.rsplit('.', 1)[0]}.{extension}"  # the browser only offers files of the accepted types
        with call_budget(UPLOAD_CALLS, thread_name=SCRIPT_THREAD) as work:
            at.file_uploader(key=uploader).set_value((name, data, "application/octet-stream")).run()
            if button is not None and [b for b in at.button if b.key == button]:
                at.button(key=button).click().run()
        assert work.within, (name, f"more than {UPLOAD_CALLS:,} calls")
        assert not at.exception, (name, at.exception)
        for message in [e.value for e in at.error]:
            assert "Traceback" not in message and "File \"/" not in message, (name, message)


def test_an_uploader_the_page_does_not_show_fails_the_test():
    """The probe: the handler test fails, not skips, when its uploader is missing (renamed, or moved behind a
    toggle), so a handler cannot silently drop out of the fuzzing."""
    try:
        with pytest.raises(AssertionError, match="shows no uploader 'data_uplaod'"):
            test_every_upload_handler_refuses_hostile_files_in_one_line("pages/data.py", "data_uplaod", "data_use",
                                                                         "csv")
    except pytest.skip.Exception as skipped:  # what it did before: this probe would only have been skipped
        pytest.fail(f"the handler test skipped instead of failing: {skipped}")


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # the stopped script thread
def test_a_handler_past_the_work_budget_fails_the_test(monkeypatch):
    """The probe: with a budget below what the Data page's upload takes, the script is stopped where it runs and
    the test fails, on any machine and at any load."""
    monkeypatch.setattr(sys.modules[__name__], "UPLOAD_CALLS", 1_000)
    with pytest.raises(AssertionError, match="more than 1,000 calls"):
        test_every_upload_handler_refuses_hostile_files_in_one_line("pages/data.py", "data_upload", "data_use", "csv")
