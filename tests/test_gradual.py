"""Gradual release (Koufogiannis, Han & Pappas; Ligett et al., Alg. 1) and accuracy-first search (Ligett et al.)."""

import math

import numpy as np
import pytest
from scipy.stats import kstest

from dplens.core.privacy.budget import Budget, Ledger
from dplens.core.queries.workloads import Identity, Prefix, random_range
from dplens.core.release.gradual import (
    above_threshold,
    above_threshold_params,
    accuracy_first,
    charge_step,
    cumulative_loss,
    doubling_search,
    doubling_test_epsilon,
    geometric_grid,
    gradual_release,
    histogram_error,
    increments,
    next_release,
    noise_reduction,
)

SCHEDULE = [0.1, 0.3, 1.0, 2.0]


def ks_has_power(noise: np.ndarray, scale: float) -> None:
    """The right Laplace scale passes and a 20 % wrong one fails (see docs/benchmarks.md, "Test conventions")."""
    assert kstest(noise, "laplace", args=(0, scale)).pvalue > 1e-6
    for wrong in (0.8 * scale, 1.2 * scale):
        assert kstest(noise, "laplace", args=(0, wrong)).pvalue < 1e-6


@pytest.mark.statistical
def test_every_marginal_is_laplace_at_its_epsilon():
    v = np.linspace(-50, 50, 20_000)
    walk = noise_reduction(v, 2.0, SCHEDULE, np.random.default_rng(11))
    for step, epsilon in zip(walk, SCHEDULE, strict=True):
        ks_has_power(step - v, 2.0 / epsilon)


@pytest.mark.statistical
def test_keep_rates_and_mean_errors():
    d = 40_000
    walk = noise_reduction(np.zeros(d), 1.0, SCHEDULE, np.random.default_rng(5))
    for t, expected in enumerate([1 / 9, 0.09, 0.25]):
        rate = np.mean(walk[t] == walk[t + 1])
        assert abs(rate - expected) < 4 * math.sqrt(expected * (1 - expected) / d)
    for step, expected in zip(walk, [10, 10 / 3, 1, 0.5], strict=True):  # E|Lap(b)| = b, sd b
        assert abs(np.mean(np.abs(step)) - expected) < 4 * expected / math.sqrt(d)


@pytest.mark.statistical
def test_keep_probability_for_half_and_one():
    d = 40_000
    walk = noise_reduction(np.full(d, 3.0), 1.0, [0.5, 1.0], np.random.default_rng(2))
    assert abs(np.mean(walk[0] == walk[1]) - 0.25) < 4 * math.sqrt(0.25 * 0.75 / d)


def test_walk_is_reproducible_and_coins_are_per_coordinate():
    a = noise_reduction(np.zeros(1000), 1.0, [0.5, 1.0], np.random.default_rng(1))
    b = noise_reduction(np.zeros(1000), 1.0, [0.5, 1.0], np.random.default_rng(1))
    c = noise_reduction(np.zeros(1000), 1.0, [0.5, 1.0], np.random.default_rng(2))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    kept = a[0] == a[1]
    assert 0 < kept.sum() < kept.size  # a shared coin would keep all or none (the keep coin is per coordinate)


@pytest.mark.statistical
def test_forward_step_marginal_and_stay_rate():
    rng = np.random.default_rng(21)
    d = 40_000
    v = np.linspace(0, 100, d)
    y1 = v + rng.laplace(scale=1.0 / 0.5, size=d)
    y2 = next_release(y1, v, 1.0, 0.5, 1.0, rng)
    ks_has_power(y2 - v, 1.0)
    assert abs(np.mean(y2 == y1) - 0.25) < 4 * math.sqrt(0.25 * 0.75 / d)  # averaged (ε₁/ε₂)²
    y3 = next_release(y2, v, 1.0, 1.0, 4.0, rng)  # chain a second online step
    ks_has_power(y3 - v, 0.25)


@pytest.mark.statistical
def test_forward_stay_probability_at_zero_distance():
    d = 40_000
    v = np.zeros(d)
    y2 = next_release(v, v, 1.0, 0.5, 2.0, np.random.default_rng(4))
    assert abs(np.mean(y2 == 0) - 0.25) < 4 * math.sqrt(0.25 * 0.75 / d)  # ε₁/ε₂


def test_ledger_charges_the_last_epsilon_not_the_sum():
    schedule = [0.1, 0.2, 0.35, 0.6, 1.0]
    ledger = Ledger(Budget(1.0))
    previous = 0.0
    for epsilon in schedule:
        ledger = charge_step(ledger, f"gradual {epsilon}", previous, epsilon)
        previous = epsilon
    assert ledger.spent.epsilon == pytest.approx(1.0, abs=1e-12)
    assert math.fsum(increments(schedule)) == pytest.approx(1.0, abs=1e-15)
    nr, independent = cumulative_loss(schedule)
    np.testing.assert_allclose(nr, schedule)
    np.testing.assert_allclose(independent, np.cumsum(schedule))


@pytest.mark.parametrize(("call", "match"), [
    (lambda: noise_reduction(np.zeros(2), 1.0, [1.0, 0.5], np.random.default_rng(0)), "strictly increasing"),
    (lambda: noise_reduction(np.zeros(2), 1.0, [0.5, 0.5], np.random.default_rng(0)), "strictly increasing"),
    (lambda: noise_reduction(np.zeros(2), 0.0, [0.5, 1.0], np.random.default_rng(0)), "sensitivity"),
    (lambda: noise_reduction(np.zeros(2), -1.0, [0.5, 1.0], np.random.default_rng(0)), "sensitivity"),
    (lambda: noise_reduction(np.zeros(2), 1.0, [0.0, 1.0], np.random.default_rng(0)), "each epsilon"),
    (lambda: noise_reduction([np.nan], 1.0, [0.5, 1.0], np.random.default_rng(0)), "finite"),
    (lambda: next_release(np.zeros(2), np.zeros(2), 1.0, 1.0, 0.5, np.random.default_rng(0)), "strictly"),
    (lambda: next_release(np.zeros(3), np.zeros(2), 1.0, 0.5, 1.0, np.random.default_rng(0)), "shape"),
    (lambda: charge_step(Ledger(Budget(1.0)), "x", 0.5, 0.4), "strictly increasing"),
])
def test_gradual_validation(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_overspend_is_refused():
    with pytest.raises(ValueError, match="remaining is epsilon=0.5"):
        charge_step(Ledger(Budget(1.0)).spend("other", Budget(0.5)), "step", 0.2, 0.8)


# ----------------------------------------------------------------------------- accuracy first
# (values from the reference code, sparsevec.compute_epsilon)
def test_above_threshold_parameters():
    s, b, epsilon_a = above_threshold_params(0.1, 0.1, 1.0, 1000, "opt")
    assert (s, b) == pytest.approx((0.0120071, 0.00412503), abs=5e-8)
    assert epsilon_a == pytest.approx(484.845, abs=5e-4)
    assert above_threshold_params(0.1, 0.1, 1e-3, 1000, "opt")[2] == pytest.approx(0.484845, rel=2e-6)
    s, b, epsilon_a = above_threshold_params(0.1, 0.1, 1.0, 1000, "fixed")
    assert (s, b) == pytest.approx((0.05, 0.00241101), abs=5e-9)
    assert epsilon_a == pytest.approx(829.529, abs=5e-4)
    assert doubling_test_epsilon(0.1, 0.1, 1.0, 11) == pytest.approx(80.1467, rel=1e-6)


@pytest.mark.parametrize(("call", "match"), [
    (lambda: above_threshold_params(0.1, 0.1, 1.0, 10, "best"), "threshold must be one of"),
    (lambda: above_threshold_params(0.0, 0.1, 1.0, 10), "alpha"),
    (lambda: above_threshold_params(0.1, 1.0, 1.0, 10), "gamma"),
    (lambda: above_threshold_params(0.1, 0.1, 1.0, 0), "steps"),
    (lambda: geometric_grid(1.0, 1.0, 5), "epsilon_min must be < epsilon_max"),
    (lambda: geometric_grid(0.1, 1.0, 1), "steps"),
    (lambda: histogram_error(np.zeros(3), Identity(3), "mse"), "metric"),
])
def test_accuracy_first_validation(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_grid_includes_epsilon_max():
    grid = geometric_grid(0.01, 5.0, 7)
    assert grid[0] == 0.01 and grid[-1] == 5.0 and np.allclose(np.diff(np.log(grid)), np.log(500) / 6)


def test_above_threshold_stops_at_first_low_query():
    rng = np.random.default_rng(0)
    assert above_threshold([9.0, 8.0, 0.5, 0.1], 1.0, 1e6, 1.0, rng) == 2
    assert above_threshold([9.0, 8.0], 1.0, 1e6, 1.0, rng) is None


@pytest.mark.parametrize("metric", ["rmse", "mae", "max_abs"])
def test_error_sensitivity_bounds_one_record(metric):
    rng = np.random.default_rng(8)
    workload = random_range(12, 30, seed=1)
    x = rng.integers(0, 9, size=12).astype(float)
    error, sensitivity = histogram_error(x, workload, metric)
    for _ in range(20):
        theta = x + rng.laplace(scale=3.0, size=12)
        for j in range(12):
            neighbour = x.copy()
            neighbour[j] += 1
            assert abs(error(theta) - histogram_error(neighbour, workload, metric)[0](theta)) <= sensitivity + 1e-12


def test_success_reports_ex_post_and_ex_ante():
    x = np.full(1024, 20.0)
    result = accuracy_first(x, Prefix(1024), 100.0, epsilon_max=5.0, rng=np.random.default_rng(3))
    assert result.succeeded and result.estimate.shape == x.shape
    assert result.ex_post_loss == pytest.approx(result.epsilon_above_threshold + result.epsilons[result.stopped_at])
    assert result.ex_ante_cap == pytest.approx(result.epsilon_above_threshold + 5.0)
    assert result.epsilons[-1] == 5.0


def test_failure_releases_nothing_and_costs_epsilon_a():
    x = np.full(256, 20.0)
    result = accuracy_first(x, Identity(256), 1e-3, epsilon_max=0.5, rng=np.random.default_rng(3))
    assert not result.succeeded and result.estimate is None
    assert result.ex_post_loss == result.epsilon_above_threshold


@pytest.mark.statistical
def test_guarantee_holds_with_probability_one_minus_gamma():
    rng = np.random.default_rng(12)
    x = rng.integers(0, 30, size=512).astype(float)
    failures, stops, runs = 0, 0, 100
    for _ in range(runs):
        result = accuracy_first(x, Identity(512), 1.5, epsilon_max=20.0, steps=15, gamma=0.1, rng=rng)
        stops += result.succeeded
        failures += result.succeeded and result.errors[result.stopped_at] > 1.5
    assert stops > 0.8 * runs
    assert failures <= 0.1 * runs + 4 * math.sqrt(0.09 * runs)


def test_doubling_baseline_pays_every_step():
    x = np.full(1024, 20.0)
    result = doubling_search(x, Identity(1024), 1.0, epsilon_max=8.0, epsilon_min=0.01,
                             rng=np.random.default_rng(1))
    k = result.stopped_at
    assert k is not None and result.epsilons.size == math.floor(math.log2(800)) + 2
    assert result.privacy_loss == pytest.approx(result.epsilons[: k + 1].sum() + (k + 1) * result.epsilon_test)


def _pair_tail_probability(walk: np.ndarray, threshold: float) -> float:
    return float(np.mean((walk[0] > threshold) & (walk[1] > threshold)))


@pytest.mark.statistical
@pytest.mark.parametrize("construction", ["backward", "forward"])
def test_prefix_costs_the_last_epsilon_on_neighbours(construction):
    """P[(y1, y2) ∈ S | v'] ≤ e^{ε2}·P[(y1, y2) ∈ S | v] for v' = v + Δ, and independent noise breaks it.

    S = {y1 > 3, y2 > 3}. Noise reduction keeps the ratio at e^{ε2} = e; independent releases at ε1 and
    ε2 reach e^{ε1+ε2} ≈ 4.48 on this event (the prefix costs its largest ε; the neighbour check of see
    docs/benchmarks.md, "Test conventions").
    """
    rng, d, schedule = np.random.default_rng(31), 1_000_000, [0.5, 1.0]

    def walk(value: float) -> np.ndarray:
        v = np.full(d, value)
        if construction == "backward":
            return noise_reduction(v, 1.0, schedule, rng)
        first = v + rng.laplace(scale=2.0, size=d)
        return np.stack([first, next_release(first, v, 1.0, 0.5, 1.0, rng)])

    p, p_neighbour = _pair_tail_probability(walk(0.0), 3.0), _pair_tail_probability(walk(1.0), 3.0)
    independent = np.stack([rng.laplace(scale=1 / e, size=d) for e in schedule])
    q, q_neighbour = _pair_tail_probability(independent, 3.0), _pair_tail_probability(independent + 1.0, 3.0)
    tolerance = 4 * math.sqrt(1 / (p * d) + 1 / (p_neighbour * d))  # relative SE of the ratio, 4σ
    assert p_neighbour / p <= math.e * (1 + tolerance)
    assert q_neighbour / q > math.e * (1 + tolerance)  # the check can tell the two apart


def test_gradual_release_records_report_the_prefix_loss():
    workload = Prefix(16)
    x = np.arange(16.0)
    releases = gradual_release(x, workload, SCHEDULE, np.random.default_rng(0))
    assert [r.epsilon for r in releases] == SCHEDULE
    for release in releases:
        assert release.privacy_loss <= release.epsilon + 1e-9
        assert release.privacy_loss == pytest.approx(release.epsilon)
        np.testing.assert_allclose(release.answers, workload.matvec(release.estimate))
    with pytest.raises(ValueError, match="strictly increasing"):
        gradual_release(x, workload, SCHEDULE[::-1], np.random.default_rng(0))
