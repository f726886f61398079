"""The Data page's first screen: the start line and the dataset's chart, said for what the dataset is.

A loaded export (``released_data``) is released values, not private data: it has no true counts to show, a noisy
preview of it would be noise on noise, and it has no budget (``datasets.ALREADY_PRIVATE``).
"""

from __future__ import annotations

import streamlit as st

from dplens.core.data.datasets import record_columns
from dplens.core.data.domain import Histogram
from dplens.ui.chart_controls import histogram_view_controls
from dplens.ui.charts import MAX_BARS, histogram_figure
from dplens.ui.datasets import ALREADY_PRIVATE, released_data
from dplens.ui.guard import plain
from dplens.ui.sweeps import preview_release
from dplens.ui.value_sources import dataset_source

PREVIEW_EPSILONS = [0.01, 0.05, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0]


def start_line(hist: Histogram) -> str:
    """The Data page's "Start here" line, naming the chart's values by their source."""
    name = plain(hist.name)
    if released_data() is not None:
        chart = "the heatmap" if len(hist.domain.shape) == 2 else "grey bars"
        return (f"**Start here:** {chart}: the {dataset_source().values} of **{name}**. {ALREADY_PRIVATE} "
                "Choose a workload, then Compare or Release (re-releasing from it spends no budget).")
    shown = (f"left heatmap: the {dataset_source().values} of **{name}** (colour: count per cell); right heatmap: "
             "what a DP release at the chosen ε would publish" if len(hist.domain.shape) == 2 else
             f"grey bars: the {dataset_source().values} of **{name}**; coloured line: what a DP release at the "
             "chosen ε would publish")
    return (f"**Start here:** {shown}. Pick a dataset in the sidebar or upload yours, then "
            "Workloads → Compare → Choose epsilon → Release.")


def dataset_chart(hist: Histogram) -> None:
    """The dataset's chart: with a noisy preview at a chosen ε for private data; the values alone for an export."""
    source = dataset_source()
    if released_data() is not None:
        view = histogram_view_controls(hist, key="data_view")
        figure = histogram_figure(hist, source=source, **view)
        st.plotly_chart(figure.update_layout(height=280) if len(hist.domain.shape) == 1 else figure, key="data_chart")
    else:
        left, right = st.columns([2, 3])
        epsilon = left.select_slider("Epsilon of the noisy preview", PREVIEW_EPSILONS, value=1.0, key="data_epsilon",
                                     help="Identity mechanism: Laplace(1/ε) noise on every bin. A preview only: "
                                          "nothing is charged or exported.")
        with right:
            view = histogram_view_controls(hist, key="data_view")
        preview = preview_release(epsilon, hist)
        label = f"noisy release (identity, ε={epsilon:g})"
        if len(hist.domain.shape) == 2:
            left, right = st.columns(2)
            left.plotly_chart(histogram_figure(hist, source=source, **view), key="data_chart")
            right.plotly_chart(histogram_figure(hist, preview, label, "identity", source=source, **view),
                               key="data_preview")
        else:
            figure = histogram_figure(hist, preview, label, "identity", source=source, **view)
            st.plotly_chart(figure.update_layout(height=280), key="data_chart")  # on the first screen
    if hist.domain.size > MAX_BARS and len(hist.domain.shape) == 1:
        st.caption(f"{hist.domain.size:,} bins are summed into at most {MAX_BARS:,} bars for display only; "
                   "every computation uses all bins.")


def record_column_picker(upload) -> None:
    """The column of a raw-records upload to bin: a choice among the file's header once a file is chosen."""
    try:
        columns = record_columns(upload.getvalue()) if upload is not None else []
    except ValueError as err:
        st.caption(f"Cannot read the file's columns: {err}")
        columns = []
    if not columns:
        st.text_input("Column to bin", key="data_column", help="Column name in the CSV header (choose a file to "
                      "pick from its columns).")
        return
    if st.session_state.get("data_column") not in columns:
        st.session_state.data_column = columns[0]
    st.selectbox("Column to bin", columns, key="data_column", help="One of the file's columns (its header).")
