"""Synthetic records on Adult (../shared/data/adult, by path from the repository; skipped when absent): MST (and,
with --aim, AIM) fitted once per run through OpenDP exactly as dplens.core.tables.synthesis configures them, then
sampled three ways from the same fitted model — dplens's sampler (dplens.core.tables.sampler), mbi's default
``synthesize()`` ("round": ranks in row order, siblings comonotone) and mbi's ``method="sample"`` (i.i.d.) —
next to the non-private independence baseline. Score: mean total-variation distance over all 2-way marginals.
Prints wall and CPU time of every fit and sampler.

    python bench/bench_synthesis.py [--runs 3] [--rho 0.1 0.5 1] [--aim] [--skip-mst]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from results import Recorder, record

from dplens.core.queries.marginals import MarginalWorkload
from dplens.core.tables.contract import workload_rmse
from dplens.core.tables.records import independence_tvd, load_table, marginal_tvd
from dplens.core.tables.sampler import synthesize_table
from dplens.core.tables.synthesis import AIM, MST

ADULT = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "adult"
SAMPLERS = ("dplens", "mbi round (default)", "mbi sample")
TARGET_RHO, TARGET_GAIN = 0.5, 0.40  # MST at rho=0.5 at least 40 % below the independence baseline


def _timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def fit_table(mechanism, workload: MarginalWorkload, records: np.ndarray, rho: float):
    """OpenDP's fitted ``ContingencyTable``, fitted by ``mechanism.fitted_table`` exactly as its ``run`` does."""
    from dplens.core.tables.mirror_descent import mirror_descent

    def estimator(mbi_domain, loss_fn, *, potentials=None, final=False):
        return mirror_descent(mbi_domain, loss_fn, potentials=potentials,
                              iters=mechanism.fit_iters(potentials, final=final))

    return mechanism.fitted_table(workload, records, mechanism.handed_rho(rho, len(workload.domain.names)), estimator)


def _coded(frame, names) -> np.ndarray:
    complete = frame.drop_nulls(subset=list(names))  # OpenDP's null key: true count 0, dropped as dplens does
    return np.column_stack([complete[n].to_numpy().astype(np.int64) for n in names])


def bench(mechanism, label: str, table, workload, rhos, runs: int, baseline: float) -> dict[float, dict]:
    names = table.domain.names
    truth = workload.answer(table.records)
    results: dict[float, dict] = {}
    for rho_index, rho in enumerate(rhos):
        scores = {s: [] for s in SAMPLERS}
        rmses: dict[str, list[float]] = {s: [] for s in SAMPLERS}
        times = {s: [] for s in ("fit", *SAMPLERS)}
        for run in range(runs):
            fitted, wall, cpu = _timed(lambda rho=rho: fit_table(mechanism, workload, table.records, rho))
            times["fit"].append((wall, cpu))
            rng = np.random.default_rng([rho_index, run])
            draws = {"dplens": lambda t=fitted, g=rng: synthesize_table(t, None, g),
                     "mbi round (default)": lambda t=fitted: t.synthesize(),
                     "mbi sample": lambda t=fitted: t.synthesize(method="sample")}
            line = []
            for sampler, draw in draws.items():
                frame, s_wall, s_cpu = _timed(draw)
                times[sampler].append((s_wall, s_cpu))
                coded = _coded(frame, names)
                scores[sampler].append(marginal_tvd(table.domain, table.records, coded))
                rmses[sampler].append(workload_rmse(workload, truth, workload.answer(coded)))
                line.append(f"{sampler} {scores[sampler][-1]:.4f} ({s_wall:.1f}s)")
            print(f"  {label} rho={rho:g} run {run + 1}: fit {wall:.1f}s wall / {cpu:.1f}s CPU; TVD "
                  + ", ".join(line), flush=True)
        results[rho] = {"scores": scores, "rmse": rmses, "times": times}
        _summary(label, rho, scores, rmses, times, baseline)
    return results


def _summary(label: str, rho: float, scores, rmses, times, baseline: float) -> None:
    fit = np.array(times["fit"])
    print(f"{label} rho={rho:g}, {len(fit)} runs (fit {fit[:, 0].mean():.1f}s wall / {fit[:, 1].mean():.1f}s CPU "
          f"per run): mean 2-way TVD, independence baseline {baseline:.4f}")
    for sampler in SAMPLERS:
        tvd, spent = np.array(scores[sampler]), np.array(times[sampler])
        spread = tvd.std(ddof=1) if len(tvd) > 1 else 0.0
        gain = 1 - tvd.mean() / baseline
        print(f"    {sampler:<20} {tvd.mean():.4f} ± {spread:.4f}  ({abs(gain):.0%} "
              f"{'below' if gain >= 0 else 'above'} "
              f"the baseline; released marginals' workload RMSE {np.mean(rmses[sampler]):.1f}; "
              f"sampling {spent[:, 0].mean():.2f}s wall / {spent[:, 1].mean():.2f}s CPU)", flush=True)
        record(name=f"{label} ρ={rho:g}, {sampler}", runs=len(tvd), tvd_mean=tvd.mean(), tvd_sd=spread,
               baseline_tvd=baseline, gain=gain, workload_rmse=np.mean(rmses[sampler]),
               fit_wall_s=fit[:, 0].mean(), fit_cpu_s=fit[:, 1].mean(), sampling_wall_s=spent[:, 0].mean(),
               sampling_cpu_s=spent[:, 1].mean())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3, help="fits per rho (each sampled three ways)")
    parser.add_argument("--rho", type=float, nargs="+", default=[0.1, 0.5, 1.0])
    parser.add_argument("--aim", action="store_true", help="also AIM (dplens's bounded defaults; minutes per fit)")
    parser.add_argument("--skip-mst", action="store_true")
    args = parser.parse_args()
    if not (ADULT / "adult.csv").is_file():
        print(f"skipped: {ADULT / 'adult.csv'} is absent")
        return
    table = load_table(ADULT / "adult.csv", ADULT / "adult-domain.json")
    workload = MarginalWorkload.all_kway(table.domain, 2)
    baseline = independence_tvd(table.domain, table.records)
    print(f"Adult: {len(table.records):,} records, {len(table.domain.names)} attributes; independence baseline "
          f"(non-private, product of exact 1-way marginals): mean 2-way TVD {baseline:.4f}", flush=True)
    wall, cpu = time.perf_counter(), time.process_time()
    if not args.skip_mst:
        mst = bench(MST(), "MST", table, workload, args.rho, args.runs, baseline)
        if TARGET_RHO in mst:
            gain = 1 - np.mean(mst[TARGET_RHO]["scores"]["dplens"]) / baseline
            print(f"target: MST at rho={TARGET_RHO:g} at least {TARGET_GAIN:.0%} below the baseline: "
                  f"{gain:.0%} ({'met' if gain >= TARGET_GAIN else 'NOT met'})")
    if args.aim:
        bench(AIM(), "AIM", table, workload, args.rho, args.runs, baseline)
    print(f"total {time.perf_counter() - wall:.0f}s wall / {time.process_time() - cpu:.0f}s CPU")


if __name__ == "__main__":
    with Recorder("bench_synthesis"):  # bench/results.py: the rows above to bench/results/bench_synthesis.json
        main()
