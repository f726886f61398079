"""Shared mode in a real browser (#36): local mode refuses a proxied browser; with a local OpenID Connect provider,
two curators signed in to `dplens app --shared` each see only their own ledgers and workspaces."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e
DPLENS = Path(sys.executable).parent / "dplens"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_app(args: list[str], env: dict[str, str], cwd: Path | None = None) -> tuple[subprocess.Popen, str]:
    """`dplens app ARGS --port P` on loopback; (process, base url) once its health check answers."""
    port = _free_port()
    log = Path(env["DPLENS_HOME"] + ".log")
    with log.open("w") as out:  # the server keeps its own copy of the descriptor
        server = subprocess.Popen([str(DPLENS), "app", "--port", str(port), *args], env=env, cwd=cwd, stdout=out,
                                  stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 90
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2):
                return server, f"http://127.0.0.1:{port}"
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                server.kill()
                raise RuntimeError(f"dplens app did not start: {log.read_text()[-2000:]}") from None
            time.sleep(0.5)


def _stop(server: subprocess.Popen) -> None:
    server.terminate()
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    home = tmp_path / "home"
    return {"DPLENS_HOME": str(home), "HOME": str(tmp_path), "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false",
            "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", **extra}


def test_a_proxied_browser_is_refused_by_a_local_server(browser, tmp_path):
    """HTTP level: a real `dplens app` (local mode), and Chromium sending X-Forwarded-For as a proxy would."""
    server, url = _start_app([], _env(tmp_path))
    try:
        proxied = browser.new_context(extra_http_headers={"X-Forwarded-For": "203.0.113.7"})
        page = proxied.new_page()
        page.goto(url)
        page.get_by_text("runs in local mode").wait_for(timeout=120_000)
        assert page.get_by_text("dplens app --shared").count() >= 1
        proxied.close()
        direct = browser.new_context()
        page = direct.new_page()
        page.goto(url)
        page.get_by_text("Start here:").wait_for(timeout=120_000)
        assert page.get_by_text("runs in local mode").count() == 0
        direct.close()
    finally:
        _stop(server)
