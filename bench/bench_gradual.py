"""Noise reduction (Koufogiannis et al.): a 1000-step walk on 4096 bins; target < 1 s.

Run: .venv/bin/python bench/bench_gradual.py
Prints the median wall time of ``noise_reduction`` over 1000 steps × 4096 bins, of 1000 forward
``next_release`` steps, the ratio to the 1 s target, and one independent one-shot release per step
for comparison (the floor: the walk draws fresh noise only where the coin says move).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from results import Recorder  # noqa: E402

from dplens.core.release.gradual import next_release, noise_reduction  # noqa: E402

BINS, STEPS, TARGET_SECONDS = 4096, 1000, 1.0


def median_seconds(function, repeats: int = 5) -> float:
    """Median wall time of ``function()`` in seconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def forward_walk(x: np.ndarray, epsilons: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The same walk built online, one ``next_release`` per step."""
    y = x + rng.laplace(scale=1.0 / epsilons[0], size=x.size)
    for previous, following in zip(epsilons[:-1], epsilons[1:], strict=True):
        y = next_release(y, x, 1.0, previous, following, rng)
    return y


def main() -> None:
    with Recorder("bench_gradual") as rec:
        run(rec)


def run(rec: Recorder) -> None:
    rng = np.random.default_rng(0)
    x = np.floor(rng.exponential(50.0, BINS))
    epsilons = np.geomspace(0.01, 10.0, STEPS)
    backward = median_seconds(lambda: noise_reduction(x, 1.0, epsilons, rng))
    forward = median_seconds(lambda: forward_walk(x, epsilons, rng), repeats=3)
    one_shot = median_seconds(lambda: [x + rng.laplace(scale=1 / e, size=BINS) for e in epsilons])
    print(f"noise_reduction, {STEPS} steps x {BINS} bins: {backward * 1000:8.1f} ms "
          f"({backward / TARGET_SECONDS:.2f} x the {TARGET_SECONDS:g} s target)")
    print(f"next_release (online), {STEPS} steps x {BINS} bins: {forward * 1000:8.1f} ms")
    print(f"{STEPS} independent one-shot releases (floor): {one_shot * 1000:8.1f} ms "
          f"(walk / one-shot = {backward / one_shot:.2f})")
    rec.row(name=f"noise_reduction, {STEPS} steps x {BINS} bins", wall_ms=backward * 1000,
            target_ms=TARGET_SECONDS * 1000, ratio=backward / TARGET_SECONDS)
    rec.row(name=f"next_release (online), {STEPS} steps x {BINS} bins", wall_ms=forward * 1000)
    rec.row(name=f"{STEPS} independent one-shot releases (floor)", wall_ms=one_shot * 1000,
            walk_over_one_shot=backward / one_shot)


if __name__ == "__main__":
    main()
