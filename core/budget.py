"""Privacy budget as immutable values with basic sequential composition (style.md §1.3)."""

from __future__ import annotations

import math
from dataclasses import dataclass

TOLERANCE = 1e-9  # absorbs float round-off: 10 × 0.1 fits in 1.0, 1.0 + 1e-6 does not


class BudgetExceededError(ValueError):
    """Raised when a spend would exceed the remaining budget."""


@dataclass(frozen=True)
class Budget:
    """An (ε, δ) budget; supports + for sequential composition.

    >>> (Budget(0.5) + Budget(0.25)).epsilon
    0.75
    """

    epsilon: float
    delta: float = 0.0

    def __post_init__(self) -> None:
        if not (isinstance(self.epsilon, int | float) and math.isfinite(self.epsilon) and self.epsilon >= 0):
            raise ValueError(f"budget epsilon must be finite and >= 0, got {self.epsilon!r}")
        if not (isinstance(self.delta, int | float) and 0 <= self.delta < 1):
            raise ValueError(f"budget delta must be in [0, 1), got {self.delta!r}")

    def __add__(self, other: Budget) -> Budget:
        return Budget(self.epsilon + other.epsilon, self.delta + other.delta)


@dataclass(frozen=True)
class Ledger:
    """A total budget and the spends charged against it; ``spend`` returns a new ledger or raises.

    >>> ledger = Ledger(Budget(1.0))
    >>> for _ in range(10):
    ...     ledger = ledger.spend("step", Budget(0.1))
    >>> round(ledger.remaining.epsilon, 12)
    0.0
    """

    total: Budget
    spends: tuple[tuple[str, Budget], ...] = ()

    @property
    def spent(self) -> Budget:
        eps = math.fsum(b.epsilon for _, b in self.spends)
        delta = math.fsum(b.delta for _, b in self.spends)
        return Budget(eps, delta)

    @property
    def remaining(self) -> Budget:
        spent = self.spent
        return Budget(max(self.total.epsilon - spent.epsilon, 0.0), max(self.total.delta - spent.delta, 0.0))

    def fits(self, cost: Budget) -> bool:
        """True when `cost` fits in what remains (up to TOLERANCE)."""
        spent = self.spent
        return (spent.epsilon + cost.epsilon <= self.total.epsilon + TOLERANCE
                and spent.delta + cost.delta <= self.total.delta + TOLERANCE)

    def spend(self, label: str, cost: Budget) -> Ledger:
        """Charge `cost` under `label`; raises BudgetExceededError naming what remains."""
        if not self.fits(cost):
            raise BudgetExceededError(
                f"{label!r} needs epsilon={cost.epsilon:g}; remaining is epsilon={self.remaining.epsilon:g} "
                f"of {self.total.epsilon:g}. Lower epsilon (a fresh budget for the same data is a recorded "
                "reset that voids the guarantee).")
        return Ledger(self.total, self.spends + ((label, cost),))
