"""Gaussian noise: the eigen-design matrix mechanism (``gaussian-eigen``), and the definition a release states.

The Gaussian variants of the data-independent plans are not classes of their own: Gaussian noise is a setting of
the plan (``noise="gaussian"``, ``dplens.core.mechanisms.measurement.MeasuredPlan``), and the registry's
``gaussian-identity``, ``gaussian-answers``, ``gaussian-hb``, ``gaussian-privelet`` and ``gaussian-greedy-h`` are those
configurations. Each keeps the plan's strategy A and reconstruction and replaces i.i.d. Lap(Δ₁(A)/ε) by i.i.d.
N(0, σ²), σ calibrated to the strategy's L2 sensitivity Δ₂(A) = max_j ‖A e_j‖₂ at the privacy value it runs at:
(ε, δ) by Balle & Wang's (2018) analytic Gaussian (the discrete Gaussian's curve on integer counts), ρ-zCDP by
σ = Δ₂/√(2ρ). ``gaussian-eigen`` has its own L2 strategy with unit columns (HDMM approx=True).

>>> import numpy as np
>>> from dplens.core.mechanisms import MECHANISMS
>>> from dplens.core.privacy.definitions import ApproxDP
>>> from dplens.core.queries.workloads import Prefix
>>> release = MECHANISMS["gaussian-hb"].run(np.arange(8.0), Prefix(8), ApproxDP(1.0, 1e-6), np.random.default_rng(0))
>>> release.privacy_loss <= 1.0, release.params["definition"]
(True, 'approx')
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import scipy.linalg

from dplens.core.mechanisms.cache import StrategyCache
from dplens.core.mechanisms.contract import Release, check_inputs
from dplens.core.mechanisms.cost_model import OVERHEAD_SECONDS, Cost
from dplens.core.mechanisms.gram import gram_apply
from dplens.core.mechanisms.greedy_h import workload_key
from dplens.core.mechanisms.matrix import single_threaded
from dplens.core.mechanisms.measurement import (
    GaussianMeasurement,
    NoisyAnswers,
    Reconstruction,
    gaussian_budget,
    gaussian_release,
    stated_noise,
    unit_sigma,
)
from dplens.core.privacy.definitions import (
    ZCDP,
    Privacy,
    zcdp_epsilon,
    zcdp_sigma,
)
from dplens.core.queries.workloads import Workload

L2_MAX_CELLS = 4096  # gaussian-eigen's dense n × n strategy: 128 MB per matrix at this size
RIDGE = 1e-10  # relative ridge on WᵀW before the eigendecomposition (see _eigen)


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
class GaussianEigenDesign:
    """The Gaussian matrix mechanism: the eigen strategy with L2 columns 1 (HDMM approx=True's targets),
    y = A x + N(0, σ²)ⁿ, x̂ = A⁻¹ y. Per-query RMSE at unit noise within 1.02x HDMM's YuanConvex
    (bench/bench_gaussian.py).

    >>> from dplens.core.queries.workloads import AllRange
    >>> round(float(GaussianEigenDesign().strategy_norms(AllRange(8))[1].max()), 12)
    1.0
    """

    summary: ClassVar[str] = "Gaussian matrix mechanism: an eigen-design strategy for your workload ((ε, δ) or zCDP)."
    STRATEGY_CACHES: ClassVar[tuple[StrategyCache, ...]] = (_EIGEN,)

    noise: ClassVar[str] = "gaussian"  # its strategy is built for L2: it has no Laplace configuration

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
        budget = gaussian_budget(self.name, privacy)
        x, _ = check_inputs(x, workload, budget)
        strategy = eigen_strategy(workload)
        l2_max = float(strategy.column_l2().max())
        sigma = l2_max * self.unit_sigma(budget)
        # NumPy's normal on the exploration path, OpenDP's (lattice) Gaussian on the secure one
        noisy = GaussianMeasurement(sigma).noisy(strategy.apply(x), rng)
        estimate = strategy.solve(noisy)
        release = Release(self.name, budget, 0.0, workload.matvec(estimate), estimate, {"strategy": "eigen (G^1/4 S)"},
                          workload=workload, measurements=(NoisyAnswers("the eigen design's answers",
                                                                        GaussianMeasurement(sigma), l2_max, noisy),))
        return gaussian_release(release, budget, sigma, l2_max)

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

    def unit_sigma(self, privacy: Privacy | float) -> float:
        """σ at Δ₂ = 1: 1/√(2ρ) under ρ-zCDP, the analytic Gaussian's under (ε, δ)."""
        budget = gaussian_budget(self.name, privacy)
        if isinstance(budget, ZCDP):
            return zcdp_sigma(budget.rho)
        return unit_sigma(budget.epsilon, budget.delta, "analytic")


# ----------------------------------------------------------------------------- a release's stated definition
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
