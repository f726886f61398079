"""Budget integrity: float edge cases, ledger invariants (Hypothesis), and AppTest click sequences.

The ledger must never overspend: not with float round-off, not under double clicks, reruns, page
switches or gradual-release steps; and every charge shows up in the history.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dplens.core.privacy.budget import RELATIVE_TOLERANCE as TOLERANCE
from dplens.core.privacy.budget import Budget, BudgetExceededError, Ledger
from dplens.core.release.gradual import charge_step, check_schedule, increments
from tests.test_app import PAGE_PATHS, open_page, record_ledger

RELEASE, GRADUAL = "pages/release.py", "pages/gradual.py"


# ----------------------------------------------------------------------------- float edge cases
def _spend_all(total: float, costs) -> Ledger:
    ledger = Ledger(Budget(total))
    for i, cost in enumerate(costs):
        ledger = ledger.spend(f"step {i}", Budget(cost))
    return ledger


@pytest.mark.parametrize(("total", "costs"), [
    (1.0, [0.1] * 10),                 # 0.1 added ten times is 0.9999999999999999
    (0.3, [0.1, 0.2]),                 # 0.1 + 0.2 = 0.30000000000000004
    (1.0, [1 / 3] * 3),
    (1.0, [0.001] * 1000),
    (1.0, [1.0 + TOLERANCE / 2]),      # within the documented tolerance
    (7.7, [1.1] * 7),
])
def test_round_off_never_blocks_an_exact_spend(total, costs):
    ledger = _spend_all(total, costs)
    assert ledger.remaining.epsilon == pytest.approx(0.0, abs=1e-9)
    with pytest.raises(BudgetExceededError, match="remaining is epsilon=0"):
        ledger.spend("one more", Budget(1e-6))


@pytest.mark.parametrize(("total", "costs"), [
    (1.0, [1.0 + 1e-6]),
    (1.0, [0.1] * 10 + [1e-6]),
    (1.0, [1.0 + 2 * TOLERANCE]),      # just past the tolerance: refused
    (1.0, [0.5, 0.5 + 1e-8]),
])
def test_anything_past_the_tolerance_is_refused(total, costs):
    with pytest.raises(BudgetExceededError):
        _spend_all(total, costs)


def test_tolerance_is_documented_as_1e_9():
    # The "1.0 + 1e-12 does not fit when the tolerance says so": ours says 1e-9, so it fits.
    assert TOLERANCE == 1e-9
    assert Ledger(Budget(1.0)).fits(Budget(1.0 + 1e-12))
    assert not Ledger(Budget(1.0)).fits(Budget(1.0 + 1e-6))


def test_gradual_increments_sum_to_the_final_epsilon_and_fit_exactly():
    schedule = [round(0.1 * k, 10) for k in range(1, 11)]  # 0.1, 0.2, ..., 1.0
    ledger, previous = Ledger(Budget(1.0)), 0.0
    for epsilon in check_schedule(schedule):
        ledger = charge_step(ledger, f"to {epsilon}", previous, float(epsilon))
        previous = float(epsilon)
    assert math.fsum(increments(schedule)) == pytest.approx(1.0, abs=1e-12)
    assert len(ledger.spends) == 10 and ledger.spent.epsilon == pytest.approx(1.0, abs=1e-12)
    with pytest.raises(BudgetExceededError):
        charge_step(ledger, "past the end", 1.0, 1.01)


# ----------------------------------------------------------------------------- invariants
@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.floats(0.01, 10.0), st.lists(st.floats(0.0, 3.0, allow_nan=False), max_size=40))
def test_ledger_never_overspends_and_every_charge_is_recorded(total, costs):
    ledger = Ledger(Budget(total))
    accepted = []
    for i, cost in enumerate(costs):
        before = ledger
        try:
            ledger = ledger.spend(f"#{i}", Budget(cost))
        except BudgetExceededError as err:
            assert ledger is before and f"remaining is epsilon={before.remaining.epsilon:g}" in str(err)
            continue
        assert before.spends == tuple(ledger.spends[:-1])  # the old ledger is untouched
        accepted.append((f"#{i}", cost))
        assert ledger.spent.epsilon <= total + TOLERANCE
        assert ledger.remaining.epsilon >= 0
    assert [(label, b.epsilon) for label, b in ledger.spends] == accepted


# ----------------------------------------------------------------------------- AppTest sequences
def _release_page(total: float):
    record_ledger(Ledger(Budget(total)))
    at = open_page(RELEASE)
    at.radio(key="release_noise_path").set_value("exploration").run()
    return at


def _click_release(at, epsilon: float):
    at.selectbox(key="release_mechanism").set_value("identity")
    at.number_input(key="release_epsilon").set_value(epsilon)
    return at.button(key="release_spend").click().run()


def test_repeated_clicks_charge_each_click_up_to_the_budget_and_no_further():
    at = _release_page(1.0)
    for _ in range(12):  # 0.1 each: ten fit (float round-off included), the rest are refused
        at = _click_release(at, 0.1)
    assert not at.exception
    ledger = at.session_state.ledger
    assert len(ledger.spends) == len(at.session_state.releases) == 10
    assert ledger.spent.epsilon <= 1.0 + TOLERANCE
    assert "remaining is epsilon=0" in at.error[0].value


def test_reruns_and_page_switches_never_charge():
    at = _click_release(_release_page(2.0), 0.5)
    for path in PAGE_PATHS:  # visit every page, rerun it, come back
        at = at.switch_page(path).run()
        assert not at.exception, path
        at.run()
    at = at.switch_page(RELEASE).run()
    at.run()
    ledger = at.session_state.ledger
    assert ledger.spent.epsilon == pytest.approx(0.5)
    assert len(ledger.spends) == len(at.session_state.releases) == 1


def test_a_simulated_gradual_walk_charges_nothing():
    """The walk uses seeded exploration noise and is never exported: a simulation, so no budget is spent."""
    record_ledger(Ledger(Budget(1.0)))
    at = open_page(GRADUAL)
    at.text_input(key="gradual_schedule").set_value("0.25, 0.5, 1.0").run()
    for _ in range(4):  # the fourth click finds the schedule exhausted (button disabled)
        button = at.button(key="gradual_release")
        if button.disabled:
            break
        at = button.click().run()
    assert not at.exception
    assert at.session_state.gradual_walk["epsilons"] == [0.25, 0.5, 1.0]
    assert at.session_state.ledger.spent.epsilon == 0 and not at.session_state.ledger.spends
    assert any("simulation" in c.value and "charges nothing" in c.value for c in at.caption)


@pytest.mark.parametrize("total", [1e-10, 1e-300, 0.3])
def test_delta_tolerance_is_relative_to_the_delta_total(total):
    """With a δ total of 1e-10, a second (ε, δ = 1e-10) spend is refused, and the refusal names δ."""
    ledger = Ledger(Budget(100.0, total)).spend("first", Budget(1.0, total))
    with pytest.raises(BudgetExceededError, match="needs delta="):
        ledger.spend("second", Budget(1.0, total))
    assert Ledger(Budget(1.0, total)).fits(Budget(0.5, total * (1 + 1e-12)))  # round-off still fits


@pytest.mark.parametrize("total", [1e-10, 1e-200, 2.0])
def test_rho_tolerance_is_relative_to_the_rho_total(total):
    ledger = Ledger(Budget.zcdp(total, 1e-6)).spend("first", Budget(1.0, 0.0, total))
    with pytest.raises(BudgetExceededError, match="needs rho="):
        ledger.spend("second", Budget(1.0, 0.0, total))
    ten = Ledger(Budget.zcdp(total, 1e-6))
    for i in range(10):
        ten = ten.spend(f"tenth {i}", Budget(0.0, 0.0, total / 10))
    assert not ten.fits(Budget(0.0, 0.0, total * 1e-6))


def test_cli_refuses_a_second_release_at_a_delta_total_of_1e_10(tmp_path):
    from dplens.cli import main

    store = tmp_path / "ledger.sqlite"
    args = ["release", "--input", "tips-bill", "--mechanism", "gaussian-identity", "--definition", "approx",
            "--epsilon", "0.5", "--delta", "1e-10", "--budget", "50", "--budget-delta", "1e-10",
            "--ledger", str(store)]
    assert main([*args, "--output", str(tmp_path / "a.json")]) == 0
    assert main([*args, "--output", str(tmp_path / "b.json")]) == 2
    assert not (tmp_path / "b.json").exists()
