"""Cost of the secure noise path (OpenDP) against the exploration path (NumPy), per 4096 bins.

Run: .venv/bin/python bench/bench_noise.py
Prints milliseconds per 4096-bin Laplace vector and per Identity release, and the secure/NumPy ratio.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from results import Recorder  # noqa: E402  (bench/results.py: the figures as data)

from dplens.core.mechanisms import MECHANISMS, exponential_mechanism  # noqa: E402
from dplens.core.privacy.noise import SecureNoise, add_laplace  # noqa: E402
from dplens.core.queries.workloads import Identity  # noqa: E402

BINS = 4096


def per_call_ms(function, repeats: int) -> float:
    """Median wall time of ``function()`` in milliseconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return 1000 * float(np.median(times))


def main() -> None:
    rng = np.random.default_rng(0)
    secure, secure_int = SecureNoise(), SecureNoise(integer=True)
    x = np.floor(rng.exponential(50.0, BINS))
    scores = rng.normal(size=BINS)
    rows = [
        ("Laplace noise, 4096 bins", lambda: add_laplace(rng, x, 2.0),
         lambda: add_laplace(secure, x, 2.0), lambda: add_laplace(secure_int, x, 2.0)),
        ("Identity release, 4096 bins", lambda: MECHANISMS["identity"].run(x, Identity(BINS), 0.5, rng),
         lambda: MECHANISMS["identity"].run(x, Identity(BINS), 0.5, secure),
         lambda: MECHANISMS["identity"].run(x, Identity(BINS), 0.5, secure_int)),
        ("exponential mechanism, 4096 scores", lambda: exponential_mechanism(scores, 1.0, 1.0, rng),
         lambda: exponential_mechanism(scores, 1.0, 1.0, secure), None),
    ]
    print(f"{'operation':38s} {'numpy ms':>9s} {'secure ms':>10s} {'ratio':>7s} {'integer ms':>11s} {'ratio':>7s}")
    with Recorder("bench_noise") as rec:
        for label, fast, slow, slow_int in rows:
            numpy_ms, secure_ms = per_call_ms(fast, 50), per_call_ms(slow, 20)
            line = f"{label:38s} {numpy_ms:9.3f} {secure_ms:10.2f} {secure_ms / numpy_ms:7.0f}"
            row = {"numpy_ms": numpy_ms, "secure_ms": secure_ms, "secure_ratio": secure_ms / numpy_ms}
            if slow_int is not None:
                int_ms = per_call_ms(slow_int, 20)
                line += f" {int_ms:11.2f} {int_ms / numpy_ms:7.0f}"
                row.update(integer_ms=int_ms, integer_ratio=int_ms / numpy_ms)
            print(line)
            rec.row(name=label, **row)


if __name__ == "__main__":
    main()
