"""Shared fixtures: a seeded ``rng``, tiny histograms, and the WDA Fig. 1 workload."""

from __future__ import annotations

import importlib.util
import os
import sys
import types
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from dplens.core.data.domain import Histogram
from dplens.core.queries.workloads import Explicit

# The app warms its Compare workers when a server starts (ui.warm_workers); the suites' in-process apps and
# browser servers skip it: two idle worker pools per test process would only compete with the tests.
os.environ.setdefault("DPLENS_WARM_SWEEPS", "0")

# WDA paper (Li et al.) Fig. 1: W is 8 × 6, x = [2,3,4,1,0,9]; the paper's printed Wx is wrong.
FIG1_MATRIX = np.array([
    [1, 1, 0, 0, 0, 0], [1, 1, 1, 0, 0, 0], [0, 1, 1, 0, 0, 0], [0, 0, 1, 0, 0, 0],
    [0, 0, 1, 0, 0, 0], [0, 0, 0, 1, 0, 0], [1, 1, 0, 0, 0, 0], [0, 0, 0, 0, 0, 1],
], dtype=float)
FIG1_X = np.array([2, 3, 4, 1, 0, 9], dtype=float)


def fig1_workload() -> Explicit:
    """The WDA Fig. 1 workload as an Explicit workload (Δ₁ = 4, ‖W‖_F² = 13)."""
    return Explicit(FIG1_MATRIX, label="wda-fig1")


@pytest.fixture(autouse=True)
def dplens_home(tmp_path_factory, monkeypatch):
    """Every test gets its own DPLENS_HOME: no test writes to the real home, none shares a budget."""
    home = tmp_path_factory.mktemp("dplens-home")
    monkeypatch.setenv("DPLENS_HOME", str(home))
    return home


@pytest.fixture
def bare_main(monkeypatch):
    """While the test runs, ``__main__`` is a bare module, so a ``spawn`` or ``forkserver`` child does not re-run it.

    Such a child re-runs its parent's ``__main__`` by path before its task. The tasks here are test-module
    functions, and whatever launched pytest (xdist's bootstrap, a harness's script needing globals it was given)
    need not run again, nor can it always.
    """
    monkeypatch.setitem(sys.modules, "__main__", types.ModuleType("__main__"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The shared data sets (DPBench 1-D histograms, Adult): ``$DPLENS_SHARED_DATA`` if set, else
    ``<repository>/../shared/data``, by the one rule the benches use (``bench/results.py: shared_data``).
    A test that needs a data set skips when it is absent."""
    path = Path(__file__).resolve().parent.parent / "bench" / "results.py"
    spec = importlib.util.spec_from_file_location("bench_results", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.shared_data()


@pytest.fixture
def shared_file(shared_data):
    """``shared_file("dpbench-1d", "HEPTH.csv")``: that shared data file, or a skip whose reason names
    DPLENS_SHARED_DATA. For the real-data variants of tests whose mechanics also run on ``tests/fixtures``."""
    def find(*parts: str) -> Path:
        path = shared_data.joinpath(*parts)
        if not path.is_file():
            pytest.skip(f"needs the optional shared data: {path} is absent (set DPLENS_SHARED_DATA)")
        return path
    return find


DPBENCH_LIKE_BINS = 512


@pytest.fixture
def dpbench_like(tmp_path) -> Path:
    """A folder laid out like ``dpbench-1d`` with HEPTH.csv, SEARCHLOGS.csv and NETTRACE.csv: one ``count`` column
    of ``DPBENCH_LIKE_BINS`` bins each, generated here (never copied from the shared data; tests/fixtures/README.md).
    About 70 % empty bins and a heavy tail, so every count class (0, 1–5, 6–20, > 20) is present."""
    folder = tmp_path / "dpbench-1d"
    folder.mkdir()
    for seed, name in enumerate(("HEPTH", "SEARCHLOGS", "NETTRACE")):
        gen = np.random.default_rng([20260101, seed])
        counts = np.where(gen.random(DPBENCH_LIKE_BINS) < 0.3,
                          np.floor(gen.pareto(1.2, DPBENCH_LIKE_BINS) * 8) + 1, 0).astype(int)
        (folder / f"{name}.csv").write_text("count\n" + "".join(f"{c}\n" for c in counts))
    return folder


ADULT_LIKE_DOMAIN = Path(__file__).resolve().parent / "fixtures" / "adult-like-domain.json"


@pytest.fixture
def adult_like_domain() -> Path:
    """A hand-written domain file shaped like Adult's (attribute name → number of levels, 8 attributes, 90,720
    cells): ``tests/fixtures/adult-like-domain.json``."""
    return ADULT_LIKE_DOMAIN


@pytest.fixture
def rng() -> np.random.Generator:
    """The one seeded noise source of a test (see docs/benchmarks.md, "Test conventions")."""
    return np.random.default_rng(12345)


@pytest.fixture
def fig1() -> SimpleNamespace:
    """WDA Fig. 1: ``workload``, ``matrix``, ``x`` and the true ``answers`` [5,9,7,4,4,1,5,9] (the paper prints a wrong
    vector)."""
    return SimpleNamespace(workload=fig1_workload(), matrix=FIG1_MATRIX.copy(), x=FIG1_X.copy(),
                           answers=np.array([5, 9, 7, 4, 4, 1, 5, 9], dtype=float))


@pytest.fixture
def tiny_1d() -> Histogram:
    """Six bins with a zero and a spike (the Fig. 1 data)."""
    return Histogram.from_counts(FIG1_X, labels=(tuple("abcdef"),), name="tiny-1d")


@pytest.fixture
def tiny_2d() -> Histogram:
    """A 3 × 4 grid with zeros."""
    return Histogram.from_counts(np.array([[0, 2, 5, 1], [3, 0, 0, 7], [1, 1, 4, 0]], dtype=float),
                                 name="tiny-2d")


def assert_expected_mse_with_power(mechanism, x, workload, epsilon, runs, rng, off=0.15) -> None:
    """Empirical per-query MSE over ``runs`` releases is within 4 standard errors of ``expected_mse``,
    and a formula off by ±``off`` (relative) would be rejected (the power check; see docs/benchmarks.md, "Test
    conventions")."""
    truth = workload.matvec(np.asarray(x, dtype=float).ravel())
    per_run = np.array([np.mean((mechanism.run(x, workload, epsilon, rng).answers - truth) ** 2)
                        for _ in range(runs)])
    expected = mechanism.expected_mse(workload, epsilon)
    standard_error = per_run.std(ddof=1) / np.sqrt(runs)
    assert abs(per_run.mean() - expected) < 4 * standard_error
    for wrong in ((1 - off) * expected, (1 + off) * expected):
        assert abs(per_run.mean() - wrong) > 4 * standard_error
