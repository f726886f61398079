"""The discrete Gaussian's exact (ε, δ) (CKS 2020 Thm. 7) against a brute lattice sum, and the σ the app draws."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dplens.core.mechanisms import MECHANISMS
from dplens.core.privacy.definitions import ApproxDP, analytic_gaussian_sigma, gaussian_delta, zcdp_rho, zcdp_sigma
from dplens.core.privacy.discrete_gaussian import (
    discrete_gaussian_delta,
    discrete_gaussian_epsilon,
    discrete_gaussian_sigma,
)
from dplens.core.queries.workloads import Identity

GRID = [(e, d) for d in (1e-9, 1e-6, 1e-5, 1e-4) for e in (0.05, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0)]


def _brute_delta(epsilon: float, sigma: float) -> float:
    """CKS 2020 Thm. 7 in its tail form, P[Y > εσ² − 1/2] − e^ε P[Y > εσ² + 1/2], by summing the whole lattice."""
    half = int(60 * sigma + 60 + epsilon * sigma**2)
    y = np.arange(-half, half + 1, dtype=float)
    p = np.exp(-(y**2) / (2 * sigma**2))
    p /= math.fsum(p)
    t = epsilon * sigma**2
    return math.fsum(p[y > t - 0.5]) - math.exp(epsilon) * math.fsum(p[y > t + 0.5])


@pytest.mark.parametrize(("epsilon", "delta"), GRID)
def test_the_lattice_sum_matches_the_theorem_at_the_apps_sigmas(epsilon, delta):
    for sigma in (analytic_gaussian_sigma(epsilon, delta), zcdp_sigma(zcdp_rho(epsilon, delta))):
        assert discrete_gaussian_delta(epsilon, sigma) == pytest.approx(_brute_delta(epsilon, sigma), rel=1e-6,
                                                                      abs=1e-18)


def test_the_continuous_curve_understates_the_discrete_delta():
    """At the analytic-Gaussian σ the discrete Gaussian is not (ε, δ)-DP: δ is 3.5 % too small at ε = 1, δ = 1e-5."""
    sigma = analytic_gaussian_sigma(1.0, 1e-5)
    assert gaussian_delta(1.0, sigma) == pytest.approx(1e-5, rel=1e-6)
    assert discrete_gaussian_delta(1.0, sigma) == pytest.approx(1.0346e-5, rel=1e-4)
    assert discrete_gaussian_delta(8.0, analytic_gaussian_sigma(8.0, 1e-6)) > 3e-6


@pytest.mark.parametrize(("epsilon", "delta"), GRID)
def test_the_calibrated_sigma_meets_both_curves_and_is_barely_larger(epsilon, delta):
    sigma = discrete_gaussian_sigma(epsilon, delta)
    continuous = analytic_gaussian_sigma(epsilon, delta)
    assert continuous <= sigma <= 1.05 * continuous  # at most +3.4 % on this grid (ε = 5, δ = 1e-4)
    assert _brute_delta(epsilon, sigma) <= delta and gaussian_delta(epsilon, sigma) <= delta * (1 + 1e-9)
    assert discrete_gaussian_epsilon(sigma, delta) <= epsilon


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 5.0])
def test_an_integer_gaussian_identity_release_states_a_loss_valid_for_the_discrete_gaussian(epsilon):
    from dplens.core.privacy.noise import noise_source

    mechanism = MECHANISMS["gaussian-identity"]
    counts = np.array([3.0, 0.0, 7.0, 1.0])
    rng = noise_source("secure", mechanism=mechanism, counts=counts)
    assert rng.integer  # the discrete Gaussian on the integers
    release = mechanism.run(counts, Identity(4), ApproxDP(epsilon, 1e-6), rng)
    assert release.privacy_loss <= epsilon
    assert _brute_delta(epsilon, release.params["sigma"]) <= release.params["delta"] == 1e-6
    assert np.all(release.estimate == np.round(release.estimate))
