"""Privacy budget as immutable values with sequential composition.

A total is either an (ε, δ) budget (basic composition: ε and δ add) or a ρ-zCDP budget
(``Budget.zcdp``; ρ adds, Bun & Steinke 2016 Lemma 2.3). Under a ρ total a pure ε spend counts
ε²/2 (Prop. 1.4) and an (ε, δ) spend with δ > 0 is refused: no ρ bounds a mechanism that may fail
outright with probability δ. The ε shown for a ρ budget is its CKS 2020 ε at the total's δ.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from dplens.core.privacy.definitions import ApproxDP, Privacy, PureDP, zcdp_epsilon, zcdp_rho
from dplens.core.validate import fraction, non_negative, positive

RELATIVE_TOLERANCE = 1e-9  # float round-off, relative to each total: 10 × 0.1 fits in 1.0, 1.0 + 1e-6 does not,
#                            and with a δ total of 1e-10 a second spend of 1e-10 does not either


def within(amount: float, total: float) -> bool:
    """Whether ``amount`` fits in ``total`` up to float round-off relative to the total (per unit: ε, δ or ρ).

    >>> within(sum([0.1] * 10), 1.0), within(2e-10, 1e-10), within(1.0 + 1e-6, 1.0)
    (True, False, False)
    """
    return amount <= total * (1.0 + RELATIVE_TOLERANCE)


class BudgetExceededError(ValueError):
    """Raised when a spend would exceed the remaining budget (or cannot be charged to it)."""


@dataclass(frozen=True)
class Budget:
    """An (ε, δ) budget, with ρ when it is (also) a zCDP cost; supports + for sequential composition.

    What a ledger records is this, not one privacy definition value: a charge must be valid in both accountings a
    ledger may use (basic composition of (ε, δ), and Σρ), and the two need not be one value's readings. A gradual
    step from ε₁ to ε₂ costs ε₂ − ε₁ under basic composition but (ε₂² − ε₁²)/2 in zCDP, more than (ε₂ − ε₁)²/2;
    a zCDP release under an (ε, δ) total is charged its ε at the release's δ, and keeps its ρ so that the total
    can later be read, or converted, as ρ. Releases state their cost as a definition value (``Release.budget``)
    and ``ledger_charge`` turns it into this.

    >>> (Budget(0.5) + Budget(0.25)).epsilon
    0.75
    >>> Budget.zcdp(0.5, 1e-6)
    Budget(epsilon=5.22153..., delta=1e-06, rho=0.5)
    """

    epsilon: float
    delta: float = 0.0
    rho: float | None = None

    def __post_init__(self) -> None:
        non_negative("budget epsilon", self.epsilon)
        if not (isinstance(self.delta, int | float) and 0 <= self.delta < 1):
            raise ValueError(f"budget delta must be in [0, 1), got {self.delta!r}")
        if self.rho is not None and not (isinstance(self.rho, int | float) and math.isfinite(self.rho)
                                         and self.rho >= 0):
            raise ValueError(f"budget rho must be finite and >= 0 (or None), got {self.rho!r}")

    @classmethod
    def zcdp(cls, rho: float, delta: float) -> Budget:
        """A ρ-zCDP budget, shown as its CKS ε at ``delta`` (δ in (0, 1): where ρ is read as (ε, δ))."""
        rho, delta = positive("total budget rho", rho), fraction("delta", delta)
        return cls(zcdp_epsilon(rho, delta), delta, rho)

    def __add__(self, other: Budget) -> Budget:
        rho = None if self.rho is None or other.rho is None else self.rho + other.rho
        return Budget(self.epsilon + other.epsilon, self.delta + other.delta, rho)


def spend_rho(cost: Budget) -> float | None:
    """What ``cost`` charges a ρ budget: its ρ; a pure ε spend ε²/2; None for (ε, δ) with δ > 0.

    >>> spend_rho(Budget(1.0)), spend_rho(Budget(2.0, 1e-6, 0.1)), spend_rho(Budget(1.0, 1e-6))
    (0.5, 0.1, None)
    """
    if cost.rho is not None:
        return cost.rho
    return cost.epsilon**2 / 2.0 if cost.delta == 0 else None


def _rho_refusal(label: str, cost: Budget) -> str:
    return (f"{label!r} is an (epsilon={cost.epsilon:g}, delta={cost.delta:g}) release, which this rho-zCDP budget "
            "cannot charge: (epsilon, delta)-DP may fail outright with probability delta, so it implies no rho. "
            "Release under rho-zCDP or pure epsilon-DP instead.")


@dataclass(frozen=True)
class Ledger:
    """A total budget and the spends charged against it; ``spend`` returns a new ledger or raises.

    Under an (ε, δ) total, ε and δ add; under a ρ total (``total.rho`` set), ρ adds.

    >>> ledger = Ledger(Budget(1.0))
    >>> for _ in range(10):
    ...     ledger = ledger.spend("step", Budget(0.1))
    >>> round(ledger.remaining.epsilon, 12)
    0.0
    >>> zcdp = Ledger(Budget.zcdp(0.5, 1e-6)).spend("pure", Budget(0.5)).spend("gauss", Budget(3.0, 1e-6, 0.25))
    >>> zcdp.spent.rho, zcdp.remaining.rho
    (0.375, 0.125)
    """

    total: Budget
    spends: tuple[tuple[str, Budget], ...] = ()

    @property
    def unit(self) -> str:
        """``"rho"`` for a zCDP total, else ``"epsilon"`` (an (ε, δ) total)."""
        return "epsilon" if self.total.rho is None else "rho"

    @property
    def spent(self) -> Budget:
        """Basic composition of the spends' (ε, δ), and Σρ (under a ρ total always; otherwise when all have ρ)."""
        eps = math.fsum(b.epsilon for _, b in self.spends)
        delta = math.fsum(b.delta for _, b in self.spends)
        rhos = [spend_rho(b) if self.total.rho is not None else b.rho for _, b in self.spends]
        unknown = any(r is None for r in rhos) or (self.total.rho is None and not rhos)
        rho = None if unknown else math.fsum(r for r in rhos if r is not None)  # not unknown: none is None
        return Budget(eps, delta, rho)

    @property
    def remaining(self) -> Budget:
        """What is left: (ε, δ) by subtraction; under a ρ total, ρ and its CKS ε at the total's δ."""
        spent = self.spent
        if self.total.rho is not None:
            rho = max(self.total.rho - (spent.rho or 0.0), 0.0)
            return Budget(zcdp_epsilon(rho, self.total.delta) if rho > 0 else 0.0, self.total.delta, rho)
        return Budget(max(self.total.epsilon - spent.epsilon, 0.0), max(self.total.delta - spent.delta, 0.0))

    @property
    def unit_symbol(self) -> str:
        """``"ρ"`` for a zCDP total, else ``"ε"``: the symbol every figure of :meth:`amounts` is in."""
        return "ρ" if self.total.rho is not None else "ε"

    def amounts(self) -> tuple[float, float, float]:
        """(total, spent, remaining) in the ledger's own unit (ρ under a zCDP total, else ε), so that
        spent + remaining = total until the budget is used up (then remaining is 0).

        >>> Ledger(Budget.zcdp(0.5, 1e-6)).spend("a", Budget(1.0)).amounts()
        (0.5, 0.5, 0.0)
        >>> Ledger(Budget(2.0)).spend("a", Budget(0.5)).amounts()
        (2.0, 0.5, 1.5)
        """
        spent, remaining = self.spent, self.remaining
        if self.total.rho is not None:
            return self.total.rho, spent.rho or 0.0, remaining.rho or 0.0
        return self.total.epsilon, spent.epsilon, remaining.epsilon

    def fits(self, cost: Budget) -> bool:
        """True when `cost` fits in what remains (up to round-off relative to the total of each unit)."""
        spent = self.spent
        if self.total.rho is not None:
            rho = spend_rho(cost)
            return rho is not None and within((spent.rho or 0.0) + rho, self.total.rho)
        return (within(spent.epsilon + cost.epsilon, self.total.epsilon)
                and within(spent.delta + cost.delta, self.total.delta))

    def spend(self, label: str, cost: Budget) -> Ledger:
        """Charge `cost` under `label`; raises BudgetExceededError naming what remains."""
        if not self.fits(cost):
            if self.total.rho is None and within(self.spent.epsilon + cost.epsilon, self.total.epsilon):
                raise BudgetExceededError(
                    f"{label!r} needs delta={cost.delta:g}; remaining is delta={self.remaining.delta:g} of "
                    f"{self.total.delta:g}. Lower delta, record a total with a delta budget before the first release "
                    "(Total budget δ in the app's sidebar; --budget-delta on the command line), or release under "
                    "pure epsilon-DP.")
            if self.total.rho is None:
                raise BudgetExceededError(
                    f"{label!r} needs epsilon={cost.epsilon:g}; remaining is epsilon={self.remaining.epsilon:g} "
                    f"of {self.total.epsilon:g}. Lower epsilon (a fresh budget for the same data is a recorded "
                    "reset that voids the guarantee).")
            rho = spend_rho(cost)
            if rho is None:
                raise BudgetExceededError(_rho_refusal(label, cost))
            left = self.remaining
            raise BudgetExceededError(
                f"{label!r} needs rho={rho:g}; remaining is rho={left.rho:g} of {self.total.rho:g} "
                f"(epsilon={left.epsilon:.4g} at delta={self.total.delta:g}). Lower the privacy parameter (a fresh "
                "budget for the same data is a recorded reset that voids the guarantee).")
        return Ledger(self.total, self.spends + ((label, cost),))


# ----------------------------------------------------------------------------- what a ledger records
def ledger_charge(privacy: Privacy, delta: float) -> Budget:
    """What a ledger records for a release at ``privacy``: (ε, δ) for basic composition, and ρ when defined.

    zCDP is charged as its CKS ε at ``delta`` plus that δ; (ε, δ) has no ρ.

    >>> ledger_charge(PureDP(1.0), 1e-6)
    Budget(epsilon=1.0, delta=0.0, rho=0.5)
    >>> ledger_charge(ApproxDP(1.0, 1e-6), 1e-6)
    Budget(epsilon=1.0, delta=1e-06, rho=None)
    """
    if isinstance(privacy, PureDP):
        return Budget(privacy.epsilon, 0.0, privacy.to_zcdp().rho)
    if isinstance(privacy, ApproxDP):
        return Budget(privacy.epsilon, privacy.delta, None)
    approx = privacy.to_approx(delta)
    return Budget(approx.epsilon, approx.delta, privacy.rho)


def native_spend(spends: Sequence[Budget], definition: str, delta: float,
                 total_epsilon: float) -> dict[str, float | str | None]:
    """Spent and remaining in a definition's own unit, from the ledger's spends (ε, δ charged; ρ or None).

    The ledger enforces basic composition of (ε, δ), which is always valid; this is the native view:
    pure: Σε; approx: (Σε, Σδ); zcdp: Σρ (pure rows count ε²/2) and its CKS ε at ``delta``, with the
    total read as ρ_total = ``zcdp_rho(total_epsilon, delta)``. A zCDP view needs ρ on every row.

    >>> view = native_spend([Budget(1.0, 0.0, 0.5), Budget(0.5)], "zcdp", 1e-6, 5.0)
    >>> view["spent"], round(view["epsilon_at_delta"], 4), view["basic_epsilon"]
    (0.625, 5.9268, 1.5)
    """
    costs = [(s.epsilon, s.delta, s.rho) for s in spends]
    basic_epsilon = math.fsum(c[0] for c in costs)
    basic_delta = math.fsum(c[1] for c in costs)
    view: dict[str, float | str | None] = {"definition": definition, "basic_epsilon": basic_epsilon,
                                           "basic_delta": basic_delta}
    if definition == "zcdp":
        # a row without ρ but with δ = 0 was a pure ε-DP spend: ε²/2-zCDP (older ledgers record no ρ)
        costs = [(e, d, r if r is not None else (e * e / 2.0 if d == 0 else None)) for e, d, r in costs]
        if any(c[2] is None for c in costs):
            view.update(unit="rho", spent=None, remaining=None, epsilon_at_delta=None,
                        note="an (epsilon, delta) release has no rho: composed by basic composition only")
            return view
        rho = math.fsum(c[2] for c in costs if c[2] is not None)  # none is None (returned above)
        total_rho = zcdp_rho(total_epsilon, delta) if total_epsilon > 0 else 0.0
        view.update(unit="rho", spent=rho, remaining=max(total_rho - rho, 0.0), total=total_rho,
                    epsilon_at_delta=zcdp_epsilon(rho, delta) if rho > 0 else 0.0)
        return view
    if definition == "approx":
        view.update(unit="(epsilon, delta)", spent=basic_epsilon, spent_delta=basic_delta,
                    remaining=max(total_epsilon - basic_epsilon, 0.0))
        return view
    view.update(unit="epsilon", spent=basic_epsilon, remaining=max(total_epsilon - basic_epsilon, 0.0))
    return view
