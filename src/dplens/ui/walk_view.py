"""The Gradual release page's real walk: drawn on the secure path, each step released through the kernel and charged
its increment (``dplens.core.release.kernel.start_walk`` / ``release_walk_step``)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dplens.core.privacy.budget import BudgetExceededError
from dplens.core.privacy.definitions import ZCDP, PureDP, privacy_words
from dplens.core.release.kernel import (
    export_walk_step,
    release_walk_step,
    start_walk,
    walk_costs,
    walk_step_charge,
)
from dplens.core.release.walk_store import Walk, WalkStore
from dplens.ui.datasets import BINS_FROM_DATA_REFUSAL, bins_from_data, histogram, is_rescaled, ledger_key, released_data
from dplens.ui.definition import definition
from dplens.ui.ledger import default_total, delta, ledger, ledger_store, remaining_text

REAL_WALK_NOTE = ("A real walk: every step is drawn now on the secure path (OpenDP's exact discrete Laplace) and "
                  "kept in your store; each **Release step** publishes the next one and charges only its increment, "
                  "so the steps released so far cost the last one's ε, never their sum. Steps not yet released never "
                  "leave the store.")


def _walk_store() -> WalkStore:
    store = ledger_store()
    return WalkStore(store.path, store.owner)


def _unit() -> str:
    return "ρ" if definition() == "zcdp" else "ε"


def start_real_walk() -> None:
    """Button callback: draw a walk for the current dataset at the typed schedule; nothing is charged."""
    ss, hist = st.session_state, histogram()
    if released_data() is not None or is_rescaled():
        ss.flash_error = "No walk started: a walk releases private counts; this dataset is already released or derived."
        return
    if bins_from_data():  # a walk releases the counts' shape at every step: it must not come from the private data
        ss.flash_error = f"No walk started: {BINS_FROM_DATA_REFUSAL}"
        return
    try:
        values = [float(v) for v in str(ss.get("real_walk_schedule", "")).split(",") if v.strip()]
        kind = ZCDP if definition() == "zcdp" else PureDP
        walk = start_walk(hist.counts, [kind(v) for v in values], store=ledger_store(), fingerprint=ledger_key(),
                          name=hist.name, default_total=default_total())
    except (ValueError, BudgetExceededError) as err:
        ss.flash_error = f"No walk started: {err}"
        return
    ss.real_walk_id = walk.id


def release_real_step(walk_id: str) -> None:
    """Button callback: release and charge the next step; its export is kept for download in this session."""
    ss = st.session_state
    try:
        step = release_walk_step(walk_id, store=ledger_store(), delta=delta(), where="Gradual release page")
    except (ValueError, BudgetExceededError) as err:
        ss.flash_error = f"Step not released: {err}"
        return
    ss.ledger = step.published.ledger
    ss.setdefault("real_walk_exports", {})[(walk_id, step.step)] = {
        fmt: export_walk_step(step, fmt=fmt, dataset=step.walk.name) for fmt in ("json", "csv")}


def abandon_real_walk(walk_id: str) -> None:
    """Button callback: stop the walk for good (recorded with the typed reason; its unreleased steps are wiped)."""
    ss = st.session_state
    try:
        _walk_store().abandon(walk_id, str(ss.get("real_walk_reason", "")))
    except ValueError as err:
        ss.flash_error = f"Walk not abandoned: {err}"


def real_walk_tab() -> None:
    """Start a real walk on the current dataset, release its steps one by one, download each step."""
    st.caption(REAL_WALK_NOTE)
    walks = _walk_store().walks(ledger_key())
    active = [w for w in walks if w.status == "active" and w.released < w.steps]
    if not active:
        st.text_input(f"{_unit()} schedule of the real walk (strictly increasing, most private first)", "0.1, 0.5, 1",
                      key="real_walk_schedule", help="Laplace noise on each bin (identity) at each step's ε"
                      + (", ε = √(2ρ)" if _unit() == "ρ" else "") + "; the last step must fit the budget now.")
        st.button("Start a real walk (charges nothing yet)", key="real_walk_start", on_click=start_real_walk,
                  type="primary")
    for walk in active:
        _walk_controls(walk)
    if walks:
        st.dataframe(_walks_table(walks), hide_index=True, key="real_walk_table")
    mine = {w.id for w in walks}
    for (walk_id, number), files in sorted(st.session_state.get("real_walk_exports", {}).items()):
        if walk_id in mine:  # the steps released in this session, as `dplens gradual next` writes them
            st.download_button(f"Walk {walk_id}, step {number} (JSON)", files["json"],
                               f"dplens-walk-{walk_id}-step-{number}.json", "application/json",
                               key=f"real_walk_json_{walk_id}_{number}", on_click="ignore")
    st.caption(f"This dataset's budget: remaining {remaining_text(ledger())}.")


def _walk_controls(walk: Walk) -> None:
    step, costs = walk.released + 1, walk_costs(walk)
    charge = walk_step_charge(walk, step, delta())
    so_far = privacy_words(costs[walk.released - 1], delta()) if walk.released else "nothing"
    cols = st.columns(3)
    cols[0].metric("Steps released", f"{walk.released} of {walk.steps}")
    cols[1].metric("Spent by this walk", so_far)
    cols[2].metric("Next step", privacy_words(costs[step - 1], delta()),
                   help=f"Charges the increment: ε {charge.epsilon:.4g}, ρ {charge.rho or 0:.4g} (the walk up to "
                        "it costs its own value, never the sum).")
    left, right = st.columns([2, 3])
    left.button(f"Release step {step} of {walk.steps}", key=f"real_walk_next_{walk.id}", type="primary",
                on_click=release_real_step, args=(walk.id,))
    with right.popover("Abandon this walk"):
        st.text_input("Reason (recorded)", key="real_walk_reason")
        st.button("Abandon", key=f"real_walk_abandon_{walk.id}", on_click=abandon_real_walk, args=(walk.id,))


def _walks_table(walks: list[Walk]) -> pd.DataFrame:
    rows = [{"Walk": w.id, "State": w.state,
             "Schedule": ", ".join(f"{v:g}" for v in w.schedule) + (" (ρ)" if w.definition == "zcdp" else " (ε)"),
             "Steps released": f"{w.released} of {w.steps}",
             "Spent in all": privacy_words(walk_costs(w)[w.released - 1], delta()) if w.released else "nothing",
             "Note": w.note or ""} for w in walks]
    return pd.DataFrame(rows, columns=["Walk", "State", "Schedule", "Steps released", "Spent in all", "Note"])

