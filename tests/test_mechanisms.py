"""Mechanisms: the contract for every registry entry, and the baselines' accuracy (see docs/benchmarks.md, "Test conventions")."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy import stats

from dplens.core.mechanisms import MECHANISMS, Release, configure, laplace_privacy_loss
from dplens.core.queries.workloads import Identity, Kron, Prefix, Stack, Total, random_range

ALL = pytest.mark.parametrize("mechanism", MECHANISMS.values(), ids=MECHANISMS.keys())


def _inputs(kind: str):
    """A small 1-D or 2-D histogram and a matching workload."""
    counts = np.random.default_rng(7).poisson(20, size=64).astype(float)
    counts[::5] = 0
    if kind == "1-d":
        return counts, random_range(64, 40, seed=2)
    return counts.reshape(8, 8), Kron((Prefix(8), Prefix(8)))


# The registry's mechanisms that do not apply to an input kind, with the reason; every other pair must run.
NOT_APPLICABLE = {("agrid", "1-d"): "grids partition a 2-D domain", ("ugrid", "1-d"): "grids partition a 2-D domain"}


def _run_or_skip(mechanism, x, workload, epsilon, rng, kind: str) -> Release:
    reason = NOT_APPLICABLE.get((mechanism.name, kind))
    if reason is not None:
        with pytest.raises(ValueError, match="needs a 2-D histogram"):  # the list stays honest: it does refuse
            mechanism.run(x, workload, epsilon, rng)
        pytest.skip(f"{mechanism.name} does not apply to {kind} input: {reason}")
    return mechanism.run(x, workload, epsilon, rng)  # any other refusal fails the test


@ALL
@pytest.mark.parametrize("kind", ["1-d", "2-d"])
@pytest.mark.parametrize("epsilon", [0.1, 1.0])
def test_privacy_loss_is_computed_and_within_epsilon(mechanism, kind, epsilon, rng):
    x, workload = _inputs(kind)
    release = _run_or_skip(mechanism, x, workload, epsilon, rng, kind)
    assert isinstance(release, Release)
    assert release.mechanism == mechanism.name
    assert release.epsilon == epsilon
    assert 0 <= release.privacy_loss <= epsilon + 1e-9
    assert release.answers.shape == (workload.shape[0],)
    assert np.all(np.isfinite(release.answers))
    assert release.estimate is None or release.estimate.shape == (workload.shape[1],)


@ALL
def test_mechanism_accepts_1d_or_2d_input(mechanism, rng):
    ran = []
    for kind in ("1-d", "2-d"):
        x, workload = _inputs(kind)
        try:
            mechanism.run(x, workload, 1.0, rng)
            ran.append(kind)
        except ValueError:
            pass
    assert ran, f"{mechanism.name} rejected both 1-D and 2-D inputs"


@ALL
def test_registry_entry_is_a_frozen_dataclass_with_a_kebab_name(mechanism):
    assert dataclasses.is_dataclass(mechanism)
    assert MECHANISMS[mechanism.name] is mechanism
    assert mechanism.name == mechanism.name.lower() and " " not in mechanism.name and "_" not in mechanism.name
    assert isinstance(mechanism.data_dependent, bool)
    with pytest.raises(dataclasses.FrozenInstanceError):
        mechanism.name = "other"  # type: ignore[misc]
    assert configure(mechanism, {}) == mechanism


@ALL
def test_same_seed_same_release_different_seed_different(mechanism):
    for kind in ("1-d", "2-d"):
        x, workload = _inputs(kind)
        try:
            a = mechanism.run(x, workload, 0.5, np.random.default_rng(3))
        except ValueError:
            continue
        b = mechanism.run(x, workload, 0.5, np.random.default_rng(3))
        c = mechanism.run(x, workload, 0.5, np.random.default_rng(4))
        np.testing.assert_array_equal(a.answers, b.answers)
        if a.estimate is not None:
            np.testing.assert_array_equal(a.estimate, b.estimate)
        assert not np.array_equal(a.answers, c.answers)


@ALL
@pytest.mark.parametrize("epsilon", [0, -1, math.nan, math.inf, "1"], ids=["0", "-1", "nan", "inf", "str"])
def test_run_rejects_bad_epsilon(mechanism, epsilon, rng):
    x, workload = _inputs("1-d")
    with pytest.raises(ValueError, match="epsilon must be"):
        mechanism.run(x, workload, epsilon, rng)


@ALL
@pytest.mark.parametrize("x, message", [
    (np.ones(63), "data x has shape"),
    (np.ones((64, 2)), "data x has shape"),
    (np.r_[np.ones(63), -1.0], "non-negative"),
    (np.r_[np.ones(63), np.nan], "finite"),
    (np.r_[np.ones(63), np.inf], "finite"),
], ids=["short", "wrong-shape", "negative", "nan", "inf"])
def test_run_rejects_bad_data(mechanism, x, message, rng):
    with pytest.raises(ValueError, match=message):
        mechanism.run(x, random_range(64, 10, seed=0), 1.0, rng)


@ALL
def test_expected_mse_is_positive_or_none(mechanism):
    try:
        value = mechanism.expected_mse(random_range(64, 40, seed=2), 1.0)
    except ValueError:
        pytest.skip(f"{mechanism.name} has no analytic error for this workload")
    assert value is None or (math.isfinite(value) and value > 0)
    if mechanism.data_dependent:
        assert value is None


def test_laplace_privacy_loss_adds_blocks_per_column():
    assert laplace_privacy_loss([(np.array([1.0, 2]), 2.0), (np.array([1.0, 0]), 1.0)]) == 1.5
    assert laplace_privacy_loss([(np.zeros(3), 0.0)]) == 0.0
    with pytest.raises(ValueError, match="Laplace scale > 0"):
        laplace_privacy_loss([(np.ones(3), 0.0)])


# ----------------------------------------------------------------------------- baselines on WDA's Fig. 1
def test_fig1_test_vectors(fig1):
    identity, lm_w = MECHANISMS["identity"], MECHANISMS["laplace-on-answers"]
    assert identity.expected_mse(fig1.workload, 1.0) == pytest.approx(3.25)
    assert lm_w.expected_mse(fig1.workload, 1.0) == pytest.approx(32.0)
    release = lm_w.run(fig1.x, fig1.workload, 1.0, np.random.default_rng(0))
    assert release.params["sensitivity"] == 4.0 and release.params["noise_scale"] == 4.0
    assert release.privacy_loss == pytest.approx(1.0)
    assert identity.run(fig1.x, fig1.workload, 1.0, np.random.default_rng(0)).privacy_loss == pytest.approx(1.0)


def _trial_mses(mechanism, x, workload, epsilon, trials, rng):
    truth = workload.matvec(x.ravel())
    return np.array([np.mean((mechanism.run(x, workload, epsilon, rng).answers - truth) ** 2)
                     for _ in range(trials)])


@pytest.mark.statistical
@pytest.mark.parametrize("name, epsilon", [("identity", 1.0), ("identity", 0.3), ("laplace-on-answers", 1.0)])
def test_empirical_mse_matches_expected_mse_with_power(name, epsilon, fig1, rng):
    mechanism = MECHANISMS[name]
    mses = _trial_mses(mechanism, fig1.x, fig1.workload, epsilon, 4000, rng)
    expected = mechanism.expected_mse(fig1.workload, epsilon)
    standard_error = mses.std(ddof=1) / math.sqrt(mses.size)
    assert abs(mses.mean() - expected) < 4 * standard_error
    for wrong in (0.8 * expected, 1.2 * expected):  # a formula 20 % off would be caught
        assert abs(mses.mean() - wrong) > 4 * standard_error


@pytest.mark.statistical
def test_identity_noise_has_scale_one_over_epsilon_and_the_test_has_power(rng):
    n = 20_000
    release = MECHANISMS["identity"].run(np.zeros(n), Identity(n), 0.5, rng)
    noise = release.estimate
    np.testing.assert_array_equal(release.answers, noise)
    assert stats.kstest(noise, "laplace", args=(0, 2.0)).pvalue > 1e-6
    for wrong in (1.6, 2.4):
        assert stats.kstest(noise, "laplace", args=(0, wrong)).pvalue < 1e-6


@pytest.mark.statistical
def test_laplace_on_answers_noise_scale_uses_the_l1_sensitivity(rng):
    n = 10_000
    workload = Stack((Identity(n), Identity(n)))  # every column is in two queries: Δ₁ = 2
    x = np.full(n, 5.0)
    release = MECHANISMS["laplace-on-answers"].run(x, workload, 0.5, rng)
    noise = release.answers - workload.matvec(x)
    assert release.estimate is None
    assert stats.kstest(noise, "laplace", args=(0, 4.0)).pvalue > 1e-6
    for wrong in (3.2, 4.8):
        assert stats.kstest(noise, "laplace", args=(0, wrong)).pvalue < 1e-6


@pytest.mark.statistical
def test_uniform_spreads_a_noisy_total_with_scale_one_over_epsilon(rng):
    x = np.array([7.0, 0, 1, 12])
    mechanism, workload = MECHANISMS["uniform"], Total(4)
    releases = [mechanism.run(x, workload, 2.0, rng) for _ in range(20_000)]
    assert all(np.ptp(r.estimate) == 0 for r in releases[:10])  # spread evenly
    noise = np.array([r.answers[0] for r in releases]) - x.sum()
    assert stats.kstest(noise, "laplace", args=(0, 0.5)).pvalue > 1e-6
    for wrong in (0.4, 0.6):
        assert stats.kstest(noise, "laplace", args=(0, wrong)).pvalue < 1e-6
    assert mechanism.expected_mse(workload, 2.0) is None


def test_every_registered_mechanism_says_in_a_line_what_it_does():
    """The Release picker and Compare's list show ``summary``: plain words, no internal references."""
    from dplens.core.mechanisms import MECHANISMS

    for name, mechanism in MECHANISMS.items():
        summary = type(mechanism).summary
        assert 20 <= len(summary) <= 110 and summary.endswith("."), name
        assert "spec" not in summary and "§" not in summary and "\n" not in summary, name
