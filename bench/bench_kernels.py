"""Compiled kernels side by side: DAWA, MWEM, AHP and SReB_GCA per run, this tree against a
baseline tree (e.g. the main checkout before the kernels), interleaved in one run, with dpcomp_core's
times recorded on another machine (peer-reference.md in the shared spec folder) beside them for information.

Run: .venv/bin/python bench/bench_kernels.py --baseline DIR [--trials 10] [--datasets NETTRACE,HEPTH]

Every cell (dataset, ε, mechanism) is timed in fresh interpreters, alternating baseline and this tree
twice, cold (DAWA's data cache cleared before each run), 2000 random ranges from default_rng(12345) on
the 4096-bin DPBench histograms (``$DPLENS_SHARED_DATA/dpbench-1d``, else ``../shared/data/dpbench-1d``). Printed:
median CPU ms per run (the better of the two passes: the
machine is shared), the speed-up, dpcomp_core's ms and our speed-up over it, and whether seed 0 gives
bit-for-bit the same estimate in both trees ("same"). Target: outputs unchanged. A time recorded on another
machine is no verdict: DAWA against dpcomp_core's own code on this machine is ``bench_dawa_peer.py``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from results import Recorder, require, shared_data, shared_spec

ROOT = Path(__file__).resolve().parent.parent
DPBENCH = shared_data("dpbench-1d")
REFERENCE = shared_spec("peer-reference.md")
MECHANISMS = ("dawa", "mwem", "ahp", "sreb-gca")
REFERENCE_COLUMNS = {"dawa": "DAWA", "mwem": "MWEM", "ahp": "AHP"}


def measure(tree: str, datasets: list[str], epsilons: list[float], trials: int) -> dict:
    """In a fresh interpreter rooted at ``tree``: {cell: [median CPU seconds, estimate digest]}."""
    sys.path.insert(0, tree)
    from dplens.core.mechanisms import MECHANISMS as REGISTRY
    from dplens.core.mechanisms import dawa
    from dplens.core.queries.workloads import Ranges

    cache = getattr(dawa, "_DEVIATIONS", None)  # a StrategyCache; older trees: an lru_cache, or none
    clear_deviations = getattr(cache, "clear", None) or getattr(getattr(dawa, "_cached_deviations", None),
                                                                "cache_clear", None)
    ends = np.sort(np.random.default_rng(12345).integers(0, 4096, size=(2000, 2)), axis=1)
    workload = Ranges(4096, ends[:, 0], ends[:, 1])
    out = {}
    for dataset in datasets:
        x = np.loadtxt(DPBENCH / f"{dataset}.csv", skiprows=1)
        for name in MECHANISMS:
            mechanism = REGISTRY[name]
            mechanism.run(x, workload, 1.0, np.random.default_rng(99))  # compile / import once, untimed
            for epsilon in epsilons:
                times = []
                for seed in range(trials):
                    if clear_deviations is not None:
                        clear_deviations()
                    start = time.process_time()
                    release = mechanism.run(x, workload, epsilon, np.random.default_rng(seed))
                    times.append(time.process_time() - start)
                    if seed == 0:
                        digest = hashlib.sha256(np.ascontiguousarray(release.estimate).tobytes()).hexdigest()[:12]
                out[f"{dataset}|{epsilon:g}|{name}"] = [float(np.median(times)), digest]
    return out


def reference_ms() -> dict:
    """dpcomp_core's time per run (ms) by (dataset, ε, column) from peer-reference.md."""
    text = REFERENCE.read_text()
    section, header, out = False, [], {}
    for line in text.splitlines():
        if line.startswith("## "):
            section = "Time per run" in line
            continue
        if not section or not line.startswith("|") or "---" in line:
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[0] == "dataset":
            header = cells
            continue
        for column, value in zip(header[2:], cells[2:], strict=True):
            out[(cells[0], float(cells[1]), column)] = float(value)
    return out


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True, help="root of the tree to compare against")
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--datasets", default="ADULTFRANK,HEPTH,INCOME,MEDCOST,NETTRACE,PATENT,SEARCHLOGS")
    parser.add_argument("--epsilons", default="0.1,1")
    parser.add_argument("--child", default=None)
    args = parser.parse_args(argv)
    datasets, epsilons = args.datasets.split(","), [float(e) for e in args.epsilons.split(",")]
    if args.child:
        print(json.dumps(measure(args.child, datasets, epsilons, args.trials)))
        return
    require(DPBENCH, REFERENCE)
    with Recorder("bench_kernels", args) as rec:
        compare(args, rec)


def compare(args: argparse.Namespace, rec: Recorder) -> None:
    runs: dict[str, list[dict]] = {"baseline": [], "this tree": []}
    for _ in range(2):  # alternate, so both trees see the same load
        for label, tree in (("baseline", args.baseline), ("this tree", str(ROOT))):
            command = [sys.executable, __file__, "--baseline", args.baseline, "--child", tree, "--trials",
                       str(args.trials), "--datasets", args.datasets, "--epsilons", args.epsilons]
            done = subprocess.run(command, capture_output=True, text=True, cwd=tree, check=True)
            runs[label].append(json.loads(done.stdout.strip().splitlines()[-1]))
    reference = reference_ms()
    print(f"CPU ms per run (median of {args.trials}, better of 2 interleaved passes); baseline {args.baseline}")
    print(f"{'dataset':11s} {'eps':>4s} {'mechanism':9s} {'before':>8s} {'now':>8s} {'speed-up':>9s} "
          f"{'dpcomp':>8s} {'vs dpcomp':>10s} {'output':>7s}")
    for key in runs["this tree"][0]:
        dataset, epsilon, name = key.split("|")
        before = min(r[key][0] for r in runs["baseline"]) * 1000
        now = min(r[key][0] for r in runs["this tree"]) * 1000
        same = "same" if runs["baseline"][0][key][1] == runs["this tree"][0][key][1] else "DIFF"
        ref = reference.get((dataset, float(epsilon), REFERENCE_COLUMNS.get(name, "")))
        versus = f"{ref / now:9.1f}x" if ref else f"{'':10s}"
        print(f"{dataset:11s} {epsilon:>4s} {name:9s} {before:8.2f} {now:8.2f} {before / now:8.1f}x "
              f"{ref if ref else '':>8} {versus} {same:>7s}", flush=True)
        rec.row(name=f"{name}, {dataset}, ε={epsilon}", before_cpu_ms=before, now_cpu_ms=now, speedup=before / now,
                dpcomp_ms_recorded_elsewhere=ref, ratio_to_recorded_dpcomp=ref / now if ref else None, output=same)


if __name__ == "__main__":
    main(sys.argv[1:])
