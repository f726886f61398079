"""The suite's own fixtures: what they promise, checked with a case that fails without them."""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import sys
import types

import pytest


def test_bare_main_keeps_a_launcher_that_cannot_run_again_out_of_spawned_children(tmp_path, monkeypatch, request):
    """A spawned child re-runs its parent's ``__main__`` by path; under ``bare_main`` there is none to run."""
    launcher = tmp_path / "launcher.py"  # like a harness's script that needs globals it was given
    launcher.write_text("raise SystemExit('this launcher cannot run twice')\n", encoding="utf-8")
    poisoned = types.ModuleType("__main__")
    poisoned.__file__ = str(launcher)
    monkeypatch.setitem(sys.modules, "__main__", poisoned)
    spawn = multiprocessing.get_context("spawn")
    with (concurrent.futures.ProcessPoolExecutor(1, mp_context=spawn) as pool,
          pytest.raises(concurrent.futures.process.BrokenProcessPool)):
        pool.submit(abs, -3).result(timeout=120)
    request.getfixturevalue("bare_main")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=spawn) as pool:
        assert pool.submit(abs, -3).result(timeout=120) == 3
