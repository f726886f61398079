"""Ledger page: the curator's datasets' persistent privacy budgets, their history (CSV), the recorded reset, and the
keys whose signed exports the curator trusts.

A curator sees only their own ledgers (``ui.identity``); an admin (``DPLENS_ADMINS``) also sees every
curator's, read-only. No workspace id is shown or exported.
"""

import streamlit as st

from dplens import ui
from dplens.core.data.signing import key_id as signing_key_id
from dplens.core.data.signing import public_key, public_key_pem
from dplens.core.privacy.ledger_store import RESET_WARNING
from dplens.core.privacy.store import default_path
from dplens.core.release.export import history_to_csv

ui.init_state()
st.title("Ledger")
ui.show_flash()
if notice := st.session_state.pop("ledger_notice", None):
    st.success(notice)
with ui.guard():
    store, current = ui.ledger_store(), ui.ledger_key()
    led = ui.ledger()
    where = (f"kept in `{default_path()}` (set `DPLENS_HOME` to move it). Every tab, session, server restart and "
             "the command line charge the same ledger." if ui.local_mode() else
             f"kept on the server for you ({ui.plain(store.owner)}) alone: other curators neither see nor charge it.")
    st.caption("Budgets belong to the data: each dataset's ledger is keyed by its fingerprint (SHA-256 of the "
               f"counts and domain sizes) and {where}")
    cols, unit = st.columns(4), "ρ" if led.unit == "rho" else "ε"
    cols[0].metric("This dataset", ui.histogram().name, help=f"Fingerprint {current}")
    if led.unit == "rho":  # a zCDP total: Σρ is the check; ε is its CKS conversion at the recorded δ
        at = f" at δ = {led.total.delta:g} (CKS 2020)"
        cols[1].metric("Total ρ", f"{led.total.rho:.4g}", help=f"ε = {led.total.epsilon:.4g}{at}")
        cols[2].metric("Spent ρ", f"{led.spent.rho:.4g}", help=f"{len(led.spends)} release(s) since the last reset; "
                       "Σρ, a pure ε spend counts ε²/2")
        cols[3].metric("Remaining ρ", f"{led.remaining.rho:.4g}", help=f"ε = {led.remaining.epsilon:.4g}{at}")
    else:
        cols[1].metric("Total ε", f"{led.total.epsilon:.4g}")
        cols[2].metric("Spent ε", f"{led.spent.epsilon:.4g}", help=f"{len(led.spends)} release(s) since the last reset")
        cols[3].metric("Remaining ε", f"{led.remaining.epsilon:.4g}",
                       help=f"Total δ = {led.total.delta:g}, spent δ = {led.spent.delta:g} (basic composition).")
    if native := ui.native_caption():  # under (ε, δ) or zCDP (sidebar): the spend in that definition's unit
        st.info(native)
    datasets = store.datasets()
    if datasets:
        st.subheader("All datasets")
        st.dataframe(ui.datasets_table(datasets), hide_index=True, key="ledger_datasets")
        st.caption("Each row in its ledger's own unit (ρ for a zCDP budget, ε otherwise): spent + remaining = total.")
    names = {d["fingerprint"]: f"{d['name'] or 'unnamed'} · {d['fingerprint'][:12]}" for d in datasets}
    names.setdefault(current, f"{ui.histogram().name} · {current[:12]} (nothing recorded yet)")
    chosen = st.selectbox("History of", list(names), index=list(names).index(current), format_func=names.__getitem__,
                          key="ledger_dataset")
    history = store.history(chosen)
    shown = ui.native_history(history, store.ledger(chosen) if chosen != current else led)
    st.dataframe(shown, hide_index=True, key="ledger_history")
    if history:
        st.caption("In the ledger's own unit; the CSV below has ε, δ and ρ for every row.")
    st.download_button("Ledger history (CSV)", history_to_csv(history), f"dplens-ledger-{chosen[:12]}.csv",
                       "text/csv", key="ledger_csv", on_click="ignore",
                       help="Every total, spend (mechanism, ε, δ, ρ, workload, export id, time) and reset.")
    if ui.is_admin(store.owner):  # every curator's ledgers, read-only (a reset here is the owner's)
        with st.expander("Every curator's ledgers (admin)"):
            everyone = store.datasets(every_owner=True)
            st.dataframe(ui.datasets_table(everyone), hide_index=True, key="ledger_admin_datasets")
    with st.expander("Trusted installations (signed exports)"):
        st.caption("Every JSON export is signed by the installation that released it. A re-uploaded export is "
                   "already private (charged nothing) when it is signed by this installation or by a key you trust "
                   "here; anything else is raw data. Trust is yours alone and recorded with its reason.")
        st.download_button("This installation's public key (PEM)", public_key_pem(), "dplens-public-key.pem",
                           "application/x-pem-file", key="ledger_public_key", on_click="ignore",
                           help=f"Key id {signing_key_id(public_key())}: give it to curators who should trust "
                                "this installation's exports.")
        st.dataframe(ui.trusted_keys_table(store), hide_index=True, key="ledger_trusted_keys")
        with st.form("ledger_trust_form", clear_on_submit=True):
            st.file_uploader("Another installation's public key (PEM)", type=["pem", "txt"], key="ledger_trust_file")
            st.text_input("Whose key it is (recorded)", key="ledger_trust_name")
            st.text_input("Why you trust it (recorded)", key="ledger_trust_reason")
            st.form_submit_button("Trust this key", on_click=ui.trust_key)
        if trusted := [k["key_id"] for k in store.trusted_keys()]:
            st.selectbox("Stop trusting", trusted, key="ledger_untrust_key")
            st.button("Stop trusting this key", key="ledger_untrust", on_click=ui.untrust_key)
    with st.expander("Start a fresh budget for this dataset (voids the guarantee)"):
        st.warning(RESET_WARNING + " The reset is recorded with your reason; the old spends stay in the history.")
        with st.form("ledger_reset_form"):
            st.radio("Unit", ["ε", "ρ"], index=["ε", "ρ"].index(unit), horizontal=True, key="ledger_reset_unit",
                     help=f"ρ: a zCDP total, shown as ε at the sidebar's δ = {ui.delta():g}.")
            st.number_input("New total (ε or ρ)", min_value=1e-4, max_value=100.0, step=0.5, format="%.4g",
                            value=float(led.total.rho if led.total.rho is not None else led.total.epsilon),
                            key="ledger_reset_total")
            st.text_input("Reason (recorded)", key="ledger_reset_reason")
            st.checkbox("I understand this voids the privacy guarantee for this data", key="ledger_reset_confirm")
            st.form_submit_button("Reset the budget", on_click=ui.reset_budget)
