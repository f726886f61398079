"""MWEM and AHP side by side with dpcomp_core's on generated high-count spiky histograms (DPBench-style 1-D).

Run: DPCOMP_SRC=PATH/TO/dpcomp_core nice -n 5 .venv/bin/python bench/bench_peer_spiky.py [--trials 30] [--quick]

``DPCOMP_SRC`` is a folder holding a Python-3-runnable copy of dpcomp_core (github.com/dpcomp-org/dpcomp_core,
its ``dpcomp_core`` package imported from there, never from this repository; docs/benchmarks.md says how the
copy is made, including AHP's compiled helper). Without it, or when an import fails, the peer columns are
skipped with the reason printed and only dplens's figures are shown.

Setup as in peer-reference.md (the shared spec folder): 4096 bins, 2000 random ranges [a, b] with a and b
uniform over the bins and sorted, drawn once from ``default_rng(12345)`` (both sides answer the same draw);
error = mean absolute error per query of the answers read off each side's histogram estimate. The
histograms are generated (seeded): a floor of small counts (gamma-distributed, many bins empty or nearly
so) plus a few tall spikes (Pareto heights) that hold most of the records, about 190,000 records in all
(one at 2,000,000). Per cell and side: mean ± standard error over the trials.

MWEM: dpcomp_core's ``mwemND_engine()`` with its defaults (10 rounds, half of each round's budget to select,
100 update passes, the total count taken as known) against the registry's ``mwem`` twice: as registered
(the total bought with 5 % of ε) and with ``public_total=True`` (the total taken as known, as DPBench
does; an assumption the user opts into). "within" when |dplens − dpcomp| ≤ 5 % of dpcomp's mean plus two
combined standard errors.

``--draws K`` (default 4) also runs dplens's registered MWEM (5 trials each) on K other draws of 2000 ranges:
K more with sorted uniform ends (seeds 1 … K), and K of DPBench's own random-range workload (dpcomp_core's
``RandomRange``: a length uniform on 1 … n, then a start uniform over the places it fits): min–max of the
error over the draws, the spread a comparison inherits when each side draws its own ranges.

``--adaptive`` adds dplens's ``rounds="auto"`` (DPBench's MWEM* rule) beside dpcomp_core's
``mwemND_adaptive_engine`` (its 1-D table; its default index misspells the table's key, so the bench names
the key the table has) over ``--adaptive-trials`` trials (dpcomp_core's takes seconds a run at 60+ rounds).

AHP: dpcomp_core's ``ahpND_engine()`` (ratio 0.85, η 0.35, its Cython helper) against the registry's
``ahp``: error, and CPU and wall milliseconds per run (warm: dplens's compiled kernels are loaded by one
run before timing). Target: dplens ≥ 3x faster in CPU time. The cold start is measured apart, once, in a
fresh interpreter per side (imports plus the first run on the first histogram at ε = 0.1): dplens's
compiled kernels cost numba's import and the load of their on-disk cache (or their compilation on a
first checkout, ``NUMBA_CACHE_DIR`` pointing to an empty folder), a fixed cost that a harness timing a
few runs per fresh process spreads over them.
"""

from __future__ import annotations

import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # one BLAS thread a side
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import importlib  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from results import Recorder  # noqa: E402

from dplens.core.mechanisms import MECHANISMS  # noqa: E402
from dplens.core.queries.workloads import Ranges  # noqa: E402

N = 4096
QUERIES = 2000
WORKLOAD_SEED = 12345
TOLERANCE = 0.05  # MWEM: within 5 % of dpcomp_core's mean plus two combined standard errors
SPEEDUP_TARGET = 3.0

# (label, seed, total records, spikes, share of the records in the spikes, gamma shape of the floor)
HISTOGRAMS = (
    ("3 spikes 80 %", 10, 190_000, 3, 0.80, 0.5),
    ("8 spikes 50 %", 11, 190_000, 8, 0.50, 0.5),
    ("20 spikes 90 %", 12, 190_000, 20, 0.90, 0.5),
    ("5 spikes 95 %", 13, 190_000, 5, 0.95, 0.5),
    ("4 spikes 40 % smooth floor", 15, 190_000, 4, 0.40, 20.0),
    ("5 spikes 70 % 2M", 14, 2_000_000, 5, 0.70, 0.5),
)


def spiky_histogram(seed: int, total: float, spikes: int, spike_share: float, floor_shape: float) -> np.ndarray:
    """A floor of gamma(floor_shape) counts holding 1 − spike_share of ``total``, plus ``spikes`` Pareto spikes."""
    gen = np.random.default_rng(seed)
    floor = gen.gamma(floor_shape, 1.0, N)
    x = floor / floor.sum() * total * (1 - spike_share)
    heights = gen.pareto(1.0, spikes) + 1
    x[gen.choice(N, spikes, replace=False)] += heights / heights.sum() * total * spike_share
    return np.round(x)


def load_peer() -> tuple[dict, dict]:
    """({'mwem': module, 'ahp': module, ...} of dpcomp_core, {column: reason it is skipped})."""
    source = os.environ.get("DPCOMP_SRC")
    if not source:
        reason = "DPCOMP_SRC is not set (a folder holding a Python-3-runnable dpcomp_core package)"
        return {}, {"mwem": reason, "ahp": reason}
    if not (Path(source) / "dpcomp_core").is_dir():
        reason = f"DPCOMP_SRC={source} holds no dpcomp_core package"
        return {}, {"mwem": reason, "ahp": reason}
    sys.path.insert(0, source)
    modules, skipped = {}, {}
    for key, names in (("mwem", ("dpcomp_core.algorithm.mwemND", "dpcomp_core.query_nd_union",
                                 "dpcomp_core.workload")),
                       ("ahp", ("dpcomp_core.algorithm.ahp",))):
        try:
            modules[key] = [importlib.import_module(name) for name in names]
        except Exception as err:  # noqa: BLE001 - any import failure only skips the column
            skipped[key] = f"importing {names[0]} from {source} failed: {type(err).__name__}: {err}"
    return modules, skipped


def _sorted_ranges(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """2000 ranges with both ends uniform on the bins, sorted (peer-reference.md's setup)."""
    ends = np.sort(np.random.default_rng(seed).integers(0, N, size=(QUERIES, 2)), axis=1)
    return ends[:, 0], ends[:, 1]


def dpbench_ranges(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """2000 ranges drawn as DPBench's random-range workload draws them: length uniform on 1 … N, then a start
    uniform over the N − length + 1 places it fits (a different law from sorted uniform ends: longer ranges)."""
    gen = np.random.default_rng([WORKLOAD_SEED, seed])
    lengths = gen.integers(1, N + 1, size=QUERIES)
    starts = gen.integers(0, N - lengths + 1)
    return starts, starts + lengths - 1


COLD = """
import sys, time
cpu = time.process_time()
import numpy as np
x = np.load({data!r})
if {peer!r}:
    sys.path.insert(0, {source!r})
    from dpcomp_core.algorithm import ahp
    ahp.ahpND_engine().Run(None, x, 0.1, 0)
else:
    from dplens.core.mechanisms import MECHANISMS
    from dplens.core.queries.workloads import Ranges
    MECHANISMS["ahp"].run(x, Ranges(x.size, [0], [9]), 0.1, np.random.default_rng(0))
print(1000 * (time.process_time() - cpu))
"""


def cold_first_run_ms(x: np.ndarray, peer: bool, empty_cache: bool = False) -> float | None:
    """CPU ms of imports plus AHP's first run on ``x`` at ε = 0.1 in a fresh interpreter (dplens's or
    dpcomp_core's); None when the run fails."""
    env = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="bench_peer_spiky_") as folder:
        if empty_cache:  # numba compiles the kernels again, as on a first checkout
            env["NUMBA_CACHE_DIR"] = folder
        data = str(Path(folder) / "x.npy")
        np.save(data, x)
        code = COLD.format(data=data, peer=peer, source=os.environ.get("DPCOMP_SRC", ""))
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    return float(done.stdout.split()[-1]) if done.returncode == 0 and done.stdout.split() else None


def mean_se(values: list[float]) -> tuple[float, float]:
    a = np.asarray(values, dtype=float)
    return float(a.mean()), float(a.std(ddof=1) / np.sqrt(a.size)) if a.size > 1 else 0.0


def timed(runs) -> tuple[list[float], float, float]:
    """(errors, CPU ms per run, wall ms per run) of an iterable that runs and scores one trial per step."""
    cpu, wall = time.process_time(), time.perf_counter()
    errors = [float(e) for e in runs]
    return errors, 1000 * (time.process_time() - cpu) / len(errors), 1000 * (time.perf_counter() - wall) / len(errors)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=30)
    parser.add_argument("--epsilons", default="0.1,1")
    parser.add_argument("--mechanisms", default="mwem,ahp")
    parser.add_argument("--quick", action="store_true", help="the first two histograms only, 10 trials")
    parser.add_argument("--draws", type=int, default=4, help="other range draws for dplens's MWEM (0: none)")
    parser.add_argument("--adaptive", action="store_true", help="rounds='auto' beside dpcomp_core's MWEM*")
    parser.add_argument("--adaptive-trials", type=int, default=10)
    args = parser.parse_args()
    trials = 10 if args.quick else args.trials
    cases = HISTOGRAMS[:2] if args.quick else HISTOGRAMS
    epsilons = [float(e) for e in args.epsilons.split(",")]
    wanted = args.mechanisms.split(",")
    lo, hi = _sorted_ranges(WORKLOAD_SEED)
    ends = np.column_stack((lo, hi))
    workload = Ranges(N, lo, hi)
    peer, skipped = load_peer()
    for key, reason in skipped.items():
        if key in wanted:
            print(f"dpcomp_core {key.upper()} column skipped: {reason}")
    queries = None
    if "mwem" in peer:
        _, union, peer_workload = peer["mwem"]
        queries = peer_workload.Workload([union.ndRangeUnion().add1DRange(int(a), int(b)) for a, b in ends], (N,))
    mwem, mwem_public, ahp = MECHANISMS["mwem"], dataclasses.replace(MECHANISMS["mwem"], public_total=True), \
        MECHANISMS["ahp"]
    print(f"{QUERIES} random ranges over {N} bins, mean absolute error per query, mean ± standard error over "
          f"{trials} trials a side; CPU and wall ms per run\n")

    def error(estimate_or_answers: np.ndarray, truth: np.ndarray, answers: bool = False) -> float:
        got = estimate_or_answers if answers else workload.matvec(estimate_or_answers)
        return float(np.mean(np.abs(got - truth)))

    warm = spiky_histogram(*HISTOGRAMS[0][1:])
    for mechanism in (mwem, mwem_public):  # loads the compiled kernels before anything is timed
        mechanism.run(warm, workload, 1.0, np.random.default_rng([3, 0]))
    adaptive = dataclasses.replace(mwem, rounds="auto")
    adaptive_public = dataclasses.replace(mwem, rounds="auto", public_total=True)
    star_key = None
    if args.adaptive and "mwem" in peer:
        star_key = next((key for key in getattr(peer["mwem"][0], "Lfunction", {}) if key.endswith("1D")), None)
        if star_key is None:
            print("dpcomp_core MWEM* column skipped: no 1-D table in mwemND.Lfunction")
    draws = [(f"sorted ends, seed {k}", *_sorted_ranges(k)) for k in range(1, args.draws + 1)] + \
        [(f"DPBench random-range, seed {k}", *dpbench_ranges(k)) for k in range(1, args.draws + 1)]
    with Recorder("bench_peer_spiky", args) as rec:
        if "ahp" in wanted:
            first = spiky_histogram(*cases[0][1:])
            cold = {"dplens": cold_first_run_ms(first, False),
                    "dplens, empty numba cache": cold_first_run_ms(first, False, True)}
            if "ahp" in peer:
                cold["dpcomp_core"] = cold_first_run_ms(first, True)
            print("AHP cold start (fresh interpreter: imports + first run, first histogram, ε = 0.1), CPU ms: "
                  + ", ".join(f"{k} {v:.0f}" if v is not None else f"{k} failed" for k, v in cold.items()))
            rec.row(histogram="cold start", **{f"ahp_cold_{k.replace(' ', '_').replace(',', '')}_cpu_ms": v
                                               for k, v in cold.items()})
        for label, seed, total, spikes, share, shape in cases:
            x = spiky_histogram(seed, total, spikes, share, shape)
            truth = workload.matvec(x)
            print(f"### {label}: {x.sum():,.0f} records, largest bin {x.max():,.0f}, "
                  f"{np.mean(x == 0):.0%} of bins empty")
            for epsilon in epsilons:
                row = {"histogram": label, "records": float(x.sum()), "epsilon": epsilon, "trials": trials}
                if "mwem" in wanted:
                    ours, ours_cpu, ours_wall = timed(
                        error(mwem.run(x, workload, epsilon, np.random.default_rng([1, s])).answers, truth, True)
                        for s in range(trials))
                    public, public_cpu, _ = timed(
                        error(mwem_public.run(x, workload, epsilon, np.random.default_rng([1, s])).answers, truth,
                              True) for s in range(trials))
                    (m, se), (pm, pse) = mean_se(ours), mean_se(public)
                    row.update(mwem_mae=m, mwem_se=se, mwem_cpu_ms=ours_cpu, mwem_wall_ms=ours_wall,
                               mwem_public_total_mae=pm, mwem_public_total_se=pse, mwem_public_total_cpu_ms=public_cpu)
                    text = f"MWEM ε={epsilon:g}: dplens {m:.5g} ± {se:.2g} ({ours_cpu:.1f} ms CPU, {ours_wall:.1f} " \
                           f"wall); public total {pm:.5g} ± {pse:.2g}"
                    if queries is not None:
                        mwem_nd = peer["mwem"][0]
                        theirs, their_cpu, their_wall = timed(
                            error(mwem_nd.mwemND_engine().Run(queries, x.astype(np.int64), epsilon, s), truth)
                            for s in range(trials))
                        tm, tse = mean_se(theirs)
                        verdicts = [abs(a - tm) <= TOLERANCE * tm + 2 * np.hypot(b, tse) for a, b in ((m, se),
                                                                                                   (pm, pse))]
                        row.update(dpcomp_mwem_mae=tm, dpcomp_mwem_se=tse, dpcomp_mwem_cpu_ms=their_cpu,
                                   dpcomp_mwem_wall_ms=their_wall, mwem_ratio=m / tm, mwem_public_total_ratio=pm / tm,
                                   mwem_within=bool(verdicts[0]), mwem_public_total_within=bool(verdicts[1]))
                        text += f" | dpcomp {tm:.5g} ± {tse:.2g} ({their_cpu:.0f} ms CPU) | ratio {m / tm:.3f} " \
                                f"({'within' if verdicts[0] else 'OUT'}), public total {pm / tm:.3f} " \
                                f"({'within' if verdicts[1] else 'OUT'})"
                    print("  " + text, flush=True)
                    if draws:
                        spread = []
                        for _, lo, hi in draws:
                            other = Ranges(N, lo, hi)
                            other_truth = other.matvec(x)
                            runs = [mwem.run(x, other, epsilon, np.random.default_rng([1, s])) for s in range(5)]
                            spread.append(np.mean([error(r.answers, other_truth, True) for r in runs]))
                        row.update(mwem_other_draws_min=float(min(spread)), mwem_other_draws_max=float(max(spread)))
                        print(f"    dplens MWEM on {len(draws)} other range draws: {min(spread):.5g} – "
                              f"{max(spread):.5g} ({max(spread) / min(spread):.2f}x; this draw {m:.5g})", flush=True)
                    if args.adaptive:
                        auto, auto_cpu, _ = timed(
                            error(adaptive.run(x, workload, epsilon, np.random.default_rng([1, s])).answers, truth,
                                  True) for s in range(trials))
                        am, ase = mean_se(auto)
                        used = adaptive.run(x, workload, epsilon, np.random.default_rng([1, 0])).params["rounds_used"]
                        auto_public = mean_se([error(adaptive_public.run(x, workload, epsilon,
                                                                         np.random.default_rng([1, s])).answers,
                                                     truth, True) for s in range(trials)])
                        row.update(mwem_auto_mae=am, mwem_auto_se=ase, mwem_auto_cpu_ms=auto_cpu, mwem_auto_rounds=used,
                                   mwem_auto_public_total_mae=auto_public[0], mwem_auto_public_total_se=auto_public[1])
                        text = f"  MWEM rounds=auto (T={used}): dplens {am:.5g} ± {ase:.2g} ({auto_cpu:.1f} ms CPU); " \
                               f"public total {auto_public[0]:.5g} ± {auto_public[1]:.2g}"
                        if star_key is not None:
                            star = peer["mwem"][0].mwemND_adaptive_engine(index=star_key)
                            theirs, star_cpu, _ = timed(
                                error(star.Run(queries, x.astype(np.int64), epsilon, s), truth)
                                for s in range(args.adaptive_trials))
                            sm, sse = mean_se(theirs)
                            row.update(dpcomp_mwem_star_mae=sm, dpcomp_mwem_star_se=sse,
                                       dpcomp_mwem_star_cpu_ms=star_cpu, dpcomp_mwem_star_rounds=star._nrounds)
                            text += f" | dpcomp MWEM* (T={star._nrounds}) {sm:.5g} ± {sse:.2g} over " \
                                    f"{args.adaptive_trials} ({star_cpu:.0f} ms CPU) | ratio {am / sm:.3f}, public " \
                                    f"total {auto_public[0] / sm:.3f}"
                        print("  " + text, flush=True)
                if "ahp" in wanted:
                    ahp.run(x, workload, epsilon, np.random.default_rng([3, seed]))  # kernels loaded before timing
                    ours, ours_cpu, ours_wall = timed(
                        error(ahp.run(x, workload, epsilon, np.random.default_rng([2, s])).estimate, truth)
                        for s in range(trials))
                    m, se = mean_se(ours)
                    row.update(ahp_mae=m, ahp_se=se, ahp_cpu_ms=ours_cpu, ahp_wall_ms=ours_wall)
                    text = (f"AHP  ε={epsilon:g}: dplens {m:.5g} ± {se:.2g} ({ours_cpu:.2f} ms CPU, "
                            f"{ours_wall:.2f} wall)")
                    if "ahp" in peer:
                        engine = peer["ahp"][0].ahpND_engine
                        theirs, their_cpu, their_wall = timed(error(engine().Run(None, x, epsilon, s), truth)
                                                              for s in range(trials))
                        tm, tse = mean_se(theirs)
                        speedup = their_cpu / ours_cpu
                        row.update(dpcomp_ahp_mae=tm, dpcomp_ahp_se=tse, dpcomp_ahp_cpu_ms=their_cpu,
                                   dpcomp_ahp_wall_ms=their_wall, ahp_ratio=m / tm, ahp_speedup_cpu=speedup,
                                   ahp_speedup_wall=their_wall / ours_wall,
                                   ahp_fast_enough=bool(speedup >= SPEEDUP_TARGET))
                        verdict = "met" if speedup >= SPEEDUP_TARGET else "MISSED"
                        text += f" | dpcomp {tm:.5g} ± {tse:.2g} ({their_cpu:.1f} ms CPU, {their_wall:.1f} wall) | " \
                                f"ratio {m / tm:.3f}, {speedup:.0f}x faster ({verdict})"
                    print("  " + text, flush=True)
                rec.row(**row)


if __name__ == "__main__":
    main()
