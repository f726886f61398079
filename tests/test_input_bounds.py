"""Every upload path refuses oversized or malformed input before allocating, with a clear message (no traceback).

Memory cases run in a subprocess that first reads its input from a file, then measures only the loader's call:
its wall time, the peak of ``tracemalloc`` (Python and NumPy allocations) and the growth of the process's peak
resident memory (which also sees Arrow's own allocator). Each was a defect on main: the parquet grew the
server by 3.3 GB, the 252-byte pre-aggregated table asked 2.4 GB, ``bins: 1e9`` 7.45 GiB (16 GB peak measured),
``width: 1e-12`` a traceback, a 40 MB query matrix 1.46 GB.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dplens.core.analysis.grid import GRID_COLUMNS
from dplens.core.data.datasets import DataError, load_parquet
from dplens.core.data.limits import DENSE_LIMIT, MAX_GRID_ROWS, MAX_UPLOAD_BYTES
from dplens.core.data.released import is_release_export, load_release
from dplens.core.queries.workloads import explicit_from_csv
from dplens.core.tables.records import load_table
from tests.test_app import open_page

ROOT = Path(__file__).resolve().parent.parent
SECONDS, PEAK_MB = 2.0, 300

# What a refusal must say: the quantity, its value and the rule (the bound's name).
PRE_AGGREGATED = ",".join(f"c{i}" for i in range(30)) + ",count\n" + "".join(
    ",".join(bit * 30) + ",5000000\n" for bit in "01")  # 252 bytes: 10^7 records × 30 columns once expanded


def _measure(path: Path, call: str, prelude: str = "") -> dict:
    """Run ``call`` on ``data`` (the bytes of ``path``) in a fresh interpreter; outcome, seconds and peaks in MB."""
    script = textwrap.dedent(f"""
        import json, resource, sys, time, tracemalloc
        sys.path.insert(0, {str(ROOT)!r})
        import pyarrow.parquet  # imports are not the loader's cost
        from dplens.core.data.datasets import load_parquet
        from dplens.core.analysis.grid import GRID_COLUMNS
        from dplens.core.queries.workloads import explicit_from_csv, parse_workload
        from dplens.core.tables.records import load_table
        {prelude}
        data = open({str(path)!r}, "rb").read()
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        tracemalloc.start()
        started = time.perf_counter()
        try:
            {call}
            outcome = "accepted"
        except ValueError as err:
            outcome = str(err)
        except BaseException as err:  # a MemoryError, a RecursionError: the defect
            outcome = "UNCLEAN " + type(err).__name__ + ": " + str(err)[:200]
        seconds = time.perf_counter() - started
        traced = tracemalloc.get_traced_memory()[1] / 2**20
        grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss) / 1024
        print(json.dumps({{"outcome": outcome, "seconds": seconds, "traced": traced, "grown": grown}}))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _refused_within_bounds(result: dict, *phrases: str) -> None:
    assert not result["outcome"].startswith(("UNCLEAN", "accepted")), result
    for phrase in phrases:
        assert phrase in result["outcome"], result
    assert result["seconds"] < SECONDS, result
    assert result["traced"] < PEAK_MB and result["grown"] < PEAK_MB, result


def _grid_frame_batch(rows: int, text: str = "smooth") -> pa.Table:
    numbers = pa.array(np.zeros(rows, dtype=np.int64))
    reals = pa.array(np.zeros(rows))
    words = pa.DictionaryArray.from_arrays(pa.array(np.zeros(rows, dtype=np.int32)), pa.array([text]))
    kinds = {"domain_size": numbers, "scale": numbers, "seed": numbers, "trial": numbers, "epsilon": reals,
             "value": reals, "expected": reals, "seconds": reals}
    return pa.table({c: kinds.get(c, words) for c in GRID_COLUMNS})


def _write_parquet(path: Path, batches: int, rows: int, text: str = "smooth") -> Path:
    batch = _grid_frame_batch(rows, text)
    with pq.ParquetWriter(path, batch.schema, compression="zstd") as writer:
        for _ in range(batches):
            writer.write_table(batch)
    return path


# ----------------------------------------------------------------------------- memory: refused before allocating
def test_a_compressed_parquet_of_millions_of_rows_is_refused_from_its_footer(tmp_path):
    path = _write_parquet(tmp_path / "grid.parquet", 6, 2**20)  # 6.3 M rows in well under 2 MB
    assert path.stat().st_size < 2 * 2**20
    result = _measure(path, "load_parquet(data, GRID_COLUMNS)")
    _refused_within_bounds(result, f"{6 * 2**20:,} rows", f"{MAX_GRID_ROWS:,} (MAX_GRID_ROWS)")


def test_a_parquet_whose_text_decodes_to_gigabytes_is_refused_before_decoding(tmp_path):
    path = _write_parquet(tmp_path / "grid.parquet", 2, 2**20, text="x" * 500)  # 1 GB of text once decoded
    result = _measure(path, "load_parquet(data, GRID_COLUMNS)")
    _refused_within_bounds(result, "(MAX_GRID_BYTES)")


def test_a_small_grid_file_still_loads(tmp_path):
    path = _write_parquet(tmp_path / "grid.parquet", 1, 1000)
    frame = load_parquet(path.read_bytes(), GRID_COLUMNS)
    assert list(frame.columns) == GRID_COLUMNS and len(frame) == 1000 and frame["dataset"].iloc[0] == "smooth"
    assert frame["dataset"].dtype == object  # decoded: the page groups by it (no categorical cartesian products)


def test_the_252_byte_pre_aggregated_table_is_refused_from_its_implied_domain(tmp_path):
    assert len(PRE_AGGREGATED) == 252
    path = tmp_path / "agg.csv"
    path.write_text(PRE_AGGREGATED)
    result = _measure(path, "load_table(data)")
    _refused_within_bounds(result, "pre-aggregated table implies 1,073,741,824 cells (30 columns); at most "
                                   "4,194,304 (MAX_CELLS) are allowed: drop or merge columns")


def test_a_pre_aggregated_table_expanding_past_the_entry_bound_is_refused(tmp_path):
    path = tmp_path / "agg.csv"  # 2^20 implied cells pass MAX_CELLS, but 10^7 records × 20 columns do not fit
    path.write_text(",".join(f"c{i}" for i in range(20)) + ",count\n"
                    + "".join(",".join(bit * 20) + ",5000000\n" for bit in "01"))
    result = _measure(path, "load_table(data)")
    _refused_within_bounds(result, "10,000,000 records × 20 columns", "(MAX_TABLE_ENTRIES)")


@pytest.mark.parametrize(("spec", "phrases"), [
    ({"low": 0, "high": 1, "bins": 1_000_000_000}, ["bins must be an integer from 2 to 65,536", "1000000000"]),
    ({"low": 0, "high": 1, "bins": 1e9}, ["bins must be an integer"]),
    ({"low": 0, "high": 1, "width": 1e-12}, ["width 1e-12 over [0, 1] implies 1,000,000,000,000 bins",
                                             "(MAX_LEVELS)"]),
    ({"low": 0, "high": 1e308, "width": 1e-308}, ["implies inf bins"]),
    ({"low": 0, "high": 1, "width": -1}, ["width must be > 0"]),
    ({"low": 0, "high": 1, "width": float("nan")}, ["width must be finite"]),
    ({"low": [0, 1], "high": 1, "width": 0.5}, ["low must be one number"]),
    ({"quantiles": 10**9, "public_sample": [1, 2]}, ["quantiles must be an integer from 2 to 65,536"]),
])
def test_domain_file_bins_are_checked_before_any_array(tmp_path, spec, phrases):
    path = tmp_path / "domain.json"
    path.write_text(json.dumps({"a": spec}))
    result = _measure(path, "load_table(b'a\\n0.5\\n', data)")
    _refused_within_bounds(result, "bins of column 'a'", *phrases)


def test_a_40_mb_query_matrix_of_the_wrong_width_is_refused_from_its_first_row(tmp_path):
    path = tmp_path / "q.csv"
    path.write_bytes((",".join(["1"] * 4097) + "\n").encode() * 4800)  # 37.5 MB; the histogram has 4096 cells
    result = _measure(path, "explicit_from_csv(data, n=4096)")
    _refused_within_bounds(result, "query matrix has 4097 columns but the histogram has 4096 cells")


def test_a_40_mb_query_matrix_over_the_dense_limit_is_refused_from_its_shape(tmp_path):
    path = tmp_path / "q.csv"
    path.write_bytes((",".join(["1"] * 4096) + "\n").encode() + b"1\n" * 20_000_000)  # 38 MB
    result = _measure(path, "explicit_from_csv(data, n=4096)")
    _refused_within_bounds(result, "20,000,001 rows × 4,096 columns", f"{DENSE_LIMIT:,} (DENSE_LIMIT)")


def test_a_40_mb_query_matrix_within_the_limit_is_parsed_in_bounded_memory(tmp_path):
    path = tmp_path / "q.csv"
    path.write_bytes((",".join(["1"] * 4096) + "\n").encode() * 5000)  # 39 MB, 20.5 M entries: 164 MB as floats
    result = _measure(path, "assert explicit_from_csv(data, n=4096).shape == (5000, 4096)")
    assert result["outcome"] == "accepted", result
    assert result["traced"] < PEAK_MB, result  # was 1.46 GB: a Python float object per entry


def test_a_file_workload_is_refused_by_its_size_on_disk_before_reading(tmp_path):
    big = tmp_path / "queries.csv"
    with open(big, "wb") as handle:
        handle.truncate(MAX_UPLOAD_BYTES + 1)  # sparse: 50 MB on paper, nothing on the disk
    (tmp_path / "spec.txt").write_text(f"file:{big}")
    result = _measure(tmp_path / "spec.txt", "parse_workload(data.decode(), (4096,), allow_files=True)")
    _refused_within_bounds(result, "50.0 MB; at most 50 MB (MAX_UPLOAD_BYTES)")


# ----------------------------------------------------------------------------- malformed: a message, never a traceback
def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


@pytest.mark.parametrize("array", [np.arange(4096), np.ones(200_000, dtype=np.int64), np.arange(10, dtype=np.int32)])
def test_the_release_export_detector_says_no_to_binary_npy(array):
    assert is_release_export(_npy(array)) is False  # was csv.Error from csv.reader on the binary bytes
    with pytest.raises(ValueError, match="not a dplens export"):
        load_release(_npy(array))


def test_an_integer_npy_upload_loads_as_a_histogram_in_the_app():
    at = open_page("pages/data.py")
    at.file_uploader(key="data_upload").set_value(("counts.npy", _npy(np.arange(1000)), "application/octet-stream"))
    at.run()
    at.button(key="data_use").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    assert at.session_state["dataset_key"].startswith("upload:")
    assert any("Loaded counts" in i.value and "1,000 cells" in i.value for i in at.info)


def test_an_npy_upload_to_the_release_page_config_is_a_clean_error():
    at = open_page("pages/release.py")
    at.file_uploader(key="release_config_upload").set_value(("config.json", _npy(np.arange(4096)), "application/json"))
    at.run()
    at.button(key="release_config_load").click().run()
    assert not at.exception, at.exception
    assert any(e.value.startswith("Config not loaded:") for e in at.error), [e.value for e in at.error]


def test_a_pasted_config_of_100000_brackets_is_a_clean_error():
    at = open_page("pages/release.py")
    at.text_area(key="release_config_text").set_value("[" * 100_000)
    at.button(key="release_config_load").click().run()
    assert not at.exception, at.exception
    assert at.error and "Traceback" not in at.error[0].value and "/work" not in at.error[0].value
    assert "nested" in at.error[0].value or "not valid JSON" in at.error[0].value, at.error[0].value


def test_an_export_whose_counts_is_an_object_is_a_clean_error():
    keys = ("mechanism", "epsilon", "delta", "privacy_loss", "workload", "noise_path", "noise_sampler", "neighbouring")
    export = json.dumps({**dict.fromkeys(keys, 1), "counts": {"a": 1}}).encode()
    assert is_release_export(export)
    with pytest.raises(ValueError, match='"counts" must be a non-empty list of finite numbers, got a JSON object'):
        load_release(export)
    labels = json.dumps({**dict.fromkeys(keys, 1), "counts": [1, 2], "labels": 5}).encode()
    with pytest.raises(ValueError, match='"labels" must be a list'):
        load_release(labels)


@pytest.mark.parametrize(("data", "message"), [
    (b"1,2,3\n1,2\n", "row 2 has 2 values but earlier rows have 3"),
    (b"1,2,3\n4,5,6,7\n", "row 2 has 4 values but earlier rows have 3"),
    (b"a,b,c\n1,2,3\n,,\n4,5\n", "row 4 has 2 values"),
])
def test_a_ragged_query_csv_is_a_clean_error(data, message):
    with pytest.raises(ValueError, match=message):
        explicit_from_csv(data, n=3)


def test_a_ragged_query_upload_is_a_flash_message_in_the_app():
    at = open_page("pages/workloads.py")
    at.session_state["dataset_key"] = "sample:tips-bill"  # 51 cells
    at.run()
    rows = ",".join(["1"] * 51) + "\n" + ",".join(["1"] * 50) + "\n"
    at.file_uploader(key="workloads_upload").set_value(("q.csv", rows.encode(), "text/csv")).run()
    at.button(key="workloads_use_upload").click().run()
    assert not at.exception, at.exception
    assert any("row 2 has 50 values but earlier rows have 51" in e.value for e in at.error)


def test_a_deeply_nested_domain_file_is_a_clean_error():
    with pytest.raises(DataError, match="domain file is not readable JSON"):
        load_table(b"a\n1\n", b"[" * 100_000)


def test_a_parquet_without_the_grid_columns_is_a_clean_error_on_the_grids_page():
    buffer = io.BytesIO()
    pq.write_table(pa.table({"a": [1, 2], "b": ["x", "y"]}), buffer)
    at = open_page("pages/grid.py")
    at.file_uploader(key="grid_upload").set_value(("![x](http://e.com/p.png).parquet", buffer.getvalue(),
                                                   "application/octet-stream")).run()
    assert not at.exception, at.exception
    message = at.error[0].value
    assert "not a dplens grid file: columns ['dataset'" in message
    assert "\\!\\[x\\]\\(http" in message  # the file name is shown as typed, never as a markdown image
    assert "grid_results" not in at.session_state or at.session_state["grid_results"] is None


def test_a_file_that_is_not_parquet_is_a_clean_error():
    with pytest.raises(DataError, match="not a readable parquet grid file"):
        load_parquet(b"PAR1" + b"\x00" * 100 + b"PAR1", GRID_COLUMNS)


# ----------------------------------------------------------------------------- exports and file names
FORMULAS = ["=cmd|' /C calc'!A0", "+1+1", "@SUM(A1)", "-2+3"]


def test_table_csv_exports_neutralise_spreadsheet_formulas():
    at = open_page("pages/tables.py")
    rows = "".join(f"{FORMULAS[i % 4]},{i % 2}\n" for i in range(400))
    table = load_table(f"=HYPERLINK(x),b\n{rows}".encode(), json.dumps({"=HYPERLINK(x)": FORMULAS, "b": 2}).encode())
    at.session_state["table"], at.session_state["table_name"] = table, "formulas.csv"
    at.session_state["tables_attributes"] = list(table.domain.names)
    at.run()
    at.text_input(key="tables_custom").set_value("ranges:=HYPERLINK(x)|b")
    at.radio(key="tables_workload_kind").set_value("chosen marginals").run()
    at.button(key="tables_release_button").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]

    import dataclasses

    from dplens.ui.tables_view import table_downloads

    output = dict(at.session_state["tables_release"])
    output["release"] = dataclasses.replace(output["release"], records=table.records[:8])  # as a synthesiser's
    files = table_downloads(output)
    csvs = {name: text for name, (_, text, mime) in files.items() if mime == "text/csv"}
    assert {n.rsplit("-", 1)[-1] for n in csvs} == {"synthetic.csv", "marginals.csv", "ranges.csv"}
    for name, text in csvs.items():
        cells = [cell.strip('"') for line in text.splitlines() for cell in line.split(",")]
        risky = [c for c in cells if c[:1] in ("=", "+", "@") or (c[:1] == "-" and not _is_number(c))]
        assert not risky, (name, risky[:5])
        assert "'=cmd|' /C calc'!A0" in text or "'=HYPERLINK(x)" in text, name


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def test_an_uploaded_table_name_is_shown_as_plain_text():
    at = open_page("pages/tables.py")
    at.session_state["tables_upload_data"] = ("[click](http://e.com)_x_.csv", b"a,b\n0,1\n1,0\n", None)
    at.session_state["table"] = None
    at.run()
    at.radio(key="tables_missing").set_value(list(at.radio(key="tables_missing").options)[1]).run()
    assert not at.exception
    assert any(m.value.startswith("**\\[click\\]\\(http\\://e\\.com\\)\\_x\\_\\.csv**") for m in at.markdown), \
        [m.value[:60] for m in at.markdown]


def test_a_file_workload_naming_an_endless_device_is_refused_before_reading(tmp_path):
    (tmp_path / "spec.txt").write_text("file:/dev/zero")  # reports a size of 0, and never ends
    # the address space is capped at 512 MB above the start, so a read of the device fails here, not at 3.5 GB
    cap = ("import resource; vm = int(open('/proc/self/status').read().split('VmSize:')[1].split()[0]) * 1024; "
           "resource.setrlimit(resource.RLIMIT_AS, (vm + 2**29, resource.getrlimit(resource.RLIMIT_AS)[1]))")
    result = _measure(tmp_path / "spec.txt", "parse_workload(data.decode(), (4096,), allow_files=True)", cap)
    _refused_within_bounds(result, "query-matrix file '/dev/zero' is a character device, not a regular file",
                           "at most 50 MB (MAX_UPLOAD_BYTES)")


def test_a_pipe_is_refused_without_waiting_for_a_writer(tmp_path):
    import os

    from dplens.core.data.files import read_bounded

    pipe = tmp_path / "queries.csv"
    os.mkfifo(pipe)  # opening it for reading would block until someone writes
    with pytest.raises(ValueError, match=r"queries.csv' is a pipe, not a regular file; .* 50 MB \(MAX_UPLOAD_BYTES\)"):
        read_bounded(pipe, what="query-matrix file")
