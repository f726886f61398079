"""The whole secure release command at scale: peak memory over its process tree and CPU of ``dplens release
--mechanism identity`` on 10^6 cells, export included, beside OpenDP's own sampler on the same values.

Run: nice .venv/bin/python bench/bench_release_memory.py [--n 1000000] [--cases cli-release-identity,...] [--profile]

The cases are ``bench_secure_stream``'s, measured by its own functions (``measured_child``: a fresh interpreter per
case, its process tree's RSS and PSS sampled by psutil every 10 ms, the tree's CPU):

* ``cli-release-identity``: ``dplens release --mechanism identity --output out.json`` on an NPY file of n integer
  counts: the command's whole life (load, the kernel's worker drawing OpenDP's discrete Laplace, intervals, the
  signed JSON export written to disk). The worker is forked straight from the command
  (``dplens.core.analysis.bounded.fork_directly``), so the tree is two processes at its peak;
* ``cli-release-identity-fork-server``: the same command with its worker started by the fork server, as the app
  starts it (and the command did before ``fork_directly``): three processes, the server holding its own NumPy and
  OpenDP. Run beside the first, it shows what forking directly saves in one run;
* ``opendp-integer-laplace``: OpenDP's discrete Laplace measurement called once on the n counts, the sampler's own
  cost per cell (what the command's noise is).

``--profile`` runs the same command in this process under ``tracemalloc`` instead and prints, per step (load,
release, export keys, intervals, export), the Python heap the step left behind and its peak above what was live
when it started: where the memory goes (the worker's own heap is in the process tree figure, not here).

Targets: peak ≤ 600 MB over the process tree at 10^6 cells; CPU per cell within 1.2× OpenDP's own sampler (the
command's CPU includes its start-up, load and export, so compare the release step too: ``bench_secure_stream``).
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_secure_stream import command, measured_child  # noqa: E402
from results import Recorder, run_sampled  # noqa: E402

CASES = ("cli-release-identity", "cli-release-identity-fork-server", "opendp-integer-laplace")
# The command with fork_directly made a no-op, run as a script so that the fork server preloads it as __main__ the
# way it preloads the `dplens` console script.
THROUGH_FORK_SERVER = '''import contextlib
import sys

from dplens import cli

if __name__ == "__main__":
    cli.fork_directly = contextlib.nullcontext
    sys.exit(cli.main(sys.argv[1:]))
'''
TARGET_PEAK_MB = 600.0
TARGET_CPU_RATIO = 1.2


def profile(n: int) -> list[dict]:
    """The release command run in this process with tracemalloc: per step, MB left allocated and peak MB above start."""
    import dplens.core.release.export as export
    import dplens.core.release.kernel as kernel
    from dplens import cli

    steps: list[dict] = []

    def traced(name: str, function: Callable) -> Callable:
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            before, _ = tracemalloc.get_traced_memory()
            tracemalloc.reset_peak()
            wall, cpu = time.perf_counter(), time.process_time()
            out = function(*args, **kwargs)
            after, peak = tracemalloc.get_traced_memory()
            steps.append({"name": name, "wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu,
                          "kept_mb": (after - before) / 2**20, "peak_above_start_mb": (peak - before) / 2**20})
            return out
        return wrapper

    patches = [(cli, "_load_input", "load"), (kernel, "release_histogram", "release (kernel, worker)"),
               (export.ExportKeys, "for_release", "export keys"), (kernel, "export_intervals", "intervals"),
               (kernel, "release_to_json", "JSON text (signed)"), (kernel, "release_to_csv", "CSV text"),
               (kernel, "write_release_json", "JSON written (signed)"), (kernel, "write_release_csv", "CSV written")]
    patches = [(owner, attr, name) for owner, attr, name in patches if attr in owner.__dict__]  # as this tree has
    originals = [(owner, attr, owner.__dict__[attr]) for owner, attr, _ in patches]
    for owner, attr, name in patches:
        value = owner.__dict__[attr]
        if isinstance(value, classmethod):
            setattr(owner, attr, classmethod(traced(name, value.__func__)))
        else:
            setattr(owner, attr, traced(name, value))
    try:
        with tempfile.TemporaryDirectory() as folder:
            argv = command("cli-release-identity", n, Path(folder))[1:]
            os.register_at_fork(after_in_child=tracemalloc.stop)  # the worker forked from here runs untraced
            tracemalloc.start()
            wall = time.perf_counter()
            code = cli.main(argv)
            total = {"name": "whole command", "wall_s": time.perf_counter() - wall, "cpu_s": float("nan"),
                     "kept_mb": float("nan"), "peak_above_start_mb": tracemalloc.get_traced_memory()[1] / 2**20}
            tracemalloc.stop()
            if code != 0:
                raise SystemExit(f"dplens release exited {code}")
    finally:
        for owner, attr, value in originals:
            setattr(owner, attr, value)
    return [*steps, total]


def measured_through_fork_server(n: int) -> dict:
    """``cli-release-identity`` with the bounded worker started by the fork server, sampled like ``measured_child``."""
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "release_through_fork_server.py"
        script.write_text(THROUGH_FORK_SERVER)
        argv = [sys.executable, str(script), *command("cli-release-identity", n, Path(folder))[1:]]
        run = run_sampled(argv, cwd=folder, every=0.01)
    if run.returncode != 0:
        return {"error": f"exit {run.returncode}: {(run.stderr.strip().splitlines() or ['no output'])[-1][:160]}"}
    return {"wall_s": run.wall_s, "cpu_s": run.cpu_s, "peak_tree_mb": run.peak_rss / 2**20,
            "peak_tree_pss_mb": run.peak_pss / 2**20}


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10**6)
    parser.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, of {', '.join(CASES)}")
    parser.add_argument("--profile", action="store_true", help="tracemalloc per step, in this process")
    args = parser.parse_args(argv)
    if args.profile:
        print(f"n = {args.n:,} cells: Python heap per step of `dplens release --mechanism identity` (tracemalloc)")
        print(f"{'step':26s} {'wall s':>7s} {'CPU s':>7s} {'kept MB':>8s} {'peak MB':>8s}")
        for step in profile(args.n):
            print(f"{step['name']:26s} {step['wall_s']:7.2f} {step['cpu_s']:7.2f} {step['kept_mb']:8.1f} "
                  f"{step['peak_above_start_mb']:8.1f}", flush=True)
        return
    cases = [c for c in args.cases.split(",") if c]
    unknown = sorted(set(cases) - set(CASES))
    if unknown:
        parser.error(f"unknown cases {unknown}; choose from {', '.join(CASES)}")
    print(f"n = {args.n:,} cells, one fresh interpreter per case (target: peak ≤ {TARGET_PEAK_MB:g} MB)")
    print(f"{'case':32s} {'wall s':>7s} {'CPU s':>7s} {'µs/cell':>8s} {'peak MB':>8s} {'PSS MB':>7s}")
    with Recorder("bench_release_memory", args) as rec:
        for case in cases:
            fork_server = case == "cli-release-identity-fork-server"
            r = measured_through_fork_server(args.n) if fork_server else measured_child(case, args.n)
            if "error" in r:
                print(f"{case:32s} {r['error']}")
                rec.row(name=case, n=args.n, error=r["error"])
                continue
            per_cell = 1e6 * r["cpu_s"] / args.n
            print(f"{case:32s} {r['wall_s']:7.2f} {r['cpu_s']:7.2f} {per_cell:8.2f} {r['peak_tree_mb']:8.0f} "
                  f"{r['peak_tree_pss_mb']:7.0f}", flush=True)
            rec.row(name=case, n=args.n, wall_s=r["wall_s"], cpu_s=r["cpu_s"], cpu_us_per_cell=per_cell,
                    peak_tree_mb=r["peak_tree_mb"], peak_tree_pss_mb=r["peak_tree_pss_mb"],
                    within_peak_target=bool(r["peak_tree_mb"] <= TARGET_PEAK_MB))


if __name__ == "__main__":
    main(sys.argv[1:])
