"""Execution layer: identical results on every backend, shipped strategy caches, stop, shared arrays."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dplens.core.analysis.execution import (
    Context,
    close_dask_clients,
    install_snapshot,
    parse_scheduler,
    read_payload,
    strategy_snapshot,
    write_payload,
)
from dplens.core.analysis.experiment import SweepCache, run_sweep
from dplens.core.data.domain import Histogram
from dplens.core.mechanisms import MECHANISMS
from dplens.core.mechanisms.cache import cache_named
from dplens.core.queries.workloads import Prefix, random_range

MIXED = ["identity", "hb", "dawa", "mwem", "greedy-h", "mm-opt", "uniform"]  # data-(in)dependent, cached


@pytest.fixture(scope="module")
def small():
    counts = np.random.default_rng(5).poisson(30.0, 64).astype(float)
    return Histogram.from_counts(counts, name="small"), random_range(64, 40, seed=2)


def _numbers(df: pd.DataFrame) -> pd.DataFrame:
    return df.drop(columns="seconds").reset_index(drop=True)


# Another file's Dask cluster may hold port 8787 at the same time under xdist: Dask then warns and leaks the probe's
# socket; neither is this test's concern.
@pytest.mark.filterwarnings("ignore:Port 8787 is already in use")
@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_backends_give_identical_results(small, bare_main):
    from dask.distributed import LocalCluster

    histogram, workload = small
    args = (histogram, workload, MIXED, [0.1, 1.0], 3)
    serial = run_sweep(*args, seed=9, scheduler="serial")
    processes = run_sweep(*args, seed=9, scheduler="processes:2")
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        try:
            on_dask = run_sweep(*args, seed=9, scheduler=cluster.scheduler_address)
        finally:
            close_dask_clients()
    assert len(serial) == len(MIXED) * 2 * 3 * 2 and not serial.attrs["errors"]
    pd.testing.assert_frame_equal(_numbers(serial), _numbers(processes))  # bit for bit, same order
    pd.testing.assert_frame_equal(_numbers(serial), _numbers(on_dask))
    one_worker = run_sweep(*args, seed=9, scheduler="processes:1")
    pd.testing.assert_frame_equal(_numbers(serial), _numbers(one_worker))


def test_strategy_caches_are_shipped_not_recomputed(small):
    _, workload = small
    mm_opt, greedy = cache_named("mm-opt strategies"), cache_named("greedy-h strategies")
    # empty caches: another test in this process may have filled them for this workload (gaussian-greedy-h: a
    # second Greedy-H entry, for the L2 norm)
    mm_opt.clear()
    greedy.clear()
    MECHANISMS["mm-opt"].expected_mse(workload, 1.0)  # what run_sweep does in the calling process
    MECHANISMS["greedy-h"].expected_mse(workload, 1.0)
    snapshot = strategy_snapshot({0: Context(small[0], workload, ("mae",))})
    assert len(snapshot["mm-opt strategies"]) == 1
    assert len(snapshot["greedy-h strategies"]) == 1
    assert "greedy-h dense grams" not in snapshot  # not shipped: an intermediate of the strategy
    other = strategy_snapshot({0: Context(Histogram.from_counts(np.ones(8)), Prefix(8), ("mae",))})
    assert "mm-opt strategies" not in other  # only this workload's entries travel
    mm_opt.clear()  # a fresh worker: installing the snapshot means the optimiser never runs there
    install_snapshot(snapshot)
    assert MECHANISMS["mm-opt"].strategy(workload) is next(iter(snapshot["mm-opt strategies"].values()))


def test_install_snapshot_refuses_an_unknown_cache_by_name():
    with pytest.raises(ValueError, match="'no such cache'"):
        install_snapshot({"no such cache": {}})


def test_stop_cancels_pending_cells(small):
    histogram, workload = small
    seen = []
    df = run_sweep(histogram, workload, ["identity", "hb", "uniform"], [0.1, 0.5, 1.0, 2.0], 2,
                   scheduler="processes:2", progress=lambda done, total, name: seen.append(done),
                   should_stop=lambda: bool(seen))
    assert df.attrs["stopped"] is True
    assert df.attrs["computed"] < 3 * 4 * 2 and len(seen) < 12


def test_large_arrays_are_memory_mapped_read_only(tmp_path):
    big, small_array = np.arange(20_000, dtype=float), np.arange(10.0)
    write_payload({"big": big, "small": small_array}, tmp_path)
    assert len(list(tmp_path.glob("*.npy"))) == 1  # only the large one left the pickle
    loaded = read_payload(tmp_path)
    np.testing.assert_array_equal(loaded["big"], big)
    assert not loaded["big"].flags.writeable and loaded["small"].flags.writeable


def test_adding_a_mechanism_or_an_epsilon_runs_only_the_new_cells(small):
    histogram, workload = small
    cache = SweepCache()
    first = run_sweep(histogram, workload, ["identity", "hb"], [0.5, 1.0], 4, seed=3, cache=cache)
    assert first.attrs["computed"] == 2 * 2 * 4
    more = run_sweep(histogram, workload, ["identity", "hb", "uniform"], [0.5, 1.0, 2.0], 4, seed=3, cache=cache)
    assert more.attrs["computed"] == (3 * 3 - 2 * 2) * 4
    fresh = run_sweep(histogram, workload, ["identity", "hb", "uniform"], [0.5, 1.0, 2.0], 4, seed=3)
    pd.testing.assert_frame_equal(_numbers(more), _numbers(fresh))
    again = run_sweep(histogram, workload, ["identity", "hb", "uniform"], [0.5, 1.0, 2.0], 4, seed=4, cache=cache)
    assert again.attrs["computed"] == 3 * 3 * 4  # a new seed is a new key
    other = Histogram.from_counts(histogram.counts + 1)
    assert run_sweep(other, workload, ["identity"], [0.5], 4, seed=3, cache=cache).attrs["computed"] == 4


@pytest.mark.parametrize("spec, message", [
    ("threads", "scheduler must be 'auto', 'serial'"),
    ("local:0", "worker count after 'local:' must be an integer >= 1"),
    ("processes:x", "worker count after 'processes:'"),
])
def test_scheduler_specs_are_checked(spec, message):
    with pytest.raises(ValueError, match=message):
        parse_scheduler(spec)


def test_the_deadline_stops_worker_processes_too(small):
    from dplens.core.analysis.cost import Deadline

    histogram, workload = small
    deadline = Deadline(60)
    deadline.cancel()  # as a Stop click or a closed session does
    df = run_sweep(histogram, workload, ["identity", "hb"], [0.1, 1.0], 2, scheduler="processes:2",
                   deadline=deadline)
    assert df.attrs["stopped"] is True and df.attrs["stop_reason"] == "cancelled"
    assert df.attrs["computed"] < 2 * 2 * 2


def test_strategy_jobs_run_on_the_backend_and_hand_back_their_entries(small):
    from dplens.core.analysis.execution import StrategyJob, execute, make_cells, strategy_caches
    from dplens.core.analysis.metrics import expected_metrics

    histogram, workload = small
    contexts = {0: Context(histogram, workload, ("mae",), seed=2)}
    cells = make_cells(contexts, ["identity", "mm-opt", "hb"], [0.5, 1.0], 2)
    jobs = [StrategyJob(0, MECHANISMS[name], (0.5, 1.0)) for name in ("mm-opt", "hb")]
    assert [bool(strategy_caches(MECHANISMS[n])) for n in ("identity", "mm-opt", "hb", "dawa")] == [
        False, True, True, False]
    for scheduler in ("serial", "processes:2"):
        handed = []
        results = list(execute(contexts, cells, scheduler=scheduler, strategies=jobs, on_strategy=handed.append))
        assert sorted(r.index for r in results) == list(range(len(cells)))
        assert sorted(r.index for r in handed) == [0, 1]  # one per job, whatever the epsilons
        for result in handed:
            assert all(result.entries[cache.name] for cache in strategy_caches(result.job.mechanism))
            for e in (0.5, 1.0):
                here = expected_metrics(result.job.mechanism, workload, e)
                assert [result.expected[e][k] for k in ("mse", "rmse")] == [here["mse"], here["rmse"]] != [0, 0]


def test_auto_runs_in_this_process_below_the_estimated_seconds_and_on_the_pool_above(monkeypatch):
    from dplens.core.analysis import execution

    monkeypatch.setattr(execution.os, "cpu_count", lambda: 2)
    below = execution.AUTO_PARALLEL_SECONDS * 0.99
    assert execution.resolve_auto("auto", below) == "serial"
    assert execution.resolve_auto("auto", execution.AUTO_PARALLEL_SECONDS) == "processes"
    assert execution.resolve_auto("processes:2", 0.0) == "processes:2"  # a named backend is kept
    monkeypatch.setattr(execution.os, "cpu_count", lambda: 1)
    assert execution.resolve_auto("auto", 1e6) == "serial"  # one core: a pool only adds start-up


def test_auto_is_decided_on_the_estimated_seconds_of_the_runs_left(small, monkeypatch):
    """The sweep hands ``resolve_auto`` its runs' serial estimate, counting only the trials not already cached."""
    from dplens.core.analysis import experiment
    from dplens.core.analysis.cost import sweep_seconds

    histogram, workload = small
    seen: list[float] = []
    real = experiment.resolve_auto
    monkeypatch.setattr(experiment, "resolve_auto", lambda spec, seconds: seen.append(seconds) or real(spec, seconds))
    mechanisms = [MECHANISMS["identity"], MECHANISMS["dawa"]]
    cache = SweepCache()
    run_sweep(histogram, workload, mechanisms, [0.5, 1.0], trials=2, metrics=("mae",), cache=cache)
    run_sweep(histogram, workload, mechanisms, [0.5, 1.0], trials=5, metrics=("mae",), cache=cache)
    first = sweep_seconds(mechanisms, workload, epsilons=2, trials=2)
    assert first > 0 and seen == pytest.approx([first, first * 3 / 2])  # 2 trials, then the 3 more


def test_a_cached_strategy_is_priced_once_per_sweep(small, monkeypatch):
    """mm-opt's optimisation is estimated once, not once per run: the sweep's estimate is far below runs × first."""
    from dplens.core.analysis import experiment
    from dplens.core.analysis.cost import estimate_cost

    histogram, workload = small
    seen: list[float] = []
    monkeypatch.setattr(experiment, "resolve_auto", lambda spec, seconds: seen.append(seconds) or "serial")
    mm_opt = MECHANISMS["mm-opt"]
    run_sweep(histogram, workload, [mm_opt], [0.5, 1.0], trials=10, metrics=("mae",))
    first = estimate_cost(mm_opt, workload).seconds
    assert first < seen[0] < 2 * first  # 20 runs: the strategy once, then runs on it
