"""Baselines: LaplaceIdentity (Laplace noise on the cells, DPBench's Identity), Laplace on the answers (LM_W),
Uniform."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dplens.core.mechanisms.contract import Release, check_inputs, setting
from dplens.core.mechanisms.measurement import (
    NOISE_RANGE,
    LaplaceMeasurement,
    MeasuredPlan,
    Measurement,
    laplace_record,
    pure_epsilon,
    stated_at,
)
from dplens.core.privacy.definitions import Privacy, PureDP
from dplens.core.queries.workloads import Workload, l1_sensitivity, squared_frobenius


@dataclass(frozen=True)
class LaplaceIdentity(MeasuredPlan):
    """DPBench's Identity: x̂ = x + Lap(1/ε)^n, answers W x̂ by post-processing.

    >>> from dplens.core.queries.workloads import Identity as I
    >>> LaplaceIdentity().expected_mse(I(4), 1.0)
    2.0
    """

    # its strategy depends on the workload's grid only, not on its queries: one release answers every query group
    strategy_ignores_queries: ClassVar[bool] = True
    # every cell of its estimate carries its own i.i.d. noise (exact intervals, dplens.core.analysis.intervals)
    iid_noise_on: ClassVar[str] = "bins"
    summary: ClassVar[str] = "Noise on every count: the baseline the others are measured against."
    # every draw lands on an integer count with integer sensitivity: the secure path may use the integer sampler
    # (read on this exact class only, dplens.core.privacy.noise.adds_noise_to_counts: a subclass must declare it again)
    noise_on_counts: ClassVar[bool] = True

    gaussian_summary: ClassVar[str] = "Gaussian noise on every count ((ε, δ) or zCDP)."
    noise: str = setting("laplace", NOISE_RANGE)
    name: str = "identity"
    data_dependent: bool = False

    def strategy_norms(self, workload: Workload) -> tuple[np.ndarray, np.ndarray]:
        """Identity: every column has L1 and L2 norm 1."""
        ones = np.ones(workload.shape[1])
        return ones, ones

    def noise_scale(self, workload: Workload, epsilon: float) -> float:
        """b = 1/ε, the Laplace scale on every cell: the histogram has sensitivity 1 under add/remove."""
        return 1.0 / epsilon

    def measurement(self, workload: Workload, epsilon: float) -> LaplaceMeasurement:
        """Lap(1/ε) on every cell."""
        return LaplaceMeasurement(self.noise_scale(workload, epsilon))

    def measure(self, x: np.ndarray, workload: Workload, measurement: Measurement, rng: np.random.Generator) -> Release:
        """The cells measured with ``measurement`` (x validated by ``run``); answers W x̂ by post-processing.

        The release's ``epsilon`` is the measurement's pure loss until ``run`` states the budget.

        >>> from dplens.core.queries.workloads import Identity as I
        >>> LaplaceIdentity().measure(np.zeros(2), I(2), LaplaceMeasurement(1.0), np.random.default_rng(0)).privacy_loss
        1.0
        """
        estimate = measurement.noisy(x, rng)
        measured = (laplace_record("the cells", [(np.ones(x.size), measurement)], estimate),)
        loss = pure_epsilon(measured)
        return Release(self.name, PureDP(loss), loss, workload.matvec(estimate), estimate, measurement.params,
                       workload=workload, measurements=measured)

    def laplace_expected_mse(self, workload: Workload, epsilon: float) -> float:
        """Per-query MSE 2‖W‖_F²/(m ε²)."""
        return 2.0 * squared_frobenius(workload) / (workload.shape[0] * epsilon**2)


@dataclass(frozen=True)
class LaplaceOnAnswers(MeasuredPlan):
    """LM_W: Laplace noise on the workload answers at their L1 sensitivity Δ₁(W) (what WDA's "Identity" describes).

    >>> from dplens.core.queries.workloads import Prefix
    >>> LaplaceOnAnswers().expected_mse(Prefix(4), 1.0)
    32.0
    """

    # every answer carries its own i.i.d. noise (exact intervals, dplens.core.analysis.intervals)
    iid_noise_on: ClassVar[str] = "answers"
    summary: ClassVar[str] = "Noise on each query answer directly: good when there are few queries."

    gaussian_summary: ClassVar[str] = ("Gaussian noise on each query answer ((ε, δ) or zCDP): strong for prefix-like "
                                       "workloads.")
    noise: str = setting("laplace", NOISE_RANGE)
    name: str = "laplace-on-answers"
    data_dependent: bool = False

    def strategy_norms(self, workload: Workload) -> tuple[np.ndarray, np.ndarray]:
        """The workload's own column norms (Δ₂(W) ≪ Δ₁(W) for prefix-like workloads: Gaussian noise wins there)."""
        return workload.column_norms(1), workload.column_norms(2)

    def run(self, x: np.ndarray, workload: Workload, privacy: Privacy | float, rng: np.random.Generator) -> Release:
        if self.noise == "laplace" and l1_sensitivity(workload) == 0:  # nothing depends on the data
            x, epsilon = check_inputs(x, workload, privacy)
            release = Release(self.name, PureDP(epsilon), 0.0, workload.matvec(x), None, {"sensitivity": 0.0},
                              workload=workload)
            return stated_at(release, privacy)
        return super().run(x, workload, privacy, rng)

    def noise_scale(self, workload: Workload, epsilon: float) -> float:
        """b = Δ₁(W)/ε, the Laplace scale on every answer (0 for a workload that reads no data)."""
        return l1_sensitivity(workload) / epsilon

    def measurement(self, workload: Workload, epsilon: float) -> LaplaceMeasurement:
        """Lap(Δ₁(W)/ε) on every answer (Δ₁(W) > 0: ``run`` releases a data-free workload without noise)."""
        return LaplaceMeasurement(self.noise_scale(workload, epsilon))

    def measure(self, x: np.ndarray, workload: Workload, measurement: Measurement, rng: np.random.Generator) -> Release:
        """The workload's answers measured with ``measurement`` (x validated by ``run``); no estimate of x.

        >>> from dplens.core.queries.workloads import Prefix
        >>> LaplaceOnAnswers().measure(np.zeros(2), Prefix(2), LaplaceMeasurement(4.0),
        ...                            np.random.default_rng(0)).privacy_loss
        0.5
        """
        answers = measurement.noisy(workload.matvec(x), rng)
        measured = (laplace_record("the workload's answers", [(workload.column_norms(1), measurement)], answers),)
        loss = pure_epsilon(measured)
        return Release(self.name, PureDP(loss), loss, answers, None,
                       {"sensitivity": l1_sensitivity(workload), **measurement.params}, workload=workload,
                       measurements=measured)

    def laplace_expected_mse(self, workload: Workload, epsilon: float) -> float:
        """Per-query MSE 2(Δ₁(W)/ε)²."""
        return 2.0 * (l1_sensitivity(workload) / epsilon) ** 2


@dataclass(frozen=True)
class Uniform:
    """Noisy total spread evenly over the cells (DPBench's Uniform): total + Lap(1/ε), divided by n.

    Its error depends on the data (the bias of assuming uniformity), so ``expected_mse`` is None.
    """

    summary: ClassVar[str] = "Only a noisy total, spread evenly over the bins: ignores the shape."
    # every draw lands on an integer count with integer sensitivity: the secure path may use the integer sampler
    # (read on this exact class only, dplens.core.privacy.noise.adds_noise_to_counts: a subclass must declare it again)
    noise_on_counts: ClassVar[bool] = True

    name: str = "uniform"
    data_dependent: bool = False

    def run(self, x: np.ndarray, workload: Workload, privacy: Privacy | float, rng: np.random.Generator) -> Release:
        x, epsilon = check_inputs(x, workload, privacy)
        measurement = LaplaceMeasurement(1.0 / epsilon)
        noisy_total = measurement.noisy(x.sum(), rng)
        estimate = np.full(x.size, noisy_total / x.size)
        measured = (laplace_record("the total", [(np.ones(x.size), measurement)], np.atleast_1d(noisy_total)),)
        release = Release(self.name, PureDP(epsilon), pure_epsilon(measured), workload.matvec(estimate), estimate,
                          measurement.params, workload=workload, measurements=measured)
        return stated_at(release, privacy)

    def expected_mse(self, workload: Workload, privacy: Privacy | float) -> None:
        return None
