"""The measurement step of a data-independent plan: noisy strategy answers y = A x + noise.

A plan is strategy → measurement → reconstruction (ektelo's select / measure / infer). The strategy A and
its reconstruction belong to the mechanism; the noise kind belongs to the measurement, never to a
subclass of the mechanism. ``LaplaceMeasurement(b)`` adds i.i.d. Lap(b), ``GaussianMeasurement(σ)`` adds
i.i.d. N(0, σ²). Both draw through ``dplens.core.privacy.noise.add_laplace`` / ``add_gaussian``, so the
values pass through OpenDP's measurement on the secure path and a seeded NumPy generator explores.
A ``MeasuredPlan`` runs as ``measure(x, workload, measurement(workload, ε), rng)``; a Gaussian twin calls
the same ``measure`` with a ``GaussianMeasurement``.

A mechanism that measures several blocks at different scales measures one block with the measurement
it is given and the others with ``measurement.scaled(r)``, r its budget split: the Laplace plan keeps its
scales, and a Gaussian twin keeps the same relative noise on every block, calibrated once to the L2
sensitivity of the whitened strategy [A₁; A₂/r] (Li et al., PODS 2010: a weighted strategy with unit noise).

>>> import numpy as np
>>> LaplaceMeasurement(0.5).variance, GaussianMeasurement(2.0).variance
(0.5, 4.0)
>>> GaussianMeasurement(2.0).scaled(1.5)
GaussianMeasurement(sigma=3.0)
>>> LaplaceMeasurement(1.0).noisy(np.zeros(2), np.random.default_rng(0)).round(3).tolist()
[0.32, -0.617]
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from dplens.core.mechanisms.contract import (
    Range,
    Release,
    as_privacy,
    check_epsilon,
    check_inputs,
    laplace_epsilon,
    laplace_privacy_loss,
)
from dplens.core.privacy.definitions import (
    ZCDP,
    ApproxDP,
    Privacy,
    PureDP,
    analytic_gaussian_sigma,
    gaussian_epsilon,
    gaussian_rho,
    zcdp_epsilon,
    zcdp_rho,
    zcdp_sigma,
)
from dplens.core.privacy.discrete_gaussian import discrete_gaussian_epsilon, discrete_gaussian_sigma
from dplens.core.privacy.noise import NoiseSource, add_gaussian, add_laplace, adds_noise_to_counts, noise_kind
from dplens.core.queries.workloads import Workload
from dplens.core.validate import positive


@dataclass(frozen=True)
class LaplaceMeasurement:
    """i.i.d. Laplace(``scale``) noise on every strategy answer: pure ε-DP at ε = Δ₁(A)/scale.

    >>> LaplaceMeasurement(2.0).params
    {'noise_scale': 2.0}
    """

    scale: float
    kind: ClassVar[str] = "laplace"

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", positive("scale", self.scale))

    @property
    def variance(self) -> float:
        """Per-coordinate noise variance 2b²."""
        return 2.0 * self.scale**2

    @property
    def params(self) -> dict[str, float]:
        """What a release states about this measurement."""
        return {"noise_scale": self.scale}

    def scaled(self, factor: float) -> LaplaceMeasurement:
        """The same kind of noise at ``factor`` times the scale (another block of a budget split)."""
        return LaplaceMeasurement(self.scale * positive("factor", factor))

    def noisy(self, values: Any, rng: NoiseSource) -> Any:
        """``values`` + Lap(b) noise, drawn by ``add_laplace`` (OpenDP's measurement on the secure path)."""
        return add_laplace(rng, values, self.scale)


@dataclass(frozen=True)
class GaussianMeasurement:
    """i.i.d. N(0, ``sigma``²) noise on every strategy answer: ρ-zCDP at ρ = Δ₂(A)²/(2σ²), never pure ε-DP.

    >>> GaussianMeasurement(3.0).params
    {'sigma': 3.0}
    """

    sigma: float
    kind: ClassVar[str] = "gaussian"

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma", positive("sigma", self.sigma))

    @property
    def variance(self) -> float:
        """Per-coordinate noise variance σ²."""
        return self.sigma**2

    @property
    def params(self) -> dict[str, float]:
        """What a release states about this measurement."""
        return {"sigma": self.sigma}

    def scaled(self, factor: float) -> GaussianMeasurement:
        """The same kind of noise at ``factor`` times σ (another block of a budget split)."""
        return GaussianMeasurement(self.sigma * positive("factor", factor))

    def noisy(self, values: Any, rng: NoiseSource) -> Any:
        """``values`` + N(0, σ²) noise, drawn by ``add_gaussian`` (OpenDP's discrete Gaussian on the secure path)."""
        return add_gaussian(rng, values, self.sigma)


Measurement = LaplaceMeasurement | GaussianMeasurement


# ----------------------------------------------------------------------------- measurement records
# What a release measured, kept as data (OpenDP's measurements and private-pgm's LinearMeasurement): each record
# answers its own privacy loss in the unit of any budget (its privacy map), and a release's loss is the
# composition of its records' maps (``composed_loss``), which the release kernel checks before anything is kept.
@dataclass(frozen=True, eq=False)
class NoisyAnswers:
    """One independent linear measurement y = A x + noise: the ``query`` A (in words), the ``noise`` drawn, A's
    ``sensitivity`` under add/remove one record (Δ₁ for Laplace noise, Δ₂ for Gaussian) and the noisy ``values``.

    A plan that measures several blocks in one draw at fixed noise ratios (block ℓ at r_ℓ times the scale) is one
    record of the whitened query [A₁/r₁; A₂/r₂; …]: Δ₁ = max_j Σ_ℓ ‖A_ℓ e_j‖₁/r_ℓ (Li et al., PODS 2010).
    ``discrete``: Gaussian noise drawn on integer counts, whose (ε, δ) curve is the discrete Gaussian's (CKS 2020).

    >>> from dplens.core.privacy.definitions import ApproxDP, PureDP, ZCDP
    >>> laplace = NoisyAnswers("cells", LaplaceMeasurement(2.0), 1.0)
    >>> laplace.loss(PureDP(1.0)), laplace.loss(ZCDP(1.0))
    (0.5, 0.125)
    >>> gaussian = NoisyAnswers("cells", GaussianMeasurement(1.0), 1.0)
    >>> gaussian.loss(ZCDP(1.0)), round(gaussian.loss(ApproxDP(1.0, 1e-6)), 3), gaussian.loss(PureDP(1.0))
    (0.5, 4.887, inf)
    """

    query: str
    noise: Measurement
    sensitivity: float
    values: np.ndarray | None = None
    discrete: bool = False

    def loss(self, budget: Privacy) -> float:
        """This measurement's privacy loss in ``budget``'s unit: ε (pure), ε at the budget's δ, or ρ."""
        if self.sensitivity == 0:
            return 0.0
        if isinstance(self.noise, LaplaceMeasurement):
            epsilon = self.sensitivity / self.noise.scale
            return epsilon**2 / 2.0 if isinstance(budget, ZCDP) else epsilon  # ε-DP ⇒ ε²/2-zCDP (BS16 Prop. 1.4)
        sigma = self.noise.sigma
        if isinstance(budget, ZCDP):
            return gaussian_rho(sigma, self.sensitivity)
        if isinstance(budget, ApproxDP):
            epsilon = gaussian_epsilon(sigma, budget.delta, self.sensitivity)
            if self.discrete and self.sensitivity == 1:
                epsilon = max(epsilon, discrete_gaussian_epsilon(sigma, budget.delta))
            return epsilon
        return math.inf  # Gaussian noise is never pure ε-DP

    @property
    def gaussian(self) -> bool:
        """Whether the noise is Gaussian (its loss composes through ρ)."""
        return isinstance(self.noise, GaussianMeasurement)


@dataclass(frozen=True)
class PrivateChoice:
    """A data-dependent step that is pure ``epsilon``-DP by itself: an exponential-mechanism choice, a noisy
    partition, a noisy count that only steers what is measured next (``step``, in words).

    >>> from dplens.core.privacy.definitions import ZCDP
    >>> PrivateChoice("partition", 0.2).loss(ZCDP(1.0))
    0.020000000000000004
    """

    step: str
    epsilon: float
    gaussian: ClassVar[bool] = False

    def loss(self, budget: Privacy) -> float:
        """ε, or ε²/2 under zCDP (ε-DP ⇒ ε²/2-zCDP, Bun & Steinke 2016 Prop. 1.4)."""
        return self.epsilon**2 / 2.0 if isinstance(budget, ZCDP) else self.epsilon


@dataclass(frozen=True)
class ZCDPStep:
    """A step whose loss a library's privacy map states as ``rho``-zCDP (OpenDP's MST and AIM measure many
    marginals adaptively inside one measurement): ρ, its ε at the budget's δ, never pure ε.

    >>> from dplens.core.privacy.definitions import ZCDP, PureDP
    >>> ZCDPStep("MST", 0.5).loss(ZCDP(1.0)), ZCDPStep("MST", 0.5).loss(PureDP(1.0))
    (0.5, inf)
    """

    step: str
    rho: float
    gaussian: ClassVar[bool] = True

    def loss(self, budget: Privacy) -> float:
        """ρ under zCDP, ε at the budget's δ under (ε, δ) (CKS 2020), ∞ under pure ε-DP."""
        if isinstance(budget, ZCDP):
            return self.rho
        if isinstance(budget, ApproxDP):
            return zcdp_epsilon(self.rho, budget.delta) if self.rho > 0 else 0.0
        return math.inf if self.rho > 0 else 0.0


MeasurementRecord = NoisyAnswers | PrivateChoice | ZCDPStep


def relabelled(record: MeasurementRecord, prefix: str) -> MeasurementRecord:
    """``record`` with its query (or step) prefixed, e.g. by the marginal it was measured on.

    >>> relabelled(PrivateChoice("partition", 0.1), "age").step
    'age: partition'
    """
    if isinstance(record, NoisyAnswers):
        return dataclasses.replace(record, query=f"{prefix}: {record.query}")
    return dataclasses.replace(record, step=f"{prefix}: {record.step}")


def composed_loss(records: Iterable[MeasurementRecord], budget: Privacy) -> float:
    """The loss of a release's records together, in ``budget``'s unit: the sum of their maps under pure ε-DP and
    zCDP (adaptive composition); under (ε, δ) the pure records' ε plus the Gaussian ones' ε at δ, taken through
    their summed ρ when there are several (one (ε, δ) guarantee at the budget's δ, not one δ each).

    >>> from dplens.core.privacy.definitions import ApproxDP, PureDP
    >>> records = [PrivateChoice("partition", 0.25), NoisyAnswers("buckets", LaplaceMeasurement(2.0), 1.5)]
    >>> composed_loss(records, PureDP(1.0))
    1.0
    >>> composed_loss([], ApproxDP(1.0, 1e-6))
    0.0
    """
    records = list(records)
    if not isinstance(budget, ApproxDP):
        return float(sum(record.loss(budget) for record in records))
    pure = sum(record.loss(budget) for record in records if not record.gaussian)
    gaussian = [record for record in records if record.gaussian]
    if len(gaussian) <= 1:
        return float(pure + sum(record.loss(budget) for record in gaussian))
    rho = sum(record.loss(ZCDP(1.0)) for record in gaussian)
    return float(pure + (zcdp_epsilon(rho, budget.delta) if rho > 0 else 0.0))


def pure_epsilon(records: Iterable[MeasurementRecord]) -> float:
    """The pure-DP ε of ``records`` together (their maps summed): a Laplace plan's ``privacy_loss``.

    >>> pure_epsilon([PrivateChoice("partition", 0.25), PrivateChoice("sort", 0.5)])
    0.75
    """
    return composed_loss(records, PureDP(1.0))


def stated_at(release: Release, privacy: Privacy | float) -> Release:
    """``release`` (made by Laplace noise at ``laplace_epsilon(privacy)``) stating ``privacy`` as its budget and its
    records' composition in that unit as its loss; unchanged when ``privacy`` is pure ε.

    >>> from dplens.core.mechanisms import MECHANISMS
    >>> from dplens.core.queries.workloads import Identity
    >>> release = MECHANISMS["hb"].run(np.ones(4), Identity(4), ZCDP(0.5), np.random.default_rng(0))
    >>> release.budget, release.privacy_loss  # hb ran at ε = 1: ρ = 1²/2
    (ZCDP(rho=0.5), 0.5)
    """
    privacy = as_privacy(privacy)
    if isinstance(privacy, PureDP):
        return release
    return dataclasses.replace(release, budget=privacy, privacy_loss=composed_loss(release.measurements, privacy))


def laplace_record(query: str, blocks: Iterable[tuple[np.ndarray, Measurement]], values: Any) -> NoisyAnswers:
    """The record of one Laplace draw over ``blocks`` (column L1 norms of A_ℓ, its measurement): the whitened
    query's Δ₁ at the first block's scale, so its map gives ``pure_loss(blocks)``.

    >>> record = laplace_record("tree", [(np.ones(3), LaplaceMeasurement(2.0)), (np.ones(3), LaplaceMeasurement(4.0))],
    ...                         np.zeros(2))
    >>> record.noise, record.sensitivity
    (LaplaceMeasurement(scale=2.0), 1.5)
    """
    blocks = list(blocks)
    scales = [m.scale for _, m in blocks if isinstance(m, LaplaceMeasurement)]
    base = LaplaceMeasurement(scales[0] if scales else 1.0)
    return NoisyAnswers(query, base, pure_loss(blocks) * base.scale, np.asarray(values, dtype=float))


def pure_loss(blocks: Iterable[tuple[np.ndarray, Measurement]]) -> float:
    """Worst-case pure-DP loss of independent measured blocks (column L1 norms of A_ℓ, its measurement).

    Laplace blocks: max_j Σ_ℓ ‖A_ℓ e_j‖₁/b_ℓ (``laplace_privacy_loss``). Gaussian noise has no finite pure
    ε, so a block that reads the data through one makes the loss infinite: a Gaussian mechanism states its
    loss in (ε, δ) or zCDP from σ instead (``dplens.core.mechanisms.gaussian``).

    >>> pure_loss([(np.ones(3), LaplaceMeasurement(2.0))])
    0.5
    >>> pure_loss([(np.ones(3), GaussianMeasurement(2.0))])
    inf
    """
    laplace = []
    for column_l1, measurement in blocks:
        if isinstance(measurement, LaplaceMeasurement):
            laplace.append((column_l1, measurement.scale))
        elif np.any(column_l1):
            return math.inf
    return laplace_privacy_loss(laplace)


def measure_laplace(values: Any, column_l1: np.ndarray, scale: float,
                    rng: NoiseSource) -> tuple[Any, list[tuple[np.ndarray, Measurement]]]:
    """``values`` + Lap(``scale``) with its block for ``pure_loss``; a strategy that reads no data (scale 0) is
    released as it is, with no block (no Laplace(0) to build, no loss).

    >>> noisy, blocks = measure_laplace(np.zeros(2), np.zeros(2), 0.0, np.random.default_rng(0))
    >>> noisy.tolist(), pure_loss(blocks)
    ([0.0, 0.0], 0.0)
    """
    if not scale > 0:
        return values, []
    measurement = LaplaceMeasurement(scale)
    return measurement.noisy(values, rng), [(column_l1, measurement)]


NOISES = ("laplace", "gaussian")
NOISE_RANGE = Range(choices=NOISES)
DEFAULT_DELTA = 1e-6  # the δ of a bare number given to a Gaussian measurement ("ε at δ = 1e-6")


@functools.lru_cache(maxsize=4096)
def unit_sigma(epsilon: float, delta: float, calibration: str) -> float:
    """σ for Δ₂ = 1 at "ε at δ": the analytic Gaussian's (Balle & Wang 2018), or σ = 1/√(2ρ) at the ρ whose CKS
    conversion is (ε, δ) (``"zcdp"``).

    >>> round(unit_sigma(1.0, 1e-5, "analytic"), 6)
    3.730632
    """
    if calibration == "analytic":
        return analytic_gaussian_sigma(epsilon, delta)
    if calibration == "zcdp":
        return zcdp_sigma(zcdp_rho(epsilon, delta))
    raise ValueError(f"calibration must be one of ['analytic', 'zcdp'], got {calibration!r}")


def supported_privacy(mechanism: object, privacy: Privacy) -> Privacy:
    """``privacy``, checked before any run against what ``mechanism``'s noise can meet: Laplace noise meets every
    definition (ε, or ε = √(2ρ) under ρ-zCDP); Gaussian noise never meets pure ε-DP and is refused by name.

    >>> from dplens.core.mechanisms import MECHANISMS
    >>> supported_privacy(MECHANISMS["hb"], ZCDP(0.5))
    ZCDP(rho=0.5)
    >>> supported_privacy(MECHANISMS["gaussian-hb"], PureDP(1.0))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: gaussian-hb adds Gaussian noise, which is never pure epsilon-DP; ...
    """
    if not isinstance(privacy, PureDP | ApproxDP | ZCDP):
        raise ValueError(f"privacy must be PureDP, ApproxDP or ZCDP, got {privacy!r}")
    if noise_kind(mechanism) == "gaussian":
        gaussian_budget(getattr(mechanism, "name", type(mechanism).__name__), privacy)
    return privacy


def gaussian_budget(name: str, privacy: Privacy | float) -> ApproxDP | ZCDP:
    """What Gaussian noise run at ``privacy`` spends: an (ε, δ) or ρ-zCDP value as given; a bare number is ε at δ =
    ``DEFAULT_DELTA``; pure ε-DP is refused by name (Gaussian noise never meets it).

    >>> gaussian_budget("gaussian-hb", 1.0), gaussian_budget("gaussian-hb", ZCDP(0.5))
    (ApproxDP(epsilon=1.0, delta=1e-06), ZCDP(rho=0.5))
    >>> gaussian_budget("gaussian-hb", PureDP(1.0))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: gaussian-hb adds Gaussian noise, which is never pure epsilon-DP; choose the (epsilon, delta) or ...
    """
    if isinstance(privacy, ApproxDP | ZCDP):
        return privacy
    if isinstance(privacy, PureDP):
        raise ValueError(f"{name} adds Gaussian noise, which is never pure epsilon-DP; choose the (epsilon, delta) or "
                         "zCDP definition (ApproxDP, ZCDP), or a Laplace mechanism")
    # a bare number: any ε > 0, as before (error searches probe past the budget range)
    return ApproxDP(check_epsilon(privacy), DEFAULT_DELTA)


class MeasuredPlan:
    """Base of a plan split into its measurement and the step that takes any measurement: strategy → measurement →
    reconstruction (ektelo's select / measure / infer).

    The noise is a setting of the plan (``noise``: ``"laplace"`` or ``"gaussian"``), never a subclass. ``run``
    validates, then releases ``measure(x, workload, measurement, rng)``:

    * Laplace: ``measurement(workload, ε)`` = Lap(Δ₁(A)/ε) at the Laplace ε of the privacy value (√(2ρ) under zCDP);
    * Gaussian: N(0, σ²) with σ = Δ₂(A) × the unit σ of the privacy value (analytic under (ε, δ), the discrete
      Gaussian's curve on integer counts; 1/√(2ρ) under ρ-zCDP), the strategy's column norms from
      ``strategy_norms``; blocks measured at fixed ratios keep them (σ calibrated to the whitened strategy).

    The release states the privacy value as its budget and its records' composition as its loss. Subclasses provide
    ``measurement``, ``measure`` and ``strategy_norms`` (and ``laplace_expected_mse``, the error at Laplace noise,
    which ``expected_mse`` rescales to the Gaussian's variance).
    """

    noise: str = "laplace"  # each plan declares it as a setting: ``noise: str = setting("laplace", NOISE_RANGE)``

    def measurement(self, workload: Workload, epsilon: float) -> LaplaceMeasurement:
        """The Laplace measurement that spends ``epsilon`` on this plan's strategy."""
        raise NotImplementedError

    def measure(self, x: np.ndarray, workload: Workload, measurement: Measurement, rng: np.random.Generator) -> Release:
        """The strategy's answers on the validated ``x`` measured with ``measurement``, then reconstructed."""
        raise NotImplementedError

    def strategy_norms(self, workload: Workload) -> tuple[np.ndarray, np.ndarray]:
        """Column L1 and L2 norms of the measured strategy A, each block divided by its noise ratio."""
        raise NotImplementedError

    def laplace_expected_mse(self, workload: Workload, epsilon: float) -> float | None:
        """Per-query MSE under Laplace noise at ``epsilon`` (None: no closed form)."""
        raise NotImplementedError

    def expected_mse(self, workload: Workload, privacy: Privacy | float) -> float | None:
        """Per-query MSE at ``privacy``; with Gaussian noise, the Laplace error at ε = 1 (variance 2Δ₁² per
        coordinate) rescaled to variance σ² (exact: total squared error σ²‖W A⁺‖_F²)."""
        if self.noise != "gaussian":
            return self.laplace_expected_mse(workload, laplace_epsilon(privacy))
        laplace = self.laplace_expected_mse(workload, 1.0)
        if laplace is None:
            return None
        scale = self.laplace_scale_at_one(workload)
        return 0.0 if scale == 0 else laplace * self.sigma(workload, privacy) ** 2 / (2.0 * scale**2)

    def laplace_scale_at_one(self, workload: Workload) -> float:
        """The Laplace scale at ε = 1: Δ₁(A) (a plan whose scale is not its strategy's Δ₁ overrides it)."""
        return float(self.strategy_norms(workload)[0].max())

    def unit_sigma(self, privacy: Privacy | float) -> float:
        """σ at Δ₂ = 1: 1/√(2ρ) under ρ-zCDP; under (ε, δ) the analytic Gaussian's, or on integer counts the least σ
        valid for the continuous and the discrete Gaussian (CKS 2020: the secure path draws the discrete one)."""
        budget = gaussian_budget(self.name, privacy)  # type: ignore[attr-defined]  # every plan has a name
        if isinstance(budget, ZCDP):
            return zcdp_sigma(budget.rho)
        if adds_noise_to_counts(self):
            return discrete_gaussian_sigma(budget.epsilon, budget.delta)
        return unit_sigma(budget.epsilon, budget.delta, "analytic")

    def sigma(self, workload: Workload, privacy: Privacy | float) -> float:
        """The Gaussian noise's standard deviation at ``privacy`` for this workload: Δ₂(A) × the unit σ."""
        return float(self.strategy_norms(workload)[1].max()) * self.unit_sigma(privacy)

    def run(self, x: np.ndarray, workload: Workload, privacy: Privacy | float, rng: np.random.Generator) -> Release:
        if self.noise == "gaussian":
            return self._gaussian_run(x, workload, privacy, rng)
        x, epsilon = check_inputs(x, workload, privacy)
        release = self.measure(x, workload, self.measurement(workload, epsilon), rng)
        return stated_at(dataclasses.replace(release, budget=PureDP(epsilon)), privacy)

    def _gaussian_run(self, x: np.ndarray, workload: Workload, privacy: Privacy | float,
                      rng: np.random.Generator) -> Release:
        budget = gaussian_budget(self.name, privacy)  # type: ignore[attr-defined]  # every plan has a name
        x, _ = check_inputs(x, workload, budget)
        l2_max = float(self.strategy_norms(workload)[1].max())
        if l2_max == 0:  # nothing depends on the data: released without noise
            release = dataclasses.replace(self, noise="laplace").run(x, workload, budget, rng)  # type: ignore[type-var]
            return dataclasses.replace(release, mechanism=self.name, budget=budget, privacy_loss=0.0, measurements=())  # type: ignore[attr-defined]
        sigma = l2_max * self.unit_sigma(budget)
        release = self.measure(x, workload, GaussianMeasurement(sigma), rng)
        return gaussian_release(release, budget, sigma, l2_max, discrete=adds_noise_to_counts(self))


def gaussian_release(release: Release, budget: ApproxDP | ZCDP, sigma: float, l2_max: float, *,
                     discrete: bool = False) -> Release:
    """``release`` (its one measured block now N(0, σ²) at the strategy's Δ₂ = ``l2_max``) stating ``budget`` and the
    loss of the σ drawn: one Gaussian record (the discrete Gaussian's curve on integer counts, ``discrete``)."""
    parent = release.measurements[0] if release.measurements else None
    records = (NoisyAnswers(parent.query if isinstance(parent, NoisyAnswers) else "the strategy's answers",
                            GaussianMeasurement(sigma), l2_max, None if parent is None else parent.values,
                            discrete=discrete),)
    params = {k: v for k, v in release.params.items() if k not in ("noise_scale", "sigma")}
    approx = isinstance(budget, ApproxDP)
    params.update({"noise": "gaussian", "definition": "approx" if approx else "zcdp",
                   "rho": gaussian_rho(sigma, l2_max), "sigma": sigma, "l2_sensitivity": l2_max})
    if isinstance(budget, ApproxDP):  # a ρ has no δ of its own: whoever shows it as ε at δ states theirs
        params["delta"] = budget.delta
    return dataclasses.replace(release, budget=budget, privacy_loss=composed_loss(records, budget), params=params,
                               measurements=records)


@dataclass(frozen=True, eq=False)
class Reconstruction:
    """x̂ − x = L z with z i.i.d. ``kind`` noise of ``scale`` (b or σ) on ``coordinates`` strategy values."""

    kind: str
    scale: float
    coordinates: int
    adjoint: Callable[[np.ndarray], np.ndarray]  # Lᵀ on an (n × k) block → (coordinates × k)


def noise_of(mechanism: object, release: Release) -> tuple[str, float] | None:
    """(kind, scale) of the noise ``release`` drew: read from its one measurement record (σ, or the Laplace scale b),
    or, for a release read back from a file (no records), from what its params state; None when neither says.

    >>> from dplens.core.mechanisms import MECHANISMS
    >>> from dplens.core.queries.workloads import Identity
    >>> noise_of(MECHANISMS["hb"], MECHANISMS["hb"].run(np.ones(4), Identity(4), 0.5, np.random.default_rng(0)))
    ('laplace', 2.0)
    """
    if len(release.measurements) == 1 and isinstance(record := release.measurements[0], NoisyAnswers):
        noise = record.noise
        return noise.kind, float(noise.scale if isinstance(noise, LaplaceMeasurement) else noise.sigma)
    gaussian = getattr(mechanism, "noise", "laplace") == "gaussian"
    scale = release.params.get("sigma" if gaussian else "noise_scale")
    return None if scale is None else ("gaussian" if gaussian else "laplace", float(scale))


def stated_noise(mechanism: object, release: Release, workload: Workload) -> tuple[str, float] | None:
    """(kind, scale) of the strategy noise ``release`` states for a cell estimate of ``workload``, or None when it
    is another mechanism's release, has no cell estimate, or does not state its scale."""
    if release.estimate is None or getattr(mechanism, "name", None) != release.mechanism:
        return None
    if np.size(release.estimate) != workload.shape[1]:
        return None
    return noise_of(mechanism, release)
