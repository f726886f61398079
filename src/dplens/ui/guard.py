"""The top-level guard: no raw traceback ever reaches the user (it goes to the server log instead).

``guard()`` wraps a page's body; ``guarded(callback)`` wraps a widget callback (an upload's ``on_change``,
a button's ``on_click``), which Streamlit runs before the page script and so outside the page's guard: its
error becomes the page's flash message on the rerun that follows.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import re

import streamlit as st

_LOG = logging.getLogger("dplens")
_MARKDOWN = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:=&\"'])")  # markdown, links, images, LaTeX, :icons:


def plain(text) -> str:
    """``text`` (an upload's file name, a message quoting one) made inert for st.markdown/st.error: one line,
    every markdown character backslash-escaped, so a name like ``![x](http://…)`` shows as typed.

    >>> print(plain("![x](http://e.com/a.png)"))
    \\!\\[x\\]\\(http\\://e\\.com/a\\.png\\)
    """
    return _MARKDOWN.sub(r"\\\1", " ".join(str(text).splitlines()))


def is_script_control(err: BaseException) -> bool:
    """Streamlit's rerun/stop signals, which must propagate rather than be shown as errors."""
    return type(err).__name__ in ("RerunException", "StopException")


def error_line(err: BaseException) -> str:
    """One line for the user: a refused input's message (ValueError), else the error's type and first line.

    Anything not a ValueError is a bug: it is logged with its traceback (server paths stay in the log).

    >>> error_line(ValueError("bins must be > 0, got -1\\nmore"))
    'bins must be > 0, got -1'
    """
    line = str(err).splitlines()[0][:300] if str(err).strip() else type(err).__name__
    if isinstance(err, ValueError):
        return line
    _LOG.error("unexpected error", exc_info=err)
    if isinstance(err, MemoryError | RecursionError):
        return f"the input is too large or too deeply nested to process ({type(err).__name__})"
    return f"unexpected {type(err).__name__}: {line}. The details are in the server log"


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
        st.error(f"Something went wrong: {error_line(err)}")


def guarded(callback):
    """``callback`` for ``on_change``/``on_click``, with any error turned into the page's flash message.

    An existing flash message (the callback's own refusal) is kept.
    """
    @functools.wraps(callback)
    def run(*args, **kwargs):
        try:
            return callback(*args, **kwargs)
        except Exception as err:  # noqa: BLE001 - the user must never see a raw traceback
            if is_script_control(err):
                raise
            st.session_state.flash_error = error_line(err)
            return None
    return run
