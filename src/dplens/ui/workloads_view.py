"""The Workloads page's logic (callbacks, sections, figures); the page script calls it through ``ui``."""

from __future__ import annotations

import math

import numpy as np
import streamlit as st

from dplens.core.data.files import check_size
from dplens.core.queries.workloads import (
    Kron,
    Ranges,
    Stack,
    explicit_from_csv,
    parse_workload,
)
from dplens.ui.datasets import histogram
from dplens.ui.workloads import set_workload, stack_recipe, workload_recipe

SHOWN_ROWS = 100      # rows of W in the heatmap and the answers table


SHOWN_COLUMNS = 512   # heatmap columns (cells averaged in groups beyond this)


def number(value: float) -> str:
    """Readable metric text: thousands separators for large values, 4 significant digits otherwise."""
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"


def flash(action):
    """Run a callback action; a ValueError becomes the page's flash message instead of a traceback."""
    try:
        action()
    except ValueError as err:
        st.session_state.flash_error = str(err)


def use_spec(spec: str) -> None:
    def act():
        parse_workload(spec, histogram().domain.shape)  # validate before selecting
        st.session_state.workload_spec = spec
    flash(act)


def add_part(label: str, build, spec: str | None = None) -> None:
    """Append (label, workload, config recipe) to the stack being composed."""
    def act():
        w = build()
        st.session_state.workload_parts.append((label, w, workload_recipe(w, spec=spec)))
    flash(act)


def use_stack() -> None:
    parts = st.session_state.workload_parts
    if not parts:
        st.session_state.flash_error = "the stack is empty: add workloads to it first"
        return
    flash(lambda: set_workload(Stack(tuple(w for _, w, _ in parts)), "stack of " + " + ".join(n for n, _, _ in parts),
                               stack_recipe([recipe for _, _, recipe in parts])))


def uploaded_matrix():
    upload = st.session_state.get("workloads_upload")
    if upload is None:
        raise ValueError("choose a CSV file of query rows first")
    check_size(upload.size, what="query-matrix file", name=upload.name)  # before its bytes are copied
    return explicit_from_csv(upload.getvalue(), n=histogram().domain.size)


def drawn_range():
    hist = histogram()
    if len(hist.domain.shape) == 1:
        lo, hi = st.session_state.workloads_range
        return Ranges(hist.domain.size, np.array([lo]), np.array([hi]), label=f"range [{lo}, {hi}]")
    (r0, r1), (c0, c1) = st.session_state.workloads_rows, st.session_state.workloads_cols
    rows, cols = hist.domain.shape
    return Kron((Ranges(rows, np.array([r0]), np.array([r1]), label=f"rows [{r0}, {r1}]"),
                 Ranges(cols, np.array([c0]), np.array([c1]), label=f"cols [{c0}, {c1}]")))


def box_to_range(event, n: int) -> tuple[int, int] | None:
    """A box selection on the bar chart → the inclusive bin range it covers."""
    boxes = (event or {}).get("selection", {}).get("box", []) if event else []
    if not boxes:
        return None
    x0, x1 = sorted(boxes[0]["x"][:2])
    lo, hi = max(0, math.ceil(x0)), min(n - 1, math.floor(x1))
    return (lo, hi) if lo <= hi else None


def _typed_range(key: str) -> None:
    """Typed endpoints → the slider's (first, last), in order (a first typed after the last is swapped)."""
    ss = st.session_state
    first, last = int(ss[f"{key}_first"]), int(ss[f"{key}_last"])
    ss[key] = (min(first, last), max(first, last))


def range_slider(label: str, key: str, size: int, help: str, labels=None) -> None:
    """A (first, last) slider over 0..size-1, with both endpoints also typed in boxes beside it (a slider's key
    presses can be lost while the page reruns); the state survives page switches and dataset changes.
    ``labels``: the cells' labels, shown under the slider."""
    ss = st.session_state
    lo, hi = ss.get(key, (0, size - 1))
    if not 0 <= lo <= hi < size:
        lo, hi = 0, size - 1
    ss[key] = (lo, hi)
    if size <= 1:
        return
    ss[f"{key}_first"], ss[f"{key}_last"] = lo, hi  # the boxes follow the slider (and a drawn box)
    first, middle, last = st.columns([1, 4, 1])
    first.number_input(f"{label}: first", 0, size - 1, step=1, key=f"{key}_first", on_change=_typed_range,
                       args=(key,), help="Type the first index of the range.")
    middle.slider(label, 0, size - 1, key=key, help=help)
    last.number_input(f"{label}: last", 0, size - 1, step=1, key=f"{key}_last", on_change=_typed_range,
                      args=(key,), help="Type the last index of the range (inclusive).")
    if labels is not None and len(labels) == size:
        middle.caption(f"{label}: {labels[lo]} to {labels[hi]} ({hi - lo + 1} of {size})")

