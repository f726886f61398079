"""Epsilon selection: Lee & Clifton (ISC 2011: Table 3 and the worked examples), accuracy targets, confidence
intervals."""

import math
from dataclasses import dataclass, field

import numpy as np
import pytest

from dplens.core.analysis.metrics import mae
from dplens.core.analysis.selection import (
    accuracy_for_epsilon,
    epsilon_for_accuracy,
    laplace_confidence_intervals,
    lee_clifton_epsilon_tight,
    lee_clifton_epsilon_upper,
    lee_clifton_posterior,
    lee_clifton_risk_tight,
    lee_clifton_risk_upper,
    possible_worlds,
    smallest_epsilon,
)
from dplens.core.mechanisms import MECHANISMS
from dplens.core.mechanisms.contract import laplace_epsilon
from dplens.core.mechanisms.laplace import LaplaceIdentity, LaplaceOnAnswers, Uniform
from dplens.core.privacy.definitions import EpsilonAxis
from dplens.core.queries.workloads import Identity, Prefix

ABSENCE = possible_worlds([1, 2, 3, 10], "mean")
SCHOOL = possible_worlds([1, 2, 3, 4], "mean")
MEDIAN = possible_worlds([1, 2, 3, 10], "median")


def paper_order(worlds):
    """ω1..ω4 as in Lee & Clifton: ω1 = {1,2,3} (the last record missing) first."""
    return worlds.world_values[::-1]


# ----------------------------------------------------------------------------- Lee & Clifton
def test_absence_days_worlds_and_sensitivities():
    np.testing.assert_allclose(paper_order(ABSENCE), [2, 13 / 3, 14 / 3, 5])
    assert ABSENCE.sensitivity == pytest.approx(17 / 6)
    assert ABSENCE.value_spread == pytest.approx(3.0)


@pytest.mark.parametrize(("worlds", "upper", "tight"), [
    (ABSENCE, 0.3829393, 0.4317201),
    (SCHOOL, 0.3378876, 0.5251497),
    (MEDIAN, 1.6218604, 4 * math.log(2)),
], ids=["absence-mean", "school-mean", "absence-median"])
def test_epsilons_at_rho_one_third(worlds, upper, tight):
    got_upper = lee_clifton_epsilon_upper(1 / 3, worlds.sensitivity, worlds.value_spread, worlds.n)
    got_tight = lee_clifton_epsilon_tight(1 / 3, worlds.world_values, worlds.sensitivity)
    assert got_upper == pytest.approx(upper, abs=5e-8)
    assert got_tight == pytest.approx(tight, abs=5e-8)
    # the paper calls Eq. (7) a minimum; it is a MAXIMUM epsilon and it is smaller than the tight one
    assert got_upper < got_tight
    assert lee_clifton_risk_tight(got_tight, worlds.world_values, worlds.sensitivity) == pytest.approx(1 / 3)


def test_median_worlds_and_sensitivity():
    assert sorted(MEDIAN.world_values) == [2, 2, 3, 3]
    assert MEDIAN.sensitivity == 4.0
    assert MEDIAN.value_spread == 1.0


@pytest.mark.parametrize(("worlds", "tight", "upper"), [
    (ABSENCE, 0.3476971, 0.3614213), (SCHOOL, 0.3291788, 0.3778668)], ids=["absence", "school"])
def test_risks_at_half(worlds, tight, upper):
    assert lee_clifton_risk_tight(0.5, worlds.world_values, worlds.sensitivity) == pytest.approx(tight, abs=5e-8)
    assert lee_clifton_risk_upper(0.5, worlds.sensitivity, worlds.value_spread, worlds.n) == pytest.approx(
        upper, abs=5e-8)


TABLE_3 = {
    5: (.9705, .0158, .0088, .0049),
    2: (.6825, .1315, .1039, .0821),
    1: (.4596, .2017, .1793, .1594),
    0.5: (.3477, .2303, .2172, .2048),
    0.1: (.2680, .2469, .2440, .2411),
    0.01: (.2518, .2497, .2494, .2491),
}


@pytest.mark.parametrize("epsilon", list(TABLE_3))
def test_table_3_posteriors(epsilon):
    posterior = lee_clifton_posterior(2.0, paper_order(ABSENCE), epsilon, ABSENCE.sensitivity)
    np.testing.assert_allclose(posterior.round(4), TABLE_3[epsilon], atol=1e-12)


def test_posterior_at_noisy_answer():
    posterior = lee_clifton_posterior(2.2013, paper_order(ABSENCE), 2.0, ABSENCE.sensitivity)
    np.testing.assert_allclose(posterior.round(4), [0.6180, 0.1582, 0.1250, 0.0988], atol=1e-12)
    school = lee_clifton_posterior(2.2013, paper_order(SCHOOL), 2.0, SCHOOL.sensitivity)
    assert round(school[0], 4) == 0.3390


def test_risk_curves_are_vectorised_and_start_at_the_prior():
    eps = np.linspace(0, 5, 11)
    tight = lee_clifton_risk_tight(eps, ABSENCE.world_values, ABSENCE.sensitivity)
    upper = lee_clifton_risk_upper(eps, ABSENCE.sensitivity, ABSENCE.value_spread, 4)
    assert tight[0] == pytest.approx(0.25) and upper[0] == pytest.approx(0.25)
    assert np.all(np.diff(tight) > 0) and np.all(upper >= tight - 1e-12)


def test_tight_epsilon_is_unbounded_when_worlds_tie():
    count = possible_worlds([1, 2, 3, 10], "count")
    assert count.value_spread == 0 and count.sensitivity == 1
    assert lee_clifton_epsilon_tight(0.5, count.world_values, count.sensitivity) == math.inf
    assert lee_clifton_epsilon_tight(0.5, MEDIAN.world_values, MEDIAN.sensitivity) == math.inf  # limit 1/2
    with pytest.raises(ValueError, match="value_spread"):
        lee_clifton_epsilon_upper(0.5, count.sensitivity, count.value_spread, 4)


def test_sum_query_sensitivity_is_the_largest_value():
    worlds = possible_worlds([1, 2, 3, 10], "sum")
    assert worlds.sensitivity == 10 and worlds.value_spread == 9


@pytest.mark.parametrize(("call", "match"), [
    (lambda: lee_clifton_epsilon_upper(0.25, 1, 1, 4), r"rho must be in \(1/n, 1\)"),
    (lambda: lee_clifton_epsilon_upper(1.0, 1, 1, 4), r"rho must be in"),
    (lambda: lee_clifton_epsilon_upper(0.5, 1, 1, 1), "n .* must be an integer >= 2"),
    (lambda: lee_clifton_epsilon_upper(0.5, 0, 1, 4), "sensitivity"),
    (lambda: lee_clifton_epsilon_tight(0.2, [1, 2, 3, 4], 1), "rho must be in"),
    (lambda: lee_clifton_risk_upper(-1, 1, 1, 4), "epsilon must be finite and >= 0"),
    (lambda: lee_clifton_posterior(2.0, [1, 2], 0.0, 1), "epsilon must be a finite number > 0"),
    (lambda: lee_clifton_posterior(float("nan"), [1, 2], 1.0, 1), "gamma"),
    (lambda: possible_worlds([1, 2], "mean"), "universe must be a list of 3"),
    (lambda: possible_worlds([1, 2, 3], "mode"), "query must be one of"),
])
def test_lee_clifton_validation(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# ----------------------------------------------------------------------------- accuracy → epsilon
def test_smallest_epsilon_matches_closed_form():
    mechanism, workload = LaplaceIdentity(), Prefix(16)
    target = 3.0
    closed = math.sqrt(mechanism.expected_mse(workload, 1.0)) / target  # MSE ∝ 1/ε²
    found = smallest_epsilon(lambda e: math.sqrt(mechanism.expected_mse(workload, e)), target)
    assert found == pytest.approx(closed, rel=1e-9)


def test_smallest_epsilon_errors():
    with pytest.raises(ValueError, match="not reached even at epsilon=100"):
        smallest_epsilon(lambda e: 1 / e, target=1e-3)
    with pytest.raises(ValueError, match="low must be < high"):
        smallest_epsilon(lambda e: 1 / e, 1.0, low=2.0, high=1.0)
    assert smallest_epsilon(lambda e: 1 / e, 1e6) == 1e-4  # already met at the lower end


ANALYTIC = {k: m for k, m in MECHANISMS.items() if m.expected_mse(Prefix(16), 1.0) is not None}


@pytest.mark.parametrize("definition", ["pure", "approx", "zcdp"])
@pytest.mark.parametrize("mechanism", ANALYTIC.values(), ids=ANALYTIC.keys())
def test_rmse_target_is_met_exactly_for_analytic_mechanisms(mechanism, definition):
    workload, axis = Prefix(16), EpsilonAxis(definition, 1e-6)
    if definition == "pure" and mechanism.name.startswith("gaussian"):
        with pytest.raises(ValueError, match="never pure epsilon-DP"):  # refused by name, not run at some δ
            epsilon_for_accuracy(mechanism, workload, 2.0, "rmse", axis=axis)
        return
    choice = epsilon_for_accuracy(mechanism, workload, 2.0, "rmse", low=1e-3, high=1e4, axis=axis)
    assert choice.method == "analytic"
    assert math.sqrt(mechanism.expected_mse(workload, axis.privacy(choice.epsilon))) == pytest.approx(2.0, rel=1e-9)
    assert np.all(np.diff(choice.errors) <= 1e-12) and choice.epsilons.size == choice.errors.size


@dataclass(frozen=True)
class CountingMechanism:
    """expected_mse = 2/ε² + bias/ε (not ∝ 1/ε² unless bias = 0); counts its calls."""

    bias: float
    calls: list = field(default_factory=list)
    name: str = "counting"
    data_dependent: bool = False

    def expected_mse(self, workload, privacy):
        epsilon = laplace_epsilon(privacy)
        self.calls.append(epsilon)
        return 2 / epsilon**2 + self.bias / epsilon


def test_one_evaluation_draws_the_curve_when_rmse_scales_as_one_over_epsilon():
    mechanism = CountingMechanism(0.0)
    choice = epsilon_for_accuracy(mechanism, Identity(4), 0.5)
    assert choice.epsilon == pytest.approx(2 * math.sqrt(2), rel=1e-9)
    assert len(mechanism.calls) == 2  # ε = 1 for the curve, ε* to check the scaling


def test_search_falls_back_when_rmse_does_not_scale():
    mechanism = CountingMechanism(3.0)
    choice = epsilon_for_accuracy(mechanism, Identity(4), 0.5)
    assert math.sqrt(mechanism.expected_mse(None, choice.epsilon)) == pytest.approx(0.5, rel=1e-9)
    np.testing.assert_allclose(choice.errors, np.sqrt(2 / choice.epsilons**2 + 3 / choice.epsilons))


@pytest.mark.parametrize(("simultaneous", "count"), [(False, 1), (True, 8)])
def test_alpha_beta_bound_for_laplace_answers(simultaneous, count):
    workload = Prefix(8)  # Δ₁ = 8
    choice = epsilon_for_accuracy(LaplaceOnAnswers(), workload, 5.0, "max_abs", confidence=0.9,
                                  simultaneous=simultaneous)
    assert choice.method == "laplace bound"
    assert choice.epsilon == pytest.approx(8 * math.log(count / 0.1) / 5.0, rel=1e-9)


def test_mae_of_laplace_histogram_is_closed_form():
    choice = epsilon_for_accuracy(LaplaceIdentity(), Identity(50), 0.5, "mae")
    assert choice.epsilon == pytest.approx(2.0, rel=1e-9) and choice.method == "analytic"


def test_simulation_needs_data_and_says_why():
    with pytest.raises(ValueError, match="'uniform' has no closed-form error.*pass data="):
        epsilon_for_accuracy(Uniform(), Identity(8), 1.0)


@pytest.mark.statistical
def test_simulated_epsilon_meets_the_target():
    """Prefix sums of a Laplace histogram have no closed-form MAE: the simulated ε must deliver it."""
    x, workload = np.arange(32.0), Prefix(32)
    choice = epsilon_for_accuracy(LaplaceIdentity(), workload, 4.0, "mae", data=x, trials=300,
                                  points=12, rng=np.random.default_rng(7))
    assert choice.method == "simulation" and "this data only" in choice.note
    rng = np.random.default_rng(99)
    check = np.array([mae(workload.matvec(x), LaplaceIdentity().run(x, workload, choice.epsilon, rng).answers)
                      for _ in range(1000)])
    standard_error = check.std() * math.sqrt(1 / 1000 + 1 / 300)  # both estimates are noisy
    assert abs(check.mean() - 4.0) < 4 * standard_error
    assert abs(check.mean() - 4.0) > 0 and standard_error < 0.15  # the check can tell a 15 % miss


def test_target_out_of_reach():
    with pytest.raises(ValueError, match="not reached even at epsilon=1"):
        epsilon_for_accuracy(LaplaceIdentity(), Identity(4), 1e-3, high=1.0)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"metric": "mse"}, "metric must be one of"),
    ({"target": -1.0}, "target must be finite and > 0"),
    ({"confidence": 1.0}, r"confidence must be a number in \(0, 1\)"),
])
def test_epsilon_for_accuracy_validation(kwargs, match):
    args = {"mechanism": LaplaceIdentity(), "workload": Identity(4), "target": 1.0} | kwargs
    with pytest.raises(ValueError, match=match):
        epsilon_for_accuracy(**args)


# ----------------------------------------------------------------------------- accuracy at an epsilon
def test_accuracy_for_epsilon_closed_forms():
    acc = accuracy_for_epsilon(LaplaceOnAnswers(), Prefix(10), 0.5, confidence=0.9)  # Δ₁ = 10
    assert acc.noise_scale == 20.0 and acc.unit == "answer"
    assert acc.rmse == pytest.approx(20 * math.sqrt(2)) and acc.mae == 20.0
    assert acc.half_width == pytest.approx(20 * math.log(10))
    none = accuracy_for_epsilon(Uniform(), Identity(4), 1.0)
    assert none.rmse is None and none.half_width is None


@pytest.mark.statistical
def test_per_bin_and_simultaneous_intervals_cover():
    rng = np.random.default_rng(3)
    x = rng.integers(0, 50, size=20_000).astype(float)
    estimate = LaplaceIdentity().run(x, Identity(x.size), 0.5, rng).estimate
    lo, hi = laplace_confidence_intervals(estimate, 2.0, 0.9)
    coverage = np.mean((lo <= x) & (x <= hi))
    assert abs(coverage - 0.9) < 4 * math.sqrt(0.9 * 0.1 / x.size)
    assert laplace_confidence_intervals(estimate, 1.5, 0.9)[1][0] - estimate[0] < hi[0] - estimate[0]
    # simultaneous: every one of 50 bins inside, in at least 90 % of releases (union bound is conservative)
    small = x[:50]
    hits = []
    for _ in range(400):
        noisy = LaplaceIdentity().run(small, Identity(50), 0.5, rng).estimate
        lo, hi = laplace_confidence_intervals(noisy, 2.0, 0.9, simultaneous=True)
        hits.append(np.all((lo <= small) & (small <= hi)))
    assert np.mean(hits) >= 0.9 - 4 * math.sqrt(0.09 / 400)


@pytest.mark.statistical
def test_a_shared_hb_release_meets_every_group_target_and_costs_the_largest_share():
    from dplens.core.analysis.selection import AccuracyTarget, epsilon_for_targets
    from dplens.core.mechanisms import MECHANISMS
    from dplens.core.queries.workloads import Identity, Prefix, Total

    n = 1024
    targets = [AccuracyTarget("total ± 50", Total(n), 50.0),
               AccuracyTarget("prefixes, RMSE 20", Prefix(n), 20.0, "rmse", confidence=None),
               AccuracyTarget("bins, RMSE 5", Identity(n), 5.0, "rmse", confidence=None)]
    plans, best = epsilon_for_targets([MECHANISMS[m] for m in ("hb", "laplace-on-answers")], targets)
    hb = plans[0]
    assert best.shared == (1, 2) and best.reason == "laplace-on-answers, hb, hb"
    assert best.total == pytest.approx(best.epsilons[0] + max(best.epsilons[1:]))
    separate = sum(min(p.epsilons[g] for p in plans if p.epsilons[g] is not None) for g in range(3))
    assert best.total < separate  # sharing one release beats a release per group

    rng = np.random.default_rng(42)
    x = rng.poisson(30, n).astype(float)

    def simulated_rmse(epsilon: float) -> tuple[float, float]:
        prefix, bins = [], []
        for _ in range(200):
            estimate = MECHANISMS["hb"].run(x, Identity(n), epsilon, rng).estimate
            prefix.append(np.mean((Prefix(n).matvec(estimate) - Prefix(n).matvec(x)) ** 2))
            bins.append(np.mean((estimate - x) ** 2))
        return float(np.sqrt(np.mean(prefix))), float(np.sqrt(np.mean(bins)))

    shared = max(hb.epsilons[1], hb.epsilons[2])
    prefix_rmse, bins_rmse = simulated_rmse(shared)
    assert prefix_rmse <= 20.0 * 1.03 and bins_rmse <= 5.0 * 1.03  # both met by the one release
    assert max(prefix_rmse / 20.0, bins_rmse / 5.0) > 0.97  # the binding target is met tightly, not loosely
    prefix_rmse, bins_rmse = simulated_rmse(0.8 * shared)
    assert max(prefix_rmse / 20.0, bins_rmse / 5.0) > 1.1  # power: 20 % less ε misses a target


def test_the_laplace_scale_comes_from_the_classes_and_a_data_free_workload_has_scale_zero():
    from dplens.core.analysis.selection import laplace_answer_scale
    from dplens.core.mechanisms import MECHANISMS
    from dplens.core.queries.workloads import Explicit, Prefix

    assert laplace_answer_scale(MECHANISMS["identity"], Prefix(4), 0.5) == (2.0, "bin")
    assert laplace_answer_scale(MECHANISMS["laplace-on-answers"], Prefix(4), 0.5) == (8.0, "answer")
    assert laplace_answer_scale(MECHANISMS["laplace-on-answers"], Explicit(np.zeros((2, 3))), 1.0) == (0.0, "answer")
    assert laplace_answer_scale(MECHANISMS["hb"], Prefix(4), 0.5) is None
