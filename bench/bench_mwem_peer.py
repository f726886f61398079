"""MWEM side by side with dpcomp_core's MWEM on high-count histograms (10^4 to 10^6 records per bin).

Run: DPCOMP_SRC=PATH/TO/dpcomp_core nice -n 5 .venv/bin/python bench/bench_mwem_peer.py [--trials 30] [--trace]

``DPCOMP_SRC`` is a folder holding a Python-3-runnable copy of dpcomp_core (github.com/dpcomp-org/dpcomp_core;
its ``dpcomp_core`` package imported from there, never from this repository). Without it, or when the import
fails, the peer column is skipped with the reason printed and only dplens's figures are shown.

Setup as in peer-reference.md (the shared spec folder): 2000 random ranges [a, b], a and b uniform over the
bins and sorted, drawn once from ``default_rng(12345)`` (which ranges are drawn moves MWEM's error by up to
2x, so both sides answer the same draw); error = mean absolute error per query of the answers read off each
side's histogram estimate; dpcomp_core's ``mwemND_engine()`` with its defaults (10 rounds, half of each
round's budget to select, 100 update passes, the total count taken as known) against the registry's "mwem".
Histograms: three seeded shapes (a smooth bump, a step, a spiky one) scaled to 10^4, 10^5 and 10^6
records per bin on average (rounded to counts), and DPBench's HEPTH (84.8 per bin) as a control, where the
two are known to agree. Per cell: each side's mean ± standard error over the trials, the ratio
dplens / dpcomp_core, and "agree" when |difference| ≤ 2 combined standard errors.

``--trace`` prints, for seed 0 of every cell, each round's chosen range, its measurement's noise scale
and the estimate's total on both sides (the instrumentation used to find where they part).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from results import Recorder, dpcomp_modules, shared_data  # noqa: E402

import dplens.core.mechanisms.mwem as mwem_module  # noqa: E402
from dplens.core.mechanisms import MECHANISMS  # noqa: E402
from dplens.core.queries.workloads import Ranges  # noqa: E402

CONTROL = shared_data("dpbench-1d", "HEPTH.csv")
QUERIES = 2000
WORKLOAD_SEED = 12345
SHAPE_SEED = 20261121


def shapes(n: int) -> dict[str, np.ndarray]:
    """Three seeded, strictly positive shapes over n bins (relative weights, not yet scaled)."""
    gen = np.random.default_rng(SHAPE_SEED)
    cells = np.arange(n)
    bump = np.exp(-0.5 * ((cells - 0.37 * n) / (0.1 * n)) ** 2) + 0.05
    step = np.select([cells < n // 3, cells < 2 * n // 3], [1.0, 4.0], 0.5)
    spiky = np.full(n, 0.2)
    spikes = gen.choice(n, size=max(n // 100, 4), replace=False)
    spiky[spikes] += gen.pareto(1.0, spikes.size) * 20
    return {"bump": bump, "step": step, "spiky": spiky}


def histograms(n: int, scales: list[float], names: list[str], control: bool) -> list[tuple[str, np.ndarray]]:
    out = []
    for name, shape in shapes(n).items():
        if name not in names:
            continue
        for scale in scales:
            out.append((f"{name} {scale:.0e}/bin", np.round(shape / shape.mean() * scale)))
    if control:
        if CONTROL.exists() and n == 4096:
            out.append(("HEPTH (control)", np.loadtxt(CONTROL, skiprows=1)))
        else:
            print(f"control skipped: {CONTROL} absent or n != 4096")
    return out


def load_peer() -> tuple[object | None, str]:
    """(dpcomp_core's modules, '') or (None, the reason the peer column is skipped)."""
    return dpcomp_modules("algorithm.mwemND", "query_nd_union", "workload")


class Tracer:
    """Per-round chosen ranges, noise scales and the estimate's total, for one run of either side."""

    def __init__(self) -> None:
        self.rounds: list[dict] = []

    def dplens(self, x: np.ndarray, workload: Ranges, epsilon: float, seed: int) -> list[dict]:
        self.rounds = []
        original_select, original_noise = mwem_module.exponential_mechanism, mwem_module.add_laplace
        original_update = mwem_module.MWEM._update
        state: dict = {}

        def select(scores, epsilon_select, sensitivity, rng):
            index = original_select(scores, epsilon_select, sensitivity, rng)
            state["top"] = float(np.max(scores))
            state["picked_score"] = float(scores[index])
            return index

        def noise(rng, value, scale):
            state["scale"] = float(scale)
            return original_noise(rng, value, scale)

        def update(mechanism, estimate, first, atom_of, rows, measured, total, runs):
            out = original_update(mechanism, estimate, first, atom_of, rows, measured, total, runs)
            cells = np.flatnonzero(rows[-1])
            self.rounds.append({"range": (int(cells[0]), int(cells[-1])), "scale": state.get("scale"),
                                "picked_score": state["picked_score"], "top_score": state["top"],
                                "total": float(out.sum())})
            return out

        mwem_module.exponential_mechanism, mwem_module.add_laplace = select, noise
        mwem_module.MWEM._update = update
        try:
            release = MECHANISMS["mwem"].run(x, workload, epsilon, np.random.default_rng([1, seed]))
        finally:
            mwem_module.exponential_mechanism, mwem_module.add_laplace = original_select, original_noise
            mwem_module.MWEM._update = original_update
        print(f"    dplens noisy total {release.params['noisy_total']:.6g} (true {x.sum():.6g})")
        return self.rounds


def peer_run(peer, queries, x: np.ndarray, epsilon: float, seed: int, trace: bool = False):
    """dpcomp_core's estimate (with ``trace``: the estimate and its per-round log)."""
    mwem_nd = peer[0]
    engine = mwem_nd.mwemND_engine()
    if not trace:
        return engine.Run(queries, x.astype(np.int64), epsilon, seed)
    rounds: list[dict] = []
    original = mwem_nd.mwemND_simple_engine._exponentialMechanism

    rounds_total = engine._nrounds
    scale = rounds_total / (epsilon * (1 - engine._ratio))  # its measurement: sens · rounds / query budget

    def select(truth, estimate, candidates, epsilon_select, prng):
        index = original(truth, estimate, candidates, epsilon_select, prng)
        scores = np.array([abs(q.eval(truth - estimate)) for q in candidates])
        r = candidates[index].ranges[0]
        rounds.append({"range": (int(r.lb[0]), int(r.ub[0])), "scale": scale,
                       "picked_score": float(scores[index]), "top_score": float(scores.max()),
                       "total": float(estimate.sum())})
        return index

    mwem_nd.mwemND_simple_engine._exponentialMechanism = staticmethod(select)
    try:
        estimate = engine.Run(queries, x.astype(np.int64), epsilon, seed)
    finally:
        mwem_nd.mwemND_simple_engine._exponentialMechanism = staticmethod(original)
    for k, row in enumerate(rounds):  # the total logged at selection is the previous round's
        row["total"] = rounds[k + 1]["total"] if k + 1 < len(rounds) else float(estimate.sum())
    return estimate, rounds


def mean_se(values: list[float]) -> tuple[float, float]:
    a = np.asarray(values, dtype=float)
    return float(a.mean()), float(a.std(ddof=1) / np.sqrt(a.size)) if a.size > 1 else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=30)
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--scales", default="1e4,1e5,1e6")
    parser.add_argument("--shapes", default="bump,step,spiky")
    parser.add_argument("--epsilons", default="0.1,1")
    parser.add_argument("--no-control", action="store_true", help="leave out DPBench's HEPTH")
    parser.add_argument("--trace", action="store_true", help="print each round of seed 0 on both sides")
    args = parser.parse_args()
    n = args.n
    ends = np.sort(np.random.default_rng(WORKLOAD_SEED).integers(0, n, size=(QUERIES, 2)), axis=1)
    workload = Ranges(n, ends[:, 0], ends[:, 1])
    peer, reason = load_peer()
    queries = None
    if peer is None:
        print(f"dpcomp_core column skipped: {reason}")
    else:
        _, union, peer_workload = peer
        queries = peer_workload.Workload([union.ndRangeUnion().add1DRange(int(a), int(b)) for a, b in ends], (n,))
    epsilons = [float(e) for e in args.epsilons.split(",")]
    cases = histograms(n, [float(s) for s in args.scales.split(",")], args.shapes.split(","), not args.no_control)
    print(f"MWEM, {QUERIES} random ranges over {n} bins, mean absolute error per query, mean ± standard error over "
          f"{args.trials} trials a side\n")
    print("| histogram | ε | dplens | dpcomp_core | ratio | agree |")
    print("|---|---|---|---|---|---|")
    with Recorder("bench_mwem_peer", args) as rec:
        for label, x in cases:
            truth = workload.matvec(x)
            for epsilon in epsilons:
                if args.trace:
                    print(f"  trace {label} ε={epsilon:g}")
                    ours = Tracer().dplens(x, workload, epsilon, 0)
                    theirs = peer_run(peer, queries, x, epsilon, 0, trace=True)[1] if peer else []
                    for k in range(len(ours)):
                        a = ours[k]
                        b = theirs[k] if k < len(theirs) else {}
                        print(f"    round {k + 1}: dplens {a['range']} score "
                              f"{a['picked_score']:.4g}/{a['top_score']:.4g} "
                              f"scale {a['scale']:.4g} total {a['total']:.8g} | dpcomp {b.get('range')} "
                              f"score {b.get('picked_score', float('nan')):.4g}/{b.get('top_score', float('nan')):.4g} "
                              f"scale {b.get('scale', float('nan')):.4g} total {b.get('total', float('nan')):.8g}")
                start = time.process_time()
                ours = [float(np.mean(np.abs(MECHANISMS["mwem"].run(x, workload, epsilon,
                                                                     np.random.default_rng([1, seed])).answers
                                             - truth)))
                        for seed in range(args.trials)]
                ours_cpu = (time.process_time() - start) / args.trials
                mean, se = mean_se(ours)
                row = {"histogram": label, "epsilon": epsilon, "records": float(x.sum()), "trials": args.trials,
                       "dplens_mae": mean, "dplens_se": se, "dplens_cpu_ms": 1000 * ours_cpu}
                peer_text, ratio_text, agree_text = "skipped", "", ""
                if peer is not None:
                    start = time.process_time()
                    theirs = [float(np.mean(np.abs(workload.matvec(peer_run(peer, queries, x, epsilon, seed)) - truth)))
                              for seed in range(args.trials)]
                    peer_cpu = (time.process_time() - start) / args.trials
                    peer_mean, peer_se = mean_se(theirs)
                    ratio = mean / peer_mean
                    agree = abs(mean - peer_mean) <= 2 * np.hypot(se, peer_se)
                    row.update(dpcomp_mae=peer_mean, dpcomp_se=peer_se, dpcomp_cpu_ms=1000 * peer_cpu, ratio=ratio,
                               agree=bool(agree))
                    peer_text = f"{peer_mean:.5g} ± {peer_se:.2g}"
                    ratio_text, agree_text = f"{ratio:.3f}", "yes" if agree else "NO"
                rec.row(**row)
                print(f"| {label} | {epsilon:g} | {mean:.5g} ± {se:.2g} | {peer_text} | {ratio_text} | {agree_text} |",
                      flush=True)


if __name__ == "__main__":
    main()
