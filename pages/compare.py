"""Compare page: mechanisms × epsilon grid × trials → frontier, inspect a point, regret, per-bin error, runtime."""

import time

import numpy as np
import streamlit as st

from dplens import ui
from dplens.core.analysis.cost import affordable_trials
from dplens.core.analysis.experiment import DEFAULT_COMPARE_MECHANISMS as DEFAULT_MECHANISMS
from dplens.core.analysis.metrics import METRIC_LABELS
from dplens.core.data.limits import MAX_ACTION_SECONDS, WARN_SECONDS
from dplens.core.mechanisms import MECHANISMS
from dplens.core.mechanisms.lrm import MAX_CELLS as LRM_MAX_CELLS
from dplens.core.mechanisms.matrix import MAX_CELLS as MM_OPT_MAX_CELLS
from dplens.core.registry import REGISTRY

ANALYTIC_PREVIEW_CELLS = 16_384  # above this, the pre-run analytic curves are drawn on request
REFERENCES = ("identity", "uniform")  # always in the sweep: DPBench's baselines for regret


ui.init_state()
st.title("Compare mechanisms")
ui.show_flash()
with ui.guard():
    ui.tuning_controls("compare")
    hist, workload = ui.tuning_histogram(), ui.workload()
    st.caption(f"Dataset **{hist.name}** ({hist.domain.size:,} cells, {hist.total:,.0f} records) · workload "
               f"`{ui.workload_name()}` ({workload.shape[0]:,} queries). Exploration only: nothing here spends budget.")
    if ui.definition() != "pure":
        st.info(f"**{ui.DEFINITION_LABELS[ui.definition()]}** at δ = {ui.delta():g}: every mechanism runs at matched "
                "privacy, and the x-axis is ε at that δ. Laplace mechanisms (pure ε-DP) run at "
                + ("ε (pure ε-DP implies (ε, δ))" if ui.definition() == "approx" else
                   "ε_L = √(2ρ), ρ = the zCDP whose CKS conversion is (ε, δ)")
                + "; Gaussian ones are calibrated to the same target.")
    # default trials: as many (≤ 20) as keep the default sweep's estimated runs (dplens.core.analysis.cost) within
    # 20 s here
    st.session_state.setdefault("compare_trials", affordable_trials(
        [MECHANISMS[m] for m in DEFAULT_MECHANISMS if m in MECHANISMS], workload, epsilons=10))
    with st.form("compare_form"):
        choices = ui.available()
        if st.session_state.get("compare_mechanisms") is not None:  # a definition switch may drop Gaussian ones
            st.session_state.compare_mechanisms = [m for m in st.session_state.compare_mechanisms if m in choices]
        default = [m for m in DEFAULT_MECHANISMS if m in choices]
        if ui.definition() != "pure":
            default += ["gaussian-hb", "gaussian-answers"]
        names = st.multiselect("Mechanisms", choices, default=default, key="compare_mechanisms",
                                 help="Every mechanism dplens offers; identity and uniform are always added "
                                      "as references. mm-opt optimises a strategy once per workload (seconds; "
                                      f"at most {MM_OPT_MAX_CELLS:,} cells), and so does lrm (cubic in n; "
                                      f"at most {LRM_MAX_CELLS:,} cells and about a minute of work); ugrid and agrid "
                                      "need 2-D data.")
        with st.expander("What these mechanisms do"):
            st.markdown("\n".join(f"- **{n}**: {REGISTRY[n].summary}" for n in names))
        left, right = st.columns(2)  # the mechanisms get the full width, so no chip is hidden
        metrics = right.multiselect("Metrics", list(METRIC_LABELS), default=["mae", "rmse"],
                                    format_func=METRIC_LABELS.__getitem__, key="compare_metrics",
                                    help="Per-query errors on the workload answers; KLD compares histograms.")
        lo, hi = left.select_slider("Epsilon range", [0.001, 0.01, 0.1, 1.0, 10.0, 100.0], value=(0.01, 10.0),
                                    key="compare_range", help="Log-spaced grid between these values.")
        points = right.slider("Epsilon points", 2, 20, 10, key="compare_points", help="Grid size.")
        trials = left.slider("Trials per point", 1, 50, key="compare_trials",
                             help="Independent noise draws; the band shows 2.5–97.5 % of single trials. The "
                                  "default keeps the default sweep near 30 s on this dataset.")
        run_on = right.selectbox("Run on", ui.scheduler_choices(), key="compare_scheduler",
                                 help="auto: this process when the runs are estimated under 6 s, else one worker "
                                      "process per core. "
                                      "A Dask cluster appears here when the server sets DPLENS_SCHEDULER. "
                                      "Results are identical on every choice.")
        submitted = st.form_submit_button("Run comparison", type="primary", key="compare_run")
    epsilons = tuple(float(f"{e:.4g}") for e in np.geomspace(lo, hi, points))
    names = list(names) + [m for m in REFERENCES if m not in names and m in MECHANISMS]
    args = (tuple(names), epsilons, int(trials), ui.chosen_metrics(metrics, hist))
    results = ui.cached_sweep(*args)
    estimate = ui.sweep_estimate([MECHANISMS[m] for m in names], workload, len(epsilons), int(trials), run_on)
    if results is None and estimate > WARN_SECONDS:
        st.warning(f"This sweep is estimated at about {estimate:.0f} s. It stops at {MAX_ACTION_SECONDS:.0f} s and "
                   "keeps the runs finished by then; fewer trials, epsilon points or mechanisms make it shorter.")
    if submitted and (results is None or results.attrs.get("stopped")):
        stop_column, bar_column = st.columns([1, 6])
        stop_slot = stop_column.empty()  # emptied when the sweep ends: no Stop button for a finished run
        stop_slot.button("Stop", key="compare_stop", help="Stop the sweep; the runs finished so far are kept.")
        bar = bar_column.progress(0.0, text="running…")

        shown_at = [0.0]

        def show_progress(done: int, total: int, name: str) -> None:
            # a few updates a second: each one is a message to the browser and a redraw there
            if time.monotonic() - shown_at[0] >= 0.25 or done == total:
                shown_at[0] = time.monotonic()
                bar.progress(done / total, text=f"{name}: {done:,}/{total:,} runs")

        results = ui.sweep(*args, progress=show_progress, scheduler=run_on)
        bar.empty()
        stop_slot.empty()
    if results is None:
        st.info("Choose mechanisms and press **Run comparison**. Identity and uniform are added as references. "
                "Meanwhile, the analytic expectation of the data-independent ones (no noise drawn):")
        # Large domains: the analytic errors take seconds, so they wait for a click (page opens stay fast).
        if hist.domain.size <= ANALYTIC_PREVIEW_CELLS or st.button("Draw the analytic curves",
                                                                   key="compare_analytic_draw",
                                                                   help="A few seconds on this many cells."):
            with st.spinner("computing the analytic error curves…"):
                preview = ui.analytic_figure(names, epsilons, hist.domain.shape)
            if preview is not None:
                st.plotly_chart(preview, key="compare_analytic")
        st.stop()
    if submitted and "computed" in results.attrs:
        reused = len(results) // max(1, len(set(results["metric"]))) - results.attrs["computed"]
        if reused > 0:
            st.caption(f"Ran {results.attrs['computed']:,} new runs; reused {reused:,} from earlier comparisons "
                       "(same data, workload, trials and seed).")
    if results.attrs.get("stopped"):
        reason = results.attrs.get("stop_reason") or "stopped"
        st.warning(f"Stopped early ({reason}): showing the runs finished so far. Press **Run comparison** to "
                   "complete it.")
    for name, message in results.attrs.get("left_out", {}).items():
        st.warning(f"{name} {message}")
    for name, message in results.attrs.get("errors", {}).items():
        st.warning(f"{name} skipped: {message}")
    if results.empty:
        st.stop()
    ui.show_compare_results(epsilons, hist, results, trials, workload)
