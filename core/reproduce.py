"""Reproductions of the papers' headline experiments (spec §2f, §3f, §4f, §5.3) as tidy DataFrames.

Each ``reproduce_*`` function is pure (seeded, no files written) and returns a ``Reproduction``: the
paper's claim, what we measure, findings computed from the numbers, and tidy tables. ``figures``
gives plotly figure specs as plain dicts (core never imports plotly), and ``write`` saves CSV + one
self-contained HTML page. ``python -m core reproduce wda|om|sreb-gca|xiao --output DIR`` runs them.

DPBench histograms are read from ``../shared/data/dpbench-1d`` when present; otherwise a bundled
sample stands in, and the reproduction says which data it used.
"""

from __future__ import annotations

import itertools
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from core.datasets import load_histogram
from core.mechanisms import MECHANISMS
from core.mechanisms.om import OM, factorise
from core.mechanisms.sreb_gca import expected_bin_error, ggs, groups_from_cuts
from core.mechanisms.wda import WDA, expected_error
from core.mechanisms.xiao import (
    NOT_DP_LABEL,
    literal_max_distribution_not_dp,
    max_query_distribution,
)
from core.metrics import kl_divergence
from core.workloads import Explicit, hot_spot, l1_sensitivity, random_linear

DPBENCH_DIR = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "dpbench-1d"


@dataclass(frozen=True, eq=False)
class Reproduction:
    """One paper's experiment: the claim, what we measure, computed findings and tidy tables."""

    name: str
    title: str
    claim: str
    measure: str
    data: str
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    findings: tuple[str, ...] = ()


def _dataset(name: str, fallback: str, data_dir: Path | None) -> tuple[np.ndarray, str]:
    """A DPBench histogram's counts when the file exists, else a bundled sample (and the name used)."""
    path = Path(data_dir or DPBENCH_DIR) / f"{name}.csv"
    if path.is_file():
        return load_histogram(path).vector, f"DPBench {name}"
    return load_histogram(fallback).vector, f"sample '{fallback}' (DPBench {name} not found at {path.parent})"


def _trial_rng(seed: int, *keys: int) -> np.random.Generator:
    return np.random.default_rng([seed, *keys])


# ----------------------------------------------------------------------------- WDA (spec §2f)
def reproduce_wda(*, data_dir: Path | None = None, m: int = 2000,
                  probabilities=(0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9),
                  epsilons=(10.0, 5.0, 1.0, 0.5, 0.1), trials: int = 5, comparators=("dawa", "mwem"),
                  comparator_trials: int = 2, seed: int = 0) -> Reproduction:
    """WDA paper Figs. 3–8: average L1 error per query on hot-spot workloads, by p and ε.

    ``comparators`` (registry names, e.g. the paper's DAWA and MWEM) run ``comparator_trials`` trials each.
    """
    x, data = _dataset("ADULTFRANK", "smooth", data_dir)
    mechanisms = {"wda (optimal)": WDA(), "wda (equal, paper)": WDA(budget="equal"),
                  "LM_W (laplace-on-answers)": MECHANISMS["laplace-on-answers"],
                  "identity (cell noise)": MECHANISMS["identity"],
                  **{name: MECHANISMS[name] for name in comparators if name in MECHANISMS}}
    rows = []
    for pi, p in enumerate(probabilities):
        workload = hot_spot(x.size, m, p, seed=seed)
        truth = workload.matvec(x)
        for mi, (label, mechanism) in enumerate(mechanisms.items()):
            for ei, epsilon in enumerate(epsilons):
                expected = _expected_l1(mechanism, workload, epsilon)
                for t in range(comparator_trials if label in comparators else trials):
                    answers = mechanism.run(x, workload, epsilon, _trial_rng(seed, pi, mi, ei, t)).answers
                    rows.append({"p": p, "mechanism": label, "epsilon": epsilon, "trial": t,
                                 "value": float(np.mean(np.abs(answers - truth))), "expected": expected})
    table = pd.DataFrame(rows).assign(metric="average L1 error per query")
    findings = []
    for p in (probabilities[0], probabilities[-1]):
        at = table[(table.p == p) & (table.epsilon == 1.0)] if 1.0 in epsilons else table[table.p == p]
        mean = at.groupby("mechanism").value.mean()
        findings.append(f"p = {p:g}, ε = 1: WDA (optimal) {mean['wda (optimal)']:.1f}, WDA (equal) "
                        f"{mean['wda (equal, paper)']:.1f}, LM_W {mean['LM_W (laplace-on-answers)']:.1f}, "
                        f"cell Identity {mean['identity (cell noise)']:.2f}"
                        + "".join(f", {name.upper()} {mean[name]:.2f}" for name in comparators if name in mean)
                        + f" (WDA vs LM_W: {100 * (mean['wda (optimal)'] / mean['LM_W (laplace-on-answers)'] - 1):+.0f} %)")
    return Reproduction(
        "wda", "WDA — workload division (Li et al.)",
        claim="WDA \"reduces nearly 40 % L1 error vs MWEM, DAWA, Identity\", and more than 40 % vs Identity at "
              "p = 0.2, on hot-spot workloads (m = 2000, p = probability a query includes the hot item).",
        measure="Corrected WDA (hot column of W, budget halving counted; optimal and the paper's equal split) "
                "against LM_W — what the paper calls Identity (spec §1(d)) — and cell-level Identity, on OUR "
                "reconstruction of the hot-spot workload (ranges of half-width |N(0,10)| around uniform "
                f"centres, hot column with probability p), {trials} trials; the registry's DAWA and MWEM "
                f"(data-dependent, {comparator_trials} trials) on the same data. The error of WDA, LM_W and "
                "Identity is data-independent, so one dataset suffices. Expected (spec §2f): WDA well below LM_W at p = 0.2, "
                "little gain at p = 0.9; cell-level Identity far below both on these narrow ranges.",
        data=data, tables={"errors": table}, findings=tuple(findings))


def _expected_l1(mechanism, workload, epsilon: float) -> float:
    """Exact expected average L1 error where it is a closed form (WDA leaves, LM_W), else NaN."""
    if isinstance(mechanism, WDA):
        return expected_error(mechanism.division(workload), epsilon, squared=False)
    if mechanism.name == "laplace-on-answers":
        return l1_sensitivity(workload) / epsilon
    return math.nan


# ----------------------------------------------------------------------------- OM (spec §3f)
def reproduce_om(*, data_dir: Path | None = None, m: int = 200, n: int = 1000, taus=(0.2, 0.4, 0.8),
                 epsilons=(0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6), trials: int = 20,
                 sweep_m=(50, 100, 150, 200, 250, 300), sweep_n=(500, 1000, 1500, 2000, 2500),
                 comparators=("mm-opt", "lrm"), seed: int = 0) -> Reproduction:
    """OM paper Figs. 1, 5–6: squared error per query against ε (simulated) and against m and n (exact).

    Figs. 4–5's optimisation times are ``reproduce_om_times`` (``om-times``), a minute or two of CPU."""
    counts, data = _dataset("ADULTFRANK", "smooth", data_dir)
    x = counts[:n] if counts.size >= n else np.resize(counts, n)
    mechanisms = {"om": OM(), "LM_W (laplace-on-answers)": MECHANISMS["laplace-on-answers"],
                  "identity (cell noise)": MECHANISMS["identity"]}
    sweeps = _om_size_sweeps(mechanisms, sweep_m, sweep_n, m, n, seed) if sweep_m or sweep_n else None
    # a matrix mechanism from the registry stands in for the paper's MM/LRM (not their implementations)
    mechanisms |= {name: MECHANISMS[name] for name in comparators if name in MECHANISMS}
    rows, findings = [], []
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
                    answers = mechanism.run(x, workload, epsilon, _trial_rng(seed, ti, mi, ei, t)).answers
                    rows.append({"tau": tau, "mechanism": label, "epsilon": epsilon, "trial": t,
                                 "value": float(np.mean((answers - truth) ** 2)), "expected": expected})
        om, lm, identity = (mechanisms[k].expected_mse(workload, 1.0) for k in list(mechanisms)[:3])
        findings.append(f"τ = {tau:g}: {len(factorisation.groups)} atoms for {n} columns; per-query MSE·ε² "
                        f"OM {om:.1f}, Identity {identity:.1f}, LM_W {lm:.0f} (S(W) = {l1_sensitivity(workload):.1f})"
                        + "".join(f", {k} {mechanisms[k].expected_mse(workload, 1.0):.1f}" for k in list(mechanisms)[3:])
                        + "; "
                        f"decomposition {seconds:.3f} s")
    table = pd.DataFrame(rows).assign(metric="average squared error per query")
    findings += _om_lrm_verdicts(table)
    return Reproduction(
        "om", "OM — orthogonal mechanism (Huang et al.)",
        claim="OM has the lowest error of LM, MM, LRM and OM in all settings (m = 200, n = 1000, "
              "τ ∈ {0.2, 0.4, 0.8}, ε from 0.2 to 1.6, 20 runs); its decomposition takes ~300 s at n = 1000.",
        measure="Corrected OM (exact block least squares, group-level normalisation) against LM_W and cell-level "
                f"Identity, {trials} runs, with the exact expected error. Spec §3f predicts that on these dense "
                "random workloads every column is its own atom, so OM equals Identity: OM's advantage over LM "
                "is exactly Identity's. The m and n sweeps (τ = 0.2) use the exact error and time the "
                "decomposition. The registry's `lrm` is the low-rank mechanism (Yuan et al. 2012, r = 1.2·rank(W), "
                "made exact); the paper's MM is not implemented and the registry's `mm-opt` (HDMM OPT0 p-Identity "
                "matrix mechanism) stands in for it. Figs. 4–5's times: the `om-times` reproduction.",
        data=data, tables={"errors": table} | ({} if sweeps is None else {"sizes": sweeps}),
        findings=tuple(findings))


def _om_size_sweeps(mechanisms: dict, sweep_m, sweep_n, m: int, n: int, seed: int) -> pd.DataFrame:
    """OM paper Figs. 5–6: exact per-query MSE·ε² and decomposition time by m (n fixed) and by n (m fixed)."""
    rows = []
    for axis, sizes in (("m", sweep_m), ("n", sweep_n)):
        for size in sizes:
            shape = (size, n) if axis == "m" else (m, size)
            workload = random_linear(shape[1], shape[0], 0.2, seed=seed)
            start = time.perf_counter()
            factorise(workload)
            seconds = time.perf_counter() - start
            rows += [{"sweep": f"by {axis} (tau = 0.2)", "m": shape[0], "n": shape[1], "mechanism": label,
                      "value": mechanism.expected_mse(workload, 1.0), "decomposition_seconds": seconds}
                     for label, mechanism in mechanisms.items()]
    return pd.DataFrame(rows).assign(metric="expected squared error per query × ε²")


OM_PAPER_SECONDS = {"om": 300.0, "lrm": 2000.0}  # the paper's times at n = 1000 (2.0 GHz Xeon E7; spec §3f)


def _short(label: str) -> str:
    return label.split(" ")[0]


def _om_lrm_verdicts(table: pd.DataFrame) -> list[str]:
    """Verdicts on Fig. 1's comparison claims: OM has the lowest error of LM, MM, LRM; MM is the worst."""
    expected = table.groupby(["tau", "mechanism"]).expected.first().unstack()  # per-query MSE, first ε
    lm, om = "LM_W (laplace-on-answers)", "om"
    others = [c for c in (lm, "mm-opt", "lrm") if c in expected]
    if not others:
        return []
    lowest = all((expected[om] <= expected[c] * (1 + 1e-9)).all() for c in others)
    ratios = "; ".join(f"τ = {tau:g}: " + ", ".join(f"{_short(c)} {expected.loc[tau, c] / expected.loc[tau, om]:.2g}×"
                                                     for c in others) for tau in expected.index)
    out = [f"Verdict (Fig. 1, OM has the lowest error of LM, MM, LRM, OM): {'HOLDS' if lowest else 'DOES NOT HOLD'} "
           f"— error relative to OM: {ratios}; OM ties cell Identity (every column its own atom)."]
    if "mm-opt" in expected:
        worst = expected[others].idxmax(axis=1)
        out.append(f"Verdict (MM is the worst): {'HOLDS' if (worst == 'mm-opt').all() else 'DOES NOT HOLD'} for "
                   f"mm-opt standing in for MM — the worst is "
                   + ", ".join(f"{_short(w)} (τ = {t:g})" for t, w in worst.items()) + ".")
    return out


def _om_timers(m: int, n: int, seed: int) -> dict[str, Callable[[], object]]:
    """Uncached optimisation of each timed mechanism on OM's random workload (m × n, τ = 0.2)."""
    from core.mechanisms.lrm import optimise as lrm_optimise
    from core.mechanisms.matrix import _optimise as mm_optimise
    from core.mechanisms.matrix import _single_threaded

    workload = random_linear(n, m, 0.2, seed=seed)
    p = min(64 if n <= 2048 else 32, max(1, n // 16))  # mm-opt's p = "auto"
    return {"om": lambda: factorise(workload), "lrm": lambda: lrm_optimise(workload),
            "mm-opt": lambda: _single_threaded(mm_optimise, workload, p, 2, 0)}


def reproduce_om_times(*, m: int = 200, n: int = 1000, sweep_m=(50, 100, 150, 200, 250, 300),
                       sweep_n=(500, 1000, 1500, 2000, 2500), timed=("om", "lrm", "mm-opt"),
                       seed: int = 0) -> Reproduction:
    """OM paper Figs. 4–5: CPU seconds of each mechanism's data-independent optimisation by m and by n (τ = 0.2)."""
    from core.mechanisms.lrm import project_columns_l1

    project_columns_l1(np.ones((2, 2)))  # load LRM's compiled kernel outside the timings
    rows, done = [], set()
    for axis, sizes in (("m", sweep_m), ("n", sweep_n)):
        for size in sizes:
            shape = (size, n) if axis == "m" else (m, size)
            for name, call in _om_timers(*shape, seed).items():
                if name not in timed:
                    continue
                if (shape, name) in done:  # (m, n) is in both sweeps: time it once
                    rows.append(next(r for r in rows if (r["m"], r["n"], r["mechanism"]) == (*shape, name))
                                | {"sweep": f"by {axis} (tau = 0.2)"})
                    continue
                wall, cpu = time.perf_counter(), time.process_time()
                call()
                rows.append({"sweep": f"by {axis} (tau = 0.2)", "m": shape[0], "n": shape[1], "mechanism": name,
                             "value": time.process_time() - cpu, "wall_seconds": time.perf_counter() - wall})
                done.add((shape, name))
    times = pd.DataFrame(rows, columns=["sweep", "m", "n", "mechanism", "value", "wall_seconds"]).assign(
        metric="optimisation CPU seconds")
    return Reproduction(
        "om-times", "OM paper Figs. 4–5 — optimisation time of OM, LRM and MM",
        claim="OM's decomposition takes ~300 s at n = 1000 where LRM needs ~2000 s (Xeon E7 2.0 GHz); time grows "
              "with m (n = 1000, m = 50…300) and with n (m = 200, n = 500…2500).",
        measure="CPU seconds (and wall) of OM's exact decomposition, LRM's optimisation (`lrm`, r = 1.2·rank(W), "
                "exact) and mm-opt's strategy search (standing in for MM), each uncached with single-threaded BLAS, "
                "on OM's random workload (τ = 0.2). CPU time is reported because the machine is shared.",
        data="none (the optimisations are data-independent)", tables={"times": times},
        findings=tuple(_om_time_verdicts(times, m, n)))


def _om_time_verdicts(times: pd.DataFrame, m: int, n: int) -> list[str]:
    """Verdicts on Figs. 4–5: OM faster than LRM at (m, n); absolute times; growth with m and n."""
    out = []
    at = times[(times.m == m) & (times.n == n)].groupby("mechanism").value.mean()
    if {"om", "lrm"} <= set(at.index):
        out.append(f"Verdict (OM ~300 s vs LRM ~2000 s at n = {n}): the ordering "
                   f"{'HOLDS' if at['om'] < at['lrm'] else 'DOES NOT HOLD'} — OM {at['om']:.2f} s, LRM {at['lrm']:.2f} s"
                   + (f", mm-opt {at['mm-opt']:.2f} s" if "mm-opt" in at else "") + f" CPU at m = {m}; the absolute "
                   f"times do not reproduce: the paper's are {OM_PAPER_SECONDS['om'] / max(at['om'], 1e-9):.0f}× (OM) "
                   f"and {OM_PAPER_SECONDS['lrm'] / max(at['lrm'], 1e-9):.0f}× (LRM) ours, which measures the "
                   "implementations, not the algorithms.")
    for axis in ("m", "n"):
        part = times[times.sweep.str.startswith(f"by {axis}")]
        if part[axis].nunique() < 2:
            continue
        growth = []
        for name, rows in part.groupby("mechanism", sort=False):
            rows = rows.sort_values(axis)
            first, last = rows.iloc[0], rows.iloc[-1]
            growth.append(f"{name} {first.value:.2f} → {last.value:.2f} s ({'grows' if last.value > first.value else 'does not grow'})")
        grows = all("(grows)" in g for g in growth)
        out.append(f"Verdict (time grows with {axis}): {'HOLDS' if grows else 'DOES NOT HOLD'} for every timed "
                   f"mechanism — {axis} = {part[axis].min()} → {part[axis].max()}: " + "; ".join(growth) + ".")
    return out


# ----------------------------------------------------------------------------- SReB_GCA (spec §4f)
def _window_mre(true: np.ndarray, noisy: np.ndarray, width: int, floor: float = 1.0) -> float:
    """Mean relative error over all contiguous windows of ``width`` bins, original order (δ = 1)."""
    c_true = np.concatenate(([0.0], np.cumsum(true)))
    c_noisy = np.concatenate(([0.0], np.cumsum(noisy)))
    t = c_true[width:] - c_true[:-width]
    return float(np.mean(np.abs(c_noisy[width:] - c_noisy[:-width] - t) / np.maximum(t, floor)))


def reproduce_sreb_gca(*, data_dir: Path | None = None, epsilons=(1.0, 0.1, 0.01), trials: int = 10,
                       widths=(1, 50, 100, 150, 200, 250, 300, 350, 400, 450, 500),
                       max_count: int = 20, seed: int = 0) -> Reproduction:
    """SReB_GCA paper Figs. 3–8: MRE by bin count, range MRE by width, and KLD, against DP_BASE."""
    from core.workloads import Identity as IdentityWorkload

    datasets = [_dataset("SEARCHLOGS", "heavy-tail", data_dir), _dataset("NETTRACE", "spiky", data_dir)]
    mechanisms = {name: MECHANISMS[name] for name in ("sreb-gca", "dp-base", "ahp") if name in MECHANISMS}
    rows = []
    for di, (x, data) in enumerate(datasets):
        workload = IdentityWorkload(x.size)
        counts_present = [k for k in range(max_count + 1) if np.any(x == k)]
        for mi, (label, mechanism) in enumerate(mechanisms.items()):
            for ei, epsilon in enumerate(epsilons):
                for t in range(trials):
                    estimate = mechanism.run(x, workload, epsilon, _trial_rng(seed, di, mi, ei, t)).estimate
                    relative = np.abs(estimate - x) / np.maximum(x, 1.0)
                    base = {"dataset": data, "mechanism": label, "epsilon": epsilon, "trial": t}
                    rows += [{**base, "metric": "MRE of bins with count k", "x": k,
                              "value": float(relative[x == k].mean())} for k in counts_present]
                    rows += [{**base, "metric": "range MRE by width", "x": w,
                              "value": _window_mre(x, estimate, w)} for w in widths]
                    rows.append({**base, "metric": "KLD (floor κ = 1)", "x": math.nan,
                                 "value": kl_divergence(x, estimate)})
    table = pd.DataFrame(rows)
    findings = []
    for data in table.dataset.unique():
        for epsilon in epsilons:
            at = table[(table.dataset == data) & (table.epsilon == epsilon)]
            by_count = at[at.metric == "MRE of bins with count k"]
            limit = max(5, by_count.x.min()) if len(by_count) else math.inf
            small = by_count[by_count.x <= limit].groupby("mechanism").value.mean()
            if small.empty:
                continue
            kld = at[at.metric.str.startswith("KLD")].groupby("mechanism").value.mean()
            ranges = at[at.metric == "range MRE by width"]
            widest = ranges[ranges.x == ranges.x.max()].groupby("mechanism").value.mean()
            findings.append(f"{data.split(' (')[0]}, ε = {epsilon:g}: MRE of bins with count ≤ {limit:g} — SReB_GCA "
                            f"{small['sreb-gca']:.3g} vs DP_BASE {small['dp-base']:.3g}; KLD {kld['sreb-gca']:.3g} "
                            f"vs {kld['dp-base']:.3g}" + (f" (AHP {kld['ahp']:.3g})" if "ahp" in kld else "")
                            + f"; range MRE at width {ranges.x.max():g}: {widest['sreb-gca']:.3g} vs "
                            f"{widest['dp-base']:.3g}")
    return Reproduction(
        "sreb-gca", "SReB_GCA — small-bin-first grouping (Chen et al. 2024)",
        claim="SReB_GCA gives much lower relative error on small bins \"without substantial detriment\" to large "
              "bins, lower range MRE and lower KLD than DP_BASE and AHP (Search Log, NetTrace, ε ∈ {1, 0.1, 0.01}).",
        measure="Corrected SReB_GCA (noisy sort, GGS on noisy values, one Laplace draw per group sum; ratio 0.5, "
                f"δ = 1) against DP_BASE (= Identity), {trials} runs, on the 4096-bin DPBench versions of Search Log "
                "and NetTrace: MRE over bins whose true count is k, MRE over all windows of width i (original "
                "order), and KLD with the released counts floored at κ = 1 (spec §4(d)8); AHP (the registry's "
                "`ahp`, default settings) alongside.",
        data="; ".join(d for _, d in datasets), tables={"errors": table}, findings=tuple(findings))


# ----------------------------------------------------------------------------- Xiao et al. (spec §5.3)
TABLE2_ALPHAS = (1.0, 0.5, 0.1, 0.05, 0.02, 0.01, 0.005)
TABLE2_AVERAGE = (0.69, 1.3, 5.8, 12.0, 31.0, 63.5, 120.0)    # ×10⁻⁶, as printed
TABLE2_MAX = (34.92, 88.7, 453.7, 623.9, 1724.0, 4284.0, 9107.0)


def _xiao_cells(data_dir: Path | None, cells: int, records: int) -> tuple[np.ndarray, str]:
    """INCOME (IPUMS personal income, as in the paper) summed into ``cells`` blocks, scaled to ``records``."""
    counts, data = _dataset("INCOME", "smooth", data_dir)
    blocks = np.array([block.sum() for block in np.array_split(counts, cells)])
    scaled = np.floor(blocks / blocks.sum() * records)
    scaled[np.argmax(scaled)] += records - scaled.sum()  # exactly `records` in total
    return scaled, f"{data}, summed into {cells} cells and scaled to {records:,} records"


def reproduce_xiao(*, data_dir: Path | None = None, records: int = 10**6, versions: int = 100,
                   queries: int = 1000, max_draws: int = 5, seed: int = 0) -> Reproduction:
    """Xiao et al. Table 2 (interval error by α) and the max-query experiment (EM vs literal)."""
    cells, data = _xiao_cells(data_dir, 100, records)
    gen = np.random.default_rng([seed, 1])
    ends = np.sort(gen.integers(0, cells.size, size=(queries, 2)), axis=1)
    rows = []
    for (ai, alpha), clip in itertools.product(enumerate(TABLE2_ALPHAS), (True, False)):
        noisy = cells + _trial_rng(seed, 2, ai).laplace(scale=1 / alpha, size=(versions, cells.size))
        noisy = np.maximum(noisy, 0) if clip else noisy  # clipping at 0 biases sums over empty cells upwards
        prefix = np.concatenate((np.zeros((versions, 1)), np.cumsum(noisy, axis=1)), axis=1)
        noisy_sums = prefix[:, ends[:, 1] + 1] - prefix[:, ends[:, 0]]
        true_prefix = np.concatenate(([0.0], np.cumsum(cells)))
        true = (true_prefix[ends[:, 1] + 1] - true_prefix[ends[:, 0]]) / records
        for normalisation, denominator in (("public n", np.full((versions, 1), float(records))),
                                           ("released total", noisy.sum(axis=1, keepdims=True))):
            errors = np.abs(noisy_sums / denominator - true)
            for stat, value, paper in (("average", errors.mean(), TABLE2_AVERAGE[ai]),
                                       ("max", errors.max(), TABLE2_MAX[ai])):
                rows.append({"experiment": "interval (Table 2)", "alpha": alpha, "clipped": clip,
                             "normalisation": normalisation + ("" if clip else ", unclipped"), "statistic": stat, "value": float(value), "paper": paper * 1e-6})
    interval = pd.DataFrame(rows)

    rows = []
    values = np.arange(1, 101)
    for sigma_label, sigma in (("20", 20.0), ("√20", math.sqrt(20))):
        for n in (1000, 10_000):
            hits = {"exponential mechanism (α-DP)": [], f"literal — {NOT_DP_LABEL}": []}
            for draw in range(max_draws):
                data_points = np.clip(np.rint(_trial_rng(seed, 3, n, draw).normal(50, sigma, n)), 1, 100).astype(int)
                window = (values >= data_points.max() - 4) & (values <= data_points.max())
                em = max_query_distribution(data_points, 100, 0.05, k=1)
                literal = literal_max_distribution_not_dp(data_points, 100, 5, 0.05)
                hits["exponential mechanism (α-DP)"].append(em[window].sum())
                hits[f"literal — {NOT_DP_LABEL}"].append(literal[window].sum())
            paper = {1000: 0.1523, 10_000: 0.9116}[n] if sigma_label == "20" else math.nan
            rows += [{"experiment": "max query", "sigma": sigma_label, "n": n, "mechanism": label,
                      "value": float(np.mean(v)), "paper": paper} for label, v in hits.items()]
    max_table = pd.DataFrame(rows).assign(statistic="P(output in [max−4, max])")
    at = interval[(interval.alpha == 0.05) & (interval.statistic == "average")].set_index("normalisation").value
    findings = (f"α = 0.05: average interval error ×10⁻⁶ — clipped: {at['public n'] * 1e6:.1f} (public n), "
                f"{at['released total'] * 1e6:.1f} (released total); unclipped: {at['public n, unclipped'] * 1e6:.1f} "
                f"(public n; analytic ≈ 6.07·b = 121) — the paper prints 12, below one cell's noise b = 20",
                *(f"max query, σ = {r.sigma}, n = {r.n}: {r.mechanism.split(' (')[0].split(' —')[0]} "
                  f"{r.value:.3f}" + (f" (paper {r.paper:.4f})" if not math.isnan(r.paper) else "")
                  for r in max_table.itertuples()))
    return Reproduction(
        "xiao", "Xiao, Xiong & Yuan — cell release and the max query",
        claim="Table 2: average interval error 0.69…120 ×10⁻⁶ for α = 1…0.005 (n = 10⁶, β = 100, 100 versions × "
              "1000 queries); the max query outputs a value in [Max−4, Max] with probability 0.1523 (n = 1000) "
              "and 0.9116 (n = 10 000) for Gaussian data (mean 50, \"variance 20\") at α = 0.05.",
        measure="Corrected cell release (counts + Lap(1/α), clipped at 0) on IPUMS income cells, answers "
                "normalised by the public n and by the released total (spec §5.1(d)5: the paper's numbers are "
                "below one cell's noise, so its normalisation is unclear); and the exact output distribution of "
                f"the α-DP exponential-mechanism max query (k = 1) next to the paper's literal mechanism (lower end "
                f"min(D), r⁺ half-width 5, records in data order; {NOT_DP_LABEL}), averaged over "
                f"{max_draws} data draws, for σ = 20 and σ = √20.",
        data=data, tables={"interval": interval, "max_query": max_table}, findings=findings)


# ----------------------------------------------------------------------------- worked examples (spec §2e, §3e)
def example_workloads() -> dict[str, Explicit]:
    """The papers' small worked examples, for showing each mechanism's structure.

    >>> sorted(example_workloads())[:2]
    ['OM Algorithm 3 counterexample', 'OM Example 1']
    """
    fig1 = np.zeros((8, 6))
    for row, cols in enumerate([[0, 1], [0, 1, 2], [1, 2], [2], [2], [3], [0, 1], [5]]):
        fig1[row, cols] = 1
    synthetic = np.zeros((12, 13))
    for i in range(6):
        synthetic[i, [0, 7 + i]] = 1
        synthetic[6 + i, 1 + i] = 1
    census = np.zeros((6, 8))  # cells Sex × Race{W,B} × Salary{H,L}; q5 = q1+q3, q6 = q2+q4
    for q in range(4):
        census[q, [q, 4 + q]] = 1
    census[4], census[5] = census[0] + census[2], census[1] + census[3]
    example1 = np.array([[.3657, 0, .9812, 0], [0, .0645, 0, 0], [0, .5879, .7602, 0], [0, 0, 0, .7310],
                         [0, .7313, 0, 0], [0, 0, .7122, .9053]])
    return {"WDA Fig. 1": Explicit(fig1, label="WDA Fig. 1"),
            "WDA 12×13 synthetic": Explicit(synthetic, label="WDA 12×13 synthetic (spec §2e)"),
            "OM Example 1": Explicit(example1, label="OM Example 1"),
            "OM census": Explicit(census, label="OM census (intro)"),
            "OM Algorithm 3 counterexample": Explicit(np.array([[1.0, 1], [1, -1], [2, 0]]),
                                                      label="OM Algorithm 3 counterexample")}


def ggs_example_table(values: np.ndarray, scale: float, delta: float = 1.0) -> pd.DataFrame:
    """GGS groups of sorted ``values`` at λ2 = ``scale`` (oracle grouping: no stage-1 noise) with each bin's
    exact expected relative error, next to DP_BASE's λ/max(H, δ) (spec §4(c), §4(e)).

    >>> ggs_example_table(np.array([1.0, 1, 2, 3, 8, 9, 10, 100, 120, 1000]), 10.0).group.tolist()
    [0, 0, 0, 0, 1, 1, 1, 2, 3, 4]
    """
    values = np.asarray(values, dtype=float)
    groups = groups_from_cuts(np.arange(values.size), ggs(values, scale, delta))
    floor = np.maximum(values, delta)
    return pd.DataFrame({"bin value": values,
                         "group": np.concatenate([np.full(g.size, i) for i, g in enumerate(groups)]),
                         "expected relative error": expected_bin_error(values, groups, scale) / floor,
                         "DP_BASE": scale / floor})


REPRODUCTIONS: dict[str, Callable[..., Reproduction]] = {
    "wda": reproduce_wda,
    "om": reproduce_om,
    "om-times": reproduce_om_times,
    "sreb-gca": reproduce_sreb_gca,
    "xiao": reproduce_xiao,
}


# ----------------------------------------------------------------------------- figures and files
def summary(table: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Mean (and expected, where present) of ``value`` over trials, grouped by ``by``."""
    columns = {"value": "mean"} | ({"expected": "first"} if "expected" in table else {})
    return table.groupby(by, dropna=False, sort=False).agg(columns).reset_index()


DASHES = ("solid", "dash", "dot", "dashdot", "longdash")


def _figure(traces: list[dict], title: str, x_title: str, y_title: str, *, log_x: bool = False,
            log_y: bool = True, bar: bool = False) -> dict:
    """A plotly figure as a plain dict (core never imports plotly; pages wrap it in go.Figure)."""
    axis = lambda text, log: {"title": {"text": text}, **({"type": "log"} if log else {})}  # noqa: E731
    layout = {"title": {"text": title}, "xaxis": axis(x_title, log_x), "yaxis": axis(y_title, log_y),
              "height": 420, "legend": {"orientation": "h", "y": -0.25}}
    return {"data": traces, "layout": layout | ({"barmode": "group"} if bar else {})}


def _traces(table: pd.DataFrame, x: str, *, dash_by: str | None = None) -> list[dict]:
    """One line per mechanism (and per ``dash_by`` value) of the trial means of ``value`` against ``x``."""
    keys = ["mechanism"] + ([dash_by] if dash_by else [])
    means = table.groupby([*keys, x], sort=False).value.mean().reset_index()
    dashes = {v: DASHES[i % len(DASHES)] for i, v in enumerate(means[dash_by].unique())} if dash_by else {}
    traces = []
    for key, part in means.groupby(keys, sort=False):
        mechanism, *rest = key
        name = mechanism + (f", {dash_by} = {rest[0]:g}" if dash_by else "")
        traces.append({"type": "scatter", "mode": "lines+markers", "name": name, "x": part[x].tolist(),
                       "y": part.value.tolist(), "line": {"dash": dashes.get(rest[0], "solid") if rest else "solid"}})
    return traces


def figures(reproduction: Reproduction) -> list[dict]:
    """The reproduction's figures as plotly figure dicts (plain data; render with plotly or st.plotly_chart)."""
    t = reproduction.tables
    if reproduction.name == "wda":
        errors = t["errors"]
        middle = 1.0 if 1.0 in set(errors.epsilon) else errors.epsilon.iloc[0]
        low_p = errors.p.min()
        return [_figure(_traces(errors[errors.epsilon == middle], "p"),
                        f"WDA: average L1 error by hot-item probability p (ε = {middle:g})",
                        "p (probability a query includes the hot item)", "average L1 error per query"),
                _figure(_traces(errors[errors.p == low_p], "epsilon"), f"WDA: average L1 error by ε (p = {low_p:g})",
                        "ε", "average L1 error per query", log_x=True)]
    if reproduction.name == "om":
        errors = t["errors"]
        out = [_figure(_traces(errors[errors.tau == tau], "epsilon"),
                       f"OM: average squared error per query, τ = {tau:g} (OM and Identity overlap)",
                       "ε", "average squared error per query") for tau in errors.tau.unique()]
        sizes = t.get("sizes")
        for axis in ("m", "n") if sizes is not None else ():
            part = sizes[sizes.sweep.str.startswith(f"by {axis}")]
            if len(part):
                out.append(_figure(_traces(part, axis), f"OM: exact per-query MSE × ε² by {axis} (τ = 0.2)", axis,
                                   "expected squared error per query × ε²"))

        return out
    if reproduction.name == "om-times":
        times = t["times"]
        return [_figure(_traces(times[times.sweep.str.startswith(f"by {axis}")], axis),
                        f"OM paper Fig. {number}: optimisation CPU seconds by {axis} (τ = 0.2; mm-opt stands in for MM)",
                        axis, "CPU seconds") for axis, number in (("m", 4), ("n", 5))]
    if reproduction.name == "sreb-gca":
        errors, out = t["errors"], []
        for data in errors.dataset.unique():
            for metric, x_title in (("MRE of bins with count k", "true bin count k"),
                                    ("range MRE by width", "window width (bins)")):
                part = errors[(errors.dataset == data) & (errors.metric == metric)]
                out.append(_figure(_traces(part, "x", dash_by="epsilon"), f"{metric} — {data.split(' (')[0]}",
                                   x_title, metric))
        kld = errors[errors.metric.str.startswith("KLD")].assign(
            label=lambda d: d.dataset.str.split(" (", regex=False).str[0] + ", ε = " + d.epsilon.map("{:g}".format))
        means = kld.groupby(["mechanism", "label"], sort=False).value.mean().reset_index()
        out.append(_figure([{"type": "bar", "name": m, "x": part.label.tolist(), "y": part.value.tolist()}
                            for m, part in means.groupby("mechanism", sort=False)],
                           "KLD (released counts floored at κ = 1)", "dataset, ε", "KLD", bar=True))
        return out
    interval = t["interval"][t["interval"].statistic == "average"]
    traces = [{"type": "scatter", "mode": "lines+markers", "name": name, "x": part.alpha.tolist(),
               "y": part.value.tolist()} for name, part in interval.groupby("normalisation", sort=False)]
    paper = interval[interval.normalisation == "public n"]
    traces.append({"type": "scatter", "mode": "lines+markers", "name": "paper (Table 2)", "x": paper.alpha.tolist(),
                   "y": paper.paper.tolist(), "line": {"dash": "dot"}})
    maxima = t["max_query"].assign(label=lambda d: "σ = " + d.sigma + ", n = " + d.n.map("{:,}".format))
    bars = [{"type": "bar", "name": m, "x": part.label.tolist(), "y": part.value.tolist()}
            for m, part in maxima.groupby("mechanism", sort=False)]
    paper_bars = maxima.dropna(subset=["paper"]).drop_duplicates("label")
    bars.append({"type": "bar", "name": "paper (literal)", "x": paper_bars.label.tolist(),
                 "y": paper_bars.paper.tolist()})
    return [_figure(traces, "Xiao et al. Table 2: average interval error by α", "α",
                    "average |error| (fraction of n)", log_x=True),
            _figure(bars, "Max query: P(output in [max−4, max]) — the literal mechanism is NOT differentially private",
                    "data", "probability", log_y=False, bar=True)]


def _plotly_js() -> str:
    """A <script> with plotly.js: the copy bundled with the plotly package (found, not imported), else the CDN."""
    import importlib.util

    spec = importlib.util.find_spec("plotly")
    bundled = Path(spec.origin).parent / "package_data" / "plotly.min.js" if spec and spec.origin else None
    if bundled and bundled.is_file():
        return f"<script>{bundled.read_text(encoding='utf-8')}</script>"
    return '<script src="https://cdn.plot.ly/plotly-2.35.2.min.js"></script>'


def write(reproduction: Reproduction, output: str | Path) -> list[Path]:
    """Write ``<name>-<table>.csv`` per table and ``<name>.html`` (texts + figures); returns the paths."""
    import html

    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    paths = []
    for key, table in reproduction.tables.items():
        path = output / f"{reproduction.name}-{key}.csv"
        table.to_csv(path, index=False)
        paths.append(path)
    parts = [f"<h1>{html.escape(reproduction.title)}</h1>",
             f"<p><b>The paper claims:</b> {html.escape(reproduction.claim)}</p>",
             f"<p><b>We measure:</b> {html.escape(reproduction.measure)}</p>",
             f"<p><b>Data:</b> {html.escape(reproduction.data)}</p>",
             "<ul>" + "".join(f"<li>{html.escape(f)}</li>" for f in reproduction.findings) + "</ul>"]
    for i, fig in enumerate(figures(reproduction)):
        parts.append(f"<div id='figure{i}'></div><script>Plotly.newPlot('figure{i}', "
                     f"{json.dumps(fig['data'])}, {json.dumps(fig['layout'])});</script>")
    path = output / f"{reproduction.name}.html"
    path.write_text("<!doctype html><html><head><meta charset='utf-8'><title>"
                    f"{html.escape(reproduction.title)}</title>{_plotly_js()}</head><body>{''.join(parts)}</body></html>",
                    encoding="utf-8")
    return [*paths, path]


def add_reproduce_command(subparsers) -> None:
    """Register ``reproduce NAME --output DIR`` on the CLI's subparsers."""
    parser = subparsers.add_parser("reproduce", help="re-run a paper's headline experiment (CSV + HTML)",
                                   description="Writes tidy CSV tables and an HTML page with the paper's claim, "
                                               "what we measure, and the figures.")
    parser.add_argument("name", choices=list(REPRODUCTIONS), help="which paper")
    parser.add_argument("--output", required=True, help="output directory (created if missing)")
    parser.add_argument("--seed", type=int, default=0, help="base seed")
    parser.set_defaults(func=run_reproduce_command)


def run_reproduce_command(args) -> int:
    """CLI handler: run one reproduction, write its files, print the findings."""
    start = time.perf_counter()
    reproduction = REPRODUCTIONS[args.name](seed=args.seed)
    paths = write(reproduction, args.output)
    print(reproduction.title)
    for finding in reproduction.findings:
        print(f"  {finding}")
    print(f"wrote {', '.join(str(p) for p in paths)} in {time.perf_counter() - start:.1f} s")
    return 0
