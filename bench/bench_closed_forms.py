"""hb's and privelet's expected error: the closed forms against the estimator pushed through noise (the old path).

Run: .venv/bin/python bench/bench_closed_forms.py [--old-max N]
For n = 4,096, 16,384 and 65,536 cells (AllRange only at 4,096: larger ones exceed MAX_QUERIES), the unit-noise
energy Σ_k ‖W l_k‖² behind ``expected_mse`` on Identity, Prefix and AllRange, timed (wall and CPU seconds) by
``closed_energy`` and by the old path ``_energy`` side by side, with their relative difference. The old path is
quadratic in n, so it runs only up to --old-max cells (default 16,384; 65,536 takes minutes per workload).
The tree is built once beforehand (both paths share it). Timings on a shared, loaded machine are noisy.
"""

from __future__ import annotations

import argparse
import sys
import time
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from results import Recorder  # noqa: E402

from dplens.core.mechanisms import hierarchical, privelet  # noqa: E402
from dplens.core.mechanisms.hierarchical import Hierarchical, build_tree  # noqa: E402
from dplens.core.queries.workloads import AllRange, Identity, Prefix  # noqa: E402

SIZES = (4_096, 16_384, 65_536)


def timed(compute) -> tuple[float, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    value = compute()
    return value, time.perf_counter() - wall, time.process_time() - cpu


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old-max", type=int, default=16_384, help="largest n timed on the old path")
    args = parser.parse_args(argv)
    print(f"{'mechanism':<9} {'workload':<18} {'new wall s':>10} {'new cpu s':>10} {'old wall s':>10} "
          f"{'old cpu s':>10} {'rel diff':>9}")
    with Recorder("bench_closed_forms", vars(args)) as rec:
        for n in SIZES:
            workloads = [Identity(n), Prefix(n)] + ([AllRange(n)] if n <= 4_096 else [])
            tree = build_tree(*Hierarchical()._tree_args((n,)))  # hb's default (Qardaji's branching, no root)
            paths = {"hb": (partial(hierarchical.closed_energy, tree), partial(hierarchical._energy, tree)),
                     "privelet": (partial(privelet.closed_energy, (1, n)), partial(privelet._energy, (1, n)))}
            for name, (new, old) in paths.items():
                for workload in workloads:
                    value, wall, cpu = timed(partial(new, workload))
                    row = dict(mechanism=name, workload=repr(workload), n=n, new_wall_s=wall, new_cpu_s=cpu)
                    shown = ["-"] * 3
                    if n <= args.old_max:
                        reference, old_wall, old_cpu = timed(partial(old, workload))
                        row.update(old_wall_s=old_wall, old_cpu_s=old_cpu,
                                   relative_difference=abs(value - reference) / reference)
                        shown = [f"{old_wall:.3f}", f"{old_cpu:.3f}", f"{row['relative_difference']:.1e}"]
                    rec.row(**row)
                    print(f"{name:<9} {repr(workload):<18} {wall:>10.4f} {cpu:>10.4f} {shown[0]:>10} {shown[1]:>10} "
                          f"{shown[2]:>9}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
