"""Real-browser fixtures: a `streamlit run app.py` server on loopback and Playwright driving Debian's Chromium.

Skips with a clear message only when /usr/bin/chromium is absent (.ci/run installs Chromium; playwright is a test
dependency). How a test acts on the page is in _actions.py.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from tests.e2e._actions import ARTIFACTS, wait_for

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(command: list[str], port: int, *, env: dict[str, str], log_path: Path, cwd: Path = ROOT,
           seconds: float = 90) -> tuple[subprocess.Popen, str]:
    """Run the server ``command`` that listens on 127.0.0.1:``port``, its output in ``log_path``; returns
    (process, base url) once its health check answers, or raises RuntimeError with the end of its log."""
    with open(log_path, "wb") as log:  # a file, not a pipe: a full pipe would block the server
        proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited: {log_path.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.status == 200:
                    return proc, url
        except OSError:
            time.sleep(0.3)  # the poll's interval: the deadline bounds the wait
    proc.kill()
    raise RuntimeError(f"the server did not become healthy within {seconds:.0f} s: {log_path.read_text()[-2000:]}")


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()


def start_server(port: int | None = None, home: Path | None = None) -> tuple[subprocess.Popen, str]:
    """Start `streamlit run app.py` on 127.0.0.1; returns (process, base_url) once its health check answers.

    ``home`` is the server's DPLENS_HOME (ledger and workspaces); default a fresh temporary directory,
    so no browser test writes to the real home or shares a budget with another server.
    """
    port = port or free_port()
    home = home or Path(tempfile.mkdtemp(prefix="dplens-e2e-home-"))
    env = {**os.environ, "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false", "DPLENS_HOME": str(home)}
    ARTIFACTS.mkdir(exist_ok=True)
    return launch([sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.headless", "true",
                   "--server.address", "127.0.0.1", "--server.port", str(port), "--server.fileWatcherType", "none"],
                  port, env=env, log_path=ARTIFACTS / f"streamlit-{port}.log")


def served(home: Path | None = None):
    """A server on ``home`` (default a fresh DPLENS_HOME) for as long as the fixture lives (skips without Chromium)."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"real-browser tests need Debian's Chromium at {CHROMIUM} (apt-get install chromium)")
    proc, url = start_server(home=home)
    yield url
    stop(proc)


@pytest.fixture(scope="session")
def app_url():
    yield from served()


@pytest.fixture
def fresh_app_url():
    """A server of this test's own: for tests whose spends change a ledger's unit (a zCDP release records a ρ
    total), which would change what later tests on the shared server may spend."""
    yield from served()


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.skip(f"real-browser tests need Debian's Chromium at {CHROMIUM} (apt-get install chromium)")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        yield browser
        browser.close()


@pytest.fixture
def page(browser, app_url):
    """A fresh browser context (= a fresh Streamlit session) at 1280×800, opened on the app."""
    yield from _opened(browser, app_url)


@pytest.fixture
def fresh_page(browser, fresh_app_url):
    """``page`` on a server of this test's own (``fresh_app_url``)."""
    yield from _opened(browser, fresh_app_url)


def open_app(browser, app_url, *, width: int = 1280, height: int = 800, timeout: float = 30_000):
    """A fresh browser context (= a fresh Streamlit session) at ``width`` × ``height`` on the app, once app.py has
    run; returns (context, page). Close the context when done."""
    context = browser.new_context(viewport={"width": width, "height": height}, accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(timeout)
    page.goto(app_url)
    # The first session of a fresh server can look idle before app.py has run (imports take seconds);
    # until then the sidebar lists the raw pages/ files, and clicking one would bypass app.py.
    wait_for(page, page.get_by_text("Budget remaining"), what="the app's sidebar", timeout=2 * max(timeout, 60_000))
    return context, page


def _opened(browser, app_url):
    context, page = open_app(browser, app_url)
    yield page
    context.close()
