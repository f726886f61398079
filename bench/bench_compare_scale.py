"""``dplens compare`` of identity, hb and privelet on 2^16 and 2^20 cells (targets ≤ 10 s and ≤ 60 s).

Run: nice .venv/bin/python bench/bench_compare_scale.py [--sizes 16,20] [--cases cli,page] [--schedulers auto,serial]

For each size, a histogram of 2^k cells (seeded Poisson counts of gamma rates) is written to a temporary folder and
``dplens compare`` runs on it in a fresh interpreter with a fresh DPLENS_HOME:

- ``cli``: the command's defaults (identity workload, ε 0.1 and 1, its default trials) for identity, hb, privelet;
- ``page``: what the Compare page runs by default on such a file: its default workload (random-range:m=2000), its
  10 log-spaced points from 0.01 to 10, the trials ``affordable_trials`` gives those mechanisms and the uniform
  reference, and the same metrics (MAE, RMSE).

Printed and recorded per case: wall seconds, and CPU seconds of the whole process tree (the command and its forkserver
workers, sampled by psutil every 20 ms, or the children's rusage when larger: ``/usr/bin/time`` misses the workers),
beside the targets. Run it with ``nice`` on a shared machine; the load average is recorded with the results.

The ``page`` case at 2^16 cells spent most of its CPU on hb's and privelet's expected error on the 2000 random ranges
(the oracle pushing every query through the estimator): 16.5 s wall / 29.5 s CPU (load 0.5–2). With their closed
forms for arbitrary ranges (``hierarchical.range_variances``, ``privelet.axis_range_variances``) the energies take
milliseconds and the case is the trials' simulation, imports and worker start: 11.1–14.2 s wall / 6.9–7.6 s CPU at
load 4–6 on the 2 cores (wall is mostly waiting for them; the same command with ``--scheduler serial`` took 4.5 s
wall beside 8.8 s for its default process pool at load 4.3).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from results import Recorder, run_sampled  # noqa: E402

TARGETS_S = {16: 10.0, 20: 60.0}
MECHANISMS = "identity,hb,privelet"
PAGE_EPSILONS = tuple(float(f"{e:.4g}") for e in np.geomspace(0.01, 10.0, 10))  # the page's default grid
PAGE_WORKLOAD = "random-range:m=2000,seed=0"


def write_histogram(k: int, folder: Path) -> Path:
    """A seeded 2^k-cell ``bin,count`` file: Poisson counts of gamma(0.5, 20) rates (skewed, many zeros)."""
    rng = np.random.default_rng(k)
    counts = rng.poisson(rng.gamma(0.5, 20.0, 2**k))
    path = folder / f"h{k}.csv"
    with path.open("w") as out:
        out.write("bin,count\n")
        out.write("".join(f"{i},{c}\n" for i, c in enumerate(counts.tolist())))
    return path


def page_trials(k: int) -> int:
    """The Compare page's default trials for identity, hb, privelet and its uniform reference on 2^k cells."""
    from dplens.core.analysis.cost import affordable_trials
    from dplens.core.mechanisms import MECHANISMS as REGISTRY
    from dplens.core.queries.workloads import parse_workload

    names = MECHANISMS.split(",") + ["uniform"]
    workload = parse_workload(PAGE_WORKLOAD, (2**k,), np.random.default_rng(0))
    return affordable_trials([REGISTRY[m] for m in names], workload, epsilons=len(PAGE_EPSILONS))


def command(case: str, k: int, data: Path, output: Path, scheduler: str = "auto") -> list[str]:
    cli = [str(Path(sys.executable).parent / "dplens"), "compare", "--input", str(data), "--output", str(output),
           "--scheduler", scheduler]
    if case == "cli":
        return cli + ["--mechanisms", MECHANISMS]
    return cli + ["--mechanisms", MECHANISMS + ",uniform", "--workload", PAGE_WORKLOAD, "--metrics", "mae,rmse",
                  "--epsilons", ",".join(f"{e:g}" for e in PAGE_EPSILONS), "--trials", str(page_trials(k))]


def measured(argv: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall seconds, process-tree CPU seconds (``run_sampled``, every 20 ms) and the last line of stdout of ``argv``."""
    run = run_sampled(argv, env=env)
    if run.returncode != 0:
        raise SystemExit(f"{' '.join(argv)}: exit {run.returncode}: {run.stderr.strip()[-400:]}")
    return run.wall_s, run.cpu_s, (run.stdout.strip().splitlines() or [""])[-1]

def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="16,20", help="comma-separated exponents k (2^k cells)")
    parser.add_argument("--cases", default="cli,page", help="comma-separated: cli, page")
    parser.add_argument("--page-max", type=int, default=20,
                        help="largest k the page case runs at (its 2^20 run takes many minutes on a loaded machine)")
    parser.add_argument("--schedulers", default="auto",
                        help="comma-separated --scheduler values, each case run once per value, side by side")
    args = parser.parse_args(argv)
    sizes = [int(k) for k in args.sizes.split(",")]
    cases = [c.strip() for c in args.cases.split(",")]
    print(f"{'case':<5} {'cells':>9} {'scheduler':>10} {'wall s':>8} {'tree cpu s':>10} {'target s':>8}")
    with Recorder("bench_compare_scale", args) as rec, tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        env = {**os.environ, "DPLENS_HOME": str(folder / "home")}
        for k in sizes:
            data = write_histogram(k, folder)
            for case in [c for c in cases if c != "page" or k <= args.page_max]:
                for scheduler in args.schedulers.split(","):
                    argv_ = command(case, k, data, folder / f"out-{case}-{k}.csv", scheduler)
                    wall, cpu, last = measured(argv_, env)
                    target = TARGETS_S.get(k)
                    met = target is None or wall <= target
                    rec.row(case=case, cells=2**k, scheduler=scheduler, wall_s=wall, cpu_s=cpu, target_s=target,
                            met=met, command=" ".join(["dplens", *argv_[1:3], f"h{k}.csv", *argv_[5:]]))
                    print(f"{case:<5} {2**k:>9,} {scheduler:>10} {wall:>8.2f} {cpu:>10.2f} {target or '-':>8}  {last}",
                          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
