"""Mechanisms: the contract for every registry entry, and the baselines' accuracy (see docs/benchmarks.md, "Test
conventions")."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dplens.core.mechanisms import laplace_privacy_loss
from dplens.core.queries.workloads import Identity, Stack, Total
from dplens.core.registry import histogram_mechanisms
from tests import contract_checks as checks

MECHANISMS = histogram_mechanisms()  # the registry's, at collection time

ALL = pytest.mark.parametrize("mechanism", MECHANISMS.values(), ids=MECHANISMS.keys())


@ALL
@pytest.mark.parametrize("kind", checks.KINDS)
@pytest.mark.parametrize("epsilon", checks.EPSILONS)
def test_privacy_loss_is_computed_and_within_epsilon(mechanism, kind, epsilon, rng):
    checks.check_privacy_loss_within_epsilon(mechanism, kind, epsilon, rng)


@ALL
def test_mechanism_accepts_1d_or_2d_input(mechanism, rng):
    checks.check_accepts_1d_or_2d_input(mechanism, rng)


@ALL
def test_registry_entry_is_a_frozen_dataclass_with_a_kebab_name(mechanism):
    checks.check_registered_frozen_dataclass_with_a_kebab_name(mechanism)


@ALL
def test_same_seed_same_release_different_seed_different(mechanism):
    checks.check_same_seed_same_release_different_seed_different(mechanism)


@ALL
@pytest.mark.parametrize("epsilon", checks.BAD_EPSILONS.values(), ids=checks.BAD_EPSILONS.keys())
def test_run_rejects_bad_epsilon(mechanism, epsilon, rng):
    checks.check_run_rejects_bad_epsilon(mechanism, epsilon, rng)


@ALL
@pytest.mark.parametrize("x, message", checks.BAD_DATA.values(), ids=checks.BAD_DATA.keys())
def test_run_rejects_bad_data(mechanism, x, message, rng):
    checks.check_run_rejects_bad_data(mechanism, x, message, rng)


@ALL
def test_expected_mse_is_positive_or_none(mechanism):
    checks.check_expected_mse_is_positive_or_none(mechanism)


def test_laplace_privacy_loss_adds_blocks_per_column():
    assert laplace_privacy_loss([(np.array([1.0, 2]), 2.0), (np.array([1.0, 0]), 1.0)]) == 1.5
    assert laplace_privacy_loss([(np.zeros(3), 0.0)]) == 0.0
    with pytest.raises(ValueError, match="Laplace scale > 0"):
        laplace_privacy_loss([(np.ones(3), 0.0)])


# ----------------------------------------------------------------------------- baselines on WDA's Fig. 1
def test_fig1_test_vectors(fig1):
    identity, lm_w = MECHANISMS["identity"], MECHANISMS["laplace-on-answers"]
    assert identity.expected_mse(fig1.workload, 1.0) == pytest.approx(3.25)
    assert lm_w.expected_mse(fig1.workload, 1.0) == pytest.approx(32.0)
    release = lm_w.run(fig1.x, fig1.workload, 1.0, np.random.default_rng(0))
    assert release.params["sensitivity"] == 4.0 and release.params["noise_scale"] == 4.0
    assert release.privacy_loss == pytest.approx(1.0)
    assert identity.run(fig1.x, fig1.workload, 1.0, np.random.default_rng(0)).privacy_loss == pytest.approx(1.0)


def _trial_mses(mechanism, x, workload, epsilon, trials, rng):
    truth = workload.matvec(x.ravel())
    return np.array([np.mean((mechanism.run(x, workload, epsilon, rng).answers - truth) ** 2)
                     for _ in range(trials)])


@pytest.mark.statistical
@pytest.mark.parametrize("name, epsilon", [("identity", 1.0), ("identity", 0.3), ("laplace-on-answers", 1.0)])
def test_empirical_mse_matches_expected_mse_with_power(name, epsilon, fig1, rng):
    mechanism = MECHANISMS[name]
    mses = _trial_mses(mechanism, fig1.x, fig1.workload, epsilon, 4000, rng)
    expected = mechanism.expected_mse(fig1.workload, epsilon)
    standard_error = mses.std(ddof=1) / math.sqrt(mses.size)
    assert abs(mses.mean() - expected) < 4 * standard_error
    for wrong in (0.8 * expected, 1.2 * expected):  # a formula 20 % off would be caught
        assert abs(mses.mean() - wrong) > 4 * standard_error


@pytest.mark.statistical
def test_identity_noise_has_scale_one_over_epsilon_and_the_test_has_power(rng):
    n = 20_000
    release = MECHANISMS["identity"].run(np.zeros(n), Identity(n), 0.5, rng)
    noise = release.estimate
    np.testing.assert_array_equal(release.answers, noise)
    assert stats.kstest(noise, "laplace", args=(0, 2.0)).pvalue > 1e-6
    for wrong in (1.6, 2.4):
        assert stats.kstest(noise, "laplace", args=(0, wrong)).pvalue < 1e-6


@pytest.mark.statistical
def test_laplace_on_answers_noise_scale_uses_the_l1_sensitivity(rng):
    n = 10_000
    workload = Stack((Identity(n), Identity(n)))  # every column is in two queries: Δ₁ = 2
    x = np.full(n, 5.0)
    release = MECHANISMS["laplace-on-answers"].run(x, workload, 0.5, rng)
    noise = release.answers - workload.matvec(x)
    assert release.estimate is None
    assert stats.kstest(noise, "laplace", args=(0, 4.0)).pvalue > 1e-6
    for wrong in (3.2, 4.8):
        assert stats.kstest(noise, "laplace", args=(0, wrong)).pvalue < 1e-6


@pytest.mark.statistical
def test_uniform_spreads_a_noisy_total_with_scale_one_over_epsilon(rng):
    x = np.array([7.0, 0, 1, 12])
    mechanism, workload = MECHANISMS["uniform"], Total(4)
    releases = [mechanism.run(x, workload, 2.0, rng) for _ in range(20_000)]
    assert all(np.ptp(r.estimate) == 0 for r in releases[:10])  # spread evenly
    noise = np.array([r.answers[0] for r in releases]) - x.sum()
    assert stats.kstest(noise, "laplace", args=(0, 0.5)).pvalue > 1e-6
    for wrong in (0.4, 0.6):
        assert stats.kstest(noise, "laplace", args=(0, wrong)).pvalue < 1e-6
    assert mechanism.expected_mse(workload, 2.0) is None


@ALL
def test_every_registered_mechanism_says_in_a_line_what_it_does(mechanism):
    """The Release picker and Compare's list show ``summary``: plain words, no internal references."""
    checks.check_says_in_a_line_what_it_does(mechanism)
