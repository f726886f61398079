"""The measurement step: noise kinds and their variances (with power), and Gaussian twins of a two-scale parent."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest
from scipy import stats

import dplens.core.mechanisms as mechanisms_package
from dplens.core.mechanisms.contract import Release
from dplens.core.mechanisms.measurement import (
    GaussianMeasurement,
    LaplaceMeasurement,
    MeasuredPlan,
    Measurement,
    pure_loss,
    unit_sigma,
)
from dplens.core.privacy.definitions import PureDP, target
from dplens.core.privacy.noise import SecureNoise
from dplens.core.queries.workloads import Identity, Workload

DRAWS = 40_000


def _assert_variance_with_power(noise: np.ndarray, measurement: Measurement, off: float = 0.1) -> None:
    """E[noise²] is within 4 standard errors of ``measurement.variance``; the same noise at a scale ``off``
    (relative) too small or too large is rejected (the power check)."""
    squares = noise**2
    standard_error = squares.std(ddof=1) / np.sqrt(squares.size)
    assert abs(squares.mean() - measurement.variance) < 4 * standard_error
    for factor in (1 - off, 1 + off):
        assert abs(squares.mean() - measurement.scaled(factor).variance) > 4 * standard_error


@pytest.mark.statistical
@pytest.mark.parametrize(("measurement", "distribution", "other"), [
    (LaplaceMeasurement(1.7), "laplace", "norm"),
    (GaussianMeasurement(2.3), "norm", "laplace"),
], ids=["laplace", "gaussian"])
def test_noise_has_the_stated_variance_and_kind_with_power(measurement, distribution, other, rng):
    values = np.arange(DRAWS, dtype=float)
    noise = measurement.noisy(values, rng) - values
    _assert_variance_with_power(noise, measurement)
    scale = measurement.variance**0.5 / (2**0.5 if distribution == "laplace" else 1.0)
    assert stats.kstest(noise, distribution, args=(0, scale)).pvalue > 1e-6
    # the other kind at the same variance is rejected: the kind is the measurement's, not only its scale
    other_scale = measurement.variance**0.5 / (2**0.5 if other == "laplace" else 1.0)
    assert stats.kstest(noise, other, args=(0, other_scale)).pvalue < 1e-6


def test_variance_formulas_and_kinds():
    assert LaplaceMeasurement(3.0).variance == 18.0 and LaplaceMeasurement(3.0).kind == "laplace"
    assert GaussianMeasurement(3.0).variance == 9.0 and GaussianMeasurement(3.0).kind == "gaussian"
    assert LaplaceMeasurement(3.0).scaled(2.0) == LaplaceMeasurement(6.0)


def test_draws_are_exactly_the_generators_own():
    """Exploration: the same draws the mechanisms made before the measurement step existed."""
    values = np.array([1.0, 5.0, 2.0])
    laplace = LaplaceMeasurement(0.5).noisy(values, np.random.default_rng(3))
    assert np.array_equal(laplace, values + np.random.default_rng(3).laplace(scale=0.5, size=(3,)))
    gaussian = GaussianMeasurement(0.5).noisy(values, np.random.default_rng(3))
    assert np.array_equal(gaussian, values + np.random.default_rng(3).normal(loc=0.0, scale=0.5, size=(3,)))


def test_secure_path_measures_the_values_inside_opendp():
    counts = np.array([3.0, 0.0, 7.0])
    for measurement in (LaplaceMeasurement(1.0), GaussianMeasurement(1.0)):
        released = measurement.noisy(counts, SecureNoise(integer=True))
        assert released.shape == (3,) and np.all(released == np.round(released))


@pytest.mark.parametrize("bad", [0.0, -1.0, float("inf"), float("nan"), "1", True])
def test_scales_are_validated(bad):
    with pytest.raises(ValueError, match=r"scale must be"):
        LaplaceMeasurement(bad)
    with pytest.raises(ValueError, match=r"sigma must be"):
        GaussianMeasurement(bad)


def test_pure_loss_is_the_laplace_sum_and_unbounded_under_gaussian_noise():
    ones = np.ones(4)
    assert pure_loss([(ones, LaplaceMeasurement(2.0)), (ones, LaplaceMeasurement(4.0))]) == 0.75
    assert pure_loss([(ones, LaplaceMeasurement(2.0)), (ones, GaussianMeasurement(4.0))]) == np.inf
    assert pure_loss([(np.zeros(4), GaussianMeasurement(4.0))]) == 0.0  # reads no data: costs nothing


# ----------------------------------------------------------------------------- a parent with two scales
@dataclass(frozen=True)
class TwoScales(MeasuredPlan):
    """Test-only: every cell at scale b and every pair sum x₂ᵢ + x₂ᵢ₊₁ at RATIO·b (a budget split).

    A cell is in one cell query and one pair query, so the column L1 norm over the scales is
    (1 + 1/RATIO)/b and b = (1 + 1/RATIO)/ε spends exactly ε.
    """

    RATIO: ClassVar[float] = 2.0
    noise: str = "laplace"
    name: str = "two-scales"
    data_dependent: bool = False

    def strategy_norms(self, workload: Workload) -> tuple[np.ndarray, np.ndarray]:
        """The whitened strategy [I; P/RATIO] (unit noise): L1 = 1 + 1/RATIO, L2 = √(1 + 1/RATIO²)."""
        n = workload.shape[1]
        return np.full(n, 1.0 + 1.0 / self.RATIO), np.full(n, np.sqrt(1.0 + 1.0 / self.RATIO**2))

    def measurement(self, workload: Workload, epsilon: float) -> LaplaceMeasurement:
        return LaplaceMeasurement((1.0 + 1.0 / self.RATIO) / epsilon)

    def measure(self, x: np.ndarray, workload: Workload, measurement: Measurement, rng: np.random.Generator) -> Release:
        pairs = measurement.scaled(self.RATIO)
        cells = measurement.noisy(x, rng)
        pair_sums = pairs.noisy(x[0::2] + x[1::2], rng)
        ones = np.ones(x.size)
        loss = pure_loss([(ones, measurement), (ones, pairs)])
        return Release(self.name, PureDP(loss), loss, workload.matvec(cells), cells, dict(measurement.params),
                       {"pair_sums": pair_sums})

    def expected_mse(self, workload: Workload, epsilon: float) -> None:
        return None


def test_two_scale_laplace_parent_spends_its_budget_on_both_blocks():
    x = np.arange(8.0)
    release = TwoScales().run(x, Identity(8), 0.6, np.random.default_rng(9))
    assert release.epsilon == 0.6 and release.privacy_loss == pytest.approx(0.6, rel=1e-12)
    replay = np.random.default_rng(9)
    b = 1.5 / 0.6
    assert np.array_equal(release.estimate, x + replay.laplace(scale=b, size=(8,)))
    assert np.array_equal(release.details["pair_sums"], x[0::2] + x[1::2] + replay.laplace(scale=2 * b, size=(4,)))


@pytest.mark.parametrize(("definition", "calibration"), [("approx", "analytic"), ("zcdp", "zcdp")])
def test_gaussian_noise_on_a_two_scale_plan_draws_the_right_sigma_on_each_block(definition, calibration):
    mechanism = TwoScales(noise="gaussian")
    x, epsilon = np.arange(8.0), 0.6
    release = mechanism.run(x, Identity(8), target(definition, epsilon, 1e-6), np.random.default_rng(9))
    l2 = np.sqrt(1.25)
    sigma = l2 * unit_sigma(epsilon, 1e-6, calibration)
    replay = np.random.default_rng(9)
    assert np.array_equal(release.estimate, x + replay.normal(loc=0.0, scale=sigma, size=(8,)))
    assert np.array_equal(release.details["pair_sums"],
                          x[0::2] + x[1::2] + replay.normal(loc=0.0, scale=2 * sigma, size=(4,)))
    assert release.params["sigma"] == sigma and release.params["l2_sensitivity"] == l2
    assert "noise_scale" not in release.params
    allowed = release.allowed_loss  # ε at δ, or its ρ under zCDP
    assert allowed * (1 - 1e-6) <= release.privacy_loss <= allowed * (1 + 1e-9)  # the whitened Δ₂ is what it pays for


@pytest.mark.statistical
def test_two_scale_twin_block_variances_with_power(rng):
    n = 2 * DRAWS
    release = TwoScales(noise="gaussian").run(np.zeros(n), Identity(n), 1.0, rng)
    sigma = release.params["sigma"]
    _assert_variance_with_power(release.estimate, GaussianMeasurement(sigma))
    _assert_variance_with_power(release.details["pair_sums"], GaussianMeasurement(2 * sigma))


# Modules of dplens.core.mechanisms that may still draw noise themselves, with the reason; none is left
# (a scale that can be 0 builds no measurement and draws nothing, as LRM and OM do for a zero strategy).
DRAWS_OUTSIDE_MEASUREMENT: dict[str, str] = {}


def _noise_calls(path: Path) -> list[str]:
    """Names of ``add_laplace`` / ``add_gaussian`` that ``path`` imports or calls, with their line numbers."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom):
            found += [f"{node.lineno}: import {a.name}"
                      for a in node.names if a.name in ("add_laplace", "add_gaussian")]
        elif isinstance(node, ast.Call):
            name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
            if name in ("add_laplace", "add_gaussian"):
                found.append(f"{node.lineno}: {name}(…)")
    return found


def test_every_mechanism_draws_its_noise_through_a_measurement_object():
    package = Path(mechanisms_package.__file__).parent
    assert _noise_calls(package / "measurement.py")  # the search finds the draws where they belong
    offenders = {str(path.relative_to(package)): calls for path in sorted(package.rglob("*.py"))
                 if path.name != "measurement.py" and (calls := _noise_calls(path))}
    unexplained = {name: calls for name, calls in offenders.items() if name not in DRAWS_OUTSIDE_MEASUREMENT}
    assert not unexplained, ("draw noise through LaplaceMeasurement / GaussianMeasurement.noisy, not add_laplace / "
                             f"add_gaussian: {unexplained}")
    assert set(DRAWS_OUTSIDE_MEASUREMENT) <= set(offenders), "an exception no longer needed: drop it"
