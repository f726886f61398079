"""mm-opt: objective and gradient, least squares, exact expected_mse, simulation, privacy, limits."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy.optimize import approx_fprime

from dplens.core.mechanisms import MECHANISMS
from dplens.core.mechanisms.gram import gram_rows
from dplens.core.mechanisms.matrix import (
    MAX_CELLS,
    START_MEAN,
    PIdentity,
    _objective,
    _projected_lbfgs,
    auto_p,
    settings,
)
from dplens.core.queries.workloads import AllRange, Explicit, Kron, Prefix, dense, random_range
from tests.conftest import assert_expected_mse_with_power

MM = MECHANISMS["mm-opt"]


def strategy_matrix(strategy: PIdentity) -> np.ndarray:
    n = strategy.theta.shape[1]
    return np.vstack([np.eye(n), strategy.theta]) / strategy.scaling


@pytest.mark.parametrize("workload", [AllRange(12), Prefix(12), random_range(12, 7, seed=1),
                                      Kron((Prefix(3), AllRange(4)))], ids=["all-range", "prefix", "ranges", "kron"])
def test_objective_is_the_trace_and_the_gradient_is_exact(workload):
    p, n = 3, 12
    theta = np.random.default_rng(0).random(p * n)
    gram_diag = workload.column_norms(2) ** 2
    value, grad = _objective(theta, p, workload, gram_diag)
    a = strategy_matrix(PIdentity(theta.reshape(p, n), 0.0))
    w = dense(workload)
    assert value == pytest.approx(np.trace(w.T @ w @ np.linalg.inv(a.T @ a)), rel=1e-10)
    numeric = approx_fprime(theta, lambda t: _objective(t, p, workload, gram_diag)[0], 1e-6)
    np.testing.assert_allclose(grad, numeric, rtol=1e-4, atol=1e-4 * np.abs(grad).max())


@pytest.mark.parametrize("n", [1, 2, 7, 33])
def test_closed_form_grams_match_a_dense_oracle(n):
    # prefix: G_ij = n − max(i, j); all-range: (min(i, j) + 1)(n − max(i, j)), 0-based
    i, j = np.indices((n, n))
    oracles = {Prefix(n): n - np.maximum(i, j), AllRange(n): (np.minimum(i, j) + 1) * (n - np.maximum(i, j))}
    v = np.random.default_rng(n).normal(size=(3, n))
    for workload, gram in oracles.items():
        np.testing.assert_allclose(gram, dense(workload).T @ dense(workload))
        np.testing.assert_allclose(gram_rows(workload, v), v @ gram, rtol=1e-12, atol=1e-9)
    ranges = random_range(n, 5, seed=n)
    np.testing.assert_allclose(gram_rows(ranges, v), v @ dense(ranges).T @ dense(ranges), atol=1e-9)


def test_projected_lbfgs_finds_a_bound_constrained_minimum():
    # min ½‖x − c‖² over x ≥ 0 is max(c, 0): the negative coordinates end on the bound
    c = np.random.default_rng(3).normal(size=50)
    x, value = _projected_lbfgs(lambda x: (0.5 * float((x - c) @ (x - c)), x - c), np.ones(50), 200, 1e-12)
    np.testing.assert_allclose(x, np.maximum(c, 0.0), atol=1e-6)
    assert value == pytest.approx(0.5 * float(np.sum(np.minimum(c, 0.0) ** 2)), rel=1e-6)


def test_strategy_has_unit_sensitivity_least_squares_and_the_exact_error():
    workload = random_range(24, 30, seed=2)
    strategy = MM.strategy(workload)
    assert MM.strategy(workload) is strategy  # cached per workload …
    assert MM.strategy(random_range(24, 30, seed=2)) is strategy  # … by content: a sweep re-parses it
    a = strategy_matrix(strategy)
    np.testing.assert_allclose(np.abs(a).sum(axis=0), 1.0)  # Δ_A = 1
    y = np.random.default_rng(1).normal(size=a.shape[0])
    np.testing.assert_allclose(strategy.least_squares(y), np.linalg.lstsq(a, y, rcond=None)[0], atol=1e-9)
    w = dense(workload)
    exact = 2 * np.trace(w @ np.linalg.inv(a.T @ a) @ w.T) / (w.shape[0] * 0.5**2)
    assert MM.expected_mse(workload, 0.5) == pytest.approx(exact, rel=1e-9)


@pytest.mark.parametrize("workload", [AllRange(128), Prefix(128)], ids=["all-range", "prefix"])
def test_optimised_strategy_beats_identity_hb_and_privelet(workload):
    mine = MM.expected_mse(workload, 1.0)
    for other in ("identity", "hb", "privelet"):
        assert mine < MECHANISMS[other].expected_mse(workload, 1.0)
    assert mine < 0.95 * MECHANISMS["hb"].expected_mse(workload, 1.0)


def test_more_restarts_never_do_worse():
    workload = Explicit(np.random.default_rng(4).integers(0, 2, size=(15, 20)))
    one = MM.expected_mse(workload, 1.0)
    assert dataclasses.replace(MM, restarts=3).expected_mse(workload, 1.0) <= one + 1e-12


@pytest.mark.statistical
@pytest.mark.parametrize("x, workload", [(np.arange(32.0), random_range(32, 25, seed=6)),
                                         (np.arange(20.0).reshape(4, 5), Kron((AllRange(4), AllRange(5))))],
                         ids=["1d", "2d"])
def test_empirical_mse_matches_expected_mse_with_power(x, workload, rng):
    assert_expected_mse_with_power(MM, x, workload, 0.6, 2000, rng)


def test_privacy_loss_is_computed_from_the_strategy_columns(rng):
    release = MM.run(np.ones(40), Prefix(40), 0.3, rng)
    assert release.privacy_loss == pytest.approx(0.3)
    assert release.privacy_loss <= 0.3 + 1e-9
    assert release.params["p"] == 2  # n // 16


def test_parameters_and_size_limit_are_validated():
    for bad in (0, "x", True):
        with pytest.raises(ValueError, match="p must be"):
            dataclasses.replace(MM, p=bad)
    with pytest.raises(ValueError, match="restarts must be"):
        dataclasses.replace(MM, restarts=0)
    assert dataclasses.replace(MM, p="4").p == 4
    with pytest.raises(ValueError, match=f"at most {MAX_CELLS} cells"):
        MM.expected_mse(Prefix(MAX_CELLS + 1), 1.0)


def test_rows_and_settings_by_domain_size():
    # n/16 as in HDMM up to 2048 cells (at most 96), then bounded so that an iteration's p²n stays 2^26
    assert [auto_p(n) for n in (40, 1024, 2048, 4096, 8192, 16384)] == [2, 64, 96, 128, 90, 64]
    assert auto_p(2048, large=True) == 128
    small, mid, large = settings(512, 32), settings(2048, 96), settings(4096, 128)
    assert small.start == settings(1024, 64).start == 1.0  # HDMM's uniform start up to 1024 cells …
    assert mid.start * 96 / 2 == pytest.approx(START_MEAN) and large.start * 128 / 2 == pytest.approx(START_MEAN)
    assert small.tolerance < mid.tolerance < settings(1024, 64).tolerance and mid.window > small.window
    assert large.iterations < mid.iterations


def test_projected_lbfgs_stops_on_the_window():
    # a slowly decreasing value: a longer window at the same tolerance runs at least as long
    calls = {5: 0, 20: 0}
    for window in calls:
        def function(x, window=window):
            calls[window] += 1
            return float(x @ x) + 1.0, 2.0 * x
        _projected_lbfgs(function, np.ones(4), 50, 1e-3, window)
    assert calls[20] >= calls[5] > 1


def test_cost_estimate_follows_the_optimiser():
    from dplens.core.analysis.cost import estimate_cost

    seconds = [estimate_cost(MM, Prefix(n)).seconds for n in (256, 1024, 2048, 4096, MAX_CELLS)]
    assert seconds == sorted(seconds) and seconds[0] < 0.5 and 3 < seconds[2] < 15 and 10 < seconds[-1] < 40
    assert estimate_cost(dataclasses.replace(MM, restarts=2), Prefix(2048)).seconds > 1.8 * (seconds[2] - 0.1)
