"""Table input: bins chosen without the private data, missing-value choices, pre-aggregated long
tables, weights per marginal, and bad input as one line naming the column or marginal and the rule."""

import json

import numpy as np
import pytest

from dplens.cli import main
from dplens.core.data.datasets import DataError
from dplens.core.data.domain import Domain
from dplens.core.queries.marginals import MarginalWorkload
from dplens.core.tables.records import bin_edges, load_table, parse_marginal_workload


def test_equal_width_bins_and_end_bins_take_outliers():
    table = load_table(b"age\n17\n25\n89\n120\n3\n", b'{"age": {"low": 17, "high": 90, "width": 20}}')
    assert table.levels["age"] == ["[17, 37)", "[37, 57)", "[57, 77)", "[77, 90]"]
    assert table.records[:, 0].tolist() == [0, 0, 3, 3, 0]
    assert any("end bins" in n for n in table.notes)


def test_edges_and_public_quantiles():
    table = load_table(b"gain\n0\n1\n4999\n5000\n", b'{"gain": {"edges": [0, 1, 5000, 100000]}}')
    assert table.records[:, 0].tolist() == [0, 1, 1, 2]
    public = list(range(101))
    np.testing.assert_allclose(bin_edges("x", {"quantiles": 4, "public_sample": public}), [0, 25, 50, 75, 100])


@pytest.mark.parametrize("spec, words", [
    ({"low": 5, "high": 5, "width": 1}, ["'x'", "must exceed"]),
    ({"low": 0, "high": 5, "width": -1}, ["'x'", "width"]),
    ({"edges": [0, 2, 1]}, ["'x'", "increase strictly"]),
    ({"edges": [0, 1]}, ["'x'", "2 to"]),
    ({"quantiles": 9, "public_sample": [1, 2]}, ["'x'", "quantiles"]),
    ({"median": 3}, ["'x'", "the rule is one of"]),
])
def test_bad_bins_name_the_column_and_rule(spec, words):
    with pytest.raises(DataError) as caught:
        load_table(b"x\n1\n", json.dumps({"x": spec}).encode())
    assert all(w in str(caught.value) for w in words) and "\n" not in str(caught.value)


def test_binned_column_refuses_text_and_nan():
    with pytest.raises(DataError, match="'x' holds 'abc'; a binned column must hold finite numbers"):
        load_table(b"x\nabc\n", b'{"x": {"low": 0, "high": 10, "bins": 2}}')
    with pytest.raises(DataError, match="'x' holds 'inf'"):
        load_table(b"x\ninf\n", b'{"x": {"low": 0, "high": 10, "bins": 2}}')


def test_missing_values_refuse_drop_or_level():
    csv, domain = b"a,b\n1,x\n,y\n0,\n1,y\n", b'{"a": 2, "b": ["x", "y"]}'
    with pytest.raises(DataError, match="column 'a' has a missing value in row 3"):
        load_table(csv, domain)
    dropped = load_table(csv, domain, missing="drop")
    assert dropped.records.tolist() == [[1, 0], [1, 1]] and "2 row(s)" in dropped.notes[0]
    level = load_table(csv, domain, missing="level")
    assert level.domain == Domain(("a", "b"), (3, 3))
    assert level.records.tolist() == [[1, 0], [2, 1], [0, 2], [1, 1]] and level.levels["b"][-1] == "missing"
    with pytest.raises(ValueError, match="missing must be one of refuse, drop, level"):
        load_table(csv, domain, missing="impute")


def test_pre_aggregated_long_table():
    table = load_table(b"sex,race,count\nF,0,3\nM,1,0\nM,0,2\n", b'{"sex": ["F", "M"], "race": 2}')
    assert table.records.tolist() == [[0, 0]] * 3 + [[1, 0]] * 2
    for bad, words in ((b"-1", "integers >= 0"), (b"2.5", "integers >= 0"), (b"x", "'x' in row 2")):
        with pytest.raises(DataError) as caught:
            load_table(b"sex,count\nF," + bad + b"\n", b'{"sex": ["F", "M"]}')
        assert "'count'" in str(caught.value) and words in str(caught.value)


def test_one_level_column_and_too_small_domain_are_refused():
    with pytest.raises(DataError, match="column 'a' has one level"):
        load_table(b"a,b\n0,1\n0,0\n", b'{"a": 1, "b": 2}')
    with pytest.raises(DataError, match="column 'b' holds code 5, outside its declared domain 0..1"):
        load_table(b"a,b\n0,5\n1,0\n", b'{"a": 2, "b": 2}')


def test_weights_per_marginal_are_parsed_and_leave_the_cells_sensitivity_alone():
    domain = Domain(("a", "b", "c"), (2, 3, 4))
    w = parse_marginal_workload("marginals:a+b*2, c*0.5", domain)
    # the released cells are unweighted: one record moves one cell of each marginal by 1, whatever the weights
    assert w.weights == (2.0, 0.5) and w.cells_l1_sensitivity == 2 and w.cells_l2_sensitivity == pytest.approx(2 ** 0.5)
    with pytest.raises(ValueError, match="weight after \\* must be a number"):
        parse_marginal_workload("marginals:a*x", domain)
    with pytest.raises(ValueError, match="weights must be finite and > 0"):
        parse_marginal_workload("marginals:a*0", domain)


def test_four_way_marginal_over_the_limit_names_it():
    domain = Domain(("a", "b", "c", "d"), (100, 100, 100, 100))
    with pytest.raises(ValueError, match=r"marginal \('a', 'b', 'c', 'd'\) has 100,000,000 cells; the limit"):
        MarginalWorkload(domain, (("a", "b", "c", "d"),))


@pytest.mark.parametrize("csv, domain, extra, words", [
    ("a,b\n1,\n", {"a": 2, "b": 2}, [], "'b' has a missing value"),
    ("a,b\n0,1\n0,0\n", {"a": 1, "b": 2}, [], "'a' has one level"),
    ("a,b\n0,1\n1,0\n", {"a": 2, "b": 2}, ["--workload", "marginals:a+z"], "not attributes of this table"),
    ("a,b\n0,1\n1,0\n", {"a": 2, "b": {"edges": [0]}}, [], "bins of column 'b'"),
])
def test_cli_bad_table_input_exits_2_with_one_line(tmp_path, capsys, csv, domain, extra, words):
    (tmp_path / "t.csv").write_text(csv)
    (tmp_path / "d.json").write_text(json.dumps(domain))
    code = main(["release", "--input", str(tmp_path / "t.csv"), "--domain", str(tmp_path / "d.json"),
                 "--workload", "marginals:k=1", "--mechanism", "identity", "--rho", "1", "--budget", "20",
                 "--budget-delta", "1e-5", "--output", str(tmp_path / "o.csv"), *extra])
    err = capsys.readouterr().err.strip()
    assert code == 2 and words in err and len(err.splitlines()) == 1, err


def test_cli_missing_level_releases(tmp_path, capsys):
    (tmp_path / "t.csv").write_text("a,b\n1,\n0,1\n")
    (tmp_path / "d.json").write_text(json.dumps({"a": 2, "b": 2}))
    code = main(["release", "--input", str(tmp_path / "t.csv"), "--domain", str(tmp_path / "d.json"),
                 "--workload", "marginals:k=1", "--mechanism", "identity", "--rho", "1", "--budget", "20",
                 "--budget-delta", "1e-5", "--output", str(tmp_path / "o.csv"), "--missing", "level"])
    assert code == 0, capsys.readouterr().err
    assert "b,missing," in (tmp_path / "o.csv").read_text()


def _release_cells(tmp_path, csv: str, domain: dict, *extra: str) -> str:
    """Release every 1-way marginal of ``csv`` through the CLI (exploration noise) and return the output CSV."""
    (tmp_path / "t.csv").write_text(csv)
    (tmp_path / "d.json").write_text(json.dumps(domain))
    code = main(["release", "--input", str(tmp_path / "t.csv"), "--domain", str(tmp_path / "d.json"),
                 "--workload", "marginals:k=1", "--mechanism", "identity", "--rho", "1", "--budget", "20",
                 "--budget-delta", "1e-5", "--output", str(tmp_path / "o.csv"), *extra])
    assert code == 0
    return (tmp_path / "o.csv").read_text()


def test_declared_levels_named_like_missing_values_are_categories(tmp_path):
    csv, domain = "a,b\nNA,0\nNone,1\nmissing,0\nNA,1\n", {"a": ["NA", "None", "missing"], "b": 2}
    for missing in ("refuse", "drop", "level"):  # no choice reads a declared level as a missing value
        table = load_table(csv.encode(), json.dumps(domain).encode(), missing=missing)
        assert table.records[:, 0].tolist() == [0, 1, 2, 0] and table.levels["a"][:3] == ["NA", "None", "missing"]
    cells = [line.split(",")[1] for line in _release_cells(tmp_path, csv, domain).splitlines()[1:]
             if line.startswith("a,")]
    assert cells == ["NA", "None", "missing"]
    # undeclared, the same words are still missing values (what R and pandas write for one)
    with pytest.raises(DataError, match="column 'a' has a missing value in row 2"):
        load_table(csv.encode())


def test_missing_level_beside_a_real_missing_category_has_its_own_label(tmp_path):
    csv, domain = "a,b\nmissing,0\n,1\nx,0\n", {"a": ["x", "missing"], "b": 2}
    table = load_table(csv.encode(), json.dumps(domain).encode(), missing="level")
    assert table.levels["a"] == ["x", "missing", "missing (2)"] and table.records[:, 0].tolist() == [1, 2, 0]
    assert any("'missing (2)'" in note for note in table.notes)
    cells = [line.split(",")[1] for line in _release_cells(tmp_path, csv, domain, "--missing", "level").splitlines()
             if line.startswith("a,")]
    assert cells == ["x", "missing", "missing (2)"]
