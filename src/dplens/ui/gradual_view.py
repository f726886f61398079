"""The Gradual page's logic (callbacks, sections, figures); the page script calls it through ``ui``."""

from __future__ import annotations

import numpy as np
import streamlit as st

from dplens.core.release import gradual
from dplens.ui.charts import line_figure
from dplens.ui.datasets import histogram
from dplens.ui.handoff import apply_handoff, show_handoff
from dplens.ui.ledger import point_privacy, point_unit
from dplens.ui.state import release_rng, simulation_rng
from dplens.ui.workloads import workload as session_workload
from dplens.ui.workloads import workload_name

DEFAULT_SCHEDULE = "0.05, 0.1, 0.2, 0.5, 1"


def schedule() -> np.ndarray:
    """The typed schedule, in the ledger's unit (``point_unit``: ρ under zCDP, else ε)."""
    text = st.session_state.get("gradual_schedule", DEFAULT_SCHEDULE)
    return gradual.check_schedule([float(v) for v in text.split(",") if v.strip()])


def laplace_epsilons(points: np.ndarray) -> np.ndarray:
    """The Laplace ε of each scheduled step: the step itself in ε, or ε = √(2ρ) for a step in ρ (the Laplace
    mechanism at ε is ε²/2-zCDP, so a noise-reduction walk's ρ is that of its last step).

    Under zCDP the walk is scheduled in ρ and drawn at √(2ρ); elsewhere the values are the ε's themselves.
    """
    return np.sqrt(2 * points) if point_unit() == "ρ" else np.asarray(points, dtype=float)


def current_walk() -> dict:
    """The walk released so far on the current dataset in the ledger's unit (a new dataset or unit starts a new
    walk). ``points`` are the steps in that unit, ``epsilons`` the Laplace ε each was drawn at."""
    walk, unit = st.session_state.gradual_walk, point_unit()
    if walk is None or walk["dataset_key"] != st.session_state.dataset_key or walk.get("unit") != unit:
        walk = {"dataset_key": st.session_state.dataset_key, "unit": unit, "points": [], "epsilons": [],
                "values": []}
        st.session_state.gradual_walk = walk
    return walk


GRADUAL_SIMULATION = ("This walk is a simulation, for your eyes only: it uses seeded exploration noise, charges "
                      "nothing and is never exported. A real walk (Koufogiannis et al.), drawn backwards on the "
                      "secure path and charged only its last ε, is the **Real walk** tab (or `dplens gradual`).")


def gradual_simulation_note() -> str:
    """``GRADUAL_SIMULATION`` in the ledger's unit."""
    return GRADUAL_SIMULATION.replace("last ε", f"last {point_unit()}")


def _apply_gradual_handoff() -> dict | None:
    """``apply_handoff`` for this page; under zCDP the schedule it sets (in ε at δ) is rewritten in ρ, ending at
    the chosen point's ρ."""
    fresh = "gradual" in (st.session_state.get("epsilon_handoff") or {}).get("pending", ())
    handoff = apply_handoff("gradual")
    if fresh and handoff and point_unit() == "ρ":
        rho = float(getattr(point_privacy(handoff["epsilon"]), "rho", 0.0))
        st.session_state.gradual_schedule = ", ".join(f"{rho / 2 ** (4 - k):.4g}" for k in range(5))
    return handoff


def release_next() -> None:
    """Button callback: take one simulated online step (Koufogiannis et al.'s noise reduction); nothing is charged."""
    walk, planned, unit = current_walk(), schedule(), point_unit()
    step = len(walk["epsilons"])
    if step >= planned.size:
        st.session_state.flash_error = f"The schedule is exhausted: add a larger {unit} to release more."
        return
    previous = walk["points"][-1] if step else 0.0
    point = float(planned[step])
    if point <= previous:
        st.session_state.flash_error = (f"The next {unit} ({point:g}) must exceed the last released one "
                                        f"({previous:g}); edit the schedule.")
        return
    epsilon = float(laplace_epsilons(np.array([point]))[0])
    values = gradual.walk_step(histogram().vector, 1.0, walk["values"][-1] if step else None,
                               walk["epsilons"][-1] if step else None, epsilon, release_rng())
    walk["points"].append(point)
    walk["epsilons"].append(epsilon)
    walk["values"].append(values)


def walk_tab() -> None:
    """The simulated noise-reduction walk, scheduled and plotted in the ledger's unit (ρ under zCDP, drawn at the
    Laplace ε = √(2ρ)); one-shot comparisons run at the same Laplace ε."""
    hist, unit = histogram(), point_unit()
    show_handoff(_apply_gradual_handoff(), "gradual")
    st.session_state.setdefault("gradual_schedule", DEFAULT_SCHEDULE)  # via the session: a hand-off can set it
    st.text_input(f"{unit} schedule (strictly increasing, most private first)", key="gradual_schedule",
                  help="Laplace noise on each bin at each step's ε" + (", ε = √(2ρ)" if unit == "ρ" else "") + ".")
    try:
        planned = schedule()
    except ValueError as err:
        st.error(str(err))
        return
    walk = current_walk()
    released = np.array(walk["points"])
    step = released.size
    left, right = st.columns([3, 1])
    left.button(f"Simulate step {step + 1} ({unit} {planned[step]:.4g}; a release would charge "
                f"{planned[step] - (released[-1] if step else 0):.4g})"
                if step < planned.size else "Schedule exhausted", on_click=release_next, type="primary",
                disabled=step >= planned.size, key="gradual_release")
    right.button("Start a new walk", key="gradual_reset", disabled=not step,
                 on_click=lambda: st.session_state.update(gradual_walk=None),
                 help="A new walk is an independent simulation (a real one would be charged again).")
    nr, independent = gradual.cumulative_loss(planned)  # ρ composes by sums too: the same two lines in ρ
    cols = st.columns(3)
    cols[0].metric("Steps released", f"{step} of {planned.size}")
    cols[1].metric(f"A real walk's loss so far (largest {unit})", f"{unit} = {released[-1] if step else 0:.4g}")
    cols[2].metric(f"Independent releases would cost (Σ {unit})",
                   f"{unit} = {independent[step - 1] if step else 0:.4g}")
    fig = line_figure(planned, {f"noise reduction: {unit}_t": nr, f"independent releases: Σ {unit}": independent},
                      x_title=f"{unit} of the latest step", y_title=f"cumulative privacy loss ({unit})")
    st.plotly_chart(fig, key="gradual_loss")
    if not step:
        st.info("Press the button to simulate the first step. " + gradual_simulation_note())
        return
    largest = [int(i) for i in np.argsort(hist.vector)[-3:]]
    bins = st.multiselect("Bins to follow", sorted(set(range(min(hist.domain.size, 5000))) | set(largest)),
                          default=largest, key="gradual_bins", help="Flat bin index (row-major for 2-D).")
    st.caption(gradual_simulation_note())
    values = np.array(walk["values"])
    series = {f"bin {b} (true {hist.vector[b]:g})": values[:, b] for b in bins}
    st.plotly_chart(line_figure(released, series, x_title=unit, y_title="released value", shape="hv"),
                    key="gradual_walk_chart")
    st.caption("Flat segments: the per-bin coin kept the previous value (probability (ε_t/ε_{t+1})²"
               + (", with each step's Laplace ε = √(2ρ)" if unit == "ρ" else "") + ").")
    epsilons = np.array(walk["epsilons"])
    walk_rmse = np.sqrt(np.mean((values - hist.vector) ** 2, axis=1))
    simulated, one_shot = gradual.one_shot_comparison(hist.vector, epsilons, 5, simulation_rng(2))
    expected = "one-shot expected 1/√ρ" if unit == "ρ" else "one-shot expected √2/ε"  # √2/ε at ε = √(2ρ)
    st.plotly_chart(line_figure(released, {"this walk": walk_rmse, "walk, mean of 5 simulations": simulated,
                                           "one-shot release, mean of 5 simulations": one_shot,
                                           expected: np.sqrt(2) / epsilons},
                                x_title=unit, y_title="RMSE per bin", log_x=True, log_y=True),
                    key="gradual_error_chart")
    st.caption(f"Each step is exactly as accurate as a one-shot release at its {unit} (Koufogiannis et al.).")


def search_tab() -> None:
    hist, workload = histogram(), session_workload()
    st.caption(f"Stop at the first epsilon whose noisy workload error is below the target (Ligett et al.). "
               f"Workload `{workload_name()}`. A what-if on your data: nothing is published or charged.")
    with st.form("gradual_search_form"):
        cols = st.columns(4)
        metric = cols[0].selectbox("Error", ["rmse", "mae", "max_abs"], key="search_metric")
        target = cols[0].number_input("Target error α (counts)", 0.001, 1e9, 100.0, key="search_target")
        epsilon_min = cols[1].number_input("ε_min", 0.0001, 100.0, 0.01, format="%.4f", key="search_min")
        epsilon_max = cols[1].number_input("ε_max", 0.001, 1000.0, 10.0, key="search_max")
        steps = cols[2].slider("Grid steps T", 2, 100, 20, key="search_steps")
        gamma = cols[2].number_input("γ (failure probability)", 0.001, 0.5, 0.1, key="search_gamma")
        rule = cols[3].radio("Threshold rule", gradual.THRESHOLD_RULES, key="search_rule")
        submitted = st.form_submit_button("Run the search", type="primary")
    if submitted:
        try:
            st.session_state.gradual_search = (
                gradual.accuracy_first(hist.counts, workload, target, epsilon_max=epsilon_max,
                                       epsilon_min=epsilon_min, steps=steps, gamma=gamma, threshold=rule,
                                       metric=metric, rng=simulation_rng(30)),
                gradual.doubling_search(hist.counts, workload, target, epsilon_max=epsilon_max,
                                        epsilon_min=epsilon_min, gamma=gamma, metric=metric, rng=simulation_rng(31)),
                target)
        except ValueError as err:
            st.error(str(err))
            return
    if st.session_state.gradual_search is None:
        st.info("Set a target and press **Run the search**.")
        return
    result, doubling, target = st.session_state.gradual_search
    cols = st.columns(4)
    cols[0].metric("Stopped at", f"ε_t* = {result.epsilons[result.stopped_at]:.4g}" if result.succeeded
                   else "FAIL", help="On FAIL nothing is released (not even θ_T); the loss is ε_A.")
    cols[1].metric("Privacy loss where it stopped", f"{result.ex_post_loss:.4g}",
                   help=f"Ex-post loss ε_A + ε_t*: the stopping test (AboveThreshold) costs ε_A = "
                        f"{result.epsilon_above_threshold:.4g}, the release it stopped at ε_t* = "
                        f"{result.epsilon_noise_reduction:.4g}.")
    cols[2].metric("Worst-case loss (never stopping)", f"{result.ex_ante_cap:.4g}",
                   help="Ex-ante cap ε_A + ε_T: the loss if the search ran to its last, least private step.")
    cols[3].metric("Doubling baseline loss", f"{doubling.privacy_loss:.4g}" + ("" if doubling.stopped_at is not None
                                                                               else " (FAIL)"))
    fig = line_figure(result.epsilons, {"true error of θ_t (display only)": result.errors}, x_title="epsilon",
                      y_title=f"{metric} of the workload", log_x=True, log_y=True,
                      levels={"target α": target, "stopping threshold": result.threshold})
    if result.succeeded:
        fig.add_scatter(x=[result.epsilons[result.stopped_at]], y=[result.errors[result.stopped_at]], mode="markers",
                        marker={"size": 14, "symbol": "star"}, name="stopped here (θ_t* released)")
    st.plotly_chart(fig, key="search_chart")
    st.caption(f"Error sensitivity Δ_q = {result.query_sensitivity:.4g} (one record moves the {metric} of "
               "W(θ − x) by at most Δ₂(W)/√m for RMSE, Δ₁(W)/m for MAE, max‖We_j‖₂ for max). "
               f"AboveThreshold at ε_A = {result.epsilon_above_threshold:.4g}, threshold s = {result.threshold:.4g}; "
               "with probability ≥ 1 − γ a stop means error ≤ α.")
    theory = gradual.theory_epsilon(workload, target, metric)  # the line Ligett et al. compare against
    rows = {"method": ["accuracy first (noise reduction + AboveThreshold)", "doubling (independent)"],
            "release part": [result.epsilon_noise_reduction, doubling.release_loss],
            "testing part": [result.epsilon_above_threshold, doubling.test_loss],
            "total": [result.ex_post_loss, doubling.privacy_loss]}
    if theory is not None:
        rows = {k: [*v, value] for (k, v), value in zip(rows.items(), (
            "theory: one Laplace release at ε = √(2‖W‖²_F/m)/α (no search)", theory, 0.0, theory), strict=True)}
    st.dataframe(rows, hide_index=True, key="search_table")

