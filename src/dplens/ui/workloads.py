"""The session's workload: a registry spec, or a custom workload object (stack, uploaded matrix, drawn range)."""

from __future__ import annotations

import streamlit as st

from dplens.core.data.domain import Histogram
from dplens.core.queries.workloads import parse_workload
from dplens.core.release.config import check_recipe, recipe_of
from dplens.ui.datasets import histogram
from dplens.ui.state import init_state


def set_workload(w, label: str, recipe: dict | str | None = None) -> str:
    """Select a workload object that no spec string describes (stack, uploaded matrix, drawn range).

    ``recipe`` is how the session config rebuilds it (default: ``workload_recipe(w)``), or why it cannot.
    """
    init_state()
    key = f"custom:{len(st.session_state.custom_workloads) + 1}:{label}"
    st.session_state.custom_workloads[key] = w
    st.session_state.custom_recipes[key] = workload_recipe(w) if recipe is None else recipe
    st.session_state.workload_spec = key
    return key


def workload_recipe(w, *, spec: str | None = None) -> dict | str:
    """The config recipe of ``w`` (its registry ``spec`` when given, else its structure), or why there is none."""
    try:
        return {"spec": spec} if spec else recipe_of(w)
    except ValueError as err:
        return str(err)


def stack_recipe(recipes: list[dict | str]) -> dict | str:
    """The recipe of a stack of parts with these recipes, or the first reason one of them has none."""
    reasons = [r for r in recipes if isinstance(r, str)]
    if reasons:
        return reasons[0]
    try:
        return check_recipe({"stack": list(recipes)})
    except ValueError as err:
        return str(err)


def default_workload_spec(hist: Histogram) -> str:
    return "random-range:m=2000,seed=0" if len(hist.domain.shape) == 1 else "marginals-ranges-2d:m=256,seed=0"


def workload_name() -> str:
    """The workload as a curator reads it: a custom one by its label ("drawn range", "stack"), a registry one by
    its spec (``prefix``, ``random-range:m=2000,seed=0``)."""
    spec = workload_spec()
    return spec.split(":", 2)[2] if spec.startswith("custom:") else spec


def workload_spec() -> str:
    init_state()
    return st.session_state.workload_spec or default_workload_spec(histogram())


@st.cache_resource(max_entries=16, show_spinner=False)
def parsed_workload(spec: str, shape: tuple[int, ...]):
    return parse_workload(spec, shape)


def _shape_text(shape: tuple[int, ...]) -> str:
    return f"a {shape[0]:,}-cell 1-D histogram" if len(shape) == 1 else f"a {shape[0]} × {shape[1]} histogram"


def _drop_if_stale(hist: Histogram) -> None:
    """A workload chosen for data of another kind (1-D against 2-D, or a custom one of another width) is
    dropped when the data changes, with a visible note instead of a silent reinterpretation."""
    ss = st.session_state
    chosen_for, shape = ss.get("workload_shape"), tuple(hist.domain.shape)
    ss.workload_shape = shape
    if ss.workload_spec is None or chosen_for is None or tuple(chosen_for) == shape:
        return
    custom = ss.custom_workloads.get(ss.workload_spec)
    if len(chosen_for) == len(shape) and (custom is None or custom.shape[1] == hist.domain.size):
        return  # a registry spec means the same queries on data of the same kind (e.g. every prefix)
    st.warning(f"Workload dropped: {ss.workload_spec.rpartition(':')[2] if custom is not None else ss.workload_spec}"
               f" was designed for {_shape_text(tuple(chosen_for))}, and this dataset is {_shape_text(shape)}. "
               f"Using the default workload ({default_workload_spec(hist)}); design a new one on the Workloads page.")
    ss.workload_spec = None


def workload():
    """The session's workload for the current histogram (dropped, with a note, when the data changed kind)."""
    hist = histogram()
    _drop_if_stale(hist)
    custom = st.session_state.custom_workloads.get(workload_spec())
    if custom is not None and custom.shape[1] == hist.domain.size:
        return custom
    try:
        return parsed_workload(workload_spec(), hist.domain.shape)
    except ValueError as err:
        st.session_state.flash_error = f"workload {workload_spec()!r} does not fit this dataset: {err}"
        st.session_state.workload_spec = None
        return parsed_workload(default_workload_spec(hist), hist.domain.shape)
