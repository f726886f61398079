"""Compare's first screen: the analytic error curves of the data-independent mechanisms, before any run."""

from __future__ import annotations

import math

import plotly.graph_objects as go
import streamlit as st

from core.mechanisms import MECHANISMS
from ui.charts import EPSILON_TITLE, METRIC_AXIS_TITLES, mechanism_colour
from ui.workloads import workload, workload_spec


@st.cache_data(max_entries=16, show_spinner=False)
def _mse_at_one(name: str, spec: str, shape: tuple[int, ...], dataset_key: str) -> float | None:
    """Expected per-query MSE at ε = 1 (Laplace noise ∝ 1/ε, so RMSE(ε) = RMSE(1)/ε); None if data-dependent."""
    return MECHANISMS[name].expected_mse(workload(), 1.0)


def analytic_figure(names: list[str], epsilons: tuple[float, ...], shape: tuple[int, ...]) -> go.Figure | None:
    """RMSE per query against ε for every data-independent mechanism in ``names`` (None when there is none)."""
    fig = go.Figure()
    for name in names:
        try:
            mse = _mse_at_one(name, workload_spec(), shape, st.session_state.dataset_key)
        except ValueError:  # e.g. a 2-D-only mechanism on 1-D data: left out, the sweep says why
            continue
        if mse is None:
            continue
        fig.add_scatter(x=list(epsilons), y=[math.sqrt(mse) / e for e in epsilons], name=f"{name} (analytic)",
                        mode="lines", line={"color": mechanism_colour(name), "dash": "dot"})
    if not fig.data:
        return None
    fig.update_layout(xaxis_title=EPSILON_TITLE, yaxis_title=METRIC_AXIS_TITLES["rmse"], xaxis_type="log",
                      yaxis_type="log", height=380, margin={"l": 50, "r": 10, "t": 30, "b": 40},
                      legend={"orientation": "h", "y": -0.25})
    return fig
