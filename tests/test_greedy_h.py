"""Greedy-H: bucket Grams and the recursive inverse against dense oracles, HDMM's published error values,
expected_mse against simulation (with power), privacy accounting and validation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dplens.core.mechanisms import MECHANISMS, greedy_h
from dplens.core.mechanisms.greedy_h import (
    MAX_UNITS,
    GreedyH,
    bucket_gram,
    gram_sketch,
    greedy_hierarchy,
    hierarchy_trace,
)
from dplens.core.queries.workloads import (
    AllRange,
    Explicit,
    Identity,
    Kron,
    Prefix,
    Stack,
    Total,
    dense,
    random_range,
)


def _expansion(bounds: np.ndarray, n: int) -> np.ndarray:
    e = np.zeros((n, bounds.size - 1))
    for c in range(bounds.size - 1):
        e[bounds[c]:bounds[c + 1], c] = 1.0 / (bounds[c + 1] - bounds[c])
    return e


def _strategy(tree) -> np.ndarray:
    a = np.zeros((tree.query_weight.size, tree.units))
    for row, (start, size, weight) in enumerate(zip(tree.query_start, tree.query_size, tree.query_weight,
                                                    strict=True)):
        a[row, start:start + size] = weight
    return a


WORKLOADS = [Prefix(13), AllRange(11), random_range(17, 40, seed=2), Identity(9), Total(7),
             Stack((Prefix(10), Identity(10))), Explicit(np.random.default_rng(1).normal(size=(5, 12))),
             Kron((Prefix(3), Identity(4)))]


@pytest.mark.parametrize("workload", WORKLOADS, ids=lambda w: type(w).__name__)
def test_bucket_gram_is_the_reduced_workload_gram(workload):
    n = workload.shape[1]
    matrix = dense(workload)
    rng = np.random.default_rng(n)
    bounds = np.concatenate(([0], np.sort(rng.choice(np.arange(1, n), size=4, replace=False)), [n]))
    reduced = matrix @ _expansion(bounds, n)
    gram, exact = bucket_gram(workload, bounds)
    assert exact
    np.testing.assert_allclose(gram, reduced.T @ reduced, atol=1e-9)
    np.testing.assert_allclose(bucket_gram(workload, np.arange(n + 1))[0], matrix.T @ matrix, atol=1e-9)


@pytest.mark.parametrize("workload", [Prefix(13), AllRange(16), random_range(23, 30, seed=3), Total(6),
                                      Kron((Identity(3), Total(4)))], ids=lambda w: type(w).__name__)
@pytest.mark.parametrize("branching", [2, 3])
def test_hierarchy_inverse_matches_dense_least_squares(workload, branching):
    matrix = dense(workload)
    gram = matrix.T @ matrix
    tree = greedy_hierarchy(gram, branching)
    a = _strategy(tree)
    pinv = np.linalg.pinv(a.T @ a)
    y = np.random.default_rng(0).normal(size=a.shape[0])
    np.testing.assert_allclose(tree.least_squares(y), pinv @ a.T @ y, atol=1e-9)
    assert tree.trace == pytest.approx(np.trace(gram @ pinv), rel=1e-9)
    np.testing.assert_allclose(tree.cell_l1, np.abs(a).sum(axis=0))
    np.testing.assert_allclose(tree.cell_l1, 1.0)  # weights on every root-to-leaf path sum to one
    x = np.arange(workload.shape[1], dtype=float)
    np.testing.assert_allclose(tree.measure(x), a @ x)


@pytest.mark.parametrize("workload", [Prefix(40), random_range(37, 50, seed=4), Kron((Identity(3), Total(4)))],
                         ids=lambda w: type(w).__name__)
def test_sketched_strategy_and_its_trace_against_dense(workload):
    matrix = dense(workload)
    gram = matrix.T @ matrix
    n = workload.shape[1]
    exact = greedy_hierarchy(gram)
    assert hierarchy_trace(exact, gram) == pytest.approx(exact.trace, rel=1e-10)
    sketched = greedy_hierarchy(None, sketch=gram_sketch(workload, np.arange(n + 1), 64))
    assert math.isnan(sketched.trace)
    a = _strategy(sketched)
    assert hierarchy_trace(sketched, gram) == pytest.approx(np.trace(gram @ np.linalg.pinv(a.T @ a)), rel=1e-9)
    np.testing.assert_allclose(sketched.cell_l1, 1.0)


def test_large_domains_use_the_sketch_and_keep_an_exact_expected_mse(monkeypatch):
    monkeypatch.setattr(greedy_h, "EXACT_CELLS", 16)
    greedy_h._STRATEGIES.clear()
    greedy_h._TRACES.clear()
    workload = random_range(48, 60, seed=8)
    release = GreedyH().run(np.arange(48.0), workload, 1.0, np.random.default_rng(0))
    assert release.params["gram"].startswith("sketch")
    tree = release.details["hierarchy"]
    a, matrix = _strategy(tree), dense(workload)
    exact_trace = np.trace(matrix.T @ matrix @ np.linalg.pinv(a.T @ a))
    assert GreedyH().expected_mse(workload, 1.0) == pytest.approx(2 * exact_trace / 60, rel=1e-9)


def test_constant_gram_blocks_become_single_queries():
    # Kron(Identity(3), Total(4)) reads only the sums of cells 0-3, 4-7, 8-11: a tree node inside one
    # block has equal Gram columns and is asked as one query with nothing below it
    matrix = dense(Kron((Identity(3), Total(4))))
    tree = greedy_hierarchy(matrix.T @ matrix)
    asked = sorted(zip(tree.query_start.tolist(), tree.query_size.tolist(), strict=True))
    assert asked == [(0, 3), (3, 1), (4, 2), (6, 1), (7, 1), (8, 1), (9, 3)]
    assert greedy_hierarchy(np.ones((4, 4))).query_size.tolist() == [4]


@pytest.mark.parametrize("workload, published", [(AllRange(2048), 10.434183108946742),
                                                 (Prefix(2048), 10.922352441068325)],
                         ids=["all-range", "prefix"])
def test_hdmm_published_rmse_at_unit_noise(workload, published):
    """HDMM's experiments/journal/oned.csv: RMSE = sqrt(tr(WᵀW(AᵀA)⁻¹)·max diag(AᵀA)/m) (an L2 scaling).

    Our expected_mse is the Laplace error, scaled by Δ₁² = 1 instead of HDMM's Δ₂² = max diag(AᵀA) < 1,
    so at ε = √2 (2/ε² = 1) it is larger by the factor 1/Δ₂² (docs/mechanisms.md, "greedy-h").
    """
    mechanism = GreedyH()
    m = workload.shape[0]
    rmse = math.sqrt(mechanism.expected_mse(workload, math.sqrt(2)))
    tree = greedy_hierarchy(bucket_gram(workload, np.arange(workload.shape[1] + 1))[0])
    squared_weights = np.zeros(tree.units + 1)
    np.add.at(squared_weights, tree.query_start, tree.query_weight**2)
    np.add.at(squared_weights, tree.query_start + tree.query_size, -tree.query_weight**2)
    l2_squared = np.cumsum(squared_weights)[:-1].max()
    hdmm_rmse = math.sqrt(tree.trace * l2_squared / m)
    assert hdmm_rmse == pytest.approx(published, rel=0.02)
    assert hdmm_rmse == pytest.approx(published, rel=1e-6)  # the same strategy, to round-off
    assert rmse == pytest.approx(math.sqrt(tree.trace / m), rel=1e-12)
    assert rmse == pytest.approx(published / math.sqrt(l2_squared), rel=1e-9)


@pytest.mark.statistical
@pytest.mark.parametrize("workload", [Prefix(48), random_range(40, 60, seed=5)], ids=["prefix", "ranges"])
def test_expected_mse_matches_simulation_with_power(workload, rng):
    mechanism = GreedyH()
    epsilon, runs = 0.7, 3000
    x = np.random.default_rng(9).poisson(30, size=workload.shape[1]).astype(float)
    truth = workload.matvec(x)
    per_run = np.array([np.mean((mechanism.run(x, workload, epsilon, rng).answers - truth) ** 2)
                        for _ in range(runs)])
    expected = mechanism.expected_mse(workload, epsilon)
    standard_error = per_run.std(ddof=1) / math.sqrt(runs)
    assert abs(per_run.mean() - expected) < 4 * standard_error
    for wrong in (0.85 * expected, 1.15 * expected):  # power: a 15 % error in the formula is caught
        assert abs(per_run.mean() - wrong) > 4 * standard_error


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 3.0])
def test_privacy_loss_is_the_strategy_sensitivity_over_the_scale(epsilon, rng):
    release = GreedyH().run(np.arange(32.0), random_range(32, 50, seed=1), epsilon, rng)
    assert release.privacy_loss == pytest.approx(epsilon, rel=1e-12)
    assert release.privacy_loss <= epsilon + 1e-9
    assert release.params["noise_scale"] == pytest.approx(1.0 / epsilon, rel=1e-12)


def test_registered_and_data_independent():
    assert isinstance(MECHANISMS["greedy-h"], GreedyH)
    assert MECHANISMS["greedy-h"].data_dependent is False


def test_same_seed_same_estimate():
    x, w = np.arange(20.0), Prefix(20)
    a = GreedyH().run(x, w, 1.0, np.random.default_rng(1))
    b = GreedyH().run(x, w, 1.0, np.random.default_rng(1))
    np.testing.assert_array_equal(a.estimate, b.estimate)


def test_least_squares_at_the_largest_epsilon_recovers_the_data():
    x = np.random.default_rng(3).poisson(10, size=30).astype(float)
    release = GreedyH().run(x, AllRange(30), 1000.0, np.random.default_rng(0))
    np.testing.assert_allclose(release.estimate, x, atol=0.05)


@pytest.mark.parametrize("knobs, message", [({"branching": 1}, "branching must be"),
                                            ({"granularity": 1}, "granularity must be"),
                                            ({"branching": 2.5}, "branching must be")])
def test_bad_knobs_raise(knobs, message):
    with pytest.raises(ValueError, match=message):
        GreedyH(**knobs)


def test_too_many_units_is_refused():
    with pytest.raises(ValueError, match=f"at most {MAX_UNITS} units"):
        greedy_hierarchy(np.zeros((MAX_UNITS + 1, 1)))
    with pytest.raises(ValueError, match=f"at most {MAX_UNITS} buckets"):
        bucket_gram(Prefix(MAX_UNITS + 1), np.arange(MAX_UNITS + 2))


def test_runs_beyond_the_dense_limit_but_expected_mse_says_why_not():
    n = 2 * MAX_UNITS
    release = GreedyH().run(np.ones(n), random_range(n, 100, seed=0), 1.0, np.random.default_rng(0))
    assert release.privacy_loss == pytest.approx(1.0)
    with pytest.raises(ValueError, match="expected_mse needs the dense"):
        GreedyH().expected_mse(random_range(n, 100, seed=0), 1.0)


@pytest.mark.parametrize("spec", ["prefix", "all-range", "random-range", "identity"])
@pytest.mark.parametrize("n", [64, 256])
def test_l2_weights_normalise_squares_and_are_never_worse_for_gaussian_noise(spec, n):
    """gaussian-greedy-h's tree: squared weights sum to 1 on every root path (Δ₂ = 1), and its
    Δ₂² tr(WᵀW (AᵀA)⁻¹) is at most the L1 tree's (about 18 % lower RMSE at n = 64, 26 % at n = 256 on ranges)."""
    from dplens.core.mechanisms.greedy_h import cell_strategy, l2_objective, sum_along_paths
    from dplens.core.queries.workloads import parse_workload

    workload = parse_workload(spec, (n,), np.random.default_rng(0))
    l1_tree, l2_tree = cell_strategy(workload, 2, 100, 1)[0], cell_strategy(workload, 2, 100, 2)[0]
    assert l2_objective(l2_tree) <= l2_objective(l1_tree) * (1 + 1e-12)
    if spec != "identity":
        assert l2_objective(l2_tree) < 0.7 * l2_objective(l1_tree)  # squared RMSE
        squares = sum_along_paths(n, l2_tree.query_start, l2_tree.query_size, l2_tree.query_weight**2)
        np.testing.assert_allclose(squares, 1.0, rtol=1e-9)
        gram = dense(workload).T @ dense(workload)
        assert hierarchy_trace(l2_tree, gram) == pytest.approx(l2_tree.trace, rel=1e-9)
