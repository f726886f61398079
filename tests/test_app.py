"""AppTest behaviour tests for the shell and every page in ui.PAGES (see docs/benchmarks.md, "Test conventions")."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dplens import ui
from dplens.core.data.datasets import load_histogram
from dplens.core.data.domain import Histogram
from dplens.core.data.fingerprint import dataset_fingerprint
from dplens.core.privacy.budget import Ledger
from dplens.core.privacy.ledger_store import LedgerStore

PAGE_PATHS = [path for _, path, _, _ in ui.PAGES]
APP = str(Path(__file__).resolve().parent.parent / "app.py")


def open_page(path: str) -> AppTest:
    """Run app.py (shell + state), then switch to the page; both .run() calls are required."""
    at = AppTest.from_file(APP, default_timeout=60).run()
    return at.switch_page(path).run()


def record_ledger(ledger: Ledger, dataset: str = "sample:smooth") -> str:
    """Precondition: write ``ledger`` (total, spends) to this test's store for a sample dataset; its fingerprint."""
    fingerprint = dataset_fingerprint(load_histogram(dataset.partition(":")[2]))
    store = LedgerStore()
    store.set_total(fingerprint, ledger.total)
    for label, cost in ledger.spends:
        store.spend(fingerprint, label, cost, mechanism=label.rpartition(": ")[2])
    return fingerprint


@pytest.mark.parametrize("path", PAGE_PATHS, ids=PAGE_PATHS)
def test_every_page_renders_without_exception(path):
    at = open_page(path)
    assert not at.exception
    assert not [e.value for e in at.error if e.value.startswith("Something went wrong")]


def test_shell_shows_default_dataset_and_budget():
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    assert at.session_state.dataset_key == "sample:smooth"
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Bins"] == "4,096"
    assert metrics["Budget remaining"] == "ε = 5"


def test_data_page_shows_an_uploaded_2d_histogram_as_heatmap():
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["uploads"] = {"upload:t": Histogram.from_counts([[1, 2], [3, 4]], name="tiny2d")}
    at.session_state["dataset_key"] = "upload:t"
    at.run()
    assert not at.exception
    assert {m.label: m.value for m in at.metric}["Bins"] == "4"
    figure = at.get("plotly_chart")[0].proto.spec
    assert '"type":"heatmap"' in figure.replace(" ", "")


def test_compare_runs_a_sweep_and_keeps_it_across_reruns():
    at = open_page("pages/compare.py")
    at.multiselect(key="compare_mechanisms").set_value(["identity", "uniform"])
    at.slider(key="compare_trials").set_value(3)
    at.slider(key="compare_points").set_value(3)
    at.button(key="compare_run").click().run()
    assert not at.exception
    table = at.dataframe[-1].value  # the Table tab (the regret table comes first)
    assert set(table["mechanism"]) == {"identity", "uniform"}
    assert len(table) == 6
    assert len(at.session_state.sweeps) == 1
    at.run()  # a rerun (e.g. coming back to the page) reuses the stored results
    assert len(at.session_state.sweeps) == 1
    assert at.dataframe[-1].value.equals(table)


def test_changing_dataset_changes_the_summary():
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.selectbox(key="sidebar_dataset").set_value("sample:tips-bill").run()
    assert not at.exception
    assert {m.label: m.value for m in at.metric}["Bins"] == "51"


def test_compare_legend_says_what_each_mechanism_does():
    from dplens.core.mechanisms import MECHANISMS

    at = open_page("pages/compare.py")
    at.multiselect(key="compare_mechanisms").set_value(["hb"])
    at.slider(key="compare_trials").set_value(1)
    at.slider(key="compare_points").set_value(2)
    at.button(key="compare_run").click().run()
    legend = next(c.value for c in at.caption if c.value.startswith("Legend: "))
    for name in ("hb", "identity", "uniform"):
        assert f"**{name}**: {MECHANISMS[name].summary}" in legend
