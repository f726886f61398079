"""The session's view of the persistent ledger (dplens.core.privacy.ledger_store): the current dataset's budget, and
charges.

The ledger is keyed by the dataset's fingerprint (dplens.core.data.fingerprint), so every tab, session and
server restart sees the same spent budget for the same counts. Ledgers belong to the curator
(``ui.identity``): ``ledger_store()`` reads and charges only the signed-in curator's. A derived dataset (rescaled,
coarsened) is charged to the ledger of the dataset it came from. ``st.session_state.ledger`` keeps
the last value read, for display and tests; the store is the truth.
The δ of one release (``delta``) lives here too: under (ε, δ) it is a share of the ledger's total δ.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dplens.core.data.signing import read_public_key
from dplens.core.privacy.budget import Budget, Ledger, native_spend
from dplens.core.privacy.definitions import ZCDP, Privacy, privacy_words, target, zcdp_rho
from dplens.core.privacy.ledger_store import (
    DEFAULT_DELTA_RELEASES,
    LedgerStore,
    default_total_for,
    total_label,
)
from dplens.ui.datasets import histogram, ledger_key
from dplens.ui.definition import definition, session_delta
from dplens.ui.identity import current_curator
from dplens.ui.state import init_state


def ledger_store() -> LedgerStore:
    """The current curator's ledgers (``dplens.ui.identity.current_curator``): what every page reads and charges."""
    return LedgerStore(owner=current_curator())


def default_total() -> Budget:
    """The current dataset's total until the curator records one, in the unit of the sidebar's definition."""
    return default_total_for(definition(), session_delta())


def ledger() -> Ledger:
    """The current dataset's ledger, read from the store (also kept in ``st.session_state.ledger``)."""
    init_state()
    try:
        led = ledger_store().ledger(ledger_key(), default_total=default_total())
    except ValueError as err:  # the store cannot be opened: show it, refuse every spend
        st.session_state.flash_error = str(err)
        led = Ledger(Budget(0.0))
    st.session_state.ledger = led
    return led


def delta() -> float:
    """The δ of one release (where (ε, δ) and zCDP are read as "ε at δ").

    Under (ε, δ) there is one δ control, the dataset's total δ, and each release gets
    ``1/DEFAULT_DELTA_RELEASES`` of it (a total with no δ falls back to the sidebar's δ, and its releases are
    refused with a message); under zCDP it is the sidebar's δ.
    """
    if definition() == "approx":
        total = ledger().total.delta
        if total > 0:
            return total / DEFAULT_DELTA_RELEASES
    return session_delta()


def point_privacy(epsilon: float) -> Privacy:
    """The privacy value a page's ε point means under the session's definition: pure ε, ε at ``delta()``, or the ρ
    whose ε at ``delta()`` it is (zCDP pages plot and hand on ε at δ; people read the ρ)."""
    if definition() == "zcdp":
        return ZCDP(zcdp_rho(float(epsilon), delta()))
    return target(definition(), float(epsilon), delta())


def point_words(epsilon: float) -> str:
    """``point_privacy`` for people: ``ε = 0.5``, ``ε = 1 at δ = 1e-06`` or ``ρ = 0.02436 (ε 1 at δ 1e-06)``."""
    return privacy_words(point_privacy(epsilon), delta())


def point_unit() -> str:
    """The symbol a page's privacy figures are in: ρ under zCDP, else ε."""
    return "ρ" if definition() == "zcdp" else "ε"


def native_history(history: list[dict], led: Ledger) -> pd.DataFrame:
    """The ledger's history in its own unit: a ρ ledger shows ρ (ε and δ are in the CSV), an ε ledger ε (and δ
    only when it has a δ budget); one unit per table."""
    frame = pd.DataFrame(history)
    if frame.empty:
        return frame
    hidden = ["epsilon", "delta"] if led.unit == "rho" else ["rho"] + (
        ["delta"] if led.total.delta == 0 and not frame["delta"].fillna(0).any() else [])
    shown = [c for c in HISTORY_COLUMNS if c in frame and c not in hidden]
    return frame[shown].rename(columns=HISTORY_COLUMNS)


# The ledger history's columns for people, in this order; the store's bookkeeping (row id, epoch, fingerprint,
# workspace) stays in the CSV download.
HISTORY_COLUMNS = {"time": "Time", "kind": "Event", "label": "Release", "mechanism": "Mechanism", "epsilon": "ε",
                   "delta": "δ", "rho": "ρ", "workload": "Workload", "export_id": "Export", "note": "Note"}


DATASET_COLUMNS = {"owner": "Curator", "name": "Dataset", "fingerprint": "Fingerprint", "unit": "Unit",
                   "total": "Total", "spent": "Spent", "remaining": "Remaining", "delta": "δ",
                   "spends": "Releases", "epoch": "Budget epoch"}


def datasets_table(rows: list[dict]) -> pd.DataFrame:
    """The store's dataset summaries for people: each row's total, spent and remaining in its own unit (ρ or ε,
    named in the Unit column; spent + remaining = total), headed in words, not the store's column names."""
    frame = pd.DataFrame(rows)
    return frame[[c for c in DATASET_COLUMNS if c in frame]].rename(columns=DATASET_COLUMNS)


def set_total(epsilon: float, delta: float = 0.0, *, rho: float | None = None) -> bool:
    """Record the current dataset's total (refused after its first spend); False + flash error when refused.

    With ``rho`` the total is a ρ-zCDP budget (``Budget.zcdp(rho, delta)``: shown as ε at ``delta``) and
    ``epsilon`` is ignored.
    """
    try:
        total = Budget.zcdp(float(rho), float(delta)) if rho is not None else Budget(float(epsilon), float(delta))
        st.session_state.ledger = ledger_store().set_total(ledger_key(), total, name=histogram().name,
                                                          workspace=st.session_state.get("workspace_id"))
    except ValueError as err:
        ledger()  # show what the store holds (another tab may have spent)
        st.session_state.flash_error = f"Total budget not changed: {err}"
        return False
    return True


def remaining_text(led: Ledger) -> str:
    """What remains in the ledger's native unit: ``ε = 0.5`` or ``ρ = 0.1 (ε = 2.142 at δ = 1e-06)``."""
    left = led.remaining
    if led.unit == "rho":
        return f"ρ = {left.rho:.4g} (ε = {left.epsilon:.4g} at δ = {led.total.delta:g})"
    return f"ε = {left.epsilon:.4g}"


def reset_budget() -> None:
    """Ledger page form callback: a recorded reset of the current dataset's budget, only when confirmed."""
    ss = st.session_state
    if not ss.get("ledger_reset_confirm"):
        ss.flash_error = "Budget not reset: tick the box confirming that a reset voids the privacy guarantee."
        return
    try:
        total = (Budget.zcdp(float(ss.ledger_reset_total), delta()) if ss.get("ledger_reset_unit") == "ρ"
                 else Budget(float(ss.ledger_reset_total)))
        ss.ledger = ledger_store().reset(ledger_key(), total, reason=ss.get("ledger_reset_reason", ""),
                                         workspace=ss.get("workspace_id"))
    except ValueError as err:
        ss.flash_error = f"Budget not reset: {err}"
        return
    ss.ledger_notice = (f"Fresh budget {total_label(ss.ledger.total)} recorded. The earlier releases still count.")


def trusted_keys_table(store: LedgerStore) -> pd.DataFrame:
    """The curator's trusted keys (other installations whose signed exports count as already private)."""
    return pd.DataFrame([{"name": k["name"], "key id": k["key_id"], "reason": k["reason"], "added": k["added"]}
                         for k in store.trusted_keys()], columns=["name", "key id", "reason", "added"])


def trust_key() -> None:
    """Ledger page form callback: trust the uploaded public key (PEM) for this curator, with a name and a reason."""
    ss = st.session_state
    upload = ss.get("ledger_trust_file")
    if upload is None:
        ss.flash_error = "Key not trusted: upload the other installation's public key (PEM) first."
        return
    try:
        kid = ledger_store().trust_key(read_public_key(upload.getvalue()), name=ss.get("ledger_trust_name", ""),
                                       reason=ss.get("ledger_trust_reason", ""))
    except ValueError as err:
        ss.flash_error = f"Key not trusted: {err}"
        return
    ss.ledger_notice = (f"Trusted key {kid}: exports it signs now load as already private (charged nothing) for "
                        "you alone.")


def untrust_key() -> None:
    """Ledger page callback: stop trusting the chosen key (exports it signed are then raw data again)."""
    ss = st.session_state
    kid = ss.get("ledger_untrust_key")
    if kid and ledger_store().untrust_key(kid):
        ss.ledger_notice = f"Key {kid} is no longer trusted: exports it signed now load as raw data."


def native_caption() -> str:
    """Spend in the session definition's own unit (ρ for zCDP, with its CKS ε at δ), next to what the ledger charges.

    A ρ total is composed in ρ by the ledger itself. An (ε, δ) total enforces basic composition of (ε, δ)
    (always valid); under zCDP the tighter Σρ view is shown too.
    """
    led = st.session_state.ledger
    if led.unit == "rho":  # a ρ total: the ledger itself composes Σρ (exact); ε is its CKS conversion
        return (f"ρ-zCDP budget: spent ρ = {led.spent.rho:.4g} of ρ = {led.total.rho:.4g} (Σρ; a pure ε spend counts "
                f"ε²/2); remaining ρ = {led.remaining.rho:.4g}, i.e. ε = {led.remaining.epsilon:.4g} at δ = "
                f"{led.total.delta:g} (CKS 2020). (ε, δ) releases with δ > 0 are refused: they imply no ρ.")
    if definition() == "pure":
        return ""
    try:
        history = ledger_store().history(ledger_key())
    except ValueError:
        return ""
    epoch = max((e["epoch"] for e in history), default=0)
    rows = [Budget(float(e["epsilon"]), float(e["delta"] or 0.0), None if e["rho"] is None else float(e["rho"]))
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
