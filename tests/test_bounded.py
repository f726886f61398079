"""Bounded single runs (dplens.core.analysis.bounded): a worker process stopped at the action time limit."""

import operator
import os
import subprocess
import sys
import textwrap
import time
import types
from pathlib import Path

import numpy as np
import pytest

from dplens.core.analysis.bounded import RunTimeLimitError, fork_directly, run_bounded
from dplens.core.mechanisms import MECHANISMS
from dplens.core.privacy.ledger_store import LedgerStore
from dplens.core.privacy.noise import SecureNoise
from dplens.core.queries.workloads import Prefix
from tests.test_app_release import spend

ROOT = Path(__file__).resolve().parents[1]


def test_a_worker_returns_what_the_same_seeded_run_returns_in_process():
    counts, workload = np.arange(512.0), Prefix(512)
    here = MECHANISMS["dawa"].run(counts, workload, 1.0, np.random.default_rng(3))
    there = run_bounded(MECHANISMS["dawa"].run, counts, workload, 1.0, np.random.default_rng(3), seconds=60)
    assert np.array_equal(here.estimate, there.estimate) and here.privacy_loss == there.privacy_loss


def test_a_run_past_the_limit_is_killed_and_returns_nothing():
    started = time.monotonic()
    with pytest.raises(RunTimeLimitError, match="time limit of 1 s"):
        run_bounded(time.sleep, 60, seconds=1)
    assert time.monotonic() - started < 15  # killed, not waited for (process start-up included)


def test_errors_in_the_worker_keep_their_type_and_message():
    with pytest.raises(ValueError, match="invalid literal"):
        run_bounded(int, "abc", seconds=30)
    with pytest.raises(ValueError, match="time limit seconds must be > 0"):
        run_bounded(int, "1", seconds=0)


def _counting(steps: int, *, progress) -> int:
    for step in range(steps):
        progress((step + 1) / steps)
    return steps


def test_progress_reaches_the_caller_from_the_worker_and_in_process():
    seen = []
    assert run_bounded(_counting, 4, seconds=60, progress=seen.append) == 4
    assert seen == [0.25, 0.5, 0.75, 1.0]
    seen.clear()
    assert run_bounded(_counting, 2, seconds=60, estimated_seconds=1e-6, progress=seen.append) == 2
    assert seen == [0.5, 1.0]


def test_a_tiny_estimate_runs_in_this_process():
    assert run_bounded(sum, [1, 2], seconds=30, estimated_seconds=1e-6) == 3


def _in_a_fresh_interpreter(script: str) -> None:
    """Run ``script`` in a new Python (this test process has threads and JAX from earlier tests)."""
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]


def test_fork_directly_forks_the_worker_from_this_process_and_otherwise_the_fork_server_does():
    _in_a_fresh_interpreter("""
        import os
        from dplens.core.analysis.bounded import fork_directly, run_bounded
        with fork_directly():
            assert run_bounded(os.getppid, seconds=30) == os.getpid()
        assert run_bounded(os.getppid, seconds=30) != os.getpid()  # the block ended: the fork server's child again
    """)


def test_a_second_python_thread_or_jax_sends_fork_directly_back_to_the_fork_server():
    _in_a_fresh_interpreter("""
        import os, threading
        from dplens.core.analysis.bounded import fork_directly, run_bounded
        stop = threading.Event()
        other = threading.Thread(target=stop.wait)
        other.start()
        with fork_directly():
            assert run_bounded(os.getppid, seconds=30) != os.getpid()
        stop.set()
        other.join()
        with fork_directly():
            assert run_bounded(os.getppid, seconds=30) == os.getpid()
        import jax  # XLA's threads: a fork could deadlock
        with fork_directly():
            assert run_bounded(os.getppid, seconds=30) != os.getpid()
    """)


def _sleep_after_writing_pid(path: Path, seconds: float) -> None:
    path.write_text(str(os.getpid()))
    time.sleep(seconds)


def test_a_directly_forked_run_past_the_limit_is_killed_and_reaped(tmp_path):
    pid_file = tmp_path / "pid"
    with fork_directly(), pytest.raises(RunTimeLimitError, match="nothing was released or charged"):
        run_bounded(_sleep_after_writing_pid, pid_file, 60, seconds=2)
    with pytest.raises(ProcessLookupError):  # killed and joined: no such process is left
        os.kill(int(pid_file.read_text()), 0)


def test_a_directly_forked_worker_sends_back_errors_with_their_type_and_message():
    with fork_directly(), pytest.raises(ValueError, match="invalid literal"):
        run_bounded(int, "abc", seconds=30)


def test_directly_forked_workers_draw_fresh_secure_noise():
    # OpenSSL's generator (OpenDP's source) reseeds in a forked child: drawn here first, then in two children,
    # the three draws all differ (64 discrete Laplace(2) values agree by chance with probability < 1e-40).
    zeros = np.zeros(64)
    here = SecureNoise(integer=True).add_laplace(zeros, 2.0)
    with fork_directly():
        first, second = (run_bounded(SecureNoise(integer=True).add_laplace, zeros, 2.0, seconds=60) for _ in "ab")
    assert not np.array_equal(here, first) and not np.array_equal(here, second)
    assert not np.array_equal(first, second)


def test_cli_release_stops_at_its_time_limit_writing_and_charging_nothing(tmp_path):
    data = tmp_path / "h.csv"
    data.write_text("count\n" + "\n".join(str(i % 7) for i in range(1024)) + "\n")
    ledger, output = tmp_path / "ledger.sqlite3", tmp_path / "out.csv"
    out = subprocess.run([sys.executable, "-m", "dplens", "release", "--input", str(data), "--mechanism", "mm-opt",
                          "--workload", "all-range", "--epsilon", "1", "--output", str(output), "--ledger",
                          str(ledger), "--time-limit", "0.3"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.strip().splitlines()[-1].startswith("error: stopped at the time limit of 0.3 s")
    assert not output.exists()
    assert all(e["kind"] != "spend" for e in LedgerStore(ledger).history())


def test_the_release_page_stops_at_the_action_limit_and_charges_nothing(monkeypatch):
    from tests.test_app import open_page

    monkeypatch.setattr("dplens.core.data.limits.MAX_ACTION_SECONDS", 0.001)  # even the worker's start-up is too long
    at = open_page("pages/release.py")
    at = spend(at, 1.0)
    assert not at.exception and not at.session_state.releases
    assert at.session_state.ledger.spent.epsilon == 0
    assert any("time limit" in e.value and "nothing was released or charged" in e.value for e in at.error)


@pytest.mark.parametrize("start", ["bounded run", "sweep pool"])
def test_workers_started_while_a_page_is_main_do_not_run_the_page(tmp_path, monkeypatch, start):
    from dplens.core.analysis.execution import shutdown_pools
    from dplens.core.analysis.experiment import run_sweep
    from dplens.core.data.domain import Histogram

    marker = tmp_path / "ran"
    page_file = tmp_path / "page.py"
    page_file.write_text(f"open({str(marker)!r}, 'a').write(__name__ + '\\n')\n")
    page = types.ModuleType("__main__")  # as Streamlit's script runner installs the page it runs
    page.__file__ = str(page_file)
    monkeypatch.setitem(sys.modules, "__main__", page)
    if start == "bounded run":
        assert run_bounded(operator.add, 2, 3, seconds=60) == 5
    else:
        shutdown_pools()  # workers started from here, now
        run_sweep(Histogram.from_counts(np.arange(16.0)), Prefix(16), ["identity"], [1.0], 2, seed=0,
                  scheduler="processes:1")
        shutdown_pools()
    assert sys.modules["__main__"] is page
    assert not marker.exists(), f"a worker ran the page as {marker.read_text().split()}"
