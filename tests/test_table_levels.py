"""Levels of a table of records: a declared level is never a missing value (whatever pandas would read as NaN),
the level added for missing values has a label of its own, and level labels survive the CSV exports."""

import io
import json

import pandas as pd
import pytest

from dplens.cli import TABLE_COMPARE_DEFAULTS, main
from dplens.core.data.datasets import DataError
from dplens.core.registry import mechanism
from dplens.core.tables.records import MISSING_CHOICES, load_table

# words pandas' read_csv turns into NaN by default (keep_default_na), and the empty cell
NAN_WORDS = ["NA", "N/A", "#N/A", "NaN", "nan", "null", "NULL", "None", "n/a", "<NA>", ""]


def _load(csv: str, domain: dict | None, missing: str = "refuse"):
    return load_table(csv.encode(), None if domain is None else json.dumps(domain).encode(), missing=missing)


def _release(tmp_path, csv: str, domain: dict | str, *extra: str) -> pd.DataFrame:
    """Release every 1-way marginal through the CLI; the output CSV read back with no word taken for NaN."""
    (tmp_path / "t.csv").write_text(csv)
    (tmp_path / "d.json").write_text(domain if isinstance(domain, str) else json.dumps(domain))
    code = main(["release", "--input", str(tmp_path / "t.csv"), "--domain", str(tmp_path / "d.json"),
                 "--workload", "marginals:k=1", "--mechanism", "gaussian-marginals", "--rho", "1", "--budget", "20",
                 "--budget-delta", "1e-5", "--output", str(tmp_path / "o.csv"), *extra])
    assert code == 0
    return pd.read_csv(tmp_path / "o.csv", keep_default_na=False, dtype={"cell": str})


@pytest.mark.parametrize("missing", MISSING_CHOICES)
@pytest.mark.parametrize("word", NAN_WORDS, ids=[w or "empty" for w in NAN_WORDS])
def test_a_declared_level_is_a_category_whatever_its_name(word, missing):
    csv = f"a,b\n{word},0\nx,1\n{word},1\n"
    table = _load(csv, {"a": [word, "x"], "b": 2}, missing)
    assert table.records[:, 0].tolist() == [0, 1, 0]
    assert table.levels["a"][:2] == [word, "x"]
    assert not any("dropped" in note for note in table.notes)


@pytest.mark.parametrize("word", ["NA", ""], ids=["NA", "empty"])
def test_a_declared_level_named_like_a_missing_value_is_released_as_that_level(tmp_path, word):
    out = _release(tmp_path, f"a,b\n{word},0\nx,1\n", {"a": [word, "x"], "b": 2})
    assert out.loc[out["marginal"] == "a", "cell"].tolist() == [word, "x"]


def test_undeclared_the_same_words_are_missing_values():
    with pytest.raises(DataError, match="column 'a' has a missing value in row 2"):
        _load("a,b\nNA,0\nx,1\n", {"a": ["x", "y"], "b": 2})
    with pytest.raises(DataError, match="column 'a' has a missing value in row 2"):
        _load("a,b\n,0\nx,1\n", {"a": ["NA", "x"], "b": 2})  # NA is declared, the empty cell is not
    assert _load("a,b\nNA,0\nx,1\n", None, "level").levels["a"] == ["x", "missing"]


def test_declared_levels_are_compared_as_the_cells_are_read_stripped():
    table = _load("a,b\n NA ,0\nx,1\n", {"a": ["NA ", " x"], "b": 2})
    assert table.levels["a"] == ["NA", "x"] and table.records[:, 0].tolist() == [0, 1]


@pytest.mark.parametrize("level", ["null", "NaN", "[1]"])
def test_a_json_null_or_nan_is_not_a_level(level):
    with pytest.raises(DataError, match="domain of column 'a' declares the level .*a level is a string or a number"):
        load_table(b"a,b\nNone,0\nx,1\n", f'{{"a": [{level}, "x"], "b": 2}}'.encode())


def test_the_missing_level_label_differs_from_every_real_level(tmp_path):
    csv = "a,b\nmissing,0\n,1\nmissing (2),0\nx,1\n"
    table = _load(csv, {"a": ["x", "missing", "missing (2)"], "b": 2}, "level")
    assert table.levels["a"] == ["x", "missing", "missing (2)", "missing (3)"]
    assert table.records[:, 0].tolist() == [1, 3, 2, 0]
    assert any("'missing (3)'" in note for note in table.notes)
    inferred = _load("a,b\nmissing,0\n,1\nx,0\n", None, "level")  # levels read from the data
    assert inferred.levels["a"] == ["missing", "x", "missing (2)"]
    out = _release(tmp_path, csv, {"a": ["x", "missing", "missing (2)"], "b": 2}, "--missing", "level")
    cells = out.loc[out["marginal"] == "a", "cell"].tolist()
    assert cells == ["x", "missing", "missing (2)", "missing (3)"] and len(set(cells)) == len(cells)


def test_levels_holding_commas_or_quotes_survive_the_released_csv(tmp_path):
    csv = 'a,b\n"x,y",0\n"say ""hi""",1\n'
    out = _release(tmp_path, csv, {"a": ["x,y", 'say "hi"'], "b": 2})
    assert out.loc[out["marginal"] == "a", "cell"].tolist() == ["x,y", 'say "hi"']


def test_compare_of_a_table_with_no_options_runs_its_table_defaults(tmp_path, capsys):
    names = TABLE_COMPARE_DEFAULTS["mechanisms"].split(",")
    assert all(mechanism(name, kind="table").name == name for name in names)  # table mechanisms, not histogram ones
    (tmp_path / "t.csv").write_text("a,b\n" + "\n".join(f"{'NA' if i % 3 else 'x'},{i % 2}" for i in range(40)))
    (tmp_path / "d.json").write_text(json.dumps({"a": ["NA", "x"], "b": 2}))
    code = main(["compare", "--input", str(tmp_path / "t.csv"), "--domain", str(tmp_path / "d.json"),
                 "--output", str(tmp_path / "out.csv")])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    df = pd.read_csv(io.StringIO((tmp_path / "out.csv").read_text()))
    assert sorted(set(df["mechanism"])) == sorted(names) and "independence baseline" in captured.out


def test_compare_of_a_one_attribute_table_with_no_options_runs(tmp_path, capsys):
    (tmp_path / "t.csv").write_text("a\n" + "\n".join("NA" if i % 3 else "x" for i in range(30)))
    (tmp_path / "d.json").write_text(json.dumps({"a": ["NA", "x"]}))
    code = main(["compare", "--input", str(tmp_path / "t.csv"), "--domain", str(tmp_path / "d.json"),
                 "--output", str(tmp_path / "out.csv"), "--trials", "1"])
    assert code == 0, capsys.readouterr().err  # the default 2-way marginals fall back to the 1-way marginal
    assert len(pd.read_csv(tmp_path / "out.csv")) == 2 * 2
