"""DAWA side by side with dpcomp_core's DAWA (its own code and compiled L1 partition) on the DPBench histograms.

Run: DPCOMP_SRC=PATH/TO/dpcomp_core nice -n 5 .venv/bin/python bench/bench_dawa_peer.py [--trials 30]
     [--datasets NETTRACE,MEDCOST] [--epsilons 0.1,1] [--interleave]

``DPCOMP_SRC`` is a folder holding a Python-3-runnable copy of dpcomp_core (github.com/dpcomp-org/dpcomp_core)
with DAWA's SWIG helper ``cutils/_cutil`` built in place (docs/benchmarks.md says how). Without it, or when the
import fails, the peer columns are skipped with the reason printed and only dplens's figures are shown.

Setup as in peer-reference.md (the shared spec folder): the 4096-bin DPBench histograms
(``$DPLENS_SHARED_DATA/dpbench-1d``, else ``../shared/data/dpbench-1d``, read in place), 2000 random ranges
[a, b] with a and b uniform over the bins and sorted, drawn once from ``default_rng(12345)`` (both sides answer
the same draw); error = mean absolute error per query of the answers read off each side's histogram estimate.
Both sides run DAWA with ratio 0.25 (ε₁ = 0.25·ε for the L1 partition over dyadic-length intervals, the rest
for Greedy-H over the buckets): dpcomp_core's ``dawa_engine(ratio=0.25)`` against the registry's ``dawa``.

Per cell, the two sides take turns in blocks of 10 runs in this one process (one BLAS thread each), so both
sample the shared machine's load over the same stretch of time; ``--interleave`` alternates them run by run
instead, so each run starts with the caches the other side left (dplens's runs then take 1-2.5 ms more on the
sparse histograms), every run cold (dplens's per-data deviation cache
emptied first), timed with ``time.process_time``: the median CPU ms per run of each side, their ratio
(dpcomp_core / dplens; target ≥ 10), and each side's mean error ± standard error and the error ratio (equal
accuracy: within two combined standard errors). Seed k gives both sides' k-th trial. After the cells, the two paths
a process takes, on each cell's histogram and on DPBench's seven laid end to end and cut or repeated to ``--sizes``
cells (default 512,4096,16384,65536; ε = 0.1): DAWA's NumPy-and-SciPy path, which a process takes until its
partitions have cost ``dawa.NUMPY_SECONDS`` of CPU, against the compiled kernels it takes after (what the cells above
time), run by run, median CPU and wall ms per cold run (up to ``dawa.NUMPY_UP_TO`` cells both are NumPy). Then a sweep
in a fresh interpreter (``--sweep-runs`` runs on the first dataset, ε = 0.1): the runs on NumPy, the one that loads the
kernels, the compiled ones after, CPU. Last, the first-run penalty: a fresh interpreter per try times
``MECHANISMS["dawa"].run`` twice (imports untimed) on a Poisson(5) histogram of each ``--first-run-cells`` size
(default 64 and 4096, DPBench's size), first minus second, wall
and CPU (target ≤ 0.1 s at every size).
"""

from __future__ import annotations

import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # one BLAS thread a side
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from results import Recorder, dpcomp_modules, require, shared_data  # noqa: E402

from dplens.core.mechanisms import MECHANISMS  # noqa: E402
from dplens.core.mechanisms import dawa as dawa_module  # noqa: E402
from dplens.core.queries.workloads import Ranges  # noqa: E402

DPBENCH = shared_data("dpbench-1d")
N = 4096
QUERIES = 2000
WORKLOAD_SEED = 12345
RATIO = 0.25
TARGET = 10.0
BLOCK = 10  # runs of one side in a row before the other side's

FIRST_RUN = """
import sys
import time
import numpy as np
from dplens.core.mechanisms import MECHANISMS
from dplens.core.queries.workloads import Prefix
cells = int(sys.argv[1])
x = np.random.default_rng(0).poisson(5, cells).astype(float)
out = []
for k in range(2):
    wall, cpu = time.perf_counter(), time.process_time()
    MECHANISMS["dawa"].run(x + k, Prefix(cells), 1.0, np.random.default_rng(k))
    out.append((time.perf_counter() - wall, time.process_time() - cpu))
print(out[0][0] - out[1][0], out[0][1] - out[1][1])
"""


def load_peer() -> tuple[object | None, str]:
    """(dpcomp_core's dawa, query-union and workload modules, '') or (None, why the peer columns are skipped)."""
    return dpcomp_modules("algorithm.dawa", "query_nd_union", "workload")


def mean_se(values: list[float]) -> tuple[float, float]:
    a = np.asarray(values, dtype=float)
    return float(a.mean()), float(a.std(ddof=1) / np.sqrt(a.size)) if a.size > 1 else 0.0


def time_cell(mechanism, engine, queries, workload: Ranges, x: np.ndarray, epsilon: float, trials: int,
              interleave: bool) -> tuple[list[float], list[float], list[float], list[float]]:
    """CPU seconds and mean absolute errors per trial of dplens's DAWA and (``engine`` not None) dpcomp_core's."""
    truth = workload.matvec(x)
    ours_cpu: list[float] = []
    ours_err: list[float] = []
    theirs_cpu: list[float] = []
    theirs_err: list[float] = []

    def ours(seed: int) -> None:
        dawa_module._DEVIATIONS.clear()
        start = time.process_time()
        release = mechanism.run(x, workload, epsilon, np.random.default_rng(seed))
        ours_cpu.append(time.process_time() - start)
        ours_err.append(float(np.mean(np.abs(release.answers - truth))))

    def theirs(seed: int) -> None:
        start = time.process_time()
        estimate = engine.Run(queries, x.astype(np.int64), epsilon, seed)
        theirs_cpu.append(time.process_time() - start)
        theirs_err.append(float(np.mean(np.abs(workload.matvec(np.asarray(estimate)) - truth))))

    sides = [ours] if engine is None else [ours, theirs]
    block = 1 if interleave else BLOCK
    for first in range(0, trials, block):  # both sides sample the machine's load over the same stretch of time
        for side in sides:
            for seed in range(first, min(first + block, trials)):
                side(seed)
    return ours_cpu, ours_err, theirs_cpu, theirs_err


def dpbench_cells(n: int) -> np.ndarray:
    """DPBench's seven histograms laid end to end, cut or repeated to n cells."""
    return np.resize(np.concatenate([np.loadtxt(path, skiprows=1) for path in sorted(DPBENCH.glob("*.csv"))]), n)


def random_ranges(n: int) -> Ranges:
    """The bench's 2000 random ranges [a, b] over n bins (a and b uniform, sorted; ``default_rng(12345)``)."""
    ends = np.sort(np.random.default_rng(WORKLOAD_SEED).integers(0, n, size=(QUERIES, 2)), axis=1)
    return Ranges(n, ends[:, 0], ends[:, 1])


def steady_speed(x: np.ndarray, epsilon: float, trials: int) -> dict[str, tuple[float, float]]:
    """Median (CPU ms, wall ms) per cold run of DAWA on x with the bench's ranges, per path (NumPy and SciPy; the
    compiled kernels), the two taking turns run by run (seed k on both)."""
    workload = random_ranges(x.size)
    times: dict[str, list[tuple[float, float]]] = {"numpy": [], "compiled": []}
    saved = dawa_module._KERNELS
    try:
        for seed in range(-1, trials):  # seed -1: untimed, loads what each path loads
            for path, runs in times.items():
                dawa_module._KERNELS = dawa_module._KernelChoice(always=path == "compiled")
                dawa_module._DEVIATIONS.clear()
                wall, cpu = time.perf_counter(), time.process_time()
                MECHANISMS["dawa"].run(x, workload, epsilon, np.random.default_rng(max(seed, 0)))
                if seed >= 0:
                    runs.append((1000 * (time.process_time() - cpu), 1000 * (time.perf_counter() - wall)))
    finally:
        dawa_module._KERNELS = saved
    return {path: tuple(float(v) for v in np.median(np.array(runs), axis=0)) for path, runs in times.items()}


SWEEP = """
import sys
import time
import numpy as np
from dplens.core.mechanisms import MECHANISMS
from dplens.core.mechanisms import dawa
from dplens.core.queries.workloads import Ranges
x = np.loadtxt(sys.argv[1], skiprows=1)
ends = np.sort(np.random.default_rng(12345).integers(0, x.size, size=(2000, 2)), axis=1)
workload = Ranges(x.size, ends[:, 0], ends[:, 1])
for k in range(int(sys.argv[2])):
    cpu = time.process_time()
    compiled = dawa._KERNELS.compiled(x.size)
    MECHANISMS["dawa"].run(x, workload, 0.1, np.random.default_rng(k))
    print(time.process_time() - cpu, int(compiled))
"""


def sweep(dataset: str, runs: int) -> tuple[list[float], list[bool]]:
    """CPU seconds and path (compiled or not) of each of ``runs`` DAWA runs at ε = 0.1 on a DPBench histogram in one
    fresh interpreter (seed k for run k; the deviations cached after the first, as in a sweep)."""
    done = subprocess.run([sys.executable, "-c", SWEEP, str(DPBENCH / f"{dataset}.csv"), str(runs)],
                          capture_output=True, text=True, check=True, cwd=ROOT)
    rows = [line.split() for line in done.stdout.splitlines()]
    return [float(cpu) for cpu, _ in rows], [compiled == "1" for _, compiled in rows]


def first_run_penalty(tries: int, cells: int = 4096) -> tuple[list[float], list[float]]:
    """First minus second run of dplens's DAWA on ``cells`` cells in fresh interpreters: (wall s, CPU s) per try."""
    walls, cpus = [], []
    for _ in range(tries):
        done = subprocess.run([sys.executable, "-c", FIRST_RUN, str(cells)], capture_output=True, text=True,
                              check=True, cwd=ROOT)
        wall, cpu = (float(v) for v in done.stdout.split())
        walls.append(wall)
        cpus.append(cpu)
    return walls, cpus


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=30)
    parser.add_argument("--datasets", default="ADULTFRANK,HEPTH,INCOME,MEDCOST,NETTRACE,PATENT,SEARCHLOGS")
    parser.add_argument("--epsilons", default="0.1,1")
    parser.add_argument("--first-run-tries", type=int, default=5)
    parser.add_argument("--first-run-cells", default="64,4096", help="histogram sizes of the first-run penalty")
    parser.add_argument("--interleave", action="store_true", help="alternate the two sides run by run")
    parser.add_argument("--sizes", default="512,4096,16384,65536", help="cells of the rows on DPBench end to end")
    parser.add_argument("--size-trials", type=int, default=15, help="runs a path in the rows of the two paths")
    parser.add_argument("--sweep-runs", type=int, default=300, help="runs of the one-process sweep (0 skips)")
    args = parser.parse_args()
    require(DPBENCH)
    workload = random_ranges(N)
    ends = np.stack((workload.lo, workload.hi), axis=1)
    peer, reason = load_peer()
    queries = engine = None
    if peer is None:
        print(f"dpcomp_core columns skipped: {reason}")
    else:
        dawa, union, peer_workload = peer
        queries = peer_workload.Workload([union.ndRangeUnion().add1DRange(int(a), int(b)) for a, b in ends], (N,))
        engine = dawa.dawa_engine(ratio=RATIO)
    mechanism = MECHANISMS["dawa"]
    # the cells time the compiled kernels, which a process runs once its NumPy partitions have cost
    # dawa.NUMPY_SECONDS of CPU (the steady-speed rows time both paths)
    dawa_module._KERNELS = dawa_module._KernelChoice(always=True)
    mechanism.run(np.ones(N), workload, 1.0, np.random.default_rng(0))  # imports and kernels loaded, untimed
    order = "alternating run by run" if args.interleave else f"alternating blocks of {BLOCK} runs"
    print(f"DAWA (ratio {RATIO}), {QUERIES} random ranges over {N} bins, {args.trials} cold runs a side per cell "
          f"({order}), CPU ms per run (median), mean absolute error per query (mean ± standard error)\n")
    print("| dataset | ε | dplens ms | dpcomp_core ms | time ratio | dplens error | dpcomp_core error | error ratio |")
    print("|---|---|---|---|---|---|---|---|")
    with Recorder("bench_dawa_peer", args) as rec:
        for dataset in (name for name in args.datasets.split(",") if name):  # '' skips the peer cells
            x = np.loadtxt(DPBENCH / f"{dataset}.csv", skiprows=1)
            for epsilon in (float(e) for e in args.epsilons.split(",")):
                ours_cpu, ours_err, theirs_cpu, theirs_err = time_cell(mechanism, engine, queries, workload, x,
                                                                       epsilon, args.trials, args.interleave)
                ours_ms = 1000 * float(np.median(ours_cpu))
                mean, se = mean_se(ours_err)
                row = {"dataset": dataset, "epsilon": epsilon, "trials": args.trials,
                       "order": "interleaved" if args.interleave else "blocks", "dplens_cpu_ms": ours_ms,
                       "dplens_mae": mean, "dplens_se": se}
                peer_ms = ratio = peer_text = error_text = ""
                if engine is not None:
                    theirs_ms = 1000 * float(np.median(theirs_cpu))
                    peer_mean, peer_se = mean_se(theirs_err)
                    agree = abs(mean - peer_mean) <= 2 * np.hypot(se, peer_se)
                    row.update(dpcomp_cpu_ms=theirs_ms, time_ratio=theirs_ms / ours_ms, dpcomp_mae=peer_mean,
                               dpcomp_se=peer_se, error_ratio=mean / peer_mean, errors_agree=bool(agree),
                               meets_target=theirs_ms / ours_ms >= TARGET)
                    peer_ms, ratio = f"{theirs_ms:.1f}", f"{theirs_ms / ours_ms:.1f}x"
                    peer_text = f"{peer_mean:.4g} ± {peer_se:.2g}"
                    error_text = f"{mean / peer_mean:.3f}" + ("" if agree else " (differ)")
                rec.row(name=f"dawa, {dataset}, ε={epsilon:g}", **row)
                print(f"| {dataset} | {epsilon:g} | {ours_ms:.2f} | {peer_ms} | {ratio} | {mean:.4g} ± {se:.2g} | "
                      f"{peer_text} | {error_text} |", flush=True)
        cases = [(dataset, np.loadtxt(DPBENCH / f"{dataset}.csv", skiprows=1), float(epsilon))
                 for dataset in args.datasets.split(",") if dataset for epsilon in args.epsilons.split(",")]
        cases += [(f"DPBench end to end, {n} cells", dpbench_cells(n), 0.1) for n in (int(c) for c in
                                                                                   args.sizes.split(",") if c)]
        if cases:
            print(f"\nthe two paths of a process: NumPy and SciPy (its partitions until they have cost "
                  f"dawa.NUMPY_SECONDS = {dawa_module.NUMPY_SECONDS} s of CPU) and compiled (after), "
                  f"{args.size_trials} cold runs a path taking turns, median ms per run\n")
            print("| data | cells | ε | NumPy CPU | NumPy wall | compiled CPU | compiled wall | NumPy / compiled (CPU) "
                  "|")
            print("|---|---|---|---|---|---|---|---|")
        for label, x, epsilon in cases:
            speed = steady_speed(x, epsilon, args.size_trials)
            (numpy_cpu, numpy_wall), (compiled_cpu, compiled_wall) = speed["numpy"], speed["compiled"]
            rec.row(name=f"dawa paths, {label}, ε={epsilon:g}", cells=x.size, epsilon=epsilon,
                    trials=args.size_trials, numpy_cpu_ms=numpy_cpu, numpy_wall_ms=numpy_wall,
                    compiled_cpu_ms=compiled_cpu, compiled_wall_ms=compiled_wall)
            print(f"| {label.split(',')[0]} | {x.size} | {epsilon:g} | {numpy_cpu:.2f} | {numpy_wall:.2f} | "
                  f"{compiled_cpu:.2f} | {compiled_wall:.2f} | {numpy_cpu / compiled_cpu:.2f} |", flush=True)
        if args.sweep_runs:
            dataset = (args.datasets.split(",") + ["NETTRACE"])[0] or "NETTRACE"
            cpus, compiled = sweep(dataset, args.sweep_runs)
            numpy_runs = compiled.index(True) if any(compiled) else len(compiled)
            switch = cpus[numpy_runs] if numpy_runs < len(cpus) else float("nan")
            after = cpus[numpy_runs + 1:]
            rec.row(name=f"dawa sweep, {dataset}", runs=len(cpus), numpy_runs=numpy_runs,
                    numpy_cpu_ms_median=1000 * float(np.median(cpus[1:numpy_runs] or [np.nan])),
                    switch_cpu_s=switch, compiled_cpu_ms_median=1000 * float(np.median(after or [np.nan])),
                    total_cpu_s=float(sum(cpus)), cpu_s=cpus)
            print(f"\na sweep of {len(cpus)} runs on {dataset} at ε = 0.1 in a fresh interpreter (CPU): first run "
                  f"{1000 * cpus[0]:.1f} ms; runs 2-{numpy_runs} on NumPy, median "
                  f"{1000 * float(np.median(cpus[1:numpy_runs] or [np.nan])):.2f} ms; run {numpy_runs + 1} loads the "
                  f"kernels: {switch:.3f} s; the {len(after)} after, compiled, median "
                  f"{1000 * float(np.median(after or [np.nan])):.2f} ms; total {sum(cpus):.2f} s")
        for cells in (int(c) for c in args.first_run_cells.split(",") if args.first_run_tries):
            walls, cpus = first_run_penalty(args.first_run_tries, cells)
            rec.row(name=f"dawa first-run penalty, {cells} cells", cells=cells, tries=len(walls),
                    wall_s_median=float(np.median(walls)), cpu_s_median=float(np.median(cpus)), wall_s=walls,
                    cpu_s=cpus)
            print(f"\nfirst-run penalty at {cells} cells (fresh interpreter, first minus second run, {len(walls)} "
                  f"tries): median {np.median(walls):.3f} s wall, {np.median(cpus):.3f} s CPU "
                  f"(max {max(walls):.3f} s wall, {max(cpus):.3f} s CPU)")
    print(json.dumps({"load_end": os.getloadavg()}))


if __name__ == "__main__":
    main()
