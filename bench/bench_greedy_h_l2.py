"""gaussian-greedy-h: the tree's weights chosen for L2 (Gaussian) against the L1 (Laplace) weights it used.

Run: .venv/bin/python bench/bench_greedy_h_l2.py
Per-query RMSE at unit-variance noise per unit of Δ₂, √(Δ₂² tr(WᵀW (AᵀA)⁻¹) / m), of Greedy-H's tree
(branching 2, granularity 100) with the L1-normalised weights of Li et al. 2014 and with the
L2-normalised ones (``greedy_hierarchy(norm=2)``, squared weights summing to 1 on every root path),
with the time to build the L2 tree (CPU next to wall; the machine is shared, timings are noisy).
HDMM's H2 at n = 256 (oned.csv): all-range 3.8354, prefix 3.1022.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
from results import Recorder  # noqa: E402

from dplens.core.mechanisms.greedy_h import bucket_gram, greedy_hierarchy, l2_objective  # noqa: E402
from dplens.core.queries.workloads import parse_workload  # noqa: E402


def main() -> None:
    with Recorder("bench_greedy_h_l2") as rec:
        run(rec)


def run(rec: Recorder) -> None:
    print(f"{'n':>5} {'workload':12} {'L1 weights':>10} {'L2 weights':>10} {'ratio':>6} {'CPU s':>6} {'wall s':>6}")
    for n in (64, 256, 1024, 2048):
        for spec in ("prefix", "all-range", "random-range", "identity"):
            workload = parse_workload(spec, (n,), np.random.default_rng(0))
            gram = bucket_gram(workload, np.arange(n + 1))[0]
            m = workload.shape[0]
            old = math.sqrt(l2_objective(greedy_hierarchy(gram, 2, 100)) / m)
            cpu, wall = time.process_time(), time.perf_counter()
            new = math.sqrt(l2_objective(greedy_hierarchy(gram, 2, 100, norm=2)) / m)
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            print(f"{n:>5} {spec:12} {old:>10.4f} {new:>10.4f} {new / old:>6.3f} {cpu:>6.2f} {wall:>6.2f}")
            rec.row(name=f"{spec}, n={n}", n=n, l1_weights_rmse=old, l2_weights_rmse=new, ratio=new / old,
                    cpu_s=cpu, wall_s=wall)


if __name__ == "__main__":
    main()
