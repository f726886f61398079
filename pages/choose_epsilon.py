"""Choose epsilon: from an accuracy target, from a re-identification risk (Lee & Clifton), usefulness bounds."""


import streamlit as st

import ui

ui.init_state()
st.title("Choose epsilon")
ui.show_flash()
with ui.guard():
    tab_accuracy, tab_targets, tab_risk, tab_useful = st.tabs(
        ["From accuracy", "Several targets", "From re-identification risk", "Usefulness"])
    with tab_accuracy:
        ui.from_accuracy()
    with tab_targets:
        ui.several_targets()
    with tab_risk:
        ui.from_risk()
    with tab_useful:
        ui.usefulness()
