"""Hostile and malformed input: every loader answers with its documented error type, never a crash.

Loaders and their documented errors: ``load_histogram`` and ``histogram_from_records`` raise
``DataError`` (a ``ValueError``); ``explicit_from_csv`` raises ``ValueError``. Each loader gets ≥ 1000
generated inputs (Hypothesis, derandomised so CI is reproducible), plus the large-input cases.
A histogram that does load must be valid: finite, non-negative counts.
"""

from __future__ import annotations

import csv
import io
import json
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dplens.core.data.datasets import MAX_UPLOAD_BYTES, DataError, histogram_from_records, load_histogram
from dplens.core.data.domain import Histogram
from dplens.core.privacy.definitions import PureDP
from dplens.core.queries.workloads import explicit_from_csv

FUZZ = settings(max_examples=1000, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# ----------------------------------------------------------------------------- generators
INJECTIONS = ["=cmd|' /C calc'!A0", "+1+1", "-2+3", "@SUM(A1:A9)", "=HYPERLINK(\"http://x\")", "\t=1", "\r=1"]
NUMBERISH = st.one_of(
    st.integers(-10, 10**6).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["1e3", "1E-2", "-0", "+5", "1,234", "1.234,5", "1 000", "\"12\"", "'7'", "NaN", "nan",
                     "inf", "-inf", "Infinity", "", " ", "0x1F", "1_000", "½", "١٢", "12abc", "None", "null",
                     "TRUE", "1e400", "-1e-400", "9" * 400]),
)
LABELS = st.one_of(st.text(max_size=12), st.sampled_from(INJECTIONS))
DELIMITERS = st.sampled_from([",", ";", "\t", "|"])
NEWLINES = st.sampled_from(["\n", "\r\n", "\r"])
HEADERS = st.sampled_from([["label", "count"], ["count"], ["row", "col", "count"], ["Count", "Label"], [],
                           ["label", "value"], ["count", "count"]])


@st.composite
def near_valid_csv(draw) -> bytes:
    """CSV that is almost right: odd delimiters, BOMs, quoting, number formats, injection labels, ragged rows."""
    delimiter, newline, header = draw(DELIMITERS), draw(NEWLINES), draw(HEADERS)
    width = max(len(header), 1) + draw(st.sampled_from([0, 0, 0, 1, -1]))
    rows = [delimiter.join(header)] if header else []
    for _ in range(draw(st.integers(0, 12))):
        cells = [draw(st.one_of(NUMBERISH, LABELS)) for _ in range(max(width + draw(st.sampled_from([0, 0, 1])), 0))]
        rows.append(delimiter.join(cells))
    text = newline.join(rows) + draw(st.sampled_from(["", newline]))
    prefix = draw(st.sampled_from([b"", b"\xef\xbb\xbf", b"\xff\xfe", b"\x00"]))
    return prefix + text.encode(draw(st.sampled_from(["utf-8", "utf-8", "latin-1", "utf-16"])), errors="replace")


JSON_LEAF = st.one_of(st.integers(-(10**20), 10**20), st.floats(allow_nan=True, allow_infinity=True),
                      st.booleans(), st.none(), st.text(max_size=5), st.sampled_from(INJECTIONS))
JSON_VALUE = st.recursive(JSON_LEAF, lambda inner: st.one_of(st.lists(inner, max_size=5),
                                                             st.dictionaries(st.text(max_size=6), inner, max_size=3)),
                          max_leaves=20)


@st.composite
def near_valid_json(draw) -> bytes:
    """JSON documents shaped like {"counts": ...} with wrong types, NaN/Infinity tokens, ragged rows."""
    counts = draw(st.one_of(st.lists(JSON_LEAF, max_size=8), st.lists(st.lists(JSON_LEAF, max_size=4), max_size=4),
                            JSON_VALUE))
    doc = draw(st.sampled_from(["object", "list", "other"]))
    payload = {"counts": counts, "labels": draw(JSON_VALUE), "name": draw(JSON_VALUE)} if doc == "object" else (
        counts if doc == "list" else draw(JSON_VALUE))
    text = json.dumps(payload, allow_nan=True)
    if draw(st.booleans()):  # truncate or corrupt a byte
        cut = draw(st.integers(0, len(text)))
        text = text[:cut] + draw(st.sampled_from(["", "}", "[[[[", "\x00", "NaN", ","])) + text[cut:]
    return draw(st.sampled_from([b"", b"\xef\xbb\xbf", b"  \n"])) + text.encode("utf-8", errors="replace")


DTYPES = ["<f8", "<f4", "<i8", "<u1", "|b1", "<c16", "<M8[s]", "<U3", "|S2", "<f2", ">i4"]


@st.composite
def near_valid_npy(draw) -> bytes:
    """.npy files of any dtype and shape (0–3-D), with NaN/inf/negatives, optionally truncated or corrupted."""
    shape = tuple(draw(st.lists(st.integers(0, 5), max_size=3)))
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    values = draw(st.lists(st.sampled_from([0, 1, 7, -3, 2.5, np.nan, np.inf, 1e300]),
                           min_size=int(np.prod(shape)), max_size=int(np.prod(shape))))
    with np.errstate(invalid="ignore", over="ignore"):
        try:
            array = np.array(values, dtype=float).astype(dtype).reshape(shape)
        except (ValueError, TypeError):
            array = np.zeros(shape, dtype=float)
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    data = bytearray(buffer.getvalue())
    action = draw(st.sampled_from(["keep", "keep", "truncate", "flip"]))
    if action == "truncate" and data:
        data = data[:draw(st.integers(0, len(data) - 1))]
    elif action == "flip" and data:
        i = draw(st.integers(0, len(data) - 1))
        data[i] = draw(st.integers(0, 255))
    return bytes(data)


def _load_or_data_error(loader, *args, **kwargs) -> Histogram | None:
    """The loader's result, or None after the documented DataError; anything else fails the test."""
    try:
        histogram = loader(*args, **kwargs)
    except DataError as err:
        message = str(err)
        assert message and "\n" not in message and "Traceback" not in message
        return None
    counts = histogram.counts
    assert counts.size > 0 and np.all(np.isfinite(counts)) and np.all(counts >= 0)
    return histogram


# ----------------------------------------------------------------------------- load_histogram
@FUZZ
@given(st.binary(max_size=2048), st.sampled_from([None, "x.csv", "x.json", "x.npy", "x.txt"]))
def test_arbitrary_bytes_give_a_histogram_or_a_data_error(data, filename):
    _load_or_data_error(load_histogram, data, filename=filename)


@FUZZ
@given(near_valid_csv(), st.sampled_from([None, "upload.csv"]))
def test_near_valid_csv(data, filename):
    _load_or_data_error(load_histogram, data, filename=filename)


@FUZZ
@given(near_valid_json(), st.sampled_from([None, "upload.json"]))
def test_near_valid_json(data, filename):
    _load_or_data_error(load_histogram, data, filename=filename)


@FUZZ
@given(near_valid_npy(), st.sampled_from([None, "upload.npy"]))
def test_near_valid_npy(data, filename):
    _load_or_data_error(load_histogram, data, filename=filename)


@pytest.mark.parametrize(("data", "message"), [
    (b"\xef\xbb\xbflabel;count\n=cmd|' /C calc'!A0;3\nb;1.5e1\n", None),
    (b'label,count\na,"1,234"\n', "not a finite number"),
    (b"count\nNaN\n", "not a finite number"),
    (b"count\ninf\n", "not a finite number"),
    (b"count\n-1\n", "must be >= 0"),
    (b'{"counts": [1, NaN]}', "finite"),
    (b'{"counts": [1, Infinity]}', "finite"),
    (b'{"counts": [1e400]}', "finite"),
    (b'{"counts": [true, 2]}', "must be a number"),
    (b"[" * 100_000 + b"]" * 100_000, None),
])
def test_specific_hostile_inputs(data, message):
    histogram = _load_or_data_error(load_histogram, data)
    if message is None:
        return
    assert histogram is None
    with pytest.raises(DataError, match=message):
        load_histogram(data)


def test_injection_labels_load_as_plain_text():
    histogram = load_histogram(b"label,count\n=cmd|' /C calc'!A0,3\n@SUM(A1),2\n")
    assert histogram.labels == (("=cmd|' /C calc'!A0", "@SUM(A1)"),)  # neutralised on export, not on load


def test_ten_million_rows_are_refused_with_the_cell_limit():
    data = b"count\n" + b"1\n" * 10_000_000  # 20 MB: under the upload limit, over the cell limit
    with pytest.raises(DataError, match="limit"):
        load_histogram(data)


def test_uploads_over_the_size_limit_are_refused_before_parsing(tmp_path):
    data = b"count\n" + b"1\n" * (MAX_UPLOAD_BYTES // 2 + 1)
    assert len(data) > MAX_UPLOAD_BYTES
    with pytest.raises(DataError, match="limit is 50 MB"):
        load_histogram(data)
    path = tmp_path / "big.csv"
    path.write_bytes(data)
    with pytest.raises(DataError, match="limit is 50 MB"):
        load_histogram(path)


# ----------------------------------------------------------------------------- other loaders
@FUZZ
@given(st.one_of(near_valid_csv(), st.binary(max_size=512)), st.sampled_from(["label", "count", "Count", "x"]),
       st.sampled_from([{}, {"bins": 3}, {"edges": [0, 1, 10]}, {"bins": 0}, {"edges": [5, 1]}]))
def test_records_loader(data, column, binning):
    _load_or_data_error(histogram_from_records, data, column, **binning)


@FUZZ
@given(st.one_of(near_valid_csv(), st.binary(max_size=512)), st.sampled_from([None, 1, 3]))
def test_query_matrix_loader_raises_only_value_error(data, n):
    try:
        workload = explicit_from_csv(data, n)
    except ValueError as err:
        assert str(err)
        return
    matrix = workload.matrix
    assert matrix.ndim == 2 and matrix.size > 0 and np.all(np.isfinite(matrix))


# ----------------------------------------------------------------------------- bad parameters everywhere
from dplens.cli import main as cli_main  # noqa: E402
from dplens.core.data.limits import MAX_EPSILON  # noqa: E402
from dplens.core.mechanisms import MECHANISMS, Release, configure  # noqa: E402
from dplens.core.privacy.budget import Budget, BudgetExceededError, Ledger  # noqa: E402
from dplens.core.queries.workloads import Prefix, parse_workload, random_range  # noqa: E402
from dplens.core.release.export import ExportKeys, history_to_csv, release_to_csv  # noqa: E402
from dplens.core.release.gradual import check_schedule  # noqa: E402

BAD_EPSILONS = [0, -1.0, float("nan"), float("inf"), -float("inf"), "1", None, True, MAX_EPSILON * 1.01, 1e300]
X16 = np.array([0, 3, 1, 7, 0, 2, 9, 4, 0, 0, 5, 1, 2, 8, 3, 6], dtype=float)


def _data_for(mechanism) -> np.ndarray:
    """X16, or the same counts as a 4 × 4 grid for a 2-D-only mechanism."""
    try:
        mechanism.run(X16, Prefix(16), 1.0, np.random.default_rng(0))
    except ValueError as err:
        if "2-D" in str(err):
            return X16.reshape(4, 4)
        raise
    return X16


@pytest.mark.parametrize("mechanism", MECHANISMS.values(), ids=MECHANISMS.keys())
def test_every_mechanism_refuses_bad_epsilon_and_too_wide_workloads(mechanism):
    x, rng = _data_for(mechanism), np.random.default_rng(0)
    for epsilon in BAD_EPSILONS:
        with pytest.raises(ValueError, match="epsilon"):
            mechanism.run(x, Prefix(16), epsilon, rng)
    with pytest.raises(ValueError, match="columns|shape|cells"):
        mechanism.run(x, Prefix(17), 1.0, rng)  # a workload wider than the domain
    with pytest.raises(ValueError):
        mechanism.run(-x, Prefix(16), 1.0, rng)  # negative counts
    with np.errstate(over="raise", invalid="raise"):  # the largest legal epsilon must not overflow
        release = mechanism.run(x, Prefix(16), MAX_EPSILON, rng)
    assert np.all(np.isfinite(release.answers))


RATIO_FIELDS = [(name, field) for name, m in MECHANISMS.items() for field in ("ratio", "total_ratio")
                if hasattr(m, field)]


@pytest.mark.parametrize(("name", "field"), RATIO_FIELDS)
@pytest.mark.parametrize("value", [0, 1, -0.5, 1.5, float("nan")])
def test_budget_ratios_outside_the_open_unit_interval_are_refused(name, field, value):
    with pytest.raises(ValueError, match=field):
        configure(MECHANISMS[name], {field: value})


@pytest.mark.parametrize("spec", ["random-range:m=0", "random-range:m=-3", "random-range:m=1e9", "hot-spot:p=1.5",
                                  "random-range:m=abc", "marginals", "prefix:m=3", "nope"])
def test_bad_workload_specs_are_refused(spec):
    with pytest.raises(ValueError):
        parse_workload(spec, (16,))


def test_zero_queries_and_wide_query_files_are_refused():
    with pytest.raises(ValueError, match="m must be"):
        random_range(16, 0)
    with pytest.raises(ValueError, match="columns but the histogram has 3 cells"):
        explicit_from_csv(b"1,0,1,1\n", 3)


@pytest.mark.parametrize("schedule", [[0.5, 0.2], [0.1, 0.1], [0.1, float("nan")], [], [-0.1, 0.2],
                                      [0.1, float("inf")]])
def test_gradual_schedules_must_be_strictly_increasing_and_positive(schedule):
    with pytest.raises(ValueError, match="epsilon"):
        check_schedule(schedule)


@pytest.mark.parametrize("epsilon", [-1.0, float("nan"), float("inf")])
def test_budgets_refuse_bad_epsilon(epsilon):
    with pytest.raises(ValueError, match="epsilon"):
        Budget(epsilon)
    with pytest.raises(ValueError, match="epsilon"):
        Ledger(Budget(1.0)).spend("x", Budget(epsilon))


def test_huge_spend_is_a_budget_error():
    with pytest.raises(BudgetExceededError, match="remaining"):
        Ledger(Budget(1.0)).spend("huge", Budget(1e300))


CLI_BASE = ["release", "--input", "tips-bill", "--mechanism", "identity"]


@pytest.mark.parametrize("args", [
    CLI_BASE + ["--epsilon", "0"], CLI_BASE + ["--epsilon", "-1"], CLI_BASE + ["--epsilon", "nan"],
    CLI_BASE + ["--epsilon", "inf"], CLI_BASE + ["--epsilon", "1e999"], CLI_BASE + ["--epsilon", "abc"],
    CLI_BASE + ["--epsilon", "1", "--workload", "random-range:m=0"],
    CLI_BASE + ["--epsilon", "1", "--workload", "marginals"],
    ["release", "--input", "tips-bill", "--mechanism", "sreb-gca", "--epsilon", "1", "--param", "ratio=1.5"],
    ["release", "--input", "tips-bill", "--mechanism", "sreb-gca", "--epsilon", "1", "--param", "ratio=0"],
    ["compare", "--input", "tips-bill", "--epsilons", "0.1,-1"],
    ["compare", "--input", "tips-bill", "--epsilons", "0.1", "--trials", "0"],
    ["compare", "--input", "tips-bill", "--mechanisms", "identity,nope"],
])
def test_cli_bad_parameters_exit_2_with_one_line(args, tmp_path, capsys):
    code = cli_main([*args, "--output", str(tmp_path / "out.csv")])
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert err.startswith("error: ") and "\n" not in err and "Traceback" not in err


def test_csv_exports_neutralise_formula_injection_in_labels():
    labels = INJECTIONS + ["plain", "-3 (negative bin)"]
    values = np.arange(len(labels), dtype=float)
    release = Release("identity", PureDP(1.0), 1.0, values, values.copy())
    rows = list(csv.reader(io.StringIO(release_to_csv(release, ExportKeys(("bin",), (tuple(labels),))).decode())))
    for (label, _), original in zip(rows[1:], labels, strict=True):
        assert not label.startswith(("=", "+", "-", "@", "\t", "\r")), label
        assert label.lstrip("'").replace("\n", "\r") in (original, original.replace("\r\n", "\n"))
    history = history_to_csv([{"label": "=cmd|' /C calc'!A0", "epsilon": 0.5}])
    assert "'=cmd" in history.decode() and ",=cmd" not in history.decode()


# ----------------------------------------------------------------------------- the command line, end to end
import dataclasses  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

from dplens.core.queries.workloads import WORKLOADS  # noqa: E402
from dplens.core.release import kernel  # noqa: E402
from tests.work_budget import WorkBudgetExceeded, call_budget  # noqa: E402

CLI_FUZZ = settings(max_examples=700, deadline=None, derandomize=True,  # capsys is drained per example
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.function_scoped_fixture])
# A hang or a blow-up is bounded by work, not wall time (tests/work_budget.py): the function calls one command
# makes, the same on a loaded machine as on an idle one. The largest measured is a first secure DAWA release in a
# fresh process, imports included: about 3.5 million; most commands here are refused in under 20,000. (Sweeps of
# inputs this small run in this process: scheduler "auto" picks serial.)
CLI_CALLS = 20_000_000
TEXT = st.one_of(NUMBERISH, st.text(max_size=8), st.sampled_from(["1,2", "1e-300", "1e300", "0.5", "2", "auto",
                                                                    "-0", "1" + "0" * 30, "true", "abc", "1;2"]))
FIELDS = sorted({f.name for m in MECHANISMS.values() for f in dataclasses.fields(m)} | {"nope", ""})
SPECS = st.one_of(st.sampled_from(sorted(WORKLOADS)), st.builds(
    lambda name, key, value: f"{name}:{key}={value}", st.sampled_from(sorted(WORKLOADS)),
    st.sampled_from(["m", "seed", "p", "tau", "x"]), TEXT), st.text(max_size=12))
NAMES = st.one_of(st.sampled_from(sorted(MECHANISMS)), st.text(max_size=6))
INPUTS = st.one_of(st.sampled_from(["tips-bill", "tips-bill", "grid-2d", "nope"]), st.tuples(
    st.one_of(near_valid_csv(), near_valid_json(), near_valid_npy(), st.binary(max_size=256)),
    st.sampled_from(["in.csv", "in.json", "in.npy", "in.txt"])))


@st.composite
def cli_arguments(draw) -> tuple[list[str], object]:
    """A release or compare command line: names, numbers and files both valid and hostile."""
    common = ["--input", None]
    if draw(st.booleans()):
        args = ["release", *common, "--mechanism", draw(NAMES), "--epsilon", draw(TEXT)]
        for _ in range(draw(st.integers(0, 2))):
            args += ["--param", f"{draw(st.sampled_from(FIELDS))}={draw(TEXT)}"]
        if draw(st.booleans()):
            args += ["--budget", draw(TEXT)]
    else:
        mechanisms = ",".join(draw(st.lists(NAMES, min_size=0, max_size=3)))
        args = ["compare", *common, "--mechanisms", mechanisms, "--epsilons",
                ",".join(draw(st.lists(TEXT, max_size=3))), "--trials", draw(st.sampled_from(["1", "2", "0", "x"]))]
        if draw(st.booleans()):
            args += ["--metrics", draw(st.sampled_from(["mae", "rmse,kld", "nope", ""]))]
    if draw(st.booleans()):
        args += ["--workload", draw(SPECS)]
    if draw(st.booleans()):
        args += ["--seed", draw(st.sampled_from(["0", "7", "-1", "x", str(2**70)]))]
    return args, draw(INPUTS)


def _in_this_process(function, *args, seconds=None, estimated_seconds=None, progress=None, **kwargs):
    """run_bounded without its worker process, whose calls the budget could not count (the time limit is the
    product's guard against a slow run, tested in tests/test_bounds.py; here a run must not need it)."""
    return function(*args, **kwargs) if progress is None else function(*args, progress=progress, **kwargs)


def _check_cli(args: list, source, output: str, capsys, *, budget: int = CLI_CALLS) -> None:
    """Run one command line (``None`` in ``args`` stands for ``source``) within ``budget`` calls: it must exit 0,
    or 2 with one line of error and no traceback."""
    with tempfile.TemporaryDirectory() as folder:
        if isinstance(source, tuple):
            data, name = source
            (Path(folder) / name).write_bytes(data)
            source = str(Path(folder) / name)
        args = [a if a is not None else source for a in args]
        args += ["--output", str(Path(folder) / output), "--ledger", str(Path(folder) / "ledger.sqlite")]
        capsys.readouterr()
        with call_budget(budget) as work:
            try:
                code = cli_main(args)
            except SystemExit as exit_:  # argparse: a malformed command line
                code = exit_.code
            except WorkBudgetExceeded:  # stopped where it ran: reported with its command line below
                code = None
    out, err = capsys.readouterr()
    assert work.within, f"{args} made more than {budget:,} calls"
    assert code in (0, 2), (args, err)
    if code == 2:
        assert err.startswith("error: ") and err.count("\n") == 1, (args, err)
        assert "internal error" not in err and "Traceback" not in err, (args, err)


@CLI_FUZZ
@given(arguments=cli_arguments(), output=st.sampled_from(["out.csv", "out.json", "out.txt"]))
def test_cli_never_tracebacks_or_hangs(arguments, output, capsys, monkeypatch):
    monkeypatch.setattr(kernel, "run_bounded", _in_this_process)
    _check_cli(*arguments, output, capsys)


def test_a_command_that_runs_on_fails_at_the_work_budget(capsys, monkeypatch):
    """The probe: a release that never ends is stopped at the budget, and the check fails (a wall-clock bound
    would have waited for it)."""
    import dplens.cli

    def runaway(args):
        while True:
            len(args.input)

    command = ["release", "--input", None, "--mechanism", "identity", "--epsilon", "1"]
    # a context of its own: monkeypatch.undo() would also undo the autouse DPLENS_HOME, and the release below would
    # then write the installation key and a ledger into the real home
    with monkeypatch.context() as patched, pytest.raises(AssertionError, match="made more than 100,000 calls"):
        patched.setattr(dplens.cli, "cmd_release", runaway)
        _check_cli(command, "tips-bill", "out.csv", capsys, budget=100_000)
    assert os.environ.get("DPLENS_HOME"), "the test's own DPLENS_HOME must still be set"
    _check_cli(command, "tips-bill", "out.csv", capsys)  # the same command as it is: within the budget


# ----------------------------------------------------------------------------- the app's text inputs
from dplens.core.analysis.cost import estimate_cost  # noqa: E402
from dplens.core.data.datasets import bin_edges  # noqa: E402

APP_FUZZ = settings(max_examples=600, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
# Work per step: the largest measured makes about 1,000 calls; building an explicit workload (random-linear on
# 256 × 256 cells: 200 dense rows of 65,536) peaks near 230 MB. A blow-up goes past either bound.
APP_CALLS = 100_000
APP_PEAK_BYTES = 1 << 30


@APP_FUZZ
@given(name=st.sampled_from(sorted(MECHANISMS)), settings_=st.dictionaries(st.sampled_from(FIELDS), TEXT, max_size=3),
       spec=SPECS, shape=st.sampled_from([(51,), (4096,), (64, 64), (256, 256)]), edges=TEXT)
def test_app_settings_specs_and_edges_refuse_with_one_line_within_bounded_work(name, settings_, spec, shape, edges):
    """What the Release/Workloads/Data pages pass on from text boxes: settings, workload specs, bin edges."""
    for step in (lambda: estimate_cost(configure(MECHANISMS[name], settings_), parse_workload(spec, shape)),
                 lambda: bin_edges(edges)):
        with call_budget(APP_CALLS, peak_bytes=APP_PEAK_BYTES) as work:
            try:
                step()
            except ValueError as err:
                assert str(err) and "\n" not in str(err), err
            except WorkBudgetExceeded:
                pass  # reported below, with the input
        assert work.within, (name, settings_, spec, shape, edges, f"{work.calls:,} calls, {work.peak_bytes:,} bytes")
