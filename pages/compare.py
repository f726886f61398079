"""Compare page: mechanisms × epsilon grid × trials → frontier, inspect a point, regret, per-bin error, runtime."""

import numpy as np
import streamlit as st

import ui
from core.analysis.cost import affordable_trials, sweep_seconds
from core.analysis.experiment import regret, replay, summarise
from core.analysis.metrics import HISTOGRAM_METRICS, METRIC_LABELS, METRICS
from core.analysis.views import count_buckets
from core.data.limits import MAX_ACTION_SECONDS, WARN_SECONDS
from core.mechanisms import MECHANISMS
from core.mechanisms.lrm import MAX_CELLS as LRM_MAX_CELLS
from core.mechanisms.matrix import MAX_CELLS as MM_OPT_MAX_CELLS
from core.release.recipe import recipe_script

ANALYTIC_PREVIEW_CELLS = 16_384  # above this, the pre-run analytic curves are drawn on request
DEFAULT_MECHANISMS = ("identity", "hb", "privelet", "dawa", "mwem", "ahp", "uniform", "laplace-on-answers")
REFERENCES = ("identity", "uniform")  # always in the sweep: DPBench's baselines for regret
PER_BIN_TRIALS = 5


def _pick_from_click(event, summary, metric: str, epsilons) -> None:
    """A click on the frontier selects (mechanism, epsilon) in the inspector below (once per new click)."""
    points = (event or {}).get("selection", {}).get("points", []) if event else []
    if not points or points[0] == st.session_state.get("compare_last_click"):
        return
    point = points[0]
    st.session_state.compare_last_click = point
    epsilon = min(epsilons, key=lambda e: abs(np.log(e) - np.log(float(point["x"]))))
    name = point.get("legendgroup")
    if name == ui.ENVELOPE or name not in MECHANISMS:
        rows = summary[(summary["metric"] == metric) & (summary["epsilon"] == epsilon)]
        name = rows.loc[rows["mean"].idxmin(), "mechanism"]
    st.session_state.compare_pick_mechanism, st.session_state.compare_pick_epsilon = name, epsilon


ui.init_state()
st.title("Compare mechanisms")
ui.show_flash()
with ui.guard():
    hist, workload = ui.histogram(), ui.workload()
    st.caption(f"Dataset **{hist.name}** ({hist.domain.size:,} cells, {hist.total:,.0f} records) · workload "
               f"`{ui.workload_spec()}` ({workload.shape[0]:,} queries). Exploration only: nothing here spends budget.")
    if ui.definition() != "pure":
        st.info(f"**{ui.DEFINITION_LABELS[ui.definition()]}** at δ = {ui.delta():g}: every mechanism runs at matched "
                "privacy, and the x-axis is ε at that δ. Laplace mechanisms (pure ε-DP) run at "
                + ("ε (pure ε-DP implies (ε, δ))" if ui.definition() == "approx" else
                   "ε_L = √(2ρ), ρ = the zCDP whose CKS conversion is (ε, δ)")
                + "; Gaussian ones are calibrated to the same target.")
    # default trials: as many (≤ 20) as keep the default sweep's estimated runs (core.analysis.cost) within 20 s here
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
                                 help="Every mechanism in the registry; identity and uniform are always added "
                                      "as references. mm-opt optimises a strategy once per workload (seconds; "
                                      f"at most {MM_OPT_MAX_CELLS:,} cells), and so does lrm (cubic in n; "
                                      f"at most {LRM_MAX_CELLS:,} cells and about a minute of work); ugrid and agrid need 2-D data.")
        left, right = st.columns(2)  # the mechanisms get the full width, so no chip is hidden
        metrics = right.multiselect("Metrics", list(METRIC_LABELS), default=["mae", "rmse"],
                                    format_func=METRIC_LABELS.get, key="compare_metrics",
                                    help="Per-query errors on the workload answers; KLD compares histograms.")
        lo, hi = left.select_slider("Epsilon range", [0.001, 0.01, 0.1, 1.0, 10.0, 100.0], value=(0.01, 10.0),
                                    key="compare_range", help="Log-spaced grid between these values.")
        points = right.slider("Epsilon points", 2, 20, 10, key="compare_points", help="Grid size.")
        trials = left.slider("Trials per point", 1, 50, key="compare_trials",
                             help="Independent noise draws; the band shows 2.5–97.5 % of single trials. The "
                                  "default keeps the default sweep near 30 s on this dataset.")
        run_on = right.selectbox("Run on", ui.scheduler_choices(), key="compare_scheduler",
                                 help="auto: this process for small sweeps, else one worker process per core. "
                                      "A Dask cluster appears here when the server sets DPLENS_SCHEDULER. "
                                      "Results are identical on every choice.")
        submitted = st.form_submit_button("Run comparison", type="primary")
    epsilons = tuple(float(f"{e:.4g}") for e in np.geomspace(lo, hi, points))
    names = list(names) + [m for m in REFERENCES if m not in names and m in MECHANISMS]
    args = (tuple(names), epsilons, int(trials), tuple(metrics) or ("mae",))
    results = ui.cached_sweep(*args)
    estimate = sweep_seconds([MECHANISMS[m] for m in names], workload, len(epsilons), int(trials))
    if results is None and estimate > WARN_SECONDS:
        st.warning(f"This sweep is estimated at about {estimate:.0f} s. It stops at {MAX_ACTION_SECONDS:.0f} s and "
                   "keeps the runs finished by then; fewer trials, epsilon points or mechanisms make it shorter.")
    if submitted and (results is None or results.attrs.get("stopped")):
        stop_column, bar_column = st.columns([1, 6])
        stop_slot = stop_column.empty()  # emptied when the sweep ends: no Stop button for a finished run
        stop_slot.button("Stop", key="compare_stop", help="Stop the sweep; the runs finished so far are kept.")
        bar = bar_column.progress(0.0, text="running…")

        def show_progress(done: int, total: int, name: str) -> None:
            if done % max(1, total // 100) == 0 or done == total:  # ~100 updates, not one per run
                bar.progress(done / total, text=f"{name}: {done:,}/{total:,} runs")

        results = ui.sweep(*args, progress=show_progress, scheduler=run_on)
        bar.empty()
        stop_slot.empty()
    if results is None:
        st.info("Choose mechanisms and press **Run comparison**. Identity and uniform are added as references. "
                "Meanwhile, the analytic expectation of the data-independent ones (no noise drawn):")
        # Large domains: the analytic errors take seconds, so they wait for a click (page opens stay fast).
        if hist.domain.size <= ANALYTIC_PREVIEW_CELLS or st.button("Draw the analytic curves", key="compare_analytic_draw",
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
    summary = summarise(results)
    shown = list(summary["metric"].unique())

    frontier, regret_tab, per_bin_tab, runtime_tab, table_tab = st.tabs(
        ["Frontier", "Regret", "Per-bin error", "Runtime", "Table"])
    with frontier:
        left, middle, right = st.columns([3, 1, 1])
        metric = left.radio("Show", shown, horizontal=True, format_func=METRIC_LABELS.get, key="compare_show",
                            help="Which error metric to plot.")
        log_y = middle.toggle("Log error axis", True, key="compare_logy", help="Log scale for the error.")
        envelope = right.toggle("Lower envelope", True, key="compare_envelope",
                                help="The best mean error at each epsilon over the mechanisms shown (DPComp).")
        x_title = "epsilon" if ui.definition() == "pure" else f"epsilon at delta = {ui.delta():g} ({ui.definition()})"
        event = st.plotly_chart(ui.error_figure(summary, metric, log_y=log_y, envelope=envelope, x_title=x_title),
                                key="compare_chart",
                                on_select="rerun", selection_mode="points")
        st.caption("Lines: mean over trials; bands: 2.5–97.5 % of single trials; dotted: analytic expectation "
                   "(data-independent mechanisms, MSE/RMSE). Click a point to inspect that release below.")
        _pick_from_click(event, summary, metric, epsilons)
        ran = list(summary["mechanism"].unique())
        if st.session_state.get("compare_pick_mechanism") not in ran:
            st.session_state.compare_pick_mechanism = ran[0]
        if st.session_state.get("compare_pick_epsilon") not in epsilons:
            st.session_state.compare_pick_epsilon = epsilons[len(epsilons) // 2]
        st.subheader("Inspect one release")
        left, middle, right = st.columns(3)
        pick = left.selectbox("Mechanism", ran, key="compare_pick_mechanism", help="Or click a point above.")
        pick_epsilon = middle.selectbox("Epsilon", epsilons, key="compare_pick_epsilon", format_func="{:g}".format,
                                        help="Or click a point above.")
        trial = int(right.number_input("Trial", 0, int(trials) - 1, 0, key="compare_pick_trial",
                                       help="Which of the sweep's trials to reproduce (same noise stream)."))
        release = replay(hist, workload, ui.matched(pick), pick_epsilon, trial, seed=int(st.session_state.seed))
        if metric in HISTOGRAM_METRICS:
            value = np.nan if release.estimate is None else METRICS[metric](hist.vector, release.estimate,
                                                                              total=hist.total)
        else:
            value = METRICS[metric](workload.matvec(hist.vector), release.answers, total=hist.total)
        st.caption(f"{pick} at ε = {pick_epsilon:g}, trial {trial}: {METRIC_LABELS[metric]} = {value:,.4g} "
                   f"(reproduced exactly from the sweep's noise stream; privacy loss {release.privacy_loss:.4g}).")
        try:
            st.download_button("Recipe for this point (Python script)", recipe_script(
                mechanism=pick, settings={}, workload=ui.workload_spec(), epsilon=float(pick_epsilon)),
                "dplens_recipe.py", "text/x-python", key="compare_recipe", on_click="ignore",
                help="Releases this mechanism at this ε on a file you name (secure noise; the data is not in it).")
        except ValueError as err:
            st.caption(f"No recipe for this point: {err}.")
        view = ui.histogram_view_controls(hist, key="compare_view") if release.estimate is not None else {}
        if release.estimate is None:
            st.info(f"{pick} releases workload answers only, not a histogram.")
        elif len(hist.domain.shape) == 2:
            left, right = st.columns(2)
            left.plotly_chart(ui.histogram_figure(hist, **view), key="compare_true_heatmap")
            right.plotly_chart(ui.histogram_figure(hist, release.estimate, f"{pick}, ε={pick_epsilon:g}", **view),
                               key="compare_noisy_heatmap")
        else:
            st.plotly_chart(ui.histogram_figure(hist, release.estimate, f"{pick}, ε={pick_epsilon:g}", pick, **view),
                            key="compare_noisy")
    with regret_tab:
        table = regret(results, metric)
        st.dataframe(table, hide_index=True, key="compare_regret",
                     column_config={"regret": st.column_config.NumberColumn(format="%.2f")})
        st.caption(f"DPBench regret on {METRIC_LABELS[metric]}: each mechanism's mean error ÷ the best mean error at "
                   "that epsilon, averaged over the grid (1 = best everywhere). Identity and uniform are references.")
    with per_bin_tab:
        per_epsilon = st.selectbox("Epsilon", epsilons, index=len(epsilons) // 2, format_func="{:g}".format,
                                   key="compare_per_bin_epsilon", help="Per-bin errors at this epsilon.")
        clicked = st.button("Compute per-bin error", key="compare_per_bin", help=f"Replays {PER_BIN_TRIALS} "
                            "trials per mechanism and averages |estimate − true| per bin.")
        with st.spinner(f"Replaying {PER_BIN_TRIALS} trials per mechanism for the per-bin error…"):
            errors = ui.per_bin(tuple(ran), per_epsilon, min(PER_BIN_TRIALS, int(trials)), compute=clicked)
        if errors is not None:
            bucket, labels = count_buckets(hist.vector)
            sizes = np.bincount(bucket, minlength=len(labels))
            means = {name: np.bincount(bucket, weights=e, minlength=len(labels)) / np.maximum(sizes, 1)
                     for name, e in errors.items()}
            st.plotly_chart(ui.per_bin_figure(labels, means, sizes), key="compare_per_bin_chart")
            st.caption("Mean absolute error of the histogram estimate per bin, grouped by the bin's true count: the "
                       "small bins (1–9) are where relative error explodes. Mechanisms without a histogram "
                       "estimate are left out.")
    with runtime_tab:
        st.plotly_chart(ui.runtime_figure(summary), key="compare_runtime")
        st.caption(f"Mean wall-clock seconds per run over the {len(results):,} measurements.")
    with table_tab:
        st.dataframe(summary[summary["metric"] == metric].drop(columns="metric"), hide_index=True, key="compare_table",
                     column_config={"seconds": st.column_config.NumberColumn("seconds/run", format="%.2e"),
                                    **{c: st.column_config.NumberColumn(format="%.4g")
                                       for c in ("mean", "low", "high", "expected")}})
        st.download_button("Download all results (CSV)", results.to_csv(index=False).encode(), "dplens-compare.csv",
                           "text/csv", key="compare_download", help="One row per mechanism, epsilon, trial, metric.")
