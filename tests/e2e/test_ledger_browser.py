"""The budget belongs to the data: spend, reload (and Back), open a second tab, restart the server — the
remaining budget is the same everywhere, and a release that would overspend is refused in each.
"""

from __future__ import annotations

import re

import pytest

from tests.e2e._actions import choose, click, fill, go, metric_value, screenshot, wait_for, wait_text
from tests.e2e.conftest import start_server, stop
from tests.e2e.test_release_browser import shows_release

pytestmark = pytest.mark.e2e

SPEND, TOO_MUCH = 2.0, 3.5  # of the default total 5: 3 remain, 3.5 does not fit
REFUSED = "remaining is epsilon=3 of 5"


def _open(context, url: str):
    page = context.new_page()
    page.set_default_timeout(60_000)
    page.goto(url)
    wait_text(page, "Budget remaining")
    return page


def _release(page, epsilon: float, outcome) -> None:
    """Release at ``epsilon`` by the fast exploration path (charged all the same), until the page shows ``outcome``."""
    choose(page, "exploration", area=page.get_by_test_id("stRadio"))
    fill(page, page.get_by_role("spinbutton", name="Epsilon for this release"), str(epsilon))
    click(page, page.get_by_role("button", name="Spend and release"), outcome)


def _refused_everywhere(page, where: str) -> None:
    assert metric_value(page, "Budget remaining") == "ε = 3", where
    _release(page, TOO_MUCH, page.get_by_text(REFUSED))
    assert metric_value(page, "Budget remaining") == "ε = 3", where


@pytest.fixture
def home(tmp_path):
    return tmp_path / "dplens-home"


def test_the_budget_survives_reload_second_tab_and_server_restart(browser, home):
    proc, url = start_server(home=home)
    try:
        context = browser.new_context(viewport={"width": 1280, "height": 800})
        page = _open(context, url)
        go(page, "Release")
        _release(page, SPEND, shows_release(page, 1))
        wait_text(page, "Simulation, not a private release")
        assert metric_value(page, "Budget remaining") == "ε = 3"
        workspace = re.search(r"[?&]ws=([A-Za-z0-9_-]+)", page.url).group(1)

        page.reload()  # reload: the workspace id in the URL brings the history back
        wait_text(page, "Released histogram over the true counts")
        assert f"ws={workspace}" in page.url
        assert metric_value(page, "ε charged") == "2"
        _refused_everywhere(page, "after reload")
        screenshot(page, "ledger-after-reload")
        page.goto("about:blank")  # leave the app, then Back: a new session on the same URL
        page.go_back()
        wait_text(page, "Released histogram over the true counts")
        assert f"ws={workspace}" in page.url and metric_value(page, "ε charged") == "2"
        assert metric_value(page, "Budget remaining") == "ε = 3"

        second = _open(browser.new_context(viewport={"width": 1280, "height": 800}), url)  # no id: new workspace
        assert f"ws={workspace}" not in second.url
        go(second, "Release")
        wait_text(second, "No release yet")  # its own (empty) history ...
        _refused_everywhere(second, "second tab")  # ... the same dataset's ledger
        go(second, "Ledger")
        assert metric_value(second, "Remaining ε") == "3"
        screenshot(second, "ledger-page")
        second.context.close()
        context.close()
    finally:
        stop(proc)

    proc, url = start_server(home=home)  # a restart, on another port, over the same DPLENS_HOME
    try:
        # A new tab first: on a fresh server Streamlit serves a deep link (/release) before app.py has
        # registered the navigation (the raw pages/ files), so the workspace tab comes second.
        fresh = _open(browser.new_context(viewport={"width": 1280, "height": 800}), url)
        go(fresh, "Release")
        _refused_everywhere(fresh, "new tab after the restart")
        context = browser.new_context(viewport={"width": 1280, "height": 800})
        page = _open(context, f"{url}/release?ws={workspace}")  # the old tab's URL, reloaded
        wait_for(page, page.get_by_role("heading", name="Release", exact=True), what="the Release page")
        wait_text(page, "Released histogram over the true counts")
        assert metric_value(page, "ε charged") == "2"
        _refused_everywhere(page, "after a server restart")
        fresh.context.close()
        context.close()
    finally:
        stop(proc)
