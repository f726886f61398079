"""AppTest: the Tables page — load a table, choose attributes and marginals, compare methods, release and charge."""

from __future__ import annotations

import json

import numpy as np

from dplens.core.privacy.budget import Budget
from dplens.core.privacy.ledger_store import LedgerStore
from dplens.core.tables.records import load_table
from tests.test_app import open_page


def _table(n=600, seed=0):
    rng = np.random.default_rng(seed)
    age = rng.integers(0, 5, n)
    rows = "\n".join(f"{a},{'FM'[int(a > 2)]},{int(rng.integers(0, 3))}" for a in age)
    return load_table(f"age,sex,region\n{rows}\n".encode(), b'{"age": 5, "sex": ["F", "M"], "region": 3}')


def _open(table=None):
    at = open_page("pages/tables.py")
    table = table or _table()
    at.session_state["table"], at.session_state["table_name"] = table, "survey.csv"
    at.session_state["tables_attributes"] = list(table.domain.names)
    return at.run(), table


def test_page_opens_on_the_built_in_sample():
    at = open_page("pages/tables.py")
    assert not at.exception and "built-in sample" in at.info[0].value
    assert any("6,000 records" in m.value for m in at.markdown)
    assert at.session_state["tables_attributes"] == ["age", "sex", "education", "hours", "region", "income"]


def test_missing_values_choice_reloads_the_upload():
    at = open_page("pages/tables.py").run()
    at.session_state["tables_upload_data"] = ("gaps.csv", b"a,b\n0,1\n,1\n1,0\n1,NA\n", None)  # as uploaded
    at.radio(key="tables_missing").set_value("drop those rows").run()
    assert not at.exception and at.session_state["table_name"] == "gaps.csv"
    assert len(at.session_state["table"].records) == 2
    at.radio(key="tables_missing").set_value("make them a level").run()
    assert len(at.session_state["table"].records) == 4
    at.radio(key="tables_missing").set_value("refuse the file").run()
    assert any("missing" in e.value for e in at.error)


def test_compare_hdmm_marginals_and_histograms():
    at, _ = _open()
    at.multiselect(key="tables_mechanisms").set_value(["hdmm-marginals", "histograms"])
    at.multiselect(key="tables_rhos").set_value([1.0])
    at.slider(key="tables_trials").set_value(1)
    at.button(key="FormSubmitter:tables_compare_form-Run comparison").click().run()
    assert not at.exception, at.exception
    assert set(at.dataframe[-1].value["mechanism"]) == {"hdmm-marginals", "histograms"}


def test_compare_shows_both_figures_and_closed_form():
    at, _ = _open()
    assert not at.exception
    at.multiselect(key="tables_rhos").set_value([0.1, 1.0])
    at.slider(key="tables_trials").set_value(2)
    at.button(key="FormSubmitter:tables_compare_form-Run comparison").click().run()
    assert not at.exception, at.exception
    summary = at.dataframe[-1].value
    assert set(summary["mechanism"]) == {"gaussian-marginals", "residual-planner"} and len(summary) == 4
    figures = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    names = {t.get("name") for f in figures for t in f["data"]}
    assert {"gaussian-marginals", "residual-planner (analytic)"} <= names


def test_workload_choice_and_bad_marginal_is_one_line():
    at, _ = _open()
    at.radio(key="tables_workload_kind").set_value("chosen marginals").run()
    at.text_input(key="tables_custom").set_value("age+sex, region").run()
    assert not at.exception and any("2 marginals, 13 cells" in c.value for c in at.caption)
    at.text_input(key="tables_custom").set_value("age+height").run()
    assert any("height" in e.value for e in at.error)


def test_release_charges_the_tables_ledger_and_offers_downloads():
    at, table = _open()
    at.number_input(key="tables_release_rho").set_value(0.25).run()
    at.button(key="tables_release_button").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    ledger = LedgerStore().ledger(table.fingerprint)
    assert ledger.unit == "rho" and ledger.spent.rho == 0.25 and len(ledger.spends) == 1
    assert any("1 release(s)" in c.value for c in at.caption)  # the budget line is written after the release
    labels = {b.label for b in at.get("download_button")}
    assert {"Released marginals (CSV)", "Privacy metadata (JSON)"} <= labels
    at.number_input(key="tables_release_rho").set_value(0.9).run()
    at.button(key="tables_release_button").click().run()
    assert at.error and "0.75" in at.error[0].value  # over the remaining ρ: refused, nothing charged
    assert len(LedgerStore().ledger(table.fingerprint).spends) == 1


def test_synthetic_data_scored_on_typed_marginals():
    at, _ = _open()
    at.multiselect(key="tables_rhos").set_value([1.0])
    at.slider(key="tables_trials").set_value(1)
    at.text_input(key="tables_eval_custom").set_value("age+sex+region")
    at.button(key="FormSubmitter:tables_compare_form-Run comparison").click().run()
    assert not at.exception, at.exception
    assert at.session_state["tables_results"]["evaluation"] == "1 marginals, 30 cells"
    assert any("Measured on the true table" in w.value for w in at.warning)  # the choice depends on the data
    assert any(c.value.startswith("Legend: **") for c in at.caption)  # each method in words


def test_compare_tunes_on_a_dp_proxy_charged_once():
    at, table = _open()
    at.session_state["tables_proxy_rho"] = 0.05
    at.button(key="tables_make_proxy").click().run(timeout=120)  # MST's synthetic records, through the kernel
    assert not at.exception and not at.error, [e.value for e in at.error]
    ledger = LedgerStore().ledger(table.fingerprint)
    assert ledger.spent.rho == 0.05 and len(ledger.spends) == 1
    assert at.radio(key="tables_tune_on").value == "proxy"
    proxy = at.session_state["table_proxies"][table.fingerprint]["records"]
    assert proxy.shape[1] == 3 and not np.array_equal(proxy[: len(table.records)], table.records)
    at.multiselect(key="tables_mechanisms").set_value(["gaussian-marginals"])
    at.multiselect(key="tables_rhos").set_value([1.0])
    at.button(key="FormSubmitter:tables_compare_form-Run comparison").click().run()
    assert not at.exception
    assert any("Tuned on the table's DP proxy" in i.value for i in at.info)
    assert not any("Measured on the true table" in w.value for w in at.warning)
    assert LedgerStore().ledger(table.fingerprint).spent.rho == 0.05  # tuning on it costs nothing more


def _shell(root: str, default: str) -> None:
    """app.py's navigation and sidebar on ``default`` (AppTest runs app.py only on the first run: after a page
    switch it runs the page alone, so the sidebar of a page is tested as the first run of this shell)."""
    from pathlib import Path

    import streamlit as st

    from dplens import ui

    st.navigation([st.Page(str(Path(root) / path), title=title, default=path == default)
                   for _, path, title, _ in ui.PAGES])
    ui.sidebar()


def _sidebar_on(page: str):
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    root = str(Path(__file__).resolve().parents[1])
    return AppTest.from_function(_shell, args=(root, page), default_timeout=60).run()


def _sidebar_text(at) -> str:
    """Every caption, metric and widget label in the sidebar, in one string."""
    parts = [getattr(e, "value", "") for e in at.sidebar.get("caption")]
    parts += [f"{m.label} {m.value}" for m in at.sidebar.get("metric")]
    parts += [w.label for kind in ("number_input", "select_slider", "radio") for w in at.sidebar.get(kind)]
    return " | ".join(str(p) for p in parts)


def test_one_budget_on_the_tables_page_the_tables_own():
    """The sidebar's budget is the histogram dataset's: on the Tables page it gives way to a note, and the table's
    own budget is shown once on the page, in its ledger's unit; on other pages the sidebar's budget is back."""
    side = _sidebar_text(_sidebar_on("pages/tables.py"))
    assert "Budget remaining" not in side and "Total budget" not in side, side
    assert "own budget, shown on this page" in side
    assert "Budget remaining" in _sidebar_text(_sidebar_on("pages/data.py"))
    at, table = _open()
    lines = [c.value for c in at.caption if "Budget of this table" in c.value]
    assert len(lines) == 1 and "remaining ρ = 1**" in lines[0]
    at.number_input(key="tables_release_rho").set_value(0.25).run()
    at.button(key="tables_release_button").click().run()
    assert not at.error, [e.value for e in at.error]
    assert [c.value for c in at.caption if "Budget of this table" in c.value][0].count("remaining ρ = 0.75") == 1


def test_a_table_ledger_in_epsilon_is_shown_in_epsilon():
    table = _table(seed=3)
    LedgerStore().set_total(table.fingerprint, Budget(2.0, 1e-5))
    at, _ = _open(table)
    line = next(c.value for c in at.caption if "Budget of this table" in c.value)
    assert "remaining ε = 2" in line and "ρ =" not in line.split(";")[0]
