"""Scale benchmark: wall time, CPU time and peak memory of every registered 1-D
mechanism on one run at a large domain, each in a fresh interpreter so the figures do not mix.

Run: .venv/bin/python bench/bench_scale.py [--n 1048576] [--queries 2000] [--mechanisms dawa,om]
     [--limit-seconds 120] [--limit-gb 4] [--workload identity|prefix|...]

The histogram is HEPTH's shape (``$DPLENS_SHARED_DATA/dpbench-1d``, else ``../shared/data/dpbench-1d``; an
exponential stand-in when absent)
stretched to n bins; the workload is ``queries`` random ranges (seed 0); ε = 1. Peak memory is reported
twice: tracemalloc's peak of Python/NumPy allocations during the run (what the mechanism itself holds)
and the child's peak resident set size (interpreter and libraries included, ~100 MB). Targets:
≤ 30 s and ≤ 1 GB per run at 2^20 bins, DAWA ≤ 5 s; OM and WDA ≤ 300 MB at 65,536 bins.
The machine may be shared: CPU seconds are printed next to wall seconds for that reason.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from results import Recorder, shared_data  # noqa: E402

DPBENCH = shared_data("dpbench-1d")


def stretched_histogram(n: int, dataset: str = "HEPTH") -> np.ndarray:
    """A dataset's 4096-bin shape stretched to n bins by linear interpolation (counts floored)."""
    path = DPBENCH / f"{dataset}.csv"
    base = np.loadtxt(path, skiprows=1) if path.exists() else np.floor(np.random.default_rng(0).exponential(50.0, 4096))
    shape = np.interp(np.linspace(0, base.size - 1, n), np.arange(base.size), base)
    return np.floor(shape)


def run_one(name: str, n: int, queries: int, workload_spec: str = "") -> dict:
    """One cold run of ``name`` in this process: wall, CPU, tracemalloc peak and max RSS."""
    from dplens.core.mechanisms import MECHANISMS
    from dplens.core.queries.workloads import parse_workload, random_range

    x = stretched_histogram(n)
    workload = parse_workload(workload_spec, (n,)) if workload_spec else random_range(n, queries, seed=0)
    mechanism = MECHANISMS[name]
    tracemalloc.start()
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        release = mechanism.run(x, workload, 1.0, np.random.default_rng(1))
    except (ValueError, MemoryError) as err:
        tracemalloc.stop()
        return {"name": name, "error": f"{type(err).__name__}: {str(err)[:100]}"}
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    error = float(np.mean(np.abs(release.answers - workload.matvec(x))))  # MAE per query
    return {"name": name, "wall": wall, "cpu": cpu, "traced_mb": peak / 2**20,
            "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "mae": error}


def child(name: str, n: int, queries: int, limit_seconds: float, limit_gb: float, workload: str) -> dict:
    command = [sys.executable, __file__, "--child", name, "--n", str(n), "--queries", str(queries),
               "--limit-gb", str(limit_gb), "--workload", workload]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=limit_seconds, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"name": name, "error": f"stopped after {limit_seconds:g} s"}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"name": name, "error": f"exit {done.returncode}: {tail[:100]}"}
    return json.loads(lines[-1])


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2**20)
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--mechanisms", default="")
    parser.add_argument("--limit-seconds", type=float, default=120.0)
    parser.add_argument("--limit-gb", type=float, default=4.0)
    parser.add_argument("--workload", default="", help="a workload spec (e.g. identity, prefix) instead of "
                        "the random ranges")
    parser.add_argument("--child", default=None)
    args = parser.parse_args(argv)
    if args.child:
        limit = int(args.limit_gb * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))  # fail fast instead of swapping a shared machine
        print(json.dumps(run_one(args.child, args.n, args.queries, args.workload)))
        return
    from dplens.core.mechanisms import MECHANISMS

    names = [s for s in args.mechanisms.split(",") if s] or list(MECHANISMS)
    what = f"workload {args.workload}" if args.workload else f"{args.queries} random ranges (seed 0)"
    print(f"n = {args.n:,} bins, {what}, epsilon = 1, one cold run each "
          f"in a fresh interpreter (address space capped at {args.limit_gb:g} GB, {args.limit_seconds:g} s)")
    print(f"{'mechanism':20s} {'wall s':>8s} {'CPU s':>8s} {'traced MB':>10s} {'max RSS MB':>11s} {'MAE':>12s}")
    with Recorder("bench_scale", args) as rec:
        for name in names:
            result = child(name, args.n, args.queries, args.limit_seconds, args.limit_gb, args.workload)
            if "error" in result:
                print(f"{name:20s} {result['error']}")
                rec.row(name=name, n=args.n, error=result["error"])
                continue
            print(f"{name:20s} {result['wall']:8.2f} {result['cpu']:8.2f} {result['traced_mb']:10.1f} "
                  f"{result['rss_mb']:11.1f} {result['mae']:12.4g}", flush=True)
            rec.row(name=name, n=args.n, wall_s=result["wall"], cpu_s=result["cpu"], traced_mb=result["traced_mb"],
                    max_rss_mb=result["rss_mb"], mae=result["mae"])


if __name__ == "__main__":
    main(sys.argv[1:])
