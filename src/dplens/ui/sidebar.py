"""The shared sidebar: dataset, seed, total budget (fixed after the first spend), remaining budget."""

from __future__ import annotations

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from dplens.core.mechanisms import NEIGHBOURING
from dplens.core.privacy.budget import Budget
from dplens.ui.datasets import ALREADY_PRIVATE, dataset_choices, released_data
from dplens.ui.definition import definition
from dplens.ui.guard import plain
from dplens.ui.identity import current_curator, local_mode
from dplens.ui.ledger import (
    delta,
    ledger,
    ledger_key,
    ledger_store,
    native_caption,
    remaining_text,
    set_total,
)
from dplens.ui.privacy import privacy_controls
from dplens.ui.state import init_state
from dplens.ui.workloads import workload_name


def _set_total_budget() -> None:
    """Sidebar callback: record the dataset's total; the store refuses it after the first spend
    (an edit and a release can arrive in the same round trip, or from another tab)."""
    ss = st.session_state
    if ss.get("sidebar_total_unit") == "ρ":  # a ρ-zCDP total, shown as ε at the session's δ
        set_total(0.0, delta(), rho=float(ss.get("sidebar_total_rho", 0.5)))
    else:
        set_total(float(ss.sidebar_total_epsilon), float(ss.get("sidebar_total_delta", 0.0)))


def _rho_total_controls(led, shown, locked: bool) -> bool:
    """The total's unit (ε or ρ, offered under zCDP or for a ρ ledger) and the ρ input; True for a ρ total."""
    if definition() != "zcdp" and led.unit != "rho":
        return False
    ss = st.session_state
    if locked or ss.get("sidebar_total_unit_shown") != shown:
        ss.sidebar_total_unit = "ρ" if led.unit == "rho" else "ε"
        if led.unit == "rho":
            ss.sidebar_total_rho = min(max(float(led.total.rho), 1e-4), 100.0)
        ss.sidebar_total_unit_shown = shown
    st.radio("Total budget unit", ["ε", "ρ"], horizontal=True, key="sidebar_total_unit", disabled=locked,
             on_change=_set_total_budget,
             help="ρ: the ledger composes zCDP exactly (Σρ; pure ε spends count ε²/2) and refuses (ε, δ) releases "
                  "with δ > 0. ε: basic composition of (ε, δ). Fixed after the first release.")
    if ss.sidebar_total_unit != "ρ":
        return False
    ss.setdefault("sidebar_total_rho", 0.5)
    st.number_input("Total budget ρ", min_value=1e-4, max_value=100.0, step=0.05, format="%.4g",
                    key="sidebar_total_rho", disabled=locked, on_change=_set_total_budget,
                    help=f"This dataset's total in zCDP, shown as its CKS ε at δ = {delta():g} (the δ above, "
                         "recorded with the total).")
    return True


def _convert_total() -> None:
    """Form callback: convert a pure ε total with releases to the definition's compatible total (recorded)."""
    ss = st.session_state
    led = ledger()
    total = (Budget.zcdp(led.total.epsilon ** 2 / 2, delta()) if definition() == "zcdp"
             else Budget(led.total.epsilon, float(ss.sidebar_convert_delta)))
    try:
        ss.ledger = ledger_store().convert_total(ledger_key(), total, reason=str(ss.get("sidebar_convert_reason", "")),
                                                 workspace=ss.get("workspace_id"))
    except ValueError as err:  # BudgetExceededError too: nothing recorded
        ss.flash_error = f"Budget not converted: {err}"


def _conversion_offer(led) -> None:
    """A pure ε total with releases cannot pay for (ε, δ) or zCDP releases: offer the compatible total instead of
    a dead end (a ρ total counting each ε as ε²/2, or a δ budget beside the same ε)."""
    if definition() == "pure" or led.unit != "epsilon" or led.total.delta > 0 or not led.spends:
        return
    zcdp = definition() == "zcdp"
    with st.expander("Use this definition on this dataset", expanded=True):
        if zcdp:
            spent = sum(cost.epsilon ** 2 / 2 for _, cost in led.spends)
            st.caption(f"This dataset's total is pure ε = {led.total.epsilon:g}, which cannot pay for zCDP releases. "
                       f"Convert it to ρ = ε²/2 = {led.total.epsilon ** 2 / 2:.4g}: the {len(led.spends)} release(s) "
                       f"made so far count ε²/2 each (ρ = {spent:.4g}). The guarantee becomes ρ-zCDP, weaker "
                       "than pure ε-DP, so the reason is recorded.")
        else:
            st.caption(f"This dataset's total is pure ε = {led.total.epsilon:g} with δ = 0, which cannot pay for "
                       "(ε, δ) releases. Add a δ budget beside the same ε: the releases made so far are kept. The "
                       "guarantee becomes (ε, δ)-DP, weaker than pure ε-DP, so the reason is recorded.")
            st.select_slider("Total δ for this dataset", [1e-9, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4], value=1e-5,
                             format_func="{:g}".format, key="sidebar_convert_delta")
        st.text_input("Reason (recorded)", key="sidebar_convert_reason")
        st.button("Convert the budget", key="sidebar_convert", on_click=_convert_total)


_TABLES_PAGE = "pages/tables.py"
_TABLES_BUDGET_NOTE = ("**Budget**: a table of records has its own budget, shown on this page in its own unit. "
                      "The budget of the histogram dataset chosen above is on the other pages.")


def _on_page(path: str) -> bool:
    """Whether the page about to run is ``path`` (``st.navigation`` resolves it before the sidebar is drawn)."""
    ctx = get_script_run_ctx()
    if ctx is None:  # bare mode: no page
        return False
    try:
        info = ctx.pages_manager.get_pages().get(ctx.pages_manager.current_page_script_hash)
    except AttributeError:  # a Streamlit without this pages manager: the budget is shown as on any page
        return False
    return info is not None and str(info.get("script_path", "")).replace("\\", "/").endswith(path)


def sidebar() -> None:
    """Shared sidebar: dataset, seed, total budget (fixed after the first spend), remaining budget."""
    init_state()
    with st.sidebar:
        choices = dataset_choices()
        keys = list(choices)
        current = st.session_state.dataset_key
        if current in keys:  # keep the widget in step when a page (upload, config) changes the dataset
            st.session_state.sidebar_dataset = current
        st.selectbox("Dataset", keys,
                     format_func=lambda k: choices[k], key="sidebar_dataset",
                     on_change=lambda: st.session_state.update(dataset_key=st.session_state.sidebar_dataset),
                     help="Built-in samples, DPBench histograms (when present) and your uploads.")
        st.number_input("Seed", min_value=0, max_value=2**31 - 1, step=1, key="seed",
                        help="Seeds the exploration noise; change it to see different noise.")
        privacy_controls()
        if _on_page(_TABLES_PAGE):  # the table has its own ledger and budget, shown on the page in its unit
            st.caption(_TABLES_BUDGET_NOTE)
        elif released_data() is None:
            _budget()
        else:  # a loaded export has no budget: nothing computed from it alone is charged
            st.caption(f"**{ALREADY_PRIVATE}** This dataset is a loaded release, so it has no budget.")
        st.caption(f"Workload: `{workload_name()}`  \nNeighbours: {NEIGHBOURING}")
        if not local_mode():  # shared server: who is signed in (ledgers and workspaces are theirs alone)
            st.caption(f"Signed in as {plain(current_curator())}")
            st.button("Sign out", on_click=st.logout, key="sidebar_sign_out")


def _budget() -> None:
    """The dataset's total budget (fixed after the first spend), what remains, and a conversion when needed."""
    led = ledger()
    locked = bool(led.spends)
    shown = (ledger_key(), led.total.epsilon)
    if locked or st.session_state.get("sidebar_total_shown") != shown:  # another dataset, tab or reset changed it
        st.session_state.sidebar_total_epsilon = min(max(float(led.total.epsilon), 0.01), 100.0)
        st.session_state.sidebar_total_shown = shown
    rho_total = _rho_total_controls(led, shown, locked)
    st.number_input("Total budget ε", min_value=0.01, max_value=100.0,
                    step=0.5, key="sidebar_total_epsilon", disabled=locked or rho_total,
                    on_change=_set_total_budget,
                    help="This dataset's total, kept in the ledger across tabs, sessions and restarts; "
                         "fixed after its first release (the Ledger page records any reset). For a ρ total: "
                         "its ε at δ.")
    if not rho_total and (definition() != "pure" or led.total.delta > 0):  # Gaussian releases charge δ
        if locked or st.session_state.get("sidebar_total_delta_shown") != shown:
            st.session_state.sidebar_total_delta = float(led.total.delta)
            st.session_state.sidebar_total_delta_shown = shown
        st.select_slider("Total budget δ", [0.0, 1e-9, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4], key="sidebar_total_delta",
                         format_func="{:g}".format, disabled=locked, on_change=_set_total_budget,
                         help="The δ the ledger may spend in total; under (ε, δ) each release gets a tenth of "
                              "it. Fixed after the first release.")
        if definition() == "approx" and led.total.delta > 0:
            st.caption(f"Each (ε, δ) release: δ = {delta():g} (a tenth of the total).")
    spent = (f"ρ = {led.spent.rho:.4g} of {led.total.rho:.4g}" if led.unit == "rho"
             else f"ε = {led.spent.epsilon:.4g} of {led.total.epsilon:.4g}")
    st.metric("Budget remaining", remaining_text(led), help=f"Spent {spent} in {len(led.spends)} release(s).")
    _conversion_offer(led)
    if (native := native_caption()):
        st.caption(native)
