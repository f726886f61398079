"""The histogram-mechanism contract as plain functions, one per check, for any mechanism.

tests/test_mechanisms.py runs each over every registered histogram mechanism; tests/test_registry.py runs them all
(:func:`check_contract`) on a mechanism a test registers. A check raises AssertionError (or skips, for an input
kind the mechanism does not apply to).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from dplens.core.mechanisms import Release, configure
from dplens.core.queries.workloads import Kron, Prefix, random_range
from dplens.core.registry import REGISTRY

KINDS = ("1-d", "2-d")
EPSILONS = (0.1, 1.0)
# epsilons run() must refuse with "epsilon must be ..."
BAD_EPSILONS = {"0": 0, "-1": -1, "nan": math.nan, "inf": math.inf, "str": "1"}
# data run() must refuse (on a 64-cell workload), with the words of the refusal
BAD_DATA = {"short": (np.ones(63), "data x has shape"), "wrong-shape": (np.ones((64, 2)), "data x has shape"),
            "negative": (np.r_[np.ones(63), -1.0], "non-negative"), "nan": (np.r_[np.ones(63), np.nan], "finite"),
            "inf": (np.r_[np.ones(63), np.inf], "finite")}
# The registry's mechanisms that do not apply to an input kind, with the reason; every other pair must run.
NOT_APPLICABLE = {("agrid", "1-d"): "grids partition a 2-D domain", ("ugrid", "1-d"): "grids partition a 2-D domain"}


def inputs(kind: str):
    """A small 1-D or 2-D histogram and a matching workload."""
    counts = np.random.default_rng(7).poisson(20, size=64).astype(float)
    counts[::5] = 0
    if kind == "1-d":
        return counts, random_range(64, 40, seed=2)
    return counts.reshape(8, 8), Kron((Prefix(8), Prefix(8)))


def run_or_skip(mechanism, x, workload, epsilon, rng, kind: str) -> Release:
    """``mechanism.run``, or a skip when NOT_APPLICABLE lists the pair (after checking that it does refuse)."""
    reason = NOT_APPLICABLE.get((mechanism.name, kind))
    if reason is not None:
        with pytest.raises(ValueError, match="needs a 2-D histogram"):  # the list stays honest: it does refuse
            mechanism.run(x, workload, epsilon, rng)
        pytest.skip(f"{mechanism.name} does not apply to {kind} input: {reason}")
    return mechanism.run(x, workload, epsilon, rng)  # any other refusal fails the test


def check_privacy_loss_within_epsilon(mechanism, kind: str, epsilon: float, rng: np.random.Generator) -> None:
    """The release is well formed and its computed privacy loss is within ε."""
    x, workload = inputs(kind)
    release = run_or_skip(mechanism, x, workload, epsilon, rng, kind)
    assert isinstance(release, Release)
    assert release.mechanism == mechanism.name
    assert release.epsilon == epsilon
    assert 0 <= release.privacy_loss <= epsilon + 1e-9
    assert release.answers.shape == (workload.shape[0],) and release.workload is workload  # the query block
    assert np.all(np.isfinite(release.answers))
    assert release.estimate is None or release.estimate.shape == (workload.shape[1],)


def check_accepts_1d_or_2d_input(mechanism, rng: np.random.Generator) -> None:
    ran = []
    for kind in KINDS:
        x, workload = inputs(kind)
        try:
            mechanism.run(x, workload, 1.0, rng)
            ran.append(kind)
        except ValueError:
            pass
    assert ran, f"{mechanism.name} rejected both 1-D and 2-D inputs"


def check_registered_frozen_dataclass_with_a_kebab_name(mechanism) -> None:
    assert dataclasses.is_dataclass(mechanism)
    entry = REGISTRY[mechanism.name]
    assert entry.mechanism is mechanism and entry.input_kind == "histogram"
    assert mechanism.name == mechanism.name.lower() and " " not in mechanism.name and "_" not in mechanism.name
    assert isinstance(mechanism.data_dependent, bool)
    with pytest.raises(dataclasses.FrozenInstanceError):
        mechanism.name = "other"
    assert configure(mechanism, {}) == mechanism


def check_same_seed_same_release_different_seed_different(mechanism) -> None:
    for kind in KINDS:
        x, workload = inputs(kind)
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


def check_run_rejects_bad_epsilon(mechanism, epsilon, rng: np.random.Generator) -> None:
    x, workload = inputs("1-d")
    with pytest.raises(ValueError, match="epsilon must be"):
        mechanism.run(x, workload, epsilon, rng)


def check_run_rejects_bad_data(mechanism, x: np.ndarray, message: str, rng: np.random.Generator) -> None:
    with pytest.raises(ValueError, match=message):
        mechanism.run(x, random_range(64, 10, seed=0), 1.0, rng)


def check_expected_mse_is_positive_or_none(mechanism) -> None:
    """Positive and finite, or None (always None for a data-dependent mechanism); skips without a formula here."""
    try:
        value = mechanism.expected_mse(random_range(64, 40, seed=2), 1.0)
    except ValueError:
        pytest.skip(f"{mechanism.name} has no analytic error for this workload")
    assert value is None or (math.isfinite(value) and value > 0)
    if mechanism.data_dependent:
        assert value is None


def check_says_in_a_line_what_it_does(mechanism) -> None:
    """The Release picker and Compare's list show ``summary``: plain words, no internal references."""
    summary = type(mechanism).summary
    assert 20 <= len(summary) <= 110 and summary.endswith("."), mechanism.name
    assert "spec" not in summary and "§" not in summary and "\n" not in summary, mechanism.name


def check_contract(mechanism, rng: np.random.Generator) -> None:
    """Every check above on one mechanism, on every input kind, epsilon, bad epsilon and bad data."""
    for kind in KINDS:
        for epsilon in EPSILONS:
            check_privacy_loss_within_epsilon(mechanism, kind, epsilon, rng)
    check_accepts_1d_or_2d_input(mechanism, rng)
    check_registered_frozen_dataclass_with_a_kebab_name(mechanism)
    check_same_seed_same_release_different_seed_different(mechanism)
    for epsilon in BAD_EPSILONS.values():
        check_run_rejects_bad_epsilon(mechanism, epsilon, rng)
    for x, message in BAD_DATA.values():
        check_run_rejects_bad_data(mechanism, x, message, rng)
    check_expected_mse_is_positive_or_none(mechanism)
    check_says_in_a_line_what_it_does(mechanism)
