"""App performance figures: default Compare sweep, page switch with cached results, 2^20-bin preview.

Run: .venv/bin/python bench/bench_app.py [--sweep-trials 20] [--skip-sweep]
The default sweep is timed twice: first the Compare page's own run (its default mechanisms, 20 trials,
10 ε) from the click to the rendered page, once the app's start-up work (its workers' warm-up) is done; then
dplens.core.analysis.experiment.run_sweep per mechanism for the breakdown.
Prints seconds and the ratio to each target (ratio <= 1 meets it).
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DPLENS_HOME", tempfile.mkdtemp(prefix="dplens-bench-home-"))  # never the real ledger

from results import Recorder, record, wait_quiet  # noqa: E402

from dplens.core.analysis.experiment import DEFAULT_COMPARE_MECHANISMS, run_sweep  # noqa: E402
from dplens.core.data.datasets import load_histogram  # noqa: E402
from dplens.core.mechanisms import MECHANISMS  # noqa: E402
from dplens.core.queries.workloads import random_range  # noqa: E402

DEFAULT = DEFAULT_COMPARE_MECHANISMS  # the Compare page's defaults
EPSILONS = tuple(float(f"{e:.4g}") for e in np.geomspace(0.01, 10, 10))


def report(what: str, seconds: float, target: float) -> None:
    print(f"{what:<58} {seconds:8.3f} s   target {target:g} s   ratio {seconds / target:6.2f}")
    record(name=what, wall_s=seconds, target_s=target, ratio=seconds / target)


def default_sweep(trials: int) -> None:
    hist, workload = load_histogram("smooth"), random_range(4096, 2000, seed=0)
    total = 0.0
    for name in (m for m in DEFAULT if m in MECHANISMS):
        start = time.perf_counter()
        run_sweep(hist, workload, [name], list(EPSILONS), trials, metrics=["mae", "rmse"])
        seconds = time.perf_counter() - start
        total += seconds
        print(f"  {name:<20} {seconds:8.2f} s  ({10 * trials} runs, {seconds / (10 * trials) * 1e3:.1f} ms/run)")
        record(name=f"sweep: {name}", wall_s=seconds, runs=10 * trials, ms_per_run=seconds / (10 * trials) * 1e3)
    report(f"default Compare sweep (n=4096, 2000 ranges, 10 ε × {trials} trials)", total, 5.0)


def page_switch() -> None:
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600).run()
    at.switch_page("pages/compare.py").run()
    at.multiselect(key="compare_mechanisms").set_value(["identity", "hb", "privelet", "uniform"])
    at.button[0].click().run()  # fills the session cache (10 ε × 20 trials)
    timings = []
    for _ in range(3):
        for path in ("pages/data.py", "pages/workloads.py", "pages/compare.py"):
            start = time.perf_counter()
            at.switch_page(path).run()
            timings.append((path, time.perf_counter() - start))
            assert not at.exception, at.exception
    for path in ("pages/data.py", "pages/workloads.py", "pages/compare.py"):
        report(f"switch to {path} (cached results, AppTest, median of 3)",
               float(np.median([s for p, s in timings if p == path])), 1.0)


def page_sweep() -> None:
    """The same default sweep as a user runs it: Compare page defaults, click → page rendered (AppTest)."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600).run()
    quiet = wait_quiet()  # the server's start-up work (the Compare workers' warm-up) done, as for a real user
    print(f"  this process and its workers quiet {quiet:.1f} s after app.py's first run")
    at.switch_page("pages/compare.py").run()
    assert list(at.multiselect(key="compare_mechanisms").value) == list(DEFAULT), "page defaults changed"
    button = next(b for b in at.button if b.label.startswith("Run"))
    start = time.perf_counter()
    button.click().run()
    assert not at.exception, at.exception
    report("default Compare sweep on the page (AppTest: click → rendered)", time.perf_counter() - start, 2.5)


def huge_upload() -> None:
    from dplens import ui

    counts = np.random.default_rng(0).poisson(3.0, size=2**20)
    csv = ("count\n" + "\n".join(map(str, counts))).encode()
    buffer = io.BytesIO()
    np.save(buffer, counts)
    for label, data, filename in (("CSV", csv, "big.csv"), (".npy", buffer.getvalue(), "big.npy")):
        start = time.perf_counter()
        hist = load_histogram(data, filename=filename)
        hist.summary()
        figure = ui.histogram_figure(hist, source=ui.SOURCES[ui.TRUE])
        figure.to_json()  # what Streamlit serialises for the browser
        report(f"2^20-bin {label} ({len(data) / 2**20:.1f} MB): load + summary + preview", time.perf_counter() - start,
               3.0)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sweep-trials", type=int, default=20)
    parser.add_argument("--skip-sweep", action="store_true", help="skip the (long) default sweep")
    args = parser.parse_args()
    with Recorder("bench_app", args):
        huge_upload()
        if not args.skip_sweep:
            page_sweep()  # first, while every cache (analytic errors, DAWA's data) is cold: what a new user waits
            default_sweep(args.sweep_trials)  # the per-mechanism breakdown (hb/privelet's analytic error now cached)
        page_switch()
