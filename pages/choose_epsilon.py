"""Choose epsilon: from an accuracy target, from a re-identification risk (Lee & Clifton), usefulness bounds,
and where a release falls and what it risks (quantile dots, posterior bounds, intervals with sampling error)."""


import streamlit as st

from dplens import ui

ui.init_state()
st.title("Choose epsilon")
ui.show_flash()
with ui.guard():
    ui.tuning_controls("choose")
    tab_accuracy, tab_targets, tab_risk, tab_useful, tab_noise = st.tabs(
        ["From accuracy", "Several targets", "From re-identification risk", "Usefulness",
         "See the risk and the noise"])
    with tab_accuracy:
        ui.from_accuracy()
    with tab_targets:
        ui.several_targets()
    with tab_risk:
        ui.from_risk()
    with tab_useful:
        ui.usefulness()
    with tab_noise:
        ui.risk_and_noise()
