"""Gaussian variants of the data-independent mechanisms: (ε, δ)-DP by the analytic Gaussian, or ρ-zCDP.

Each variant keeps its Laplace parent's strategy A (identity, the answers, the hb tree, the Haar
basis, the greedy-h tree, the mm-opt p-Identity) and its least-squares reconstruction, and replaces
i.i.d. Lap(Δ₁(A)/ε) by i.i.d. N(0, σ²) with σ calibrated to the strategy's L2 sensitivity
Δ₂(A) = max_j ‖A e_j‖₂:

* ``calibration="analytic"``: σ is Balle & Wang's (2018) least σ for (ε, δ)-DP at the knob ``delta``;
* ``calibration="zcdp"``: σ = Δ₂/√(2ρ) with ρ the largest zCDP whose CKS conversion is (ε, δ)-DP;
  the release then also satisfies ρ-zCDP (composes tightly), at a somewhat larger σ.

So ``run(x, workload, epsilon, rng)`` keeps the Mechanism contract, with ``epsilon`` meaning "ε at δ".
A plan is strategy → measurement → reconstruction: each parent's ``run`` is its
``measure(x, workload, LaplaceMeasurement(Δ₁/ε), rng)``, and a twin calls the same ``measure`` with
``GaussianMeasurement(σ)`` (``dplens.core.mechanisms.measurement``), then states the privacy loss of the σ
drawn at Δ₂(A). A parent that splits its budget over blocks measures them at fixed ratios of the one
measurement, so its twin keeps those ratios and calibrates σ to the whitened strategy's Δ₂.
Error: the parent's variance 2b² per coordinate (b its scale at ε = 1) becomes σ², so ``expected_mse``
is the parent's at ε = 1 times σ²/(2b²) (exact: total squared error σ²‖W A⁺‖_F²).
mm-opt's Gaussian variant uses its own strategy with L2-normalised columns (``EigenStrategy``, HDMM approx=True).

>>> import numpy as np
>>> from dplens.core.queries.workloads import Prefix
>>> mech = GaussianHierarchical(delta=1e-6)
>>> release = mech.run(np.arange(8.0), Prefix(8), 1.0, np.random.default_rng(0))
>>> release.privacy_loss <= 1.0, release.params["definition"]
(True, 'approx')
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import scipy.linalg

from dplens.core.mechanisms.cache import StrategyCache
from dplens.core.mechanisms.contract import (
    Mechanism,
    Range,
    Release,
    check_epsilon,
    check_inputs,
    setting,
)
from dplens.core.mechanisms.cost_model import OVERHEAD_SECONDS, Cost, default_cost, mechanism_cost
from dplens.core.mechanisms.gram import gram_apply
from dplens.core.mechanisms.greedy_h import GreedyH, cell_strategy, sum_along_paths, workload_key
from dplens.core.mechanisms.hierarchical import Hierarchical, build_tree, workload_grid
from dplens.core.mechanisms.laplace import LaplaceIdentity, LaplaceOnAnswers
from dplens.core.mechanisms.matrix import single_threaded
from dplens.core.mechanisms.measurement import (
    GaussianMeasurement,
    NoisyAnswers,
    Reconstruction,
    composed_loss,
    stated_noise,
)
from dplens.core.mechanisms.privelet import Privelet, haar_sensitivity
from dplens.core.privacy.definitions import (
    DEFINITIONS,
    ZCDP,
    ApproxDP,
    Privacy,
    PureDP,
    analytic_gaussian_sigma,
    check_delta,
    gaussian_rho,
    target,
    zcdp_epsilon,
    zcdp_rho,
    zcdp_sigma,
)
from dplens.core.privacy.discrete_gaussian import discrete_gaussian_sigma
from dplens.core.privacy.noise import adds_noise_to_counts, noise_kind
from dplens.core.queries.workloads import Workload

CALIBRATIONS = ("analytic", "zcdp")
L2_MAX_CELLS = 4096  # gaussian-eigen's dense n × n strategy: 128 MB per matrix at this size
RIDGE = 1e-10  # relative ridge on WᵀW before the eigendecomposition (see _eigen)


@functools.lru_cache(maxsize=4096)
def unit_sigma(epsilon: float, delta: float, calibration: str) -> float:
    """σ for Δ₂ = 1 at "ε at δ" under a calibration.

    >>> round(unit_sigma(1.0, 1e-5, "analytic"), 6)
    3.730632
    """
    if calibration == "analytic":
        return analytic_gaussian_sigma(epsilon, delta)
    if calibration == "zcdp":
        return zcdp_sigma(zcdp_rho(epsilon, delta))
    raise ValueError(f"calibration must be one of {list(CALIBRATIONS)}, got {calibration!r}")


@dataclass(frozen=True)
class GaussianMixin:
    """Gaussian noise for a Laplace parent that exposes its strategy's column norms (``strategy_norms``).

    Its settings, ``delta`` and ``calibration``, follow the parent's in each twin's fields (and so in
    ``parameter_ranges``), since dataclass fields are collected from the last base to the first.
    """

    noise: ClassVar[str] = "gaussian"
    delta: float = setting(1e-6, Range(0, 1, open=True))
    calibration: str = setting("analytic", Range(choices=CALIBRATIONS))

    def cost(self, workload: Workload) -> Cost:
        """The parent's cost model: the Gaussian draws cost what the Laplace ones did."""
        parent = getattr(super(), "cost", None)
        return parent(workload) if parent is not None else default_cost(workload)

    def __post_init__(self) -> None:
        """The parent's checks (where it has any), then the Gaussian knobs'."""
        parent = getattr(super(), "__post_init__", None)
        if parent is not None:
            parent()
        self.check_tree_settings()

    def check_tree_settings(self) -> None:
        check_delta(self.delta)
        if self.calibration not in CALIBRATIONS:
            raise ValueError(f"calibration must be one of {list(CALIBRATIONS)}, got {self.calibration!r}")

    def strategy_norms(self, workload: Workload) -> tuple[np.ndarray, np.ndarray]:
        """Column L1 and L2 norms of the measured strategy A, each block divided by its noise ratio to the
        measurement ``measure`` is given (the parent's noise is Lap(max L1 / ε))."""
        raise NotImplementedError

    def parent_scale(self, workload: Workload) -> float:
        """The Laplace scale the parent uses at ε = 1: Δ₁(A) (mm-opt overrides it)."""
        return float(self.strategy_norms(workload)[0].max())

    def sigma(self, workload: Workload, privacy: Privacy | float) -> float:
        """The noise standard deviation at ``privacy`` for this workload: Δ₂(A) × the unit σ."""
        _, l2 = self.strategy_norms(workload)
        return float(l2.max()) * self.unit_sigma(privacy)

    def unit_sigma(self, privacy: Privacy | float) -> float:
        """σ at Δ₂ = 1: Δ₂/√(2ρ) under ρ-zCDP, the analytic Gaussian's σ under (ε, δ)."""
        budget = self.budget_at(privacy)
        if isinstance(budget, ZCDP):
            return zcdp_sigma(budget.rho)
        return unit_sigma(budget.epsilon, budget.delta, "analytic")

    def run(self, x: np.ndarray, workload: Workload, privacy: Privacy | float, rng: np.random.Generator) -> Release:
        budget = self.budget_at(privacy)
        x, _ = check_inputs(x, workload, budget)
        _, l2 = self.strategy_norms(workload)
        l2_max = float(l2.max())
        if l2_max == 0:  # nothing depends on the data: the parent releases it without drawing noise
            release = super().run(x, workload, budget, rng)  # type: ignore[misc]  # GaussianMixin is mixed into a registered mechanism
            return Release(self.name, budget, 0.0, release.answers, release.estimate,  # type: ignore[attr-defined]
                           dict(release.params), workload=workload)
        # the parent's strategy and reconstruction, its measurement Lap(b) replaced by N(0, σ²)
        measurement = GaussianMeasurement(l2_max * self.unit_sigma(budget))
        release = self.measure(x, workload, measurement, rng)  # type: ignore[attr-defined]  # GaussianMixin is mixed into a registered mechanism
        return self._gaussian_release(privacy, measurement.sigma, l2_max, release)

    def budget_at(self, privacy: Privacy | float) -> ApproxDP | ZCDP:
        """What a run at ``privacy`` spends: an (ε, δ) or ρ-zCDP value as given (pure ε-DP is refused: Gaussian noise
        never meets it). A bare number is "ε at δ" at the settings ``delta`` and ``calibration``: (ε, δ)-DP under the
        analytic calibration, else ρ-zCDP at the ρ of that ε at δ.

        >>> GaussianIdentity().budget_at(1.0), GaussianIdentity(calibration="zcdp").budget_at(1.0)
        (ApproxDP(epsilon=1.0, delta=1e-06), ZCDP(rho=0.02435...))
        >>> GaussianIdentity().budget_at(PureDP(1.0))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ValueError: gaussian-identity adds Gaussian noise, which is never pure epsilon-DP; run it at ApproxDP(...
        """
        if isinstance(privacy, ApproxDP | ZCDP):
            return privacy
        if isinstance(privacy, PureDP):
            raise ValueError(f"{self.name} adds Gaussian noise, which is never pure epsilon-DP; run it at "  # type: ignore[attr-defined]  # set by each twin
                             "ApproxDP(epsilon, delta) or ZCDP(rho), or choose a Laplace mechanism")
        epsilon = check_epsilon(privacy)
        if self.calibration == "analytic":
            return ApproxDP(epsilon, float(self.delta))
        return ZCDP(zcdp_rho(epsilon, float(self.delta)))

    def _gaussian_release(self, privacy: Privacy | float, sigma: float, l2_max: float, release: Release) -> Release:
        """The release relabelled with the loss of N(0, σ²) noise at Δ₂ = ``l2_max`` (the σ actually drawn): ε at δ
        under (ε, δ), else its ρ."""
        rho = gaussian_rho(sigma, l2_max)  # ρ = Δ₂²/(2σ²) of the noise actually added
        budget = self.budget_at(privacy)
        # the parent's one measured block, its noise now N(0, σ²) at the strategy's Δ₂; on integer counts the secure
        # path draws the discrete Gaussian, whose (ε, δ) curve the record's map takes too
        parent = release.measurements[0] if release.measurements else None
        records = (NoisyAnswers(parent.query if isinstance(parent, NoisyAnswers) else "the strategy's answers",
                                GaussianMeasurement(sigma), l2_max, None if parent is None else parent.values,
                                discrete=adds_noise_to_counts(self)),)
        loss = composed_loss(records, budget)
        params = {k: v for k, v in release.params.items() if k not in ("noise_scale", "sigma")}
        approx = isinstance(budget, ApproxDP)
        params.update({"noise": "gaussian", "definition": "approx" if approx else "zcdp",
                       "delta": budget.delta if isinstance(budget, ApproxDP) else float(self.delta), "rho": rho,
                       "sigma": sigma, "l2_sensitivity": l2_max})
        if not approx and not isinstance(privacy, ZCDP):
            params["epsilon_at_delta"] = float(privacy)  # type: ignore[arg-type]  # the ε at δ it ran at (the budget holds its ρ)
        return Release(self.name, budget, loss, release.answers, release.estimate, params,  # type: ignore[attr-defined]  # GaussianMixin is mixed into a registered mechanism
                       release.details, workload=release.workload, measurements=records)

    def expected_mse(self, workload: Workload, privacy: Privacy | float) -> float | None:
        """Per-query MSE σ²‖W A⁺‖_F²/m: the parent's at ε = 1 (variance 2Δ₁²) rescaled to variance σ²."""
        parent = super().expected_mse(workload, 1.0)  # type: ignore[misc]  # GaussianMixin is mixed into a registered mechanism
        if parent is None:
            return None
        scale = self.parent_scale(workload)
        if scale == 0:
            return 0.0
        return parent * self.sigma(workload, privacy) ** 2 / (2.0 * scale**2)


@dataclass(frozen=True)
class GaussianIdentity(GaussianMixin, LaplaceIdentity):  # type: ignore[misc]  # the mixin's expected_mse may be None (the parent's is)
    """Identity with Gaussian noise on the cells (Δ₂ = 1).

    >>> from dplens.core.queries.workloads import Identity as I
    >>> round(GaussianIdentity(delta=1e-5).expected_mse(I(4), 1.0), 4)  # σ = 3.7407 (discrete curve), not 3.7306
    13.993
    """

    summary: ClassVar[str] = "Gaussian noise on every count ((ε, δ) or zCDP)."
    # every draw lands on an integer count with integer sensitivity: the secure path may use the integer sampler
    # (read on this exact class only, dplens.core.privacy.noise.adds_noise_to_counts: a subclass must declare it again)
    noise_on_counts: ClassVar[bool] = True

    name: str = "gaussian-identity"

    def strategy_norms(self, workload: Workload) -> tuple[np.ndarray, np.ndarray]:
        """Identity: every column has L1 and L2 norm 1."""
        ones = np.ones(workload.shape[1])
        return ones, ones

    # On integer counts the secure path draws OpenDP's *discrete* Gaussian (dplens.core.privacy.noise), whose exact
    # (ε, δ) curve (CKS 2020 Thm. 7) lies above the continuous one at the same σ. Under (ε, δ) this
    # mechanism therefore calibrates σ on both curves and reports the larger ε, valid whichever
    # sampler runs (dplens.core.privacy.discrete_gaussian). zCDP needs no change: N_Z(0, σ²) is 1/(2σ²)-zCDP too.
    def unit_sigma(self, privacy: Privacy | float) -> float:
        """σ at Δ₂ = 1; under (ε, δ) the least σ valid for the continuous and the discrete Gaussian."""
        budget = self.budget_at(privacy)
        if isinstance(budget, ZCDP):
            return super().unit_sigma(budget)
        return discrete_gaussian_sigma(budget.epsilon, budget.delta)


@dataclass(frozen=True)
class GaussianAnswers(GaussianMixin, LaplaceOnAnswers):  # type: ignore[misc]  # the mixin's expected_mse may be None (the parent's is)
    """Gaussian noise on the workload answers at Δ₂(W) (beats Laplace by far when Δ₂ ≪ Δ₁, e.g. prefix)."""

    summary: ClassVar[str] = "Gaussian noise on each query answer ((ε, δ) or zCDP): strong for prefix-like workloads."

    name: str = "gaussian-answers"

    def strategy_norms(self, workload: Workload) -> tuple[np.ndarray, np.ndarray]:
        """The workload's own column norms."""
        return workload.column_norms(1), workload.column_norms(2)


@dataclass(frozen=True)
class GaussianHierarchical(GaussianMixin, Hierarchical):  # type: ignore[misc]  # the mixin's expected_mse may be None (the parent's is)
    """hb/H2 tree with Gaussian noise: a cell in h measured nodes has Δ₁ = h, Δ₂ = √h."""

    summary: ClassVar[str] = "The range tree with Gaussian noise ((ε, δ) or zCDP)."
    STRATEGY_CACHES: ClassVar[tuple[StrategyCache, ...]] = Hierarchical.STRATEGY_CACHES

    name: str = "gaussian-hb"

    def strategy_norms(self, workload: Workload) -> tuple[np.ndarray, np.ndarray]:
        """Nodes containing each cell (unit weights): L1 = count, L2 = √count."""
        counts = build_tree(*self._tree_args(workload_grid(workload))).column_norms()
        return counts, np.sqrt(counts)


@dataclass(frozen=True)
class GaussianPrivelet(GaussianMixin, Privelet):  # type: ignore[misc]  # the mixin's expected_mse may be None (the parent's is)
    """Privelet's ±1 Haar strategy with Gaussian noise: each cell is in c coefficients, Δ₂ = √c."""

    summary: ClassVar[str] = "Haar wavelets with Gaussian noise ((ε, δ) or zCDP)."
    STRATEGY_CACHES: ClassVar[tuple[StrategyCache, ...]] = Privelet.STRATEGY_CACHES

    name: str = "gaussian-privelet"

    def strategy_norms(self, workload: Workload) -> tuple[np.ndarray, np.ndarray]:
        """c = Π(1 + log₂ padded length) coefficients of ±1 per cell: L1 = c, L2 = √c."""
        coefficients_per_cell = haar_sensitivity(workload_grid(workload))
        n = workload.shape[1]
        return np.full(n, coefficients_per_cell), np.full(n, np.sqrt(coefficients_per_cell))


@dataclass(frozen=True)
class GaussianGreedyH(GaussianMixin, GreedyH):  # type: ignore[misc]  # the mixin's expected_mse may be None (the parent's is)
    """Greedy-H's weighted tree with Gaussian noise, its weights chosen for L2 (``greedy_hierarchy(norm=2)``).

    Greedy-H's rule (Li et al. 2014) minimises the Laplace error under path sums of weights = 1; under
    Gaussian noise the error is Δ₂² tr(WᵀW (AᵀA)⁻¹), so the path sums of *squared* weights are 1.
    """

    summary: ClassVar[str] = "Greedy-H's weighted tree with Gaussian noise ((ε, δ) or zCDP)."
    STRATEGY_CACHES: ClassVar[tuple[StrategyCache, ...]] = GreedyH.STRATEGY_CACHES

    name: str = "gaussian-greedy-h"
    weights_norm: ClassVar[int] = 2

    def strategy_norms(self, workload: Workload) -> tuple[np.ndarray, np.ndarray]:
        """Σ of the query weights (L1) and √Σ of their squares (L2) along each cell's root path."""
        tree, _ = cell_strategy(workload, self.branching, self.granularity, self.weights_norm)
        l2 = np.sqrt(sum_along_paths(tree.units, tree.query_start, tree.query_size, tree.query_weight**2))
        return tree.cell_l1, l2


@dataclass(frozen=True, eq=False)
class EigenStrategy:
    """A = (G + τI)^{1/4} S with G = WᵀW and S = diag(1/√diag((G + τI)^{1/2})): every column has L2 norm 1.

    AᵀA = S G^{1/2} S is the closed-form solution of the Gaussian matrix mechanism's convex program
    min tr(G X⁻¹) s.t. diag(X) ≤ 1 (Yuan et al. 2016; HDMM approx=True) when the diagonal of G^{1/2}
    is flat, and close to it otherwise: its KKT condition is X Λ X = G, and Λ ∝ I gives X ∝ G^{1/2},
    the eigen-design of Li & Miklau (PVLDB 2012) under a trace constraint. Kept as G's eigenvectors V,
    ridged eigenvalues λ and S: one eigendecomposition, then O(n²) per product (A is never formed).
    """

    vectors: np.ndarray  # V
    values: np.ndarray   # λ (ridged)
    scale: np.ndarray    # diagonal of S
    trace: float         # tr(G (AᵀA)⁻¹) with the true G

    def apply(self, x: np.ndarray) -> np.ndarray:
        """A x = V Λ^{1/4} Vᵀ (S x)."""
        return self.vectors @ (self.values**0.25 * (self.vectors.T @ (self.scale * x)))

    def solve(self, y: np.ndarray) -> np.ndarray:
        """A⁻¹ y = S⁻¹ V Λ^{-1/4} Vᵀ y."""
        return self.vectors @ (self.values**-0.25 * (self.vectors.T @ y)) / self.scale

    def column_l2(self) -> np.ndarray:
        """‖A e_j‖₂ = s_j √(G^{1/2})_jj (1 up to round-off)."""
        return self.scale * np.sqrt((self.vectors**2) @ np.sqrt(self.values))

    def column_l1(self) -> np.ndarray:
        """‖A e_j‖₁ (forms A: one n³ product; the Gaussian mechanism does not need it)."""
        return np.abs((self.vectors * self.values**0.25) @ self.vectors.T).sum(axis=0) * self.scale


_EIGEN = StrategyCache("gaussian-eigen eigen designs", limit=16)


def eigen_strategy(workload: Workload) -> EigenStrategy:
    """The L2 strategy for a workload, cached per workload content (data-independent, no privacy cost)."""
    n = workload.shape[1]
    if n > L2_MAX_CELLS:
        raise ValueError(f"gaussian-eigen builds a dense {n} x {n} strategy; it allows at most "
                         f"{L2_MAX_CELLS} cells, got n={n}; use gaussian-hb or gaussian-privelet")
    return _EIGEN.get_or_compute(workload_key(workload), lambda: single_threaded(_eigen, workload))


def _eigen(workload: Workload) -> EigenStrategy:
    n = workload.shape[1]
    gram = gram_apply(workload, np.eye(n))
    values, vectors = scipy.linalg.eigh((gram + gram.T) / 2.0, overwrite_a=True)
    # a tiny ridge keeps A invertible when W leaves directions (or cells) unqueried; the error below is
    # computed for the ridged A actually used, with the true G, so it stays exact
    values = np.maximum(values, 0.0) + RIDGE * max(float(values.max()), 1.0)
    scale = 1.0 / np.sqrt((vectors**2) @ np.sqrt(values))  # 1/√diag(G^{1/2})
    # tr(G (AᵀA)⁻¹) = Σ_k λ_k^{-1/2} u_kᵀ G u_k with u_k = S⁻¹ v_k: WᵀW applied in closed form, O(n²)
    scaled = vectors / scale[:, None]
    trace = float(np.sum(values**-0.5 * np.sum(scaled * gram_apply(workload, scaled), axis=0)))
    return EigenStrategy(vectors, values, scale, trace)


@dataclass(frozen=True)
class GaussianEigenDesign(GaussianMixin):
    """The Gaussian matrix mechanism: the eigen strategy with L2 columns 1 (HDMM approx=True's targets),
    y = A x + N(0, σ²)ⁿ, x̂ = A⁻¹ y. Per-query RMSE at unit noise within 1.02x HDMM's YuanConvex
    (bench/bench_gaussian.py).

    >>> from dplens.core.queries.workloads import AllRange
    >>> round(float(GaussianEigenDesign().strategy_norms(AllRange(8))[1].max()), 12)
    1.0
    """

    summary: ClassVar[str] = "Gaussian matrix mechanism: an eigen-design strategy for your workload ((ε, δ) or zCDP)."
    STRATEGY_CACHES: ClassVar[tuple[StrategyCache, ...]] = (_EIGEN,)

    name: str = "gaussian-eigen"
    data_dependent: bool = False

    def reconstruction(self, release: Release, workload: Workload) -> Reconstruction | None:
        """x̂ − x = A⁻¹ z: L = S⁻¹ V Λ^{-1/4} Vᵀ, so Lᵀ v = V Λ^{-1/4} Vᵀ S⁻¹ v; None for another release."""
        noise = stated_noise(self, release, workload)
        if noise is None:
            return None
        eigen = eigen_strategy(workload)
        return Reconstruction(*noise, workload.shape[1], lambda v: eigen.vectors @ (
            eigen.values[:, None] ** -0.25 * (eigen.vectors.T @ (v / eigen.scale[:, None]))))

    def run(self, x: np.ndarray, workload: Workload, privacy: Privacy | float, rng: np.random.Generator) -> Release:
        x, _ = check_inputs(x, workload, self.budget_at(privacy))
        strategy = eigen_strategy(workload)
        l2_max = float(strategy.column_l2().max())
        sigma = l2_max * self.unit_sigma(privacy)
        # NumPy's normal on the exploration path, OpenDP's (lattice) Gaussian on the secure one
        noisy = GaussianMeasurement(sigma).noisy(strategy.apply(x), rng)
        estimate = strategy.solve(noisy)
        release = Release(self.name, self.budget_at(privacy), 0.0, workload.matvec(estimate), estimate,
                          {"strategy": "eigen (G^1/4 S)"}, workload=workload,
                          measurements=(NoisyAnswers("the eigen design's answers", GaussianMeasurement(sigma),
                                                     l2_max, noisy),))
        return self._gaussian_release(privacy, sigma, l2_max, release)

    def expected_mse(self, workload: Workload, privacy: Privacy | float) -> float:
        """σ² tr(G (AᵀA)⁻¹) / m."""
        return self.sigma(workload, privacy) ** 2 * eigen_strategy(workload).trace / workload.shape[0]

    def cost(self, workload: Workload) -> Cost:
        """One dense n × n eigendecomposition (single-threaded ~19 s at n = 4096), a few n × n matrices."""
        n = workload.shape[1]
        return Cost(OVERHEAD_SECONDS + 3e-10 * n**3, 8.0 * 5 * n * n, f"a dense {n:,} x {n:,} strategy")

    def strategy_norms(self, workload: Workload) -> tuple[np.ndarray, np.ndarray]:
        """Column L1 (forms A once) and L2 norms of the strategy."""
        strategy = eigen_strategy(workload)
        return strategy.column_l1(), strategy.column_l2()

    def sigma(self, workload: Workload, privacy: Privacy | float) -> float:
        """Δ₂(A) × the unit σ (Δ₂ from the eigen form, without forming A)."""
        return float(eigen_strategy(workload).column_l2().max()) * self.unit_sigma(privacy)


# ----------------------------------------------------------------------------- privacy targets → mechanisms
def for_privacy(mechanism, privacy: Privacy):
    """``(mechanism, privacy)``: every mechanism runs at a privacy value itself (Laplace ones at ε, or √(2ρ) under
    ρ-zCDP; Gaussian ones calibrated to (ε, δ) or ρ), so this only refuses what the mechanism cannot meet, by name.

    >>> from dplens.core.mechanisms import MECHANISMS
    >>> for_privacy(MECHANISMS["hb"], ZCDP(0.5))[1]
    ZCDP(rho=0.5)
    """
    if not isinstance(privacy, PureDP | ApproxDP | ZCDP):
        raise ValueError(f"privacy must be PureDP, ApproxDP or ZCDP, got {privacy!r}")
    if isinstance(privacy, PureDP) and noise_kind(mechanism) == "gaussian":
        raise ValueError(f"{mechanism.name} adds Gaussian noise, which is never pure epsilon-DP; "
                         "choose the (epsilon, delta) or zCDP definition, or a Laplace mechanism")
    return mechanism, privacy


def stating_definition(release: Release, definition: str, delta: float, epsilon_at_delta: float | None = None,
                       ) -> Release:
    """``release`` whose params state the definition it was asked for, its δ (0 under pure ε-DP) and, under zCDP, the
    "ε at δ" its ρ is shown as (the budget holds the ρ itself)."""
    params = {**release.params, "definition": definition, "delta": 0.0 if definition == "pure" else delta}
    if definition == "zcdp":
        rho = release.budget.rho if isinstance(release.budget, ZCDP) else None
        params["epsilon_at_delta"] = epsilon_at_delta if epsilon_at_delta is not None else (
            zcdp_epsilon(rho, delta) if rho else None)
    return dataclasses.replace(release, params=params)


@dataclass(frozen=True)
class Matched:
    """A mechanism run at matched privacy: ``epsilon`` means "ε at δ" under ``definition`` for every mechanism.

    The common x-axis of Compare: under "zcdp" both Laplace (at ε = √(2ρ)) and Gaussian mechanisms get
    the same ρ = ``zcdp_rho(ε, δ)``; under "approx" both are (ε, δ)-DP. A release's budget is that privacy value
    and its loss is in the budget's unit: ρ under "zcdp", ε (at δ) otherwise.

    >>> from dplens.core.mechanisms import MECHANISMS
    >>> from dplens.core.queries.workloads import Prefix
    >>> lap = Matched(MECHANISMS["hb"], "zcdp", 1e-6)
    >>> lap.expected_mse(Prefix(8), 1.0) > MECHANISMS["hb"].expected_mse(Prefix(8), 1.0)
    True
    """

    inner: Mechanism
    definition: str = "pure"
    delta: float = 1e-6

    def __post_init__(self) -> None:
        if self.definition not in DEFINITIONS:
            raise ValueError(f"definition must be one of {sorted(DEFINITIONS)}, got {self.definition!r}")
        check_delta(self.delta)

    @property
    def name(self) -> str:
        """The inner mechanism's registry name."""
        return self.inner.name

    @property
    def data_dependent(self) -> bool:
        """As the inner mechanism."""
        return self.inner.data_dependent

    def privacy_at(self, epsilon: float) -> Privacy:
        """The privacy value of "ε at δ" under the definition (the common x-axis's point)."""
        return target(self.definition, check_epsilon(epsilon), self.delta)

    def resolve(self, epsilon: float):
        """(mechanism, privacy value) for "ε at δ" under the definition."""
        return for_privacy(self.inner, self.privacy_at(epsilon))

    def run(self, x: np.ndarray, workload: Workload, epsilon: float, rng: np.random.Generator) -> Release:
        mechanism, privacy = self.resolve(epsilon)
        release = mechanism.run(x, workload, privacy, rng)  # states the privacy value and its records' loss in it
        return stating_definition(release, self.definition, self.delta, float(epsilon))

    def expected_mse(self, workload: Workload, epsilon: float) -> float | None:
        mechanism, privacy = self.resolve(epsilon)
        return mechanism.expected_mse(workload, privacy)

    @property
    def strategy_ignores_queries(self) -> bool:
        """As the inner mechanism (its strategy is the inner one's)."""
        return bool(getattr(self.inner, "strategy_ignores_queries", False))

    def reconstruction(self, release: Release, workload: Workload) -> Reconstruction | None:
        """The inner mechanism's noise map: matching the privacy changes the scale only, read from the release."""
        own = getattr(self.inner, "reconstruction", None)
        return own(release, workload) if own is not None else None

    def cost(self, workload: Workload) -> Cost:
        """The inner mechanism's cost estimate: calibration does not change the work."""
        return mechanism_cost(self.inner, workload)
