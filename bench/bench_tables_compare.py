"""The Tables page's Compare with its defaults plus MST, on the built-in sample table (data/survey.csv, 6,000
records, 6 attributes): ``dplens.core.tables.compare.compare_tables`` called exactly as ``ui.run_table_compare`` calls
it (identity and residual-planner, here with mst; ρ ∈ {0.01, 0.1, 1}; 3 trials, a synthesiser's runs per ρ as the
page's default; all 2-way marginals as workload and as evaluation; seed 0; the synthesis deadline). Prints wall and CPU
time per (mechanism, ρ) and in total;
CPU counts this process and its worker processes (the fork server and the synthesiser workers it starts).

    python bench/bench_tables_compare.py [--mechanisms identity residual-planner mst] [--trials 3]
                                         [--synth-trials 1]
                                         [--full-fit]

--full-fit then runs MST (--full-runs per ρ, in this process) fitting each final model twice on the same
measurements, with Compare's iterations and with the release's, and prints both models' mean TVD on the 2-way
marginals side by side: the tolerance check (dplens.core.tables.compare.COMPARE_TOLERANCE).
"""

from __future__ import annotations

import argparse
import os
import re
import time
from pathlib import Path

import numpy as np
from results import Recorder

from dplens.core.data import limits
from dplens.core.queries.marginals import MarginalWorkload
from dplens.core.tables.compare import SYNTH_TRIALS, compare_note, compare_tables, summarise_tables
from dplens.core.tables.records import load_table

DATA = Path(__file__).resolve().parents[1] / "data"
PAGE_MECHANISMS = ["identity", "residual-planner"]  # pages/tables.py's default methods
PAGE_RHOS = [0.01, 0.1, 1.0]                          # its default ρ values
PAGE_TRIALS = 3                                      # its default trials per point
_TICK = os.sysconf("SC_CLK_TCK")


def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        parent = todo.pop()
        children = []
        for task in Path(f"/proc/{parent}/task").glob("*"):  # every thread's children (a pool thread starts workers)
            try:
                children += (task / "children").read_text().split()
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
    parser.add_argument("--synth-trials", type=int, default=SYNTH_TRIALS,
                        help="runs per rho of a synthesiser (the page's default)")
    parser.add_argument("--workers", type=int, default=None, help="synthesiser runs at once (default: compare_tables')")
    parser.add_argument("--full-fit", action="store_true",
                        help="also fit MST's final model with Compare's and the release's iterations, side by side")
    parser.add_argument("--full-runs", type=int, default=2, help="MST runs per rho with --full-fit")
    args = parser.parse_args()
    table = sample_table()
    work = MarginalWorkload.all_kway(table.domain, 2)
    evaluation = MarginalWorkload.all_kway(table.domain, 2)
    print(f"sample table: {len(table.records):,} records, {len(table.domain.names)} attributes; workload "
          f"{work.describe()}; {args.mechanisms}, rho {args.rhos}, {args.trials} trials; "
          f"deadline {limits.MAX_SYNTHESIS_SECONDS:g} s; {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")
    print(compare_note(args.mechanisms, args.trials, args.synth_trials))
    marks: list[tuple[str, float, float]] = []  # (pair named by the progress text, wall, cpu) at each report
    pattern = re.compile(r"^(\S+) (?:at )?(?:rho|ρ)=([0-9.e+-]+)")

    def progress(fraction: float, text: str) -> None:
        match = pattern.match(text)
        marks.append((f"{match[1].lower()} {float(match[2]):g}" if match else "", time.perf_counter(), cpu_seconds()))

    with Recorder("bench_tables_compare", args) as rec:
        wall0, cpu0 = time.perf_counter(), cpu_seconds()
        df = compare_tables(table.records, work, args.mechanisms, args.rhos, trials=args.trials,
                            synth_trials=args.synth_trials, seed=0,
                            evaluation=evaluation, data_key=table.fingerprint, progress=progress,
                            seconds=limits.MAX_SYNTHESIS_SECONDS, workers=args.workers)
        wall, cpu = time.perf_counter() - wall0, cpu_seconds() - cpu0
        # wall and CPU between reports, charged to the pair the earlier report named (with synthesiser runs in
        # parallel, the first running one: per-run wall is in s/run)
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
    """Compare's MST estimator settings beside the release's, on the same measurements: each MST run (at the full
    ρ, as in a release) fits its final model twice, with Compare's iterations and with the release's, and both
    models' evaluation marginals are scored (TVD, from the model, no sampling) against the truth."""
    from dplens.core.tables.compare import _tvd, compare_settings
    from dplens.core.tables.mirror_descent import mirror_descent
    from dplens.core.tables.synthesis import MST

    fast_iters, full_iters = compare_settings("mst")["iters"], MST().iters
    truth = evaluation.answer(table.records)
    sizes = dict(zip(table.domain.names, table.domain.sizes, strict=True))

    def scores(model) -> float:
        out = []
        for marginal, true in zip(evaluation.marginals, truth, strict=True):
            values = np.asarray(model.project(tuple(marginal)).datavector(flatten=False))
            values = values[tuple(slice(0, sizes[a]) for a in marginal)]  # OpenDP's null level is the last
            out.append(_tvd(true, values))
        return float(np.mean(out))

    print(f"MST: the same measurements fitted with Compare's {fast_iters} and the release's {full_iters} "
          "mirror-descent iterations (TVD of the model's 2-way marginals):")
    print(f"{'rho':>6} {'run':>4} {'TVD ' + str(fast_iters):>9} {'TVD ' + str(full_iters):>9} {'rel diff':>8} "
          f"{'fit s ' + str(fast_iters):>10} {'fit s ' + str(full_iters):>10}")
    for rho in args.rhos:
        for run in range(args.full_runs):
            fits = []

            def estimator(domain, loss_fn, *, potentials=None, fits=fits):
                start = time.perf_counter()
                fast = mirror_descent(domain, loss_fn, potentials=potentials, iters=fast_iters)
                middle = time.perf_counter()
                full = mirror_descent(domain, loss_fn, potentials=potentials, iters=full_iters)
                fits.append((fast, full, middle - start, time.perf_counter() - middle))
                return full

            mst = MST()
            mst.fitted_table(work, table.records, mst.handed_rho(rho, len(table.domain.names)), estimator)
            fast, full, fast_s, full_s = fits[-1]  # the final fit, on every measurement
            a, b = scores(fast), scores(full)
            print(f"{rho:6g} {run:4d} {a:9.4f} {b:9.4f} {(a - b) / b:8.1%} {fast_s:10.2f} {full_s:10.2f}")
            rec.row(mechanism="mst final fit", rho=rho, run=run, tvd_fast=a, tvd_full=b, iters_fast=fast_iters,
                    iters_full=full_iters, fit_fast_s=fast_s, fit_full_s=full_s)


if __name__ == "__main__":
    main()
