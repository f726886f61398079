"""One fit of a graphical model on Adult: private-pgm's JAX mirror descent against dplens's NumPy one, side by side.

The model is Adult's 14 one-way marginals and 2-way marginals added in a seeded shuffle while the model stays within
``--model-mb`` (private-pgm's ``hypothetical_model_size``), all measured from the records with Gaussian noise
(σ = 5, seeded). Each fit runs in its own child process, one after the other, so that one's compiled programs and
freed pages do not count in the other: CPU (``time.process_time``) before the first iteration, to iteration 10, and
in all; CPU per later iteration; the child's peak RSS (``ru_maxrss``) and its RSS before the fit. Adult is read from
``$DPLENS_SHARED_DATA/adult`` (else ``../shared/data/adult``; the bench is skipped without it).

    python bench/bench_fit_memory.py [--model-mb 10] [--iters 200] [--fits jax numpy]

Rows go to bench/results/bench_fit_memory.json.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import numpy as np
from results import Recorder, record, require, shared_data

ADULT = shared_data("adult")
FITS = ("jax", "numpy")
NOISE_STDDEV = 5.0


def _measurements(model_mb: float):
    """Adult's noisy 1-way marginals and the seeded pairs that keep the model within ``model_mb``."""
    import mbi
    from mbi import junction_tree

    from dplens.core.tables.records import load_table

    table = load_table(ADULT / "adult.csv", ADULT / "adult-domain.json")
    names, sizes = list(table.domain.names), list(table.domain.sizes)
    domain = mbi.Domain(names, sizes)
    rng = np.random.default_rng(0)
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]
    rng.shuffle(pairs)
    chosen: list[tuple[str, str]] = []
    for pair in pairs:
        if junction_tree.hypothetical_model_size(domain, [*chosen, pair]) <= model_mb:
            chosen.append(pair)
    measurements = []
    for clique in [(n,) for n in names] + chosen:
        axes = [names.index(c) for c in clique]
        counts = np.zeros([sizes[i] for i in axes])
        np.add.at(counts, tuple(table.records[:, i] for i in axes), 1)
        noisy = counts + rng.normal(0, NOISE_STDDEV, counts.shape)
        measurements.append(mbi.LinearMeasurement(noisy.ravel(), clique, stddev=NOISE_STDDEV))
    return domain, measurements, junction_tree.hypothetical_model_size(domain, chosen)


def child(fit: str, model_mb: float, iters: int) -> None:
    """One fit; prints one JSON line."""
    domain, measurements, size = _measurements(model_mb)
    if fit == "jax":
        from mbi.estimation import mirror_descent
    else:
        from dplens.core.tables.mirror_descent import mirror_descent
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    marks: dict[int, float] = {}
    start = time.process_time()

    def on_iteration(_) -> None:
        marks[len(marks) + 1] = time.process_time() - start

    mirror_descent(domain, measurements, iters=iters, callback_fn=on_iteration)
    total = time.process_time() - start
    later = (marks[iters] - marks[10]) / (iters - 10)
    print(json.dumps({"cliques": len(measurements), "model_mb": size, "cpu_s": total, "cpu_to_first_s": marks[1],
                      "cpu_to_10_s": marks[10], "cpu_per_later_iteration_ms": 1000 * later,
                      "rss_before_mb": rss_before,
                      "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}), flush=True)


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        child(sys.argv[2], float(sys.argv[3]), int(sys.argv[4]))
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--model-mb", type=float, default=10.0)
    parser.add_argument("--iters", type=int, default=200)
    parser.add_argument("--fits", nargs="+", choices=FITS, default=list(FITS))
    args = parser.parse_args()
    if args.iters <= 10:
        parser.error(f"--iters must be > 10 (CPU per iteration is read after the tenth), got {args.iters}")
    require(ADULT / "adult.csv", ADULT / "adult-domain.json")
    with Recorder("bench_fit_memory", args):
        for fit in args.fits:
            out = subprocess.run([sys.executable, __file__, "--child", fit, str(args.model_mb), str(args.iters)],
                                 capture_output=True, text=True, check=True)
            row = json.loads(out.stdout.strip().splitlines()[-1])
            print(f"{fit}: {row['cliques']} cliques, {row['model_mb']:.1f} MB model; {row['cpu_s']:.1f} s CPU "
                  f"({row['cpu_to_10_s']:.1f} s to iteration 10, {row['cpu_per_later_iteration_ms']:.1f} ms per "
                  f"later iteration); peak RSS {row['peak_rss_mb']:.0f} MB (before the fit "
                  f"{row['rss_before_mb']:.0f} MB)", flush=True)
            record(name=f"{fit}, {args.iters} iterations", fit=fit, iters=args.iters, **row)


if __name__ == "__main__":
    main()
