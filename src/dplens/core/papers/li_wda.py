"""Li et al. §5 (WDA): the workload-aware division against hb, Privelet and DAWA on the paper's data."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from dplens.core.mechanisms import MECHANISMS
from dplens.core.mechanisms.wda import WDA, expected_error, leaves_for, optimal_budgets
from dplens.core.papers.examples import example_workloads
from dplens.core.papers.reproduction import (
    Reading,
    Reproduction,
    check_epsilons,
    check_runs,
    dataset_or_sample,
    optional_datasets,
    seeded_rng,
)
from dplens.core.papers.verdicts import (
    MIN_TRIALS,
    NOT_REPRODUCIBLE,
    Verdict,
    case,
    difference,
    exact,
    judge,
)
from dplens.core.queries.workloads import hot_spot, l1_sensitivity

WDA_DATASETS = ("ADULTFRANK", "PATENT", "INCOME")  # the paper's Adult, Patents and Income (Li et al. §5, Table 1)


def reproduce_wda(*, data: str | Path | None = None, data_dir: Path | None = None, m: int = 2000,
                  probabilities=(0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9),
                  epsilons=(10.0, 5.0, 1.0, 0.5, 0.1), trials: int = MIN_TRIALS, comparators=("dawa", "mwem"),
                  comparator_trials: int = MIN_TRIALS, seed: int = 0) -> Reproduction:
    """WDA paper Figs. 3–8: average L1 error per query on hot-spot workloads, by p and ε.

    The data-independent mechanisms (WDA, LM_W, cell Identity) run on the first dataset; ``comparators``
    (registry names, e.g. the paper's DAWA and MWEM) run ``comparator_trials`` trials on every dataset:
    ``data`` if given, else ADULTFRANK (or a sample) plus PATENT and INCOME when their files exist.
    """
    epsilons, trials = check_epsilons(epsilons), check_runs(trials)
    comparator_trials = check_runs(comparator_trials, "comparator_trials")
    first = dataset_or_sample("ADULTFRANK", "smooth", data_dir, data)
    extra, skipped = ([], []) if data is not None else optional_datasets(WDA_DATASETS[1:], data_dir)
    datasets = [first, *extra]
    independent = {"wda (optimal)": WDA(), "wda (equal, paper)": WDA(budget="equal"),
                   "LM_W (laplace-on-answers)": MECHANISMS["laplace-on-answers"],
                   "identity (cell noise)": MECHANISMS["identity"]}
    dependent = {name: MECHANISMS[name] for name in comparators if name in MECHANISMS}
    rows = []
    for pi, p in enumerate(probabilities):
        workload = hot_spot(first[0].size, m, p, seed=seed)
        for di, (x, label_data) in enumerate(datasets):
            if x.size != first[0].size:
                continue  # the hot-spot workload is built for the first dataset's domain
            truth = workload.matvec(x)
            mechanisms = (independent if di == 0 else {}) | dependent
            for mi, (label, mechanism) in enumerate(mechanisms.items()):
                for ei, epsilon in enumerate(epsilons):
                    expected = _expected_l1(mechanism, workload, epsilon)
                    for t in range(comparator_trials if label in dependent else trials):
                        rng = seeded_rng(seed, pi, mi, ei, t, *((di,) if di else ()))
                        answers = mechanism.run(x, workload, epsilon, rng).answers
                        rows.append({"dataset": label_data, "p": p, "mechanism": label, "epsilon": epsilon,
                                     "trial": t, "value": float(np.mean(np.abs(answers - truth))),
                                     "expected": expected})
    table = pd.DataFrame(rows).assign(metric="average L1 error per query")
    at_epsilon = 1.0 if 1.0 in epsilons else epsilons[0]
    findings = []
    for p in (probabilities[0], probabilities[-1]):
        at = table[(table.p == p) & (table.epsilon == at_epsilon)]
        mean = at[at.dataset == first[1]].groupby("mechanism").value.mean()
        findings.append(f"p = {p:g}, ε = {at_epsilon:g}: WDA (optimal) {mean['wda (optimal)']:.1f}, WDA (equal) "
                        f"{mean['wda (equal, paper)']:.1f}, LM_W {mean['LM_W (laplace-on-answers)']:.1f}, "
                        f"cell Identity {mean['identity (cell noise)']:.2f}"
                        + "".join(f", {name.upper()} {mean[name]:.2f}" for name in dependent if name in mean)
                        + " (WDA vs LM_W: "
                          f"{100 * (mean['wda (optimal)'] / mean['LM_W (laplace-on-answers)'] - 1):+.0f} %; "
                        f"{first[1].split(' (')[0]})")
        findings += [f"p = {p:g}, ε = {at_epsilon:g} on {d}: " + ", ".join(f"{k.upper()} {v:.2f}" for k, v in
                                                                         part.groupby("mechanism").value.mean().items())
                     for d, part in at[at.dataset != first[1]].groupby("dataset", sort=False)]
    return Reproduction(
        "wda", "WDA — workload division (Li et al.)",
        claim="WDA \"reduces nearly 40 % L1 error vs MWEM, DAWA, Identity\", and more than 40 % vs Identity at "
              "p = 0.2, on hot-spot workloads (m = 2000, p = probability a query includes the hot item).",
        measure="Corrected WDA (hot column of W, budget halving counted; optimal and the paper's equal split) "
                "against LM_W — what the paper calls Identity: \"answer results are directly added Laplace "
                "distribution noise\" (§5) — and cell-level Identity, on OUR "
                "reconstruction of the hot-spot workload (ranges of half-width |N(0,10)| around uniform "
                f"centres, hot column with probability p), {trials} trials; the registry's DAWA and MWEM "
                f"(data-dependent, {comparator_trials} trials) on every dataset. The error of WDA, LM_W and "
                "Identity is data-independent, so one dataset suffices for them. Expected from their exact error: "
                "WDA well "
                "below LM_W at p = 0.2, little gain at p = 0.9; cell-level Identity far below both on these "
                "narrow ranges.",
        data="; ".join([d for _, d in datasets] + skipped), tables={"errors": table}, findings=tuple(findings),
        verdicts=tuple(_wda_verdicts(table, probabilities[0], at_epsilon, dependent)), readings=wda_readings(),
        not_reproduced="The paper's Nw, Nw2 and Fidata (BLS) datasets are not available; its hot-spot workload is "
                       "under-specified (§5: queries around a random centre \"with 10 as the variance\"), so ours is a "
                       "reconstruction.")


WDA_SPARSE, WDA_COMPLEX = ("ADULTFRANK",), ("PATENT", "INCOME")  # the paper's words (§5): Adult is "sparse"


def _wda_kind(dataset: str) -> str:
    """What the WDA paper calls the dataset: "sparse" (Adult), "complex" (Patents, Income), or "" (other data)."""
    name = dataset.split(" (")[0].removeprefix("DPBench ")
    return "sparse" if name in WDA_SPARSE else "complex" if name in WDA_COMPLEX else ""


def _values(rows: pd.DataFrame) -> float | np.ndarray:
    """One mechanism's error at one setting: its exact expectation when it has one, else the per-trial values."""
    expected = rows.expected.iloc[0] if "expected" in rows and len(rows) else math.nan
    return float(expected) if math.isfinite(expected) else rows.value.to_numpy(dtype=float)


def _wda_verdicts(table: pd.DataFrame, p: float, epsilon: float, dependent) -> list[Verdict]:
    """WDA's claims at the smallest p and ε = 1 (or the first ε): each on the datasets the paper names for it."""
    at = table[(table.p == p) & (table.epsilon == epsilon)]
    first = at[at.dataset == table.dataset.iloc[0]]
    wda, lm, identity = (_values(first[first.mechanism == k]) for k in (
        "wda (optimal)", "LM_W (laplace-on-answers)", "identity (cell noise)"))
    m_wda, m_lm, m_id = (float(np.mean(v)) for v in (wda, lm, identity))
    where = f"p = {p:g}, ε = {epsilon:g}"
    lm_label = "LM_W (the paper's \"Identity\")"
    verdicts = [judge(
        f"> 40 % less L1 error than \"Identity\" at p = 0.2 ({where})", "> 40 % less (WDA < 0.6 × Identity)",
        [case(lm_label, difference(wda, lm, 0.6), below=0.0),
         case("cell Identity", difference(wda, identity, 0.6), below=0.0)],
        literal="\"Identity\" read as LM_W (Laplace on each answer, S(W)/ε): WDA " + f"{m_wda:.4g} vs LM_W {m_lm:.4g}",
        dplens=f"WDA (ours) {m_wda:.4g} vs LM_W {m_lm:.4g} ({100 * (m_wda / m_lm - 1):+.0f} %); vs cell Identity "
               f"{m_id:.4g} (WDA {m_wda / m_id:.0f}× worse); the interval is on WDA − 0.6 × rival")]
    complex_rows = []
    for data, part in at.groupby("dataset", sort=False):
        kind = _wda_kind(data)
        tag = f"{data}, the paper's {kind} dataset" if kind else data
        comparators = {k.upper(): _values(part[part.mechanism == k]) for k in dependent if k in set(part.mechanism)}
        others = {"cell Identity": identity} | comparators
        verdicts.append(judge(
            f"nearly 40 % less L1 error than MWEM, DAWA, Identity ({tag}; {where})", "≈ 40 % less (WDA < 0.6 × each)",
            [case(k, difference(wda, v, 0.6), below=0.0) for k, v in others.items()],
            dplens=f"WDA (ours) {m_wda:.4g}; " + ", ".join(
                f"{k} {np.mean(v):.4g} (WDA " + (f"{m_wda / np.mean(v):.0f}× worse)" if m_wda > np.mean(v)
                                                  else f"{np.mean(v) / m_wda:.0f}× better)") for k, v in others.items())
            + "; the interval is on WDA − 0.6 × rival"))
        if comparators and kind != "sparse":  # the paper's claim is about its complex datasets (§5)
            complex_rows.append(judge(
                f"MWEM and DAWA are worse than \"Identity\" (LM_W) ({tag}; {where})",
                "worse than Identity on the complex datasets",
                [case(k, difference(lm, v), below=0.0) for k, v in comparators.items()], scope="for",
                literal="\"Identity\" read as LM_W",
                dplens=", ".join(f"{k} {np.mean(v):.4g}" for k, v in comparators.items())
                + f" vs LM_W {m_lm:.4g} (cell Identity {m_id:.4g}); the interval is on LM_W − rival"))
    if dependent:
        verdicts += complex_rows or [Verdict(
            f"MWEM and DAWA are worse than \"Identity\" (LM_W) on the complex datasets ({where})",
            "worse than Identity on the complex datasets",
            "no complex dataset here (PATENT or INCOME); ADULTFRANK is the paper's sparse dataset, so the claim is "
            "not judged on it", NOT_REPRODUCIBLE)]
    fig2 = _wda_fig2()
    verdicts.append(judge("Fig. 2: dividing W into rows 1–3 / 4–8 (ε1 = 0.58, ε2 = 0.42) lowers the average L1 "
                          "error below LM_W's 4", "3.4275 < 4",
                          [case("Fig. 2 − 4", exact(fig2["corrected"] - 4.0), below=0.0)],
                          literal=f"{fig2['literal']:.4f}, only if Δ(W2) = 1",
                          dplens=f"{fig2['corrected']:.4f} > 4 (Δ of W2 is 2: the printed W2 repeats e3); equal "
                                 f"split {fig2['equal']:.4g}, optimal split {fig2['optimal']:.4f}"))
    return verdicts


def _wda_fig2() -> dict[str, float]:
    """Li et al. §4, Fig. 2: the division's average L1 error at ε = 1, as printed, literally and corrected.

    The printed W2 holds the row e3 twice, so Δ(W2) = 2; the paper's 3.4275 needs Δ(W2) = 1.
    """
    workload = example_workloads()["WDA Fig. 1"]
    blocks = [np.arange(3), np.arange(3, 8)]
    out = {"corrected": expected_error(leaves_for(workload, blocks, [0.58, 0.42]), 1.0, squared=False),
           "equal": expected_error(leaves_for(workload, blocks, [0.5, 0.5]), 1.0, squared=False),
           "optimal": expected_error(optimal_budgets(leaves_for(workload, blocks, [0.5, 0.5])), 1.0, squared=False)}
    out["literal"] = (3 * 3 / 0.58 + 5 * 1 / 0.42) / 8  # the paper's number needs Δ(W2) = 1
    return out


def wda_readings() -> tuple[Reading, ...]:
    fig2 = _wda_fig2()
    return (Reading("Fig. 2 division, average L1 error at ε = 1", "3.4275 (< 4: the division helps)",
                    f"{fig2['literal']:.5f}, only if Δ(W2) = 1", f"{fig2['corrected']:.4f} (Δ(W2) = 2; > 4: it hurts)"),
            Reading("\"Identity\" (the baseline)", "Identity", "LM_W: Laplace on the answers, S(W)/ε per query",
                    "cell Identity (Laplace on the counts) is a different, far better baseline here"),
            Reading("Algorithm 1 line 3: the split item", "\"the most frequent item in x\"",
                    "argmax of the data x", "the hot column of W (argmax of column sums): data-independent",
                    literal_is_dp=False),
            Reading("Algorithm 1 line 6: when to split", "noise ≥ noise_divided",
                    "|W|Δ ≥ |W1|Δ1 + |W2|Δ2 always holds: splits down to single rows",
                    "compare a/ε with (a1 + a2)/(ε/2) (equal) or (√a1 + √a2)²/ε (optimal)"))


def _expected_l1(mechanism, workload, epsilon: float) -> float:
    """Exact expected average L1 error where it is a closed form (WDA leaves, LM_W), else NaN."""
    if isinstance(mechanism, WDA):
        return expected_error(mechanism.division(workload), epsilon, squared=False)
    if mechanism.name == "laplace-on-answers":
        return l1_sensitivity(workload) / epsilon
    return math.nan
