"""Measurement records: every mechanism's release holds what it measured, and its stated loss is their composition.

The records' privacy maps are checked against the closed forms they stand for; every registered histogram and table
mechanism is run on randomly drawn workload parameters (the random-workload audit's draws) in each definition, and
the loss it states must be the composition of its records (the release kernel refuses any other).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dplens.core.mechanisms import MECHANISMS
from dplens.core.mechanisms.measurement import (
    GaussianMeasurement,
    LaplaceMeasurement,
    NoisyAnswers,
    PrivateChoice,
    ZCDPStep,
    composed_loss,
    laplace_record,
    pure_loss,
)
from dplens.core.privacy.definitions import ZCDP, ApproxDP, EpsilonAxis, PureDP, gaussian_epsilon, zcdp_epsilon
from dplens.core.privacy.discrete_gaussian import discrete_gaussian_epsilon
from dplens.core.tables.mechanisms import TABLE_MECHANISMS
from tests.test_audit_random_workloads import RHO, _table, histogram_draws, table_draws

DELTA = 1e-6


def test_each_record_maps_its_noise_to_every_unit():
    laplace = NoisyAnswers("q", LaplaceMeasurement(4.0), 2.0)
    assert (laplace.loss(PureDP(1)), laplace.loss(ApproxDP(1, DELTA)), laplace.loss(ZCDP(1))) == (0.5, 0.5, 0.125)
    gaussian = NoisyAnswers("q", GaussianMeasurement(3.0), 1.5)
    assert gaussian.loss(ZCDP(1)) == pytest.approx(1.5**2 / (2 * 9.0))
    assert gaussian.loss(ApproxDP(1, DELTA)) == gaussian_epsilon(3.0, DELTA, 1.5)
    assert gaussian.loss(PureDP(1)) == math.inf
    discrete = NoisyAnswers("cells", GaussianMeasurement(3.0), 1.0, discrete=True)
    assert discrete.loss(ApproxDP(1, DELTA)) == max(gaussian_epsilon(3.0, DELTA), discrete_gaussian_epsilon(3.0, DELTA))
    assert discrete.loss(ApproxDP(1, DELTA)) > gaussian_epsilon(3.0, DELTA)  # the discrete curve is the larger
    assert PrivateChoice("s", 0.3).loss(ZCDP(1)) == pytest.approx(0.045)
    assert ZCDPStep("MST", 0.2).loss(ApproxDP(1, DELTA)) == zcdp_epsilon(0.2, DELTA)


def test_composition_sums_in_pure_and_zcdp_and_goes_through_rho_for_several_gaussians_under_approx():
    gaussians = [NoisyAnswers(f"m{i}", GaussianMeasurement(2.0), 1.0) for i in range(3)]
    laplace = NoisyAnswers("t", LaplaceMeasurement(10.0), 1.0)
    assert composed_loss([*gaussians, laplace], ZCDP(1)) == pytest.approx(3 * 0.125 + 0.1**2 / 2)
    assert composed_loss([*gaussians, laplace], ApproxDP(1, DELTA)) == pytest.approx(
        zcdp_epsilon(3 * 0.125, DELTA) + 0.1)
    assert composed_loss([laplace, PrivateChoice("s", 0.2)], PureDP(1)) == pytest.approx(0.3)


def test_a_whitened_laplace_record_is_the_blocks_worst_column():
    rng = np.random.default_rng(0)
    for _ in range(20):
        blocks = [(rng.random(6) * rng.integers(0, 3), LaplaceMeasurement(float(rng.uniform(0.5, 4))))
                  for _ in range(int(rng.integers(1, 4)))]
        record = laplace_record("q", blocks, np.zeros(1))
        assert record.loss(PureDP(1)) == pytest.approx(pure_loss(blocks), rel=1e-12)


def _check(release):
    budget = release.budget
    loss = composed_loss(release.measurements, budget)
    assert loss == pytest.approx(release.privacy_loss, rel=1e-9, abs=1e-12), release.measurements
    if release.privacy_loss > 0:
        assert release.measurements, f"{release.mechanism} states a loss but records no measurement"
    for record in release.measurements:
        if isinstance(record, NoisyAnswers) and record.values is not None:
            assert np.all(np.isfinite(record.values))


HISTOGRAM = sorted(MECHANISMS)


@pytest.mark.parametrize("name", HISTOGRAM)
def test_every_histogram_mechanism_states_the_composition_of_its_records(name):
    mechanism = MECHANISMS[name]
    gaussian = name.startswith("gaussian-")
    for d, (workload, x) in enumerate(histogram_draws(mechanism, HISTOGRAM.index(name))):
        rng = np.random.default_rng(d)
        if not gaussian:
            _check(mechanism.run(x, workload, 0.7, rng))
        for definition in ("approx", "zcdp"):
            _check(mechanism.run(x, workload, EpsilonAxis(definition, DELTA).privacy(0.7), rng))


TABLES = [name for name, m in TABLE_MECHANISMS.items() if not getattr(m, "synthesizes", False)]


@pytest.mark.parametrize("name", TABLES)
def test_every_table_mechanism_states_the_composition_of_its_records(name):
    mechanism = TABLE_MECHANISMS[name]
    for d, workload in enumerate(table_draws(mechanism, list(TABLE_MECHANISMS).index(name))):
        # one protocol: a privacy value
        release = mechanism.run(_table(), workload, ZCDP(RHO), np.random.default_rng(d))
        _check(release)
        assert release.measurements and release.privacy_loss <= RHO * (1 + 1e-9)
        same = mechanism.run(_table(), workload, RHO, np.random.default_rng(d))  # a bare number is ρ
        assert np.array_equal(same.answers, release.answers) and same.budget == release.budget


@pytest.mark.parametrize("name", sorted(TABLE_MECHANISMS))
def test_table_mechanisms_refuse_an_epsilon_value_by_name(name):
    workload = table_draws(TABLE_MECHANISMS["gaussian-marginals"], 0)[0]
    with pytest.raises(ValueError, match="table mechanisms run at a rho-zCDP value"):
        TABLE_MECHANISMS[name].run(_table(), workload, PureDP(1.0), np.random.default_rng(0))
