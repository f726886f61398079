"""Bounded inputs (the reported traceback cases, ragged CSVs), bounded runs, 2-D at scale."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

from dplens.cli import main as cli_main
from dplens.core.data.datasets import DataError, bin_edges, histogram_from_records, load_histogram, scan_rows


def _npz_bytes() -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, counts=np.ones(3))
    return buffer.getvalue()


# ----------------------------------------------------------------------------- item 5: the reported cases
@pytest.mark.parametrize(("name", "data", "message"), [
    ("huge.json", json.dumps({"counts": [int("9" * 400), 1]}).encode(), "integer of 400 digits"),
    ("labels.json", b'{"counts": [1, 2], "labels": [["a", "b"], ["c"]]}', "labels are given for 2 axes"),
    ("labels2.json", b'{"counts": [1, 2, 3], "labels": ["a", "b"]}', "axis 0 has 2 labels for 3 bins"),
    ("renamed.npy", _npz_bytes(), r"\.npz archive"),
    ("ragged.csv", b"label,count\na,1,5\nb,2,6", "row 2 has 3 values but earlier rows have 2"),
    ("ragged2.csv", b"count\n1,9\n2,8", "row 2 has 2 values but earlier rows have 1"),
])
def test_reported_bad_files_give_one_line_and_exit_2(name, data, message, tmp_path, capsys):
    with pytest.raises(DataError, match=message):
        load_histogram(data, filename=name)
    path = tmp_path / name
    path.write_bytes(data)
    code = cli_main(["release", "--input", str(path), "--mechanism", "identity", "--epsilon", "1",
                     "--output", str(tmp_path / "out.csv")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith("error: ") and "\n" not in err, err


@pytest.mark.parametrize("args", [
    ["release", "--input", "tips-bill", "--mechanism", "ahp", "--epsilon", "1e-300"],
    ["compare", "--input", "tips-bill", "--epsilons", "1e-300"],
    ["release", "--input", "tips-bill", "--mechanism", "wda", "--epsilon", "1", "--param", "division_seed=abc"],
    ["release", "--input", "tips-bill", "--mechanism", "identity", "--epsilon", "1,2"],
])
def test_reported_bad_parameters_give_one_line_and_exit_2(args, tmp_path, capsys):
    code = cli_main([*args, "--output", str(tmp_path / "out.csv")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith("error: ") and "\n" not in err, err
    assert "internal error" not in err


def test_bin_edges_text_is_parsed_or_refused_with_one_line():
    assert bin_edges("0, 18,30").tolist() == [0.0, 18.0, 30.0]
    with pytest.raises(DataError, match="bin edge 2 is 'abc'"):
        bin_edges("0,abc,5")
    with pytest.raises(DataError, match="bin edge 2 is 'abc'"):
        histogram_from_records(b"age\n3\n", "age", edges="0,abc,5")


def test_the_row_scan_is_exact_with_quotes_blank_lines_and_crlf():
    assert scan_rows(b'label,count\r\n"a,b",1\r\n\r\n"c""d",2\r\n', ",") == (3, 2)
    with pytest.raises(DataError, match="row 4 has 1 value but"):
        scan_rows(b"label,count\na,1\n\nb\n", ",")


def test_a_one_row_wide_csv_parses_in_linear_time():
    values = np.arange(200_000) % 97
    histogram = load_histogram(",".join(map(str, values)).encode())
    assert histogram.counts.shape == (1, values.size) and histogram.total == values.sum()


def test_cell_limit_is_checked_before_parsing():
    with pytest.raises(DataError, match=r"4,194,305 data rows × 1 columns; the limit is 4194304"):
        load_histogram(b"count\n" + b"1\n" * (2**22 + 1))
    with pytest.raises(DataError, match=r"the limit is 4194304"):
        load_histogram(b"[" + b"1," * (2**23 + 1100) + b"1]")


def test_records_read_one_column_and_name_the_bad_row():
    data = b"age,city,score\n23,A,1.5\n35,B,2\n41,A,x\n"
    assert histogram_from_records(data, "city").labels == (("A", "B"),)
    with pytest.raises(DataError, match=r"row 4, column 'score': 'x' is not a number"):
        histogram_from_records(data, "score", bins=2)
    with pytest.raises(DataError, match="row 3 has 1 value but"):
        histogram_from_records(b"age,city\n1,A\n2\n", "age", bins=2)


# ----------------------------------------------------------------------------- item 6: parameter ranges
import dataclasses  # noqa: E402

from dplens.core.mechanisms import MECHANISMS, check_parameters, configure, parameter_ranges  # noqa: E402

SETTINGS = [(name, f.name) for name, m in MECHANISMS.items() for f in dataclasses.fields(m)
            if f.name not in ("name", "data_dependent")]


@pytest.mark.parametrize(("name", "field"), SETTINGS, ids=[f"{n}.{f}" for n, f in SETTINGS])
def test_every_setting_has_a_documented_range_that_refuses_huge_and_junk_values(name, field):
    mechanism = MECHANISMS[name]
    assert field in parameter_ranges(mechanism), f"{name}.{field} needs a range: setting(default, range)"
    assert check_parameters(mechanism) is mechanism  # the defaults are inside their ranges
    described = str(parameter_ranges(mechanism)[field])
    for value in ("100000000", "abc", "-1e300"):
        try:
            configured = configure(mechanism, {field: value})
        except ValueError as err:
            assert field in str(err) and "\n" not in str(err)
            if "must be" in str(err) and name != "cell-release":
                assert described in str(err) or field in str(err)
            continue
        assert check_parameters(configured) is configured  # accepted only when inside the range


@pytest.mark.parametrize(("name", "field", "value", "message"), [
    ("mwem", "rounds", "100000000", r"mwem: rounds must be 'auto' or an integer in \[1, 1000\], got 100000000"),
    ("dawa", "granularity", "100000000", r"dawa: granularity must be an integer in \[2, 1000\]"),
    ("mm-opt", "p", "100000", r"mm-opt: p must be 'auto' or an integer in \[1, 512\], got 100000"),
    ("wda", "division_seed", "abc", r"wda: division_seed must be None or an integer in \[0, 4294967295\], got 'abc'"),
])
def test_reported_unbounded_parameters_are_refused_naming_the_range(name, field, value, message):
    with pytest.raises(ValueError, match=message):
        configure(MECHANISMS[name], {field: value})


# ----------------------------------------------------------------------------- item 6: cost estimates, limits
from dplens.core.analysis.cost import Cost, Deadline, RunLimits, RunTooLargeError, check_cost, estimate_cost  # noqa: E402
from dplens.core.analysis.experiment import run_sweep  # noqa: E402
from dplens.core.data.domain import Histogram  # noqa: E402
from dplens.core.queries.workloads import Prefix, random_range  # noqa: E402


@pytest.mark.parametrize("mechanism", MECHANISMS.values(), ids=MECHANISMS.keys())
def test_every_mechanism_states_a_finite_cost(mechanism):
    cost = estimate_cost(mechanism, random_range(4096, 2000, seed=0))
    assert 0 < cost.seconds < 60 and 0 < cost.bytes < 2**30 and cost.driver


@pytest.mark.parametrize(("name", "params", "names"), [
    ("mm-opt", {"p": "512"}, "p=512"),
    ("mwem", {"rounds": "1000", "update_rounds": "1000"}, "rounds=1000"),
])
def test_big_settings_are_refused_or_announced_naming_the_setting(name, params, names):
    workload = random_range(2**20, 2000, seed=0)
    cost = estimate_cost(configure(MECHANISMS[name], params), workload)
    assert cost.seconds > 10
    try:
        warning = check_cost(cost)
    except RunTooLargeError as err:
        assert names in str(err) and "limit" in str(err)
    else:
        assert names in warning and "estimated" in warning


def test_a_new_mechanism_states_its_cost_through_one_method():
    @dataclasses.dataclass(frozen=True)
    class Slow:
        name: str = "slow"
        data_dependent: bool = False

        def cost(self, workload):
            return Cost(1e4, 1.0, "its only knob")

    assert estimate_cost(Slow(), Prefix(8)).seconds == 1e4
    with pytest.raises(RunTooLargeError, match="limit 2 min per action\\): reduce its only knob"):
        check_cost(estimate_cost(Slow(), Prefix(8)), RunLimits(max_seconds=120))


def test_a_sweep_leaves_out_mechanisms_over_the_limit_and_stops_at_the_deadline():
    histogram = Histogram.from_counts(np.arange(64.0))
    df = run_sweep(histogram, Prefix(64), ["identity", "mm-opt"], [1.0], 2, limits=RunLimits(max_seconds=1e-9))
    assert set(df.attrs["left_out"]) == {"identity", "mm-opt"} and df.empty
    assert "left out: one run is estimated" in df.attrs["left_out"]["mm-opt"]
    deadline = Deadline(60)
    deadline.cancel()
    df = run_sweep(histogram, Prefix(64), ["identity"], [1.0, 2.0], 3, deadline=deadline)
    assert df.attrs["stopped"] and df.attrs["stop_reason"] == "cancelled" and df.empty
    ticks = iter([0.0, 0.0, 0.0, 100.0, 100.0, 100.0, 100.0, 100.0, 100.0, 100.0, 100.0])
    timed = Deadline(50, clock=lambda: next(ticks))
    df = run_sweep(histogram, Prefix(64), ["identity"], [1.0, 2.0], 3, deadline=timed, metrics=["mae"])
    assert df.attrs["stopped"] and "time limit of 50 s" in df.attrs["stop_reason"] and 0 < len(df) < 6


# ----------------------------------------------------------------------------- item 7: 2-D at 256 × 256
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from dplens.core.mechanisms.gram import query_rows  # noqa: E402
from dplens.core.queries.workloads import Ranges2D, dense, parse_workload, random_range_2d  # noqa: E402


@settings(max_examples=40, deadline=None, derandomize=True)
@given(rows=st.integers(1, 6), cols=st.integers(1, 6), m=st.integers(1, 8), seed=st.integers(0, 99))
def test_rectangles_match_their_dense_matrix(rows, cols, m, seed):
    w = random_range_2d((rows, cols), m, seed=seed)
    matrix = dense(w)
    x, y = np.random.default_rng(seed).random((2, max(rows * cols, m)))
    np.testing.assert_allclose(w.matvec(x[: rows * cols]), matrix @ x[: rows * cols], atol=1e-12)
    np.testing.assert_allclose(w.rmatvec(y[:m]), matrix.T @ y[:m], atol=1e-12)
    np.testing.assert_allclose(w.column_norms(1), np.abs(matrix).sum(axis=0))
    np.testing.assert_allclose(w.column_norms(2), np.sqrt((matrix**2).sum(axis=0)))
    np.testing.assert_allclose(w.rows_block(0, m), matrix.T)


@pytest.mark.parametrize("spec", ["marginals", "marginals-ranges-2d:m=5,seed=1", "prefix-2d"])
def test_query_rows_of_kron_and_stack_workloads_come_from_their_factors(spec):
    w = parse_workload(spec, (4, 3))
    np.testing.assert_allclose(query_rows(w, 0, w.shape[0]), dense(w).T)
    np.testing.assert_allclose(query_rows(w, 2, 5), dense(w).T[:, 2:5])


def test_rectangles_refuse_bad_corners():
    with pytest.raises(ValueError, match="0 <= r0 <= r1 < 2"):
        Ranges2D((2, 2), [0], [2], [0], [0])


def test_range_2d_size_error_names_the_setting_to_change():
    with pytest.raises(ValueError, match=r"1,082,146,816 queries.*random-range-2d:m=1000 or marginals-ranges-2d.*"
                                         r"coarsen the grid to at most \d+ × \d+"):
        parse_workload("range-2d", (256, 256))
    side = int(str(pytest.raises(ValueError, parse_workload, "range-2d", (256, 256)).value).split("at most ")[1]
               .split(" ×")[0])
    assert parse_workload("range-2d", (side, side)).shape[0] <= 2**24


def test_the_default_2d_workload_fits_a_256_grid_and_hb_error_uses_the_query_rows():
    from dplens.core.mechanisms import MECHANISMS
    from dplens.core.mechanisms.hierarchical import Hierarchical
    assert parse_workload("marginals-ranges-2d", (256, 256)).shape == (512 + 256, 65536)
    w = parse_workload("marginals-ranges-2d:m=20,seed=0", (32, 32))  # 84 rows against 1,365 tree nodes
    expected = MECHANISMS["hb"].expected_mse(w, 1.0)
    tree = Hierarchical()._tree_args((32, 32))
    from dplens.core.mechanisms.gram import noise_energy
    from dplens.core.mechanisms.hierarchical import _energy, build_tree
    direct = noise_energy(w, lambda v: _response(build_tree(*tree), v), build_tree(*tree).coordinates)
    assert expected == pytest.approx(2.0 * build_tree(*tree).height ** 2 * direct / w.shape[0], rel=1e-9)
    assert _energy(build_tree(*tree), w) == pytest.approx(direct, rel=1e-9)


def _response(tree, noise):
    sizes = [lv.r0.size if m else 0 for lv, m in zip(tree.levels, tree.measured, strict=True)]
    bounds = np.cumsum([0, *sizes])
    blocks = [noise[a:b] if m else None for a, b, m in zip(bounds[:-1], bounds[1:], tree.measured, strict=True)]
    return tree.least_squares(blocks, tree.shape[0] * tree.shape[1])


# ----------------------------------------------------------------------------- item 6 in the app
def test_compare_page_notes_mechanisms_left_out_over_the_limit(monkeypatch):
    from dplens import ui
    from dplens.core.analysis.cost import RunLimits
    from tests.test_app import open_page

    monkeypatch.setattr(ui.sweeps, "RunLimits", lambda: RunLimits(max_seconds=1.0))  # mm-opt: ~15 s estimated
    at = open_page("pages/compare.py")
    at.multiselect(key="compare_mechanisms").set_value(["identity", "mm-opt"])
    at.slider(key="compare_trials").set_value(2)
    at.slider(key="compare_points").set_value(2)
    at.button(key="compare_run").click().run()
    assert not at.exception
    notes = [w.value for w in at.warning]
    assert any(n.startswith("mm-opt left out: one run is estimated at") and "reduce p=" in n for n in notes), notes
    assert set(at.dataframe[-1].value["mechanism"]) == {"identity", "uniform"}


def test_release_page_refuses_a_run_over_the_limit_naming_the_setting():
    from tests.test_app import open_page

    at = open_page("pages/release.py")
    at.selectbox(key="release_mechanism").set_value("mm-opt").run()
    at.text_input(key="release_mm-opt_p").set_value("512").run()
    assert any("reduce p=512" in e.value for e in at.error), [e.value for e in at.error]
    spent = at.session_state.ledger.spent.epsilon
    at.button(key="release_spend").click().run()
    assert at.session_state.ledger.spent.epsilon == spent  # nothing run, nothing charged
    assert any("mm-opt not released" in e.value and "reduce p=512" in e.value for e in at.error)
