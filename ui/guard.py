"""The top-level guard: no raw traceback ever reaches the user (it goes to the server log instead)."""

from __future__ import annotations

import contextlib
import logging

import streamlit as st

_LOG = logging.getLogger("dplens")


def is_script_control(err: BaseException) -> bool:
    """Streamlit's rerun/stop signals, which must propagate rather than be shown as errors."""
    return type(err).__name__ in ("RerunException", "StopException")


@contextlib.contextmanager
def guard():
    """Top-level guard: any exception becomes one line; the traceback (server paths) is only logged.

    A ValueError is a refused input (its message names the parameter, value and rule); anything else
    is a bug, shown with its type and logged with the traceback so that it can be reported.
    """
    try:
        yield
    except Exception as err:  # noqa: BLE001 - the user must never see a raw traceback
        if is_script_control(err):
            raise
        line = str(err).splitlines()[0][:300] if str(err) else type(err).__name__
        if isinstance(err, ValueError):
            st.error(f"Something went wrong: {line}")
        else:
            _LOG.exception("unexpected error in a page")
            st.error(f"Something went wrong ({type(err).__name__}): {line}. The details are in the server log.")
