"""AppTest for the Papers page (style.md §1.5): smoke test and one behaviour test per kind of view."""

from pathlib import Path

from streamlit.testing.v1 import AppTest

import ui
from core.reproduce import REPRODUCTIONS, reproduce_om

APP = str(Path(__file__).resolve().parent.parent / "app.py")
PAGE = "pages/papers.py"


def open_page() -> AppTest:
    """Run app.py (shell + state), then switch to the page; both .run() calls are required."""
    at = AppTest.from_file(APP, default_timeout=60).run()
    return at.switch_page(PAGE).run()


def test_papers_page_is_in_the_navigation_and_renders():
    assert PAGE in [path for _, path, _, _ in ui.PAGES]
    at = open_page()
    assert not at.exception
    assert at.title[0].value == "Papers"
    assert len(at.tabs) == 4


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


def test_running_a_reproduction_shows_claim_and_findings(monkeypatch):
    # the full OM reproduction is ~30 s of CPU (LRM and mm-opt at n = 1000): the page's wiring, at a small size
    monkeypatch.setitem(REPRODUCTIONS, "om", lambda seed: reproduce_om(m=20, n=60, taus=(0.2,), epsilons=(0.5, 1.0),
                                                                       trials=2, sweep_m=(10,), sweep_n=(40,)))
    at = open_page()
    at.button(key="papers_run_om").click().run()
    assert not at.exception
    text = " ".join(m.value for m in at.markdown)
    assert "The paper claims" in text and "decomposition" in text
    assert len(at.get("plotly_chart")) >= 2


def test_structure_of_the_sessions_workload():
    at = open_page()
    at.selectbox(key="papers_om_example").set_value("current workload (Workloads page)").run()
    assert not at.exception
    assert any("groups (atoms of columns)" in m.value for m in at.markdown)
    at.selectbox(key="papers_wda_workload").set_value("current workload (Workloads page)").run()
    assert not at.exception
    assert any(m.label == "Average L1 error per query × ε" for m in at.metric)
