"""Six browser sessions at once against one server (enough for every pair to be checked both ways; ten took 40 s
more): no session sees another's data, ledger or releases,
and pages keep rendering within 5 s while a comparison sweep runs in another session.

Loopback only: the server is ``streamlit run app.py --server.headless true --server.address 127.0.0.1``
on a free port (``start_server``), driven by Debian's Chromium through Playwright.
"""

from __future__ import annotations

import re
import time

import pytest

from tests.e2e._actions import (
    act,
    choose,
    expand,
    fill,
    go,
    is_idle,
    metric_value,
    pick,
    screenshot,
    wait_for,
    wait_idle,
    wait_text,
)
from tests.e2e.conftest import start_server, stop
from tests.e2e.test_release_browser import shows_release

pytestmark = pytest.mark.e2e

SESSIONS = 6
RENDER_SECONDS = 5.0
TOTAL_EPSILON = 5.0  # ui.DEFAULT_TOTAL_EPSILON


@pytest.fixture(scope="module")
def own_server(browser):  # ``browser`` first: it skips cleanly when Chromium is absent
    proc, url = start_server()
    yield url
    stop(proc)


def _histogram_csv(i: int) -> bytes:
    """Session i's histogram: 12 + i bins, all counts distinct from other sessions'."""
    rows = [f"s{i}-bin{k},{100 * (i + 1) + k}" for k in range(12 + i)]
    return ("label,count\n" + "\n".join(rows) + "\n").encode()


def _go(page, title: str, heading: str | None = None) -> float:
    """Navigate through the sidebar; seconds until the page's heading is rendered and the run is idle."""
    start = time.monotonic()
    go(page, title, heading, timeout=60_000)
    return time.monotonic() - start


def test_sessions_are_isolated_and_stay_responsive_during_a_sweep(browser, own_server, tmp_path):
    contexts = [browser.new_context(viewport={"width": 1280, "height": 800}) for _ in range(SESSIONS)]
    pages = [context.new_page() for context in contexts]
    try:
        for page in pages:
            page.set_default_timeout(60_000)
            page.goto(own_server)
        for page in pages:
            wait_text(page, "Budget remaining")

        # Each session uploads its own histogram; the uploads and then the clicks are issued to all sessions
        # before waiting for any (act, told the first try is made, waits for it before trying again).
        for i, page in enumerate(pages):
            _go(page, "Data")
            expand(page, "Upload a histogram")
            path = tmp_path / f"session{i}.csv"
            path.write_bytes(_histogram_csv(i))
            page.get_by_test_id("stFileUploaderDropzoneInput").set_input_files(str(path))
        for page in pages:
            wait_for(page, page.get_by_role("button", name="Use this file"), what="the upload's Use this file")
            page.get_by_role("button", name="Use this file").click()
        for i, page in enumerate(pages):
            act(page, page.get_by_role("button", name="Use this file").click,
                page.get_by_text(f"Loaded session{i}: {12 + i} cells"), what=f"use session {i}'s file", tried=True)

        # Each session releases once with its own epsilon, again all clicks before any wait.
        epsilons = [round(0.1 * (i + 1), 1) for i in range(SESSIONS)]
        for page, epsilon in zip(pages, epsilons, strict=True):
            _go(page, "Release")
            choose(page, "exploration", area=page.get_by_test_id("stRadio"))
            fill(page, page.get_by_role("spinbutton", name="Epsilon for this release"), str(epsilon))
        for page in pages:
            page.get_by_role("button", name="Spend and release").click()
        for i, page in enumerate(pages):
            act(page, page.get_by_role("button", name="Spend and release").click, shows_release(page, 1),
                what=f"release in session {i}", tried=True)
            wait_text(page, "Released histogram over the true counts")

        for i, (page, epsilon) in enumerate(zip(pages, epsilons, strict=True)):
            text = page.locator('[data-testid="stApp"]').inner_text()
            assert f"session{i}" in text
            others = [j for j in range(SESSIONS) if j != i and f"session{j}" in text.replace(f"session{i}", "")]
            assert not others, f"session {i} shows data of sessions {others}"
            assert metric_value(page, "Released values") == str(12 + i)
            assert metric_value(page, "ε charged") == f"{epsilon:g}"
            assert metric_value(page, "Budget remaining") == f"ε = {TOTAL_EPSILON - epsilon:.4g}"
            assert page.get_by_role("combobox", name="Show release").count() == 1
            assert "#2:" not in page.get_by_role("combobox", name="Show release").inner_text()  # one release only
        screenshot(pages[3], "concurrent-session-3")

        # A long sweep in session 0; every other session must keep rendering pages within RENDER_SECONDS.
        sweeper = pages[0]
        # the 4,096-bin sample: a sweep of seconds, not a blink
        pick(sweeper, "Dataset", re.compile("^smooth — 1-D"), area=sweeper.get_by_test_id("stSidebar"))
        _go(sweeper, "Compare", "Compare mechanisms")
        sweep_started = time.monotonic()
        sweeper.get_by_role("button", name="Run comparison").click()  # on an idle page (go's): it is not lost
        sweeper.get_by_text("running…").or_(sweeper.get_by_text("runs")).first.wait_for(timeout=30_000)
        timings, overlapped = [], []
        for page in pages[1:]:
            for title in ("Data", "Release"):
                timings.append(_go(page, title))
                overlapped.append(not is_idle(sweeper))
        wait_idle(sweeper, timeout=600_000)
        sweep_seconds = time.monotonic() - sweep_started
        print(f"\nCONCURRENT: {SESSIONS} sessions; page renders during the sweep: max {max(timings):.2f} s, "
              f"median {sorted(timings)[len(timings) // 2]:.2f} s over {len(timings)} navigations, "
              f"{sum(overlapped)} of them finished while the sweep was still running; sweep {sweep_seconds:.1f} s")
        assert overlapped[0], "the sweep ended before the first render: make it longer"
        assert max(timings) <= RENDER_SECONDS, timings
        for i, page in enumerate(pages[1:], start=1):  # the sweep did not touch the other sessions' state
            assert metric_value(page, "Budget remaining") == f"ε = {TOTAL_EPSILON - epsilons[i]:.4g}"
    finally:
        for context in contexts:
            context.close()
