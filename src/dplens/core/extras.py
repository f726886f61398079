"""Optional features and the extras that install them (pyproject.toml ``[project.optional-dependencies]``).

A feature whose extra is missing fails where it is used, with one sentence naming the extra and the command:

>>> missing_extra_message("MST", "tables")
"MST needs the optional 'tables' extra: pip install 'dplens[tables]'"

:class:`MissingExtraError` is a ``ValueError`` (the app shows it as one line, like any refused input) and an
``ImportError`` (what it replaces).
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

EXTRAS = {  # extra → what it is for; the packages are in pyproject.toml
    "tables": "MST, AIM and identity-pgm synthesis (polars, private-pgm)",
    "cluster": "Compare sweeps on a Dask cluster (dask[distributed])",
    "images": "PNG/SVG export of charts (kaleido)",
}


class MissingExtraError(ImportError, ValueError):
    """An optional feature is used without its extra installed; the message names the extra and the command."""


def missing_extra_message(feature: str, extra: str) -> str:
    if extra not in EXTRAS:
        raise ValueError(f"extra must be one of {sorted(EXTRAS)}, got {extra!r}")
    return f"{feature} needs the optional '{extra}' extra: pip install 'dplens[{extra}]'"


def available(module: str) -> bool:
    """Whether ``module`` can be imported (without importing it).

    >>> available("json"), available("no_such_module_here")
    (True, False)
    """
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a missing parent package, or a module set to None in sys.modules
        return False


def require(module: str, extra: str, feature: str) -> ModuleType:
    """Import ``module`` for ``feature``; if it (or what it needs) is missing, raise :class:`MissingExtraError`.

    >>> require("json", "tables", "MST").__name__
    'json'
    """
    message = missing_extra_message(feature, extra)
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise MissingExtraError(message, name=module) from err
