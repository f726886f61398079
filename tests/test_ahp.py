"""AHP: the look-ahead error against a literal transcription of the paper's loop, the greedy clusters,
noisy-rank grouping, privacy accounting, the cluster noise scale (with power), validation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dplens.core.mechanisms import MECHANISMS
from dplens.core.mechanisms.ahp import AHP, LOOKAHEAD, best_new_cluster_error, greedy_clusters
from dplens.core.queries.workloads import Identity, Kron, Prefix, random_range


def _literal_best_new(values: np.ndarray, noise_variance: float) -> np.ndarray:
    """The paper's err*(j) loop with its early stop, one cell at a time (test oracle)."""
    n = values.size
    prefix = np.concatenate(([0.0], np.cumsum(values)))
    out = []
    for j in range(n):
        best = last_noise = noise_variance
        last_deviation = 0.0
        floor = noise_variance / (n + 1 - j) ** 2
        for length in range(2, n - j + 1):
            deviation = (values[j] - (prefix[j + length] - prefix[j]) / length) ** 2
            noise = noise_variance / length**2
            if deviation - last_deviation >= last_noise - floor:
                break
            best = min(best, deviation + noise)
            last_deviation, last_noise = deviation, noise
        out.append(best)
    return np.array(out)


@pytest.mark.parametrize("seed", range(6))
def test_look_ahead_error_matches_the_literal_loop(seed):
    rng = np.random.default_rng(seed)
    values = np.sort(np.round(rng.exponential(5, 60)) * (rng.random(60) < 0.6))
    assert values.size < LOOKAHEAD
    np.testing.assert_allclose(best_new_cluster_error(values, 2.0), _literal_best_new(values, 2.0))


def test_greedy_clusters_split_at_jumps():
    values = np.array([0.0, 0, 0, 0, 50, 51, 50, 52, 400, 401])
    assert greedy_clusters(values, 2.0).tolist() == [0, 4, 8]
    assert greedy_clusters(np.zeros(5), 2.0).tolist() == [0]


def _literal_clusters(values: np.ndarray, noise_variance: float) -> list[int]:
    """The greedy pass one cell at a time with the error recomputed from scratch (test oracle)."""
    best_new = best_new_cluster_error(values, noise_variance)

    def error(i, j):  # squared deviation of cluster i … j plus the noise variance of its mean's sum
        part = values[i: j + 1]
        return float(((part - part.mean()) ** 2).sum()) + noise_variance / part.size

    starts = [0]
    for j in range(1, values.size):
        if error(starts[-1], j) >= error(starts[-1], j - 1) + best_new[j] - 1e-9:
            starts.append(j)
    return starts


@pytest.mark.parametrize("seed", range(4))
def test_greedy_clusters_match_the_cell_by_cell_loop_on_long_clusters(seed):
    # long plateaus: clusters of more than 24 cells (the vectorised windows of the pre-compiled version)
    rng = np.random.default_rng(seed)
    values = np.sort(np.concatenate([level + rng.normal(0, 0.3, size) for level, size in
                                     zip(rng.choice(400, 6), rng.integers(5, 300, 6), strict=True)]))
    assert max(np.diff(greedy_clusters(values, 2.0)), default=0) > 24
    assert greedy_clusters(values, 2.0).tolist() == _literal_clusters(values, 2.0)


def test_clusters_follow_the_noisy_order_not_the_true_counts():
    # cells 0 and 2 are equal, cell 1 far away; the groups must be the ones the noisy values give
    x = np.array([100.0, 0.0, 100.0, 0.0])
    release = AHP(eta=0.0).run(x, Identity(4), 1000.0, np.random.default_rng(0))
    assert sorted(release.details["cluster_sizes"].tolist()) == [2, 2]
    np.testing.assert_allclose(release.estimate, x, atol=1.0)


@pytest.mark.parametrize("epsilon", [0.1, 1.0])
@pytest.mark.parametrize("ratio", [0.5, 0.85])
def test_privacy_loss_is_both_laplace_blocks(epsilon, ratio, rng):
    release = AHP(ratio=ratio).run(np.arange(40.0), random_range(40, 30, seed=0), epsilon, rng)
    assert release.privacy_loss <= epsilon + 1e-9
    assert release.privacy_loss == pytest.approx(epsilon, rel=1e-12)


@pytest.mark.statistical
def test_one_cluster_carries_laplace_noise_at_the_second_budget_with_power():
    # η so large that every noisy value is thresholded to 0: one cluster, estimate = (Σx + Lap(1/ε₂)) / n
    mechanism = AHP(ratio=0.6, eta=1e9)
    x = np.array([3.0, 1, 4, 1, 5, 9, 2, 6])
    epsilon = 0.5
    noise = np.array([mechanism.run(x, Identity(8), epsilon, np.random.default_rng(seed)).estimate[0]
                      for seed in range(6000)]) * x.size - x.sum()
    scale = 1.0 / (0.4 * epsilon)
    assert stats.kstest(noise, "laplace", args=(0, scale)).pvalue > 1e-6
    for wrong in (0.8 * scale, 1.2 * scale):
        assert stats.kstest(noise, "laplace", args=(0, wrong)).pvalue < 1e-6


def test_accurate_at_high_epsilon_on_clustered_data(rng):
    x = np.tile([0.0, 0, 20, 20, 0, 80], 20)
    release = AHP().run(x, Identity(x.size), 1000.0, rng)
    np.testing.assert_allclose(release.estimate, x, atol=0.1)
    assert release.params["clusters"] <= 4


def test_two_dimensional_input_is_flattened(rng):
    release = AHP().run(np.arange(16.0).reshape(4, 4), Kron((Prefix(4), Prefix(4))), 1.0, rng)
    assert release.estimate.shape == (16,)


def test_registered_and_reproducible():
    assert isinstance(MECHANISMS["ahp"], AHP) and MECHANISMS["ahp"].data_dependent
    x = np.random.default_rng(1).poisson(4, 30).astype(float)
    a = AHP().run(x, Prefix(30), 1.0, np.random.default_rng(5))
    b = AHP().run(x, Prefix(30), 1.0, np.random.default_rng(5))
    np.testing.assert_array_equal(a.estimate, b.estimate)


@pytest.mark.parametrize("knobs, message",
                         [({"ratio": 1.0}, "ratio must be a number in"), ({"eta": -1.0}, "eta must be"),
                                            ({"eta": float("nan")}, "eta must be")])
def test_bad_knobs_raise(knobs, message):
    with pytest.raises(ValueError, match=message):
        AHP(**knobs)
