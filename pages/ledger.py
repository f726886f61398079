"""Ledger page: every dataset's persistent privacy budget, its full history (CSV), and the recorded reset."""

import pandas as pd
import streamlit as st

import ui
from core.export import history_to_csv
from core.ledger_store import RESET_WARNING, LedgerStore
from core.store import default_path

ui.init_state()
st.title("Ledger")
ui.show_flash()
if notice := st.session_state.pop("ledger_notice", None):
    st.success(notice)
with ui.guard():
    store, current = LedgerStore(), ui.ledger_key()
    led = ui.ledger()
    st.caption(f"Budgets belong to the data: each dataset's ledger is keyed by its fingerprint (SHA-256 of the "
               f"counts and domain sizes) and kept in `{default_path()}` (set `DPLENS_HOME` to move it). Every "
               "tab, session, server restart and the command line charge the same ledger.")
    cols = st.columns(4)
    cols[0].metric("This dataset", ui.histogram().name, help=f"Fingerprint {current}")
    cols[1].metric("Total ε", f"{led.total.epsilon:.4g}")
    cols[2].metric("Spent ε", f"{led.spent.epsilon:.4g}", help=f"{len(led.spends)} release(s) since the last reset")
    cols[3].metric("Remaining ε", f"{led.remaining.epsilon:.4g}",
                   help=f"Total δ = {led.total.delta:g}, spent δ = {led.spent.delta:g} (basic composition).")
    if native := ui.native_caption():  # under (ε, δ) or zCDP (sidebar): the spend in that definition's unit
        st.info(native)
    datasets = store.datasets()
    if datasets:
        st.subheader("All datasets")
        st.dataframe(pd.DataFrame(datasets), hide_index=True, key="ledger_datasets")
    names = {d["fingerprint"]: f"{d['name'] or 'unnamed'} · {d['fingerprint'][:12]}" for d in datasets}
    names.setdefault(current, f"{ui.histogram().name} · {current[:12]} (nothing recorded yet)")
    chosen = st.selectbox("History of", list(names), index=list(names).index(current), format_func=names.get,
                          key="ledger_dataset")
    history = store.history(chosen)
    st.dataframe(pd.DataFrame(history), hide_index=True, key="ledger_history")
    st.download_button("Ledger history (CSV)", history_to_csv(history), f"dplens-ledger-{chosen[:12]}.csv",
                       "text/csv", key="ledger_csv", on_click="ignore",
                       help="Every total, spend (mechanism, ε, δ, ρ, workload, export id, time) and reset.")
    with st.expander("Start a fresh budget for this dataset (voids the guarantee)"):
        st.warning(RESET_WARNING + " The reset is recorded with your reason; the old spends stay in the history.")
        with st.form("ledger_reset_form"):
            st.number_input("New total ε", min_value=0.01, max_value=100.0, value=float(led.total.epsilon),
                            step=0.5, key="ledger_reset_total")
            st.text_input("Reason (recorded)", key="ledger_reset_reason")
            st.checkbox("I understand this voids the privacy guarantee for this data", key="ledger_reset_confirm")
            st.form_submit_button("Reset the budget", on_click=ui.reset_budget)
