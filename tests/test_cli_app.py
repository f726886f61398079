"""`dplens app` (the console script `make run` calls) serves the Streamlit app, and refuses a bad port in one line."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from dplens.cli import app_script, main

CONSOLE_SCRIPT = Path(sys.executable).parent / "dplens"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_health(server: subprocess.Popen, port: int, seconds: float, what: str = "dplens app") -> None:
    """Until ``server``'s /_stcore/health answers "ok" (it must keep running), else fail after ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert server.poll() is None, server.stderr.read() if server.stderr else "the server stopped"
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as answer:
                assert answer.read() == b"ok"
                return
        except OSError:
            time.sleep(0.5)
    pytest.fail(f"{what} did not answer its health check within {seconds:.0f} s")


def test_the_app_script_is_the_source_trees_app_py():
    assert app_script() == Path(__file__).resolve().parent.parent / "app.py"


@pytest.mark.parametrize("port", ["0", "70000", "http"])
def test_a_bad_port_is_refused_in_one_line(port, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["app", "--port", port])
    assert exit_.value.code == 2
    assert "--port" in capsys.readouterr().err


@pytest.mark.serial  # starts a server
def test_dplens_app_serves_the_app():
    assert CONSOLE_SCRIPT.exists(), "the `dplens` console script is installed with the package (pyproject.toml)"
    port = free_port()
    server = subprocess.Popen([str(CONSOLE_SCRIPT), "app", "--port", str(port)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
    try:
        wait_for_health(server, port, 90)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as page:
            assert b"<html" in page.read().lower()
    finally:
        server.terminate()
        server.communicate(timeout=30)  # reads and closes the stderr pipe
