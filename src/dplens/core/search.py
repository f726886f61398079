"""One monotone search: bisection on an interval where a predicate switches once (ε from δ, σ from ε, ρ from
(ε, δ), ε from an accuracy or a risk target).

>>> low, high = bisect_monotone(lambda x: x * x >= 2.0, 0.0, 2.0, true_side="high", rtol=1e-12)
>>> round(high, 9), high * high >= 2.0
(1.414213562, True)
"""

from __future__ import annotations

from collections.abc import Callable

MAX_STEPS = 200  # halvings: enough for any float interval to reach its tolerance


def bisect_monotone(predicate: Callable[[float], bool], low: float, high: float, *, true_side: str,
                    rtol: float = 0.0, atol: float = 0.0, max_steps: int = MAX_STEPS) -> tuple[float, float]:
    """Narrow [low, high] around the one switch of a monotone ``predicate``; returns the final (low, high).

    ``true_side`` says where the predicate holds ("high": True above the switch, e.g. δ(σ) ≤ δ; "low": True
    below it, e.g. ε(ρ) ≤ ε); the caller makes sure the predicate has that value at that end and picks the end
    that is safe for it. The interval is halved at its midpoint until its width is at most
    max(atol, rtol·|high|), or ``max_steps`` times.
    """
    if true_side not in ("high", "low"):
        raise ValueError(f"true_side must be 'high' or 'low', got {true_side!r}")
    true_high = true_side == "high"
    for _ in range(max_steps):
        if high - low <= max(atol, rtol * abs(high)):
            break
        mid = 0.5 * (low + high)
        if predicate(mid) == true_high:
            high = mid
        else:
            low = mid
    return low, high
