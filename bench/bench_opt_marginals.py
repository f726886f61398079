"""dplens's OPT_M (src/dplens/core/tables/opt_marginals.py) next to HDMM's own Marginals template, on the same
workloads.

Getting HDMM (the reference code of McKenna et al., VLDB 2018; github.com/dpcomp-org/hdmm, which is what
github.com/ryan112358/hdmm points to): clone it anywhere, e.g.
    git clone https://github.com/dpcomp-org/hdmm HDMM_DIR
and set HDMM_SRC=HDMM_DIR/src (required for the HDMM columns; there is no default). It runs unpatched with
the dplens venv (numpy 2.4, scipy 1.17). Nothing is installed: HDMM is imported from $HDMM_SRC. Without it,
the HDMM columns are skipped with a message.

Run: .venv/bin/python bench/bench_opt_marginals.py
     HDMM_SEEDS=5 (restarts of HDMM's random initialisation; the best is reported)
     HDMM_ADULT=1 also runs HDMM on Adult (14 attributes, 2^14 parameters: one seed of all 2-way took 506 s wall,
     150 loss evaluations of ~4 s each), with HDMM_ADULT_SEEDS seeds (default 1); HDMM_ADULT=0 skips it.

Every number is the per-query RMSE of Laplace noise at ε = √(2ρ), ρ = 0.5 (ε = 1), least squares:
  dplens   plan_opt_marginals(w, 0.5).expected_rmse
  HDMM     error.rootmse(W, A, eps=ε) = √(2/ε² · Δ₁² · tr(WᵀW (AᵀA)⁺) / m) for HDMM's optimised A
           (best of HDMM_SEEDS seeds of templates.Marginals(domain, seed=s).optimize(W)); cross-checked against
           HDMM's own loss (Δ₁² · tr, res.fun) converted the same way
  identity laplace_identity_rmse(w, 0.5): Laplace on every workload marginal, √2 · #marginals / ε
  full     Laplace on the full contingency table (the marginal of all attributes), evaluated in closed form:
           a valid marginals strategy both optimisers could reach, shown as a reference point
Sanity row: a single 2-way marginal, where both must give the Laplace identity √2/ε = 1.41421.
Times: wall (time.perf_counter) and CPU (time.process_time) of the optimisations, measured in this run
(HDMM: all seeds together).
"""

from __future__ import annotations

import math
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from results import Recorder, record, shared_data  # noqa: E402

from dplens.core.data.domain import Domain  # noqa: E402
from dplens.core.queries.marginals import MarginalWorkload  # noqa: E402
from dplens.core.tables.opt_marginals import MarginalsPlan, laplace_identity_rmse, plan_opt_marginals  # noqa: E402

RHO = 0.5
EPSILON = math.sqrt(2 * RHO)
ADULT_DOMAIN = shared_data("adult", "adult-domain.json")  # $DPLENS_SHARED_DATA, else ../shared/data


def load_hdmm():
    """HDMM's workload, templates and error modules from $HDMM_SRC, or None with the reason."""
    src = os.environ.get("HDMM_SRC", "")
    if not src or not (Path(src) / "hdmm" / "templates.py").exists():
        return None, f"HDMM not found (HDMM_SRC={src!r}; see this file's docstring): HDMM columns skipped"
    sys.path.insert(0, src)
    try:
        from hdmm import error, templates, workload
    except Exception as exc:  # noqa: BLE001 - report any import problem and carry on without HDMM
        return None, f"HDMM at {src} does not import ({type(exc).__name__}: {exc}): HDMM columns skipped"
    return (workload, templates, error), f"HDMM from {src}"


def hdmm_workload(hdmm, w: MarginalWorkload):
    """The same marginals as an HDMM Marginals workload (weight 1 each, attributes in domain order)."""
    workload = hdmm[0]
    sizes = w.domain.sizes
    return workload.Marginals.fromtuples(sizes, {w.domain.index(m): 1.0 for m in w.marginals})


def hdmm_opt(hdmm, w: MarginalWorkload, seeds: int):
    """Best per-query RMSE over ``seeds`` runs of HDMM's Marginals template; wall and CPU of all runs."""
    _, templates, error = hdmm
    W = hdmm_workload(hdmm, w)
    m = int(W.shape[0])
    best, runs, weights = math.inf, [], None
    wall = cpu = 0.0
    for seed in range(seeds):
        template = templates.Marginals(w.domain.sizes, seed=seed)
        t0, c0 = time.perf_counter(), time.process_time()
        loss = template.optimize(W)
        wall += time.perf_counter() - t0
        cpu += time.process_time() - c0
        rmse = float(error.rootmse(W, template.strategy(), eps=EPSILON))
        from_loss = math.sqrt(2 / EPSILON**2 * loss / m)
        if not math.isclose(rmse, from_loss, rel_tol=1e-6):
            raise AssertionError(f"HDMM's rootmse {rmse} and its loss {from_loss} disagree")
        runs.append(rmse)
        if rmse < best:
            best, weights = rmse, template.strategy().weights
    return best, runs, wall, cpu, weights


def hdmm_measured(sizes: tuple[int, ...], weights: np.ndarray) -> list[tuple[tuple[int, ...], float]]:
    """(attribute indices, θ) of every marginal HDMM's strategy measures (key bit d-1-i is attribute i)."""
    d = len(sizes)
    theta = weights / weights.sum()
    return [(tuple(i for i in range(d) if key >> (d - 1 - i) & 1), float(t)) for key, t in enumerate(theta) if t > 0]


def describe(sizes: tuple[int, ...], measured) -> str:
    """How many marginals a strategy measures (θ share ≥ 1e-3) and the largest of them."""
    kept = [(a, t) for a, t in measured if t >= 1e-3]
    cells = [math.prod(sizes[i] for i in a) for a, _ in kept]
    top = max(range(len(kept)), key=lambda j: cells[j])
    return (f"{len(kept)} marginals (θ ≥ 1e-3), ways {sorted({len(a) for a, _ in kept})}, largest {cells[top]} cells "
            f"{kept[top][0]}")


def full_table_rmse(w: MarginalWorkload) -> float:
    """Laplace on the full contingency table of the workload's attributes, in closed form."""
    attributes = tuple(sorted({i for m in w.marginals for i in w.domain.index(m)}))
    theta = np.zeros((2,) * len(attributes))
    theta[(1,) * len(attributes)] = 1.0
    return MarginalsPlan(w, RHO, attributes, theta).expected_rmse


def dplens_opt(w: MarginalWorkload):
    t0, c0 = time.perf_counter(), time.process_time()
    plan = plan_opt_marginals(w, RHO)
    return plan, time.perf_counter() - t0, time.process_time() - c0


def main() -> None:
    with Recorder("bench_opt_marginals", {k: os.environ.get(k) for k in ("HDMM_SEEDS", "HDMM_ADULT",
                                                                          "HDMM_ADULT_SEEDS", "HDMM_SRC")}):
        run()


def run() -> None:
    seeds = int(os.environ.get("HDMM_SEEDS", "5"))
    adult_hdmm = os.environ.get("HDMM_ADULT", "1") != "0"
    adult_seeds = int(os.environ.get("HDMM_ADULT_SEEDS", "1"))
    hdmm, note = load_hdmm()
    print(f"rho = {RHO}, epsilon = {EPSILON:g}, Laplace, least squares; per-query RMSE. {note}; "
          f"HDMM best of {seeds} seeds ({adult_seeds} on Adult)")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")

    small = Domain(("a", "b", "c", "d"), (2, 3, 4, 5))
    tens = Domain(tuple("abcde"), (10,) * 5)
    adult = Domain.from_json(ADULT_DOMAIN.read_text()) if ADULT_DOMAIN.exists() else None
    cases = [("sanity: single 2-way (a,b) of 2x3x4x5", MarginalWorkload(small, (("a", "b"),)), seeds)]
    cases += [(f"2x3x4x5 all {k}-way", MarginalWorkload.all_kway(small, k), seeds) for k in (1, 2, 3)]
    cases.append(("10^5 all 2-way", MarginalWorkload.all_kway(tens, 2), seeds))
    if adult is not None:
        cases += [(f"Adult (14 attrs) all {k}-way", MarginalWorkload.all_kway(adult, k),
                   adult_seeds if adult_hdmm else 0)
                  for k in (2, 1)]
    else:
        print(f"Adult rows skipped: {ADULT_DOMAIN} absent (set DPLENS_SHARED_DATA)")

    header = (f"{'workload':40s} {'queries':>8s} {'HDMM':>10s} {'dplens':>10s} {'dpl/HDMM':>8s} {'identity':>10s} "
              f"{'full':>12s} {'HDMM wall/cpu s':>16s} {'dplens wall/cpu s':>18s}")
    print(header)
    print("-" * len(header))
    for name, w, n_seeds in cases:
        plan, our_wall, our_cpu = dplens_opt(w)
        ours = plan.expected_rmse
        identity = laplace_identity_rmse(w, RHO)
        full = full_table_rmse(w)
        if hdmm is not None and n_seeds > 0:
            theirs, runs, wall, cpu, weights = hdmm_opt(hdmm, w, n_seeds)
            h, ratio, times = f"{theirs:10.5f}", f"{ours / theirs:8.4f}", f"{wall:7.2f}/{cpu:7.2f}"
        else:
            runs = None
            h, ratio, times = f"{'—':>10s}", f"{'—':>8s}", f"{'skipped':>15s}"
        print(f"{name:40s} {w.queries:8d} {h} {ours:10.5f} {ratio} {identity:10.5f} {full:12.5g} {times:>16s} "
              f"{our_wall:8.3f}/{our_cpu:8.3f}", flush=True)
        record(name=name, queries=w.queries, hdmm_rmse=theirs if runs is not None else None, dplens_rmse=ours,
               ratio=ours / theirs if runs is not None else None, identity_rmse=identity, full_rmse=full,
               hdmm_wall_s=wall if runs is not None else None, hdmm_cpu_s=cpu if runs is not None else None,
               dplens_wall_s=our_wall, dplens_cpu_s=our_cpu)
        if runs is not None:
            print(f"{'':40s} HDMM per seed: {', '.join(f'{r:.5f}' for r in runs)}")
            print(f"{'':40s} HDMM measures {describe(w.domain.sizes, hdmm_measured(w.domain.sizes, weights))}")
        print(f"{'':40s} dplens measures {describe(w.domain.sizes, plan.measured())}")
        if name.startswith("sanity"):
            expected = math.sqrt(2) / EPSILON
            checks = [ours] + ([theirs] if runs is not None else [])
            verdict = "OK" if all(math.isclose(x, expected, rel_tol=1e-6) for x in checks) else "FAILED"
            print(f"{'':40s} sanity check vs sqrt(2)/eps = {expected:.5f}: {verdict}")
    if hdmm is not None and not adult_hdmm:
        print("HDMM on Adult skipped (HDMM_ADULT=0)")


if __name__ == "__main__":
    main()
