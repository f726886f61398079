"""One unit on every page, in a real browser: a dataset whose ledger is in ρ (zCDP) is read and asked in ρ on every page
(sidebar, Release form, Compare's axis, Choose ε's answer and button, the DP proxy's cost as ρ with its ε at δ,
Gradual release, Ledger), and the Ledger page's numbers satisfy spent + remaining = total. The session starts under
pure ε-DP: the ledger sets the unit (tests/test_app_units.py checks the same pages' widgets by AppTest)."""

import csv
import io
import os
import re
from pathlib import Path

import pytest

from dplens.core.privacy.budget import Budget, Ledger
from tests.e2e._actions import click, download, go, metric_value, screenshot, wait_for, wait_text
from tests.e2e.conftest import open_app, served
from tests.test_app import record_ledger

pytestmark = pytest.mark.e2e
NUMBER = r"(\d+(?:\.\d+)?(?:e-?\d+)?)"


@pytest.fixture
def rho_ledger_url():
    """A server whose store already holds a ρ ledger for the default sample (total ρ 0.5, a pure ε = 0.5 release
    spent: ρ 0.125), as a session arriving on it would find."""
    record_ledger(Ledger(Budget.zcdp(0.5, 1e-6)).spend("release #1: identity", Budget(0.5)))
    yield from served(home=Path(os.environ["DPLENS_HOME"]))  # the store record_ledger wrote


def test_a_rho_ledger_speaks_rho_on_every_page(browser, rho_ledger_url):
    context, page = open_app(browser, rho_ledger_url, timeout=60_000)
    page.add_init_script("delete window.showSaveFilePicker")  # a table's CSV then downloads as a file
    page.reload()
    wait_text(page, "Budget remaining")
    sidebar = page.get_by_test_id("stSidebar")
    assert re.fullmatch(r"ρ = 0\.375 \(ε = [\d.]+ at δ = 1e-06\)", metric_value(sidebar, "Budget remaining"))
    assert page.get_by_role("radio", name="ρ-zCDP").is_checked()  # it was pure ε-DP: the ledger decided

    go(page, "Release")
    wait_text(page, "ρ for this release (zCDP)")
    assert page.get_by_text("Epsilon for this release").count() == 0

    go(page, "Compare", "Compare mechanisms")
    wait_text(page, "Meanwhile, the analytic expectation")
    titles = page.locator('[data-testid="stPlotlyChart"] .xtitle')
    titles.first.wait_for(timeout=120_000)
    axis = " ".join(titles.all_text_contents())
    assert "ρ (zCDP" in axis and "epsilon at delta" not in axis, axis

    go(page, "Choose epsilon")
    label = "Smallest ρ meeting the target"
    wait_for(page, lambda: metric_value(page, label) is not None, what=f"the metric {label!r}")
    answer = metric_value(page, label)
    assert answer and answer.startswith("ρ = "), answer
    use = page.get_by_role("button", name=re.compile(r"^Use this ρ \(ρ = .* at δ 1e-06\)")).first
    use.wait_for()
    spend = page.get_by_role("button", name="Spend and make the proxy")
    click(page, page.get_by_text("Make a DP proxy").first, spend)
    wait_text(page, "ρ to spend on a noisy copy")
    click(page, spend, page.get_by_text(re.compile(r"Tuned on DP proxy of this data \(ρ = [\d.e-]+ \(ε [\d.e-]+ at "
                                                   r"δ 1e-06\) spent\)")))
    assert page.get_by_text(re.compile(r"ZCDP\(|rho=")).count() == 0  # never a repr

    go(page, "Gradual release")
    click(page, page.get_by_role("tab", name="Real walk (secure, charged)"),
          page.get_by_text("ρ schedule of the real walk (strictly increasing, most private first)"))
    wait_text(page, "This dataset's budget: remaining ρ = ")

    go(page, "Ledger")
    total, spent, remaining = (float(metric_value(page, f"{what} ρ")) for what in ("Total", "Spent", "Remaining"))
    assert total == 0.5 and spent > 0.125 and abs(spent + remaining - total) <= 1e-3 * total, (total, spent)
    table = page.get_by_test_id("stDataFrame").first  # "All datasets", as shown (its toolbar's CSV)

    def table_csv() -> None:
        table.hover()
        table.get_by_role("button", name="Download as CSV").dispatch_event("click")  # over the grid: no hover

    rows = list(csv.DictReader(io.StringIO(download(page, table_csv).decode("utf-8-sig"))))
    (row,) = rows
    assert row["Unit"] == "ρ" and float(row["Total"]) == total, row  # ρ numbers under a ρ unit, not ε ones
    assert abs(float(row["Spent"]) - spent) <= 0.01 * total, (row, spent)  # the table shows 2 decimals
    assert abs(float(row["Spent"]) + float(row["Remaining"]) - float(row["Total"])) <= 0.01 * total, row
    screenshot(page, "units-ledger")
    context.close()
