"""Gaussian mechanisms: σ calibration, noise distribution with power, analytic error vs simulation, loss ≤ budget."""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import pytest
from scipy import stats

from dplens.core.mechanisms import MECHANISMS, configure
from dplens.core.mechanisms.measurement import unit_sigma
from dplens.core.privacy.definitions import (
    ZCDP,
    ApproxDP,
    PureDP,
    analytic_gaussian_sigma,
    gaussian_epsilon,
    target,
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
@pytest.mark.parametrize("definition", ["approx", "zcdp"])
def test_privacy_loss_of_the_added_noise_is_within_the_budget(mechanism, definition, rng):
    x = np.random.default_rng(1).poisson(10, 64).astype(float)
    workload = random_range(64, 30, seed=3)
    privacy = target(definition, 0.7, 1e-5)  # (0.7, 1e-5)-DP, or the ρ of 0.7 at δ = 1e-5
    release = mechanism.run(x, workload, privacy, rng)
    assert release.budget == privacy
    allowed = release.allowed_loss  # ε = 0.7 at δ, or that ρ under zCDP: the loss is in that unit
    assert allowed == (0.7 if definition == "approx" else zcdp_rho(0.7, 1e-5))
    assert allowed * (1 - 1e-6) <= release.privacy_loss <= allowed * (1 + 1e-9)  # calibrated tightly, never above
    params = release.params
    assert params["definition"] == definition and params["sigma"] > 0
    assert params.get("delta") == (1e-5 if definition == "approx" else None)  # a ρ has no δ of its own
    assert params["rho"] == pytest.approx(params["l2_sensitivity"] ** 2 / (2 * params["sigma"] ** 2))
    if definition == "zcdp":
        assert params["rho"] <= zcdp_rho(0.7, 1e-5) * (1 + 1e-12)


@ALL
def test_pure_epsilon_is_refused_by_name_and_a_bare_number_is_epsilon_at_delta_1e6(mechanism, rng):
    x, workload = np.ones(8), Prefix(8)
    with pytest.raises(ValueError, match=f"{mechanism.name} adds Gaussian noise, which is never pure epsilon-DP"):
        mechanism.run(x, workload, PureDP(1.0), rng)
    bare = mechanism.run(x, workload, 0.5, np.random.default_rng(3))
    approx = mechanism.run(x, workload, ApproxDP(0.5, 1e-6), np.random.default_rng(3))
    assert bare.budget == approx.budget and np.array_equal(bare.answers, approx.answers)


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
    mechanism = GAUSSIAN["gaussian-identity"]
    n = 20_000
    privacy = ApproxDP(0.5, 1e-6) if calibration == "analytic" else ZCDP(zcdp_rho(0.5, 1e-6))
    release = mechanism.run(np.zeros(n), Identity(n), privacy, rng)
    sigma = mechanism.sigma(Identity(n), privacy)  # analytic: also valid for the discrete Gaussian (+0.03 % here)
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


def test_the_noise_is_a_setting_and_older_gaussian_settings_are_ignored():
    with pytest.raises(ValueError, match="noise must be 'laplace' or 'gaussian'"):
        configure(MECHANISMS["hb"], {"noise": "cauchy"})
    assert configure(MECHANISMS["hb"], {"noise": "gaussian"}) == dataclasses.replace(GAUSSIAN["gaussian-hb"], name="hb")
    # saved before the privacy value carried δ and the definition: read and ignored, the other settings kept
    configured = configure(GAUSSIAN["gaussian-hb"], {"delta": "1e-9", "calibration": "zcdp", "branching": "4"})
    assert configured.branching == 4 and configured.noise == "gaussian"
    with pytest.raises(ValueError, match="has no parameter 'delta'"):
        configure(MECHANISMS["hb"], {"delta": "1e-9"})  # a Laplace plan never had it


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
    release = GAUSSIAN["gaussian-identity"].run(np.ones(4), Identity(4), ZCDP(zcdp_rho(1.0, 1e-6)),
                                                np.random.default_rng(0))
    assert release.budget == ZCDP(zcdp_rho(1.0, 1e-6)) and release.loss_unit == "rho"  # zCDP: the loss is its ρ
    assert release.privacy_loss == release.params["rho"] <= release.budget.rho * (1 + 1e-12)


def test_gaussian_subclasses_are_not_taken_for_plain_laplace():
    from dplens.core.analysis.selection import laplace_answer_scale

    assert laplace_answer_scale(GAUSSIAN["gaussian-answers"], Prefix(4), 1.0) is None
    assert laplace_answer_scale(GAUSSIAN["gaussian-identity"], Prefix(4), 1.0) is None
    assert laplace_answer_scale(MECHANISMS["laplace-on-answers"], Prefix(4), 1.0) is not None
