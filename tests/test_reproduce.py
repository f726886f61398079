"""Reproductions (src/dplens/core/papers/reproduce.py): tidy tables, computed findings, files, the CLI subcommand."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dplens.cli import main
from dplens.core.papers.chen_sreb_gca import reproduce_sreb_gca
from dplens.core.papers.huang_om import reproduce_om, reproduce_om_times
from dplens.core.papers.li_wda import reproduce_wda
from dplens.core.papers.literal import DEMOS, NOT_DP, run_demo
from dplens.core.papers.report import figures, write
from dplens.core.papers.reproduce import REPRODUCTIONS, paper_readings
from dplens.core.papers.reproduction import dpbench_dir, reading_table, verdict_table
from dplens.core.papers.verdicts import COLUMNS, VERDICTS, Verdict
from dplens.core.papers.xiao import reproduce_xiao
from dplens.core.papers.zhao import reproduce_zhao

ABSENT = Path("/nonexistent-dpbench")  # no DPBench files here: bundled samples stand in
SMALL = {
    "wda": lambda d: reproduce_wda(data_dir=d, m=200, probabilities=(0.2, 0.9), epsilons=(1.0,), trials=2,
                                   comparators=("mwem",), comparator_trials=1),
    "om": lambda d: reproduce_om(data_dir=d, m=20, n=60, taus=(0.2,), epsilons=(0.5, 1.0), trials=2,
                                 sweep_m=(10, 30), sweep_n=(40,)),
    "om-times": lambda d: reproduce_om_times(m=20, n=60, sweep_m=(10, 20), sweep_n=(40, 60)),
    "sreb-gca": lambda d: reproduce_sreb_gca(data_dir=d, epsilons=(1.0,), trials=1, widths=(1, 50)),
    "xiao": lambda d: reproduce_xiao(data_dir=d, versions=3, queries=50, max_draws=1, queries_2d=200,
                                     versions_2d=2, parity_repetitions=101),
    "zhao": lambda d: reproduce_zhao(data_dir=d, trials=2, targets=(2.0,), coordinates=4000),
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
    assert "verdicts" in page and "literal reading" in page
    verdicts = pd.read_csv(tmp_path / "out" / f"{name}-verdicts.csv")
    assert len(verdicts) == len(reproduction.verdicts) and verdicts.paper.notna().all()
    assert list(verdicts.columns) == list(COLUMNS)  # claim, literal, corrected, interval, verdict together
    assert "Claims and verdicts" in page and "interval (95 %)" in page


@pytest.mark.parametrize("name", list(SMALL))
def test_every_reproduction_gives_a_verdict_per_claim_with_both_numbers(name):
    reproduction = small(name)
    assert len(reproduction.verdicts) >= 2 and len(reproduction.readings) >= 1
    for verdict in reproduction.verdicts:
        assert verdict.verdict in VERDICTS and verdict.paper and verdict.dplens
    table = verdict_table(reproduction)
    assert list(table.columns) == ["claim", "paper", "literal reading", "corrected (dplens)", "interval (95 %)",
                                   "verdict"]
    assert table.notna().all().all() and (table != "").all().all()
    readings = reading_table(reproduction)
    assert list(readings.columns) == ["quantity", "paper claims", "literal reading", "corrected (dplens)"]
    for reading in reproduction.readings:  # a literal reading that breaks DP always carries the label
        assert (NOT_DP in reading.row()["literal reading"]) == (not reading.literal_is_dp)


def test_known_verdicts():
    wda = {v.claim.split(" (")[0]: v for v in small("wda").verdicts}
    assert wda["> 40 % less L1 error than \"Identity\" at p = 0.2"].label.startswith("holds only against LM_W")
    assert wda["Fig. 2: dividing W into rows 1–3 / 4–8"].verdict == "fails"
    assert "4.9158" in wda["Fig. 2: dividing W into rows 1–3 / 4–8"].dplens
    om = small("om").verdicts
    assert om[0].verdict in ("holds", "holds only") and "72.24" in om[2].dplens
    zhao = {v.claim.split(":")[0]: v for v in small("zhao").verdicts}
    assert zhao["Lee & Clifton Table 3"].verdict == "holds"
    # the formula is confirmed; only the printed decimals (2.776) are a typo, shown as the literal reading
    assert zhao["median example"].verdict == "holds" and "2.7726" in zhao["median example"].dplens
    assert "2.776" in zhao["median example"].literal and "typo" in zhao["median example"].literal
    assert any(v.verdict == "not reproducible" and "Twitter" in v.claim for v in small("zhao").verdicts)
    xiao = small("xiao")
    assert any(NOT_DP in v.literal for v in xiao.verdicts if "max query" in v.claim)  # the literal column


def test_verdict_rejects_an_unknown_kind_and_a_bare_holds_only():
    with pytest.raises(ValueError, match="verdict must be one of"):
        Verdict("c", "p", "d", "maybe")
    with pytest.raises(ValueError, match="qualifier"):
        Verdict("c", "p", "d", "holds only")


def test_om_at_tau_08_loses_to_mm_opt():
    reproduction = reproduce_om(data_dir=ABSENT, m=50, n=500, taus=(0.8,), epsilons=(1.0,), trials=1,
                                sweep_m=(), sweep_n=())
    # lrm (r < n) is also beaten; the exact errors need no trials
    assert reproduction.verdicts[0].label == "holds only against LM_W, lrm"
    assert "mm-opt" in reproduction.verdicts[0].dplens


def test_om_reproduction_shows_the_tie_with_identity():
    table = small("om").tables["errors"]
    expected = table.groupby("mechanism").expected.first()
    assert expected["om"] == pytest.approx(expected["identity (cell noise)"])
    assert expected["LM_W (laplace-on-answers)"] > 3 * expected["om"]


def test_om_reproduction_runs_lrm_and_judges_the_comparison():
    reproduction = small("om")
    expected = reproduction.tables["errors"].groupby("mechanism").expected.first()
    assert expected["lrm"] > expected["om"]  # r = 1.2·rank(W) < n: LRM cannot reach cell Identity here
    claims = {v.claim: v for v in reproduction.verdicts}
    lowest = next(v for c, v in claims.items() if c.startswith("OM has the lowest error"))
    assert "lrm" in lowest.dplens
    mm = next(v for c, v in claims.items() if c.startswith("MM has the highest error of LM, MM, LRM and OM"))
    assert "mm-opt standing in for the paper's MM" in mm.claim and "not about the paper's MM" in mm.dplens
    assert "LRM not run" not in " ".join(v.dplens for v in reproduction.verdicts)


def test_om_times_reproduction_times_every_mechanism_at_every_size():
    reproduction = small("om-times")
    times = reproduction.tables["times"]
    assert set(times.mechanism) == {"om", "lrm", "mm-opt"}
    # by m: τ = 0.4 and 0.8 (where the paper claims growth), OM and LRM; by n: τ = 0.2, all three; 2 repeats each
    assert len(times) == 2 * 2 * 2 * 2 + 2 * 3 * 2 and np.all(times.value >= 0)
    assert set(times[times.sweep.str.startswith("by m")].tau) == {0.4, 0.8}
    assert set(times[times.sweep.str.startswith("by m")].mechanism) == {"om", "lrm"}
    claims = {v.claim: v for v in reproduction.verdicts}
    assert claims["the absolute times at n = 60"].verdict == "not reproducible"
    assert "OM's decomposition is faster than LRM's optimisation (Figs. 4–5)" in claims
    grows = [c for c in claims if c.startswith("time grows with")]
    assert grows == ["time grows with m (τ = 0.4; m = 10 → 20)", "time grows with m (τ = 0.8; m = 10 → 20)",
                     "time grows with n (τ = 0.2; n = 40 → 60)"]
    assert all("slope" in claims[c].dplens and "95 %" in claims[c].interval for c in grows)
    with_options = reproduce_om_times(data="tips-bill", trials=2, m=5, n=8, sweep_m=(5,), sweep_n=(), timed=("om",))
    assert "do not apply" in with_options.data and len(with_options.tables["times"]) == 2 * 2


def test_wda_reproduction_beats_lm_w_at_low_p():
    table = small("wda").tables["errors"]
    expected = table[table.p == 0.2].groupby("mechanism").expected.first()
    assert expected["wda (optimal)"] < expected["LM_W (laplace-on-answers)"]


def test_xiao_literal_max_is_labelled_not_dp():
    reproduction = small("xiao")
    assert any(NOT_DP in label for label in reproduction.tables["max_query"].mechanism)
    literal_lines = [f for f in reproduction.findings if "literal" in f]
    assert literal_lines and all(NOT_DP in f for f in literal_lines)


def test_xiao_reports_clipped_and_unclipped_and_the_2d_and_parity_experiments():
    reproduction = small("xiao")
    assert set(reproduction.tables["interval"].clipped) == {True, False}
    assert "clip=True" in reproduction.findings[0] and "clip=False" in reproduction.findings[0]
    assert set(reproduction.tables["interval_2d"].clipped) == {True, False}
    assert reproduction.tables["parity"].learned.iloc[0] == "0000011"


def test_sreb_labels_small_bins_when_only_zero_bins_exist():
    x = np.zeros(300)
    x[::3] = 40.0  # bins of 0 and 40 records only: no bins with 1–5
    path = Path(__file__).parent / "_tmp_sreb.csv"
    try:
        pd.DataFrame({"count": x}).to_csv(path, index=False)
        reproduction = reproduce_sreb_gca(data=str(path), epsilons=(1.0,), trials=1, widths=(1,))
    finally:
        path.unlink(missing_ok=True)
    assert "no bins with 1–5 records" in reproduction.findings[0]
    assert any("count > 20" in v.claim for v in reproduction.verdicts)


def test_sreb_gca_uses_dpbench_files_when_present(dpbench_like, monkeypatch):
    """The DPBench folder found by default ($DPLENS_DPBENCH_DIR here), on generated DPBench-format files."""
    monkeypatch.setenv("DPLENS_DPBENCH_DIR", str(dpbench_like))
    assert dpbench_dir() == dpbench_like
    reproduction = reproduce_sreb_gca(epsilons=(1.0,), trials=1, widths=(1, 50))
    assert reproduction.data == "DPBench SEARCHLOGS; DPBench NETTRACE"
    table = reproduction.tables["errors"]
    assert list(table.dataset.unique()) == ["DPBench SEARCHLOGS", "DPBench NETTRACE"]
    for name in ("SEARCHLOGS", "NETTRACE"):
        x = pd.read_csv(dpbench_like / f"{name}.csv")["count"].to_numpy()
        rows = table[table.dataset == f"DPBench {name}"]
        by_k = rows[rows.metric == "MRE of bins with count k"]
        assert set(by_k.x) == {k for k in range(21) if np.any(x == k)}  # the counts present in the file
        assert set(rows[rows.metric == "MRE by count class"].bins) == {"0", "1–5", "6–20", "> 20"}
        assert set(rows[rows.metric == "range MRE by width"].x) == {1, 50}
    assert "with 1–5 records" in reproduction.findings[0] and "no bins" not in reproduction.findings[0]
    assert any("DPBench SEARCHLOGS" in v.claim for v in reproduction.verdicts)
    assert any("DPBench NETTRACE" in v.claim for v in reproduction.verdicts)


def test_sreb_gca_on_the_shared_dpbench_data(shared_file):
    """The real 4096-bin files (optional shared data): they have no bins with 1–5 records, and the finding says so."""
    folder = shared_file("dpbench-1d", "SEARCHLOGS.csv").parent
    shared_file("dpbench-1d", "NETTRACE.csv")
    reproduction = reproduce_sreb_gca(data_dir=folder, epsilons=(1.0,), trials=1, widths=(1,))
    assert reproduction.data == "DPBench SEARCHLOGS; DPBench NETTRACE"
    assert all("this data has no bins with 1–5 records" in finding for finding in reproduction.findings)


def test_cli_reproduce_om(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(REPRODUCTIONS, "om", lambda seed: small("om"))  # the wiring, at a small size
    assert main(["reproduce", "om", "--output", str(tmp_path), "--seed", "3"]) == 0
    assert (tmp_path / "om-errors.csv").is_file() and (tmp_path / "om.html").is_file()
    out = capsys.readouterr().out
    assert "decomposition" in out and "claims and verdicts" in out and "[HOLDS" in out


@pytest.mark.parametrize("name", list(SMALL))
def test_cli_passes_data_epsilons_and_trials(name, tmp_path, capsys, monkeypatch):
    seen = {}

    def fake(**options):
        seen.update(options)
        return small(name)

    monkeypatch.setitem(REPRODUCTIONS, name, fake)
    assert main(["reproduce", name, "--output", str(tmp_path), "--data", "tips-bill", "--epsilons", "1,0.5",
                 "--trials", "2"]) == 0
    assert seen == {"seed": 0, "data": "tips-bill", "epsilons": (1.0, 0.5), "trials": 2}
    out = capsys.readouterr().out
    for verdict in small(name).verdicts:  # the CLI prints a verdict per claim
        assert verdict.line() in out
    assert (tmp_path / f"{name}-verdicts.csv").is_file() and (tmp_path / f"{name}-readings.csv").is_file()


def test_cli_bad_epsilons_and_data_exit_2(tmp_path, capsys):
    assert main(["reproduce", "zhao", "--output", str(tmp_path), "--epsilons", "1,-2"]) == 2
    assert main(["reproduce", "om", "--output", str(tmp_path), "--data", "no-such-thing"]) == 2
    err = capsys.readouterr().err
    assert err.count("error:") == 2 and "Traceback" not in err


DATA_RUNS = {
    "wda": dict(m=100, probabilities=(0.2,), trials=1, comparators=(), comparator_trials=1),
    "om": dict(m=10, n=40, taus=(0.2,), trials=1, sweep_m=(), sweep_n=()),
    "sreb-gca": dict(trials=1, widths=(1, 5)),
    "xiao": dict(trials=2, queries=20, max_draws=1, queries_2d=50, versions_2d=1, parity_repetitions=11),
    "zhao": dict(trials=1, targets=(4.0,), coordinates=500),
}


@pytest.mark.parametrize("name", list(DATA_RUNS))
def test_reproduce_runs_on_given_data(name):
    reproduction = REPRODUCTIONS[name](data="tips-bill", epsilons=(1.0,), **DATA_RUNS[name])
    assert "tips-bill" in reproduction.data and reproduction.verdicts


def test_wda_adds_patent_and_income_when_present_and_skips_them_cleanly(tmp_path):
    counts = np.zeros(64)
    counts[[3, 10, 40]] = [50, 5, 9]
    pd.DataFrame({"count": counts}).to_csv(tmp_path / "ADULTFRANK.csv", index=False)
    pd.DataFrame({"count": counts[::-1]}).to_csv(tmp_path / "PATENT.csv", index=False)
    reproduction = reproduce_wda(data_dir=tmp_path, m=30, probabilities=(0.2,), epsilons=(1.0,), trials=1,
                                 comparators=("identity",), comparator_trials=1)
    assert "DPBench PATENT" in reproduction.data and "DPBench INCOME skipped" in reproduction.data
    assert set(reproduction.tables["errors"].dataset) == {"DPBench ADULTFRANK", "DPBench PATENT"}
    assert any("DPBench PATENT" in v.claim for v in reproduction.verdicts)


def test_cli_reproduce_zhao_on_given_data_for_real(tmp_path, capsys):
    assert main(["reproduce", "zhao", "--output", str(tmp_path), "--data", "tips-bill", "--epsilons", "2,1",
                 "--trials", "1"]) == 0
    out = capsys.readouterr().out
    assert "data: sample 'tips-bill'" in out and "[HOLDS] Lee & Clifton Table 3" in out
    assert ("[NOT REPRODUCIBLE] accuracy-first spends far less privacy than inverting the utility theorem (Twitter"
            in out)
    table3 = pd.read_csv(tmp_path / "zhao-table3.csv")
    assert sorted(set(table3.epsilon)) == [1.0, 2.0]


# ----------------------------------------------------------------------------- the rule applied to each paper
def test_cli_csv_holds_claim_literal_corrected_interval_and_verdict_together(tmp_path, capsys):
    assert main(["reproduce", "zhao", "--output", str(tmp_path), "--data", "tips-bill", "--epsilons", "2",
                 "--trials", "12"]) == 0
    out = capsys.readouterr().out
    claims = pd.read_csv(tmp_path / "zhao-verdicts.csv")
    assert list(claims.columns) == list(COLUMNS) and claims.notna().all().all()
    median = claims[claims.claim.str.startswith("median example")].iloc[0]
    assert "2.776" in median["literal reading"] and "2.7726" in median["corrected (dplens)"]
    assert median["interval (95 %)"].endswith("(exact)") and median.verdict == "holds"
    search = claims[claims.claim.str.startswith("accuracy-first's ex-post loss is below doubling's")].iloc[0]
    assert "95 %, n = " in search["interval (95 %)"]
    for row in claims.itertuples():  # the CLI prints the same rows, every field on the claim's line
        line = next(line for line in out.splitlines() if row.claim in line)
        assert all(str(field) in line for field in (row.paper, row._3, row._4, row._5))


def test_zhao_chart_and_table_average_the_same_runs_and_the_5_vs_20_is_the_theory_claim():
    reproduction = reproduce_zhao(data="tips-bill", trials=12, targets=(2.0, 4.0), coordinates=500)
    summary = reproduction.tables["search_summary"]
    search = reproduction.tables["search"]
    stopped = search[search.succeeded].groupby(["alpha", "method"]).value.mean()
    assert np.allclose(summary.set_index(["alpha", "method"]).value,
                       stopped[summary.set_index(["alpha", "method"]).index])
    chart = figures(reproduction)[2]
    for trace in chart["data"]:
        rows = summary[summary.method == trace["name"]]
        assert trace["y"] == rows.value.tolist() and trace["x"] == rows.alpha.tolist()
    claims = {v.claim.split(" (")[0]: v for v in reproduction.verdicts}
    doubling = claims["accuracy-first's ex-post loss is below doubling's"]
    assert "Zhao does not compare with doubling" in doubling.paper and "≈ 20" not in doubling.paper
    theory = claims["accuracy-first spends far less privacy than inverting the utility theorem"]
    assert theory.paper == "≈ 5 vs ≈ 20" and theory.verdict == "not reproducible" and "exact" in theory.dplens


def test_zhao_with_too_few_trials_is_inconclusive_not_a_verdict():
    reproduction = reproduce_zhao(data="tips-bill", trials=3, targets=(2.0,), coordinates=500)
    doubling = next(v for v in reproduction.verdicts if "doubling" in v.claim)
    assert doubling.verdict == "inconclusive" and "n = " in doubling.interval


def test_om_example_1_names_lrm_and_lrm_is_not_insensitive_to_the_workload():
    reproduction = reproduce_om(data_dir=ABSENT, m=20, n=60, taus=(0.2, 0.8), epsilons=(1.0,), trials=1,
                                sweep_m=(10, 30), sweep_n=(40,))
    claims = {v.claim.split(" (")[0]: v for v in reproduction.verdicts}
    example = claims["Example 1: OM's total error is the lowest"]
    assert example.label == "holds only against LM"
    assert "LRM 8.77" in example.dplens and "OM (ours) 8.84" in example.dplens
    assert claims["LRM is not sensitive to the workload"].verdict == "fails"
    assert any(c.startswith("as τ grows") for c in claims)
    assert any("Figs. 2–3" in v.claim for v in reproduction.verdicts)
    assert not any("Fig. 5" in v.claim or "Figs. 5" in v.claim for v in reproduction.verdicts)
    titles = [f["layout"]["title"]["text"] for f in figures(reproduction)]
    assert (any(t.startswith("OM paper Fig. 2:") for t in titles)
            and any(t.startswith("OM paper Fig. 3:") for t in titles))
    assert all(v.interval.endswith("(exact)") or v.verdict == "not reproducible"
               for v in reproduction.verdicts)  # exact expected errors: no trials needed


def _wda_files(directory: Path, names) -> None:
    counts = np.zeros(64)
    counts[[3, 10, 40]] = [50, 5, 9]
    for name in names:
        pd.DataFrame({"count": counts}).to_csv(directory / f"{name}.csv", index=False)


def test_wda_judges_mwem_and_dawa_against_identity_only_on_the_papers_complex_datasets(tmp_path):
    _wda_files(tmp_path, ("ADULTFRANK", "INCOME"))
    run = dict(data_dir=tmp_path, m=30, probabilities=(0.2,), epsilons=(1.0,), trials=2, comparators=("mwem",),
               comparator_trials=2)
    claims = [v.claim for v in reproduce_wda(**run).verdicts if v.claim.startswith("MWEM and DAWA are worse")]
    assert len(claims) == 1 and "INCOME, the paper's complex dataset" in claims[0]
    (tmp_path / "INCOME.csv").unlink()
    only_sparse = [v for v in reproduce_wda(**run).verdicts if v.claim.startswith("MWEM and DAWA are worse")]
    assert [v.verdict for v in only_sparse] == ["not reproducible"] and "sparse" in only_sparse[0].dplens
    assert any("the paper's sparse dataset" in v.claim for v in reproduce_wda(**run).verdicts)


def test_xiao_readings_come_from_the_full_default_run_the_page_text_quotes():
    reading = paper_readings("xiao")[0]
    assert "121." in reading.corrected and "220." in reading.corrected  # the page: "about 220 … against 121"


def test_audit_lower_bounds_are_clipped_at_zero():
    for key in DEMOS:
        rows = run_demo(key, runs=100)
        assert all(row["measured loss ≥"] >= 0 for row in rows)
        assert all("shown as 0" in row["evidence"] for row in rows if row["how"] == "audit"
                   and row["measured loss ≥"] == 0 and "raw bound" in row["evidence"])
