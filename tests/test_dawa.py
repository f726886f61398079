"""DAWA: window deviations against brute force, the private partition on clean data, stage-by-stage
privacy accounting, correctness and reproducibility."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dplens.core.mechanisms import MECHANISMS
from dplens.core.mechanisms import dawa as dawa_module
from dplens.core.mechanisms.dawa import DAWA, _Deviations, cheapest_partition, l1_partition, window_deviations
from dplens.core.mechanisms.greedy_h import bucket_gram, gram_sketch
from dplens.core.queries.workloads import AllRange, Identity, Kron, Prefix, Stack, Total, random_range


@pytest.mark.parametrize("n", [2, 5, 16, 37, 64])
def test_window_deviations_match_brute_force(n):
    rng = np.random.default_rng(n)
    x = rng.poisson(3, n).astype(float)
    x[rng.random(n) < 0.3] = 0  # ties and zeros, as in real counts
    lengths = np.array([length for length in (2, 4, 8, 16, 32, 64) if length <= n])
    for length, got in zip(lengths, _Deviations(x).windows(lengths), strict=True):
        brute = [np.abs(x[s:s + length] - x[s:s + length].mean()).sum() for s in range(n - length + 1)]
        np.testing.assert_allclose(got, brute, atol=1e-9)
    np.testing.assert_allclose(window_deviations(x, 2), [abs(a - b) for a, b in zip(x[:-1], x[1:], strict=True)])


def _plain_dynamic_programme(scores, lengths, singleton, n):
    """cost[i+1] = min over buckets ending at cell i (the reference's loop; ties to the longer bucket)."""
    cost, back = [0.0] * (n + 1), [0] * (n + 1)
    for i in range(n):
        best, arg = cost[i] + singleton, i
        for length, score in zip(lengths, scores, strict=True):
            start = i + 1 - length
            if start >= 0 and cost[start] + score[start] <= best:
                best, arg = cost[start] + score[start], start
        cost[i + 1], back[i + 1] = best, arg
    bounds = [n]
    while bounds[-1] > 0:
        bounds.append(back[bounds[-1]])
    return bounds[::-1]


@pytest.mark.parametrize("numpy_up_to", [512, 0], ids=["python", "shortest-paths"])
@pytest.mark.parametrize("seed", range(8))
def test_sparse_dynamic_programme_equals_the_plain_one(seed, numpy_up_to, monkeypatch):
    monkeypatch.setattr(dawa_module, "NUMPY_UP_TO", numpy_up_to)
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 200))
    lengths = np.array([length for length in (2, 4, 8, 16, 32, 64, 128) if length <= n], dtype=np.int64)
    singleton = float(rng.uniform(0.5, 3))
    scores = [np.maximum(rng.exponential(length * singleton * 0.8, n - length + 1), singleton) for length in lengths]
    assert cheapest_partition(scores, lengths, singleton, n).tolist() == \
        _plain_dynamic_programme(scores, lengths, singleton, n)


@pytest.mark.parametrize("workload", [random_range(60, 40, seed=1), Prefix(60), Identity(60), Total(60),
                                      Stack((Prefix(60), Identity(60))), AllRange(60), Kron((Prefix(6), Prefix(10)))],
                         ids=lambda w: type(w).__name__)
def test_gram_sketch_is_the_sketched_reduced_gram(workload):
    bounds = np.concatenate(([0], np.sort(np.random.default_rng(3).choice(np.arange(1, 60), 12, replace=False)), [60]))
    gram = bucket_gram(workload, bounds)[0]
    sketch = np.random.default_rng(0).standard_normal((bounds.size - 1, 16)) / 4.0
    np.testing.assert_allclose(gram_sketch(workload, bounds, 16), gram @ sketch, rtol=1e-9, atol=1e-9)


def test_partition_finds_the_flat_pieces_of_clean_data(rng):
    x = np.concatenate([np.full(8, 10.0), np.full(8, 50.0), np.zeros(16)])
    # ratio 0.9: the noise cost 1/ε₂ dominates the score noise, so flat pieces are always merged
    bounds, loss = l1_partition(x, 0.9 * 100, 0.1 * 100, rng)
    assert bounds.tolist() == [0, 8, 16, 32]
    assert loss == pytest.approx(90.0)


def test_partition_keeps_cells_apart_when_merging_costs_more_than_noise(rng):
    x = np.array([0.0, 1000, 0, 1000, 0, 1000, 0, 1000])
    bounds, _ = l1_partition(x, 0.5, 0.5, rng)
    assert bounds.tolist() == list(range(9))


@pytest.mark.parametrize("epsilon", [0.05, 1.0, 10.0])
@pytest.mark.parametrize("ratio", [0.1, 0.25, 0.6])
def test_privacy_loss_adds_the_two_stages(epsilon, ratio, rng):
    x = np.random.default_rng(2).poisson(20, 64).astype(float)
    release = DAWA(ratio=ratio).run(x, random_range(64, 30, seed=1), epsilon, rng)
    assert release.privacy_loss <= epsilon + 1e-9
    assert release.privacy_loss == pytest.approx(epsilon, rel=1e-9)  # ε₁ (partition) + ε₂ (Greedy-H)


def test_estimate_is_uniform_within_buckets_and_answers_come_from_it(rng):
    x = np.concatenate([np.full(16, 5.0), np.full(16, 100.0)])
    workload = Prefix(32)
    release = DAWA().run(x, workload, 2.0, rng)
    bounds = release.details["bounds"]
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        assert np.ptp(release.estimate[lo:hi]) < 1e-9
    np.testing.assert_allclose(release.answers, workload.matvec(release.estimate))
    assert release.params["buckets"] == bounds.size - 1


def test_accurate_at_high_epsilon_on_piecewise_constant_data(rng):
    x = np.concatenate([np.full(64, 3.0), np.full(32, 40.0), np.zeros(32)])
    release = DAWA().run(x, AllRange(128), 1000.0, rng)
    np.testing.assert_allclose(release.estimate, x, atol=0.05)
    assert release.params["buckets"] <= 8


def test_beats_identity_on_smooth_data_at_small_epsilon():
    x = np.repeat([200.0, 0.0, 50.0, 10.0], 64)
    workload = random_range(256, 300, seed=4)
    truth = workload.matvec(x)

    def error(name):
        return np.mean([np.abs(MECHANISMS[name].run(x, workload, 0.1, np.random.default_rng(s)).answers - truth)
                        .mean() for s in range(10)])

    assert error("dawa") < 0.5 * error("identity")


def test_total_workload_collapses_to_one_query(rng):
    release = DAWA().run(np.arange(16.0), Total(16), 1.0, rng)
    assert release.details["hierarchy"].query_weight.size == 1


def test_two_dimensional_input_is_flattened(rng):
    release = DAWA().run(np.arange(16.0).reshape(4, 4), Kron((Prefix(4), Prefix(4))), 1.0, rng)
    assert release.estimate.shape == (16,)
    assert release.params["gram"] == "exact"


def test_same_seed_same_release():
    x = np.random.default_rng(1).poisson(9, 50).astype(float)
    a = DAWA().run(x, Prefix(50), 0.5, np.random.default_rng(7))
    b = DAWA().run(x, Prefix(50), 0.5, np.random.default_rng(7))
    np.testing.assert_array_equal(a.estimate, b.estimate)
    np.testing.assert_array_equal(a.details["bounds"], b.details["bounds"])


@pytest.mark.parametrize("ratio", [0, 1, -0.1, 1.5])
def test_ratio_outside_the_open_unit_interval_is_refused(ratio):
    with pytest.raises(ValueError, match="ratio must be a number in"):
        DAWA(ratio=ratio)
    with pytest.raises(ValueError, match="ratio must be a number in"):
        dataclasses.replace(MECHANISMS["dawa"], ratio=ratio)
