"""Compare page: mechanisms × epsilon grid × trials → error-vs-epsilon chart, table, CSV download."""

import numpy as np
import streamlit as st

import ui
from core.experiment import summarise
from core.mechanisms import MECHANISMS
from core.metrics import METRIC_LABELS

DEFAULT_MECHANISMS = ("identity", "hb", "privelet", "dawa", "mwem", "ahp", "uniform", "laplace-on-answers")

ui.init_state()
st.title("Compare mechanisms")
ui.show_flash()
with ui.guard():
    hist, workload = ui.histogram(), ui.workload()
    st.caption(f"Dataset **{hist.name}** ({hist.domain.size:,} cells) · workload `{ui.workload_spec()}` "
               f"({workload.shape[0]:,} queries). Exploration only: nothing here spends budget.")
    with st.form("compare_form"):
        left, right = st.columns(2)
        names = left.multiselect("Mechanisms", list(MECHANISMS),
                                 default=[m for m in DEFAULT_MECHANISMS if m in MECHANISMS],
                                 key="compare_mechanisms", help="Every mechanism in the registry.")
        metrics = right.multiselect("Metrics", list(METRIC_LABELS), default=["mae", "rmse"],
                                    format_func=METRIC_LABELS.get, key="compare_metrics",
                                    help="MAE/RMSE per query; scaled = MAE / total (DPBench).")
        lo, hi = left.select_slider("Epsilon range", [0.001, 0.01, 0.1, 1.0, 10.0, 100.0], value=(0.01, 10.0),
                                    key="compare_range", help="Log-spaced grid between these values.")
        points = right.slider("Epsilon points", 2, 20, 10, key="compare_points")
        trials = left.slider("Trials per point", 1, 50, 20, key="compare_trials",
                             help="Independent noise draws; the band shows 2.5–97.5 % of single trials.")
        submitted = st.form_submit_button("Run comparison", type="primary")
    epsilons = tuple(float(f"{e:.4g}") for e in np.geomspace(lo, hi, points))
    args = (tuple(names), epsilons, int(trials), tuple(metrics) or ("mae",))
    results = ui.cached_sweep(*args)
    if submitted and results is None:
        if not names:
            st.warning("Choose at least one mechanism.")
            st.stop()
        bar = st.progress(0.0, text="running…")
        results = ui.sweep(*args, progress=lambda done, total, name: bar.progress(
            done / total, text=f"{name}: {done}/{total} runs"))
        bar.empty()
    if results is None:
        st.info("Choose mechanisms and press **Run comparison**.")
        st.stop()
    for name, message in results.attrs.get("errors", {}).items():
        st.warning(f"{name} skipped: {message}")
    summary = summarise(results)
    metric = st.radio("Show", list(summary["metric"].unique()), horizontal=True, format_func=METRIC_LABELS.get,
                      key="compare_show")
    log_y = st.toggle("Log error axis", True, key="compare_logy")
    st.plotly_chart(ui.error_figure(summary, metric, log_y=log_y), key="compare_chart")
    st.caption("Lines: mean over trials; bands: 2.5–97.5 % of single trials; dotted: analytic expectation "
               "(data-independent mechanisms, MSE/RMSE).")
    table = summary[summary["metric"] == metric].drop(columns="metric")
    st.dataframe(table, hide_index=True, key="compare_table",
                 column_config={"seconds": st.column_config.NumberColumn("seconds/run", format="%.2e")})
    st.download_button("Download all results (CSV)", results.to_csv(index=False).encode(), "dplens-compare.csv",
                       "text/csv", key="compare_download")
