"""A 256 × 256 grid through the release kernel and the app's default Compare; the caller's memory after each.

Run: .venv/bin/python bench/bench_grid_release.py [--trials 3] [--side 256]

Prints, each with CPU seconds next to wall seconds (the machine is shared):
* Spend and release on the grid (dplens.core.release.kernel.release_histogram, secure path, the Release page's default
  mechanism and the 2-D default workload), goal ≤ 3 s wall;
* the Compare page's default sweep on the grid (its default mechanisms, 10 ε, ``--trials``), goal ≤ 30 s wall;
* this process's resident memory before and after each (a bounded action runs in a worker when its estimate is
  above the in-process threshold, so the caller's memory should come back within 200 MB).
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DPLENS_HOME", tempfile.mkdtemp(prefix="dplens-bench-home-"))  # never the real ledger

from results import Recorder, record  # noqa: E402

from dplens.core.analysis.experiment import DEFAULT_COMPARE_MECHANISMS as DEFAULT_MECHANISMS  # noqa: E402
from dplens.core.analysis.experiment import run_sweep  # noqa: E402
from dplens.core.data.domain import Histogram  # noqa: E402
from dplens.core.privacy.definitions import PureDP  # noqa: E402
from dplens.core.privacy.ledger_store import LedgerStore  # noqa: E402
from dplens.core.queries.workloads import parse_workload  # noqa: E402
from dplens.core.release.kernel import HistogramRequest, release_histogram  # noqa: E402

EPSILONS = tuple(float(f"{e:.4g}") for e in np.geomspace(0.01, 10, 10))
WORKLOAD = "marginals-ranges-2d:m=256,seed=0"  # the app's default 2-D workload (ui.workloads)


def rss_mb() -> float:
    """Current resident memory of this process (Linux /proc), in MB."""
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def timed(what: str, goal: float, action):
    before, wall, cpu = rss_mb(), time.perf_counter(), time.process_time()
    result = action()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    after = rss_mb()
    print(f"{what:<46} wall {wall:7.2f} s  cpu {cpu:7.2f} s  goal {goal:g} s  ratio {wall / goal:5.2f}   "
          f"RSS {before:6.0f} -> {after:6.0f} MB ({after - before:+.0f})")
    record(name=what, wall_s=wall, cpu_s=cpu, goal_s=goal, ratio=wall / goal, rss_before_mb=before, rss_after_mb=after)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--side", type=int, default=256)
    parser.add_argument("--trials", type=int, default=3)
    args = parser.parse_args()
    with Recorder("bench_grid_release", args):
        run(args)


def run(args: argparse.Namespace) -> None:
    rng = np.random.default_rng(0)
    counts = (rng.poisson(3, size=(args.side, args.side))
              * rng.integers(1, 50, size=(args.side, args.side))).astype(float)
    hist = Histogram.from_counts(counts, name=f"grid {args.side}x{args.side}")
    workload = parse_workload(WORKLOAD, hist.domain.shape)
    print(f"grid {args.side} x {args.side} ({hist.domain.size:,} cells, total {hist.total:,.0f}); workload {WORKLOAD} "
          f"({workload.shape[0]:,} queries); load average {os.getloadavg()[0]:.1f}")
    store = LedgerStore(Path(os.environ["DPLENS_HOME"]) / "bench.sqlite3")
    # The first release starts the worker server (NumPy, core and OpenDP preloaded); later ones reuse it.
    for run, mechanism in enumerate(("identity", "identity", "hb", "dawa")):
        request = HistogramRequest(mechanism, {}, PureDP(0.1), workload, WORKLOAD)
        timed(f"spend and release ({mechanism}, secure{', first' if run == 0 else ''})", 3.0,
              lambda r=request, i=run: release_histogram(r, counts, store=store, fingerprint=f"{i:064x}", name="grid"))
    frame = timed(f"default Compare ({len(DEFAULT_MECHANISMS)} mechanisms x 10 eps x {args.trials})", 30.0,
                  lambda: run_sweep(hist, workload, list(DEFAULT_MECHANISMS), EPSILONS, args.trials, seed=0,
                                    scheduler="auto"))
    print(f"  compare rows: {len(frame):,}; mechanisms that ran: {sorted(frame['mechanism'].unique())}")
    print(f"peak RSS of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
