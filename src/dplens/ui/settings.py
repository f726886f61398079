"""Mechanism settings: one widget per dataclass field of a registered mechanism."""

from __future__ import annotations

import streamlit as st

from dplens.core.analysis.cost import check_cost, estimate_cost
from dplens.core.mechanisms import MECHANISMS, configure
from dplens.core.mechanisms.contract import setting_fields


def mechanism_settings(name: str, key: str, *, render: bool = True) -> dict[str, object]:
    """A widget per dataclass field of the mechanism; returns the settings changed from the default.

    Values are read back from the session, so a callback can call this with ``render=False`` and see
    what the user set in the same click. ``dplens.core.mechanisms.configure`` parses the text values.
    """
    mechanism = MECHANISMS[name]
    changed: dict[str, object] = {}
    for field in setting_fields(mechanism):
        default = getattr(mechanism, field.name)
        shown = default if isinstance(default, bool) else "" if default is None else str(default)
        widget_key = f"{key}_{name}_{field.name}"
        if render:  # default via the session, not value=, so a loaded config can set it (apply_config)
            st.session_state.setdefault(widget_key, shown)
            widget = st.checkbox if isinstance(default, bool) else st.text_input
            widget(field.name.replace("_", " "), key=widget_key,
                   help=f"A setting of {name}; leave it at {'empty' if default is None else default} for the "
                        "default. The Learn and Papers pages explain what it does.")
        value = st.session_state.get(widget_key, shown)
        value = value.strip() if isinstance(value, str) else value
        if value != shown and value != "":
            changed[field.name] = value
    return changed


def run_check(name: str, settings: dict[str, object], workload) -> tuple[str, str]:
    """(warning, refusal) for one run of mechanism ``name`` with ``settings`` on ``workload``
    (dplens.core.analysis.cost).

    The warning announces a run estimated over 10 s; the refusal (a bad setting, or a run over the
    memory or time limit) names what to change. Both are '' when the run is fine.
    """
    try:
        return check_cost(estimate_cost(configure(MECHANISMS[name], settings), workload),
                          what=f"{name} on this input"), ""
    except ValueError as err:
        return "", str(err)
