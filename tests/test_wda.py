"""WDA (Li et al., Algorithm 1, corrected): division test vectors, leaf budgets, privacy accounting, exact
expected_mse."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from dplens.core.mechanisms import MECHANISMS, laplace_privacy_loss
from dplens.core.mechanisms.wda import WDA, expected_error, leaves_for, optimal_budgets, wda_division
from dplens.core.queries.workloads import Explicit, hot_spot, sparse_matrix

MODES = ["equal", "optimal", "optimal_global"]


def synthetic_12x13() -> Explicit:
    """A synthetic 12 × 13 workload that does split: rows 0–5 are e_0 + e_{7+i} (hot item 0), rows 6–11 are e_{1+i}."""
    matrix = np.zeros((12, 13))
    for i in range(6):
        matrix[i, [0, 7 + i]] = 1
        matrix[6 + i, 1 + i] = 1
    return Explicit(matrix, label="synthetic-12x13")


@pytest.mark.parametrize("budget", MODES)
def test_fig1_does_not_split(fig1, budget):
    leaves = wda_division(fig1.workload, budget=budget)
    assert [leaf.rows for leaf in leaves] == [tuple(range(8))]
    assert expected_error(leaves, 1.0, squared=False) == pytest.approx(4.0)
    assert WDA(budget=budget).expected_mse(fig1.workload, 1.0) == pytest.approx(32.0)  # = LM_W


def test_synthetic_equal_budget_splits_once():
    leaves = wda_division(synthetic_12x13(), budget="equal")
    assert [(leaf.rows, leaf.share, leaf.sensitivity) for leaf in leaves] == [
        ((0, 1, 2, 3, 4), 0.5, 5.0), ((5, 6, 7, 8, 9, 10, 11), 0.5, 1.0)]
    assert expected_error(leaves, 1.0, squared=False) == pytest.approx(5.333333, abs=1e-6)
    assert expected_error(leaves, 0.5, squared=False) == pytest.approx(2 * 5.333333, abs=1e-5)


@pytest.mark.parametrize("budget", ["optimal", "optimal_global"])
def test_synthetic_optimal_budget(budget):
    leaves = wda_division(synthetic_12x13(), budget=budget)
    assert [leaf.rows for leaf in leaves] == [(0, 1, 2, 3, 4), (5, 6, 7, 8, 9, 10, 11)]
    # ε1 = 5/(5+√7)·ε = 0.653958ε (0.65395 to five places)
    assert leaves[0].share == pytest.approx(5 / (5 + math.sqrt(7)))
    assert leaves[0].share == pytest.approx(0.65395, abs=1e-5)
    assert expected_error(leaves, 1.0, squared=False) == pytest.approx(4.871459, abs=1e-6)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_hot_row_choice_is_symmetric_on_the_synthetic_example(seed):
    leaves = wda_division(synthetic_12x13(), budget="equal", division_seed=seed)
    assert [len(leaf.rows) for leaf in leaves] == [5, 7]
    assert expected_error(leaves, 1.0, squared=False) == pytest.approx(5.333333, abs=1e-6)


def test_paper_fig2_example_is_worse_than_no_split(fig1):
    """The paper's Fig. 2 / Sec. 4 example: rows 1–3 vs 4–8 has Δ2 = 2, so the paper's 3.4275 is really 4.9158 > 4."""
    paper = leaves_for(fig1.workload, [[0, 1, 2], [3, 4, 5, 6, 7]], [0.58, 0.42])
    assert [leaf.sensitivity for leaf in paper] == [3.0, 2.0]
    assert expected_error(paper, 1.0, squared=False) == pytest.approx(4.915846, abs=1e-6)
    equal = leaves_for(fig1.workload, [[0, 1, 2], [3, 4, 5, 6, 7]], [0.5, 0.5])
    assert expected_error(equal, 1.0, squared=False) == pytest.approx(4.75)
    assert expected_error(optimal_budgets(paper), 1.0, squared=False) == pytest.approx(4.746708, abs=1e-6)
    best = optimal_budgets(leaves_for(fig1.workload, [[0, 1, 2, 3], [4, 5, 6, 7]], [0.5, 0.5]))
    assert expected_error(best, 1.0, squared=False) == pytest.approx(3.7321, abs=1e-4)


def _per_leaf_loss(workload, leaves, epsilon) -> float:
    """max_j Σ_ℓ ε_ℓ‖W_ℓ e_j‖₁/Δ_ℓ (sequential composition over the leaves), computed from the matrix independently of
    run()."""
    matrix = abs(sparse_matrix(workload)).toarray()
    return float(max(sum(leaf.epsilon(epsilon) * matrix[list(leaf.rows), j].sum() / leaf.sensitivity
                         for leaf in leaves if leaf.sensitivity) for j in range(matrix.shape[1])))


@pytest.mark.parametrize("budget", MODES)
@pytest.mark.parametrize("p", [0.2, 0.5, 0.9])
def test_leaf_budgets_sum_to_epsilon_and_loss_is_within_epsilon(budget, p, rng):
    workload = hot_spot(256, m=300, p=p, seed=3)
    epsilon = 0.7
    leaves = wda_division(workload, budget=budget)
    assert len(leaves) > 1  # the hot spot is worth splitting off
    assert sum(leaf.epsilon(epsilon) for leaf in leaves) == pytest.approx(epsilon)
    assert sorted(r for leaf in leaves for r in leaf.rows) == list(range(300))  # a partition of the rows
    assert _per_leaf_loss(workload, leaves, epsilon) <= epsilon + 1e-9
    release = WDA(budget=budget).run(np.zeros(256), workload, epsilon, rng)
    assert release.privacy_loss <= epsilon + 1e-9
    assert release.privacy_loss == pytest.approx(_per_leaf_loss(workload, leaves, epsilon))


def test_row_noise_at_row_sensitivity_would_break_the_budget(fig1):
    """The paper's proof of Eq. (4) scales each row's noise by its own sensitivity: by its own sensitivity is not DP
    for a block."""
    matrix = fig1.matrix
    own = [(matrix[i], matrix[i].sum() / 1.0) for i in range(8)]  # row i alone at ε = 1
    assert laplace_privacy_loss(own) > 1.0


def test_division_uses_only_the_workload(fig1, rng):
    workload = synthetic_12x13()
    a = WDA(budget="equal").run(np.zeros(13), workload, 1.0, rng)
    b = WDA(budget="equal").run(np.arange(13.0) * 100, workload, 1.0, rng)
    assert a.details["division"] == b.details["division"]
    assert a.params["leaves"] == 2


def test_registry_entry_and_knobs():
    assert MECHANISMS["wda"] == WDA()
    assert dataclasses.replace(MECHANISMS["wda"], budget="equal").budget == "equal"
    with pytest.raises(ValueError, match="budget must be one of"):
        WDA(budget="half")
    with pytest.raises(ValueError, match="g must be a finite number"):
        WDA(g=math.nan)


def test_g_shifts_the_split_size_and_ties_do_not_split():
    # g = -8: k = floor((12+6-8)/4+.5) = 3, a1 = 3·3, a2 = 9·3: 2·(9+27) = 72 = a, and the rule is strict
    assert len(wda_division(synthetic_12x13(), budget="equal", g=-8.0)) == 1
    assert len(wda_division(synthetic_12x13(), budget="equal", g=0.0)) == 2


@pytest.mark.statistical
@pytest.mark.parametrize("budget, epsilon", [("equal", 1.0), ("optimal", 0.5)])
def test_empirical_mse_matches_expected_mse_with_power(budget, epsilon, rng):
    workload = synthetic_12x13()
    mechanism = WDA(budget=budget)
    x = np.arange(13.0)
    truth = workload.matvec(x)
    mses = np.array([np.mean((mechanism.run(x, workload, epsilon, rng).answers - truth) ** 2)
                     for _ in range(4000)])
    standard_error = mses.std(ddof=1) / math.sqrt(mses.size)
    expected = mechanism.expected_mse(workload, epsilon)
    assert abs(mses.mean() - expected) < 4 * standard_error
    # power: the other budget rule, LM_W, and ±20 % are all rejected
    other = WDA(budget="optimal" if budget == "equal" else "equal").expected_mse(workload, epsilon)
    lm_w = MECHANISMS["laplace-on-answers"].expected_mse(workload, epsilon)
    for wrong in (other, lm_w, 0.8 * expected, 1.2 * expected):
        assert abs(mses.mean() - wrong) > 4 * standard_error


def test_hot_spot_generator_is_seeded_and_says_it_is_our_reconstruction():
    from dplens.core.queries.workloads import parse_workload

    a = parse_workload("hot-spot:m=400,p=0.3,seed=5", (512,))
    b = parse_workload("hot-spot:m=400,p=0.3,seed=5", (512,))
    c = parse_workload("hot-spot:m=400,p=0.3,seed=6", (512,))
    assert (a.matrix != b.matrix).nnz == 0 and (a.matrix != c.matrix).nnz > 0
    assert "our reconstruction" in a.describe()
    matrix = a.matrix.toarray()
    assert set(np.unique(matrix)) <= {0.0, 1.0}
    hot = int(np.argmax(matrix.sum(axis=0)))
    assert 0.3 * 400 - 4 * math.sqrt(400 * 0.21) < matrix[:, hot].sum() < 0.3 * 400 + 4 * math.sqrt(400 * 0.21) + 30
    widths = matrix.sum(axis=1) - matrix[:, hot]
    assert 5 < np.median(widths) < 25  # ranges of half-width |N(0, 10)|: median width ≈ 2·6.7 + 1
    with pytest.raises(ValueError, match=r"p must be a probability in \[0, 1\]"):
        hot_spot(64, m=10, p=1.5)


@pytest.mark.parametrize("budget", ["optimal", "equal"])
@pytest.mark.parametrize("seed", [0, 1])
def test_interval_division_equals_the_sparse_one(budget, seed):
    from dplens.core.queries.workloads import Prefix, dense, random_range

    for workload in (random_range(50, 80, seed=seed), Prefix(20)):
        for division_seed in (None, seed):
            fast = wda_division(workload, budget=budget, division_seed=division_seed)
            slow = wda_division(Explicit(dense(workload)), budget=budget, division_seed=division_seed)
            assert fast == slow
        release = WDA(budget=budget).run(np.ones(workload.shape[1]), workload, 0.5, np.random.default_rng(seed))
        assert release.privacy_loss == pytest.approx(0.5)
