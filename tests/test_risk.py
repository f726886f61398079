"""dplens.core.analysis.risk: posterior bounds, quantile dots (KS with power), the sampling + noise interval, and the
tab."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dplens import ui
from dplens.core.analysis import risk
from dplens.core.mechanisms import MECHANISMS
from dplens.core.privacy.definitions import ZCDP, analytic_gaussian_sigma, zcdp_epsilon, zcdp_rho
from dplens.core.queries.workloads import Identity
from tests.test_app import open_page


# ----------------------------------------------------------------------------- posterior bound
@pytest.mark.parametrize(("epsilon", "prior"), [(0.5, 0.01), (1.0, 0.1), (2.0, 0.5), (5.0, 0.001)])
def test_posterior_bound_closed_form(epsilon, prior):
    expected = math.exp(epsilon) * prior / (1 - prior + math.exp(epsilon) * prior)
    assert float(risk.posterior_bound(epsilon, prior)) == pytest.approx(expected, rel=1e-12)


def test_posterior_bound_is_the_prior_at_epsilon_zero_and_monotone():
    priors = np.array([0.0, 0.001, 0.01, 0.1, 0.5, 0.9, 1.0])
    np.testing.assert_allclose(risk.posterior_bound(0.0, priors), priors, rtol=1e-12, atol=0)
    epsilons = np.geomspace(1e-3, 50, 200)
    grid = risk.posterior_bound(epsilons[:, None], priors[None, 1:-1])
    assert np.all(np.diff(grid, axis=0) >= 0) and np.all(np.diff(grid, axis=1) >= 0)  # non-decreasing
    below_one = grid[1:] < 1 - 1e-9  # strictly increasing in ε until it rounds to 1 in floating point
    assert np.all(np.diff(grid, axis=0)[below_one] > 0)
    assert np.all(np.diff(grid[:100], axis=1) > 0)  # strictly increasing in the prior (ε ≤ ~0.2)
    assert np.all((grid >= priors[None, 1:-1]) & (grid <= 1))
    assert float(risk.posterior_bound(1000.0, 0.01)) == pytest.approx(1.0)  # no overflow at large ε


def test_posterior_bound_odds_form():
    # posterior odds = e^ε × prior odds: at ε = ln 9 a 10 % prior becomes 50 %
    assert float(risk.posterior_bound(math.log(9), 0.1)) == pytest.approx(0.5, rel=1e-12)


@pytest.mark.parametrize(("epsilon", "prior", "message"), [
    (-0.1, 0.1, "epsilon must be >= 0"), (float("nan"), 0.1, "epsilon must be >= 0"),
    (1.0, 1.5, "prior must be a probability in"), (1.0, -0.01, "prior must be a probability in")])
def test_posterior_bound_rejects_bad_input(epsilon, prior, message):
    with pytest.raises(ValueError, match=message):
        risk.posterior_bound(epsilon, prior)


def test_disclosure_risk_pure_never_fails():
    result = risk.disclosure_risk("pure", 1.0, 0.1, scale=1.0)
    assert result.delta == 0 and result.failure_probability == 0
    assert result.posterior == pytest.approx(float(risk.posterior_bound(1.0, 0.1)))
    assert result.sentence().endswith("always")


def test_disclosure_risk_approx_uses_the_gaussian_exact_profile():
    sigma = analytic_gaussian_sigma(1.0, 1e-5)
    result = risk.disclosure_risk("approx", 1.0, 0.01, scale=sigma)
    assert result.delta == pytest.approx(1e-5, rel=1e-6)  # the analytic Gaussian's δ at its own ε
    assert result.posterior == pytest.approx(float(risk.posterior_bound(1.0, 0.01)))
    # the chance the posterior actually exceeds the bound is P[L > ε] ≥ δ(ε) (δ is not a tail probability)
    assert result.failure_probability > result.delta
    assert "except with probability δ = 1e-05" in result.sentence()


def test_disclosure_risk_zcdp_uses_the_cks_profile():
    rho = zcdp_rho(1.0, 1e-6)
    sigma = 1 / math.sqrt(2 * rho)
    result = risk.disclosure_risk("zcdp", 1.0, 0.5, scale=sigma)
    assert result.delta == pytest.approx(1e-6, rel=1e-4)  # CKS at ρ gives back (ε = 1, δ = 1e-6)
    # Canonne, Kamath & Steinke 2020 (docs/privacy-definitions.md)
    for rho_, delta in [(0.5, 1e-6), (0.1, 1e-6), (1.0, 1e-9), (0.005, 1e-5)]:
        profile = float(risk.privacy_profile("zcdp", zcdp_epsilon(rho_, delta), scale=1 / math.sqrt(2 * rho_)))
        assert profile == pytest.approx(delta, rel=1e-4)
    # the Gaussian's exact curve never exceeds the CKS conversion (valid for every ρ-zCDP mechanism)
    epsilons = np.linspace(0.2, 3, 15)
    assert np.all(risk.privacy_profile("approx", epsilons, scale=sigma)
                  <= risk.privacy_profile("zcdp", epsilons, scale=sigma) * (1 + 1e-9))


@pytest.mark.statistical
@pytest.mark.parametrize(("kind", "scale"), [("gaussian", 3.0), ("laplace", 0.7)])
def test_privacy_loss_tail_matches_simulation(kind, scale, rng):
    """P[L > ε] under the person-in output distribution, by simulation (within 4 standard errors)."""
    y = risk.noise_distribution(kind, scale, center=1.0).rvs(size=200_000, random_state=rng)
    loss = (risk.noise_distribution(kind, scale).logpdf(y) * -1
            + risk.noise_distribution(kind, scale, center=1.0).logpdf(y))
    for epsilon in (0.05, 0.3, 1.0):
        p = float(risk.privacy_loss_tail(kind, epsilon, scale=scale))
        assert abs((loss > epsilon).mean() - p) < 4 * math.sqrt(p * (1 - p) / len(y)) + 1e-12


# ----------------------------------------------------------------------------- where a release falls
def _draws(kind: str, epsilon: float, rng: np.random.Generator) -> np.ndarray:
    """20,000 releases of a zero count by the app's own mechanisms (identity / Gaussian identity under zCDP)."""
    zeros, workload = np.zeros(20_000), Identity(20_000)
    if kind == "laplace":
        return MECHANISMS["identity"].run(zeros, workload, epsilon, rng).answers
    return MECHANISMS["gaussian-identity"].run(zeros, workload, ZCDP(zcdp_rho(epsilon, 1e-6)), rng).answers


@pytest.mark.statistical
@pytest.mark.parametrize(("definition", "epsilon"), [("pure", 0.5), ("zcdp", 1.0)])
def test_quantile_dots_match_the_mechanism_with_power(definition, epsilon, rng):
    kind, scale = risk.noise_for(definition, epsilon, delta=1e-6)
    draws = _draws(kind, epsilon, rng)
    for count in (20, 50):
        dots = risk.quantile_dots(kind, scale, count)
        levels = risk.quantile_levels(count)
        # each dot is the level-quantile: the share of releases below it is its level (4 binomial SEs)
        below = (draws[:, None] <= dots[None, :]).mean(axis=0)
        assert np.all(np.abs(below - levels) < 4 * np.sqrt(levels * (1 - levels) / len(draws)))
    # KS against the distribution the dots are quantiles of, and power: a 20 % wrong scale is rejected
    assert stats.kstest(draws, risk.noise_distribution(kind, scale).cdf).pvalue > 1e-4
    for wrong in (0.8, 1.2):
        assert stats.kstest(draws, risk.noise_distribution(kind, wrong * scale).cdf).pvalue < 1e-6


def test_quantile_dots_are_symmetric_and_centred():
    dots = risk.quantile_dots("gaussian", 2.0, 20, center=100.0)
    np.testing.assert_allclose(dots - 100.0, -(dots[::-1] - 100.0), atol=1e-9)
    assert np.all(np.diff(dots) > 0)


def test_release_interval_is_exact():
    assert risk.release_interval("laplace", 2.0, coverage=0.9) == pytest.approx(2.0 * math.log(10))
    assert risk.release_interval("gaussian", 1.0, coverage=0.95) == pytest.approx(1.959964, rel=1e-6)
    # 9 of 10 dots fall within the 90 % interval (the dots' reading of the sentence)
    dots = risk.quantile_dots("laplace", 2.0, 20)
    assert np.sum(np.abs(dots) <= risk.release_interval("laplace", 2.0, coverage=0.9)) == 18


@pytest.mark.parametrize(("call", "message"), [
    (lambda: risk.quantile_dots("laplace", 1.0, 0), "count must be an integer >= 1"),
    (lambda: risk.quantile_dots("cauchy", 1.0, 20), "kind must be one of"),
    (lambda: risk.quantile_dots("laplace", 0.0, 20), "scale must be a finite number > 0"),
    (lambda: risk.release_interval("laplace", 1.0, coverage=1.0), "coverage must be a number in"),
    (lambda: risk.noise_for("renyi", 1.0, delta=1e-6), "definition must be one of"),
    (lambda: risk.noise_for("approx", 1.0, delta=0.0), "delta must be a number in"),
    (lambda: risk.mean_interval(5, 6.0, 10, lower=0, upper=10, kind="laplace", unit_scale=1.0), "sd must be at most"),
    (lambda: risk.mean_interval(5, 1.0, 10, lower=3, upper=3, kind="laplace", unit_scale=1.0), "upper > lower"),
    (lambda: risk.proportion_interval(3, 0, kind="laplace", scale=1.0), "records must be an integer >= 1"),
])
def test_errors_name_the_parameter_and_the_rule(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_stack_dots_stacks_within_bins():
    x, height = risk.stack_dots(np.array([0.1, 0.2, -0.1, 3.0]), bin_width=1.0, center=0.0)
    np.testing.assert_array_equal(x, [0, 0, 0, 3])
    np.testing.assert_array_equal(height, [1, 2, 3, 1])


# ----------------------------------------------------------------------------- sampling + noise
@pytest.mark.statistical
@pytest.mark.parametrize(("definition", "epsilon", "records", "share"), [
    ("pure", 0.1, 1000, 0.3),    # noise and sampling comparable
    ("pure", 0.01, 2000, 0.4),   # Laplace noise dominates
    ("pure", 5.0, 500, 0.2),     # sampling dominates
    ("zcdp", 0.05, 1000, 0.5),   # Gaussian noise dominates
])
def test_proportion_interval_covers_95_percent(definition, epsilon, records, share, rng):
    kind, scale = risk.noise_for(definition, epsilon, delta=1e-6)
    trials = 20_000
    counts = rng.binomial(records, share, size=trials)
    noisy = counts + risk.noise_distribution(kind, scale).rvs(size=trials, random_state=rng)
    interval = risk.proportion_interval(noisy, records, kind=kind, scale=scale)
    coverage = np.mean((interval.low <= share) & (share <= interval.high))
    assert abs(coverage - 0.95) < 0.015, coverage


@pytest.mark.statistical
@pytest.mark.parametrize(("epsilon", "records"), [(0.05, 200), (1.0, 50), (0.2, 1000)])
def test_mean_interval_covers_95_percent(epsilon, records, rng):
    lower, upper, trials = 0.0, 10.0, 20_000
    population = stats.beta(2, 5)  # values in [0, 10] = 10 × Beta(2, 5): skewed, mean 10·2/7
    truth = 10 * population.mean()
    values = 10 * population.rvs(size=(trials, records), random_state=rng)
    kind, unit = risk.noise_for("pure", epsilon, delta=1e-6)
    half = risk.mean_sensitivity(lower, upper)
    centred_sum = (np.clip(values, lower, upper) - (lower + upper) / 2).sum(axis=1)
    noisy_mean = (lower + upper) / 2 + (centred_sum + risk.noise_distribution(kind, unit * half).rvs(
        size=trials, random_state=rng)) / records
    sd = float(10 * population.std())  # the curator's guess of the sd, here exact
    interval = risk.mean_interval(noisy_mean, sd, records, lower=lower, upper=upper, kind=kind, unit_scale=unit)
    coverage = np.mean((interval.low <= truth) & (truth <= interval.high))
    assert abs(coverage - 0.95) < 0.015, coverage


def test_combined_interval_reduces_to_the_nonprivate_one_as_epsilon_grows():
    for definition in ("pure", "approx", "zcdp"):
        kind, scale = risk.noise_for(definition, 1e9, delta=1e-6)
        interval = risk.proportion_interval(300, 1000, kind=kind, scale=scale)
        assert float(interval.half_width) == pytest.approx(float(interval.nonprivate_half_width), rel=1e-6)
        assert "sampling error dominates" in interval.dominant()
    widths = [float(risk.proportion_interval(300, 1000, kind="laplace", scale=1 / e).half_width)
              for e in (0.01, 0.1, 1.0, 10.0)]
    assert widths == sorted(widths, reverse=True)
    assert float(risk.proportion_interval(300, 1000, kind="laplace", scale=1000.0).noise_share) > 0.99


# ----------------------------------------------------------------------------- the tab (AppTest)
def _tab_elements(at):
    charts = [c for c in at.get("plotly_chart") if c.proto.id and "risk_" in c.proto.id]
    downloads = [d for d in at.get("download_button") if "risk_" in d.proto.id]
    return charts, downloads


def test_the_risk_and_noise_tab_shows_charts_and_downloads():
    at = open_page("pages/choose_epsilon.py")
    assert not at.exception
    assert "See the risk and the noise" in [t.label for t in at.tabs]
    assert any("9 out of 10 releases fall within ±2.3" in m.value for m in at.markdown)  # ε = 1, Laplace
    charts, downloads = _tab_elements(at)
    assert len(charts) == 3 and len(downloads) == 3  # dots, posterior, interval (no profile under pure ε)
    at.number_input(key="risk_epsilon").set_value(0.5)
    at.radio(key="risk_definition").set_value("approx")
    at.radio(key="risk_dots").set_value(50)
    at.radio(key="risk_source").set_value("A value you type")
    at.number_input(key="risk_prior").set_value(0.1)
    at.radio(key="risk_statistic").set_value(ui.RISK_STATISTICS[1])
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    charts, downloads = _tab_elements(at)
    assert len(charts) == 4 and len(downloads) == 3  # + the privacy profile under (ε, δ)
    assert any("except with probability δ" in m.value for m in at.markdown)
    assert any("dominates" in m.value for m in at.markdown)
    posterior = next(m for m in at.metric if m.label == "Largest posterior")
    assert posterior.value == f"{float(risk.posterior_bound(0.5, 0.1)):.2%}"
