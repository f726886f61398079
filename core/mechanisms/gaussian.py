"""Gaussian variants of the data-independent mechanisms: (ε, δ)-DP by the analytic Gaussian, or ρ-zCDP.

Each variant keeps its Laplace parent's strategy A (identity, the answers, the hb tree, the Haar
basis, the greedy-h tree, the mm-opt p-Identity) and its least-squares reconstruction, and replaces
i.i.d. Lap(Δ₁(A)/ε) by i.i.d. N(0, σ²) with σ calibrated to the strategy's L2 sensitivity
Δ₂(A) = max_j ‖A e_j‖₂:

* ``calibration="analytic"``: σ is Balle & Wang's (2018) least σ for (ε, δ)-DP at the knob ``delta``;
* ``calibration="zcdp"``: σ = Δ₂/√(2ρ) with ρ the largest zCDP whose CKS conversion is (ε, δ)-DP;
  the release then also satisfies ρ-zCDP (composes tightly), at a somewhat larger σ.

So ``run(x, workload, epsilon, rng)`` keeps the Mechanism contract, with ``epsilon`` meaning "ε at δ".
The parent's ``run`` is executed at ε = 1 through a noise source that answers each Laplace request of
scale b with N(0, (b·σ/Δ₁(A))²) and records it; the privacy loss is recomputed from the recorded
standard deviations and Δ₂(A). Error: the parent's variance 2b² per coordinate becomes σ², so
``expected_mse`` is the parent's at ε = 1 times σ²/(2Δ₁(A)²) (exact: total squared error σ²‖W A⁺‖_F²).

>>> import numpy as np
>>> from core.workloads import Prefix
>>> mech = GaussianHierarchical(delta=1e-6)
>>> release = mech.run(np.arange(8.0), Prefix(8), 1.0, np.random.default_rng(0))
>>> release.privacy_loss <= 1.0, release.params["definition"]
(True, 'approx')
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from core.mechanisms import Release, check_epsilon, check_inputs
from core.mechanisms.greedy_h import GreedyH, _along_paths, _cell_strategy
from core.mechanisms.hierarchical import Hierarchical, build_tree, workload_grid
from core.mechanisms.laplace import Identity, LaplaceOnAnswers
from core.mechanisms.matrix import MatrixMechanism
from core.mechanisms.privelet import Privelet, _sensitivity
from core.privacy import (
    analytic_gaussian_sigma,
    check_delta,
    gaussian_epsilon,
    gaussian_rho,
    zcdp_epsilon,
    zcdp_rho,
    zcdp_sigma,
)
from core.workloads import Workload

CALIBRATIONS = ("analytic", "zcdp")


class GaussianNoise:
    """A noise source that answers ``laplace(scale=b)`` with N(0, (b·factor)²) and records each std.

    Gaussian draws come from the wrapped source's ``normal``: NumPy's on the exploration path,
    OpenDP's discrete Gaussian on the secure path (``core.noise.SecureNoise.normal``). Other draws
    (uniforms, permutations) pass through.

    >>> source = GaussianNoise(np.random.default_rng(0), 2.0)
    >>> _ = source.laplace(scale=1.5, size=3)
    >>> source.stds
    [3.0]
    """

    def __init__(self, source, factor: float) -> None:
        self._source = source
        self._factor = float(factor)
        self.stds: list[float] = []

    def laplace(self, loc: float = 0.0, scale: float = 1.0, size=None):
        """N(loc, (scale·factor)²) in place of Laplace(loc, scale)."""
        std = np.asarray(scale, dtype=float) * self._factor
        self.stds.extend(np.unique(std[std > 0]).tolist() if std.ndim else ([float(std)] if std > 0 else []))
        return self._source.normal(loc=loc, scale=std, size=size)

    def __getattr__(self, name: str):
        return getattr(self._source, name)


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


class GaussianMixin:
    """Gaussian noise for a Laplace parent that exposes its strategy's column norms (``strategy_norms``)."""

    noise: ClassVar[str] = "gaussian"
    delta: float
    calibration: str

    def _check_knobs(self) -> None:
        check_delta(self.delta)
        if self.calibration not in CALIBRATIONS:
            raise ValueError(f"calibration must be one of {list(CALIBRATIONS)}, got {self.calibration!r}")

    def strategy_norms(self, workload: Workload) -> tuple[np.ndarray, np.ndarray]:
        """Column L1 and L2 norms of the measured strategy A (the parent's noise is Lap(max L1 / ε))."""
        raise NotImplementedError

    def sigma(self, workload: Workload, epsilon: float) -> float:
        """The noise standard deviation at "ε at δ" for this workload: Δ₂(A) × the unit σ."""
        _, l2 = self.strategy_norms(workload)
        return float(l2.max()) * unit_sigma(check_epsilon(epsilon), float(self.delta), self.calibration)

    def run(self, x: np.ndarray, workload: Workload, epsilon: float, rng: np.random.Generator) -> Release:
        _, epsilon = check_inputs(x, workload, epsilon)
        l1, l2 = self.strategy_norms(workload)
        l1_max, l2_max = float(l1.max()), float(l2.max())
        if l2_max == 0:  # nothing depends on the data
            release = super().run(x, workload, epsilon, rng)
            return Release(self.name, epsilon, 0.0, release.answers, release.estimate, dict(release.params))
        sigma = self.sigma(workload, epsilon)
        source = GaussianNoise(rng, sigma / l1_max)
        # the parent at ε = 1 asks for Lap(Δ₁(A)) on every coordinate: each becomes N(0, σ²)
        release = super().run(x, workload, 1.0, source)
        smallest = min(source.stds)
        rho = gaussian_rho(smallest, l2_max)  # ρ = Δ₂²/(2σ²) of the noise actually added
        if self.calibration == "analytic":
            loss = gaussian_epsilon(smallest, self.delta, l2_max)
        else:
            loss = zcdp_epsilon(rho, self.delta)
        params = {k: v for k, v in release.params.items() if k != "noise_scale"}
        params.update({"noise": "gaussian", "definition": "approx" if self.calibration == "analytic" else "zcdp",
                       "delta": float(self.delta), "rho": rho, "sigma": smallest, "l2_sensitivity": l2_max})
        return Release(self.name, epsilon, loss, release.answers, release.estimate, params, release.details)

    def expected_mse(self, workload: Workload, epsilon: float) -> float | None:
        """Per-query MSE σ²‖W A⁺‖_F²/m: the parent's at ε = 1 (variance 2Δ₁²) rescaled to variance σ²."""
        parent = super().expected_mse(workload, 1.0)
        if parent is None:
            return None
        l1, _ = self.strategy_norms(workload)
        l1_max = float(l1.max())
        if l1_max == 0:
            return 0.0
        return parent * self.sigma(workload, epsilon) ** 2 / (2.0 * l1_max**2)


@dataclass(frozen=True)
class GaussianIdentity(GaussianMixin, Identity):
    """Identity with Gaussian noise on the cells (Δ₂ = 1).

    >>> from core.workloads import Identity as I
    >>> round(GaussianIdentity(delta=1e-5).expected_mse(I(4), 1.0), 4)  # σ² = 3.730632²
    13.9176
    """

    delta: float = 1e-6
    calibration: str = "analytic"
    name: str = "gaussian-identity"

    def __post_init__(self) -> None:
        self._check_knobs()

    def strategy_norms(self, workload: Workload) -> tuple[np.ndarray, np.ndarray]:
        """Identity: every column has L1 and L2 norm 1."""
        ones = np.ones(workload.shape[1])
        return ones, ones


@dataclass(frozen=True)
class GaussianAnswers(GaussianMixin, LaplaceOnAnswers):
    """Gaussian noise on the workload answers at Δ₂(W) (beats Laplace by far when Δ₂ ≪ Δ₁, e.g. prefix)."""

    delta: float = 1e-6
    calibration: str = "analytic"
    name: str = "gaussian-answers"

    def __post_init__(self) -> None:
        self._check_knobs()

    def strategy_norms(self, workload: Workload) -> tuple[np.ndarray, np.ndarray]:
        """The workload's own column norms."""
        return workload.column_norms(1), workload.column_norms(2)


@dataclass(frozen=True)
class GaussianHierarchical(GaussianMixin, Hierarchical):
    """hb/H2 tree with Gaussian noise: a cell in h measured nodes has Δ₁ = h, Δ₂ = √h."""

    delta: float = 1e-6
    calibration: str = "analytic"
    name: str = "gaussian-hb"

    def __post_init__(self) -> None:
        super().__post_init__()
        self._check_knobs()

    def strategy_norms(self, workload: Workload) -> tuple[np.ndarray, np.ndarray]:
        """Nodes containing each cell (unit weights): L1 = count, L2 = √count."""
        counts = build_tree(*self._tree_args(workload_grid(workload))).column_norms()
        return counts, np.sqrt(counts)


@dataclass(frozen=True)
class GaussianPrivelet(GaussianMixin, Privelet):
    """Privelet's ±1 Haar strategy with Gaussian noise: each cell is in ρ coefficients, Δ₂ = √ρ."""

    delta: float = 1e-6
    calibration: str = "analytic"
    name: str = "gaussian-privelet"

    def __post_init__(self) -> None:
        self._check_knobs()

    def strategy_norms(self, workload: Workload) -> tuple[np.ndarray, np.ndarray]:
        """ρ = Π(1 + log₂ padded length) coefficients of ±1 per cell."""
        rho = _sensitivity(workload_grid(workload))
        n = workload.shape[1]
        return np.full(n, rho), np.full(n, np.sqrt(rho))


@dataclass(frozen=True)
class GaussianGreedyH(GaussianMixin, GreedyH):
    """Greedy-H's weighted tree (weights chosen for L1, Li et al. 2014) with Gaussian noise."""

    delta: float = 1e-6
    calibration: str = "analytic"
    name: str = "gaussian-greedy-h"

    def __post_init__(self) -> None:
        super().__post_init__()
        self._check_knobs()

    def strategy_norms(self, workload: Workload) -> tuple[np.ndarray, np.ndarray]:
        """Σ of the query weights (L1) and √Σ of their squares (L2) along each cell's root path."""
        tree, _ = _cell_strategy(workload, self.branching, self.granularity)
        l2 = np.sqrt(_along_paths(tree.units, tree.query_start, tree.query_size, tree.query_weight**2))
        return tree.cell_l1, l2


@dataclass(frozen=True)
class GaussianMatrix(GaussianMixin, MatrixMechanism):
    """The matrix mechanism with a p-Identity strategy whose columns have L2 norm 1 (HDMM approx=True)."""

    delta: float = 1e-6
    calibration: str = "analytic"
    name: str = "gaussian-mm-opt"

    def __post_init__(self) -> None:
        super().__post_init__()
        self._check_knobs()

    def strategy_norms(self, workload: Workload) -> tuple[np.ndarray, np.ndarray]:
        """Columns of [I; Θ] D⁻¹: L1 (1 + Σ|θ|)/d and L2 √(1 + Σθ²)/d."""
        strategy = self.strategy(workload)
        theta, d = strategy.theta, strategy.scaling
        return strategy.column_norms(), np.sqrt(1.0 + (theta**2).sum(axis=0)) / d
