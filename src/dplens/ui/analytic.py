"""Compare's first screen: the analytic error curves of the data-independent mechanisms, before any run."""

from __future__ import annotations

import math

import plotly.graph_objects as go
import streamlit as st

from dplens.core.privacy.definitions import EpsilonAxis, amount
from dplens.core.registry import mechanism as registered
from dplens.ui.charts import EPSILON_TITLE, METRIC_AXIS_TITLES, mechanism_colour
from dplens.ui.definition import definition as privacy_definition
from dplens.ui.ledger import delta as privacy_delta
from dplens.ui.ledger import point_privacy, point_words
from dplens.ui.workloads import workload, workload_spec


@st.cache_data(max_entries=256, show_spinner=False)
def _mse(name: str, spec: str, shape: tuple[int, ...], dataset_key: str, definition: str, delta: float,
         epsilon: float) -> float | None:
    """Expected per-query MSE at ``epsilon`` (ε at δ under the session's definition); None if data-dependent."""
    return registered(name, kind="histogram").expected_mse(workload(), EpsilonAxis(definition, delta).privacy(epsilon))


def _rmse_curve(name: str, epsilons: tuple[float, ...], shape: tuple[int, ...]) -> list[float] | None:
    """RMSE at every ε. Laplace noise scales as 1/ε, so two calls settle it; Gaussian noise calibrated at a
    fixed δ does not (the analytic σ(ε) is not ∝ 1/ε), so those are computed at every ε."""
    key = (name, workload_spec(), shape, st.session_state.dataset_key, privacy_definition(), privacy_delta())
    at_one, at_two = _mse(*key, 1.0), _mse(*key, 2.0)
    if at_one is None or at_two is None:
        return None
    if math.isclose(4.0 * at_two, at_one, rel_tol=1e-9, abs_tol=1e-300):
        return [math.sqrt(at_one) / e for e in epsilons]
    rmse = []
    for e in epsilons:
        mse = _mse(*key, float(e))
        if mse is None:
            return None
        rmse.append(math.sqrt(mse))
    return rmse


def sweep_axis(epsilons) -> tuple[str, dict[float, str] | None, dict[float, str] | None]:
    """How Compare's charts write the sweep's ε points in the definition's unit: (axis title, hover label per point,
    tick label per point); under pure ε-DP the plain ε axis (no labels). The points stay at their ε."""
    if privacy_definition() == "pure":
        return "epsilon", None, None
    labels = {float(e): point_words(e) for e in epsilons}
    ticks = {float(e): f"{amount(point_privacy(e)):.3g}" for e in epsilons}
    title = (f"ρ (zCDP; each point is ρ's ε at δ = {privacy_delta():g})" if privacy_definition() == "zcdp"
             else f"ε at δ = {privacy_delta():g}")
    return title, labels, ticks


def analytic_figure(names: list[str], epsilons: tuple[float, ...], shape: tuple[int, ...]) -> go.Figure | None:
    """RMSE per query against the sweep's points for every data-independent mechanism in ``names`` (None when
    there is none), on the axis the results will have (``sweep_axis``: ρ under zCDP)."""
    fig = go.Figure()
    for name in names:
        try:
            curve = _rmse_curve(name, epsilons, shape)
        except ValueError:  # e.g. a 2-D-only mechanism on 1-D data: left out, the sweep says why
            continue
        if curve is None:
            continue
        fig.add_scatter(x=list(epsilons), y=curve, name=f"{name} (analytic)",
                        mode="lines", line={"color": mechanism_colour(name), "dash": "dot"})
    if not fig.data:
        return None
    title, _, ticks = sweep_axis(epsilons)
    fig.update_layout(xaxis_title=EPSILON_TITLE if title == "epsilon" else title,
                      yaxis_title=METRIC_AXIS_TITLES["rmse"], xaxis_type="log",
                      yaxis_type="log", height=380, margin={"l": 50, "r": 10, "t": 30, "b": 40},
                      legend={"orientation": "h", "y": -0.25})
    if ticks:  # ticks at the sweep's points, written in the page's unit
        fig.update_xaxes(tickvals=sorted(ticks), ticktext=[ticks[t] for t in sorted(ticks)])
    return fig
