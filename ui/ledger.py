"""The session's view of the persistent ledger (core.ledger_store): the current dataset's budget, and charges.

The ledger is keyed by the dataset's fingerprint (core.fingerprint), so every tab, session and
server restart sees the same spent budget for the same counts. A derived dataset (rescaled,
coarsened) is charged to the ledger of the dataset it came from. ``st.session_state.ledger`` keeps
the last value read, for display and tests; the store is the truth.
"""

from __future__ import annotations

import streamlit as st

from core.budget import Budget, BudgetExceededError, Ledger
from core.ledger_store import LedgerStore
from ui.datasets import RESCALED_REFUSAL, histogram, is_rescaled, ledger_key
from ui.state import init_state


def ledger() -> Ledger:
    """The current dataset's ledger, read from the store (also kept in ``st.session_state.ledger``)."""
    init_state()
    try:
        led = LedgerStore().ledger(ledger_key())
    except ValueError as err:  # the store cannot be opened: show it, refuse every spend
        st.session_state.flash_error = str(err)
        led = Ledger(Budget(0.0))
    st.session_state.ledger = led
    return led


def set_total(epsilon: float, delta: float = 0.0) -> bool:
    """Record the current dataset's total (refused after its first spend); False + flash error when refused."""
    try:
        st.session_state.ledger = LedgerStore().set_total(ledger_key(), Budget(float(epsilon), float(delta)),
                                                          name=histogram().name,
                                                          workspace=st.session_state.get("workspace_id"))
    except ValueError as err:
        ledger()  # show what the store holds (another tab may have spent)
        st.session_state.flash_error = f"Total budget not changed: {err}"
        return False
    return True


def charge(label: str, epsilon: float, *, mechanism: str | None = None, workload: str | None = None,
           export_id: str | None = None, note: str | None = None, delta: float = 0.0,
           rho: float | None = None) -> bool:
    """Spend ``epsilon`` on the dataset's ledger (only from a button callback). False + flash error when refused.

    One ``BEGIN IMMEDIATE`` transaction checks and records the spend, so two tabs (or the CLI)
    charging the same data at once never overspend.
    """
    init_state()
    if str(st.session_state.get("dataset_key", "")).startswith("released:"):  # post-processing: free
        st.session_state.release_counter += 1
        return True
    if is_rescaled():
        st.session_state.flash_error = f"Nothing released, no budget spent. {RESCALED_REFUSAL}"
        return False
    try:
        st.session_state.ledger = LedgerStore().spend(
            ledger_key(), label, Budget(float(epsilon), float(delta)), mechanism=mechanism or label.rpartition(": ")[2],
            workload=workload, export_id=export_id, rho=rho, workspace=st.session_state.get("workspace_id"),
            name=histogram().name, note=note)
    except (BudgetExceededError, ValueError) as err:
        ledger()
        st.session_state.flash_error = str(err)
        return False
    st.session_state.release_counter += 1
    return True


def reset_budget() -> None:
    """Ledger page form callback: a recorded reset of the current dataset's budget, only when confirmed."""
    ss = st.session_state
    if not ss.get("ledger_reset_confirm"):
        ss.flash_error = "Budget not reset: tick the box confirming that a reset voids the privacy guarantee."
        return
    try:
        ss.ledger = LedgerStore().reset(ledger_key(), Budget(float(ss.ledger_reset_total)),
                                        reason=ss.get("ledger_reset_reason", ""), workspace=ss.get("workspace_id"))
    except ValueError as err:
        ss.flash_error = f"Budget not reset: {err}"
        return
    ss.ledger_notice = f"Fresh budget ε = {ss.ledger.total.epsilon:g} recorded. The earlier releases still count."


def native_caption() -> str:
    """Spend in the session definition's own unit (ρ for zCDP, with its CKS ε at δ), next to what the ledger charges.

    The ledger enforces basic composition of (ε, δ) (always valid); under zCDP the tighter Σρ view is shown too.
    """
    from core.privacy import native_spend
    from ui.privacy import definition, delta

    if definition() == "pure":
        return ""
    try:
        history = LedgerStore().history(ledger_key())
    except ValueError:
        return ""
    led = st.session_state.ledger
    epoch = max((e["epoch"] for e in history), default=0)
    rows = [(float(e["epsilon"]), float(e["delta"] or 0.0), None if e["rho"] is None else float(e["rho"]))
            for e in history if e["kind"] == "spend" and e["epoch"] == epoch]
    view = native_spend(rows, definition(), delta(), led.total.epsilon)
    if definition() == "approx":
        return (f"(ε, δ) spent: ε = {view['spent']:.4g}, δ = {view['spent_delta']:.3g} of total δ = "
                f"{led.total.delta:.3g} (basic composition).")
    if view["spent"] is None:
        return f"ρ spent: not defined ({view['note']})."
    return (f"ρ spent = {view['spent']:.4g} of ρ = {view['total']:.4g} (ε = {led.total.epsilon:g} at δ = "
            f"{delta():g}); equivalent ε = {view['epsilon_at_delta']:.4g} at δ = {delta():g} by CKS, against "
            f"ε = {view['basic_epsilon']:.4g} by basic composition (the ledger's check).")
