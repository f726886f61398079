"""SReB_GCA (Chen et al. 2024, corrected): GGS test vectors, exact per-bin error, one draw per group, privacy
accounting."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dplens.core.mechanisms import ALIASES, MECHANISMS, laplace_privacy_loss
from dplens.core.mechanisms.laplace import LaplaceIdentity
from dplens.core.mechanisms.sreb_gca import (
    SrebGca,
    expected_bin_error,
    ggs,
    group_membership_l1,
    group_mre,
    groups_from_cuts,
)
from dplens.core.queries.workloads import Identity as IdentityWorkload

SORTED = np.array([1.0, 1, 2, 3, 8, 9, 10, 100, 120, 1000])


@pytest.mark.parametrize("scale, cuts", [(10.0, [3, 6, 7, 8]), (2.0, list(range(1, 9))), (0.5, list(range(1, 9)))])
def test_ggs_vectors(scale, cuts):
    assert ggs(SORTED, scale) == cuts


def test_ggs_worked_check_at_lambda_2():
    merged = group_mre(np.array([1.0, 1, 2]), 2.0)
    bound = (group_mre(np.array([1.0, 1]), 2.0) * 2 + 2.0 / (8 * 2)) / 3
    assert merged == pytest.approx(0.8889, abs=1e-4)
    assert bound == pytest.approx(0.7083, abs=1e-4)


def test_ggs_first_comparison_failing_closes_a_singleton():
    """In Algorithm 2 the paper's `d` is undefined when the very first merge fails."""
    assert ggs(np.array([1.0, 1000, 1001]), 0.5)[0] == 0


def test_shifted_laplace_expectation():
    """E|a + Lap(b)| = |a| + b·e^{−|a|/b}; a = 3, b = 2 → 3.446260 (Theorem 1 is only a bound, 5)."""
    error = expected_bin_error(np.array([0.0, 6.0]), [np.array([0, 1])], 4.0)  # |C| = 2: b = 4/2
    np.testing.assert_allclose(error, 3.446260, atol=1e-6)


def test_expected_relative_errors_of_the_lambda_10_grouping():
    groups = groups_from_cuts(np.arange(10), ggs(SORTED, 10.0))
    relative = expected_bin_error(SORTED, groups, 10.0) / np.maximum(SORTED, 1.0)
    np.testing.assert_allclose(relative, [2.602046, 2.602046, 1.256047, 0.922109, 0.433674, 0.370370,
                                          0.346939, 0.1, 0.083333, 0.01], atol=1e-6)
    dp_base = 10.0 / np.maximum(SORTED, 1.0)
    assert np.all(relative[:7] < dp_base[:7]) and np.allclose(relative[7:], dp_base[7:])


def test_one_draw_per_group_costs_epsilon2_per_bin_draws_cost_group_size_times():
    """The paper's Algorithm 1 draws a fresh Lap(λ2)/|C| per bin: a group of 10 costs 10·ε2."""
    epsilon2, groups, n = 0.3, [np.arange(10), np.arange(10, 12)], 12
    scale = 1 / epsilon2
    implemented = laplace_privacy_loss([(group_membership_l1(groups, n), scale)])
    assert implemented == pytest.approx(epsilon2)
    per_bin = []  # bin j releases T_C/|C| + Lap(λ2/|C|): a block (1/|C|)·1_Cᵀ at scale λ2/|C|, per bin
    for group in groups:
        for _ in group:
            column_l1 = np.zeros(n)
            column_l1[group] = 1 / group.size
            per_bin.append((column_l1, scale / group.size))
    assert laplace_privacy_loss(per_bin) == pytest.approx(10 * epsilon2)


@pytest.mark.parametrize("ratio", [0.2, 0.5, 0.9])
def test_release_privacy_loss_is_epsilon1_plus_epsilon2(ratio, rng):
    x = np.r_[np.zeros(30), rng.poisson(40, 30)].astype(float)
    release = SrebGca(ratio=ratio).run(x, IdentityWorkload(60), 0.8, rng)
    assert release.privacy_loss == pytest.approx(0.8)
    assert release.params["epsilon1"] == pytest.approx(ratio * 0.8)


def test_groups_are_cut_from_the_noisy_order_and_share_one_value():
    """Replaying the stage-1 draw gives the groups; each group is released as one constant."""
    x = np.r_[np.zeros(20), np.arange(1.0, 21.0) * 7]
    mechanism = SrebGca(ratio=0.5)
    release = mechanism.run(x, IdentityWorkload(40), 1.0, np.random.default_rng(4))
    replay = np.random.default_rng(4)
    noisy = x + replay.laplace(scale=2.0, size=40)
    order = np.argsort(noisy, kind="stable")
    groups = groups_from_cuts(order, ggs(np.maximum(noisy[order], 0), 2.0))
    assert len(groups) == release.params["groups"]
    for group in groups:
        assert np.ptp(release.estimate[group]) < 1e-9
    true_order = np.argsort(x, kind="stable")
    assert not np.array_equal(order, true_order)  # the test would notice a re-sort by the true H


def test_knob_validation():
    with pytest.raises(ValueError, match=r"ratio must be a number in \(0, 1\)"):
        SrebGca(ratio=1.0)
    with pytest.raises(ValueError, match="error_floor"):
        SrebGca(error_floor=0.0)
    assert dataclasses.replace(MECHANISMS["sreb-gca"], ratio=0.3).ratio == 0.3


def test_dp_base_is_identity_under_the_papers_name(rng):
    assert ALIASES["dp-base"] == "identity"
    dp_base = MECHANISMS["dp-base"]
    assert isinstance(dp_base, LaplaceIdentity) and dp_base.name == "dp-base"
    x = np.arange(8.0)
    a = dp_base.run(x, IdentityWorkload(8), 1.0, np.random.default_rng(1))
    b = MECHANISMS["identity"].run(x, IdentityWorkload(8), 1.0, np.random.default_rng(1))
    np.testing.assert_array_equal(a.answers, b.answers)
    assert a.mechanism == "dp-base"


@pytest.mark.statistical
def test_each_group_sum_carries_one_laplace_draw_with_power():
    """Group-sum errors of multi-bin groups are Lap(1/ε2); per-bin draws would shrink them (÷√|C| in sd)."""
    from scipy import stats

    x, rng, errors = np.zeros(40), np.random.default_rng(99), []
    for _ in range(800):
        estimate = SrebGca(ratio=0.5).run(x, IdentityWorkload(40), 2.0, rng).estimate
        _, label = np.unique(estimate, return_inverse=True)  # a group shares one released value
        sizes = np.bincount(label)
        errors += [estimate[label == g].sum() for g in np.flatnonzero(sizes >= 2)]
    assert len(errors) > 4000
    assert stats.kstest(errors, "laplace", args=(0, 1.0)).pvalue > 1e-6
    for wrong in (0.8, 1.2):
        assert stats.kstest(errors, "laplace", args=(0, wrong)).pvalue < 1e-6


def test_fast_mre_agrees_with_the_definition(rng):
    """ggs uses prefix sums; a brute-force GGS with group_mre must cut in the same places."""
    values = np.sort(np.maximum(rng.laplace(3.0, 4.0, size=200), 0))

    def brute(scale):
        cuts, start = [], 0
        for r in range(1, values.size):
            size = r - start
            bound = (group_mre(values[start:r], scale) * size + scale / ((values.size - r) * max(values[r], 1))) / (
                size + 1)
            if group_mre(values[start:r + 1], scale) >= bound:
                cuts.append(r - 1)
                start = r
        return cuts

    for scale in (0.5, 5.0, 50.0):
        assert ggs(values, scale) == brute(scale)
