"""Start-up of the command line: ``python -m dplens --help`` (target <= 0.3 s of CPU; 1.2 s before the heavy
imports moved into the command handlers), and ``import dplens.core.mechanisms``, which every worker and command
that runs a mechanism pays (target <= 0.6 s of CPU; 2.4 s under load when it imported pandas and scipy.optimize).

Run: .venv/bin/python bench/bench_cli_start.py [--runs 5]
Prints the mean user CPU, system CPU and wall seconds of ``--help`` over the runs (each a fresh interpreter).
Timings on a shared machine are noisy: user CPU is the steadier figure.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from results import Recorder  # noqa: E402  (bench/results.py: the figures as data)

ROOT = Path(__file__).resolve().parent.parent
TARGET_CPU = 0.3


TARGET_IMPORT_CPU = 0.6
CASES = (("python -m dplens --help", ["-m", "dplens", "--help"], TARGET_CPU),
         ("import dplens.core.mechanisms", ["-c", "import dplens.core.mechanisms"], TARGET_IMPORT_CPU))


def run_once(args: list[str]) -> tuple[float, float, float]:
    """User CPU, system CPU and wall seconds of one ``python ARGS`` (its output discarded)."""
    before = os.times()
    start = time.perf_counter()
    subprocess.run([sys.executable, *args], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = os.times()
    return after.children_user - before.children_user, after.children_system - before.children_system, wall


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    opts = parser.parse_args(argv)
    with Recorder("bench_cli_start", opts) as rec:
        for name, args, target in CASES:
            runs = [run_once(args) for _ in range(opts.runs)]
            user, system, wall = (sum(r[i] for r in runs) / len(runs) for i in range(3))
            met = user + system <= target
            print(f"{name}: {user:.3f} s user CPU, {system:.3f} s sys, {wall:.3f} s wall "
                  f"(mean of {opts.runs}; target <= {target} s CPU: {'met' if met else 'MISSED'})")
            rec.row(name=f"{name} (mean per run)", runs=opts.runs, user_cpu_s=user, sys_cpu_s=system,
                    wall_s=wall, target_cpu_s=target, met=met)
    return 0


if __name__ == "__main__":
    sys.exit(main())
