"""The top-level guard: no raw traceback ever reaches the user."""

from __future__ import annotations

import contextlib
import traceback

import streamlit as st


def is_script_control(err: BaseException) -> bool:
    """Streamlit's rerun/stop signals, which must propagate rather than be shown as errors."""
    return type(err).__name__ in ("RerunException", "StopException")


@contextlib.contextmanager
def guard():
    """Top-level guard: any exception becomes a friendly message with a details expander."""
    try:
        yield
    except Exception as err:  # noqa: BLE001 - the user must never see a raw traceback
        if is_script_control(err):
            raise
        st.error(f"Something went wrong: {str(err).splitlines()[0] if str(err) else type(err).__name__}")
        with st.expander("Details"):
            st.code("".join(traceback.format_exception(err)), language="text")
