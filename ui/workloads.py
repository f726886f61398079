"""The session's workload: a registry spec, or a custom workload object (stack, uploaded matrix, drawn range)."""

from __future__ import annotations

import streamlit as st

from core.domain import Histogram
from core.workloads import parse_workload
from ui.datasets import histogram
from ui.state import init_state


def set_workload(w, label: str) -> str:
    """Select a workload object that no spec string describes (stack, uploaded matrix, drawn range)."""
    init_state()
    key = f"custom:{len(st.session_state.custom_workloads) + 1}:{label}"
    st.session_state.custom_workloads[key] = w
    st.session_state.workload_spec = key
    return key


def default_workload_spec(hist: Histogram) -> str:
    return "random-range:m=2000,seed=0" if len(hist.domain.shape) == 1 else "marginals"


def workload_spec() -> str:
    init_state()
    return st.session_state.workload_spec or default_workload_spec(histogram())


@st.cache_resource(max_entries=16, show_spinner=False)
def _workload(spec: str, shape: tuple[int, ...]):
    return parse_workload(spec, shape)


def workload():
    """The session's workload for the current histogram (falls back to the default on mismatch)."""
    hist = histogram()
    custom = st.session_state.custom_workloads.get(workload_spec())
    if custom is not None and custom.shape[1] == hist.domain.size:
        return custom
    try:
        return _workload(workload_spec(), hist.domain.shape)
    except ValueError as err:
        st.session_state.flash_error = f"workload {workload_spec()!r} does not fit this dataset: {err}"
        st.session_state.workload_spec = None
        return _workload(default_workload_spec(hist), hist.domain.shape)
