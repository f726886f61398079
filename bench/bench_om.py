"""OM decomposition time (the OM paper reports ~300 s at n = 1000) and WDA division time.

Run: .venv/bin/python bench/bench_om.py
(on a busy shared machine, OPENBLAS_NUM_THREADS=1 avoids BLAS thread contention: measured 2.7 s instead of
11 s at (1000, 4096) with load average 8.7 on 2 cores; (200, 1000) took 0.09–0.10 s.)
Prints seconds per OM decomposition of a random τ-workload at (m, n) = (200, 1000) and (1000, 4096),
the ratio to the paper's 300 s, the interval fast path on 2000 random ranges, and the WDA division time on the hot-spot
workload (m = 2000, n = 4096).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from results import Recorder  # noqa: E402

from dplens.core.mechanisms.om import factorise  # noqa: E402
from dplens.core.mechanisms.wda import divide  # noqa: E402
from dplens.core.queries.workloads import hot_spot, random_linear, random_range  # noqa: E402

PAPER_SECONDS = 300.0  # OM paper, n = 1000 (Intel Xeon E7 2.0 GHz)


def seconds(function, repeats: int = 3) -> float:
    """Best wall time of ``function()`` over ``repeats`` (uncached: factorise and divide)."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    with Recorder("bench_om") as rec:
        run(rec)


def run(rec: Recorder) -> None:
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (timings are wall clock)")
    print("OM decomposition (random τ-workload, exact factorisation check included)")
    for m, n in ((200, 1000), (1000, 4096)):
        for tau in (0.2, 0.8):
            t = seconds(lambda m=m, n=n, tau=tau: factorise(random_linear(n, m, tau, seed=1)),
                        repeats=3 if n <= 1000 else 1)
            print(f"  m={m:5d} n={n:5d} tau={tau:.1f}: {t:7.3f} s   paper/ours = {PAPER_SECONDS / t:8.0f}x")
            rec.row(name=f"OM factorise, m={m}, n={n}, τ={tau:.1f}", wall_s=t, paper_s=PAPER_SECONDS,
                    paper_ratio=PAPER_SECONDS / t)
    t = seconds(lambda: factorise(random_range(4096, 2000, seed=1)))
    print(f"  interval fast path, random-range m=2000 n=4096: {t:7.3f} s")
    rec.row(name="OM factorise, interval fast path, random-range m=2000, n=4096", wall_s=t)
    print("WDA division (hot-spot workload, m = 2000, n = 4096)")
    for p in (0.2, 0.9):
        t = seconds(lambda p=p: divide(hot_spot(4096, 2000, p, seed=1)))
        print(f"  p={p:.1f}: {t:7.3f} s")
        rec.row(name=f"WDA divide, hot-spot m=2000, n=4096, p={p:.1f}", wall_s=t)


if __name__ == "__main__":
    main()
