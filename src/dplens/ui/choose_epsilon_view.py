"""The Choose epsilon page's logic (callbacks, sections, figures); the page script calls it through ``ui``."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dplens.core.analysis import risk, selection
from dplens.core.mechanisms import MECHANISMS
from dplens.core.privacy.definitions import zcdp_rho
from dplens.core.release.export import frame_to_csv
from dplens.ui.charts import (
    EPSILON_TITLE,
    PALETTE,
    TRUE_COLOUR,
    histogram_figure,
    line_figure,
    mechanism_colour,
    mechanism_label,
)
from dplens.ui.datasets import histogram
from dplens.ui.definition import definition as privacy_definition
from dplens.ui.handoff import use_button
from dplens.ui.ledger import delta as privacy_delta
from dplens.ui.ledger import point_words
from dplens.ui.privacy import available, session_axis
from dplens.ui.state import simulation_rng
from dplens.ui.sweeps import preview_release
from dplens.ui.targets import plan_releases, target_plans
from dplens.ui.tuning import tuning_histogram, tuning_key
from dplens.ui.value_sources import SOURCES, TRUE, tuning_values
from dplens.ui.workloads import workload as session_workload
from dplens.ui.workloads import workload_name, workload_spec

TARGETS = {"RMSE per query": "rmse", "MAE per query": "mae", "±a with probability 1−β": "max_abs"}


LC_EXAMPLES = {"Absence days {1, 2, 3, 10} (paper)": "1, 2, 3, 10", "School year {1, 2, 3, 4} (paper)": "1, 2, 3, 4",
               "Your own values": None}


TABLE_3_EPSILONS = (5.0, 2.0, 1.0, 0.5, 0.1, 0.01)


GROUPS_1D = ["total", "identity", "prefix", "all-range"]


GROUPS_2D = ["total", "identity", "marginals", "range-2d", "prefix-2d"]


TARGET_KINDS = {  # label -> (metric, confidence, simultaneous) from the confidence column
    "±, all queries at once": lambda c: ("max_abs", c, True),
    "±, each query": lambda c: ("max_abs", c, False),
    "RMSE per query": lambda c: ("rmse", None, True),
    "MAE per query": lambda c: ("mae", None, True),
}


TARGET_MECHANISMS = ("identity", "laplace-on-answers", "hb", "privelet", "greedy-h")


@dataclass(frozen=True)
class _Target:
    """The single-target tab's inputs: a mechanism and an error ``a`` of one kind (a TARGETS label)."""

    name: str
    kind: str
    target: float
    confidence: float | None  # 1 − β of a "±a with probability 1−β" target, else None
    simultaneous: bool

    @property
    def metric(self) -> str:
        return TARGETS[self.kind]

    @property
    def label(self) -> str:
        return self.kind if self.confidence is None else f"a at 1−β = {self.confidence:g}"


def from_accuracy() -> None:
    """The single-target tab: the smallest ε whose error meets a target, its curve and, for Laplace, intervals."""
    hist, workload = tuning_histogram(), session_workload()
    st.caption(f"Dataset **{hist.name}** · workload `{workload_name()}` ({workload.shape[0]:,} queries). "
               "Nothing on this page spends budget.")
    wanted = _accuracy_target()
    mechanism = MECHANISMS[wanted.name]
    choice = _epsilon_choice(wanted, mechanism, hist, workload)
    if choice is None:
        return
    _show_choice(wanted, choice)
    _laplace_intervals(mechanism, workload, hist, choice, wanted.confidence)


def _accuracy_target() -> _Target:
    """The widgets of one accuracy target: mechanism, kind of target, a and, for ±a targets, β and union bound."""
    left, middle, right = st.columns(3)
    choices = available()
    if st.session_state.get("choose_mechanism") not in choices:  # a Gaussian one under pure ε-DP
        st.session_state.choose_mechanism = choices[0]
    name = left.selectbox("Mechanism", choices, key="choose_mechanism", format_func=mechanism_label,
                          help="Under (ε, δ) or zCDP (sidebar) Gaussian mechanisms are offered too; ε is then "
                               "ε at the sidebar's δ, and every mechanism runs at that privacy value.")
    kind = middle.radio("Target", list(TARGETS), key="choose_kind")
    target = right.number_input("Target error a (counts)", min_value=1e-6, value=10.0, key="choose_target")
    confidence, simultaneous = None, True
    if TARGETS[kind] == "max_abs":
        confidence = 1 - middle.number_input("β (failure probability)", 0.0001, 0.5, 0.05, format="%.4f",
                                             key="choose_beta")
        simultaneous = right.checkbox("All queries at once (union bound)", True, key="choose_simultaneous")
    return _Target(name, kind, target, confidence, simultaneous)


def _epsilon_choice(wanted: _Target, mechanism, hist, workload) -> selection.EpsilonChoice | None:
    """The smallest ε meeting the target, from the error formula or (on request) a simulation on the data, kept in
    the session per input; None (with the reason shown) when there is none."""
    key = (tuning_key(), workload_spec(), wanted.name, wanted.target, wanted.metric, wanted.confidence,
           wanted.simultaneous, int(st.session_state.seed), privacy_definition(), privacy_delta())
    try:
        choice = st.session_state.epsilon_choices.get(key)
        if choice is None:
            with st.spinner("computing the analytic error…"):
                choice = selection.epsilon_for_accuracy(mechanism, workload, wanted.target, wanted.metric,
                                                        wanted.confidence, simultaneous=wanted.simultaneous,
                                                        axis=session_axis())
            st.session_state.epsilon_choices[key] = choice
    except selection.NeedsDataError as err:
        choice = st.session_state.epsilon_choices.get(key)
        if choice is None:
            choice = _simulated_choice(wanted, mechanism, hist, workload, err.reason)
            if choice is None:
                return None
            st.session_state.epsilon_choices[key] = choice
    except ValueError as err:
        st.error(str(err))
        return None
    return choice


def _simulated_choice(wanted: _Target, mechanism, hist, workload, reason: str) -> selection.EpsilonChoice | None:
    """No formula gives the error: ε estimated by simulating on the current data, once the button is clicked."""
    st.info(f"{wanted.name} {reason}, so no formula gives ε for this target. Estimate it by simulating "
            "the mechanism on the current data (trials × about 20 epsilons; nothing is charged, slow "
            "mechanisms take minutes). The result holds for this data only.")
    trials = st.slider("Trials per epsilon", 2, 30, 5, key="choose_trials")
    if not st.button("Estimate by simulation", key="choose_simulate"):
        return None
    with st.spinner("simulating…"):
        try:
            return selection.epsilon_for_accuracy(
                mechanism, workload, wanted.target, wanted.metric, wanted.confidence,
                simultaneous=wanted.simultaneous, data=hist.counts, trials=trials, points=12, rng=simulation_rng(1),
                axis=session_axis())
        except ValueError as sim_err:
            st.error(str(sim_err))
            return None


def _show_choice(wanted: _Target, choice: selection.EpsilonChoice) -> None:
    """The chosen ε (ρ under zCDP), the button handing it to Release, and the error curve it was read from."""
    at_delta = "" if privacy_definition() == "pure" else f" at δ = {privacy_delta():g}"
    if privacy_definition() == "zcdp":  # the definition's own unit first; its ε at δ once, as a conversion
        st.metric("Smallest ρ meeting the target", f"ρ = {zcdp_rho(choice.epsilon, privacy_delta()):.4g}",
                  help=f"Method: {choice.method}. {choice.note}")
        st.caption(f"That is ε = {choice.epsilon:.4g}{at_delta} (CKS conversion), the ε the charts plot.")
    else:
        st.metric("Smallest epsilon meeting the target", f"ε = {choice.epsilon:.4g}{at_delta}",
                  help=f"Method: {choice.method}. {choice.note}")
    if choice.note:
        st.caption(choice.note)
    name, label, target = wanted.name, wanted.label, wanted.target
    use_button(choice.epsilon, mechanism=name, target=f"{label} ≤ {target:g}", workload=workload_spec(),
               key="choose_use")
    fig = line_figure(choice.epsilons, {f"{name}: {label}": choice.errors}, x_title=EPSILON_TITLE,
                      y_title="error per query (records)", log_x=True, log_y=True, levels={"target": target},
                      colours={f"{name}: {label}": mechanism_colour(name)})
    fig.add_scatter(x=[choice.epsilon], y=[target], mode="markers", marker={"size": 12, "symbol": "star"},
                    name=f"chosen ε = {choice.epsilon:.4g}")
    st.plotly_chart(fig, key="choose_curve")


def _laplace_intervals(mechanism, workload, hist, choice: selection.EpsilonChoice, confidence: float | None) -> None:
    """What the chosen ε buys when the noise is plain Laplace: its scale, ± per query and all at once, and (1-D
    identity) a preview with per-bin intervals."""
    if selection.laplace_answer_scale(mechanism, workload, choice.epsilon, axis=session_axis()) is None:
        st.caption("Confidence intervals are exact for Laplace histograms (identity) and Laplace on the "
                   "answers; this mechanism's error is not plain Laplace noise.")
        return
    accuracy = selection.accuracy_for_epsilon(mechanism, workload, choice.epsilon, confidence=confidence or 0.95,
                                              axis=session_axis())
    cols = st.columns(3)
    cols[0].metric(f"Noise scale per {accuracy.unit}", f"b = {accuracy.noise_scale:.4g}")
    cols[1].metric(f"±, each {accuracy.unit} ({accuracy.confidence:.0%})", f"{accuracy.half_width:.4g}")
    cols[2].metric(f"±, all {accuracy.unit}s at once", f"{accuracy.simultaneous_half_width:.4g}")
    if accuracy.unit == "bin" and len(hist.domain.shape) == 1 and accuracy.noise_scale is not None:
        # the bins' noise is Lap(b) with b = 1/ε at the ε identity runs at (√(2ρ) under zCDP): preview that noise
        preview = preview_release(1.0 / accuracy.noise_scale)
        lo, hi = selection.laplace_confidence_intervals(preview, accuracy.noise_scale, accuracy.confidence)
        fig = histogram_figure(hist, preview, f"identity, {point_words(choice.epsilon)} (preview)",
                               source=tuning_values())
        fig.add_scatter(x=np.arange(hist.domain.size), y=lo, mode="lines", line={"width": 0.5}, name="interval")
        fig.add_scatter(x=np.arange(hist.domain.size), y=hi, mode="lines", line={"width": 0.5},
                        fill="tonexty", name=f"per-bin {accuracy.confidence:.0%} interval")
        st.plotly_chart(fig, key="choose_intervals")


def target_label(row: dict) -> str:
    """A target in words, e.g. "prefix ± 200 (all queries at once, 95 %)" or "total RMSE ≤ 20"."""
    size, kind = row["± (records)"], row["kind"]
    if kind.startswith("±"):
        return f"{row['queries']} ± {size:g} ({kind[3:]}, {float(row['confidence'] or 0.95):.0%})"
    return f"{row['queries']} {kind.split()[0]} ≤ {size:g}"


def several_targets() -> None:
    hist = histogram()
    two_d = len(hist.domain.shape) == 2
    st.caption("List an accuracy target for each group of queries. Groups released separately add their ε "
               "(sequential composition); groups answered by one release of a histogram mechanism that ignores "
               "the groups (identity, hb, privelet) cost only the largest of their ε. Nothing is spent here.")
    groups = GROUPS_2D if two_d else GROUPS_1D
    default: list[dict[str, Any]] = [{"queries": "total", "kind": "±, each query", "± (records)": 50.0,
                                      "confidence": 0.95},
               {"queries": groups[2], "kind": "RMSE per query", "± (records)": 20.0, "confidence": 0.95}]
    table = st.data_editor(default, num_rows="dynamic", key="targets_table", hide_index=True, column_config={
        "queries": st.column_config.SelectboxColumn("queries", options=groups, required=True,
                                                     help="Which group of queries this target is for."),
        "kind": st.column_config.SelectboxColumn("kind", options=list(TARGET_KINDS), required=True),
        "± (records)": st.column_config.NumberColumn("± (records)", min_value=1e-6, required=True),
        "confidence": st.column_config.NumberColumn("confidence", min_value=0.5, max_value=0.9999,
                                                    format="%.4f", help="For the ± kinds: 1 − β.")})
    names = st.multiselect("Mechanisms", list(MECHANISMS), default=[m for m in TARGET_MECHANISMS if m in MECHANISMS],
                           key="targets_mechanisms", format_func=mechanism_label,
                           help="Mechanisms whose error has a formula; data-dependent ones need a simulation on the "
                                "data (the single-target tab offers it).")
    try:
        rows = tuple((target_label(row), row["queries"], float(row["± (records)"]),
                      *TARGET_KINDS[row["kind"]](float(row["confidence"] or 0.95)))
                     for row in table if row.get("queries") and row.get("kind") and row.get("± (records)"))
        key = (tuple(names), rows, hist.domain.shape)
        if st.button("Find the least ε", key="targets_run", type="primary",
                     help="Some error formulas take a few seconds on large domains; results are kept."):
            with st.spinner("computing the least ε per mechanism and group…"):
                st.session_state.targets_result = (key, target_plans(*key))
    except ValueError as err:
        st.error(str(err))
        return
    stored = st.session_state.get("targets_result")
    if stored is None or stored[0] != key:
        st.info("List the targets and press **Find the least ε**.")
        return
    plans, best = stored[1]
    labels = [r[0] for r in rows]
    plan_rows = [{"mechanism": p.mechanism, "least total ε": p.total,
                  **{label: e for label, e in zip(labels, p.epsilons, strict=True)}, "why not": p.reason}
                 for p in plans]
    st.dataframe(plan_rows, hide_index=True, key="targets_plans",
                 column_config={c: st.column_config.NumberColumn(format="%.4g") for c in plan_rows[0] if c not in
                                ("mechanism", "why not")} if plan_rows else None)
    if best is None:
        st.info("No listed mechanism has a formula for every target: add laplace-on-answers or identity, or "
                "relax a target.")
        return
    chosen = best.reason.split(", ")
    releases = plan_releases(best, labels)
    cols = st.columns(2)
    cols[0].metric("Least total ε, best split", f"ε = {best.total:.4g}",
                   help="Each group by its cheapest own release, or several groups on one shared release of a "
                        "histogram mechanism (the cheapest mix is chosen).")
    cols[1].metric("Split", " · ".join(f"{r['ε']:.4g} ({r['ε'] / best.total:.0%})" for r in releases))
    st.dataframe([{"release": r["release"], "mechanism": r["mechanism"], "groups": r["groups"], "ε": r["ε"],
                   "share": f"{r['ε'] / best.total:.1%}"} for r in releases], hide_index=True, key="targets_split")
    use_button(best.total, mechanism=chosen[0] if len(set(chosen)) == 1 else None,
               target=f"{len(labels)} targets, best split", workload=workload_spec(), key="targets_use")
    st.caption("“Use this ε” hands the total on (and the mechanism when one serves every group). Release "
               "each group at its share: the shares add up to the total.")


def from_risk() -> None:
    st.markdown("An adversary knows every value in a small universe except **who is missing** from the "
                "data, and sees one noisy answer `f(X′) + Lap(Δf/ε)` (Lee & Clifton 2011).")
    left, middle, right = st.columns(3)
    example = left.selectbox("Universe", list(LC_EXAMPLES), key="lc_example")
    text = LC_EXAMPLES[example] or left.text_input("Values, one per individual", "1, 2, 3, 10", key="lc_values")
    query = middle.selectbox("Query", list(selection.LC_QUERIES), key="lc_query")
    rho = right.number_input("Risk target ρ (largest acceptable posterior)", 0.0001, 0.9999, 1 / 3,
                             format="%.4f", key="lc_rho")
    try:
        worlds = selection.possible_worlds([float(v) for v in text.split(",") if v.strip()], query)
        tight = selection.lee_clifton_epsilon_tight(rho, worlds.world_values, worlds.sensitivity)
    except ValueError as err:
        st.error(str(err))
        return
    try:
        upper = selection.lee_clifton_epsilon_upper(rho, worlds.sensitivity, worlds.value_spread, worlds.n)
    except ValueError:
        upper = math.inf  # every world gives the same answer (Δv = 0): the bound does not limit ε
    cols = st.columns(4)
    cols[0].metric("Δf (paper's, removal-only)", f"{worlds.sensitivity:.6g}")
    cols[1].metric("Δv (spread of world answers)", f"{worlds.value_spread:.6g}")
    cols[2].metric("Largest ε, bound (Eq. 7)", "any" if math.isinf(upper) else f"{upper:.7f}")
    cols[3].metric("Largest ε, tight (Eq. 3)", "any" if math.isinf(tight) else f"{tight:.7f}")
    chosen = tight if math.isfinite(tight) else upper
    if math.isfinite(chosen):
        use_button(chosen, mechanism=None, target=f"re-identification risk ≤ {rho:.3g} ({query})",
                   workload=workload_spec(), key="lc_use")
    st.info("**What it means:** at or below this ε, this adversary cannot become more than ρ sure which "
            "individual is missing after one answer (the prior is 1/n). **What it does not mean:** it is not a "
            "differential-privacy guarantee; it holds only for this universe, query and adversary, and "
            "further answers compose as usual. The bound (Eq. 7) is a *maximum* ε and is smaller than the "
            "tight one: using it costs accuracy, never privacy.")
    epsilons = np.linspace(0, 5, 101)
    curves = {"β tight (Eq. 3)": selection.lee_clifton_risk_tight(epsilons, worlds.world_values, worlds.sensitivity)}
    if worlds.value_spread > 0:
        curves["β upper bound (Eq. 5)"] = selection.lee_clifton_risk_upper(
            epsilons, worlds.sensitivity, worlds.value_spread, worlds.n)
    fig = line_figure(epsilons, curves, x_title="epsilon", y_title="adversary's posterior (risk)",
                      levels={"ρ": rho})
    st.plotly_chart(fig, key="lc_curves")
    st.subheader("Posterior over the worlds (Table 3)")
    order = list(range(worlds.n))[::-1]  # the paper's ω1 is the world without the last individual
    labels = [f"without {worlds.universe[i]:g} (f = {worlds.world_values[i]:.4g})" for i in order]
    left, right = st.columns(2)
    missing = left.selectbox("True world", order, format_func=lambda i: labels[order.index(i)], key="lc_world")
    gamma = right.number_input("Noisy answer γ", value=float(worlds.world_values[missing]), key="lc_gamma",
                               help="Table 3 of the paper uses γ = f(ω1) = 2.")
    table = {f"ε = {e:g}": selection.lee_clifton_posterior(gamma, worlds.world_values[order], e, worlds.sensitivity)
             for e in TABLE_3_EPSILONS}
    st.dataframe({"world": labels} | {k: np.round(v, 4) for k, v in table.items()}, hide_index=True,
                 key="lc_table")


def usefulness() -> None:
    st.caption("Xiao, Xiong & Yuan's (ε_u, δ_u)-usefulness: with probability ≥ 1 − δ_u every answer (as a "
               "fraction of n) is within ε_u. Notation: here α is the DP epsilon.")
    hist = tuning_histogram()
    left, middle, right = st.columns(3)
    kind = left.radio("Queries", ["Intervals (Theorems 4.2/5.2)", "Max query (Lemma 4.2, Theorem 4.4)"],
                      key="useful_kind")
    cells = int(left.number_input("Cells β", 1, 2**22, min(hist.domain.size, 4096), key="useful_cells"))
    alpha = middle.number_input("DP epsilon α", 0.0001, 100.0, 0.05, format="%.4f", key="useful_alpha")
    eps_u = middle.number_input("Error ε_u", 0.00001, 1000.0, 0.02, format="%.5f", key="useful_eps_u")
    delta_u = right.number_input("Failure probability δ_u", 0.0001, 0.9999, 0.05, format="%.4f",
                                 key="useful_delta_u")
    try:
        if kind.startswith("Intervals"):
            neighbouring = right.selectbox("Neighbours", ["add_remove", "replace_one"], key="useful_neighbours")
            n_min = selection.interval_min_records(cells, alpha, eps_u, delta_u, neighbouring=neighbouring)
            failure = selection.interval_failure_probability(max(hist.total, 1.0), cells, alpha, eps_u,
                                                             neighbouring=neighbouring)
            cols = st.columns(2)
            cols[0].metric("Minimum records n", f"{n_min:,.1f}")
            cols[1].metric(f"Failure bound at this dataset's n = {hist.total:,.0f}", f"{min(failure, 1.0):.4g}")
            records = np.geomspace(n_min / 10, n_min * 10, 60)
            bound = [min(1.0, selection.interval_failure_probability(n, cells, alpha, eps_u,
                                                                     neighbouring=neighbouring)) for n in records]
            fig = line_figure(records, {"failure probability bound": bound}, x_title="records n",
                              y_title="P(some interval errs by > ε_u)", log_x=True, log_y=True,
                              levels={"δ_u": delta_u})
            fig.add_scatter(x=[n_min], y=[delta_u], mode="markers", marker={"size": 12, "symbol": "star"},
                            name=f"minimum n = {n_min:,.0f}")
        else:
            n_lemma, delta_lemma = selection.max_query_lemma42(cells, alpha, eps_u)
            n_min = selection.max_query_min_records(cells, alpha, eps_u, delta_u)
            cols = st.columns(2)
            cols[0].metric("Minimum n (Theorem 4.4)", f"{n_min:,.2f}")
            cols[1].metric("Lemma 4.2: n, δ_u", f"{n_lemma:,.2f}, {delta_lemma:.4f}",
                           help="δ_u = e^α/(e^α+1) > 1/2: the guarantee fails about half the time, so it says almost "
                                "nothing.")
            st.caption("These bounds are stated for the paper's literal max-query mechanism, which is not DP "
                       "(it answers with the exact maximum); use them as the paper's numbers, not as guarantees.")
            deltas = np.geomspace(1e-4, 0.999 / (math.exp(alpha) + 1), 50)
            fig = line_figure(deltas, {"minimum n": [selection.max_query_min_records(cells, alpha, eps_u, d)
                                                     for d in deltas]},
                              x_title="δ_u", y_title="minimum records n", log_x=True)
    except ValueError as err:
        st.error(str(err))
        return
    st.plotly_chart(fig, key="useful_chart")



RISK_NOISE = {"pure": "Laplace (pure ε)", "approx": "Gaussian, analytic (ε, δ)", "zcdp": "Gaussian, ρ-zCDP (ε at δ)"}


RISK_PRIORS = (0.01, 0.1, 0.5)


RISK_STATISTICS = ("Proportion (k of n records)", "Mean of n values in [L, U]")


def _csv_button(label: str, frame: pd.DataFrame, file_name: str, key: str) -> None:
    st.download_button(label, frame_to_csv(frame), file_name, mime="text/csv", on_click="ignore",
                       key=key, icon=":material/download:")


def _privacy_columns(definition: str, epsilon: float, delta: float) -> dict:
    """The privacy level as CSV metadata columns."""
    return {"definition": definition, "epsilon": epsilon, "delta": 0.0 if definition == "pure" else delta,
            "rho": zcdp_rho(epsilon, delta) if definition == "zcdp" else None}


def risk_and_noise() -> None:
    """The "See the risk and the noise" tab: where a release falls, what it risks, inference from a sample."""
    st.caption("For one query at a privacy level: where its release will fall, what an attacker can learn about "
               "one person, and how the noise adds to sampling error (after Nanayakkara et al., PETS 2022). "
               "Nothing on this tab spends budget or draws noise: every number is exact (or a stated "
               "approximation).")
    handoff = st.session_state.get("epsilon_handoff")
    left, middle, right = st.columns(3)
    epsilon = left.number_input("ε", min_value=0.0001, max_value=100.0, format="%.4f", key="risk_epsilon",
                                value=min(max(float(handoff["epsilon"]), 0.0001), 100.0) if handoff else 1.0,
                                help="Defaults to the ε handed on by “Use this ε”, else 1.")
    if st.session_state.get("risk_definition") not in RISK_NOISE:
        st.session_state.risk_definition = privacy_definition()
    definition = middle.radio("Noise", list(RISK_NOISE), format_func=RISK_NOISE.get, key="risk_definition",
                              help="Follows the sidebar's privacy definition; switch to compare.")
    delta = privacy_delta()
    if definition == "pure":
        right.caption("Laplace noise of scale b = Δ/ε; no δ.")
    else:
        right.caption(f"δ = {delta:g} (sidebar). " + (
            "σ: the least σ of the analytic Gaussian (Balle & Wang 2018) at (ε, δ); the Release page's "
            "gaussian-* mechanisms calibrate on the discrete Gaussian's curve too (σ about 0.3 % larger)."
            if definition == "approx" else
            f"σ = Δ/√(2ρ) with ρ = {zcdp_rho(epsilon, delta):.4g}, the ρ whose CKS conversion gives (ε, δ)."))
    st.subheader("Where a release will fall")
    kind, scale, sensitivity = _release_dots(definition, epsilon, delta)
    st.subheader("Disclosure risk for one person")
    _disclosure(definition, epsilon, delta, scale, sensitivity)
    st.subheader("Inference for a statistic from a sample")
    _sample_inference(definition, epsilon, delta)


def _release_dots(definition: str, epsilon: float, delta: float) -> tuple[str, float, float]:
    hist = tuning_histogram()
    left, middle, right = st.columns(3)
    source = left.radio("Value", ["A bin of this dataset", "A value you type"], key="risk_source")
    if source.startswith("A bin"):
        counts = np.asarray(hist.counts, dtype=float).ravel()
        index = int(middle.number_input(f"Bin (0 … {counts.size - 1:,})", 0, counts.size - 1,
                                        int(np.argmax(counts)), key="risk_bin",
                                        help="Flat index; the default is the largest bin."))
        cell = np.unravel_index(index, hist.domain.sizes)
        label = " × ".join(hist.labels[a][i] if a < len(hist.labels) else str(i) for a, i in enumerate(cell))
        true, sensitivity, shown = float(counts[index]), 1.0, tuning_values()
        middle.caption(f"Bin **{label}**: {shown.value} {true:,.0f} (sensitivity 1: one person changes it by 1)"
                       + ("." if shown.private else f"; {shown.note}."))
    else:
        shown = SOURCES[TRUE]  # a value typed in stands for the true value of some query
        true = float(middle.number_input("True value", value=100.0, key="risk_true"))
        sensitivity = float(middle.number_input("Sensitivity Δ", min_value=1e-6, value=1.0, key="risk_sensitivity",
                                                help="How much one person can change the value (L1 for Laplace, "
                                                     "L2 for Gaussian; both 1 for a count)."))
    count = right.radio("Dots", [20, 50], horizontal=True, key="risk_dots",
                        help="Each dot is one equally likely 1/20 (or 1/50) share of the releases: an exact "
                             "quantile of the release's distribution, not a simulation.")
    kind, scale = risk.noise_for(definition, epsilon, delta=delta, sensitivity=sensitivity)
    dots = risk.quantile_dots(kind, scale, count, center=true)
    levels = risk.quantile_levels(count)
    half90, half50 = (risk.release_interval(kind, scale, coverage=c) for c in (0.9, 0.5))
    columns = math.ceil(2 * math.sqrt(count))
    x, height = risk.stack_dots(dots, bin_width=(dots[-1] - dots[0]) / columns, center=true)
    fig = go.Figure()
    fig.add_vrect(x0=true - half90, x1=true + half90, fillcolor=PALETTE[0], opacity=0.08, line_width=0)
    fig.add_trace(go.Scatter(x=x, y=height, mode="markers", name=f"one dot = 1/{count} of the releases",
                             marker={"size": 16 if count == 20 else 10, "color": PALETTE[0]},
                             customdata=np.column_stack([levels, dots]),
                             hovertemplate="quantile %{customdata[0]:.3f}: %{customdata[1]:.4g}<extra></extra>"))
    fig.add_vline(x=true, line={"color": TRUE_COLOUR, "width": 2},
                  annotation_text=f"{shown.value} {true:g}", annotation_position="top")
    fig.update_layout(height=260 if count == 20 else 320, xaxis_title="released value",
                      yaxis={"visible": False, "range": [0, height.max() + 1]}, showlegend=True,
                      margin={"l": 20, "r": 10, "t": 40, "b": 40}, legend={"orientation": "h", "y": -0.35})
    st.plotly_chart(fig, key="risk_dots_chart")
    inside = int(np.sum(np.abs(dots - true) <= half90))
    noise = f"Laplace, b = {scale:.4g}" if kind == "laplace" else f"Gaussian, σ = {scale:.4g}"
    st.markdown(f"**9 out of 10 releases fall within ±{half90:.3g}** of the {shown.value} {true:g} "
                f"(between {true - half90:.4g} and {true + half90:.4g}; {inside} of the {count} dots); half of "
                f"them within ±{half50:.3g}. Noise: {noise}, before any rounding or clipping at 0.")
    _csv_button("Dots (CSV)", pd.DataFrame({
        "dot": np.arange(1, count + 1), "quantile_level": levels, "released_value": dots, "offset": dots - true,
        shown.column: true, "noise": kind, "scale": scale, "sensitivity": sensitivity,
        "half_width_90": half90, **_privacy_columns(definition, epsilon, delta)}), "dplens-release-dots.csv",
        "risk_dots_csv")
    return kind, scale, sensitivity


def _disclosure(definition: str, epsilon: float, delta: float, scale: float, sensitivity: float) -> None:
    left, right = st.columns([1, 2])
    prior = float(left.number_input("Attacker's prior p (that one person is in the data)", 0.0001, 0.9999, 0.01,
                                    format="%.4f", key="risk_prior"))
    result = risk.disclosure_risk(definition, epsilon, prior, scale=scale, sensitivity=sensitivity)
    left.metric("Largest posterior", f"{result.posterior:.2%}",
                f"{(result.posterior - prior) * 100:+.2f} points over the prior", delta_color="inverse")
    if definition == "pure":
        right.markdown(f"After one release at ε = {epsilon:.4g}, an attacker who believed with probability "
                       f"{prior:.2%} that a given person is in the data can be at most **{result.posterior:.2%}** "
                       "sure, whatever the release shows: posterior ≤ e^ε p / (1 − p + e^ε p).")
    else:
        right.markdown(f"(ε, δ) reading: **posterior ≤ e^ε p/(1−p+e^ε p) = {result.posterior:.2%} except with "
                       f"probability δ = {result.delta:.3g}** (δ from the privacy profile at ε = {epsilon:.4g}). "
                       f"Exactly, for this Gaussian noise the chance that one release pushes the posterior above "
                       f"that bound is **{result.failure_probability:.3g}**: the profile's δ is not a tail "
                       "probability (δ(ε) = P[L > ε] − e^ε·P′[L > ε]), so the bad event is more likely than δ.")
    top = max(10.0, 2 * epsilon)
    epsilons = np.union1d(np.geomspace(0.01, top, 120), [epsilon])
    priors = sorted(set(RISK_PRIORS) | {prior})
    curves = {f"prior {p:.3g}": risk.posterior_bound(epsilons, p) for p in priors}
    fig = line_figure(epsilons, curves, x_title=EPSILON_TITLE, y_title="largest posterior", log_x=True)
    fig.add_vline(x=epsilon, line={"color": TRUE_COLOUR, "dash": "dash"})
    fig.add_scatter(x=[epsilon] * len(priors), y=[float(risk.posterior_bound(epsilon, p)) for p in priors],
                    mode="markers", marker={"size": 11, "symbol": "star", "color": TRUE_COLOUR},
                    name=f"chosen ε = {epsilon:.4g}")
    st.plotly_chart(fig, key="risk_posterior_chart")
    kind = "laplace" if definition == "pure" else "gaussian"
    profile = risk.privacy_profile(definition, epsilons, scale=scale, sensitivity=sensitivity)
    tail = risk.privacy_loss_tail(kind, epsilons, scale=scale, sensitivity=sensitivity)
    if definition != "pure":
        profile_name = "δ(ε), exact Gaussian profile" if definition == "approx" else "δ(ε), CKS conversion of ρ"
        fig = line_figure(epsilons, {profile_name: np.maximum(profile, 1e-300),
                                     "P[posterior above the bound at ε] = P[L > ε]": np.maximum(tail, 1e-300)},
                          x_title=EPSILON_TITLE, y_title="probability", log_x=True, log_y=True)
        fig.add_vline(x=epsilon, line={"color": TRUE_COLOUR, "dash": "dash"})
        fig.update_yaxes(range=[-12, 0])
        st.plotly_chart(fig, key="risk_profile_chart")
        st.caption("Each ε on the x-axis is a valid reading of the same noise: the posterior bound at that ε holds "
                   "except with probability P[L > ε] (the upper curve); δ(ε), the (ε, δ)-DP guarantee at that ε, "
                   "is the lower curve.")
    else:
        st.caption(f"Below the chosen ε the curve is not guaranteed: Laplace noise's privacy loss reaches "
                   f"ε = {sensitivity / scale:.4g} and never exceeds it.")
    _csv_button("Posterior bounds (CSV)", pd.DataFrame({
        "epsilon_axis": epsilons, **{f"posterior_prior_{p:g}": c for p, c in zip(priors, curves.values(), strict=True)},
        "profile_delta": profile, "probability_posterior_exceeds": tail, "noise": kind, "scale": scale,
        "sensitivity": sensitivity, **_privacy_columns(definition, epsilon, delta)}),
        "dplens-posterior-bounds.csv", "risk_posterior_csv")


def _sample_inference(definition: str, epsilon: float, delta: float) -> None:
    statistic = st.radio("Statistic", RISK_STATISTICS, horizontal=True, key="risk_statistic")
    kind, unit_scale = risk.noise_for(definition, epsilon, delta=delta)
    cols = st.columns(4)
    records = int(cols[0].number_input("Records n", 1, 10**9, 1000, key="risk_records",
                                       help="Treated as public (known); only the count or sum is noisy."))
    try:
        if statistic == RISK_STATISTICS[0]:
            count = float(cols[1].number_input("Count k", 0.0, None, 300.0, key="risk_count"))
            if count > records:
                raise ValueError(f"count k must be at most the records n = {records:,}, got {count:g}")
            interval = risk.proportion_interval(count, records, kind=kind, scale=unit_scale)
            unit, how = "proportion", "the count k (sensitivity 1) is released with noise; p̂ = k̃/n"
        else:
            lower = float(cols[1].number_input("L (lower bound)", value=0.0, key="risk_lower"))
            upper = float(cols[1].number_input("U (upper bound)", value=10.0, key="risk_upper"))
            mean = float(cols[2].number_input("Mean", value=5.0, key="risk_mean"))
            sd = float(cols[3].number_input("Standard deviation of the values", 0.0, value=2.0, key="risk_sd",
                                            help="Your guess; at most (U − L)/2."))
            interval = risk.mean_interval(mean, sd, records, lower=lower, upper=upper, kind=kind,
                                          unit_scale=unit_scale)
            unit, how = "mean", (f"the sum of values clamped to [L, U] minus the midpoint (sensitivity "
                                 f"{risk.mean_sensitivity(lower, upper):g}) is released with noise")
    except ValueError as err:
        st.error(str(err))
        return
    rows = pd.DataFrame({
        "interval": ["with DP noise (sampling + noise)", "without DP (sampling only)"],
        "estimate": [float(interval.estimate)] * 2, "low": [float(interval.low), float(interval.nonprivate_low)],
        "high": [float(interval.high), float(interval.nonprivate_high)],
        "±": [float(interval.half_width), float(interval.nonprivate_half_width)],
        "sampling sd": [float(interval.sampling_sd)] * 2, "noise sd": [interval.noise_sd, 0.0]})
    st.dataframe(rows, hide_index=True, key="risk_interval_table",
                 column_config={c: st.column_config.NumberColumn(format="%.4g") for c in rows.columns[1:]})
    fig = go.Figure()
    for i, row in rows.iterrows():
        fig.add_trace(go.Scatter(x=[row["low"], row["high"]], y=[row["interval"]] * 2, mode="lines+markers",
                                 line={"width": 6, "color": PALETTE[i]}, name=row["interval"]))
    fig.add_vline(x=float(interval.estimate), line={"color": TRUE_COLOUR, "dash": "dot"})
    fig.update_layout(height=200, xaxis_title=f"95 % interval for the {unit}", showlegend=False,
                      margin={"l": 20, "r": 10, "t": 20, "b": 40})
    st.plotly_chart(fig, key="risk_interval_chart")
    st.markdown(f"At ε = {epsilon:.4g}, **{interval.dominant()}**.")
    st.caption(f"Approximation: {how}; sampling error and noise are added as independent variances and the "
               "interval uses the normal quantile (for Laplace noise this is approximate in the tails, and the "
               "proportion's sampling error is Wald's, which needs n·p̂ and n·(1 − p̂) not small).")
    _csv_button("Intervals (CSV)", rows.assign(statistic=unit, records=records, noise=kind, noise_scale_unit=unit_scale,
                                               confidence=0.95, **_privacy_columns(definition, epsilon, delta)),
                "dplens-sample-intervals.csv", "risk_interval_csv")
