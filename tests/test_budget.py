"""Budget and Ledger: basic composition, tolerance, immutability (style.md rule 7)."""

from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.budget import Budget, BudgetExceededError, Ledger


def test_ten_spends_of_a_tenth_fit_in_one():
    ledger = Ledger(Budget(1.0))
    for i in range(10):
        ledger = ledger.spend(f"release {i}", Budget(0.1))
    assert ledger.remaining.epsilon == pytest.approx(0.0, abs=1e-12)
    assert ledger.spent.epsilon == pytest.approx(1.0)
    assert len(ledger.spends) == 10
    assert not ledger.fits(Budget(1e-6))


def test_overspend_names_the_label_and_what_remains():
    ledger = Ledger(Budget(1.0)).spend("first", Budget(0.75))
    with pytest.raises(BudgetExceededError, match=r"'second' needs epsilon=0.5; remaining is epsilon=0.25 of 1"):
        ledger.spend("second", Budget(0.5))
    assert issubclass(BudgetExceededError, ValueError)


def test_spend_returns_a_new_ledger_and_never_mutates():
    ledger = Ledger(Budget(2.0, 1e-6))
    after = ledger.spend("a", Budget(0.5, 1e-7))
    assert ledger.spends == () and ledger.spent == Budget(0.0)
    assert after.spends == (("a", Budget(0.5, 1e-7)),)
    assert after.remaining.delta == pytest.approx(9e-7)
    with pytest.raises(dataclasses.FrozenInstanceError):
        after.total = Budget(5.0)  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        Budget(1.0).epsilon = 2.0  # type: ignore[misc]


def test_delta_is_budgeted_too():
    with pytest.raises(BudgetExceededError):
        Ledger(Budget(1.0, 0.0)).spend("gaussian", Budget(0.1, 1e-6))


def test_addition_composes():
    assert Budget(0.5, 1e-6) + Budget(0.25) == Budget(0.75, 1e-6)


@pytest.mark.parametrize("kwargs, message", [
    ({"epsilon": -1.0}, "budget epsilon must be finite and >= 0, got -1.0"),
    ({"epsilon": math.nan}, "budget epsilon must be finite"),
    ({"epsilon": math.inf}, "budget epsilon must be finite"),
    ({"epsilon": "1"}, "budget epsilon must be finite"),
    ({"epsilon": 1.0, "delta": 1.0}, r"budget delta must be in \[0, 1\), got 1.0"),
    ({"epsilon": 1.0, "delta": -0.1}, "budget delta must be in"),
])
def test_budget_validation(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Budget(**kwargs)


@settings(max_examples=60, deadline=None)
@given(total=st.floats(0, 10), costs=st.lists(st.floats(0, 3), max_size=12))
def test_spent_never_exceeds_total(total, costs):
    ledger = Ledger(Budget(total))
    for cost in costs:
        before = ledger
        try:
            ledger = ledger.spend("x", Budget(cost))
        except BudgetExceededError:
            assert ledger is before and not ledger.fits(Budget(cost))
        assert ledger.spent.epsilon <= total + 1e-9
        assert 0 <= ledger.remaining.epsilon <= total
