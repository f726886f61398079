"""Privacy definitions: published conversion values, composition, validation (see docs/privacy-definitions.md)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy import stats

from dplens.core.privacy.definitions import (
    ZCDP,
    ApproxDP,
    PureDP,
    analytic_gaussian_sigma,
    check_delta,
    classical_gaussian_sigma,
    compose,
    delta_warning,
    gaussian_delta,
    gaussian_epsilon,
    gaussian_rho,
    target,
    zcdp_epsilon,
    zcdp_rho,
    zcdp_sigma,
)

CKS = [(0.5, 1e-6, 5.221534, 5.756522), (0.1, 1e-6, 2.141939, 2.450788),
       (1.0, 1e-9, 9.521464, 10.104563), (0.005, 1e-5, 0.375261, 0.484853)]
BALLE_WANG = [(1.0, 1e-5, 3.730632, 4.844805), (0.5, 1e-6, 8.057618, 10.597605),
              (2.0, 1e-9, 2.844547, 3.236233), (0.1, 1e-5, 30.749566, 48.448053)]


@pytest.mark.parametrize(("rho", "delta", "tight", "loose"), CKS)
def test_zcdp_to_approx_matches_the_cks_bound_and_beats_the_loose_one(rho, delta, tight, loose):
    assert zcdp_epsilon(rho, delta) == pytest.approx(tight, abs=1e-6)
    assert rho + 2 * math.sqrt(rho * math.log(1 / delta)) == pytest.approx(loose, abs=1e-6)
    assert ZCDP(rho).to_approx(delta) == ApproxDP(zcdp_epsilon(rho, delta), delta)


def test_cks_epsilon_is_the_minimum_over_alpha_of_a_valid_bound():
    """A brute-force grid over α never beats the minimiser (it would if the search missed the optimum)."""
    rho, delta = 0.3, 1e-7
    alphas = 1 + np.logspace(-4, 4, 20001)
    grid = rho * alphas + (np.log(1 / delta) + (alphas - 1) * np.log1p(-1 / alphas) - np.log(alphas)) / (alphas - 1)
    assert zcdp_epsilon(rho, delta) <= grid.min() + 1e-9
    assert zcdp_epsilon(rho, delta) >= grid.min() - 1e-4


def test_inverse_conversion_published_value_and_round_trip():
    assert zcdp_rho(1.0, 1e-6) == pytest.approx(0.024356, abs=1e-6)
    for epsilon in (0.1, 1.0, 7.0):
        rho = zcdp_rho(epsilon, 1e-6)
        assert zcdp_epsilon(rho, 1e-6) <= epsilon  # rounded down: the ρ found is always enough
        assert zcdp_epsilon(rho * (1 + 1e-9), 1e-6) == pytest.approx(epsilon, rel=1e-8)


@pytest.mark.parametrize(("epsilon", "delta", "analytic", "classical"), BALLE_WANG)
def test_analytic_gaussian_sigma_matches_balle_wang(epsilon, delta, analytic, classical):
    sigma = analytic_gaussian_sigma(epsilon, delta)
    assert sigma == pytest.approx(analytic, abs=1e-6)
    assert gaussian_delta(epsilon, sigma) <= delta  # rounded up: sufficient
    assert gaussian_delta(epsilon, sigma * (1 - 1e-6)) > delta  # and the least such σ
    assert classical_gaussian_sigma(epsilon, delta) == pytest.approx(classical, abs=1e-6)
    assert classical_gaussian_sigma(epsilon, delta) > sigma
    assert analytic_gaussian_sigma(epsilon, delta, sensitivity=3.0) == pytest.approx(3 * sigma, rel=1e-12)


def test_gaussian_epsilon_inverts_the_curve():
    sigma = analytic_gaussian_sigma(1.0, 1e-5)
    assert gaussian_epsilon(sigma, 1e-5) == pytest.approx(1.0, abs=1e-9)
    assert gaussian_epsilon(sigma, 1e-5) <= 1.0 + 1e-12
    assert gaussian_epsilon(1e6, 1e-5) == 0.0


def test_gaussian_delta_equals_the_privacy_loss_distribution_integral():
    """δ(ε) = E[(1 − e^{ε−L})₊] with L ~ N(μ, 2μ), μ = Δ²/(2σ²): Balle & Wang from first principles."""
    sigma, epsilon = 1.3, 0.8
    mu = 1 / (2 * sigma**2)
    losses = np.linspace(mu - 40 * math.sqrt(2 * mu), mu + 40 * math.sqrt(2 * mu), 400_001)
    density = stats.norm.pdf(losses, mu, math.sqrt(2 * mu))
    integral = np.trapezoid(np.clip(1 - np.exp(epsilon - losses), 0, None) * density, losses)
    assert gaussian_delta(epsilon, sigma) == pytest.approx(integral, rel=1e-6)


def test_zcdp_sigma_and_rho_are_inverse():
    assert zcdp_sigma(0.5) == 1.0
    assert gaussian_rho(zcdp_sigma(0.02, 2.0), 2.0) == pytest.approx(0.02)


def test_composition_is_exact_in_each_definition():
    assert compose([PureDP(0.1)] * 10).epsilon == pytest.approx(1.0)
    assert compose([ZCDP(0.01)] * 100).rho == pytest.approx(1.0)
    approx = compose([ApproxDP(0.1, 1e-7)] * 10)
    assert (approx.epsilon, approx.delta) == (pytest.approx(1.0), pytest.approx(1e-6))
    assert compose([PureDP(1.0), ZCDP(0.5)]) == ZCDP(1.0)
    with pytest.raises(ValueError, match="cannot compose"):
        compose([ApproxDP(1.0, 1e-6), ZCDP(0.5)])
    with pytest.raises(ValueError, match="at least one"):
        compose([])


def test_composing_in_zcdp_beats_basic_composition_for_many_releases():
    k, epsilon, delta = 1000, 0.01, 1e-6
    basic = compose([PureDP(epsilon)] * k).epsilon
    via_zcdp = compose([PureDP(epsilon).to_zcdp()] * k).to_approx(delta).epsilon
    assert via_zcdp < basic / 3
    assert PureDP(10.0).to_approx(1e-6).epsilon == 10.0  # one large ε: the direct route is kept


def test_pure_converts_to_zcdp_and_approx_does_not():
    assert PureDP(1.0).to_zcdp() == ZCDP(0.5)
    with pytest.raises(ValueError, match="does not imply any rho-zCDP"):
        ApproxDP(1.0, 1e-6).to_zcdp()
    with pytest.raises(ValueError, match="smaller delta"):
        ApproxDP(1.0, 1e-5).to_approx(1e-6)


@pytest.mark.parametrize(("make", "message"), [
    (lambda: PureDP(-1.0), "epsilon must be a finite number >= 0, got -1.0"),
    (lambda: PureDP(math.nan), "epsilon must be"),
    (lambda: ZCDP(math.inf), "rho must be a finite number >= 0, got inf"),
    (lambda: ApproxDP(1.0, 0.0), r"delta must be a number in \(0, 1\), got 0.0"),
    (lambda: ApproxDP(1.0, 1.0), "delta must be a number in"),
    (lambda: check_delta("1e-6"), "delta must be a number in"),
    (lambda: target("renyi", 1.0, 1e-6), "definition must be one of"),
])
def test_validation_names_parameter_value_and_rule(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_delta_warning_above_one_over_n():
    assert delta_warning(1e-6, 10_000) is None
    assert "above 1/n" in delta_warning(1e-3, 10_000)


def test_values_are_immutable_and_targets_match():
    with pytest.raises(dataclasses.FrozenInstanceError):
        PureDP(1.0).epsilon = 2.0  # type: ignore[misc]
    assert target("pure", 1.0, 1e-6) == PureDP(1.0)
    assert target("approx", 1.0, 1e-6) == ApproxDP(1.0, 1e-6)
    assert target("zcdp", 1.0, 1e-6).to_approx(1e-6).epsilon <= 1.0


def test_native_spend_in_each_unit():
    from dplens.core.privacy.budget import Budget, native_spend

    rows = [Budget(1.0), Budget(2.141939, 1e-6, 0.1)]
    zcdp = native_spend(rows, "zcdp", 1e-6, 10.0)
    assert zcdp["spent"] == pytest.approx(0.6) and zcdp["epsilon_at_delta"] == pytest.approx(zcdp_epsilon(0.6, 1e-6))
    approx = native_spend(rows, "approx", 1e-6, 10.0)
    assert approx["spent"] == pytest.approx(3.141939) and approx["spent_delta"] == 1e-6
    assert native_spend([Budget(1.0, 1e-6)], "zcdp", 1e-6, 10.0)["spent"] is None  # (ε, δ) has no ρ
