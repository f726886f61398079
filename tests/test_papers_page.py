"""AppTest for the Papers page (docs/benchmarks.md, "Test conventions"): smoke test and one behaviour test per kind of
view."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dplens import ui
from dplens.core.papers.huang_om import reproduce_om_times
from dplens.core.papers.li_wda import reproduce_wda
from dplens.core.papers.reproduce import REPRODUCTIONS
from dplens.core.papers.verdicts import COLUMNS

APP = str(Path(__file__).resolve().parent.parent / "app.py")
PAGE = "pages/papers.py"
CLAIM_COLUMNS = list(COLUMNS[1:])  # the claim is the index


def open_page() -> AppTest:
    """Run app.py (shell + state), then switch to the page; both .run() calls are required."""
    at = AppTest.from_file(APP, default_timeout=60).run()
    return at.switch_page(PAGE).run()


def test_papers_page_is_in_the_navigation_and_renders():
    assert PAGE in [path for _, path, _, _ in ui.PAGES]
    at = open_page()
    assert not at.exception
    assert at.title[0].value == "Papers"
    assert [tab.label for tab in at.tabs] == ["WDA", "OM", "SReB_GCA", "Xiao et al.",
                                              "Zhao (Lee & Clifton, Koufogiannis, Ligett)"]


def test_every_tab_shows_claim_literal_and_corrected_side_by_side():
    at = open_page()
    readings = [t.value.reset_index() for t in at.table if "literal reading" in t.value.columns]
    assert len(readings) == 5
    fig2 = readings[0].set_index("quantity").loc["Fig. 2 division, average L1 error at ε = 1"]
    assert "3.4275" in fig2["paper claims"] and "4.9158" in fig2["corrected (dplens)"]
    om = readings[1].iloc[0]
    assert "75" in om["paper claims"] and "72.24" in om["corrected (dplens)"] and "8.84" in om["corrected (dplens)"]
    assert any("NOT DIFFERENTIALLY PRIVATE" in text for df in readings for text in df["literal reading"])


def test_zhao_tab_shows_table3_the_bounds_and_what_is_not_reproducible():
    at = open_page()
    assert any("Twitter" in info.value for info in at.info)
    table3 = next(df.value for df in at.dataframe if "world" in df.value.index.names)
    assert table3.loc["ω1", 2.0] == 0.6825
    bounds = next(df.value for df in at.dataframe if "example" in df.value.index.names)
    assert round(bounds.loc["absence days {1,2,3,10}, median", "epsilon_tight"], 4) == 2.7726


@pytest.mark.parametrize("demo", ["xiao-max", "zhao-present-names"])
def test_literal_variant_audit_shows_the_loss_above_epsilon(demo):
    at = open_page()
    at.button(key=f"papers_audit_{demo}").click().run()
    assert not at.exception
    table = next(t.value for t in at.table if "measured loss ≥" in t.value.columns)
    literal = table[table.kind == "literal"]
    assert (literal["measured loss ≥"] > literal["claimed ε"]).all()
    assert any("NOT DIFFERENTIALLY PRIVATE" in e.value for e in at.error)


def test_structures_follow_the_widgets():
    at = open_page()
    at.selectbox(key="papers_wda_workload").set_value("WDA 12×13 synthetic")
    at.selectbox(key="papers_wda_budget").set_value("equal").run()
    assert not at.exception
    division = at.dataframe[0].value
    assert division["queries"].tolist() == [5, 7]
    assert {m.label: m.value for m in at.metric}["Average L1 error per query × ε"] == "5.333"
    at.selectbox(key="papers_om_example").set_value("OM Algorithm 3 counterexample").run()
    assert not at.exception
    assert any("S̃ = 1" in m.value for m in at.markdown)
    lrm = next(m.value for m in at.markdown if "tr(BᵀB)" in m.value)  # the LRM comparator on the same W
    assert "rank(W) = 2" in lrm and "(OM 32)" in lrm


def test_running_a_reproduction_shows_claim_verdicts_and_findings():
    at = open_page()
    at.selectbox(key="papers_data_zhao").set_value("tips-bill")
    at.text_input(key="papers_eps_zhao").set_value("2, 1")
    at.number_input(key="papers_trials_zhao").set_value(1)
    at.button(key="papers_run_zhao").click().run()
    assert not at.exception
    text = " ".join(m.value for m in at.markdown)
    assert "The paper claims" in text and "keep probability" in text
    verdicts = next(t.value for t in at.table if list(t.value.columns) == CLAIM_COLUMNS)
    assert {"holds", "fails", "not reproducible"} <= set(verdicts.verdict)
    assert "inconclusive" in " ".join(verdicts.verdict)  # one trial: the sampled claims cannot be settled
    assert "tips-bill" in text
    assert len(at.get("plotly_chart")) >= 3


def test_structure_of_the_sessions_workload():
    at = open_page()
    at.selectbox(key="papers_om_example").set_value("current workload (Workloads page)").run()
    assert not at.exception
    assert any("groups (atoms of columns)" in m.value for m in at.markdown)
    at.selectbox(key="papers_wda_workload").set_value("current workload (Workloads page)").run()
    assert not at.exception
    assert any(m.label == "Average L1 error per query × ε" for m in at.metric)


def test_a_reproduction_runs_on_the_sessions_dataset():
    at = open_page()
    at.selectbox(key="papers_data_sreb-gca").set_value("the current dataset (Data page)")
    at.text_input(key="papers_eps_sreb-gca").set_value("1")
    at.number_input(key="papers_trials_sreb-gca").set_value(1)
    at.button(key="papers_run_sreb-gca").click().run()
    assert not at.exception
    assert any("Data:** dataset 'smooth'" in m.value for m in at.markdown)
    verdicts = next(t.value for t in at.table if list(t.value.columns) == CLAIM_COLUMNS)
    assert len(verdicts) >= 3


def test_om_times_reproduction_runs_on_the_om_tab(monkeypatch):
    # the full timing sweep is ~2 min of CPU: the page's wiring, at a small size
    monkeypatch.setitem(REPRODUCTIONS, "om-times", lambda **options: reproduce_om_times(
        m=20, n=60, sweep_m=(10, 20), sweep_n=(40, 60), seed=options.get("seed", 0)))
    at = open_page()
    at.button(key="papers_run_om-times").click().run()
    assert not at.exception
    text = " ".join(m.value for m in at.markdown)
    assert "OM's decomposition takes ~300 s at n = 1000 where LRM needs ~2000 s" in text and "CPU seconds" in text
    assert any("implementations of MM and LRM" in i.value for i in at.info)  # its "not reproduced" note


def test_wda_more_than_40_percent_is_not_swallowed_as_a_blockquote(monkeypatch):
    # st.table renders cells as Markdown: a cell starting with ">" would become an (empty-looking) blockquote
    monkeypatch.setitem(REPRODUCTIONS, "wda", lambda **options: reproduce_wda(
        m=100, probabilities=(0.2,), epsilons=(1.0,), trials=2, comparators=(), seed=options.get("seed", 0)))
    at = open_page()
    at.button(key="papers_run_wda").click().run()
    assert not at.exception
    verdicts = next(t.value for t in at.table if list(t.value.columns) == CLAIM_COLUMNS)
    cells = [str(v) for v in [*verdicts.index, *verdicts.to_numpy().ravel()]]
    assert any(c.startswith("\\> 40 %") for c in cells)  # escaped, so the page shows "> 40 %"
    assert not any(c.lstrip().startswith((">", "#")) for c in cells)
    for table in at.table:  # every st.table on the page, the readings included
        frame = table.value.reset_index()
        assert not any(str(v).lstrip().startswith(">") for v in frame.to_numpy().ravel())


def test_om_tab_has_two_distinct_reproduction_sections():
    at = open_page()
    for tab in at.tabs:  # no section title twice within a tab
        headers = [h.value for h in tab.subheader]
        assert len(headers) == len(set(headers)), (tab.label, headers)
    om = [h.value for h in at.tabs[1].subheader]
    assert "Reproduction — accuracy (Figs. 1–3)" in om and "Reproduction — optimisation time (Figs. 4–5)" in om


def test_audit_boxes_never_show_a_negative_lower_bound():
    at = open_page()
    at.button(key="papers_audit_wda-split-on-data").click().run()
    assert not at.exception
    table = next(t.value for t in at.table if "measured loss ≥" in t.value.columns)
    assert (table["measured loss ≥"] >= 0).all()
    assert not any("≥ -" in e.value for e in at.error)
    assert any("never negative" in c.value for c in at.caption)
