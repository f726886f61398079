"""The Compare page's sections; the page script calls them through ``ui``."""

from __future__ import annotations

import numpy as np
import streamlit as st

from dplens.core.analysis.experiment import regret, replay, summarise
from dplens.core.analysis.metrics import HISTOGRAM_METRICS, METRIC_LABELS, METRICS, check_metrics
from dplens.core.analysis.views import count_buckets
from dplens.core.mechanisms import MECHANISMS
from dplens.core.release.export import frame_to_csv
from dplens.core.release.recipe import recipe_script
from dplens.ui.analytic import sweep_axis
from dplens.ui.chart_controls import HistogramView, histogram_view_controls
from dplens.ui.charts import (
    ENVELOPE,
    error_figure,
    histogram_figure,
    mechanism_words,
    per_bin_figure,
    runtime_figure,
)
from dplens.ui.ledger import point_unit, point_words
from dplens.ui.privacy import session_axis
from dplens.ui.sweeps import per_bin
from dplens.ui.value_sources import tuning_values
from dplens.ui.workloads import workload_spec

PER_BIN_TRIALS = 5  # trials behind the per-bin error view


def chosen_metrics(metrics, hist) -> tuple[str, ...]:
    """The metrics to compute (only those chosen; none: MAE). One the histogram cannot give (scaled error or KL
    divergence on an all-zero histogram) stops the page with one line naming it and why, before any run."""
    try:
        return check_metrics(tuple(metrics) or ("mae",), total=hist.total)
    except ValueError as err:
        st.error(str(err))
        st.stop()
        raise  # st.stop() raises; this line only tells type checkers the function ends here


def pick_from_click(event, summary, metric: str, epsilons) -> None:
    """A click on the frontier selects (mechanism, epsilon) in the inspector below (once per new click)."""
    points = (event or {}).get("selection", {}).get("points", []) if event else []
    if not points or points[0] == st.session_state.get("compare_last_click"):
        return
    point = points[0]
    st.session_state.compare_last_click = point
    epsilon = min(epsilons, key=lambda e: abs(np.log(e) - np.log(float(point["x"]))))
    name = point.get("legendgroup")
    if name == ENVELOPE or name not in MECHANISMS:
        rows = summary[(summary["metric"] == metric) & (summary["epsilon"] == epsilon)]
        name = rows.loc[rows["mean"].idxmin(), "mechanism"]
    st.session_state.compare_pick_mechanism, st.session_state.compare_pick_epsilon = name, epsilon


def show_compare_results(epsilons, hist, results, trials, workload) -> None:
    """The results of a sweep: frontier, inspector, regret, per-bin error, runtime and the table."""
    summary = summarise(results)
    ran = list(summary["mechanism"].unique())
    frontier, regret_tab, per_bin_tab, runtime_tab, table_tab = st.tabs(
        ["Frontier", "Regret", "Per-bin error", "Runtime", "Table"])
    with frontier:
        metric = _frontier(summary, epsilons)
        _inspect_release(ran, epsilons, hist, trials, workload, metric)
    with regret_tab:
        table = regret(results, metric)
        st.dataframe(table, hide_index=True, key="compare_regret",
                     column_config={"regret": st.column_config.NumberColumn(format="%.2f")})
        st.caption(f"DPBench regret on {METRIC_LABELS[metric]}: each mechanism's mean error ÷ the best mean error at "
                   "that epsilon, averaged over the grid (1 = best everywhere). Identity and uniform are references.")
    with per_bin_tab:
        _per_bin_error(ran, epsilons, hist, trials)
    with runtime_tab:
        st.plotly_chart(runtime_figure(summary), key="compare_runtime")
        st.caption(f"Mean wall-clock seconds per run over the {len(results):,} measurements.")
        st.caption("Legend: " + mechanism_words(summary["mechanism"].unique()))
    with table_tab:
        st.dataframe(summary[summary["metric"] == metric].drop(columns="metric"), hide_index=True, key="compare_table",
                     column_config={"seconds": st.column_config.NumberColumn("seconds/run", format="%.2e"),
                                    **{c: st.column_config.NumberColumn(format="%.4g")
                                       for c in ("mean", "low", "high", "expected")}})
        measured = results.assign(errors_against=f"{tuning_values().values} ({hist.name})")
        st.download_button("Download all results (CSV)", frame_to_csv(measured), "dplens-compare.csv",
                           "text/csv", key="compare_download", help="One row per mechanism, epsilon, trial, metric; "
                           "errors_against says which values the errors were measured against.")


def _frontier(summary, epsilons) -> str:
    """The error-against-ε chart (a click picks the release to inspect); returns the metric shown."""
    left, middle, right = st.columns([3, 1, 1])
    metric = left.radio("Show", list(summary["metric"].unique()), horizontal=True, format_func=METRIC_LABELS.get,
                        key="compare_show", help="Which error metric to plot.")
    log_y = middle.toggle("Log error axis", True, key="compare_logy", help="Log scale for the error.")
    envelope = right.toggle("Lower envelope", True, key="compare_envelope",
                            help="The best mean error at each epsilon over the mechanisms shown (DPComp).")
    x_title, labels, ticks = sweep_axis(epsilons)  # the sweep runs at ε (at δ); people read the definition's unit
    event = st.plotly_chart(error_figure(summary, metric, log_y=log_y, envelope=envelope, x_title=x_title,
                                         point_labels=labels, tick_labels=ticks),
                            key="compare_chart",
                            on_select="rerun", selection_mode="points")
    st.caption("Lines: mean over trials; bands: 2.5–97.5 % of single trials; dotted: analytic expectation "
               "(data-independent mechanisms, MSE/RMSE). Click a point to inspect that release below.")
    st.caption("Legend: " + mechanism_words(summary["mechanism"].unique()))
    pick_from_click(event, summary, metric, epsilons)
    return metric


def _inspect_release(ran: list[str], epsilons, hist, trials, workload, metric: str) -> None:
    """One release of the sweep reproduced from its noise stream: its error, a recipe and its histogram."""
    if st.session_state.get("compare_pick_mechanism") not in ran:
        st.session_state.compare_pick_mechanism = ran[0]
    if st.session_state.get("compare_pick_epsilon") not in epsilons:
        st.session_state.compare_pick_epsilon = epsilons[len(epsilons) // 2]
    st.subheader("Inspect one release")
    left, middle, right = st.columns(3)
    pick = left.selectbox("Mechanism", ran, key="compare_pick_mechanism", help="Or click a point above.")
    pick_epsilon = middle.selectbox(point_unit(), epsilons, key="compare_pick_epsilon", format_func=point_words,
                                    help="Or click a point above.")
    trial = int(right.number_input("Trial", 0, int(trials) - 1, 0, key="compare_pick_trial",
                                   help="Which of the sweep's trials to reproduce (same noise stream)."))
    release = replay(hist, workload, pick, pick_epsilon, trial, seed=int(st.session_state.seed), axis=session_axis())
    if metric in HISTOGRAM_METRICS:
        value = np.nan if release.estimate is None else METRICS[metric](hist.vector, release.estimate,
                                                                          total=hist.total)
    else:
        value = METRICS[metric](workload.matvec(hist.vector), release.answers, total=hist.total)
    st.caption(f"{pick} at {point_words(pick_epsilon)}, trial {trial}: {METRIC_LABELS[metric]} = {value:,.4g} "
               "(reproduced exactly from the sweep's noise stream; privacy loss "
               f"{'ρ' if release.loss_unit == 'rho' else 'ε'} = {release.privacy_loss:.4g}).")
    try:
        st.download_button("Recipe for this point (Python script)", recipe_script(
            mechanism=pick, settings={}, workload=workload_spec(), epsilon=float(pick_epsilon)),
            "dplens_recipe.py", "text/x-python", key="compare_recipe", on_click="ignore",
            help="Releases this mechanism at this ε on a file you name (secure noise; the data is not in it).")
    except ValueError as err:
        st.caption(f"No recipe for this point: {err}.")
    _release_histogram(hist, release, pick, pick_epsilon)


def _release_histogram(hist, release, pick: str, pick_epsilon: float) -> None:
    """The inspected release's histogram estimate: next to the truth as heatmaps in 2-D, over it in 1-D."""
    view: HistogramView = histogram_view_controls(hist, key="compare_view") if release.estimate is not None else {}
    if release.estimate is None:
        st.info(f"{pick} releases workload answers only, not a histogram.")
    elif len(hist.domain.shape) == 2:
        left, right = st.columns(2)
        left.plotly_chart(histogram_figure(hist, source=tuning_values(), **view), key="compare_true_heatmap")
        right.plotly_chart(histogram_figure(hist, release.estimate, f"{pick}, ε={pick_epsilon:g}",
                                            source=tuning_values(), **view), key="compare_noisy_heatmap")
    else:
        st.plotly_chart(histogram_figure(hist, release.estimate, f"{pick}, ε={pick_epsilon:g}", pick,
                                         source=tuning_values(), **view), key="compare_noisy")


def _per_bin_error(ran: list[str], epsilons, hist, trials) -> None:
    """Mean absolute error per bin, grouped by the bin's value (true, or a DP proxy's or public), on request."""
    source = tuning_values()
    per_epsilon = st.selectbox("Epsilon", epsilons, index=len(epsilons) // 2, format_func="{:g}".format,
                               key="compare_per_bin_epsilon", help="Per-bin errors at this epsilon.")
    clicked = st.button("Compute per-bin error", key="compare_per_bin", help=f"Replays {PER_BIN_TRIALS} "
                        f"trials per mechanism and averages |estimate − {source.value}| per bin.")
    with st.spinner(f"Replaying {PER_BIN_TRIALS} trials per mechanism for the per-bin error…"):
        errors = per_bin(tuple(ran), per_epsilon, min(PER_BIN_TRIALS, int(trials)), compute=clicked)
    if errors is not None:
        bucket, labels = count_buckets(hist.vector)
        sizes = np.bincount(bucket, minlength=len(labels))
        means = {name: np.bincount(bucket, weights=e, minlength=len(labels)) / np.maximum(sizes, 1)
                 for name, e in errors.items()}
        st.plotly_chart(per_bin_figure(labels, means, sizes, source=source), key="compare_per_bin_chart")
        st.caption(f"Mean absolute error of the histogram estimate per bin, grouped by the bin's {source.value}: "
                   "the small bins (1–9) are where relative error explodes. Mechanisms without a histogram "
                   "estimate are left out.")
        st.caption("Legend: " + mechanism_words(list(means)))
