"""The Tables page's Compare with its defaults plus MST, on the built-in sample table (data/survey.csv, 6,000
records, 6 attributes): ``core.tables.compare.compare_tables`` called exactly as ``ui.run_table_compare`` calls it
(identity and residual-planner, here with mst; ρ ∈ {0.01, 0.1, 1}; 3 trials; all 2-way marginals as workload
and as evaluation; seed 0; the synthesis deadline). Prints wall and CPU time per (mechanism, ρ) and in total;
CPU counts this process and its worker processes (the fork server and the synthesiser workers it starts).

    python bench/bench_tables_compare.py [--mechanisms identity residual-planner mst] [--trials 3]
                                         [--full-fit]

--full-fit also fits MST with the release's estimator settings (no Compare-only settings), one run per ρ and trial,
in this process, and prints its workload RMSE and evaluation TVD beside Compare's: the tolerance check.
"""

from __future__ import annotations

import argparse
import os
import re
import time
from pathlib import Path

import numpy as np
from results import Recorder

from core.data import limits
from core.queries.marginals import MarginalWorkload
from core.tables.compare import compare_tables, summarise_tables
from core.tables.records import load_table

DATA = Path(__file__).resolve().parents[1] / "data"
PAGE_MECHANISMS = ["identity", "residual-planner"]  # pages/tables.py's default methods
PAGE_RHOS = [0.01, 0.1, 1.0]                          # its default ρ values
PAGE_TRIALS = 3                                      # its default trials per point
_TICK = os.sysconf("SC_CLK_TCK")


def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        parent = todo.pop()
        try:
            children = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
        except OSError:
            continue
        for child in map(int, children):
            out.append(child)
            todo.append(child)
    return out


def cpu_seconds() -> float:
    """CPU of this process, of its reaped children and of every live descendant with the children it reaped
    (the fork server reaps the workers, so their CPU shows in its cutime/cstime)."""
    t = os.times()
    total = t.user + t.system + t.children_user + t.children_system
    for pid in _descendants(os.getpid()):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(x) for x in fields[11:15]) / _TICK  # utime, stime, cutime, cstime
    return total


def sample_table():
    return load_table(DATA / "survey.csv", DATA / "survey-domain.json")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mechanisms", nargs="+", default=[*PAGE_MECHANISMS, "mst"])
    parser.add_argument("--rhos", nargs="+", type=float, default=PAGE_RHOS)
    parser.add_argument("--trials", type=int, default=PAGE_TRIALS)
    parser.add_argument("--full-fit", action="store_true",
                        help="also fit MST with the release's settings and print its errors beside Compare's")
    args = parser.parse_args()
    table = sample_table()
    work = MarginalWorkload.all_kway(table.domain, 2)
    evaluation = MarginalWorkload.all_kway(table.domain, 2)
    print(f"sample table: {len(table.records):,} records, {len(table.domain.names)} attributes; workload "
          f"{work.describe()}; {args.mechanisms}, rho {args.rhos}, {args.trials} trials; "
          f"deadline {limits.MAX_SYNTHESIS_SECONDS:g} s; {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")
    marks: list[tuple[str, float, float]] = []  # (pair named by the progress text, wall, cpu) at each report
    pattern = re.compile(r"^(\S+) (?:at )?(?:rho|ρ)=([0-9.e+-]+)")

    def progress(fraction: float, text: str) -> None:
        match = pattern.match(text)
        marks.append((f"{match[1]} {float(match[2]):g}" if match else "", time.perf_counter(), cpu_seconds()))

    with Recorder("bench_tables_compare", args) as rec:
        wall0, cpu0 = time.perf_counter(), cpu_seconds()
        df = compare_tables(table.records, work, args.mechanisms, args.rhos, trials=args.trials, seed=0,
                            evaluation=evaluation, data_key=table.fingerprint, progress=progress,
                            seconds=limits.MAX_SYNTHESIS_SECONDS)
        wall, cpu = time.perf_counter() - wall0, cpu_seconds() - cpu0
        # wall and CPU between reports, charged to the pair the earlier report named
        spent: dict[str, list[float]] = {}
        previous = ("", wall0, cpu0)
        for mark in marks:
            if previous[0]:
                pair = spent.setdefault(previous[0], [0.0, 0.0])
                pair[0] += mark[1] - previous[1]
                pair[1] += mark[2] - previous[2]
            previous = mark
        summary = summarise_tables(df)
        print(f"{'mechanism':18} {'rho':>6} {'runs':>4} {'wall s':>8} {'cpu s':>8} {'s/run':>7} {'RMSE':>9} {'TVD':>7}")
        for row in summary.itertuples():
            w, c = spent.get(f"{row.mechanism} {row.rho:g}", [float("nan")] * 2)
            print(f"{row.mechanism:18} {row.rho:6g} {row.trials:4d} {w:8.2f} {c:8.2f} {row.seconds:7.2f} "
                  f"{row.rmse:9.3f} {row.tvd:7.4f}")
            rec.row(mechanism=row.mechanism, rho=row.rho, runs=int(row.trials), wall_s=w, cpu_s=c,
                    run_wall_s=row.seconds, rmse=row.rmse, tvd=row.tvd)
        print(f"total: wall {wall:.1f} s, CPU {cpu:.1f} s (this process and its workers); "
              f"stopped={df.attrs.get('stopped')}")
        rec.row(mechanism="total", wall_s=wall, cpu_s=cpu, stopped=bool(df.attrs.get("stopped")))
        if args.full_fit and "mst" in args.mechanisms:
            full_fit(table, work, evaluation, args, summary, rec)


def full_fit(table, work, evaluation, args, summary, rec) -> None:
    """MST with the release's settings, one run per ρ and trial in this process, beside Compare's errors."""
    from core.analysis.experiment import trial_rng
    from core.tables.compare import evaluation_tvd
    from core.tables.contract import workload_rmse
    from core.tables.synthesis import MST

    truth_w, truth_e = work.answer(table.records), evaluation.answer(table.records)
    mst = summary[summary.mechanism == "mst"].set_index("rho")
    print(f"MST, release settings ({MST().iters} iterations) beside Compare's:")
    print(f"{'rho':>6} {'RMSE full':>10} {'RMSE cmp':>10} {'TVD full':>9} {'TVD cmp':>9} {'wall s/run':>10}")
    for rho in args.rhos:
        rmses, tvds, walls = [], [], []
        for trial in range(args.trials):
            start = time.perf_counter()
            release = MST().run(work, table.records, rho, trial_rng(0, "mst", rho, trial))
            walls.append(time.perf_counter() - start)
            rmses.append(workload_rmse(work, truth_w, release.estimates))
            tvds.append(evaluation_tvd(release, evaluation, truth_e))
        row = mst.loc[rho] if rho in mst.index else None
        cmp_rmse = float("nan") if row is None else row.rmse
        cmp_tvd = float("nan") if row is None else row.tvd
        print(f"{rho:6g} {np.mean(rmses):10.3f} {cmp_rmse:10.3f} {np.mean(tvds):9.4f} {cmp_tvd:9.4f} "
              f"{np.mean(walls):10.2f}")
        rec.row(mechanism="mst (release settings)", rho=rho, rmse=np.mean(rmses), tvd=np.mean(tvds),
                compare_rmse=cmp_rmse, compare_tvd=cmp_tvd, run_wall_s=np.mean(walls))


if __name__ == "__main__":
    main()
