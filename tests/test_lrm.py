"""LRM (Yuan et al. 2012): W = BL checked densely, Δ₁(L) ≤ 1, privacy, error formula vs simulation, noise scale."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dplens.core.mechanisms import MECHANISMS, configure
from dplens.core.mechanisms.lrm import (
    LRM,
    MAX_CELLS,
    _project_numpy,
    _svd_factorisation,
    optimisation_flops,
    project_columns_l1,
    row_space,
)
from dplens.core.queries.workloads import (
    AllRange,
    Explicit,
    Identity,
    Prefix,
    dense,
    random_linear,
    random_range,
)
from tests.conftest import fig1_workload

SMALL = {
    "prefix-16": Prefix(16),
    "all-range-8": AllRange(8),
    "random-range-32x10": random_range(32, 10, seed=3),
    "random-linear-40x12": random_linear(40, 12, 0.3, seed=1),
    "wda-fig1": fig1_workload(),
    "signed-rank-2": Explicit(np.array([[1.0, -1, 0, 2], [2, -2, 0, 4], [0, 1, 1, 0]])),
}


def _mixing_b(workload, f) -> np.ndarray:
    """B = W·V S⁻¹·C, built densely (the mechanism never builds it)."""
    return dense(workload) @ f.basis @ f.mixing


@pytest.mark.parametrize("workload", SMALL.values(), ids=SMALL.keys())
def test_factorisation_is_exact_and_l_has_sensitivity_at_most_one(workload):
    f = LRM().factorisation(workload)
    w = dense(workload)
    b = _mixing_b(workload, f)
    assert np.abs(w - b @ f.strategy).max() <= 1e-8 * max(1.0, np.abs(w).max())
    assert f.exact and f.residual <= 1e-8
    assert np.abs(f.strategy).sum(axis=0).max() <= 1 + 1e-12
    assert f.sensitivity == pytest.approx(np.abs(f.strategy).sum(axis=0).max())
    assert f.rank == np.linalg.matrix_rank(w)
    assert f.strategy.shape[0] == math.ceil(1.2 * f.rank)
    np.testing.assert_allclose(np.sum(b * b), f.trace, rtol=1e-8)  # tr(BᵀB) = ‖C‖_F² since U is orthonormal
    release = LRM().run(np.arange(workload.shape[1], dtype=float), workload, 0.7, np.random.default_rng(0))
    assert release.privacy_loss <= 0.7 + 1e-12
    assert release.params["noise_scale"] == pytest.approx(f.sensitivity / 0.7)


def test_row_space_reproduces_the_gram_matrix_by_svd_and_by_eigendecomposition():
    for workload in (random_range(20, 7, seed=1), AllRange(2048 // 16)):
        reduced, basis = row_space(workload)
        w = dense(workload)
        np.testing.assert_allclose(reduced.T @ reduced, w.T @ w, atol=1e-8 * np.abs(w.T @ w).max())
        u = w @ basis
        np.testing.assert_allclose(u.T @ u, np.eye(u.shape[1]), atol=1e-6)


def test_projection_onto_l1_ball_matches_sorting_rule(rng):
    v = rng.normal(size=(30, 50)) * rng.random(50) * 3
    out = project_columns_l1(v)
    np.testing.assert_allclose(_project_numpy(v, 1.0), out, atol=1e-13)  # compiled kernel vs vectorised oracle
    for j in range(v.shape[1]):
        u = np.sort(np.abs(v[:, j]))[::-1]
        if u.sum() <= 1:
            np.testing.assert_allclose(out[:, j], v[:, j])
            continue
        cumulative = np.cumsum(u)
        rho = np.flatnonzero(u > (cumulative - 1) / np.arange(1, u.size + 1))[-1]
        theta = (cumulative[rho] - 1) / (rho + 1)
        np.testing.assert_allclose(out[:, j], np.sign(v[:, j]) * np.maximum(np.abs(v[:, j]) - theta, 0), atol=1e-12)


def test_lrm_beats_identity_on_ranges_and_laplace_on_answers_on_random_linear():
    for workload, factor in ((Prefix(64), 0.5), (AllRange(32), 0.95), (random_range(128, 32, seed=1), 0.5)):
        assert LRM().expected_mse(workload, 1.0) < factor * MECHANISMS["identity"].expected_mse(workload, 1.0)
    workload = random_linear(60, 20, 0.4, seed=2)
    assert LRM().expected_mse(workload, 1.0) < MECHANISMS["laplace-on-answers"].expected_mse(workload, 1.0)


def test_identity_workload_is_solved_at_identity_error():
    assert LRM().expected_mse(Identity(16), 0.5) == pytest.approx(8.0, rel=1e-6)


@pytest.mark.statistical
@pytest.mark.parametrize("name", ["random-range-32x10", "wda-fig1"])
def test_empirical_mse_matches_expected_mse_with_power(name, rng):
    workload, epsilon = SMALL[name], 0.5
    mechanism = LRM()
    x = np.arange(workload.shape[1], dtype=float) % 7
    truth = workload.matvec(x)
    mses = np.array([np.mean((mechanism.run(x, workload, epsilon, rng).answers - truth) ** 2) for _ in range(3000)])
    expected = mechanism.expected_mse(workload, epsilon)
    standard_error = mses.std(ddof=1) / math.sqrt(mses.size)
    assert abs(mses.mean() - expected) < 4 * standard_error
    for wrong in (0.8 * expected, 1.2 * expected):  # a formula 20 % off would be caught
        assert abs(mses.mean() - wrong) > 4 * standard_error


@pytest.mark.statistical
def test_noise_on_lx_is_laplace_at_sensitivity_over_epsilon_and_the_test_has_power(rng):
    # r = rank(W): B = U C is then invertible on its range, so the noise η in B(Lx + η) can be read back
    workload = Explicit(np.random.default_rng(4).random((6, 6)))
    mechanism = LRM(rank=6)
    f = mechanism.factorisation(workload)
    x = np.arange(6.0)
    u = dense(workload) @ f.basis
    solve = np.linalg.inv(f.mixing)
    noise = np.concatenate([solve @ (u.T @ (mechanism.run(x, workload, 0.5, rng).answers - workload.matvec(x)))
                            for _ in range(2000)])
    scale = f.sensitivity / 0.5
    assert stats.kstest(noise, "laplace", args=(0, scale)).pvalue > 1e-6
    for wrong in (0.8 * scale, 1.2 * scale):
        assert stats.kstest(noise, "laplace", args=(0, wrong)).pvalue < 1e-6


def test_relaxed_gamma_keeps_the_residual_within_gamma_and_states_no_analytic_error():
    workload = random_range(64, 20, seed=5)
    relaxed = LRM(gamma=0.5)
    f = relaxed.factorisation(workload)
    w = dense(workload)
    assert 0 < np.linalg.norm(w - _mixing_b(workload, f) @ f.strategy) <= 0.5 + 1e-9
    assert relaxed.expected_mse(workload, 1.0) is None  # the bias depends on the data
    x = np.arange(64.0)
    bias = (w - _mixing_b(workload, f) @ f.strategy) @ x
    assert f.bias_squared(x) == pytest.approx(float(bias @ bias))
    release = relaxed.run(x, workload, 1.0, np.random.default_rng(0))
    assert release.privacy_loss <= 1.0 + 1e-12 and release.params["gamma"] == 0.5


@pytest.mark.statistical
def test_relaxed_error_is_variance_plus_bias_with_power(rng):
    workload, epsilon = random_range(64, 20, seed=5), 2.0
    relaxed = LRM(gamma=0.5)
    x = np.arange(64.0) * 3
    truth = workload.matvec(x)
    mses = np.array([np.mean((relaxed.run(x, workload, epsilon, rng).answers - truth) ** 2) for _ in range(3000)])
    expected = relaxed.expected_mse_on(x, workload, epsilon)
    f = relaxed.factorisation(workload)
    assert f.bias_squared(x) > 0.2 * f.expected_total_mse(epsilon)  # the bias matters at this size
    standard_error = mses.std(ddof=1) / math.sqrt(mses.size)
    assert abs(mses.mean() - expected) < 4 * standard_error
    variance_only = f.expected_total_mse(epsilon) / workload.shape[0]
    assert abs(mses.mean() - variance_only) > 4 * standard_error  # leaving out the bias would be caught


def test_unconverged_optimiser_says_so_and_stays_exact():
    workload = random_range(64, 20, seed=6)
    f = LRM(iterations=2).factorisation(workload)
    assert not f.converged and "not converged" in f.note
    assert f.exact
    release = LRM(iterations=2).run(np.ones(64), workload, 1.0, np.random.default_rng(0))
    assert "not converged" in release.params["note"]


def test_svd_last_resort_is_exact():
    reduced, _ = row_space(random_range(40, 12, seed=2))
    mixing, strategy = _svd_factorisation(reduced, 15)
    np.testing.assert_allclose(mixing @ strategy, reduced, atol=1e-10)
    assert np.abs(strategy).sum(axis=0).max() == pytest.approx(1.0)


def test_a_collapsed_rank_is_retried_with_a_stronger_first_penalty_not_left_at_the_start():
    # this start lost L's rank at 1/β = 0.1 (its projection missed W by 0.15): it is retried at 0.03
    workload = random_range(256, 64, seed=0)
    f = LRM(seed=1).factorisation(workload)
    assert "retried with 1/β from 0.03" in f.note and f.exact and not f.converged
    assert LRM(seed=1).expected_mse(workload, 1.0) < MECHANISMS["identity"].expected_mse(workload, 1.0)


def test_zero_workload_measures_nothing():
    workload = Explicit(np.zeros((3, 5)))
    release = LRM().run(np.ones(5), workload, 1.0, np.random.default_rng(0))
    assert release.privacy_loss == 0 and np.all(release.answers == 0)
    assert LRM().expected_mse(workload, 1.0) == 0


def test_estimate_only_when_w_has_full_column_rank():
    rng = np.random.default_rng(0)
    assert LRM().run(np.ones(16), Prefix(16), 1.0, rng).estimate.shape == (16,)
    assert LRM().run(np.ones(32), random_range(32, 10, seed=3), 1.0, rng).estimate is None


@pytest.mark.parametrize("params, message", [
    ({"rank_ratio": 0.5}, "rank_ratio must be a number >= 1"),
    ({"gamma": -1.0}, "gamma must be a finite number >= 0"),
    ({"iterations": 0}, "iterations must be an integer >= 1"),
    ({"rank": 0}, "rank must be None or an integer >= 1"),
])
def test_bad_settings_name_the_parameter(params, message):
    with pytest.raises(ValueError, match=message):
        LRM(**params)


def test_rank_below_rank_of_w_and_too_many_cells_are_refused():
    with pytest.raises(ValueError, match="rank must be >= rank"):
        LRM(rank=3).factorisation(Prefix(8))
    with pytest.raises(ValueError, match=f"at most {MAX_CELLS} cells"):
        LRM().factorisation(Prefix(MAX_CELLS + 1))
    with pytest.raises(ValueError, match="floating-point operations"):
        LRM().factorisation(Prefix(2048))


def test_cost_estimate_is_the_optimisation_and_a_refused_workload_costs_nothing():
    from dplens.core.analysis.cost import estimate_cost

    small, large = estimate_cost(LRM(), Prefix(256)), estimate_cost(LRM(), Prefix(512))
    assert 0 < small.seconds < large.seconds < 600 and "cubic in n" in large.driver
    refused = estimate_cost(LRM(), Prefix(2048))
    assert refused.seconds < 0.01 and "refuses" in refused.driver
    with pytest.raises(ValueError, match="floating-point operations"):
        LRM().run(np.ones(2048), Prefix(2048), 1.0, np.random.default_rng(0))


def test_configure_from_strings_and_cost_is_cubic_in_n():
    assert configure(MECHANISMS["lrm"], {"rank_ratio": "1.5", "gamma": "0"}) == LRM(rank_ratio=1.5)
    assert LRM().estimated_flops(Prefix(512)) / LRM().estimated_flops(Prefix(256)) > 6
    assert optimisation_flops(random_linear(1000, 200, 0.2)) < LRM().estimated_flops(Prefix(1000))
