"""Budget and Ledger: basic composition, tolerance, immutability."""

from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dplens.core.privacy.budget import Budget, BudgetExceededError, Ledger


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
    ({"epsilon": -1.0}, "budget epsilon must be a finite number >= 0, got -1.0"),
    ({"epsilon": math.nan}, "budget epsilon must be a finite number"),
    ({"epsilon": math.inf}, "budget epsilon must be a finite number"),
    ({"epsilon": "1"}, "budget epsilon must be a finite number"),
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


def test_rho_total_composes_rho_and_converts_pure_epsilon():
    ledger = Ledger(Budget.zcdp(1.0, 1e-9))
    assert ledger.unit == "rho" and ledger.total.epsilon == pytest.approx(9.521464, abs=1e-6)
    for _ in range(8):  # eight pure ε = 0.5 spends: ρ = 8 × 0.125 = 1, where basic ε would be 4
        ledger = ledger.spend("pure", Budget(0.5))
    assert ledger.spent.rho == pytest.approx(1.0) and ledger.remaining.rho == 0.0
    assert ledger.remaining.epsilon == 0.0 and ledger.spent.epsilon == pytest.approx(4.0)
    with pytest.raises(BudgetExceededError, match="needs rho=0.005; remaining is rho=0 of 1"):
        ledger.spend("one more", Budget(0.1))


def test_rho_total_refuses_approx_dp_spends_saying_why():
    with pytest.raises(BudgetExceededError, match=r"\(epsilon=0.1, delta=1e-07\) release.*implies no rho"):
        Ledger(Budget.zcdp(1.0, 1e-6)).spend("approx", Budget(0.1, 1e-7))
    assert Ledger(Budget.zcdp(1.0, 1e-6)).fits(Budget(50.0, 1e-3, 0.5))  # a zCDP spend: only its ρ counts


@pytest.mark.parametrize(("rho", "delta"), [(0.0, 1e-6), (-1.0, 1e-6), (float("nan"), 1e-6), (1.0, 0.0)])
def test_bad_rho_totals_are_refused(rho, delta):
    with pytest.raises(ValueError, match=r"rho must be a finite number > 0|delta must be a number in \(0, 1\)"):
        Budget.zcdp(rho, delta)
