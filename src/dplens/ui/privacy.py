"""The sidebar's privacy controls (definition, δ) and the ε axis they set (``session_axis``).

The definition and δ themselves are read by ``ui.definition`` and ``ui.ledger.delta``."""

from __future__ import annotations

import streamlit as st

from dplens.core.privacy.definitions import EpsilonAxis, delta_warning
from dplens.core.privacy.noise import noise_kind
from dplens.core.registry import histogram_mechanisms
from dplens.ui.datasets import histogram, ledger_key
from dplens.ui.definition import definition, session_delta
from dplens.ui.ledger import delta, ledger, ledger_store

DEFINITION_LABELS = {"pure": "pure ε-DP", "approx": "(ε, δ)-DP", "zcdp": "ρ-zCDP"}


def available(names=None) -> list[str]:
    """The pickers' options (Compare, Release, Choose ε): registered histogram mechanisms (dplens.core.registry)
    usable under the definition; Gaussian mechanisms need (ε, δ) or zCDP."""
    mechanisms = histogram_mechanisms()
    names = list(mechanisms) if names is None else list(names)
    if definition() == "pure":
        return [n for n in names if noise_kind(mechanisms[n]) == "laplace"]
    return names


def session_axis() -> EpsilonAxis:
    """What a point ε on Compare's and Choose ε's axes means: "ε at δ" under the session's definition, so every
    mechanism there runs at one privacy value (``EpsilonAxis.privacy``)."""
    return EpsilonAxis(definition(), delta())


def ledger_definition() -> str | None:
    """"zcdp" when the current dataset's recorded ledger is a ρ total (its unit is ρ), else None: an ε ledger
    pays for pure, (ε, δ) and zCDP releases alike (or offers its conversion), so the curator's choice stands."""
    if not ledger_store().recorded(ledger_key()):
        return None
    return "zcdp" if ledger().total.rho is not None else None


def follow_the_ledger() -> None:
    """On arriving at a dataset (each new ledger key) whose ledger is kept in ρ, take zCDP, so that forms, charts
    and captions speak ρ; the curator may still change it afterwards."""
    ss = st.session_state
    if ss.get("definition_follows") == ledger_key():
        return
    ss.definition_follows = ledger_key()
    if (kept := ledger_definition()) is not None:
        ss.privacy_definition = ss.definition_kept = kept


def privacy_controls() -> None:
    """Sidebar widgets: the definition and δ (δ only when it matters); the definition follows the dataset's ledger."""
    follow_the_ledger()
    st.radio("Privacy definition", list(DEFINITION_LABELS), format_func=DEFINITION_LABELS.get, horizontal=True,
             key="privacy_definition",
             on_change=lambda: st.session_state.update(definition_kept=st.session_state.privacy_definition),
             help="Pure ε-DP uses Laplace noise and never fails. (ε, δ)-DP (analytic Gaussian) may fail outright "
                  "with probability δ. ρ-zCDP (Gaussian) composes tightly and is shown as ε at δ.")
    if definition() == "zcdp":  # the one δ: where ρ is read as (ε, δ); under (ε, δ) the total's δ is the control
        st.select_slider("δ", [1e-12, 1e-10, 1e-9, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4], value=session_delta(),
                         format_func="{:g}".format, key="privacy_delta",
                         help="Where ρ is shown as (ε, δ). Keep δ well below 1/n (n = records): δ ≥ 1/n would "
                              "allow publishing a record.")
    if definition() != "pure":
        warning = delta_warning(delta(), int(round(histogram().total)))
        if warning:
            st.warning(warning)
