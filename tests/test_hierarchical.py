"""hb: tree construction, exact least squares, HDMM's published errors, simulation, privacy, 2-D."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from dplens.core.mechanisms import MECHANISMS, configure
from dplens.core.mechanisms.hierarchical import Hierarchical, build_tree, qardaji_branching
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
from tests.conftest import assert_expected_mse_with_power

HB = MECHANISMS["hb"]
H2 = dataclasses.replace(HB, branching=2)


def strategy_matrix(tree) -> np.ndarray:
    """Dense 0/1 matrix of the measured tree nodes (test oracle)."""
    rows, cols = tree.shape
    out = []
    for level, measured in zip(tree.levels, tree.measured, strict=True):
        if measured:
            for r0, r1, c0, c1 in zip(level.r0, level.r1, level.c0, level.c1, strict=True):
                block = np.zeros((rows, cols))
                block[r0:r1, c0:c1] = 1
                out.append(block.ravel())
    return np.array(out)


def dense_expected_mse(strategy: np.ndarray, workload, epsilon: float) -> float:
    """Matrix-mechanism error with uniform noise Lap(Δ₁/ε): 2Δ₁²·tr(WᵀW(AᵀA)⁻¹)/(mε²) (Li et al., PODS 2010)."""
    w = dense(workload)
    sensitivity = np.abs(strategy).sum(axis=0).max()
    trace = np.trace(w.T @ w @ np.linalg.inv(strategy.T @ strategy))
    return 2 * sensitivity**2 * trace / (w.shape[0] * epsilon**2)


def test_qardaji_branching_matches_the_exhaustive_search():
    def variance(n, b):
        h = 1
        while b**h < n:
            h += 1
        return (b - 1) * h**3 - 2 * (b + 1) * h**2 / 3

    for n in (5, 64, 100, 1000, 2048, 4096):
        brute = min(range(2, n + 1), key=lambda b: (variance(n, b), b))
        assert qardaji_branching(n) == brute
    assert qardaji_branching(2048) == 46  # HDMM's HB at n = 2048 (oned.csv) uses this tree


@pytest.mark.parametrize("shape, branching, root", [((1, 13), 2, True), ((1, 13), 3, False), ((1, 64), 4, True),
                                                    ((5, 7), 2, True), ((4, 6), 3, False), ((1, 1), 2, False)])
def test_two_pass_least_squares_equals_dense_lstsq(shape, branching, root):
    tree = build_tree(shape, branching, root)
    a = strategy_matrix(tree)
    y = np.random.default_rng(1).normal(size=a.shape[0])
    bounds = np.cumsum([0] + [lv.r0.size if m else 0 for lv, m in zip(tree.levels, tree.measured, strict=True)])
    blocks = [y[s:e] if m else None for s, e, m in zip(bounds[:-1], bounds[1:], tree.measured, strict=True)]
    expected = np.linalg.lstsq(a, y, rcond=None)[0]
    np.testing.assert_allclose(tree.least_squares(blocks, a.shape[1]), expected, atol=1e-10)
    np.testing.assert_allclose(tree.column_norms(), np.abs(a).sum(axis=0))
    assert tree.height == np.abs(a).sum(axis=0).max()


def test_branching_and_root_defaults_follow_the_references():
    assert HB.branching == "auto" and HB.tree((2048,)).measured[0] is False   # Qardaji's HB: no root
    assert H2.tree((2048,)).measured[0] is True and H2.tree((2048,)).height == 12  # Hay's H2: root
    assert configure(HB, {"branching": "3"}).branching == 3
    assert configure(HB, {"include_root": "yes"}).include_root is True
    for bad in (1, 0, "two", True, 2.5):
        with pytest.raises(ValueError, match="branching must be"):
            Hierarchical(branching=bad)
    with pytest.raises(ValueError, match="include_root must be"):
        Hierarchical(include_root="maybe")


# HDMM experiments/journal/oned.csv, n = 2048 (the reference values)
PUBLISHED = [("all-range", 2, 5.063062655737136), ("all-range", "auto", 7.663403928228973),
             ("prefix", 2, 3.977631302415767), ("prefix", "auto", 7.713618071894534)]


@pytest.mark.parametrize("workload, branching, published", PUBLISHED)
def test_hdmm_published_rmse_at_unit_noise(workload, branching, published):
    """HDMM scales tr(WᵀW(AᵀA)⁻¹) by Δ₂² = max diag(AᵀA) = h; Laplace needs Δ₁² = h² (docs/mechanisms.md, "hb").

    So our RMSE at ε = √2 is HDMM's × √h: e.g. H2 all-range 5.0631 × √12 = 17.539.
    """
    w = AllRange(2048) if workload == "all-range" else Prefix(2048)
    mechanism = dataclasses.replace(HB, branching=branching)
    levels = mechanism.tree((2048,)).height
    rmse = math.sqrt(mechanism.expected_mse(w, math.sqrt(2)))
    assert rmse / math.sqrt(levels) == pytest.approx(published, rel=0.02)
    assert rmse / math.sqrt(levels) == pytest.approx(published, rel=1e-9)  # the same tree, to round-off


@pytest.mark.parametrize("mechanism", [H2, HB, dataclasses.replace(HB, branching=3, include_root=True)],
                         ids=["h2", "auto", "b3-root"])
@pytest.mark.parametrize("workload", [Prefix(13), AllRange(13), random_range(13, 9, seed=3), Total(13),
                                      Explicit(np.random.default_rng(2).normal(size=(4, 13)))],
                         ids=["prefix", "all-range", "ranges", "total", "explicit"])
def test_expected_mse_equals_the_dense_matrix_mechanism_formula(mechanism, workload):
    strategy = strategy_matrix(mechanism.tree((13,)))
    assert mechanism.expected_mse(workload, 0.7) == pytest.approx(dense_expected_mse(strategy, workload, 0.7),
                                                                  rel=1e-9)


@pytest.mark.parametrize("workload", [Kron((AllRange(5), Prefix(6))), Kron((Identity(5), Total(6))),
                                      Stack((Kron((Identity(5), Total(6))), Kron((Total(5), Identity(6)))))],
                         ids=["range-2d", "rows", "marginals"])
def test_2d_expected_mse_uses_the_quadtree(workload):
    strategy = strategy_matrix(H2.tree((5, 6)))
    assert H2.expected_mse(workload, 1.3) == pytest.approx(dense_expected_mse(strategy, workload, 1.3), rel=1e-9)


@pytest.mark.statistical
@pytest.mark.parametrize("mechanism, x, workload", [
    (H2, np.arange(13.0), random_range(13, 20, seed=4)),
    (HB, np.arange(40.0), Prefix(40)),
    (H2, np.arange(30.0).reshape(5, 6), Kron((AllRange(5), AllRange(6)))),
], ids=["h2-ranges", "hb-prefix", "h2-2d"])
def test_empirical_mse_matches_expected_mse_with_power(mechanism, x, workload, rng):
    assert_expected_mse_with_power(mechanism, x, workload, 0.8, 2000, rng)


@pytest.mark.parametrize("shape", [(100,), (9, 7)])
@pytest.mark.parametrize("mechanism", [H2, HB], ids=["h2", "auto"])
def test_privacy_loss_is_the_tree_height_times_the_per_level_epsilon(mechanism, shape, rng):
    x = np.ones(shape)
    workload = Identity(x.size) if len(shape) == 1 else Kron((Identity(shape[0]), Identity(shape[1])))
    release = mechanism.run(x, workload, 0.5, rng)
    tree = mechanism.tree(shape)
    assert release.params["noise_scale"] == pytest.approx(tree.height / 0.5)
    assert release.privacy_loss == pytest.approx(0.5)  # uniform budget: h levels × ε/h
    assert release.privacy_loss <= 0.5 + 1e-9


def test_2d_input_runs_on_the_quadtree_and_noise_free_limit_is_exact(rng):
    counts = np.random.default_rng(5).poisson(9, size=(6, 10)).astype(float)
    release = H2.run(counts, Kron((Prefix(6), Prefix(10))), 1000.0, rng)  # noise scale 0.005
    np.testing.assert_allclose(release.estimate, counts.ravel(), atol=0.2)
    assert release.params["levels"] == build_tree((6, 10), 2, True).height == 5  # ⌈log₂ 10⌉ + root
