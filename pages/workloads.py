"""Workloads page: build from the registry, compose a stack, upload a query matrix or draw a range; inspect W."""


import streamlit as st

from dplens import ui
from dplens.core.analysis.views import row_overview
from dplens.core.queries.workloads import (
    WORKLOAD_PARAMETERS,
    WORKLOADS,
    l1_sensitivity,
    l2_sensitivity,
    parse_workload,
    squared_frobenius,
)

ui.init_state()
st.title("Workloads")
ui.show_flash()
with ui.guard():
    hist = ui.histogram()
    n, shape = hist.domain.size, hist.domain.shape
    st.caption(f"The queries to answer on **{ui.plain(hist.name)}** ({n:,} cells). The workload chosen here is the one "
               "Compare and Release use.")
    build, upload, draw = st.tabs(["Build from a standard workload", "Upload a query matrix", "Draw a range"])
    with build:
        names = [k for k, (_, builder) in WORKLOADS.items() if builder is not None]
        current = ui.workload_spec().partition(":")[0]
        name = st.selectbox("Workload", names, index=names.index(current) if current in names else 0,
                            format_func=lambda k: f"{k} — {WORKLOADS[k][0]}", key="workloads_name",
                            help="Every workload dplens can generate for data of this shape.")
        params = {}
        keys = sorted(WORKLOAD_PARAMETERS.get(name, ()))
        for column, key in zip(st.columns(max(1, len(keys))), keys, strict=False):
            value = column.text_input(key, key=f"workloads_param_{name}_{key}", placeholder="default",
                                      help=f"Parameter {key!r} of {name}; empty = the default in its description.")
            if value.strip():
                params[key] = value.strip()
        spec = name + (":" + ",".join(f"{k}={v}" for k, v in params.items()) if params else "")
        left, right = st.columns(2)
        left.button("Use this workload", type="primary", key="workloads_use", on_click=ui.guarded(ui.use_spec),
                    args=(spec,), help=f"Select `{spec}` for every page.")
        right.button("Add to stack", key="workloads_add", on_click=ui.guarded(ui.add_part),
                     args=(spec, lambda: parse_workload(spec, shape), spec), help="Compose several workloads into one.")
    with upload:
        st.file_uploader("Query matrix (CSV: one row per query, one number per cell)", type=["csv", "txt"],
                         key="workloads_upload", help=f"Each row needs {n:,} numbers; an optional header row.")
        left, right = st.columns(2)
        left.button("Use this matrix", key="workloads_use_upload", help="Select the uploaded queries.",
                    on_click=ui.guarded(ui.flash),
                    args=(lambda: ui.set_workload(ui.uploaded_matrix(), "uploaded matrix"),))
        right.button("Add matrix to stack", key="workloads_add_upload", help="Compose it with other workloads.",
                     on_click=ui.guarded(ui.add_part), args=("uploaded matrix", ui.uploaded_matrix))
    with draw:
        if len(shape) == 1:
            figure = ui.histogram_figure(hist, source=ui.dataset_source())
            figure.update_layout(dragmode="select")
            st.caption("Drag across the bars (box select) to choose a range of cells, or use the slider.")
            event = st.plotly_chart(figure, key="workloads_draw", on_select="rerun", selection_mode="box")
            drawn = ui.box_to_range(event, n)
            if drawn and drawn != st.session_state.get("workloads_last_box"):
                st.session_state.workloads_last_box = st.session_state.workloads_range = drawn
            ui.range_slider("Range of cells", "workloads_range", n, "Drag on the chart above, or set the range here.",
                            labels=hist.bin_labels())
        else:
            st.caption("Drag a rectangle on the heatmap (box select) to choose rows and columns, or use the sliders.")
            event = st.plotly_chart(ui.histogram_figure(hist, source=ui.dataset_source(), selectable=True),
                                    key="workloads_draw_2d", on_select="rerun", selection_mode="box")
            boxes = event.get("selection", {}).get("box", []) if event else []
            n_rows, n_cols = shape
            cells = ui.heatmap_box_cells(boxes[0], (n_rows, n_cols)) if boxes else None
            if cells and cells != st.session_state.get("workloads_last_box"):
                st.session_state.workloads_last_box = cells
                st.session_state.workloads_rows, st.session_state.workloads_cols = cells
            ui.range_slider("Rows", "workloads_rows", shape[0], "First and last row of the rectangle.",
                            labels=hist.labels[0] if hist.labels else None)
            ui.range_slider("Columns", "workloads_cols", shape[1], "First and last column of the rectangle.",
                            labels=hist.labels[1] if len(hist.labels) > 1 else None)
        left, right = st.columns(2)
        left.button("Use this range", key="workloads_use_range", help="One range query.",
                    on_click=ui.guarded(ui.flash), args=(lambda: ui.set_workload(ui.drawn_range(), "drawn range"),))
        right.button("Add range to stack", key="workloads_add_range", on_click=ui.guarded(ui.add_part),
                     args=("drawn range", ui.drawn_range), help="Compose it with other workloads.")

    parts = st.session_state.workload_parts
    if parts:
        st.subheader("Stack being composed")
        st.dataframe({"part": [label for label, _, _ in parts], "queries": [w.shape[0] for _, w, _ in parts],
                      "cells": [w.shape[1] for _, w, _ in parts]}, hide_index=True, key="workloads_parts")
        left, right = st.columns(2)
        left.button("Use the stack", type="primary", key="workloads_use_stack", on_click=ui.guarded(ui.use_stack),
                    help="Select the union of these workloads (rows stacked).")
        right.button("Clear the stack", key="workloads_clear", on_click=parts.clear, help="Start a new stack.")

    w = ui.workload()
    m = w.shape[0]
    st.subheader("Current workload")
    st.markdown(f"`{ui.workload_name()}` — {w.describe()}")
    cols = st.columns([1, 1, 1, 1])
    cols[0].metric("Queries × cells", f"{m:,} × {w.shape[1]:,}", help="m rows of W by n cells.")
    cols[1].metric("L1 sensitivity", ui.number(l1_sensitivity(w)),
                   help="Δ₁ = largest column L1 norm: how much one record can move all answers together.")
    cols[1].metric("L2 sensitivity", ui.number(l2_sensitivity(w)),
                   help="Δ₂ = largest column L2 norm: what Gaussian noise on the answers is calibrated to "
                        "(Δ₂ ≤ Δ₁; Gaussian noise wins when Δ₂ ≪ Δ₁).")
    cols[2].metric("Sum of squared weights", ui.number(squared_frobenius(w)),
                   help="‖W‖_F², the squared Frobenius norm of the query matrix: adding Laplace noise to every cell "
                        "gives a mean squared error per query of 2‖W‖_F²/(m ε²).")
    cols[3].button("Reset to the default", key="workloads_reset", help="Back to the dataset's default workload.",
                   on_click=lambda: st.session_state.update(workload_spec=None))
    overview = row_overview(w, hist.vector, ui.SHOWN_ROWS, ui.SHOWN_COLUMNS)
    index, group = overview["index"], overview["group"]
    st.plotly_chart(ui.workload_figure(index, overview["rows"], group), key="workloads_heatmap")
    st.caption(f"Showing {index.size:,} of {m:,} rows of W" + (" (evenly spaced)" if index.size < m else "")
               + (f"; cells averaged in groups of {group:,}" if group > 1 else "") + ".")
    st.markdown("**True answers** (curator view: these are the exact, unprotected answers)")
    st.dataframe({"query": index, "cells used": overview["cells"], "first cell": overview["first"],
                  "last cell": overview["last"], "true answer": overview["answer"]}, hide_index=True,
                 key="workloads_answers", column_config={"true answer": st.column_config.NumberColumn(format="%.6g")})
