"""Workloads page: build from the registry, compose a stack, upload a query matrix or draw a range; inspect W."""

import math

import streamlit as st

import ui
from core.analysis.views import row_overview
from core.queries.workloads import (
    WORKLOAD_PARAMETERS,
    WORKLOADS,
    Kron,
    Ranges,
    Stack,
    explicit_from_csv,
    l1_sensitivity,
    l2_sensitivity,
    parse_workload,
    squared_frobenius,
)

SHOWN_ROWS = 100      # rows of W in the heatmap and the answers table
SHOWN_COLUMNS = 512   # heatmap columns (cells averaged in groups beyond this)


def _number(value: float) -> str:
    """Readable metric text: thousands separators for large values, 4 significant digits otherwise."""
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"


def _flash(action):
    """Run a callback action; a ValueError becomes the page's flash message instead of a traceback."""
    try:
        action()
    except ValueError as err:
        st.session_state.flash_error = str(err)


def _use_spec(spec: str) -> None:
    def act():
        parse_workload(spec, ui.histogram().domain.shape)  # validate before selecting
        st.session_state.workload_spec = spec
    _flash(act)


def _add_part(label: str, build, spec: str | None = None) -> None:
    """Append (label, workload, config recipe) to the stack being composed."""
    def act():
        w = build()
        st.session_state.workload_parts.append((label, w, ui.workload_recipe(w, spec=spec)))
    _flash(act)


def _use_stack() -> None:
    parts = st.session_state.workload_parts
    if not parts:
        st.session_state.flash_error = "the stack is empty: add workloads to it first"
        return
    _flash(lambda: ui.set_workload(Stack(tuple(w for _, w, _ in parts)), "stack of " + " + ".join(n for n, _, _ in parts),
                                   ui.stack_recipe([recipe for _, _, recipe in parts])))


def _uploaded_matrix():
    upload = st.session_state.get("workloads_upload")
    if upload is None:
        raise ValueError("choose a CSV file of query rows first")
    return explicit_from_csv(upload.getvalue(), n=ui.histogram().domain.size)


def _drawn_range():
    hist = ui.histogram()
    if len(hist.domain.shape) == 1:
        lo, hi = st.session_state.workloads_range
        return Ranges(hist.domain.size, [lo], [hi], label=f"range [{lo}, {hi}]")
    (r0, r1), (c0, c1) = st.session_state.workloads_rows, st.session_state.workloads_cols
    rows, cols = hist.domain.shape
    return Kron((Ranges(rows, [r0], [r1], label=f"rows [{r0}, {r1}]"), Ranges(cols, [c0], [c1], label=f"cols [{c0}, {c1}]")))


def _box_to_range(event, n: int) -> tuple[int, int] | None:
    """A box selection on the bar chart → the inclusive bin range it covers."""
    boxes = (event or {}).get("selection", {}).get("box", []) if event else []
    if not boxes:
        return None
    x0, x1 = sorted(boxes[0]["x"][:2])
    lo, hi = max(0, math.ceil(x0)), min(n - 1, math.floor(x1))
    return (lo, hi) if lo <= hi else None


def _range_slider(label: str, key: str, size: int, help: str) -> None:
    """A (first, last) slider over 0..size-1 whose state survives page switches and dataset changes."""
    lo, hi = st.session_state.get(key, (0, size - 1))
    if not 0 <= lo <= hi < size:
        lo, hi = 0, size - 1
    st.session_state[key] = (lo, hi)
    if size > 1:
        st.slider(label, 0, size - 1, key=key, help=help)


ui.init_state()
st.title("Workloads")
ui.show_flash()
with ui.guard():
    hist = ui.histogram()
    n, shape = hist.domain.size, hist.domain.shape
    st.caption(f"The queries to answer on **{hist.name}** ({n:,} cells). The workload chosen here is the one "
               "Compare and Release use.")
    build, upload, draw = st.tabs(["Build from the registry", "Upload a query matrix", "Draw a range"])
    with build:
        names = [k for k, (_, builder) in WORKLOADS.items() if builder is not None]
        current = ui.workload_spec().partition(":")[0]
        name = st.selectbox("Workload", names, index=names.index(current) if current in names else 0, format_func=lambda k: f"{k} — {WORKLOADS[k][0]}", key="workloads_name",
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
        left.button("Use this workload", type="primary", key="workloads_use", on_click=_use_spec, args=(spec,),
                    help=f"Select `{spec}` for every page.")
        right.button("Add to stack", key="workloads_add", on_click=_add_part,
                     args=(spec, lambda: parse_workload(spec, shape), spec), help="Compose several workloads into one.")
    with upload:
        st.file_uploader("Query matrix (CSV: one row per query, one number per cell)", type=["csv", "txt"],
                         key="workloads_upload", help=f"Each row needs {n:,} numbers; an optional header row.")
        left, right = st.columns(2)
        left.button("Use this matrix", key="workloads_use_upload", help="Select the uploaded queries.",
                    on_click=lambda: _flash(lambda: ui.set_workload(_uploaded_matrix(), "uploaded matrix")))
        right.button("Add matrix to stack", key="workloads_add_upload", help="Compose it with other workloads.",
                     on_click=_add_part, args=("uploaded matrix", _uploaded_matrix))
    with draw:
        if len(shape) == 1:
            figure = ui.histogram_figure(hist)
            figure.update_layout(dragmode="select")
            st.caption("Drag across the bars (box select) to choose a range of cells, or use the slider.")
            event = st.plotly_chart(figure, key="workloads_draw", on_select="rerun", selection_mode="box")
            drawn = _box_to_range(event, n)
            if drawn and drawn != st.session_state.get("workloads_last_box"):
                st.session_state.workloads_last_box = st.session_state.workloads_range = drawn
            _range_slider("Range of cells", "workloads_range", n, "Drag on the chart above, or set the range here.")
        else:
            st.caption("Drag a rectangle on the heatmap (box select) to choose rows and columns, or use the sliders.")
            event = st.plotly_chart(ui.histogram_figure(hist, selectable=True), key="workloads_draw_2d",
                                    on_select="rerun", selection_mode="box")
            boxes = (event or {}).get("selection", {}).get("box", [])
            drawn = ui.heatmap_box_cells(boxes[0], shape) if boxes else None
            if drawn and drawn != st.session_state.get("workloads_last_box"):
                st.session_state.workloads_last_box = drawn
                st.session_state.workloads_rows, st.session_state.workloads_cols = drawn
            _range_slider("Rows", "workloads_rows", shape[0], "First and last row of the rectangle.")
            _range_slider("Columns", "workloads_cols", shape[1], "First and last column of the rectangle.")
        left, right = st.columns(2)
        left.button("Use this range", key="workloads_use_range", help="One range query.",
                    on_click=lambda: _flash(lambda: ui.set_workload(_drawn_range(), "drawn range")))
        right.button("Add range to stack", key="workloads_add_range", on_click=_add_part,
                     args=("drawn range", _drawn_range), help="Compose it with other workloads.")

    parts = st.session_state.workload_parts
    if parts:
        st.subheader("Stack being composed")
        st.dataframe({"part": [label for label, _, _ in parts], "queries": [w.shape[0] for _, w, _ in parts],
                      "cells": [w.shape[1] for _, w, _ in parts]}, hide_index=True, key="workloads_parts")
        left, right = st.columns(2)
        left.button("Use the stack", type="primary", key="workloads_use_stack", on_click=_use_stack,
                    help="Select the union of these workloads (rows stacked).")
        right.button("Clear the stack", key="workloads_clear", on_click=parts.clear, help="Start a new stack.")

    w = ui.workload()
    m = w.shape[0]
    st.subheader("Current workload")
    st.markdown(f"`{ui.workload_spec()}` — {w.describe()}")
    cols = st.columns([1, 1, 1, 1])
    cols[0].metric("Queries × cells", f"{m:,} × {w.shape[1]:,}", help="m rows of W by n cells.")
    cols[1].metric("L1 sensitivity", _number(l1_sensitivity(w)),
                   help="Δ₁ = largest column L1 norm: how much one record can move all answers together.")
    cols[1].metric("L2 sensitivity", _number(l2_sensitivity(w)),
                   help="Δ₂ = largest column L2 norm: what Gaussian noise on the answers is calibrated to "
                        "(Δ₂ ≤ Δ₁; Gaussian noise wins when Δ₂ ≪ Δ₁).")
    cols[2].metric("‖W‖_F²", _number(squared_frobenius(w)),
                   help="Squared Frobenius norm; identity-strategy MSE per query is 2‖W‖_F²/(m ε²).")
    cols[3].button("Reset to the default", key="workloads_reset", help="Back to the dataset's default workload.",
                   on_click=lambda: st.session_state.update(workload_spec=None))
    overview = row_overview(w, hist.vector, SHOWN_ROWS, SHOWN_COLUMNS)
    index, group = overview["index"], overview["group"]
    st.plotly_chart(ui.workload_figure(index, overview["rows"], group), key="workloads_heatmap")
    st.caption(f"Showing {index.size:,} of {m:,} rows of W" + (" (evenly spaced)" if index.size < m else "")
               + (f"; cells averaged in groups of {group:,}" if group > 1 else "") + ".")
    st.markdown("**True answers** (curator view: these are the exact, unprotected answers)")
    st.dataframe({"query": index, "cells used": overview["cells"], "first cell": overview["first"],
                  "last cell": overview["last"], "true answer": overview["answer"]}, hide_index=True,
                 key="workloads_answers", column_config={"true answer": st.column_config.NumberColumn(format="%.6g")})
