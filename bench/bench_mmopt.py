"""mm-opt (HDMM's OPT0 p-Identity strategy) side by side with HDMM's own OPT0, with an earlier dplens, and beyond 2048
cells.

Run: .venv/bin/python bench/bench_mmopt.py [--sizes 256,512,1024,2048,4096,16384] [--workloads all-range,prefix]
     [--repeats 2] [--hdmm-max 2048] [--settings-check 2048,4096] [--before REV]

Each optimisation runs in a fresh subprocess with one BLAS thread (OMP/OPENBLAS/MKL_NUM_THREADS=1 set
before NumPy is imported), the sides interleaved (ours, before, HDMM, ours, … ``--repeats`` rounds); the table shows
the lowest CPU seconds (time.process_time) of each side's optimisation with its wall seconds, and the CPU and wall
seconds of ours's whole worker process tree (``results.run_sampled``: imports and numba's cached kernels included).
Ours goes through the public API: ``parse_workload(name, (n,))`` and ``MatrixMechanism().expected_mse``, whose
strategy (cached) is then read; all-range at 8192 and 16,384 cells (up to 134,225,920 queries) is the implicit
operator, never listed. HDMM's OPT0 is ``templates.PIdentity(n // 16, n, seed=0).optimize(W)`` from ``$HDMM_SRC``
(the ``src`` folder of a clone of dpcomp-org/hdmm; no default); without it the HDMM columns are skipped. It is run,
never copied.

``--before REV``: the same worker on dplens's ``src`` at git revision REV (``git archive``, first on PYTHONPATH),
e.g. the commit before a speed change; the row gives its CPU, the speed-up and whether its strategy's trace is
ours bit for bit (``same_trace``). Its all-range past MAX_QUERIES is built around the guard that revision had at
construction (mm-opt reads only the Gram).

Per-query RMSE at ε = √2 (pure DP, Laplace, Δ_A = 1 since every column of [I; Θ] D⁻¹ has L1 norm 1):
√(2·tr(WᵀW (AᵀA)⁻¹)/(m ε²)) = √(tr/m), computed by the same exact formula (``matrix._objective``, the
trace checked against a dense oracle in tests/test_matrix.py) on both sides' Θ, so the comparison is fair.

``--settings-check``: at these sizes mm-opt also runs with the settings it uses above 2048 cells
(p = ``matrix.auto_p(n, large=True)``, ``matrix.settings`` above LARGE_CELLS: LARGE_ITERATIONS) and with the full ones
(p = n/16 without a cap, the iteration cap and tighter stop of 1024 < n ≤ 2048) and prints the ratio of their
RMSEs, to show what the cheaper settings cost in error. ``--sizes ""`` runs only this check.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def _workload(name: str, n: int):
    """The workload through the public parser; an earlier dplens (``--before``) refused all-range past MAX_QUERIES at
    construction, so there it is built around that guard (mm-opt reads only its Gram, never its answers)."""
    from dplens.core.queries.workloads import AllRange, parse_workload

    try:
        return parse_workload(name, (n,))
    except ValueError:
        if name != "all-range":
            raise
        workload = object.__new__(AllRange)
        object.__setattr__(workload, "n", n)
        return workload


def worker(side: str, name: str, n: int, settings: str, out: str) -> None:
    """One optimisation in this (fresh, single-threaded) process; Θ to ``out``, seconds to stdout."""
    import time

    import numpy as np

    if side == "hdmm":
        sys.path.insert(0, os.environ["HDMM_SRC"])  # main() starts this worker only when HDMM_SRC is set
        from hdmm import templates
        from hdmm import workload as hdmm_workload

        trace = None  # HDMM's Θ is scored by rmse() below
        w = hdmm_workload.AllRange(n) if name == "all-range" else hdmm_workload.Prefix(n)
        template = templates.PIdentity(n // 16, n, seed=0)
        wall, cpu = time.perf_counter(), time.process_time()
        template.optimize(w)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        theta = np.maximum(0.0, template._params).reshape(n // 16, n)
    else:  # ours, or an earlier dplens first on PYTHONPATH (``--before``)
        from dplens.core.mechanisms import matrix

        workload = _workload(name, n)
        by_size = matrix.settings
        if settings == "cheap":  # the settings mm-opt uses above LARGE_CELLS, forced at this size
            matrix.settings = lambda cells, p: by_size(matrix.LARGE_CELLS + 1, p)
            mechanism = matrix.MatrixMechanism(p=matrix.auto_p(n, large=True))
        elif settings == "full":  # p = n/16 without a cap, the settings of 1024 < n ≤ LARGE_CELLS (tighter stop)
            matrix.settings = lambda cells, p: by_size(matrix.LARGE_CELLS, p)
            mechanism = matrix.MatrixMechanism(p=max(1, n // 16))
        else:
            mechanism = matrix.MatrixMechanism()
        wall, cpu = time.perf_counter(), time.process_time()
        mechanism.expected_mse(workload, 1.0)  # the public path: the strategy is optimised (and cached) here
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        strategy = mechanism.strategy(workload)
        theta, trace = strategy.theta, strategy.trace
    np.save(out, theta)
    print(json.dumps({"cpu_s": cpu, "wall_s": wall, "trace": trace}))


def spawn(side: str, name: str, n: int, settings: str = "auto", before_src: str | None = None) -> dict | None:
    """Run ``worker`` in a fresh subprocess with one BLAS thread, its process tree sampled (``results.run_sampled``);
    its seconds, the tree's CPU, wall and peak RSS, and Θ (None if it failed). ``before_src``: an earlier dplens's
    ``src`` folder, put first on PYTHONPATH."""
    import numpy as np
    from results import run_sampled

    env = dict(os.environ, **{variable: "1" for variable in THREAD_VARIABLES})
    if before_src:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, (before_src, env.get("PYTHONPATH"))))
    with tempfile.TemporaryDirectory() as folder:
        out = str(Path(folder) / "theta.npy")
        done = run_sampled([sys.executable, __file__, "--worker", side, "--workloads", name, "--sizes", str(n),
                            "--settings", settings, "--out", out], env=env, cwd=ROOT)
        if done.returncode != 0:
            print(f"  {side} failed at {name} n={n}: {done.stderr.strip().splitlines()[-1:]}", flush=True)
            return None
        result = json.loads(done.stdout.strip().splitlines()[-1])
        result.update(tree_cpu_s=done.cpu_s, tree_wall_s=done.wall_s, peak_rss_mb=done.peak_rss / 2**20)
        result["theta"] = np.load(out)
    return result


def earlier_source(revision: str, folder: str) -> str:
    """dplens's ``src`` at git ``revision``, extracted into ``folder``; the path of its ``src``."""
    archive = subprocess.run(["git", "archive", revision, "src"], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", folder], input=archive, check=True)
    return str(Path(folder) / "src")


def rmse(name: str, n: int, theta) -> float:
    """Per-query RMSE at ε = √2 of the p-Identity strategy Θ: √(tr(WᵀW (AᵀA)⁻¹)/m), Δ_A = 1."""
    import numpy as np

    from dplens.core.mechanisms.matrix import _objective

    workload = _workload(name, n)
    trace, _ = _objective(np.ascontiguousarray(theta, dtype=float).ravel(), theta.shape[0], workload,
                          workload.column_norms(2) ** 2)
    return float(np.sqrt(2.0 * trace / (workload.shape[0] * 2.0)))


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="256,512,1024,2048,4096,16384")
    parser.add_argument("--workloads", default="all-range,prefix")
    parser.add_argument("--repeats", type=int, default=2, help="interleaved runs per side and cell")
    parser.add_argument("--hdmm-max", type=int, default=2048, help="largest n HDMM runs at (812 s at 4096)")
    parser.add_argument("--settings-check", default="2048,4096", help="sizes for the cheap vs full settings rows")
    parser.add_argument("--before", default="", help="git revision of an earlier dplens to run beside ours")
    parser.add_argument("--worker", choices=("ours", "before", "hdmm"), help=argparse.SUPPRESS)
    parser.add_argument("--settings", default="auto", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.worker, args.workloads, int(args.sizes), args.settings, args.out)
        return
    sys.path.insert(0, str(BENCH))
    sys.path.insert(0, str(ROOT))
    from results import Recorder

    hdmm_src = os.environ.get("HDMM_SRC", "")
    have_hdmm = bool(hdmm_src) and (Path(hdmm_src) / "hdmm" / "templates.py").exists()
    if not have_hdmm:
        print(f"HDMM not found (HDMM_SRC={hdmm_src!r}; set it to the src folder of a clone of dpcomp-org/hdmm): "
              "the HDMM columns are skipped")
    with Recorder("bench_mmopt", args) as recorder, tempfile.TemporaryDirectory() as folder:
        before_src = earlier_source(args.before, folder) if args.before else None
        print(f"{'n':>6s} {'workload':10s} {'p':>4s} {'CPU s':>7s} {'wall s':>7s} {'tree CPU':>8s} {'tree wall':>9s} "
              f"{'before':>7s} {'same':>5s} {'HDMM CPU':>9s} {'HDMM wall':>9s} {'speed-up':>8s} {'RMSE':>8s} "
              f"{'HDMM RMSE':>9s} {'ratio':>7s}", flush=True)
        for n in (int(s) for s in args.sizes.split(",") if s):
            for name in args.workloads.split(","):
                ours, earlier, theirs = [], [], []
                for _ in range(args.repeats):
                    ours.append(spawn("ours", name, n))
                    if before_src:
                        earlier.append(spawn("before", name, n, before_src=before_src))
                    if have_hdmm and n <= args.hdmm_max:
                        theirs.append(spawn("hdmm", name, n))
                ours = [r for r in ours if r]
                earlier = [r for r in earlier if r]
                theirs = [r for r in theirs if r]
                if not ours:
                    continue
                mine = min(ours, key=lambda r: r["cpu_s"])
                error = rmse(name, n, mine["theta"])
                row = {"name": f"{name}, n={n}", "n": n, "workload": name, "p": int(mine["theta"].shape[0]),
                       "cpu_s": mine["cpu_s"], "wall_s": mine["wall_s"], "cpu_s_runs": [r["cpu_s"] for r in ours],
                       "tree_cpu_s": mine["tree_cpu_s"], "tree_wall_s": mine["tree_wall_s"],
                       "peak_rss_mb": mine["peak_rss_mb"], "trace": mine["trace"], "rmse": error}
                text = (f"{n:6d} {name:10s} {row['p']:4d} {mine['cpu_s']:7.2f} {mine['wall_s']:7.2f} "
                        f"{mine['tree_cpu_s']:8.2f} {mine['tree_wall_s']:9.2f}")
                if earlier:
                    old = min(earlier, key=lambda r: r["cpu_s"])
                    row.update(before=args.before, before_cpu_s=old["cpu_s"], before_wall_s=old["wall_s"],
                               before_cpu_s_runs=[r["cpu_s"] for r in earlier], before_tree_cpu_s=old["tree_cpu_s"],
                               before_tree_wall_s=old["tree_wall_s"], before_trace=old["trace"],
                               same_trace=old["trace"] == mine["trace"],
                               trace_relative_difference=abs(old["trace"] - mine["trace"]) / old["trace"],
                               speedup_vs_before=old["cpu_s"] / mine["cpu_s"])
                    text += f" {old['cpu_s']:7.2f} {str(row['same_trace']):>5s}"
                else:
                    text += f" {'-':>7s} {'-':>5s}"
                if theirs:
                    best = min(theirs, key=lambda r: r["cpu_s"])
                    reference = rmse(name, n, best["theta"])
                    row.update(hdmm_cpu_s=best["cpu_s"], hdmm_wall_s=best["wall_s"],
                               hdmm_cpu_s_runs=[r["cpu_s"] for r in theirs], speedup=best["cpu_s"] / mine["cpu_s"],
                               hdmm_rmse=reference, ratio=error / reference)
                    text += (f" {best['cpu_s']:9.2f} {best['wall_s']:9.2f} {row['speedup']:7.1f}x {error:8.3f} "
                             f"{reference:9.3f} {row['ratio']:7.4f}")
                else:
                    text += f" {'-':>9s} {'-':>9s} {'-':>8s} {error:8.3f} {'-':>9s} {'-':>7s}"
                print(text, flush=True)
                recorder.row(**row)
        checks = [int(s) for s in args.settings_check.split(",") if s]
        if checks:
            print(f"\n{'n':>6s} {'workload':10s} {'cheap p':>7s} {'CPU s':>7s} {'RMSE':>8s} {'full p':>6s} "
                  f"{'CPU s':>7s} "
                  f"{'RMSE':>8s} {'ratio':>7s}", flush=True)
        for n in checks:
            for name in args.workloads.split(","):
                cheap, full = spawn("ours", name, n, "cheap"), spawn("ours", name, n, "full")
                if not (cheap and full):
                    continue
                low, high = rmse(name, n, cheap["theta"]), rmse(name, n, full["theta"])
                print(f"{n:6d} {name:10s} {cheap['theta'].shape[0]:7d} {cheap['cpu_s']:7.2f} {low:8.3f} "
                      f"{full['theta'].shape[0]:6d} {full['cpu_s']:7.2f} {high:8.3f} {low / high:7.4f}", flush=True)
                recorder.row(name=f"{name}, n={n}, cheap vs full settings", n=n, workload=name,
                             p=int(cheap["theta"].shape[0]), cpu_s=cheap["cpu_s"], rmse=low,
                             full_p=int(full["theta"].shape[0]), full_cpu_s=full["cpu_s"], full_rmse=high,
                             ratio_to_full=low / high)


if __name__ == "__main__":
    main(sys.argv[1:])
