"""Tables of records on Adult ($DPLENS_SHARED_DATA/adult, else ../shared/data/adult; skipped when absent): MST through
OpenDP vs the independence baseline, and ResidualPlanner vs Identity on all 2-way marginals. Prints wall and CPU time.

    python bench/bench_tables.py [--rho 0.5] [--skip-mst] [--direct --runs 4] [--aim] [--full-table]

--aim runs AIM (dplens's bounded defaults) at --rho; --full-table compares Identity on the full table of a
5-attribute synthetic table (32,768 to 33.5 M cells) with the marginal methods, up to where the guard refuses it.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from results import Recorder, record, require, shared_data

from dplens.core.queries.marginals import MarginalWorkload
from dplens.core.tables.mechanisms import identity_marginals
from dplens.core.tables.opt_marginals import laplace_identity_rmse, plan_opt_marginals
from dplens.core.tables.records import independence_tvd, load_table, marginal_tvd
from dplens.core.tables.residual_planner import measure, plan_residuals
from dplens.core.tables.synthesis import AIM, MST

ADULT = shared_data("adult")


def _timed(fn, *args):
    """``fn(*args)`` with its wall and CPU seconds."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn(*args)
    return out, time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rho", type=float, default=0.5)
    parser.add_argument("--skip-mst", action="store_true")
    parser.add_argument("--runs", type=int, default=4, help="MST runs per side with --direct")
    parser.add_argument("--draws", type=int, default=20, help="ResidualPlanner draws behind the simulated RMSE")
    parser.add_argument("--direct", action="store_true",
                        help="also run OpenDP's MST directly (Context API, split 0.5, where it accepts its split) "
                             "next to the wrapper at the same split: the wrapper must lose nothing")
    parser.add_argument("--aim", action="store_true", help="run AIM with dplens's defaults at --rho")
    parser.add_argument("--full-table", action="store_true", help="only the 5-attribute full-table comparison")
    args = parser.parse_args()
    if not args.full_table:
        require(ADULT / "adult.csv", ADULT / "adult-domain.json")
    with Recorder("bench_tables", args):
        if args.full_table:
            full_table(args.rho)
        else:
            adult(args)


def adult(args: argparse.Namespace) -> None:
    table = load_table(ADULT / "adult.csv", ADULT / "adult-domain.json")
    print(f"Adult: {len(table.records):,} records, {len(table.domain.names)} attributes")
    workload = MarginalWorkload.all_kway(table.domain, 2)
    truth = workload.answer(table.records)
    for rho in (0.1, 1.0):
        plan, wall, cpu = _timed(lambda rho=rho: plan_residuals(workload, rho))
        rng = np.random.default_rng(1)
        draws = [_mse(measure(plan, table.records, rng), truth) for _ in range(args.draws)]
        mse, se = float(np.mean(draws)), float(np.std(draws, ddof=1) / math.sqrt(len(draws)))
        ident, sigma = identity_marginals(workload, table.records, rho, rng)
        verdict = "within" if abs(mse - plan.expected_mse) <= 3 * se else "OUTSIDE"
        print(f"all 2-way ({len(workload.marginals)} marginals, {workload.cells:,} cells) rho={rho:g}: "
              f"ResidualPlanner RMSE closed form {plan.expected_rmse:.4f}, simulated {math.sqrt(mse):.4f} over "
              f"{args.draws} draws (MSE {mse:.3f} ± {se:.3f}: closed form {verdict} 3 sigma; plan {wall:.3f}s wall / "
              f"{cpu:.3f}s CPU); Identity closed form {sigma:.4f}, one draw {math.sqrt(_mse(ident, truth)):.4f}")
        record(name=f"ResidualPlanner, all 2-way, ρ={rho:g}", rmse_closed_form=plan.expected_rmse,
               rmse_simulated=math.sqrt(mse), draws=args.draws, within_3_se=verdict == "within", plan_wall_s=wall,
               plan_cpu_s=cpu, identity_rmse_closed_form=sigma)
    for rho in (0.1, 1.0):
        plan, wall, cpu = _timed(lambda rho=rho: plan_opt_marginals(workload, rho))
        rp = plan_residuals(workload, rho).expected_rmse
        record(name=f"HDMM OPT_M, all 2-way, ρ={rho:g}", rmse=plan.expected_rmse, wall_s=wall, cpu_s=cpu,
               laplace_identity_rmse=laplace_identity_rmse(workload, rho), residual_planner_rmse=rp)
        identity_rmse = identity_marginals(workload, table.records[:1], rho, np.random.default_rng(0))[1]
        print(f"all 2-way rho={rho:g}: HDMM OPT_M (Laplace, epsilon={math.sqrt(2 * rho):.4g}) RMSE "
              f"{plan.expected_rmse:.4f}"
              f" ({len(plan.measured())} marginals measured; optimised in {wall:.2f}s wall / {cpu:.2f}s CPU); Laplace "
              f"on each marginal {laplace_identity_rmse(workload, rho):.4f}; ResidualPlanner {rp:.4f} "
              f"(RP <= Identity <= OPT_M: {rp <= identity_rmse <= plan.expected_rmse})")
    for k, anchor in ((1, 3.0468), (2, 6.3587), (3, 10.5153)):
        rmse = plan_residuals(MarginalWorkload.all_kway(table.domain, k), 0.5).expected_rmse
        print(f"anchor (dkifer/ResidualPlanner, rho=0.5, all {k}-way): {rmse:.4f} vs {anchor} "
              f"({100 * (rmse / anchor - 1):+.2f} %)")
        record(name=f"ResidualPlanner anchor, ρ=0.5, all {k}-way", rmse=rmse, anchor_rmse=anchor, ratio=rmse / anchor)
    base = independence_tvd(table.domain, table.records)
    print(f"independence baseline (non-private, product of exact 1-way marginals): mean 2-way TVD {base:.4f}")
    record(name="independence baseline (non-private)", tvd=base)
    if args.aim:
        progress = []
        release, wall, cpu = _timed(lambda: AIM().run(table.records, workload, args.rho, progress=progress.append))
        print(f"AIM rho={args.rho:g} (defaults {release.params}): mean 2-way TVD "
              f"{marginal_tvd(table.domain, table.records, release.records):.4f} vs baseline {base:.4f}; "
              f"{wall:.1f}s wall / {cpu:.1f}s CPU; progress reports {len(progress)}, last {progress[-1]:.2f}")
        record(name=f"AIM, ρ={args.rho:g}", tvd=marginal_tvd(table.domain, table.records, release.records),
               wall_s=wall, cpu_s=cpu)
    if args.skip_mst:
        return
    release, wall, cpu = _timed(lambda: MST(measure_split=0.9).run(table.records, workload, args.rho))
    print(f"MST rho={args.rho:g} (split 0.9, handed rho {release.params['rho_handed']!r}, "
          f"{release.params['null_rows_dropped']} null rows dropped): mean 2-way TVD "
          f"{marginal_tvd(table.domain, table.records, release.records):.4f} vs baseline {base:.4f}; "
          f"{wall:.1f}s wall / {cpu:.1f}s CPU (the first run in this process includes JAX's compilation)")
    record(name=f"MST split 0.9, ρ={args.rho:g}", tvd=marginal_tvd(table.domain, table.records, release.records),
           wall_s=wall, cpu_s=cpu)
    if not args.direct:
        return
    scores: dict[str, list[tuple[float, float, float]]] = {"direct": [], "wrapper": []}
    for run in range(args.runs):  # interleaved, side by side, so the machine's load hits both alike
        for kind in ("direct", "wrapper"):
            if kind == "direct":
                records, wall, cpu = _timed(lambda: _direct_mst(table, args.rho, 0.5))
            else:
                out, wall, cpu = _timed(lambda: MST(measure_split=0.5).run(table.records, workload, args.rho))
                records = out.records
            scores[kind].append((marginal_tvd(table.domain, table.records, records), wall, cpu))
            print(f"  run {run + 1} {kind}: TVD {scores[kind][-1][0]:.4f}, {wall:.1f}s wall / {cpu:.1f}s CPU")
    for kind, rows in scores.items():
        tvd, wall, cpu = (np.array(c) for c in zip(*rows, strict=True))
        print(f"MST split 0.5, rho={args.rho:g}, {kind} "
              f"({'OpenDP call as documented' if kind == 'direct' else 'dplens'}):"
              f" mean 2-way TVD {tvd.mean():.4f} ± {tvd.std(ddof=1) if len(tvd) > 1 else 0:.4f} over {len(tvd)} runs; "
              f"{wall.mean():.1f}s wall / {cpu.mean():.1f}s CPU per run")
        record(name=f"MST split 0.5, ρ={args.rho:g}, {kind}", tvd_mean=tvd.mean(), runs=len(tvd),
               wall_s_per_run=wall.mean(), cpu_s_per_run=cpu.mean())
    ratio = np.mean([r[0] for r in scores["wrapper"]]) / np.mean([r[0] for r in scores["direct"]])
    print(f"wrapper / direct mean TVD: {ratio:.3f} (target within 10 %: "
          f"{'met' if abs(ratio - 1) <= 0.1 else 'NOT met'})")


def _mse(estimates, truth) -> float:
    return float(np.mean(np.concatenate([(e - t).ravel() ** 2 for e, t in zip(estimates, truth, strict=True)])))


def _direct_mst(table, rho: float, split: float) -> np.ndarray:
    """The plain OpenDP call (as in its docs), for comparison with the wrapper; rows with nulls dropped."""
    import warnings

    import opendp.prelude as dp
    import polars as pl

    dp.enable_features("contrib")
    names = table.domain.names
    frame = pl.DataFrame({n: table.records[:, i] for i, n in enumerate(names)})
    context = dp.Context.compositor(data=frame.lazy(), privacy_unit=dp.unit_of(contributions=1),
                                    privacy_loss=dp.loss_of(rho=rho), split_evenly_over=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        synth = context.query().contingency_table(
            keys={n: list(range(s)) for n, s in zip(names, table.domain.sizes, strict=True)},
            algorithm=dp.mbi.MST(measure_split=split)).release().synthesize().drop_nulls()
    return np.column_stack([synth[n].to_numpy().astype(np.int64) for n in names])



def full_table(rho: float) -> None:
    """Identity on the full table (one 5-way marginal, 2-way marginals summed from it) vs marginal methods."""
    import tracemalloc

    from dplens.core.data.domain import Domain
    from dplens.core.queries.marginals import MAX_MARGINAL_CELLS

    rng = np.random.default_rng(0)
    for size in (8, 16, 24, 32):
        domain = Domain(tuple("abcde"), (size,) * 5)
        latent = rng.integers(0, size, 100_000)
        records = np.column_stack([(latent + rng.integers(0, 3, latent.size) * (k > 0)) % size for k in range(5)])
        pairs = MarginalWorkload.all_kway(domain, 2)
        truth = pairs.answer(records)
        try:
            full = MarginalWorkload(domain, (domain.names,))
        except ValueError as error:
            print(f"5 attributes x {size} levels ({domain.size:,} cells): Identity on the full table refused by the "
                  f"guard (MAX_MARGINAL_CELLS = {MAX_MARGINAL_CELLS:,}): {error}")
            record(name=f"Identity on the full table, 5 x {size} levels", cells=domain.size, refused=True)
        else:
            tracemalloc.start()
            (noisy, sigma), wall, cpu = _timed(identity_marginals, full, records, rho, rng)
            table_estimate = noisy[0]
            summed = [table_estimate.sum(axis=tuple(k for k in range(5) if domain.names[k] not in m))
                      for m in pairs.marginals]
            peak = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
            rmse = math.sqrt(_mse(summed, truth))
            print(f"5 attributes x {size} levels ({domain.size:,} cells): Identity on the full table, all 2-way "
                  f"marginals summed from it: RMSE {rmse:.2f} (closed form {sigma * size ** 1.5:.2f}); "
                  f"{wall:.2f}s wall / {cpu:.2f}s CPU, peak {peak:.0f} MB")
            record(name=f"Identity on the full table, 5 x {size} levels", cells=domain.size, rmse=rmse,
                   wall_s=wall, cpu_s=cpu, peak_mb=peak)
        (estimates, sigma), wall, cpu = _timed(identity_marginals, pairs, records, rho, rng)
        plan = plan_residuals(pairs, rho)
        rp, rp_wall, rp_cpu = _timed(measure, plan, records, rng)
        print(f"    Identity on the 10 2-way marginals: RMSE {math.sqrt(_mse(estimates, truth)):.2f} "
              f"(closed form {sigma:.2f}), {wall:.2f}s; ResidualPlanner {math.sqrt(_mse(rp, truth)):.2f} "
              f"(closed form {plan.expected_rmse:.2f}), {rp_wall:.2f}s wall / {rp_cpu:.2f}s CPU")
        record(name=f"2-way marginals, 5 x {size} levels", identity_rmse=math.sqrt(_mse(estimates, truth)),
               identity_wall_s=wall, residual_planner_rmse=math.sqrt(_mse(rp, truth)), residual_planner_wall_s=rp_wall,
               residual_planner_cpu_s=rp_cpu)

if __name__ == "__main__":
    main()
