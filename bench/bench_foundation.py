"""Foundation benchmark: the default Compare sweep, and the per-trial cost of every mechanism.

Run: .venv/bin/python bench/bench_foundation.py [--quick]

1. The sweep runner on the Compare page's default sweep: the default mechanisms that are registered,
   10 log-spaced epsilons in [0.01, 10], 20 trials, the default 4096-bin sample, 2000 random ranges
   (target ≤ 5 s).
2. The per-trial cost of each registered mechanism at n = 4096 and n = 2^20 (2000 random ranges),
   and its ratio to the practical floor: drawing the same number of Laplace samples with NumPy. The
   number is counted by wrapping the generator, so the floor matches what the mechanism really draws.
   Target: Identity answering 2000 ranges on 4096 bins ≤ 3× the floor.
"""

from __future__ import annotations

import multiprocessing
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from results import Recorder, record  # noqa: E402

from dplens.core.analysis.experiment import DEFAULT_COMPARE_MECHANISMS as DEFAULT_MECHANISMS  # noqa: E402
from dplens.core.analysis.experiment import run_sweep  # noqa: E402
from dplens.core.data.datasets import DEFAULT_DATASET, load_histogram  # noqa: E402
from dplens.core.mechanisms import MECHANISMS  # noqa: E402
from dplens.core.queries.workloads import random_range  # noqa: E402

EPSILONS = tuple(float(f"{e:.4g}") for e in np.geomspace(0.01, 10.0, 10))
QUERIES = 2000
SWEEP_TARGET_SECONDS = 5.0
IDENTITY_TARGET_RATIO = 3.0
TRIAL_BUDGET_SECONDS = 30.0  # a trial running longer is stopped (and one predicted longer is not started)
SWEEP_BUDGET_SECONDS = 60.0  # a longer sweep is stopped and its full time projected from the runs done


class CountingRng:
    """A Generator wrapper that counts the Laplace samples a mechanism draws (all else delegates)."""

    def __init__(self, rng: np.random.Generator) -> None:
        self._rng, self.laplace_samples = rng, 0

    def laplace(self, loc=0.0, scale=1.0, size=None):
        self.laplace_samples += 1 if size is None else int(np.prod(size))
        return self._rng.laplace(loc, scale, size)

    def __getattr__(self, name):
        return getattr(self._rng, name)


def median_seconds(function, *, min_repeats: int = 5, min_total: float = 0.2, max_repeats: int = 200) -> float:
    """Median wall time of ``function()``: at least ``min_repeats`` calls and ``min_total`` seconds."""
    times: list[float] = []
    while len(times) < max_repeats and (len(times) < min_repeats or sum(times) < min_total):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def floor_seconds(samples: int, rng: np.random.Generator) -> float:
    """The practical floor: one ``rng.laplace`` call drawing ``samples`` values."""
    return median_seconds(lambda: rng.laplace(scale=1.0, size=max(samples, 1)), min_repeats=20)


def bench_sweep(trial_seconds: dict[str, float]) -> float:
    """Time the default sweep; if stopped, project it from the runs done and ``trial_seconds`` (n = 4096)."""
    histogram = load_histogram(DEFAULT_DATASET)
    workload = random_range(histogram.domain.size, QUERIES, seed=0)
    names = [m for m in DEFAULT_MECHANISMS if m in MECHANISMS]
    runs = len(names) * len(EPSILONS) * 20
    start = time.perf_counter()
    df = run_sweep(histogram, workload, names, EPSILONS, 20, seed=0, metrics=("mae", "rmse"),
                   should_stop=lambda: time.perf_counter() - start > SWEEP_BUDGET_SECONDS)
    seconds = time.perf_counter() - start
    per_mechanism = df.groupby("mechanism", sort=False)["seconds"].sum() / len(df["metric"].unique())
    note = ""
    if df.attrs["stopped"]:  # project: each mechanism's mean run time (or single-trial cost) × its runs
        mean_run = df.groupby("mechanism", sort=False)["seconds"].mean().to_dict()
        per_run = [mean_run.get(name, trial_seconds.get(name, 0.0)) for name in names]
        seconds = float(sum(per_run) * len(EPSILONS) * 20)
        note = (f" PROJECTED (stopped after {SWEEP_BUDGET_SECONDS:g} s at {len(df) // 2} runs; mechanisms "
                "not reached are costed from their single-trial time below)")
    verdict = "OK" if seconds <= SWEEP_TARGET_SECONDS else "OVER TARGET"
    print(f"Default Compare sweep on {histogram.name!r} ({histogram.domain.size} bins, {QUERIES} random ranges)")
    print(f"  mechanisms: {', '.join(names)} (not registered: "
          f"{', '.join(m for m in DEFAULT_MECHANISMS if m not in MECHANISMS) or 'none'})")
    print(f"  {len(EPSILONS)} epsilons × 20 trials = {runs} runs: {seconds:.2f} s "
          f"(target ≤ {SWEEP_TARGET_SECONDS:g} s: {verdict}){note}")
    if df.attrs["errors"]:
        print(f"  skipped: {df.attrs['errors']}")
    print("  measured seconds by mechanism: " + ", ".join(f"{k} {v:.2f}" for k, v in per_mechanism.items()))
    record(name=f"default Compare sweep ({runs} runs)", wall_s=seconds, projected=bool(df.attrs["stopped"]),
           target_s=SWEEP_TARGET_SECONDS, ratio=seconds / SWEEP_TARGET_SECONDS,
           **{f"{k}_s": float(v) for k, v in per_mechanism.items()})
    return seconds


def _trial_in_child(mechanism, x, workload, connection) -> None:
    counter = CountingRng(np.random.default_rng(1))
    try:
        start = time.perf_counter()
        mechanism.run(x, workload, 1.0, counter)
        first = time.perf_counter() - start
    except ValueError as err:
        connection.send(("error", str(err)[:90]))
        return
    per_trial = first if first > 1.0 else median_seconds(
        lambda: mechanism.run(x, workload, 1.0, np.random.default_rng(2)), min_repeats=3)
    connection.send(("ok", per_trial, counter.laplace_samples))


def timed_trial(mechanism, x, workload) -> tuple:
    """("ok", seconds per trial, Laplace draws), ("error", message) or ("timeout",), run in a forked child."""
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_trial_in_child, args=(mechanism, x, workload, send))
    child.start()
    result = receive.recv() if receive.poll(TRIAL_BUDGET_SECONDS) else ("timeout",)
    if child.is_alive():
        child.terminate()
    child.join()
    return result


def bench_trials(n: int, rng: np.random.Generator, predicted: dict[str, float] | None = None) -> dict[str, float]:
    """Per-trial seconds of each mechanism at n bins; returns them for extrapolation to larger n."""
    x = np.floor(rng.exponential(50.0, n))
    workload = random_range(n, QUERIES, seed=0)
    print(f"\nPer-trial cost at n = {n:,} ({QUERIES} random ranges, epsilon = 1)")
    print(f"  {'mechanism':20s} {'ms/trial':>10s} {'Laplace draws':>14s} {'floor ms':>9s} {'ratio':>8s}")
    seconds: dict[str, float] = {}
    for name, mechanism in MECHANISMS.items():
        guess = (predicted or {}).get(name, 0.0)
        if guess > TRIAL_BUDGET_SECONDS:
            print(f"  {name:20s} skipped: predicted ≥ {guess:.0f} s per trial (budget {TRIAL_BUDGET_SECONDS:g} s)")
            continue
        result = timed_trial(mechanism, x, workload)
        if result[0] != "ok":
            reason = result[1] if result[0] == "error" else f"stopped after {TRIAL_BUDGET_SECONDS:g} s"
            seconds[name] = TRIAL_BUDGET_SECONDS
            print(f"  {name:20s} skipped: {reason}")
            record(name=f"{name}, n={n}", n=n, skipped=reason)
            continue
        per_trial, draws = result[1], result[2]
        floor = floor_seconds(draws, rng)
        seconds[name] = per_trial
        print(f"  {name:20s} {1000 * per_trial:10.3f} {draws:14,d} {1000 * floor:9.3f} "
              f"{per_trial / floor:8.1f}×")
        record(name=f"{name}, n={n}", n=n, trial_ms=1000 * per_trial, laplace_draws=draws, floor_ms=1000 * floor,
               ratio_to_floor=per_trial / floor)
        if name == "identity" and n == 4096:
            verdict = "OK" if per_trial / floor <= IDENTITY_TARGET_RATIO else "OVER TARGET"
            print(f"  {'':20s} identity target ≤ {IDENTITY_TARGET_RATIO:g}× the floor: {verdict}")
    return seconds


def main(argv: list[str]) -> None:
    with Recorder("bench_foundation", {"quick": "--quick" in argv}):
        run(argv)


def run(argv: list[str]) -> None:
    rng = np.random.default_rng(0)
    small = bench_trials(4096, rng)
    print()
    bench_sweep(small)
    if "--quick" in argv:
        return
    scale = 2**20 / 4096  # extrapolate linearly from n = 4096 (optimistic for superlinear mechanisms)
    bench_trials(2**20, rng, predicted={k: v * scale for k, v in small.items()})


if __name__ == "__main__":
    main(sys.argv[1:])
