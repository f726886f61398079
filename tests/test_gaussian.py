"""Gaussian mechanisms: σ calibration, noise distribution with power, analytic error vs simulation, loss ≤ budget."""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import pytest
from scipy import stats

from dplens.core.mechanisms import MECHANISMS, configure
from dplens.core.mechanisms.gaussian import unit_sigma
from dplens.core.privacy.definitions import (
    ZCDP,
    analytic_gaussian_sigma,
    gaussian_epsilon,
    zcdp_rho,
)
from dplens.core.privacy.discrete_gaussian import discrete_gaussian_epsilon, discrete_gaussian_sigma
from dplens.core.privacy.noise import NOISE_SAMPLERS, SecureNoise, noise_kind, noise_sampler, noise_source
from dplens.core.queries.workloads import AllRange, Identity, Kron, Prefix, dense, random_range
from tests.conftest import assert_expected_mse_with_power

GAUSSIAN = {name: m for name, m in MECHANISMS.items() if noise_kind(m) == "gaussian"}
LAPLACE_PARENT = {"gaussian-identity": "identity", "gaussian-answers": "laplace-on-answers", "gaussian-hb": "hb",
                  "gaussian-privelet": "privelet", "gaussian-greedy-h": "greedy-h", "gaussian-eigen": "mm-opt"}
ALL = pytest.mark.parametrize("mechanism", GAUSSIAN.values(), ids=GAUSSIAN.keys())


def test_every_data_independent_laplace_strategy_has_a_gaussian_variant():
    assert set(GAUSSIAN) == set(LAPLACE_PARENT)
    assert all(not m.data_dependent for m in GAUSSIAN.values())


@ALL
@pytest.mark.parametrize("calibration", ["analytic", "zcdp"])
def test_privacy_loss_of_the_added_noise_is_within_the_budget(mechanism, calibration, rng):
    mechanism = dataclasses.replace(mechanism, calibration=calibration, delta=1e-5)
    x = np.random.default_rng(1).poisson(10, 64).astype(float)
    workload = random_range(64, 30, seed=3)
    release = mechanism.run(x, workload, 0.7, rng)
    assert release.epsilon == 0.7
    allowed = release.allowed_loss  # ε = 0.7 at δ, or the ρ of 0.7 at δ under zCDP: the loss is in that unit
    assert allowed == (0.7 if calibration == "analytic" else zcdp_rho(0.7, 1e-5))
    assert allowed * (1 - 1e-6) <= release.privacy_loss <= allowed * (1 + 1e-9)  # calibrated tightly, never above
    params = release.params
    assert params["definition"] == ("approx" if calibration == "analytic" else "zcdp")
    assert params["delta"] == 1e-5 and params["sigma"] > 0
    assert params["rho"] == pytest.approx(params["l2_sensitivity"] ** 2 / (2 * params["sigma"] ** 2))
    if calibration == "zcdp":
        assert params["rho"] <= zcdp_rho(0.7, 1e-5) * (1 + 1e-12)


def test_sigmas_follow_the_strategies_l2_sensitivity():
    x, epsilon, delta = np.ones(16), 1.0, 1e-6
    unit = analytic_gaussian_sigma(epsilon, delta)
    expected = {"gaussian-identity": 1.0, "gaussian-answers": np.sqrt(16),  # prefix: column 0 has 16 ones
                "gaussian-hb": np.sqrt(5), "gaussian-privelet": np.sqrt(5)}  # H2 on 16 cells: 5 levels
    for name, l2 in expected.items():
        mechanism = configure(GAUSSIAN[name], {"branching": 2} if name == "gaussian-hb" else {})
        release = mechanism.run(x, Prefix(16), epsilon, np.random.default_rng(0))
        # identity on integer counts may draw the discrete Gaussian: σ is calibrated on its exact curve too
        want = discrete_gaussian_sigma(epsilon, delta) if name == "gaussian-identity" else l2 * unit
        assert release.params["sigma"] == pytest.approx(want, rel=1e-9), name
    assert unit_sigma(epsilon, delta, "zcdp") > unit  # the zCDP route pays for its tight composition


@pytest.mark.statistical
@pytest.mark.parametrize("calibration", ["analytic", "zcdp"])
def test_identity_noise_is_normal_with_the_calibrated_sigma_and_the_test_has_power(calibration, rng):
    mechanism = dataclasses.replace(GAUSSIAN["gaussian-identity"], calibration=calibration)
    n = 20_000
    release = mechanism.run(np.zeros(n), Identity(n), 0.5, rng)
    sigma = mechanism.sigma(Identity(n), 0.5)  # analytic: also valid for the discrete Gaussian (+0.03 % here)
    assert sigma == pytest.approx(unit_sigma(0.5, 1e-6, calibration), rel=1e-3)
    noise = release.estimate
    assert stats.kstest(noise, "norm", args=(0, sigma)).pvalue > 1e-6
    for wrong in (0.9 * sigma, 1.1 * sigma):  # a σ off by 10 % is rejected
        assert stats.kstest(noise, "norm", args=(0, wrong)).pvalue < 1e-6
    assert stats.kstest(noise, "laplace", args=(0, sigma / np.sqrt(2))).pvalue < 1e-6  # and not Laplace


@pytest.mark.statistical
@pytest.mark.parametrize(("name", "workload", "runs"), [
    ("gaussian-identity", Prefix(16), 3000),
    ("gaussian-answers", AllRange(8), 3000),
    ("gaussian-hb", Prefix(16), 3000),
    ("gaussian-privelet", AllRange(16), 3000),
    ("gaussian-greedy-h", Prefix(16), 3000),
    ("gaussian-eigen", AllRange(16), 3000),
    ("gaussian-hb", Kron((Prefix(4), Prefix(4))), 3000),
], ids=lambda v: v if isinstance(v, str) else "")
def test_expected_mse_matches_simulation_with_power(name, workload, runs, rng, monkeypatch):
    # Same runs, bit-identical answers, same power: only the ε-from-σ labels of the releases (pure functions of σ
    # and δ; gaussian-identity inverts the discrete curve, ~5 ms a release) are computed once instead of per run.
    from dplens.core.mechanisms import measurement  # the records' privacy maps

    for function in ("discrete_gaussian_epsilon", "gaussian_epsilon"):
        monkeypatch.setattr(measurement, function, functools.lru_cache(maxsize=64)(getattr(measurement, function)))
    x = np.random.default_rng(5).poisson(30, workload.shape[1]).astype(float)
    if name == "gaussian-hb" and isinstance(workload, Kron):
        x = x.reshape(4, 4)
    assert_expected_mse_with_power(GAUSSIAN[name], x, workload, 0.8, runs, rng)


@ALL
def test_expected_mse_is_sigma_squared_times_the_dense_reconstruction_energy(mechanism):
    """σ²‖W A⁺‖_F²/m with A built densely from the mechanism's structure (σ² per answer for answers)."""
    from tests.test_audit_gaussian import _dense_strategy

    workload = AllRange(16)
    strategy = _dense_strategy(mechanism, workload)
    sigma = np.linalg.norm(strategy, axis=0).max() * analytic_gaussian_sigma(1.0, 1e-6)
    # σ valid for the discrete Gaussian too (dplens.core.privacy.discrete_gaussian)
    if mechanism.name == "gaussian-identity":
        sigma = discrete_gaussian_sigma(1.0, 1e-6)
    m = workload.shape[0]
    energy = m if mechanism.name == "gaussian-answers" else np.sum((dense(workload) @ np.linalg.pinv(strategy)) ** 2)
    assert mechanism.expected_mse(workload, 1.0) == pytest.approx(sigma**2 * energy / m, rel=1e-6)


def test_gaussian_beats_laplace_on_prefix_answers_at_matched_epsilon_and_loses_on_identity():
    """Δ₂(prefix) = √n ≪ Δ₁ = n: on the answers Gaussian wins by far; on unit cells Laplace wins at ε = 1."""
    workload = Prefix(256)
    assert MECHANISMS["gaussian-answers"].expected_mse(workload, 1.0) < \
        MECHANISMS["laplace-on-answers"].expected_mse(workload, 1.0) / 10
    assert (MECHANISMS["gaussian-identity"].expected_mse(workload, 1.0)
            > MECHANISMS["identity"].expected_mse(workload, 1.0))


def test_knobs_are_validated_and_configurable():
    with pytest.raises(ValueError, match=r"delta must be a number in \(0, 1\)"):
        dataclasses.replace(GAUSSIAN["gaussian-hb"], delta=0.0)
    with pytest.raises(ValueError, match="calibration must be one of"):
        dataclasses.replace(GAUSSIAN["gaussian-hb"], calibration="renyi")
    configured = configure(GAUSSIAN["gaussian-hb"], {"delta": "1e-9", "branching": "4"})
    assert configured.delta == 1e-9 and configured.branching == 4


class _NoLaplace:
    """A NumPy generator that refuses Laplace draws: a Gaussian mechanism must never ask for one."""

    def __init__(self, seed: int) -> None:
        self._rng = np.random.default_rng(seed)

    def laplace(self, *args, **kwargs):
        raise AssertionError("a Gaussian mechanism drew Laplace noise")

    def add_laplace(self, *args, **kwargs):
        raise AssertionError("a Gaussian mechanism drew Laplace noise")

    def __getattr__(self, name: str):
        return getattr(self._rng, name)


@ALL
def test_gaussian_mechanisms_draw_only_gaussian_noise_and_match_the_plain_generator(mechanism):
    x, workload = np.random.default_rng(2).poisson(6, 16).astype(float), Prefix(16)
    release = mechanism.run(x, workload, 0.9, _NoLaplace(4))
    assert np.array_equal(release.answers, mechanism.run(x, workload, 0.9, np.random.default_rng(4)).answers)


# ----------------------------------------------------------------------------- the secure path
@pytest.mark.statistical
def test_secure_integer_path_is_opendps_discrete_gaussian_with_the_claimed_sigma():
    """Integer counts → OpenDP's discrete Gaussian: integer noise whose spread matches σ (and not 0.9σ or 1.1σ)."""
    n = 4000
    mechanism = GAUSSIAN["gaussian-identity"]
    x = np.tile([0.0, 3, 17, 1], n // 4)
    source = noise_source("secure", mechanism=mechanism, counts=x)
    assert source.integer and noise_sampler(source, mechanism) == "opendp-integer-gaussian"
    release = mechanism.run(x, Identity(n), 1.0, source)
    noise = release.estimate - x
    assert np.all(noise == np.round(noise))
    sigma = release.params["sigma"]
    # the discrete Gaussian's variance is within 1e-10 of σ² for σ ≥ 1 (CKS 2020 Prop. 19)
    chi2 = (n - 1) * noise.var(ddof=1) / sigma**2
    low, high = stats.chi2.ppf([1e-6, 1 - 1e-6], n - 1)
    assert low < chi2 < high
    for wrong in (0.9 * sigma, 1.1 * sigma):
        assert not low < (n - 1) * noise.var(ddof=1) / wrong**2 < high
    assert release.privacy_loss <= 1.0 + 1e-9


def test_secure_float_path_uses_opendps_lattice_gaussian_and_says_so():
    mechanism = GAUSSIAN["gaussian-hb"]
    source = noise_source("secure", mechanism=mechanism, counts=np.ones(16))
    assert not source.integer and noise_sampler(source, mechanism) == "opendp-lattice-gaussian"
    assert noise_sampler(np.random.default_rng(0), mechanism) == "numpy-float-gaussian"
    assert {"opendp-lattice-gaussian", "opendp-integer-gaussian", "numpy-float-gaussian"} <= set(NOISE_SAMPLERS)
    draws = SecureNoise().add_gaussian(np.full(2000, 0.3), 2.0) - 0.3
    assert 1.8 < draws.std() < 2.2
    with pytest.raises(ValueError, match="Gaussian scale must be finite"):
        SecureNoise().add_gaussian(np.zeros(2), -1.0)


def test_privacy_loss_uses_the_exact_curve():
    release = GAUSSIAN["gaussian-identity"].run(np.ones(4), Identity(4), 1.0, np.random.default_rng(0))
    sigma = release.params["sigma"]  # the larger of the continuous and the discrete curves' ε, both ≤ 1
    assert release.privacy_loss == pytest.approx(max(gaussian_epsilon(sigma, 1e-6),
                                                     discrete_gaussian_epsilon(sigma, 1e-6)), abs=1e-12)
    assert release.privacy_loss <= 1.0
    zcdp = dataclasses.replace(GAUSSIAN["gaussian-identity"], calibration="zcdp")
    release = zcdp.run(np.ones(4), Identity(4), 1.0, np.random.default_rng(0))
    assert release.budget == ZCDP(zcdp_rho(1.0, 1e-6)) and release.loss_unit == "rho"  # zCDP: the loss is its ρ
    assert release.privacy_loss == release.params["rho"] <= release.budget.rho * (1 + 1e-12)


def test_gaussian_subclasses_are_not_taken_for_plain_laplace():
    from dplens.core.analysis.selection import laplace_answer_scale

    assert laplace_answer_scale(GAUSSIAN["gaussian-answers"], Prefix(4), 1.0) is None
    assert laplace_answer_scale(GAUSSIAN["gaussian-identity"], Prefix(4), 1.0) is None
    assert laplace_answer_scale(MECHANISMS["laplace-on-answers"], Prefix(4), 1.0) is not None
