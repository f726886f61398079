"""The checks of plain numbers every module shares: one message per rule, naming the parameter and the value.

Richer rules (a mechanism setting's documented range) are ``dplens.core.mechanisms.contract.Range``.

>>> positive("epsilon", 0.5), fraction("ratio", 0.25), integer("trials", 3)
(0.5, 0.25, 3)
>>> positive("sigma", float("nan"))
Traceback (most recent call last):
ValueError: sigma must be a finite number > 0, got nan
"""

from __future__ import annotations

import math
from typing import TypeGuard

import numpy as np


def _number(value: object) -> TypeGuard[int | float | np.integer | np.floating]:
    return not isinstance(value, bool) and isinstance(value, int | float | np.integer | np.floating)


def positive(name: str, value: object) -> float:
    """``value`` as a float if it is a finite number > 0, else ValueError."""
    if not (_number(value) and math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


def non_negative(name: str, value: object) -> float:
    """``value`` as a float if it is a finite number >= 0, else ValueError."""
    if not (_number(value) and math.isfinite(value) and value >= 0):
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return float(value)


def fraction(name: str, value: object) -> float:
    """``value`` as a float if it is a number in the open interval (0, 1) (a share, a confidence), else ValueError."""
    if not (_number(value) and 0 < value < 1):
        raise ValueError(f"{name} must be a number in (0, 1), got {value!r}")
    return float(value)


def integer(name: str, value: object, low: int = 1, high: int | None = None) -> int:
    """``value`` as an int if it is an integer >= ``low`` (and <= ``high``), else ValueError."""
    if not (not isinstance(value, bool) and isinstance(value, int | np.integer) and value >= low
            and (high is None or value <= high)):
        rule = f"an integer >= {low}" if high is None else f"an integer from {low} to {high}"
        raise ValueError(f"{name} must be {rule}, got {value!r}")
    return int(value)
