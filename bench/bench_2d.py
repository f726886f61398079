"""2-D at 256 × 256: the default Compare sweep, the analytic errors, Release and page switches.

Run: .venv/bin/python bench/bench_2d.py [--side 256] [--trials 20] [--skip-pages]
The dataset is two Gaussian blobs on a side × side grid (like data/grid_2d.csv, 1e6 records); the
workload is the 2-D default (row and column sums plus 256 random rectangles). The sweep is the
Compare page's default (its mechanisms, 10 ε from 0.01 to 10, its default trials: as many as keep
the estimated sweep within 30 s, 20 on a 4096-bin histogram) run through
dplens.core.analysis.experiment.run_sweep with the run limits and the action deadline, serially, one mechanism at a
time so that each one's wall and CPU seconds show; its analytic errors (hb, privelet) are timed on
their own first. Targets: sweep <= 30 s, Release and page switches <= 3 s (ratio <= 1 meets them).
Timings on a shared machine are noisy: CPU time is the steadier figure.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DPLENS_HOME", tempfile.mkdtemp(prefix="dplens-bench-home-"))  # never the real ledger

from results import Recorder, record  # noqa: E402

from dplens.core.analysis.cost import Deadline, RunLimits, affordable_trials, estimate_cost  # noqa: E402
from dplens.core.analysis.experiment import run_sweep  # noqa: E402
from dplens.core.data.domain import Histogram  # noqa: E402
from dplens.core.mechanisms import MECHANISMS  # noqa: E402
from dplens.core.queries.workloads import parse_workload  # noqa: E402

DEFAULT = ("identity", "hb", "privelet", "dawa", "mwem", "ahp", "uniform", "laplace-on-answers")
EPSILONS = tuple(float(f"{e:.4g}") for e in np.geomspace(0.01, 10, 10))
SPEC = "marginals-ranges-2d:m=256,seed=0"


def blobs(side: int) -> Histogram:
    """Two Gaussian blobs, 10^6 records, on a side × side grid (seeded)."""
    gen = np.random.default_rng(0)
    points = np.concatenate([gen.normal((0.3, 0.3), 0.08, (600_000, 2)), gen.normal((0.7, 0.6), 0.12, (400_000, 2))])
    cells = np.clip((points * side).astype(int), 0, side - 1)
    counts = np.zeros((side, side))
    np.add.at(counts, (cells[:, 0], cells[:, 1]), 1.0)
    return Histogram.from_counts(counts, name=f"blobs-{side}")


def timed(function):
    wall, cpu = time.perf_counter(), time.process_time()
    result = function()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def report(what: str, wall: float, cpu: float, target: float | None = None) -> None:
    ratio = f"   target {target:g} s   ratio {wall / target:5.2f}" if target else ""
    print(f"{what:<62} wall {wall:7.2f} s   cpu {cpu:7.2f} s{ratio}", flush=True)
    record(name=what.strip(), wall_s=wall, cpu_s=cpu, target_s=target, ratio=wall / target if target else None)


def sweep(hist: Histogram, trials: int) -> None:
    workload = parse_workload(SPEC, hist.domain.shape)
    print(f"{hist.name}: {hist.domain.size:,} cells, workload {SPEC} ({workload.shape[0]:,} queries), "
          f"{len(EPSILONS)} ε × {trials} trials")
    for name in ("hb", "privelet"):
        _, wall, cpu = timed(lambda name=name: MECHANISMS[name].expected_mse(workload, 1.0))
        report(f"  analytic error of {name} (from the query rows, first call)", wall, cpu)
    total_wall = total_cpu = 0.0
    for name in DEFAULT:
        estimate = estimate_cost(MECHANISMS[name], workload)
        df, wall, cpu = timed(lambda name=name: run_sweep(
            hist, workload, [name], list(EPSILONS), trials, metrics=["mae", "rmse"], limits=RunLimits(),
            deadline=Deadline()))
        total_wall, total_cpu = total_wall + wall, total_cpu + cpu
        note = "; ".join({**df.attrs["left_out"], **df.attrs["errors"]}.values())[:60]
        runs = len(df) // 2
        report(f"  {name:<20} {runs:4d} runs (estimate {estimate.seconds * 1e3:7.1f} ms/run) {note}", wall, cpu)
    report("default Compare sweep, serial (analytic errors cached above)", total_wall, total_cpu, 30.0)


def pages(hist: Histogram) -> None:
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600).run()
    at.session_state.uploads = {"upload:bench": hist}
    at.session_state.dataset_key = "upload:bench"
    at.run()
    for path in ("pages/data.py", "pages/workloads.py", "pages/release.py", "pages/compare.py", "pages/data.py",
                 "pages/release.py"):
        _, wall, cpu = timed(lambda path=path: at.switch_page(path).run())
        assert not at.exception, at.exception
        report(f"open {path} with the {hist.domain.shape[0]}² dataset (AppTest)", wall, cpu, 3.0)
    at.switch_page("pages/release.py").run()
    for mechanism in ("hb", "agrid", "identity"):
        at.selectbox(key="release_mechanism").set_value(mechanism)
        at.number_input(key="release_epsilon").set_value(1.0).run()  # 3 × 1 fits the default total of 5
        _, wall, cpu = timed(lambda: at.button(key="release_spend").click().run())
        assert not at.exception, at.exception
        errors = [e.value for e in at.error]
        report(f"release with {mechanism} (click → rendered){' ' + errors[0][:40] if errors else ''}", wall, cpu, 3.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--side", type=int, default=256)
    parser.add_argument("--trials", type=int,
                        help="default: the Compare page's (dplens.core.analysis.cost.affordable_trials)")
    parser.add_argument("--skip-pages", action="store_true")
    parser.add_argument("--skip-sweep", action="store_true")
    args = parser.parse_args()
    with Recorder("bench_2d", args):
        run(args)


def run(args: argparse.Namespace) -> None:
    hist = blobs(args.side)
    if not args.skip_sweep:
        workload = parse_workload(SPEC, hist.domain.shape)
        trials = args.trials or affordable_trials([MECHANISMS[m] for m in DEFAULT], workload, epsilons=len(EPSILONS))
        sweep(hist, trials)
    if not args.skip_pages:
        pages(hist)


if __name__ == "__main__":
    main()
