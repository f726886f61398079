"""The session's privacy definition and the sidebar's δ: plain session reads.

Below ``ledger`` (a new dataset's default total is in the definition's unit) and ``privacy`` (the sidebar's
controls), so that both read them without importing each other.
"""

from __future__ import annotations

import streamlit as st

from dplens.core.privacy.definitions import DEFINITIONS


def definition() -> str:
    """The chosen definition ("pure", "approx", "zcdp"); pure by default.

    The sidebar's radio holds it; ``definition_kept`` (a plain key the radio and the ledger-following step write)
    keeps it while no sidebar is drawn, as when a page runs on its own.
    """
    ss = st.session_state
    value = ss.get("privacy_definition", ss.get("definition_kept", "pure"))
    return value if value in DEFINITIONS else "pure"


def session_delta() -> float:
    """The sidebar's δ control: zCDP's point of conversion to (ε, δ); under (ε, δ) only a new dataset's default."""
    return float(st.session_state.get("privacy_delta", 1e-6))
