"""Secure releases at scale: wall, CPU and peak memory over the process tree of a secure release of
10^6 cells, beside OpenDP's own sampler called directly on the same values in the same run.

Run: nice .venv/bin/python bench/bench_secure_stream.py [--n 1000000] [--cases identity-lattice,integer-laplace,...]

Each case runs in a fresh interpreter (so one case's heap does not inflate the next); a thread in this process samples
the resident set size (RSS, and PSS, which counts shared pages once) of that interpreter and all its children with
psutil every 10 ms and keeps the peaks. The child
reports the wall and CPU seconds of the call alone and its RSS before the call (interpreter, NumPy, OpenDP); the
tree's CPU over the child's whole life comes from ``getrusage(RUSAGE_CHILDREN)``. Cases:

* ``identity-lattice``: the identity mechanism's secure release (OpenDP's float Laplace on the lattice 2^k);
* ``integer-laplace``: ``SecureNoise(integer=True).add_laplace`` on integer counts (OpenDP's discrete Laplace);
* ``lattice-gaussian``: ``SecureNoise().add_gaussian`` (OpenDP's discrete Gaussian on the lattice);
* ``cli-release-identity``: ``dplens release --mechanism identity`` on an NPY file of n integer counts (OpenDP's
  discrete Laplace), the whole command, export included: its kernel runs the mechanism in a worker process forked
  from the command, so the tree holds the command and the worker; wall and CPU are the command's whole life (tree
  CPU summed per process by the sampler). (Not hb: its export's exact intervals take minutes at 20,000 cells, none
  of it noise.)
* ``opendp-*``: the same OpenDP measurement (same scale, same lattice) built for all n values and called once on the
  NumPy array directly: the sampler's own cost per cell, the floor dplens is compared with.

Targets: peak ≤ 600 MB over the process tree at 10^6 cells; per cell within 1.2× OpenDP's own sampler.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from results import Recorder, run_sampled  # noqa: E402

SCALE = 2.0  # Laplace scale (identity at epsilon 0.5) and Gaussian sigma
CASES = ("identity-lattice", "opendp-lattice-laplace", "integer-laplace", "opendp-integer-laplace",
         "lattice-gaussian", "opendp-lattice-gaussian", "cli-release-identity")
DEFAULT_CASES = CASES


def counts(n: int) -> np.ndarray:
    return np.floor(np.random.default_rng(0).exponential(50.0, n))


def run_case(case: str, n: int) -> dict:
    """One case in this (fresh) process: the call's wall and CPU seconds, RSS before it, and a check of the output."""
    import opendp.prelude as dp

    from dplens.core.mechanisms import MECHANISMS
    from dplens.core.privacy.noise import SecureNoise, lattice_exponent, widened
    from dplens.core.queries.workloads import Identity

    dp.enable_features("contrib")
    x = counts(n)
    floats = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=n)
    calls = {
        "identity-lattice": lambda: MECHANISMS["identity"].run(x, Identity(n), 1.0 / SCALE, SecureNoise()).answers,
        "integer-laplace": lambda: SecureNoise(integer=True).add_laplace(x, SCALE),
        "lattice-gaussian": lambda: SecureNoise().add_gaussian(x, SCALE),
        "opendp-lattice-laplace": lambda: dp.m.make_laplace(
            floats, dp.l1_distance(T=float), scale=widened(SCALE), k=lattice_exponent(SCALE, n, 1))(x),
        "opendp-integer-laplace": lambda: dp.m.make_laplace(
            dp.vector_domain(dp.atom_domain(T="i64"), size=n), dp.l1_distance(T="i64"), scale=SCALE,
        )(x.astype(np.int64)),
        "opendp-lattice-gaussian": lambda: dp.m.make_gaussian(
            floats, dp.l2_distance(T=float), scale=widened(SCALE), k=lattice_exponent(SCALE, n, 2))(x),
    }
    rss_before = psutil.Process().memory_info().rss
    wall, cpu = time.perf_counter(), time.process_time()
    out = calls[case]()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    noise = np.asarray(out, dtype=float) - x
    return {"wall_s": wall, "cpu_s": cpu, "rss_before_mb": rss_before / 2**20, "noise_std": float(noise.std())}


def command(case: str, n: int, folder: Path) -> list[str]:
    if case != "cli-release-identity":
        return [sys.executable, __file__, "--child", case, "--n", str(n)]
    np.save(folder / "counts.npy", counts(n))
    return [str(Path(sys.executable).parent / "dplens"), "release", "--input", str(folder / "counts.npy"),
            "--mechanism", "identity", "--epsilon", "0.5", "--output", str(folder / "out.json"),
            "--ledger", str(folder / "ledger.sqlite3"), "--time-limit", "3000"]


def measured_child(case: str, n: int) -> dict:
    """Run ``case`` in a fresh interpreter while a thread samples its process tree's RSS; peak and tree CPU added."""
    with tempfile.TemporaryDirectory() as folder:
        run = run_sampled(command(case, n, Path(folder)), cwd=folder, every=0.01)
    if run.returncode != 0:
        tail = (run.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"exit {run.returncode}: {tail[:160]}"}
    lines = [line for line in run.stdout.splitlines() if line.startswith("{")]
    if case == "cli-release-identity":  # the whole command: no inner timing, no noise check
        result = {"wall_s": run.wall_s, "cpu_s": run.cpu_s, "rss_before_mb": float("nan"), "noise_std": float("nan")}
    elif lines:
        result = json.loads(lines[-1])
    else:
        return {"error": "no output"}
    result["peak_tree_mb"], result["peak_tree_pss_mb"] = run.peak_rss / 2**20, run.peak_pss / 2**20
    result["tree_cpu_s"] = run.cpu_s
    return result


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10**6)
    parser.add_argument("--cases", default=",".join(DEFAULT_CASES), help=f"comma-separated, of {', '.join(CASES)}")
    parser.add_argument("--child", default=None)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(run_case(args.child, args.n)))
        return
    cases = [c for c in args.cases.split(",") if c]
    unknown = sorted(set(cases) - set(CASES))
    if unknown:
        parser.error(f"unknown cases {unknown}; choose from {', '.join(CASES)}")
    print(f"n = {args.n:,} cells, scale {SCALE:g}, one fresh interpreter per case")
    print(f"{'case':26s} {'wall s':>7s} {'CPU s':>7s} {'µs/cell':>8s} {'tree CPU s':>10s} {'RSS0 MB':>8s} "
          f"{'peak MB':>8s} {'PSS MB':>7s} {'noise sd':>9s}")
    with Recorder("bench_secure_stream", args) as rec:
        for case in cases:
            r = measured_child(case, args.n)
            if "error" in r:
                print(f"{case:26s} {r['error']}")
                rec.row(name=case, n=args.n, error=r["error"])
                continue
            per_cell = 1e6 * r["cpu_s"] / args.n
            print(f"{case:26s} {r['wall_s']:7.2f} {r['cpu_s']:7.2f} {per_cell:8.2f} {r['tree_cpu_s']:10.2f} "
                  f"{r['rss_before_mb']:8.0f} {r['peak_tree_mb']:8.0f} {r['peak_tree_pss_mb']:7.0f} "
                  f"{r['noise_std']:9.3f}", flush=True)
            rec.row(name=case, n=args.n, wall_s=r["wall_s"], cpu_s=r["cpu_s"], cpu_us_per_cell=per_cell,
                    tree_cpu_s=r["tree_cpu_s"], rss_before_mb=r["rss_before_mb"], peak_tree_mb=r["peak_tree_mb"],
                    peak_tree_pss_mb=r["peak_tree_pss_mb"],
                    noise_std=r["noise_std"])


if __name__ == "__main__":
    main(sys.argv[1:])
