"""Execution-layer benchmark: wall AND CPU time, backends side by side in one run.

Run: .venv/bin/python bench/bench_execution.py [sweep] [grid] [dask] [--quick]

1. sweep: the Compare page's default sweep (8 mechanisms × 10 ε × 20 trials, the default sample,
   2000 random ranges) serially, on 1 and on 2 local worker processes (pools started beforehand;
   start-up reported apart). Targets: ≤ 2.5 s wall on 2 idle cores; 2 workers ≥ 1.7× faster than 1.
2. grid: the DPBench-scale grid, 9 mechanisms × 7 ε × 7 DPBench datasets × 4 sizes × 10 trials
   = 17,640 runs, on 2 local worker processes, to a fresh Parquet file: the whole command (strategies
   optimised in the workers + cells, pool start-up included), first with a cold strategy cache (a
   fresh temporary DPLENS_HOME, empty in-memory caches, a new pool), then warm (the strategies from
   that DPLENS_HOME's store). Target ≤ 5 min wall on 2 idle cores, cold.
3. dask: the same grid (--quick: a slice) on a Dask LocalCluster of 1 and of 2 workers, each warmed
   up first. Target: 2 workers ≥ 1.7× faster than 1.

The Dask part first fills the strategy caches in this process (mm-opt's optimisation dominates), timed
on a line of its own, so that its backends are compared on the cells alone.

CPU is this process plus every child process (psutil), user + system: on a shared, loaded machine
wall time mostly measures the other tenants, CPU time what the work costs. Results must be (and are
checked to be) identical across backends.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from results import SHARED_ENV, Recorder, record, shared_data  # noqa: E402

from dplens.core.analysis.execution import job_entries, remember_job, shutdown_pools, strategy_caches  # noqa: E402
from dplens.core.analysis.experiment import resolve_mechanisms, run_sweep  # noqa: E402
from dplens.core.analysis.grid import GridSpec, build_contexts, load_grid, run_grid  # noqa: E402
from dplens.core.analysis.metrics import expected_metrics  # noqa: E402
from dplens.core.data.datasets import DEFAULT_DATASET, load_histogram  # noqa: E402
from dplens.core.queries.workloads import random_range  # noqa: E402

# Same tuple as pages/compare.py DEFAULT_MECHANISMS (importing a page would start Streamlit).
DEFAULT_MECHANISMS = ("identity", "hb", "privelet", "dawa", "mwem", "ahp", "uniform", "laplace-on-answers")
EPSILONS = tuple(float(f"{e:.4g}") for e in np.geomspace(0.01, 10.0, 10))
DPBENCH = shared_data("dpbench-1d")  # $DPLENS_SHARED_DATA, else ../shared/data beside the repository
GRID_MECHANISMS = ("identity", "uniform", "hb", "privelet", "greedy-h", "mm-opt", "dawa", "mwem", "ahp")
GRID_EPSILONS = tuple(float(f"{e:.3g}") for e in np.geomspace(0.01, 10.0, 7))
GRID_SIZES = (512, 1024, 2048, 4096)


def cpu_by_process() -> dict[int, float]:
    """User + system CPU seconds of this process and each live descendant, by pid."""
    me = psutil.Process()
    seconds = {me.pid: sum(me.cpu_times()[:2])}
    for child in me.children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess):  # a child may exit while we look
            seconds[child.pid] = sum(child.cpu_times()[:2])
    return seconds


def timed(label: str, function):
    """Run ``function()``; print wall, total CPU and the busiest process's CPU; return (result, wall, cpu).

    The busiest process's CPU is what the wall time would be on idle cores (one process per core):
    unlike wall time, it does not grow with the other tenants' load.
    """
    wall, before = time.perf_counter(), cpu_by_process()
    result = function()
    wall, after = time.perf_counter() - wall, cpu_by_process()
    used = {pid: after[pid] - before.get(pid, 0.0) for pid in after}
    cpu, busiest = sum(used.values()), max(used.values())
    print(f"  {label:44s} wall {wall:8.2f} s   CPU {cpu:8.2f} s   busiest process CPU {busiest:7.2f} s",
          flush=True)
    timed.busiest = busiest
    record(name=label.strip(), wall_s=wall, cpu_s=cpu, busiest_process_cpu_s=busiest)
    return result, wall, cpu


def _numbers(df: pd.DataFrame) -> pd.DataFrame:
    return df.drop(columns="seconds").reset_index(drop=True)


def bench_sweep() -> None:
    histogram = load_histogram(DEFAULT_DATASET)
    workload = random_range(histogram.domain.size, 2000, seed=0)
    names = list(DEFAULT_MECHANISMS)
    print(f"Default Compare sweep: {len(names)} mechanisms × {len(EPSILONS)} ε × 20 trials on {histogram.name!r} "
          f"({histogram.domain.size} bins, 2000 random ranges)")

    def sweep(scheduler: str) -> pd.DataFrame:
        return run_sweep(histogram, workload, names, EPSILONS, 20, seed=0, scheduler=scheduler)

    tiny = random_range(histogram.domain.size, 5, seed=0)
    for workers in (1, 2):  # start the pools (and import everything in the workers) outside the timings
        timed(f"start-up of processes:{workers} (one tiny sweep)",
              lambda w=workers: run_sweep(histogram, tiny, ["identity"], [1.0], 4 * w, scheduler=f"processes:{w}"))
    serial, s_wall, s_cpu = timed("serial", lambda: sweep("serial"))
    one, w1, c1 = timed("processes:1", lambda: sweep("processes:1"))
    b1 = timed.busiest
    two, w2, c2 = timed("processes:2", lambda: sweep("processes:2"))
    b2 = timed.busiest
    for other in (one, two):
        pd.testing.assert_frame_equal(_numbers(serial), _numbers(other))
    print(f"  identical results on all three: yes.  2 workers vs 1: {w1 / w2:.2f}× wall, {b1 / b2:.2f}× by the "
          f"busiest process's CPU (target ≥ 1.7×); 2 workers: {w2:.2f} s wall, busiest process {b2:.2f} s CPU "
          "(target ≤ 2.5 s wall on 2 idle cores)")
    record(name="sweep: 2 workers vs 1", wall_ratio=w1 / w2, busiest_cpu_ratio=b1 / b2, identical=True)
    shutdown_pools()


def grid_spec(datasets: tuple[str, ...], sizes=GRID_SIZES, trials: int = 10) -> GridSpec:
    return GridSpec(datasets=datasets, mechanisms=GRID_MECHANISMS, epsilons=GRID_EPSILONS, trials=trials,
                    sizes=sizes, workload="random-range:m=2000")


def warm_strategies(spec: GridSpec) -> None:
    """Fill this process's strategy caches for the grid, timed on its own, and note them (``remember_job``)
    so that run_grid ships them instead of optimising them on the backend: the backends compared after
    it are compared on the cells alone.
    """
    contexts = build_contexts(spec)
    mechanisms = resolve_mechanisms(list(spec.mechanisms))
    timed("strategies + expected errors, this process", lambda: [
        expected_metrics(m, c.workload, e) for c in contexts.values() for m in mechanisms for e in spec.epsilons])
    for c in contexts.values():
        for m in mechanisms:
            remember_job(m, c.workload, job_entries(m, c.workload))


def forget_strategies(spec: GridSpec) -> None:
    """Empty this process's strategy caches and stop the pools: the next grid starts as a new command would."""
    for cache in {c for m in resolve_mechanisms(list(spec.mechanisms)) for c in strategy_caches(m)}:
        cache.clear()
    shutdown_pools()


def bench_grid(quick: bool) -> None:
    datasets = tuple(str(p) for p in sorted(DPBENCH.glob("*.csv")))
    if not datasets:
        print(f"grid skipped: {DPBENCH} absent (set {SHARED_ENV})")
        return
    spec = grid_spec(datasets[:2] if quick else datasets, GRID_SIZES[:2] if quick else GRID_SIZES)
    print(f"\nDPBench grid: {len(spec.mechanisms)} mechanisms × {len(spec.epsilons)} ε × {len(spec.datasets)} datasets "
          f"× {len(spec.sizes)} sizes × {spec.trials} trials = {spec.runs:,} runs, processes:2, the whole command "
          "(strategies in the workers + cells + pool start-up)")
    saved_home = os.environ.get("DPLENS_HOME")
    frames, walls = {}, {}
    try:
        with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as folder:
            os.environ["DPLENS_HOME"] = home  # a fresh strategy store: cold, then warm
            for state in ("cold", "warm"):
                forget_strategies(spec)
                out = Path(folder) / f"{state}.parquet"
                outcome, walls[state], cpu = timed(f"whole grid, {state} strategy cache",
                                                   lambda o=out: run_grid(spec, o, scheduler="processes:2"))
                frames[state] = load_grid(out).drop(columns="seconds").sort_values(
                    ["dataset", "domain_size", "mechanism", "epsilon", "trial", "metric"]).reset_index(drop=True)
                print(f"    {outcome.computed:,} runs, {len(frames[state]):,} rows; strategies optimised "
                      f"{outcome.strategies_computed}, loaded {outcome.strategies_loaded}; "
                      f"errors: {outcome.errors or 'none'}")
                record(name=f"grid {state}: strategies", computed=outcome.strategies_computed,
                       loaded=outcome.strategies_loaded)
    finally:
        if saved_home is None:
            os.environ.pop("DPLENS_HOME", None)
        else:
            os.environ["DPLENS_HOME"] = saved_home
    pd.testing.assert_frame_equal(frames["cold"], frames["warm"])
    load = psutil.getloadavg()
    print(f"  identical results cold and warm: yes.  Target ≤ 300 s wall on 2 idle cores, cold: "
          f"{'OK' if walls['cold'] <= 300 else 'OVER'} ({walls['cold']:.0f} s cold, {walls['warm']:.0f} s warm; "
          f"load average now {load[0]:.1f})")
    shutdown_pools()


def bench_dask(quick: bool) -> None:
    from dask.distributed import LocalCluster

    from dplens.core.analysis.execution import close_dask_clients

    datasets = tuple(str(p) for p in sorted(DPBENCH.glob("*.csv")))[:2 if quick else None]
    if not datasets:
        print(f"dask skipped: {DPBENCH} absent (set {SHARED_ENV})")
        return
    spec = grid_spec(datasets, (1024,) if quick else GRID_SIZES)
    print(f"\nDask LocalCluster, grid of {spec.runs:,} runs ({len(datasets)} datasets, sizes {spec.sizes})")
    warm_strategies(spec)
    frames = []
    walls, busiest = {}, {}
    for workers in (1, 2):
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, tempfile.TemporaryDirectory() as folder:
            out = Path(folder) / "grid.parquet"
            # imports and numba's cached kernels load once per worker: every mechanism, a few cells per worker
            timed(f"warm-up local cluster of {workers} (tiny grid)", lambda c=cluster, o=out, w=workers: run_grid(
                GridSpec(datasets=datasets[:1], mechanisms=GRID_MECHANISMS, epsilons=(1.0,), trials=4 * w,
                         sizes=(512,)), Path(str(o) + ".warm"), scheduler=c.scheduler_address, store=False))
            _, walls[workers], _ = timed(f"{workers} Dask worker(s)", lambda c=cluster, o=out: run_grid(
                spec, o, scheduler=c.scheduler_address, store=False))  # the home's strategy store untouched
            busiest[workers] = timed.busiest
            frames.append(load_grid(out).drop(columns="seconds").sort_values(
                ["dataset", "domain_size", "mechanism", "epsilon", "trial", "metric"]).reset_index(drop=True))
            close_dask_clients()
    pd.testing.assert_frame_equal(frames[0], frames[1])
    print(f"  identical results: yes.  2 workers vs 1: {walls[1] / walls[2]:.2f}× wall, "
          f"{busiest[1] / busiest[2]:.2f}× by the busiest process's CPU (target ≥ 1.7×)")
    record(name="dask: 2 workers vs 1", wall_ratio=walls[1] / walls[2], busiest_cpu_ratio=busiest[1] / busiest[2],
           identical=True)


def main(argv: list[str]) -> None:
    parts = [a for a in argv if not a.startswith("--")] or ["sweep", "grid", "dask"]
    quick = "--quick" in argv
    load = psutil.getloadavg()
    print(f"{psutil.cpu_count()} cores; load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} "
          "(a shared machine: wall times include other tenants' work; compare CPU)\n")
    with Recorder("bench_execution", {"parts": parts, "quick": quick}):
        if "sweep" in parts:
            bench_sweep()
        if "grid" in parts:
            bench_grid(quick)
        if "dask" in parts:
            bench_dask(quick)


if __name__ == "__main__":
    main(sys.argv[1:])
