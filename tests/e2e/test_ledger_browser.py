"""The budget belongs to the data: spend, reload (and Back), open a second tab, restart the server — the
remaining budget is the same everywhere, and a release that would overspend is refused in each.
"""

from __future__ import annotations

import re

import pytest

from tests.e2e._actions import screenshot, wait_idle
from tests.e2e.conftest import start_server

pytestmark = pytest.mark.e2e

SPEND, TOO_MUCH = 2.0, 3.5  # of the default total 5: 3 remain, 3.5 does not fit


def _metric(page, label: str) -> str:
    box = page.locator('[data-testid="stMetric"]').filter(has_text=label).first
    return box.locator('[data-testid="stMetricValue"]').inner_text()


def _open(context, url: str):
    page = context.new_page()
    page.set_default_timeout(60_000)
    page.goto(url)
    page.get_by_text("Budget remaining").first.wait_for(timeout=120_000)
    wait_idle(page, timeout=60_000)
    return page


def _go_release(page) -> None:
    page.get_by_role("link", name="Release", exact=True).click()
    page.get_by_role("heading", name="Release", exact=True).wait_for(timeout=60_000)
    wait_idle(page, timeout=60_000)


def _release(page, epsilon: float) -> None:
    page.locator('[data-testid="stRadio"]').get_by_text("exploration").click()  # fast; charged all the same
    wait_idle(page)
    box = page.get_by_role("spinbutton", name="Epsilon for this release")
    box.fill(str(epsilon))
    box.press("Enter")
    wait_idle(page)
    page.get_by_role("button", name="Spend and release").click()
    wait_idle(page, timeout=60_000)


def _refused_everywhere(page, where: str) -> None:
    assert _metric(page, "Budget remaining") == "ε = 3", where
    _release(page, TOO_MUCH)
    page.get_by_text("remaining is epsilon=3 of 5").first.wait_for(timeout=30_000)
    assert _metric(page, "Budget remaining") == "ε = 3", where


@pytest.fixture
def home(tmp_path):
    return tmp_path / "dplens-home"


def test_the_budget_survives_reload_second_tab_and_server_restart(browser, home):
    proc, url = start_server(home=home)
    try:
        context = browser.new_context(viewport={"width": 1280, "height": 800})
        page = _open(context, url)
        _go_release(page)
        _release(page, SPEND)
        page.get_by_text("Simulation, not a private release").first.wait_for()
        assert _metric(page, "Budget remaining") == "ε = 3"
        workspace = re.search(r"[?&]ws=([A-Za-z0-9_-]+)", page.url).group(1)

        page.reload()  # reload: the workspace id in the URL brings the history back
        page.get_by_text("Budget remaining").first.wait_for(timeout=60_000)
        wait_idle(page, timeout=60_000)
        assert f"ws={workspace}" in page.url
        page.get_by_text("Released histogram over the true counts").wait_for()
        assert _metric(page, "ε charged") == "2"
        _refused_everywhere(page, "after reload")
        screenshot(page, "ledger-after-reload")
        page.goto("about:blank")  # leave the app, then Back: a new session on the same URL
        page.go_back()
        page.get_by_text("Released histogram over the true counts").wait_for(timeout=60_000)
        wait_idle(page, timeout=60_000)
        assert f"ws={workspace}" in page.url and _metric(page, "ε charged") == "2"
        assert _metric(page, "Budget remaining") == "ε = 3"

        second = _open(browser.new_context(viewport={"width": 1280, "height": 800}), url)  # no id: new workspace
        assert f"ws={workspace}" not in second.url
        _go_release(second)
        second.get_by_text("No release yet").wait_for()  # its own (empty) history ...
        _refused_everywhere(second, "second tab")  # ... the same dataset's ledger
        second.get_by_role("link", name="Ledger", exact=True).click()
        second.get_by_role("heading", name="Ledger", exact=True).wait_for()
        wait_idle(second)
        assert _metric(second, "Remaining ε") == "3"
        screenshot(second, "ledger-page")
        second.context.close()
        context.close()
    finally:
        proc.terminate()
        proc.wait(timeout=20)

    proc, url = start_server(home=home)  # a restart, on another port, over the same DPLENS_HOME
    try:
        # A new tab first: on a fresh server Streamlit serves a deep link (/release) before app.py has
        # registered the navigation (the raw pages/ files), so the workspace tab comes second.
        fresh = _open(browser.new_context(viewport={"width": 1280, "height": 800}), url)
        _go_release(fresh)
        _refused_everywhere(fresh, "new tab after the restart")
        context = browser.new_context(viewport={"width": 1280, "height": 800})
        page = _open(context, f"{url}/release?ws={workspace}")  # the old tab's URL, reloaded
        page.get_by_role("heading", name="Release", exact=True).wait_for(timeout=60_000)
        page.get_by_text("Released histogram over the true counts").wait_for()
        assert _metric(page, "ε charged") == "2"
        _refused_everywhere(page, "after a server restart")
        fresh.context.close()
        context.close()
    finally:
        proc.terminate()
        proc.wait(timeout=20)
