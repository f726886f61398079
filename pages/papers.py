"""Papers page: each paper's mechanism structure on its worked examples, and its reproduced experiment."""

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

import ui
from core.mechanisms.om import om_decompose, structure_table
from core.mechanisms.wda import WDA, division_table, expected_error
from core.mechanisms.xiao import NOT_DP_LABEL, literal_max_distribution_not_dp, max_query_distribution
from core.reproduce import REPRODUCTIONS, example_workloads, figures, ggs_example_table
from core.workloads import dense, hot_spot

GGS_EXAMPLE = np.array([1.0, 1, 2, 3, 8, 9, 10, 100, 120, 1000])  # spec §4(e)
CURRENT = "current workload (Workloads page)"
SHOW_MATRICES = 400  # entries of W up to which W, W̃ and B are shown in full


@st.cache_data(max_entries=8, show_spinner="Running the reproduction (a few seconds)…")
def reproduction(name: str, seed: int):
    return REPRODUCTIONS[name](seed=seed)


def show_reproduction(name: str) -> None:
    st.subheader("Reproduction")
    if st.button("Run the paper's experiment", key=f"papers_run_{name}"):
        st.session_state[f"papers_ran_{name}"] = True
    if not st.session_state.get(f"papers_ran_{name}"):
        st.caption(f"Same as `python -m core reproduce {name} --output DIR` (CSV + HTML).")
        return
    result = reproduction(name, int(st.session_state.seed))
    st.markdown(f"**The paper claims:** {result.claim}\n\n**We measure:** {result.measure}\n\n**Data:** {result.data}")
    st.markdown("\n".join(f"- {finding}" for finding in result.findings))
    for i, fig in enumerate(figures(result)):
        st.plotly_chart(go.Figure(fig), key=f"papers_fig_{name}_{i}")
    for key, table in result.tables.items():
        st.download_button(f"Download {key} (CSV)", table.to_csv(index=False).encode(), f"{name}-{key}.csv",
                           "text/csv", key=f"papers_csv_{name}_{key}")


ui.init_state()
st.title("Papers")
ui.show_flash()
examples = example_workloads()
with ui.guard():
    st.caption("The mechanisms of the five source papers as corrected in the spec, their structure on the "
               "papers' worked examples, and their headline experiments re-run. Nothing here spends budget.")
    wda_tab, om_tab, sreb_tab, xiao_tab = st.tabs(["WDA", "OM", "SReB_GCA", "Xiao et al."])

    with wda_tab:
        st.markdown("**WDA** splits the workload's rows around the hot *column of W* (never the data) and "
                    "answers each leaf with Laplace noise at its own sensitivity; leaf budgets add up to ε.")
        left, right = st.columns(2)
        source = left.selectbox("Workload", ["hot-spot (our reconstruction)", CURRENT,
                                             *[k for k in examples if "WDA" in k]], key="papers_wda_workload")
        budget = right.selectbox("Budget rule", ["optimal", "equal", "optimal_global"], key="papers_wda_budget")
        p = left.slider("p (hot-spot only)", 0.1, 0.9, 0.2, 0.1, key="papers_wda_p")
        workload = (hot_spot(4096, 2000, p, seed=0) if source.startswith("hot") else ui.workload()
                    if source == CURRENT else examples[source])
        st.caption(workload.describe())
        try:
            leaves = WDA(budget=budget).division(workload)
        except ValueError as err:  # e.g. an implicit workload too large to read row by row
            st.info(f"WDA cannot divide this workload: {err}")
        else:
            st.dataframe(pd.DataFrame(division_table(leaves, 1.0)), hide_index=True)
            st.metric("Average L1 error per query × ε", f"{expected_error(leaves, 1.0, squared=False):.4g}")
        show_reproduction("wda")

    with om_tab:
        st.markdown("**OM** factors W = B·W̃ with W̃ in orthogonal groups (one per atom of columns), adds "
                    "Lap(S̃/ε) to W̃x and releases B(W̃x + noise); S̃ is computed from the final W̃.")
        source = st.selectbox("Workload", [*[k for k in examples if k.startswith("OM")], CURRENT],
                              key="papers_om_example")
        workload = ui.workload() if source == CURRENT else examples[source]
        try:
            factorisation = om_decompose(workload)
        except ValueError as err:
            st.info(f"OM cannot factorise this workload: {err}")
        else:
            if workload.shape[0] * workload.shape[1] <= SHOW_MATRICES:
                cols = st.columns(3)
                for column, title, matrix in zip(cols, ("W", "W̃ (groups: orthogonal rows)", "B"), (
                        dense(workload), factorisation.reduced.toarray(), factorisation.mixing), strict=True):
                    column.markdown(title)
                    column.dataframe(pd.DataFrame(matrix).round(4))
            else:
                st.dataframe(pd.DataFrame(structure_table(factorisation)), hide_index=True, height=240)
            atoms = " ".join("{" + ", ".join(map(str, group)) + "}" for group in factorisation.groups[:30])
            st.write(f"{len(factorisation.groups)} groups (atoms of columns): {atoms}"
                     f"{' …' if len(factorisation.groups) > 30 else ''} · S̃ = {factorisation.sensitivity:g} · "
                     f"total squared error at ε = 1: {factorisation.expected_total_mse(1.0):.5g}")
        show_reproduction("om")

    with sreb_tab:
        st.markdown("**SReB_GCA** sorts the bins by their *noisy* values, groups them greedily (GGS) so small "
                    "bins share noise, and adds one Laplace draw per group sum.")
        scale = st.select_slider("λ2 = 1/ε2", [0.5, 2.0, 10.0, 50.0, 200.0], 10.0, key="papers_sreb_scale")
        st.caption("GGS on a worked example of ten values, grouped as if stage 1 added no noise:")
        st.dataframe(ggs_example_table(GGS_EXAMPLE, scale), hide_index=True)
        show_reproduction("sreb-gca")

    with xiao_tab:
        st.markdown("**Cell release** adds Lap(Δ/α) to counts (Δ = 1 add/remove, 2 replace-one). The **max "
                    "query** default is an α-DP exponential mechanism; the paper's literal mechanism is "
                    f"**{NOT_DP_LABEL}**.")
        alpha = st.slider("α", 0.1, 2.0, 0.5, 0.1, key="papers_xiao_alpha")
        data = [5, 9, 9, 10]
        fig = go.Figure([go.Bar(x=np.arange(1, 11), y=max_query_distribution(data, 10, alpha), name="EM (α-DP)"),
                         go.Bar(x=np.arange(1, 11), y=literal_max_distribution_not_dp(data, 10, 1, alpha),
                                name="literal (NOT differentially private)")])
        fig.update_layout(title=f"Output distribution for data {data}", xaxis_title="output", height=320)
        st.plotly_chart(fig, key="papers_xiao_fig")
        show_reproduction("xiao")
