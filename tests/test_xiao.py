"""Xiao, Xiong & Yuan (TR-2010-003): usefulness bounds, cell release, the DP max query and the literal one's failure."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dplens.core.analysis.usefulness import (
    interval_failure_probability,
    interval_min_records,
    interval_sensitivity_bound,
    max_query_lemma42,
    max_query_min_records,
)
from dplens.core.mechanisms import MECHANISMS
from dplens.core.mechanisms.xiao import (
    NOT_DP_LABEL,
    CellRelease,
    literal_max_distribution_not_dp,
    max_log_ratio,
    max_query_distribution,
    max_query_em,
    max_query_scores,
)
from dplens.core.queries.workloads import Identity, Prefix


# ----------------------------------------------------------------------------- usefulness
# (Theorems 4.2/5.2, Lemma 4.2, Theorem 4.4)
def test_interval_bounds():
    assert interval_min_records(100, 0.05, 0.02, 0.05) == pytest.approx(760090.25, abs=0.1)
    assert interval_min_records(8000, 0.05, 0.01, 0.05) == pytest.approx(1.917269e8, rel=1e-6)
    assert interval_failure_probability(1e6, 100, 0.05, 0.02) == pytest.approx(0.00454, abs=1e-5)
    assert interval_sensitivity_bound(100, 0.05, 0.02, 0.05) == pytest.approx(1.31563e-6, rel=1e-5)


def test_replace_one_doubles_the_requirement():
    add_remove = interval_min_records(100, 0.05, 0.02, 0.05)
    assert interval_min_records(100, 0.05, 0.02, 0.05, neighbouring="replace_one") == pytest.approx(2 * add_remove)
    n = add_remove  # at the add/remove minimum the bound is δ_u; replace-one fails it
    assert interval_failure_probability(n, 100, 0.05, 0.02) == pytest.approx(0.05)
    assert interval_failure_probability(n, 100, 0.05, 0.02, neighbouring="replace_one") > 0.05


def test_max_query_bounds():
    n, delta_u = max_query_lemma42(100, 0.05, 5)
    assert n == pytest.approx(910.909, abs=1e-3)
    assert delta_u == pytest.approx(0.512497, abs=1e-6)
    for delta_u, expected in [(0.1, 1544.56), (0.05, 1821.82), (0.01, 2465.59)]:
        assert max_query_min_records(100, 0.05, 5, delta_u) == pytest.approx(expected, abs=0.01)


@pytest.mark.parametrize("call, message", [
    (lambda: interval_min_records(100, 0.0, 0.02, 0.05), "alpha must be a finite number > 0"),
    (lambda: interval_min_records(100, 0.05, 0.02, 1.0), r"delta_u must be a number in \(0, 1\)"),
    (lambda: interval_min_records(10.5, 0.05, 0.02, 0.05), "beta .* must be an integer"),
    (lambda: interval_min_records(100, 0.05, 0.02, 0.05, neighbouring="swap"), "neighbouring must be one of"),
    (lambda: max_query_min_records(100, 0.05, 5, 0.5), r"delta_u < 1/\(e\^alpha\+1\)"),
    (lambda: max_query_lemma42(10, 0.05, 5), "must be > 1"),
], ids=["alpha", "delta", "beta", "neighbouring", "thm44-delta", "lemma42-log"])
def test_bounds_validate(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# ----------------------------------------------------------------------------- cell release (Sec. 5)
@pytest.mark.parametrize("neighbouring, scale", [("add_remove", 2.0), ("replace_one", 4.0)])
def test_cell_release_loss_and_scale(neighbouring, scale, rng):
    release = CellRelease(neighbouring=neighbouring, clip=False).run(np.full(20, 5.0), Identity(20), 0.5, rng)
    assert release.params["noise_scale"] == scale
    assert release.privacy_loss == pytest.approx(0.5)


@pytest.mark.statistical
def test_cell_release_noise_is_laplace_with_power(rng):
    noise = CellRelease(clip=False).run(np.zeros(5_000), Identity(5_000), 0.5, rng).estimate
    assert stats.kstest(noise, "laplace", args=(0, 2.0)).pvalue > 1e-6
    assert all(stats.kstest(noise, "laplace", args=(0, s)).pvalue < 1e-6 for s in (1.6, 2.4))


def test_clipping_is_post_processing_and_fractions_need_a_public_n(rng):
    x = np.r_[np.zeros(50), np.full(50, 3.0)]
    release = CellRelease(n_public=150.0).run(x, Prefix(100), 1.0, rng)
    assert release.estimate.min() >= 0
    np.testing.assert_allclose(release.details["fractions"], release.estimate / 150.0)
    np.testing.assert_allclose(release.answers, np.cumsum(release.estimate))
    assert CellRelease().expected_mse(Identity(4), 1.0) is None  # clipped error depends on x
    assert CellRelease(clip=False).expected_mse(Identity(4), 0.5) == pytest.approx(8.0)
    with pytest.raises(ValueError, match="neighbouring must be one of"):
        CellRelease(neighbouring="bounded")
    assert MECHANISMS["cell-release"] == CellRelease()


def test_paper_fraction_noise_would_cost_up_to_two_alpha():
    """The report's Lap(1/(α n)) on fractions c_i/n costs up to 2α: add/remove moves every fraction (n changes)."""
    alpha, counts = 0.1, np.array([0.0, 5, 10, 985])
    n = counts.sum()
    before, after = counts / n, (counts + np.eye(4)[0]) / (n + 1)
    loss = np.abs(after - before).sum() / (1 / (alpha * n))
    assert loss > 1.9 * alpha


# ----------------------------------------------------------------------------- max query (Sec. 4.1.2)
def test_em_max_query_vector():
    data = [5, 9, 9, 10]
    assert max_query_scores(data, 10).tolist() == [-3, -3, -3, -3, -2, -2, -2, -2, 0, -1]
    p = max_query_distribution(data, 10, 1.0, k=1)
    np.testing.assert_allclose(p[8], 0.251853, atol=1e-6)
    np.testing.assert_allclose(p[9], 0.152757, atol=1e-6)
    np.testing.assert_allclose(p[4:8], 0.092652, atol=1e-6)
    np.testing.assert_allclose(p[:4], 0.056196, atol=1e-6)


def test_em_max_query_is_alpha_dp_on_every_neighbour():
    alpha, beta, base = 0.5, 10, [2, 5, 9, 9, 10]
    p = max_query_distribution(base, beta, alpha)
    worst = 0.0
    for extra in range(1, beta + 1):  # add one record anywhere (remove is the same pair reversed)
        worst = max(worst, max_log_ratio(p, max_query_distribution(base + [extra], beta, alpha)))
    assert 0 < worst <= alpha + 1e-12


@pytest.mark.statistical
def test_em_sampler_follows_its_distribution_with_power(rng):
    data, counts = [5, 9, 9, 10], np.zeros(10)
    for _ in range(5_000):
        sample, _, loss = max_query_em(data, 10, 1.0, 1, rng)
        counts[sample - 1] += 1
    assert loss == 1.0
    assert stats.chisquare(counts, 5_000 * max_query_distribution(data, 10, 1.0)).pvalue > 1e-6
    assert stats.chisquare(counts, 5_000 * max_query_distribution(data, 10, 1.5)).pvalue < 1e-6


@pytest.mark.parametrize("d1, d2, lower, expected", [
    ([3, 3, 3], [1, 3, 3, 3], "min_data", 1.5),
    ([6, 6, 9], [7, 6, 6, 9], "one", 0.91188),
], ids=["min-data", "order"])
def test_literal_max_query_is_not_dp(d1, d2, lower, expected):
    alpha = 0.5
    loss = max_log_ratio(literal_max_distribution_not_dp(d1, 10, 1, alpha, lower),
                         literal_max_distribution_not_dp(d2, 10, 1, alpha, lower))
    assert loss == pytest.approx(expected, abs=1e-5)
    assert loss > alpha
    assert "not differentially private" in NOT_DP_LABEL


def test_max_query_validation():
    with pytest.raises(ValueError, match="data values must lie in 1..10"):
        max_query_scores([0, 3], 10)
    with pytest.raises(ValueError, match="integers"):
        max_query_scores([1.5], 10)
    with pytest.raises(ValueError, match="alpha must be"):
        max_query_distribution([1], 10, -1.0)
    assert math.isclose(max_query_distribution([3], 5, 1.0).sum(), 1.0)
