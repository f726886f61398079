"""Learn page: Laplace noise, neighbouring outputs and e^ε, composition, why ranges favour hierarchies."""


import numpy as np
import plotly.graph_objects as go
import streamlit as st

from dplens import ui
from dplens.core.analysis.intervals import laplace_halfwidth
from dplens.core.papers.teaching import (
    composition,
    laplace_density,
    laplace_scale,
)

ui.init_state()
st.title("Learn")
ui.show_flash()
with ui.guard():
    st.caption("Teaching views: everything here is simulated on a separate stream and never spends budget.")

    st.header("1. Laplace noise: scale = sensitivity / ε")
    st.markdown("The Laplace mechanism adds noise whose spread is **b = Δ/ε**: Δ is how much one person can "
                "change the answer, ε is the privacy budget. Halve ε or double Δ and the noise doubles. "
                "95 % of the noise falls within ±b·ln 20 ≈ ±3b.")
    left, right = st.columns([1, 2])
    sensitivity = left.slider("Sensitivity Δ", 0.5, 10.0, 1.0, 0.5, key="learn_sensitivity",
                              help="How much one record can change the true answer (1 for a count).")
    epsilon = left.slider("Epsilon ε", 0.05, 5.0, 1.0, 0.05, key="learn_epsilon",
                          help="Smaller ε = more privacy = more noise.")
    scale = laplace_scale(sensitivity, epsilon)
    left.metric("Scale b = Δ/ε", f"{scale:.3g}")
    left.metric("95 % of the noise within", f"±{laplace_halfwidth(scale):.3g}")
    grid = np.linspace(-10 * max(scale, 1), 10 * max(scale, 1), 801)
    fig = go.Figure([go.Scatter(x=grid, y=laplace_density(grid, 1.0), name="Δ=1, ε=1 (reference)",
                                line={"dash": "dot", "color": ui.TRUE_COLOUR}),
                     go.Scatter(x=grid, y=laplace_density(grid, scale), name=f"Δ={sensitivity:g}, ε={epsilon:g}",
                                line={"color": ui.PALETTE[0]}, fill="tozeroy")])
    fig.update_layout(xaxis_title="noise added", yaxis_title="density", **ui.LAYOUT)
    right.plotly_chart(fig, key="learn_laplace")

    ui.ratio_section()
    st.header("3. Sequential vs parallel composition")
    st.markdown("Asking k questions about the **same** people spends the budget k times (sequential "
                "composition), so each answer gets ε/k and k times the noise. Questions about **disjoint** "
                "groups, such as the bins of a histogram, spend it only once (parallel composition): each "
                "person is in one bin, so every bin gets the full ε.")
    left, right = st.columns([1, 2])
    total = left.slider("Total ε", 0.1, 5.0, 1.0, 0.1, key="learn_total")
    queries = left.slider("Number of counting queries k", 1, 50, 10, key="learn_queries")
    comp = composition(total, queries)
    fig = go.Figure(go.Bar(x=["sequential (overlapping)", "parallel (disjoint bins)"],
                           y=[comp["sequential"]["rmse"], comp["parallel"]["rmse"]],
                           marker_color=[ui.PALETTE[1], ui.PALETTE[2]],
                           text=[f"ε per query {comp[k]['per_query_epsilon']:.3g}"
                                 for k in ("sequential", "parallel")]))
    fig.update_layout(yaxis_title="RMSE of each answer", **ui.LAYOUT)
    right.plotly_chart(fig, key="learn_composition")

    st.header("4. Why range queries favour hierarchical strategies")
    st.markdown("Answering a range from noisy single bins adds up one noise term per bin, so the error grows "
                "like √length. A hierarchy (hb) or a wavelet (privelet) measures big blocks too, so any range "
                "needs only about log(n) noisy pieces: worse for single bins, far better for long ranges.")
    left, right = st.columns([1, 2])
    n = left.select_slider("Domain size n", [64, 256, 1024], 256, key="learn_n")
    epsilon4 = left.select_slider("Epsilon", [0.1, 0.5, 1.0, 2.0], 1.0, key="learn_epsilon_range")
    lengths, errors = ui.range_errors(int(n), float(epsilon4))
    fig = go.Figure([go.Scatter(x=lengths, y=values, name=name, mode="lines+markers",
                                line={"color": ui.mechanism_colour(name)}) for name, values in errors.items()])
    fig.update_layout(xaxis_type="log", yaxis_type="log", xaxis_title="range length (bins)",
                      yaxis_title="expected RMSE per range", **ui.LAYOUT)
    right.plotly_chart(fig, key="learn_ranges")
    left.caption("Exact expected errors from each mechanism's error formula on evenly spread ranges of each "
                 "length (no simulation).")

    ui.gaussian_section()
    st.header("6. The papers")
    paper_pages = [(path, title) for _, path, title, _ in ui.PAGES if path == "pages/papers.py"]
    for path, title in paper_pages:
        st.page_link(path, label=f"{title}: reproductions of the papers' worked examples and figures",
                     icon=":material/menu_book:")
    if not paper_pages:
        st.caption("The papers' reproductions will appear on the Papers page.")
