"""The chosen ε handed from Choose epsilon to Release and Gradual release (no retyping).

The choice lives in a plain session key (``epsilon_handoff``), not in the target pages' widget keys:
widget state is dropped while its page is not shown. Each target page applies a new hand-off once,
before its widgets render, and shows where the value came from.
"""

from __future__ import annotations

import streamlit as st

from dplens.ui.ledger import ledger, point_unit, point_words, remaining_text
from dplens.ui.state import init_state
from dplens.ui.tuning import tuned_on
from dplens.ui.workloads import workload_spec

_TARGET_PAGES = ("release", "gradual")


def use_epsilon(epsilon: float, *, mechanism: str | None, target: str, workload: str) -> None:
    """Button callback on Choose epsilon: remember the choice for Release and Gradual release."""
    init_state()
    ss = st.session_state
    ss.epsilon_handoff = {"epsilon": float(epsilon), "mechanism": mechanism, "target": target, "workload": workload,
                          "pending": set(_TARGET_PAGES), "dataset": ss.get("dataset_key"),
                          "releases": len(ss.get("releases", [])), "tuned_on": tuned_on()}
    st.toast(handed_on(ss.epsilon_handoff), icon=":material/check:")


def handed_on(handoff: dict) -> str:
    """What "Use this ε" handed on, and where, in words."""
    mechanism = f" and the mechanism {handoff['mechanism']}" if handoff["mechanism"] else ""
    return (f"Handed on {point_words(handoff['epsilon'])}{mechanism} to Release (its {point_unit()}"
            f"{' and mechanism' if mechanism else ''}) and Gradual release (a schedule ending at it). "
            "Nothing is spent until you release.")


def release_tuned_on() -> str:
    """What the release about to be made was tuned on: the live hand-off's source, else the session's source."""
    handoff = st.session_state.get("epsilon_handoff")
    return handoff["tuned_on"] if handoff and "tuned_on" in handoff else tuned_on()


def _stale(handoff: dict, page: str) -> bool:
    """A choice made for other inputs says nothing now: the dataset or workload changed, a release was made since
    (the remaining budget moved), or the Release page's mechanism is no longer the one it was chosen for."""
    ss = st.session_state
    moved = (handoff.get("dataset") != ss.get("dataset_key") or handoff["workload"] != workload_spec()
             or len(ss.get("releases", [])) > handoff.get("releases", 0))
    return moved or (page == "release" and bool(handoff["mechanism"])
                     and ss.get("release_mechanism") != handoff["mechanism"])


def _schedule_ending_at(epsilon: float, steps: int = 5) -> str:
    """A noise-reduction schedule ending at ``epsilon``: halving steps back from it (most private first).

    >>> _schedule_ending_at(1.0)
    '0.0625, 0.125, 0.25, 0.5, 1'
    """
    return ", ".join(f"{epsilon / 2 ** (steps - 1 - k):.4g}" for k in range(steps))


def apply_handoff(page: str) -> dict | None:
    """On ``page`` ("release" or "gradual"): set its widgets from a new hand-off once; return the hand-off.

    Call before the page's widgets render. Returns the latest hand-off (to show its origin), or None.
    """
    init_state()
    handoff = st.session_state.get("epsilon_handoff")
    if not handoff:
        return None
    if page in handoff["pending"]:
        handoff["pending"].discard(page)
        if page == "release":
            st.session_state.release_epsilon = handoff["epsilon"]
            if handoff["mechanism"]:
                st.session_state.release_mechanism = handoff["mechanism"]
        else:
            st.session_state.gradual_schedule = _schedule_ending_at(handoff["epsilon"])
    return handoff


def show_handoff(handoff: dict | None, page: str = "release") -> None:
    """A caption naming the chosen ε and its target, and a warning when it exceeds the remaining budget; nothing
    once the choice is stale (then it is forgotten)."""
    if not handoff:
        return
    if _stale(handoff, page):
        st.session_state.epsilon_handoff = None
        return
    mechanism = f" for **{handoff['mechanism']}**" if handoff["mechanism"] else ""
    st.caption(f"From Choose epsilon: {point_words(handoff['epsilon'])}{mechanism} on workload "
               f"`{handoff['workload']}` ({handoff['target']}), "
               f"tuned on {handoff.get('tuned_on', 'the private data')}.")
    budget_warning(handoff["epsilon"])


def budget_warning(epsilon: float) -> None:
    """Warn (never block) when ``epsilon`` is more than the session has left to spend."""
    led = ledger()
    if epsilon > led.remaining.epsilon + 1e-12:
        st.warning(f"{point_words(epsilon)} is more than the remaining budget ({remaining_text(led)}): a release "
                   "at this value would be refused. Relax the target, or spend less elsewhere.")


def use_button(epsilon: float, *, mechanism: str | None, target: str, workload: str, key: str) -> None:
    """The "Use this ε" action: a button that hands the value on, then links to the two pages using it."""
    budget_warning(epsilon)
    left, middle, right = st.columns([2, 1, 1])
    left.button(f"Use this {point_unit()} ({point_words(epsilon)})", key=key, type="primary", on_click=use_epsilon,
                args=(epsilon,), kwargs={"mechanism": mechanism, "target": target, "workload": workload},
                help="Sets the Release page's ε" + (" and mechanism" if mechanism else "") + " and a Gradual "
                     "release schedule ending at this ε. Nothing is spent until you release.")
    handoff = st.session_state.get("epsilon_handoff")
    if handoff and abs(handoff["epsilon"] - epsilon) < 1e-12 and handoff["target"] == target:
        left.success(handed_on(handoff))
        middle.page_link("pages/release.py", label="Go to Release", icon=":material/publish:")
        right.page_link("pages/gradual.py", label="Go to Gradual release", icon=":material/stairs:")
