"""Gradual release: a noise-reduction walk charged by increments; accuracy-first search with ex-post loss."""

import streamlit as st

from dplens import ui

ui.init_state()
st.title("Gradual release")
ui.show_flash()
with ui.guard():
    tab_walk, tab_real, tab_search = st.tabs(["Noise-reduction walk (simulation)", "Real walk (secure, charged)",
                                              "Accuracy-first search"])
    with tab_walk:
        ui.walk_tab()
    with tab_real:
        ui.real_walk_tab()
    with tab_search:
        ui.search_tab()
