"""Release page: one mechanism, one ε, one click; truth vs release with 95 % intervals; history; exports."""


import streamlit as st

from dplens import ui
from dplens.core.mechanisms import NEIGHBOURING
from dplens.core.privacy.definitions import privacy_words, target
from dplens.core.privacy.noise import NOISE_PATHS
from dplens.core.release.config import config_to_json
from dplens.core.release.export import (
    SIMULATION_LABEL,
)

ui.init_state()
st.title("Release")
ui.show_flash()
if notice := st.session_state.pop("release_notice", None):
    st.success(notice)
with ui.guard():
    hist, workload, led = ui.histogram(), ui.workload(), ui.ledger()
    st.caption(f"Dataset **{hist.name}** · workload `{ui.workload_name()}` ({workload.shape[0]:,} queries) · "
               f"neighbours: {NEIGHBOURING}. Each click spends budget; "
               f"remaining {ui.remaining_text(led)}.")
    ui.show_handoff(ui.apply_handoff("release"))
    if ui.released_data() is not None:
        st.info("This dataset is an earlier release (already private): releasing from it again is "
                "post-processing, so it spends no budget.")
    for key, default in (("release_epsilon", 1.0), ("release_noise_path", "secure")):
        st.session_state.setdefault(key, default)  # defaults via the session so a loaded config can set them
    left, right = st.columns(2)
    with left:
        choices = ui.available()
        if st.session_state.get("release_mechanism") not in choices:  # a Gaussian one under pure ε-DP
            st.session_state.release_mechanism = choices[0]
        name = st.selectbox("Mechanism", choices, key="release_mechanism",
                            format_func=ui.mechanism_label,
                            help="Any registered mechanism usable under the privacy definition (sidebar); "
                                 "Gaussian mechanisms need (ε, δ) or zCDP. Its settings appear below.")
        settings = ui.mechanism_settings(name, key="release")
        st.session_state.release_settings = {name: settings}  # for the session config
        checked = ui.release_preflight(name, settings)  # the kernel's checks before the click: nothing runs
        if checked.refusal:
            st.error(f"{name} cannot run here: {checked.refusal}")
        elif checked.unpayable:  # advice before the click (nothing has failed): the click itself refuses in red
            st.warning(f"{name} cannot be released as set: {checked.unpayable}")
        if not checked.refusal and checked.warning:
            st.warning(f"Slow: {checked.warning}. The page waits for it.")
    with right:
        pure = ui.definition() == "pure"
        if ui.definition() == "zcdp":  # the native unit: ρ, with its ε at δ shown once as a conversion
            ui.sync_release_rho()
            st.number_input("ρ for this release (zCDP)", min_value=1e-6, max_value=1e4, step=0.01, format="%.4g",
                            key="release_rho", on_change=ui.release_rho_typed,
                            help="Charged to the dataset's ledger on click, in ρ (a ρ total composes Σρ exactly).")
            st.caption(f"ρ = {st.session_state.release_rho:.4g} is ε = {st.session_state.release_epsilon:.4g} at "
                       f"δ = {ui.delta():g} (Canonne, Kamath & Steinke 2020), the ε the other pages plot.")
        else:
            st.number_input("Epsilon for this release" if pure else f"Epsilon (at δ = {ui.delta():g}) for this release",
                            min_value=0.001, max_value=100.0, step=0.1, key="release_epsilon",
                            help="Charged to the dataset's ledger on click: ε under an ε total; (ε, δ) under (ε, δ) "
                                 "(basic composition); a ρ total charges a pure ε release ε²/2.")
        if ui.definition() == "approx":
            privacy = target(ui.definition(), float(st.session_state.release_epsilon), ui.delta())
            st.caption(f"Target: {privacy_words(privacy)}. Warning: (ε, δ)-DP permits a rare catastrophic failure "
                       "(probability δ).")
        st.radio("Noise", list(NOISE_PATHS), key="release_noise_path", horizontal=True,
                 help=" · ".join(f"**{k}**: {v}" for k, v in NOISE_PATHS.items())
                      + f". Exploration results are a {SIMULATION_LABEL}: shown here, never exported.")
        st.button("Spend and release", type="primary", key="release_spend", on_click=ui.spend_and_release,
                  help="Runs the mechanism once and charges ε to the ledger. Reruns never charge.")
    history = st.session_state.releases
    if not history:
        st.info("No release yet. Choose a mechanism and ε, then **Spend and release**.")
    else:
        ui.show_release(history, hist, workload)
    with st.expander("Session config (save or reload)"):
        config_notes: list[str] = []
        config_json = config_to_json(ui.session_config(config_notes))
        for note in config_notes:
            st.warning(f"Note: {note}.")
        st.download_button("Session config (JSON)", config_json, "dplens-session.json",
                           "application/json", key="release_config_download", on_click="ignore",
                           help="Dataset reference, workload (a custom one as its recipe: specs, range ends, "
                                "matrix nonzeros), compared mechanisms and ε grid, seed, total budget, "
                                "release settings. Never contains data, spends or releases.")
        st.code(config_json, language="json")
        st.file_uploader("Reload a session config", type=["json"], key="release_config_upload",
                         help="Restores the settings; the budget already spent stays spent.")
        st.text_area("…or paste it here", key="release_config_text", height=100)
        st.button("Load config", key="release_config_load", on_click=ui.guarded(ui.load_config))
