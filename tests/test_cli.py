"""Command line (`python -m dplens`): the issue's "Done when" commands, sample inputs, one-line errors, --help."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from dplens.cli import main
from dplens.core.data.datasets import SAMPLE_DATASETS, load_histogram
from dplens.core.data.fingerprint import dataset_fingerprint
from dplens.core.privacy.ledger_store import LedgerStore
from tests.conftest import DPBENCH_LIKE_BINS

ROOT = Path(__file__).resolve().parent.parent


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dplens", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


@pytest.fixture(params=["fixture", "shared"])
def hepth(request) -> tuple[str, int]:
    """A DPBench-format CSV and its number of bins: the generated 512-bin one (``dpbench_like``), and the real
    4096-bin HEPTH when the optional shared data is present (else that variant skips, naming DPLENS_SHARED_DATA)."""
    if request.param == "fixture":
        return str(request.getfixturevalue("dpbench_like") / "HEPTH.csv"), DPBENCH_LIKE_BINS
    return str(request.getfixturevalue("shared_file")("dpbench-1d", "HEPTH.csv")), 4096


def test_release_of_a_dpbench_file_writes_a_row_per_bin(hepth, tmp_path):
    path, bins = hepth
    out = tmp_path / "r.csv"
    result = _cli("release", "--input", path, "--mechanism", "identity", "--epsilon", "1", "--seed", "1",
                  "--output", str(out))
    assert result.returncode == 0, result.stderr
    rows = list(csv.reader(out.read_text().splitlines()))
    assert rows[0] == ["bin", "count", "lower", "upper", "level"] and len(rows) == bins + 1  # as the app exports
    assert "neighbouring" in result.stdout and "add/remove" in result.stdout


def test_compare_of_a_dpbench_file_writes_the_tidy_table(hepth, tmp_path):
    path, _ = hepth
    out = tmp_path / "results.csv"
    result = _cli("compare", "--input", path, "--workload", "random-range:m=2000",
                  "--mechanisms", "identity,laplace-on-answers,uniform", "--epsilons", "0.01,0.1,1,10",
                  "--trials", "10", "--output", str(out))
    assert result.returncode == 0, result.stderr
    df = pd.read_csv(out)
    assert list(df.columns) == ["mechanism", "epsilon", "trial", "metric", "value", "seconds", "expected"]
    assert len(df) == 3 * 4 * 10 * 2
    assert set(df["epsilon"]) == {0.01, 0.1, 1, 10}
    assert "identity" in result.stdout and f"wrote {len(df)} rows" in result.stdout


def test_release_json_has_metadata_and_an_export_id_but_no_seed(tmp_path):
    out = tmp_path / "a.json"
    assert main(["release", "--input", "tips-bill", "--mechanism", "identity", "--epsilon", "0.5",
                 "--seed", "3", "--workload", "prefix", "--output", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert {"mechanism", "epsilon", "privacy_loss", "workload", "params", "neighbouring", "version",
            "created", "export_id", "noise_path"} <= set(doc)
    assert doc["workload"] == "prefix" and doc["privacy_loss"] <= 0.5 and doc["noise_path"] == "secure"
    assert not {"seed", "stream"} & set(doc)
    spends = [e for e in LedgerStore().history() if e["kind"] == "spend"]
    assert [(e["export_id"], e["epsilon"], e["mechanism"]) for e in spends] == [(doc["export_id"], 0.5, "identity")]


@pytest.mark.parametrize("suffix", [".csv", ".json"])
def test_exploration_noise_is_never_written_as_a_release(tmp_path, capsys, suffix):
    out = tmp_path / f"r{suffix}"
    assert main(["release", "--input", "tips-bill", "--mechanism", "identity", "--epsilon", "0.5",
                 "--seed", "7", "--noise", "exploration", "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "simulation, not a private release" in err and "--noise secure" in err
    assert not out.exists() and LedgerStore().history() == []  # nothing written, nothing charged


def test_release_charges_the_ledger_and_refuses_an_overspend(tmp_path, capsys):
    ledger = tmp_path / "my-ledger.sqlite3"
    base = ["release", "--input", "tips-bill", "--mechanism", "identity", "--ledger", str(ledger)]
    assert main([*base, "--epsilon", "0.75", "--budget", "1", "--output", str(tmp_path / "a.csv")]) == 0
    assert main([*base, "--epsilon", "0.5", "--output", str(tmp_path / "b.csv")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "remaining is epsilon=0.25 of 1" in err
    assert not (tmp_path / "b.csv").exists()
    assert main([*base, "--epsilon", "0.25", "--budget", "3", "--output", str(tmp_path / "c.csv")]) == 2
    assert "fixed at epsilon=1 after the first release" in capsys.readouterr().err  # the total is set once
    assert main([*base, "--epsilon", "0.25", "--output", str(tmp_path / "c.csv")]) == 0
    store = LedgerStore(ledger)
    fingerprint = dataset_fingerprint(load_histogram("tips-bill"))
    assert store.ledger(fingerprint).spent.epsilon == pytest.approx(1.0)
    assert not LedgerStore().history()  # --ledger, not DPLENS_HOME


def test_ledger_command_shows_exports_and_resets(tmp_path, capsys):
    release = ["release", "--input", "tips-bill", "--mechanism", "identity", "--epsilon", "2",
               "--output", str(tmp_path / "a.csv")]
    assert main(release) == 0
    history = tmp_path / "history.csv"
    assert main(["ledger", "--input", "tips-bill", "--output", str(history)]) == 0
    out = capsys.readouterr().out
    assert dataset_fingerprint(load_histogram("tips-bill")) in out and "remaining 3" in out
    rows = list(csv.DictReader(history.read_text().splitlines()))
    assert [r["kind"] for r in rows] == ["total", "spend"] and rows[1]["epsilon"] == "2.0"
    assert main(["ledger", "--input", "tips-bill", "--reset", "--budget", "1"]) == 2  # no reason
    assert main(["ledger", "--input", "tips-bill", "--reset", "--budget", "1", "--reason", "new study"]) == 0
    captured = capsys.readouterr()
    assert "voids the differential-privacy guarantee" in captured.err and "remaining 1" in captured.out


def test_release_without_estimate_writes_query_answers(tmp_path):
    out = tmp_path / "answers.csv"
    assert main(["release", "--input", "dense", "--mechanism", "laplace-on-answers", "--epsilon", "1",
                 "--workload", "random-range:m=25,seed=2", "--output", str(out)]) == 0
    rows = list(csv.reader(out.read_text().splitlines()))
    assert rows[0] == ["query", "answer", "lower", "upper", "level", "description", "spec"] and len(rows) == 26
    assert all(row[5].startswith(("bin", "bins")) and row[6].startswith("range:") for row in rows[1:])


@pytest.mark.parametrize("name", list(SAMPLE_DATASETS))
def test_every_sample_name_is_accepted_as_input(name, tmp_path):
    out = tmp_path / "s.csv"
    assert main(["compare", "--input", name, "--mechanisms", "identity,uniform", "--epsilons", "1",
                 "--trials", "1", "--metrics", "mae", "--output", str(out)]) == 0
    assert len(pd.read_csv(out)) == 2


def test_compare_on_an_all_zero_histogram_computes_only_the_metrics_asked(tmp_path, capsys):
    """The issue's reproduction: 256 zero bins, prefix, identity and hb, ``--metrics rmse`` (scaled error, which
    needs a total > 0, was computed anyway and refused the input); asking for scaled gets one line saying why."""
    zeros, out = tmp_path / "zeros.csv", tmp_path / "out.csv"
    zeros.write_text("count\n" + "0\n" * 256)
    common = ["compare", "--input", str(zeros), "--workload", "prefix", "--mechanisms", "identity,hb",
              "--epsilons", "1", "--trials", "2", "--output", str(out)]
    assert main([*common, "--metrics", "rmse"]) == 0
    df = pd.read_csv(out)
    assert set(df.metric) == {"rmse"} and set(df.mechanism) == {"identity", "hb"} and len(df) == 2 * 2
    out.unlink()
    capsys.readouterr()
    assert main([*common, "--metrics", "rmse,scaled"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: metric 'scaled' (")
    assert "needs a histogram total > 0, got 0" in err and not out.exists()


BAD = [
    (["release", "--input", "no-such-file.csv", "--mechanism", "identity", "--epsilon", "1"], "no sample dataset"),
    (["release", "--input", "smooth", "--mechanism", "nope", "--epsilon", "1"], "unknown mechanism 'nope'"),
    (["release", "--input", "smooth", "--mechanism", "identity", "--epsilon", "abc"], "--epsilon must be"),
    (["release", "--input", "smooth", "--mechanism", "identity", "--epsilon", "0"],
     "epsilon must be a finite number > 0"),
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
