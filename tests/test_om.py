"""OM (Huang, Han, Li & Yu, corrected): exact factorisation test vectors, group normalisation, privacy, exact
expected_mse."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dplens.core.mechanisms import MECHANISMS
from dplens.core.mechanisms.om import OM, independent_rows, literal_algorithm3_mixing, om_decompose
from dplens.core.queries.workloads import Explicit, dense, l1_sensitivity, random_linear

EXAMPLE_1 = np.array([[.3657, 0, .9812, 0], [0, .0645, 0, 0], [0, .5879, .7602, 0], [0, 0, 0, .7310],
                      [0, .7313, 0, 0], [0, 0, .7122, .9053]])
# Huang et al.'s Algorithm 3 leaves B's last row zero here (one group of two rows)
COUNTER = np.array([[1.0, 1], [1, -1], [2, 0]])


def census() -> Explicit:
    """The OM paper's census example (Sec. 1): cells Sex × Race{W,B} × Salary{H,L}; q1..q4 sum over sex, q5 = q1+q3,
    q6 = q2+q4."""
    rows = []
    for race, salary in [(0, 0), (0, 1), (1, 0), (1, 1)]:
        row = np.zeros(8)
        row[[race * 2 + salary, 4 + race * 2 + salary]] = 1
        rows.append(row)
    rows += [rows[0] + rows[2], rows[1] + rows[3]]
    return Explicit(np.array(rows), label="census")


def _lm_total(workload, epsilon=1.0) -> float:
    return workload.shape[0] * MECHANISMS["laplace-on-answers"].expected_mse(workload, epsilon)


def _assert_exact(workload, f):
    np.testing.assert_allclose(f.mixing @ f.reduced.toarray(), dense(workload), atol=1e-9)


def test_example_1():
    workload = Explicit(EXAMPLE_1)
    f = om_decompose(workload)
    _assert_exact(workload, f)
    assert l1_sensitivity(workload) == pytest.approx(2.4536)
    assert f.sensitivity == 1.0
    assert f.groups == ((0,), (1,), (2,), (3,))  # every column its own atom: W̃ = I_4, B = W
    assert float(np.sum(f.mixing**2)) == pytest.approx(4.42013825)
    assert _lm_total(workload) == pytest.approx(72.24184, abs=1e-5)
    assert f.expected_total_mse(1.0) == pytest.approx(8.84028, abs=1e-5)
    assert OM().expected_mse(workload, 1.0) == pytest.approx(1.47338, abs=1e-5)


def test_census_example():
    workload = census()
    f = om_decompose(workload)
    _assert_exact(workload, f)
    assert f.groups == ((0, 4), (1, 5), (2, 6), (3, 7))
    assert f.group_sizes == (1, 1, 1, 1)
    assert f.expected_total_mse(1.0) == pytest.approx(16.0)
    assert _lm_total(workload) == pytest.approx(48.0)


def test_algorithm3_counterexample_needs_block_least_squares():
    workload = Explicit(COUNTER)
    f = om_decompose(workload)
    np.testing.assert_allclose(f.reduced.toarray(), [[.5, .5], [.5, -.5]])
    np.testing.assert_allclose(f.mixing, [[2, 0], [0, 2], [2, 2]], atol=1e-12)
    assert f.sensitivity == 1.0  # group-level normalisation; per-row would give 2
    assert f.expected_total_mse(1.0) == pytest.approx(32.0)
    assert _lm_total(workload) == pytest.approx(96.0)
    literal = literal_algorithm3_mixing(workload, f)
    assert np.all(literal[2] == 0)  # the paper's Algorithm 3 leaves row 3 of B empty ...
    assert not np.allclose(literal @ f.reduced.toarray(), COUNTER)  # ... so W ≠ BW̃


def test_unqueried_columns_are_dropped_not_looped_on():
    matrix = np.array([[1.0, 0, 2, 0], [0, 0, 1, 0], [1, 0, 3, 0]])  # columns 1 and 3 never queried
    f = om_decompose(Explicit(matrix))
    assert all(1 not in g and 3 not in g for g in f.groups)
    _assert_exact(Explicit(matrix), f)


def test_all_zero_workload_releases_exact_zeros(rng):
    release = OM().run(np.ones(3), Explicit(np.zeros((2, 3))), 1.0, rng)
    assert release.privacy_loss == 0.0
    np.testing.assert_array_equal(release.answers, 0.0)
    assert OM().expected_mse(Explicit(np.zeros((2, 3))), 1.0) == 0.0


def test_independent_rows_is_first_found_greedy():
    assert independent_rows(COUNTER, 1e-12).tolist() == [0, 1]
    assert independent_rows(np.array([[0.0, 0], [1, 1], [2, 2], [0, 1]]), 1e-12).tolist() == [1, 3]


@pytest.mark.parametrize("row_seed", [None, 0, 5])
@pytest.mark.parametrize("tau", [0.05, 0.2, 0.8])
def test_random_workloads_factorise_exactly_and_account_privacy(row_seed, tau, rng):
    # m > n makes rows dependent, so the signatures are over a proper subset R of the rows
    workload = random_linear(30, m=45, tau=tau, seed=11)
    f = om_decompose(workload, row_seed=row_seed)
    _assert_exact(workload, f)
    column_l1 = np.abs(f.reduced.toarray()).sum(axis=0)
    assert column_l1.max() <= f.sensitivity + 1e-12
    for a in range(len(f.groups)):  # groups are orthogonal: disjoint column supports
        for b in range(a + 1, len(f.groups)):
            assert not set(f.groups[a]) & set(f.groups[b])
    release = OM(row_seed=row_seed).run(np.ones(30), workload, 0.4, rng)
    assert release.privacy_loss == pytest.approx(0.4)


def test_om_ties_identity_on_the_papers_random_workloads():
    """The OM paper's random workload (Sec. 5): at m = 200, n = 1000 every column is its own atom, so OM = Identity (on
    queried cells)."""
    for tau in (0.2, 0.8):
        workload = random_linear(1000, m=200, tau=tau, seed=1)
        f = om_decompose(workload)
        assert len(f.groups) == 1000 and set(f.group_sizes) == {1}
        om, identity = OM().expected_mse(workload, 1.0), MECHANISMS["identity"].expected_mse(workload, 1.0)
        assert om == pytest.approx(identity)
        assert om == pytest.approx(2 * 1000 * tau / 3, rel=0.02)  # ≈ 2nτ/(3ε²)


def test_registry_entry():
    assert MECHANISMS["om"] == OM()
    with pytest.raises(ValueError, match="tol must be a finite number >= 0"):
        om_decompose(Explicit(COUNTER), tol=-1.0)


@pytest.mark.statistical
@pytest.mark.parametrize("name, epsilon", [("census", 1.0), ("counter", 0.5)])
def test_empirical_mse_matches_expected_mse_with_power(name, epsilon, rng):
    workload = census() if name == "census" else Explicit(COUNTER)
    x = np.arange(float(workload.shape[1])) + 3
    truth = workload.matvec(x)
    mechanism = OM()
    mses = np.array([np.mean((mechanism.run(x, workload, epsilon, rng).answers - truth) ** 2)
                     for _ in range(4000)])
    standard_error = mses.std(ddof=1) / math.sqrt(mses.size)
    expected = mechanism.expected_mse(workload, epsilon)
    assert abs(mses.mean() - expected) < 4 * standard_error
    # power: Theorem 5 read as per-query (×m), LM_W, and ±20 % are rejected
    lm_w = MECHANISMS["laplace-on-answers"].expected_mse(workload, epsilon)
    for wrong in (expected * workload.shape[0], lm_w, 0.8 * expected, 1.2 * expected):
        assert abs(mses.mean() - wrong) > 4 * standard_error


def test_random_linear_generator_is_seeded_sparse_with_density_tau():
    import scipy.sparse as sp

    from dplens.core.queries.workloads import parse_workload

    a = parse_workload("random-linear:m=100,tau=0.3,seed=2", (400,))
    assert sp.issparse(a.matrix) and a.shape == (100, 400)
    assert (a.matrix != parse_workload("random-linear:m=100,tau=0.3,seed=2", (400,)).matrix).nnz == 0
    assert (a.matrix != random_linear(400, m=100, tau=0.3, seed=3).matrix).nnz > 0
    assert a.matrix.nnz / 40_000 == pytest.approx(0.3, abs=4 * math.sqrt(0.21 / 40_000))
    assert a.matrix.data.min() > 0 and a.matrix.data.max() < 1
    assert a.matrix.data.mean() == pytest.approx(0.5, abs=0.01)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_interval_fast_path_equals_the_dense_factorisation(seed):
    from dplens.core.mechanisms.om import as_intervals
    from dplens.core.queries.workloads import Prefix, random_range

    for workload in (random_range(40, 70, seed=seed), Prefix(30)):
        assert as_intervals(workload) is not None
        fast, slow = om_decompose(workload), om_decompose(Explicit(dense(workload)))
        assert fast.groups == slow.groups and fast.selected_rows == slow.selected_rows
        np.testing.assert_allclose(fast.mixing.toarray() @ fast.reduced.toarray(), dense(workload), atol=1e-12)
        assert fast.expected_total_mse(1.0) == pytest.approx(slow.expected_total_mse(1.0))
        assert OM().run(np.ones(workload.shape[1]), workload, 0.5, np.random.default_rng(seed)).privacy_loss == 0.5


def test_large_general_workloads_are_refused_clearly():
    with pytest.raises(ValueError, match=r"m=2000, n=4096 is above the limit"):
        om_decompose(random_linear(4096, m=2000, tau=0.001, seed=0))
