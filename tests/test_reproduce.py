"""Reproductions (core/reproduce.py): tidy tables, computed findings, files, the CLI subcommand."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from core.__main__ import main
from core.reproduce import (
    DPBENCH_DIR,
    REPRODUCTIONS,
    reproduce_om,
    reproduce_om_times,
    reproduce_sreb_gca,
    reproduce_wda,
    reproduce_xiao,
    write,
)

ABSENT = Path("/nonexistent-dpbench")  # no DPBench files here: bundled samples stand in
SMALL = {
    "wda": lambda d: reproduce_wda(data_dir=d, m=200, probabilities=(0.2, 0.9), epsilons=(1.0,), trials=2,
                                   comparators=("mwem",), comparator_trials=1),
    "om": lambda d: reproduce_om(data_dir=d, m=20, n=60, taus=(0.2,), epsilons=(0.5, 1.0), trials=2,
                                 sweep_m=(10, 30), sweep_n=(40,)),
    "om-times": lambda d: reproduce_om_times(m=20, n=60, sweep_m=(10, 20), sweep_n=(40, 60)),
    "sreb-gca": lambda d: reproduce_sreb_gca(data_dir=d, epsilons=(1.0,), trials=1, widths=(1, 50)),
    "xiao": lambda d: reproduce_xiao(data_dir=d, versions=3, queries=50, max_draws=1),
}


@functools.cache
def small(name: str):
    return SMALL[name](ABSENT)


@pytest.mark.parametrize("name", list(SMALL))
def test_small_reproduction_is_tidy_and_writes_csv_and_html(name, tmp_path):
    reproduction = small(name)
    assert set(REPRODUCTIONS) == set(SMALL)
    assert reproduction.claim and reproduction.measure and reproduction.findings
    assert "sample" in reproduction.data or name == "om-times"  # timing the optimisations reads no data
    for table in reproduction.tables.values():
        assert isinstance(table, pd.DataFrame) and len(table) and "value" in table
        assert np.all(np.isfinite(table["value"]))
    paths = write(reproduction, tmp_path / "out")
    assert {p.suffix for p in paths} == {".csv", ".html"}
    page = (tmp_path / "out" / f"{name}.html").read_text(encoding="utf-8")
    assert "The paper claims" in page and "plotly" in page.lower()


def test_om_reproduction_shows_the_tie_with_identity():
    table = small("om").tables["errors"]
    expected = table.groupby("mechanism").expected.first()
    assert expected["om"] == pytest.approx(expected["identity (cell noise)"])
    assert expected["LM_W (laplace-on-answers)"] > 3 * expected["om"]


def test_om_reproduction_runs_lrm_and_judges_the_comparison():
    reproduction = small("om")
    expected = reproduction.tables["errors"].groupby("mechanism").expected.first()
    assert expected["lrm"] > expected["om"]  # r = 1.2·rank(W) < n: LRM cannot reach cell Identity here
    assert any(f.startswith("Verdict (Fig. 1, OM has the lowest error") for f in reproduction.findings)
    assert any(f.startswith("Verdict (MM is the worst)") for f in reproduction.findings)


def test_om_times_reproduction_times_every_mechanism_at_every_size():
    reproduction = small("om-times")
    times = reproduction.tables["times"]
    assert set(times.mechanism) == {"om", "lrm", "mm-opt"}
    assert len(times) == 3 * 4 and np.all(times.value >= 0)  # (20, 60) is in both sweeps, timed once
    assert any("Verdict (OM ~300 s vs LRM ~2000 s" in f for f in reproduction.findings)
    assert sum(f.startswith("Verdict (time grows with") for f in reproduction.findings) == 2


def test_wda_reproduction_beats_lm_w_at_low_p():
    table = small("wda").tables["errors"]
    expected = table[table.p == 0.2].groupby("mechanism").expected.first()
    assert expected["wda (optimal)"] < expected["LM_W (laplace-on-answers)"]


def test_xiao_literal_max_is_labelled_not_dp():
    table = small("xiao").tables["max_query"]
    assert any("not differentially private" in label for label in table.mechanism)


@pytest.mark.skipif(not (DPBENCH_DIR / "SEARCHLOGS.csv").is_file(), reason="../shared/data/dpbench-1d absent")
def test_sreb_gca_uses_dpbench_when_present():
    assert "DPBench SEARCHLOGS" in reproduce_sreb_gca(epsilons=(1.0,), trials=1, widths=(1,)).data


def test_cli_reproduce_om(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(REPRODUCTIONS, "om", lambda seed: small("om"))  # the wiring, at a small size
    assert main(["reproduce", "om", "--output", str(tmp_path), "--seed", "3"]) == 0
    assert (tmp_path / "om-errors.csv").is_file() and (tmp_path / "om.html").is_file()
    assert "decomposition" in capsys.readouterr().out
