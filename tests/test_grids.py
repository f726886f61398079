"""ugrid / agrid (Qardaji et al. ICDE 2013), and 2-D input for identity, uniform, hb, privelet."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy import stats

from dplens.core.mechanisms import MECHANISMS
from dplens.core.queries.workloads import AllRange, Identity, Kron, Prefix, Total
from tests.conftest import assert_expected_mse_with_power

UG, AG = MECHANISMS["ugrid"], MECHANISMS["agrid"]
COUNTS = np.random.default_rng(11).poisson(50, size=(30, 40)).astype(float)


@pytest.mark.parametrize("mechanism", [UG, AG], ids=["ugrid", "agrid"])
def test_1d_input_is_rejected_with_a_clear_message(mechanism, rng):
    with pytest.raises(ValueError, match=r"needs a 2-D histogram \(rows, cols\); got data of shape \(12,\)"):
        mechanism.run(np.ones(12), Identity(12), 1.0, rng)


@pytest.mark.parametrize("mechanism", [UG, AG], ids=["ugrid", "agrid"])
@pytest.mark.parametrize("epsilon", [0.05, 1.0])
def test_privacy_loss_sums_the_total_and_grid_levels(mechanism, epsilon, rng):
    release = mechanism.run(COUNTS, Kron((Prefix(30), Prefix(40))), epsilon, rng)
    assert release.privacy_loss == pytest.approx(epsilon)
    assert release.privacy_loss <= epsilon + 1e-9
    assert release.estimate.sum() == pytest.approx(release.answers[-1])  # the full rectangle


def test_ugrid_size_follows_sqrt_n_epsilon_over_c(rng):
    sparse = np.random.default_rng(2).poisson(1.0, size=(30, 40)).astype(float)
    release = UG.run(sparse, Total(1200), 1.0, rng)
    m = int(np.ceil(np.sqrt(release.params["noisy_total"] * 0.95 / 10)))  # 95 % of ε is the grid's
    assert release.params["grid"] == (m, m) and 5 < m < 30
    assert abs(release.params["noisy_total"] - sparse.sum()) < 200  # Lap(1/(0.05 ε)) = Lap(20)


@pytest.mark.statistical
def test_ugrid_one_cell_blocks_have_laplace_noise_at_the_grid_budget_with_power(rng):
    mechanism = dataclasses.replace(UG, c=1e-9)  # m ≥ every axis: each block is one cell
    samples = np.concatenate([mechanism.run(COUNTS, Identity(1200), 0.5, rng).estimate - COUNTS.ravel()
                              for _ in range(8)])
    scale = 1 / (0.95 * 0.5)
    assert stats.kstest(samples, "laplace", args=(0, scale)).pvalue > 1e-6
    for wrong in (0.8 * scale, 1.2 * scale):
        assert stats.kstest(samples, "laplace", args=(0, wrong)).pvalue < 1e-6


@pytest.mark.statistical
def test_agrid_consistency_halves_the_block_variance_with_power(rng):
    # c huge: m₂ = 1, so each coarse block is counted twice at ε/2 each; the inverse-variance average
    # has variance 1/ε₁² (one count alone: 2/ε₁²)
    mechanism = dataclasses.replace(AG, c=1e12)
    x = np.full((20, 20), 3.0)
    errors = []
    for _ in range(300):
        estimate = mechanism.run(x, Identity(400), 1.0, rng).estimate.reshape(20, 20)
        errors.append((estimate - x).reshape(10, 2, 10, 2).sum(axis=(1, 3)).ravel())
    variance = np.var(np.concatenate(errors))
    eps_level = 0.5 * 0.95
    expected = 1 / eps_level**2
    assert variance == pytest.approx(expected, rel=0.05)
    assert abs(variance - 2 * expected) > 0.5 * expected


def test_agrid_refines_dense_blocks_more_than_sparse_ones(rng):
    x = np.zeros((40, 40))
    x[:20, :20] = 500.0
    release = AG.run(x, Identity(1600), 1.0, rng)
    m1 = max(10, int(np.ceil(np.sqrt(release.params["noisy_total"] * 0.95 / 10) / 4)))
    assert release.params["coarse_grid"] == (m1, m1)
    assert release.params["fine_blocks"] > np.prod(release.params["coarse_grid"])


@pytest.mark.parametrize("name", ["ugrid", "agrid"])
def test_grid_parameters_are_validated(name):
    with pytest.raises(ValueError, match="total_ratio must be a number in"):
        dataclasses.replace(MECHANISMS[name], total_ratio=1.0)
    with pytest.raises(ValueError, match="c must be a finite number > 0"):
        dataclasses.replace(MECHANISMS[name], c=0)
    if name == "agrid":
        with pytest.raises(ValueError, match="alpha must be a number in"):
            dataclasses.replace(AG, alpha=0)


@pytest.mark.statistical
@pytest.mark.parametrize("name", ["identity", "hb", "privelet"])
def test_2d_input_matches_expected_mse_with_power(name, rng):
    x = np.arange(24.0).reshape(4, 6)
    assert_expected_mse_with_power(MECHANISMS[name], x, Kron((AllRange(4), Prefix(6))), 0.7, 2000, rng)


def test_uniform_accepts_2d_input_and_spreads_the_noisy_total(rng):
    release = MECHANISMS["uniform"].run(COUNTS, Kron((Total(30), Total(40))), 1.0, rng)
    assert release.estimate.shape == (1200,)
    np.testing.assert_allclose(release.estimate, release.estimate[0])
    assert release.answers[0] == pytest.approx(release.estimate.sum())
    assert abs(release.answers[0] - COUNTS.sum()) < 50  # Lap(1) noise on the total
