"""Command line (`python -m core`): the issue's "Done when" commands, sample inputs, one-line errors, --help."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from core.__main__ import main
from core.datasets import SAMPLE_DATASETS

ROOT = Path(__file__).resolve().parent.parent
HEPTH = ROOT.parent / "shared" / "data" / "dpbench-1d" / "HEPTH.csv"


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "core", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


def _hepth() -> str:
    if not HEPTH.is_file():
        pytest.skip(f"DPBench data not found at {HEPTH}")
    return str(Path("..") / "shared" / "data" / "dpbench-1d" / "HEPTH.csv")


def test_release_of_hepth_writes_4096_rows(tmp_path):
    out = tmp_path / "r.csv"
    result = _cli("release", "--input", _hepth(), "--mechanism", "identity", "--epsilon", "1", "--seed", "1",
                  "--output", str(out))
    assert result.returncode == 0, result.stderr
    rows = list(csv.reader(out.read_text().splitlines()))
    assert rows[0] == ["bin", "count"] and len(rows) == 4097
    assert "neighbouring" in result.stdout and "add/remove" in result.stdout


def test_compare_of_hepth_writes_the_tidy_table(tmp_path):
    out = tmp_path / "results.csv"
    result = _cli("compare", "--input", _hepth(), "--workload", "random-range:m=2000",
                  "--mechanisms", "identity,laplace-on-answers,uniform", "--epsilons", "0.01,0.1,1,10",
                  "--trials", "10", "--output", str(out))
    assert result.returncode == 0, result.stderr
    df = pd.read_csv(out)
    assert list(df.columns) == ["mechanism", "epsilon", "trial", "metric", "value", "seconds", "expected"]
    assert len(df) == 3 * 4 * 10 * 2
    assert set(df["epsilon"]) == {0.01, 0.1, 1, 10}
    assert "identity" in result.stdout and f"wrote {len(df)} rows" in result.stdout


def test_release_is_reproducible_and_json_has_metadata(tmp_path, capsys):
    a, b, c = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "c.json"
    for out, seed in ((a, "3"), (b, "3"), (c, "4")):
        assert main(["release", "--input", "tips-bill", "--mechanism", "identity", "--epsilon", "0.5",
                     "--seed", seed, "--workload", "prefix", "--noise", "exploration", "--output", str(out)]) == 0
    docs = [json.loads(p.read_text()) for p in (a, b, c)]
    assert docs[0]["counts"] == docs[1]["counts"] != docs[2]["counts"]
    assert {"mechanism", "epsilon", "privacy_loss", "workload", "seed", "params", "neighbouring", "version",
            "created"} <= set(docs[0])
    assert docs[0]["workload"] == "prefix" and docs[0]["seed"] == 3 and docs[0]["privacy_loss"] <= 0.5


def test_release_without_estimate_writes_query_answers(tmp_path):
    out = tmp_path / "answers.csv"
    assert main(["release", "--input", "dense", "--mechanism", "laplace-on-answers", "--epsilon", "1",
                 "--workload", "random-range:m=25,seed=2", "--output", str(out)]) == 0
    rows = list(csv.reader(out.read_text().splitlines()))
    assert rows[0] == ["query", "answer"] and len(rows) == 26


@pytest.mark.parametrize("name", list(SAMPLE_DATASETS))
def test_every_sample_name_is_accepted_as_input(name, tmp_path):
    out = tmp_path / "s.csv"
    assert main(["compare", "--input", name, "--mechanisms", "identity,uniform", "--epsilons", "1",
                 "--trials", "1", "--metrics", "mae", "--output", str(out)]) == 0
    assert len(pd.read_csv(out)) == 2


BAD = [
    (["release", "--input", "no-such-file.csv", "--mechanism", "identity", "--epsilon", "1"], "no sample dataset"),
    (["release", "--input", "smooth", "--mechanism", "nope", "--epsilon", "1"], "unknown mechanism 'nope'"),
    (["release", "--input", "smooth", "--mechanism", "identity", "--epsilon", "abc"], "--epsilon must be"),
    (["release", "--input", "smooth", "--mechanism", "identity", "--epsilon", "0"], "epsilon must be finite and > 0"),
    (["release", "--input", "smooth", "--mechanism", "identity", "--epsilon", "1", "--workload", "marginals"],
     "needs a 2-D histogram"),
    (["release", "--input", "smooth", "--mechanism", "identity", "--epsilon", "1",
      "--workload", "random-range:m=abc"], "workload parameter m must be an integer"),
    (["release", "--input", "smooth", "--mechanism", "identity", "--epsilon", "1", "--param", "x"],
     "--param must look like key=value"),
    (["release", "--input", "smooth", "--mechanism", "identity", "--epsilon", "1", "--param", "depth=3"],
     "has no parameter 'depth'"),
    (["compare", "--input", "smooth", "--metrics", "accuracy"], "unknown metrics"),
    (["compare", "--input", "smooth", "--epsilons", ","], "--epsilons needs at least one value"),
    (["compare", "--input", "smooth", "--mechanisms", "identity,zzz"], "unknown mechanism 'zzz'"),
    (["compare", "--input", "smooth", "--workload", "file:/nonexistent/q.csv"], "cannot read query-matrix file"),
]


@pytest.mark.parametrize("args, message", BAD, ids=[f"bad{i}" for i in range(len(BAD))])
def test_bad_input_exits_2_with_one_line(args, message, tmp_path, capsys):
    assert main([*args, "--output", str(tmp_path / "out.csv")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and message in err
    assert not (tmp_path / "out.csv").exists() or args[0] == "release"


def test_bad_file_and_output_suffix(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_text("count\n1\n-3\n")
    assert main(["release", "--input", str(bad), "--mechanism", "identity", "--epsilon", "1",
                 "--output", str(tmp_path / "o.csv")]) == 2
    assert main(["release", "--input", "smooth", "--mechanism", "identity", "--epsilon", "1",
                 "--output", str(tmp_path / "o.txt")]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert lines == [lines[0], "error: --output must end in .csv or .json, got " + repr(str(tmp_path / "o.txt"))]
    assert "counts must be >= 0" in lines[0]


def test_subprocess_bad_input_prints_no_traceback(tmp_path):
    result = _cli("release", "--input", "missing.json", "--mechanism", "identity", "--epsilon", "1",
                  "--output", str(tmp_path / "x.csv"))
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


@pytest.mark.parametrize("command", ["release", "compare"])
def test_help_on_each_command(command, capsys):
    with pytest.raises(SystemExit) as info:
        main([command, "--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert "--input" in out and "--output" in out and "smooth" in out


def test_top_level_help():
    result = _cli("--help")
    assert result.returncode == 0 and "release" in result.stdout and "compare" in result.stdout
