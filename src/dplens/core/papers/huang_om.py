"""Huang et al. §5 (OM): optimised matrix factorisation against LRM and mm-opt; its time claims."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from dplens.core.data.domain import Histogram
from dplens.core.mechanisms import MECHANISMS
from dplens.core.mechanisms.lrm import LRM
from dplens.core.mechanisms.om import OM, factorise, literal_algorithm3_mixing
from dplens.core.papers.examples import example_workloads
from dplens.core.papers.reproduction import (
    Reading,
    Reproduction,
    check_epsilons,
    check_runs,
    dataset_or_sample,
    seeded_rng,
)
from dplens.core.papers.verdicts import (
    NOT_REPRODUCIBLE,
    Verdict,
    case,
    exact,
    interval,
    judge,
    slope_interval,
)
from dplens.core.queries.workloads import dense, l1_sensitivity, random_linear


def reproduce_om(*, data: str | Path | None = None, data_dir: Path | None = None, m: int = 200, n: int = 1000,
                 taus=(0.2, 0.4, 0.8), epsilons=(0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6), trials: int = 20,
                 sweep_m=(50, 100, 150, 200, 250, 300), sweep_n=(500, 1000, 1500, 2000, 2500),
                 sweep_taus=(0.2, 0.4, 0.8), comparators=("mm-opt", "lrm"), seed: int = 0) -> Reproduction:
    """OM paper Figs. 1–3: squared error per query against ε (simulated) and against m and n (exact).

    Figs. 4–5's optimisation times are ``reproduce_om_times`` (``om-times``), a minute or two of CPU."""
    epsilons, trials = check_epsilons(epsilons), check_runs(trials)
    counts, data = dataset_or_sample("ADULTFRANK", "smooth", data_dir, data)
    x = counts[:n] if counts.size >= n else np.resize(counts, n)
    mechanisms = {"om": OM(), "LM_W (laplace-on-answers)": MECHANISMS["laplace-on-answers"],
                  "identity (cell noise)": MECHANISMS["identity"]}
    sweeps = _om_size_sweeps(mechanisms, sweep_m, sweep_n, m, n, seed, sweep_taus) if sweep_m or sweep_n else None
    # a matrix mechanism from the registry stands in for the paper's MM/LRM (not their implementations)
    mechanisms |= {name: MECHANISMS[name] for name in comparators if name in MECHANISMS}
    rows, findings, per_query = [], [], {}
    for ti, tau in enumerate(taus):
        workload = random_linear(n, m, tau, seed=seed + ti)
        start = time.perf_counter()
        factorisation = factorise(workload)  # uncached, so the time is the decomposition's
        seconds = time.perf_counter() - start
        truth = workload.matvec(x)
        for mi, (label, mechanism) in enumerate(mechanisms.items()):
            for ei, epsilon in enumerate(epsilons):
                expected = mechanism.expected_mse(workload, epsilon)
                for t in range(trials):
                    answers = mechanism.run(x, workload, epsilon, seeded_rng(seed, ti, mi, ei, t)).answers
                    rows.append({"tau": tau, "mechanism": label, "epsilon": epsilon, "trial": t,
                                 "value": float(np.mean((answers - truth) ** 2)), "expected": expected})
        om, lm, identity = (mechanisms[k].expected_mse(workload, 1.0) for k in list(mechanisms)[:3])
        per_query[tau] = {k: mechanisms[k].expected_mse(workload, 1.0) for k in mechanisms} | {"seconds": seconds}
        findings.append(f"τ = {tau:g}: {len(factorisation.groups)} atoms for {n} columns; per-query MSE·ε² "
                        f"OM {om:.1f}, Identity {identity:.1f}, LM_W {lm:.0f} (S(W) = {l1_sensitivity(workload):.1f})"
                        + "".join(f", {k} {mechanisms[k].expected_mse(workload, 1.0):.1f}"
                                  for k in list(mechanisms)[3:])
                        + "; "
                        f"decomposition {seconds:.3f} s")
    table = pd.DataFrame(rows).assign(metric="average squared error per query")
    return Reproduction(
        "om", "OM — orthogonal mechanism (Huang et al.)",
        claim="OM has the lowest error of LM, MM, LRM and OM in all settings (m = 200, n = 1000, "
              "τ ∈ {0.2, 0.4, 0.8}, ε from 0.2 to 1.6, 20 runs); its decomposition takes ~300 s at n = 1000.",
        measure="Corrected OM (exact block least squares, group-level normalisation) against LM_W and cell-level "
                f"Identity, {trials} runs, with the exact expected error. Expected: on these dense "
                "random workloads every column is its own atom, so OM equals Identity: OM's advantage over LM "
                "is exactly Identity's. The m and n sweeps (at each τ of the sweep) use the exact error and time the "
                "decomposition. The registry's `lrm` is the low-rank mechanism (Yuan et al. 2012, r = 1.2·rank(W), "
                "made exact); the paper's MM is not implemented and the registry's `mm-opt` (HDMM OPT0 p-Identity "
                "matrix mechanism) stands in for it. Figs. 4–5's times: the `om-times` reproduction.",
        data=data, tables={"errors": table} | ({} if sweeps is None else {"sizes": sweeps}),
        findings=tuple(findings), verdicts=tuple(_om_verdicts(per_query, sweeps, n) + _om_mm_verdict(per_query)),
        readings=om_readings(),
        not_reproduced="The paper's MM (Yuan et al.'s implementation) and its timings (Xeon E7, 64 GB) are not "
                       "reproduced; the registry's mm-opt stands in for MM, and LRM is dplens's own `lrm`.")


def _om_name(key: str) -> str:
    """A comparator's short name; mm-opt is named as the stand-in it is."""
    name = key.split(" (")[0]
    return "mm-opt (standing in for MM)" if name == "mm-opt" else name


def _om_verdicts(per_query: dict, sweeps: pd.DataFrame | None, n: int) -> list[Verdict]:
    """OM's claims on exact errors: lowest (per τ, every comparator run), Figs. 2–3's sweeps, Example 1 (with
    LRM), LRM's insensitivity to τ and the gaps between LM, LRM and OM as τ grows, and the timing."""
    rivals = [k for k in next(iter(per_query.values())) if k not in ("om", "seconds") and not k.startswith("identity")]
    ties = ", ".join(f"τ = {tau:g}" for tau, q in per_query.items()
                     if abs(q["om"] - q["identity (cell noise)"]) <= 1e-9 * q["om"])
    detail = "; ".join(f"τ = {tau:g}: OM (ours) {q['om']:.1f}, " + ", ".join(f"{_om_name(k)} {q[k]:.1f}"
                                                                             for k in rivals)
                       for tau, q in per_query.items()) + (f" (per-query MSE·ε²; OM ties cell Identity at {ties})"
                                                          if ties else " (per-query MSE·ε²)")
    # one case per rival: OM must be lower at every τ, so the rival's worst τ (for OM) decides
    cases = [case(_om_name(k), exact(max(q["om"] - q[k] for q in per_query.values())), below=0.0) for k in rivals]
    verdicts = [judge("OM has the lowest error in all settings (Fig. 1; τ = " + ", ".join(f"{t:g}" for t in per_query)
                      + f"; n = {n})", "lowest of LM, MM, LRM, OM", cases, dplens=detail,
                      literal="MM = the paper's matrix mechanism (Yuan et al.'s code, not available)")]
    if sweeps is not None:
        om = sweeps[sweeps.mechanism == "om"].set_index(["sweep", "m", "n"]).value
        lm = sweeps[sweeps.mechanism.str.startswith("LM_W")].set_index(["sweep", "m", "n"]).value
        verdicts.append(judge("OM beats LM in the m and n sweeps (Figs. 2–3)", "lower at every m and n",
                              [case(f"{key[0]}, m = {key[1]}, n = {key[2]}", exact(om[key] - lm[key]), below=0.0)
                               for key in om.index], scope="at",
                              dplens=f"OM/LM_W from {float((om / lm).min()):.3f} to {float((om / lm).max()):.3f} "
                                     f"over {len(om)} settings (exact per-query MSE·ε²)"))
    example = example_workloads()["OM Example 1"]
    lm_total = 2 * example.shape[0] * l1_sensitivity(example) ** 2
    om_total = OM().factorisation(example).expected_total_mse(1.0)
    lrm_total = LRM().factorisation(example).expected_total_mse(1.0)
    verdicts.append(judge("Example 1: OM's total error is the lowest (LM in the paper; LRM, the paper's main "
                          "comparator, added here)", "LM ≈ 75/ε², OM < 18/ε² (LRM not given)",
                          [case("LM", exact(om_total - lm_total), below=0.0),
                           case("LRM", exact(om_total - lrm_total), below=0.0)],
                          literal=f"2·m·S² with S(W) rounded to 2.5: LM {2 * 6 * 2.5 ** 2:.0f}",
                          dplens=f"totals: OM (ours) {om_total:.2f}/ε², LM {lm_total:.2f}/ε², LRM {lrm_total:.2f}/ε² "
                                 f"(S(W) = {l1_sensitivity(example):.4f}, not 2.5): LRM beats OM"))
    taus = sorted(per_query)
    if "lrm" in rivals and len(taus) >= 2:
        lo, hi = per_query[taus[0]], per_query[taus[-1]]
        lm_key = next(k for k in rivals if k.startswith("LM_W"))
        change = {k: hi[k] / lo[k] for k in ("lrm", "om", lm_key)}
        verdicts.append(judge(f"LRM is not sensitive to the workload (Fig. 1, τ = {taus[0]:g} → {taus[-1]:g})",
                              "\"LRM is not sensitive to the changes of the workload matrix\"",
                              [case("LRM's change", exact(change["lrm"]), below=1.5)],
                              literal="no threshold given; we read \"not sensitive\" as changing by less than 1.5×",
                              dplens=f"LRM {lo['lrm']:.1f} → {hi['lrm']:.1f} ({change['lrm']:.1f}×); OM "
                                     f"{change['om']:.1f}×, LM_W {change[lm_key]:.1f}× (per-query MSE·ε²)"))
        # "the errors between" two curves: the difference of their per-query errors, at each step of τ
        gap = {tau: (q[lm_key] - q["lrm"], q["lrm"] - q["om"]) for tau, q in sorted(per_query.items())}
        steps = list(itertools.pairwise(taus))
        verdicts.append(judge(f"as τ grows ({', '.join(f'{t:g}' for t in taus)}) the gap between LM and LRM widens "
                              "and the gap between LRM and OM narrows (Fig. 1)", "LM − LRM rises, LRM − OM falls",
                              [case(f"LM − LRM rises, τ = {a:g} → {b:g}", exact(gap[b][0] - gap[a][0]), above=0.0)
                               for a, b in steps]
                              + [case(f"LRM − OM falls, τ = {a:g} → {b:g}", exact(gap[b][1] - gap[a][1]), below=0.0)
                                 for a, b in steps], scope="for",
                              literal="read as ratios on a log scale: " + "; ".join(
                                  f"τ = {tau:g}: LM/LRM {per_query[tau][lm_key] / per_query[tau]['lrm']:.2f}, LRM/OM "
                                  f"{per_query[tau]['lrm'] / per_query[tau]['om']:.2f}" for tau in taus),
                              dplens="; ".join(f"τ = {tau:g}: LM − LRM {a:.0f}, LRM − OM {b:.0f}"
                                               for tau, (a, b) in gap.items()) + " (per-query MSE·ε²)"))
    seconds = max(q["seconds"] for q in per_query.values())
    verdicts.append(Verdict("decomposition takes ~300 s at n = 1000 (LRM ~2000 s)", "≈ 300 s",
                            f"{seconds:.2f} s at n = {n} (different hardware and implementation; LRM and MM "
                            "timed in the om-times reproduction)",
                            NOT_REPRODUCIBLE))
    return verdicts


def om_readings() -> tuple[Reading, ...]:
    example = example_workloads()["OM Example 1"]
    s_w = l1_sensitivity(example)
    om_total = OM().factorisation(example).expected_total_mse(1.0)
    counter = example_workloads()["OM Algorithm 3 counterexample"]
    f = OM().factorisation(counter)
    literal_b = literal_algorithm3_mixing(counter, f)
    gap = float(np.abs(dense(counter) - literal_b @ f.reduced.toarray()).max())
    return (Reading("Example 1 error (Theorem 5), ε = 1", "LM ≈ 75, OM < 18",
                    f"2·m·S² with S rounded to 2.5: {2 * 6 * 2.5 ** 2:.0f}; read per query: LM "
                    f"{2 * s_w ** 2:.2f}, OM {om_total / 6:.2f}",
                    f"totals LM {2 * 6 * s_w ** 2:.2f}, OM {om_total:.2f} (S(W) = {s_w:.4f})"),
            Reading("S(W̃) after normalisation", "S(Q̃) = 1",
                    "per-query normalisation (max |entry| = 1): column sums up to τ_j, so noise Lap(1/ε) costs "
                    "τ_j·ε (2ε on [[1,1],[1,−1],…])",
                    "group-level normalisation; S̃ computed from the final W̃", literal_is_dp=False),
            Reading("Algorithm 3 on W = [[1,1],[1,−1],[2,0]]", "W = BW̃ (exact)",
                    f"B's row 3 left zero: max |W − BW̃| = {gap:g} (query 3 answered as 0)",
                    f"block least squares: exact; total error {f.expected_total_mse(1.0):g} vs LM's "
                    f"{2 * 3 * l1_sensitivity(counter) ** 2:g}"))


def _om_size_sweeps(mechanisms: dict, sweep_m, sweep_n, m: int, n: int, seed: int,
                    taus=(0.2,)) -> pd.DataFrame:
    """OM paper Figs. 2–3: exact per-query MSE·ε² and decomposition time by m (n fixed) and by n (m fixed)."""
    rows = []
    for (axis, sizes), tau in itertools.product((("m", sweep_m), ("n", sweep_n)), taus):
        for size in sizes:
            shape = (size, n) if axis == "m" else (m, size)
            workload = random_linear(shape[1], shape[0], tau, seed=seed)
            start = time.perf_counter()
            factorise(workload)
            seconds = time.perf_counter() - start
            rows += [{"sweep": f"by {axis} (tau = {tau:g})", "tau": tau, "m": shape[0], "n": shape[1],
                      "mechanism": label, "value": mechanism.expected_mse(workload, 1.0),
                      "decomposition_seconds": seconds}
                     for label, mechanism in mechanisms.items()]
    return pd.DataFrame(rows).assign(metric="expected squared error per query × ε²")


OM_PAPER_SECONDS = {"om": 300.0, "lrm": 2000.0}  # the paper's times at n = 1000 (2.0 GHz Xeon E7; Huang et al. §5)


def _om_mm_verdict(per_query: dict) -> list[Verdict]:
    """Fig. 1's "MM is the worst", judged with mm-opt standing in for the paper's MM (not implemented here)."""
    if not per_query or "mm-opt" not in next(iter(per_query.values())):
        return []
    rivals = [k for k in next(iter(per_query.values()))
              if k not in ("mm-opt", "seconds") and not k.startswith("identity")]
    cases = [case(f"τ = {tau:g}", exact(max(q[k] for k in rivals) - q["mm-opt"]), below=0.0)
             for tau, q in per_query.items()]
    detail = "; ".join(f"τ = {tau:g}: mm-opt {q['mm-opt']:.1f}, worst of the others "
                       f"{max(rivals, key=q.get).split(' (')[0]} {max(q[k] for k in rivals):.1f}"
                       for tau, q in per_query.items()) + " (per-query MSE·ε²)"
    return [judge("MM has the highest error of LM, MM, LRM and OM (Fig. 1) — judged with mm-opt standing in for "
                  "the paper's MM", "MM worst in Fig. 1", cases, scope="at",
                  literal="MM = the paper's matrix mechanism (Yuan et al.'s implementation, not available here)",
                  dplens=detail + "; mm-opt (HDMM OPT0) is a better-optimised matrix mechanism than the paper's MM, "
                                  "so this verdict is about mm-opt, not about the paper's MM")]


def _om_timers(m: int, n: int, seed: int, tau: float = 0.2) -> dict[str, Callable[[], object]]:
    """Uncached optimisation of each timed mechanism on OM's random workload (m × n, density τ)."""
    from dplens.core.mechanisms.lrm import optimise as lrm_optimise
    from dplens.core.mechanisms.matrix import optimise_p_identity, single_threaded

    workload = random_linear(n, m, tau, seed=seed)
    p = min(64 if n <= 2048 else 32, max(1, n // 16))  # mm-opt's p = "auto"
    return {"om": lambda: factorise(workload), "lrm": lambda: lrm_optimise(workload),
            "mm-opt": lambda: single_threaded(optimise_p_identity, workload, p, 2, 0)}


OM_M_TAUS = (0.4, 0.8)  # the paper (§6.2): time grows with m "when τ = 0.4 or τ = 0.8"; no strong correlation at 0.2
OM_M_TIMED = ("om", "lrm")  # the mechanisms that claim is about


def reproduce_om_times(*, data: str | Path | Histogram | None = None, epsilons=None, trials: int = 2, m: int = 200,
                       n: int = 1000, sweep_m=(50, 100, 150, 200, 250, 300), sweep_n=(500, 1000, 1500, 2000, 2500),
                       m_taus=OM_M_TAUS, n_tau: float = 0.2, timed=("om", "lrm", "mm-opt"),
                       seed: int = 0) -> Reproduction:
    """OM paper Figs. 4–5: CPU seconds of each mechanism's data-independent optimisation by m (at ``m_taus``,
    OM and LRM, the two the paper's claim names) and by n (at ``n_tau``, every mechanism of ``timed``).

    ``trials`` repeats each timing and every repetition is kept: growth is judged by the t interval of the
    least-squares slope of seconds on m (or n) over all of them. ``data`` and ``epsilons`` (the options every
    reproduction takes) do not apply: the optimisations read neither.
    """
    from dplens.core.mechanisms.lrm import project_columns_l1

    trials = check_runs(trials)
    project_columns_l1(np.ones((2, 2)))  # load LRM's compiled kernel outside the timings
    rows: list[dict] = []
    done: dict = {}
    plan = [("m", size, tau, [k for k in timed if k in OM_M_TIMED]) for tau in m_taus for size in sweep_m]
    plan += [("n", size, n_tau, list(timed)) for size in sweep_n]
    for axis, size, tau, names in plan:
        shape: tuple[int, int] = (size, n) if axis == "m" else (m, size)
        timers = _om_timers(*shape, seed, tau)
        for name in names:
            key = (shape, tau, name)
            if key not in done:  # (m, n, τ) can be in both sweeps: time it once
                done[key] = []
                for _ in range(trials):
                    wall, cpu = time.perf_counter(), time.process_time()
                    timers[name]()
                    done[key].append((time.process_time() - cpu, time.perf_counter() - wall))
            rows += [{"sweep": f"by {axis} (tau = {tau:g})", "tau": tau, "m": shape[0], "n": shape[1],
                      "mechanism": name, "repeat": r, "value": c, "wall_seconds": w}
                     for r, (c, w) in enumerate(done[key])]
    times = pd.DataFrame(rows, columns=["sweep", "tau", "m", "n", "mechanism", "repeat", "value", "wall_seconds"]
                         ).assign(metric="optimisation CPU seconds")
    return Reproduction(
        "om-times", "OM paper Figs. 4–5 — optimisation time of OM, LRM and MM",
        claim="OM's decomposition takes ~300 s at n = 1000 where LRM needs ~2000 s (Xeon E7 2.0 GHz); OM is the "
              "fastest; time of LRM and OM grows with m when τ = 0.4 or 0.8 (n = 1000, m = 50…300; \"no strong "
              "correlation\" at τ = 0.2), and every mechanism's grows with n (m = 200, n = 500…2500).",
        measure="CPU seconds (and wall) of OM's exact decomposition, LRM's optimisation (`lrm`, r = 1.2·rank(W), "
                "exact) and mm-opt's strategy search (standing in for MM; timed in the n sweep), each uncached with "
                f"single-threaded BLAS, on OM's random workload, {trials} repetitions per setting, all kept. Growth "
                "is the least-squares slope of seconds on m (or n) with its 95 % t interval; CPU time is reported "
                "because the machine is shared.",
        data="none: the optimisations are data-independent" + (" (the chosen data and ε values do not apply)"
                                                               if data is not None or epsilons else ""),
        tables={"times": times},
        findings=(f"{len(times)} timings ({times.value.sum():.1f} CPU s in all)",),
        verdicts=tuple(_om_time_verdicts(times, m, n)), readings=om_times_readings(),
        not_reproduced="The paper's hardware and its implementations of MM and LRM (Yuan et al.'s MATLAB); "
                       "mm-opt stands in for MM, and LRM is dplens's own `lrm`.")


def om_times_readings() -> tuple[Reading, ...]:
    return (Reading("LRM's optimisation (Yuan et al. 2012)", "~2000 s at n = 1000 (the OM paper's run of LowRankDP.m)",
                    "the authors' LowRankDP.m: augmented Lagrangian, ≤ 100 rounds × 5 alternations of a closed-form "
                    "B-step and ≤ 5 accelerated projected-gradient L-steps, stopping at ‖W − BL‖_F < 0.01; it "
                    "reports failure on some workloads (all ranges at n = 256: worse than Identity, 477 s)",
                    "dplens `lrm`: the same augmented Lagrangian with the B-step exact inside every evaluation "
                    "(WᵀW's row space, never B), spectral projected gradient on L, compiled L1-ball projections; "
                    "W = BL made exact"),)


def _om_time_verdicts(times: pd.DataFrame, m: int, n: int) -> list[Verdict]:
    """Verdicts on Figs. 4–5: OM faster than LRM; the absolute times; growth with m (τ = 0.4, 0.8) and with n."""
    out = []
    wide = times.pivot_table(index=["sweep", "m", "n", "repeat"], columns="mechanism", values="value")
    if {"om", "lrm"} <= set(wide.columns):
        both = wide.dropna(subset=["om", "lrm"])
        at = times[(times.m == m) & (times.n == n)].groupby("mechanism").value.mean()
        detail = "; ".join(f"{k} {v:.2f} s" for k, v in at.items()) + f" CPU at m = {m}, n = {n}" if len(at) else ""
        time_ratio = float(np.exp(np.mean(np.log(both.om.clip(lower=1e-6) / both.lrm.clip(lower=1e-6)))))
        out.append(judge("OM's decomposition is faster than LRM's optimisation (Figs. 4–5)", "OM ~300 s, LRM ~2000 s",
                         [case("log(OM s) − log(LRM s), every timed setting",
                               interval(np.log(both.om.clip(lower=1e-6)) - np.log(both.lrm.clip(lower=1e-6))),
                               below=0.0)],
                         dplens=f"OM/LRM time ratio {time_ratio:.3f} "
                                f"(geometric mean over {len(both)} timings); {detail}"))
        if {"om", "lrm"} <= set(at.index):
            out.append(Verdict(f"the absolute times at n = {n}", "OM ~300 s, LRM ~2000 s (Xeon E7 2.0 GHz)",
                               f"{detail}: the paper's are {OM_PAPER_SECONDS['om'] / max(at['om'], 1e-9):.0f}× (OM) "
                               f"and {OM_PAPER_SECONDS['lrm'] / max(at['lrm'], 1e-9):.0f}× (LRM) ours — they measure "
                               "the implementations and hardware, not the algorithms", NOT_REPRODUCIBLE))
    for sweep, part in times.groupby("sweep", sort=False):
        axis = sweep.split()[1]
        if part[axis].nunique() < 2:
            continue
        tau = float(part.tau.iloc[0])
        cases = [case(name, slope_interval(rows[axis], rows.value), above=0.0)
                 for name, rows in part.groupby("mechanism", sort=False)]
        ends = {name: rows.groupby(axis).value.mean().iloc[[0, -1]].tolist()
                for name, rows in part.groupby("mechanism", sort=False)}
        figure = "Fig. 4: rising for LRM and OM at τ = 0.4, 0.8" if axis == "m" else "Fig. 5: rising for all"
        out.append(judge(f"time grows with {axis} (τ = {tau:g}; {axis} = {part[axis].min()} → {part[axis].max()})",
                         figure, cases, scope="for",
                         literal="" if axis == "n" or tau != 0.2 else "at τ = 0.2 the paper sees no strong correlation",
                         dplens="; ".join(f"{name} {a:.2f} → {b:.2f} s" for name, (a, b) in ends.items())
                         + f"; the interval is on the slope in CPU s per unit of {axis}"))
    return out
