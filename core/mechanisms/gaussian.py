"""Gaussian variants of the data-independent mechanisms: (ε, δ)-DP by the analytic Gaussian, or ρ-zCDP.

Each variant keeps its Laplace parent's strategy A (identity, the answers, the hb tree, the Haar
basis, the greedy-h tree, the mm-opt p-Identity) and its least-squares reconstruction, and replaces
i.i.d. Lap(Δ₁(A)/ε) by i.i.d. N(0, σ²) with σ calibrated to the strategy's L2 sensitivity
Δ₂(A) = max_j ‖A e_j‖₂:

* ``calibration="analytic"``: σ is Balle & Wang's (2018) least σ for (ε, δ)-DP at the knob ``delta``;
* ``calibration="zcdp"``: σ = Δ₂/√(2ρ) with ρ the largest zCDP whose CKS conversion is (ε, δ)-DP;
  the release then also satisfies ρ-zCDP (composes tightly), at a somewhat larger σ.

So ``run(x, workload, epsilon, rng)`` keeps the Mechanism contract, with ``epsilon`` meaning "ε at δ".
The parent's ``run`` is executed at ε = 1 through a noise source that answers its (uniform) Laplace
requests with N(0, σ²) and records σ; the privacy loss is recomputed from the recorded σ and Δ₂(A).
Error: the parent's variance 2b² per coordinate (b its scale at ε = 1) becomes σ², so ``expected_mse``
is the parent's at ε = 1 times σ²/(2b²) (exact: total squared error σ²‖W A⁺‖_F²).
mm-opt's Gaussian variant uses its own strategy with L2-normalised columns (``EigenStrategy``, HDMM approx=True).

>>> import numpy as np
>>> from core.workloads import Prefix
>>> mech = GaussianHierarchical(delta=1e-6)
>>> release = mech.run(np.arange(8.0), Prefix(8), 1.0, np.random.default_rng(0))
>>> release.privacy_loss <= 1.0, release.params["definition"]
(True, 'approx')
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import scipy.linalg

from core.mechanisms import Release, check_epsilon, check_inputs, laplace_privacy_loss
from core.mechanisms.gram import gram_apply, remember
from core.mechanisms.greedy_h import GreedyH, _along_paths, _cell_strategy, workload_key
from core.mechanisms.hierarchical import Hierarchical, build_tree, workload_grid
from core.mechanisms.laplace import Identity, LaplaceOnAnswers
from core.mechanisms.matrix import _single_threaded
from core.mechanisms.privelet import Privelet, _sensitivity
from core.noise import noise_kind
from core.privacy import (
    DEFINITIONS,
    ZCDP,
    ApproxDP,
    Privacy,
    PureDP,
    analytic_gaussian_sigma,
    check_delta,
    gaussian_epsilon,
    gaussian_rho,
    target,
    zcdp_epsilon,
    zcdp_rho,
    zcdp_sigma,
)
from core.workloads import Workload

CALIBRATIONS = ("analytic", "zcdp")
L2_MAX_CELLS = 4096  # gaussian-mm-opt's dense n × n strategy: 128 MB per matrix at this size
RIDGE = 1e-10  # relative ridge on WᵀW before the eigendecomposition (see _eigen)


class GaussianNoise:
    """A noise source that answers every ``laplace(scale=b)`` request (one b > 0) with N(0, σ²).

    Gaussian draws come from the wrapped source's ``normal``: NumPy's on the exploration path,
    OpenDP's discrete Gaussian on the secure path (``core.noise.SecureNoise.normal``). Other draws
    (uniforms, permutations) pass through. ``stds`` records the standard deviations drawn.

    >>> source = GaussianNoise(np.random.default_rng(0), 2.0)
    >>> _ = source.laplace(scale=1.5, size=3)
    >>> source.stds
    [2.0]
    """

    def __init__(self, source, sigma: float) -> None:
        self._source = source
        self._sigma = float(sigma)
        self._scales: set[float] = set()
        self.stds: list[float] = []

    def laplace(self, loc: float = 0.0, scale: float = 1.0, size=None):
        """N(loc, σ²) in place of Laplace(loc, scale); refuses non-uniform scales (no single σ fits them)."""
        scales = np.asarray(scale, dtype=float)
        self._scales.update(np.unique(scales[scales > 0]).tolist() if scales.ndim else
                            ([float(scales)] if scales > 0 else []))
        if len(self._scales) > 1:
            raise ValueError(f"the Gaussian variant needs uniform Laplace scales, got {sorted(self._scales)}")
        std = np.where(scales > 0, self._sigma, 0.0)
        self.stds.append(self._sigma)
        return self._source.normal(loc=loc, scale=std if std.ndim else float(std), size=size)

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

    def parent_scale(self, workload: Workload) -> float:
        """The Laplace scale the parent uses at ε = 1: Δ₁(A) (mm-opt overrides it)."""
        return float(self.strategy_norms(workload)[0].max())

    def sigma(self, workload: Workload, epsilon: float) -> float:
        """The noise standard deviation at "ε at δ" for this workload: Δ₂(A) × the unit σ."""
        _, l2 = self.strategy_norms(workload)
        return float(l2.max()) * unit_sigma(check_epsilon(epsilon), float(self.delta), self.calibration)

    def run(self, x: np.ndarray, workload: Workload, epsilon: float, rng: np.random.Generator) -> Release:
        _, epsilon = check_inputs(x, workload, epsilon)
        _, l2 = self.strategy_norms(workload)
        l2_max = float(l2.max())
        if l2_max == 0:  # nothing depends on the data
            release = super().run(x, workload, epsilon, rng)
            return Release(self.name, epsilon, 0.0, release.answers, release.estimate, dict(release.params))
        source = GaussianNoise(rng, self.sigma(workload, epsilon))
        # the parent at ε = 1 asks for Lap(b) on every coordinate: each becomes N(0, σ²)
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
        scale = self.parent_scale(workload)
        if scale == 0:
            return 0.0
        return parent * self.sigma(workload, epsilon) ** 2 / (2.0 * scale**2)


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


@dataclass(frozen=True, eq=False)
class EigenStrategy:
    """A = (G + τI)^{1/4} S with G = WᵀW and S = diag(1/√diag((G + τI)^{1/2})): every column has L2 norm 1.

    AᵀA = S G^{1/2} S is the closed-form solution of the Gaussian matrix mechanism's convex program
    min tr(G X⁻¹) s.t. diag(X) ≤ 1 (Yuan et al. 2016; HDMM approx=True) when the diagonal of G^{1/2}
    is flat, and close to it otherwise: its KKT condition is X Λ X = G, and Λ ∝ I gives X ∝ G^{1/2},
    the eigen-design of Li & Miklau (PVLDB 2012) under a trace constraint. One eigendecomposition.
    """

    matrix: np.ndarray    # A, n × n
    inverse: np.ndarray   # A⁻¹
    trace: float          # tr(G (AᵀA)⁻¹)


_EIGEN: dict[object, EigenStrategy] = {}


def eigen_strategy(workload: Workload) -> EigenStrategy:
    """The L2 strategy for a workload, cached per workload content (data-independent, no privacy cost)."""
    n = workload.shape[1]
    if n > L2_MAX_CELLS:
        raise ValueError(f"gaussian-mm-opt builds a dense {n} x {n} strategy; it allows at most "
                         f"{L2_MAX_CELLS} cells, got n={n}; use gaussian-hb or gaussian-privelet")
    return remember(_EIGEN, workload_key(workload), lambda: _single_threaded(_eigen, workload))


def _eigen(workload: Workload) -> EigenStrategy:
    n = workload.shape[1]
    gram = gram_apply(workload, np.eye(n))
    gram = (gram + gram.T) / 2.0
    values, vectors = scipy.linalg.eigh(gram)
    # a tiny ridge keeps A invertible when W leaves directions (or cells) unqueried; the error below is
    # computed for the ridged A actually used, so it stays exact
    values = np.maximum(values, 0.0) + RIDGE * max(float(values.max()), 1.0)
    diag_root = (vectors**2) @ np.sqrt(values)                    # diag(G^{1/2})
    scale = 1.0 / np.sqrt(diag_root)
    matrix = (vectors * values**0.25) @ vectors.T * scale[None, :]  # G^{1/4} S
    inverse = ((vectors * values**-0.25) @ vectors.T) / scale[:, None]  # S⁻¹ G^{-1/4}
    # tr(G (AᵀA)⁻¹) = ‖W A⁻¹‖_F² = Σ_j (A⁻¹e_j)ᵀ G (A⁻¹e_j): WᵀW applied in closed form, no third n³ product
    trace = float(np.sum(inverse * gram_apply(workload, inverse)))
    return EigenStrategy(matrix, inverse, trace)


@dataclass(frozen=True)
class EigenDesign:
    """Laplace noise on the eigen strategy (the parent of gaussian-mm-opt; not registered: under L1 it
    is not optimised, mm-opt is). y = A x + Lap(Δ₁(A)/ε)ⁿ, x̂ = A⁻¹ y."""

    name: str = "eigen-design"
    data_dependent: bool = False

    def run(self, x: np.ndarray, workload: Workload, epsilon: float, rng: np.random.Generator) -> Release:
        x, epsilon = check_inputs(x, workload, epsilon)
        strategy = eigen_strategy(workload)
        column_l1 = np.abs(strategy.matrix).sum(axis=0)
        scale = float(column_l1.max()) / epsilon
        noisy = strategy.matrix @ x + rng.laplace(scale=scale, size=x.size)
        estimate = strategy.inverse @ noisy
        loss = laplace_privacy_loss([(column_l1, scale)])
        return Release(self.name, epsilon, loss, workload.matvec(estimate), estimate,
                       {"strategy": "eigen (G^1/4 S)", "noise_scale": scale})

    def expected_mse(self, workload: Workload, epsilon: float) -> float:
        """2 (Δ₁(A)/ε)² tr(G (AᵀA)⁻¹) / m."""
        strategy = eigen_strategy(workload)
        scale = float(np.abs(strategy.matrix).sum(axis=0).max()) / check_epsilon(epsilon)
        return 2.0 * scale**2 * strategy.trace / workload.shape[0]


@dataclass(frozen=True)
class GaussianMatrix(GaussianMixin, EigenDesign):
    """The Gaussian matrix mechanism: the eigen strategy with L2 columns 1 (HDMM approx=True's targets),
    Gaussian noise, exact inverse. Per-query RMSE at unit noise within 1.02x HDMM's YuanConvex
    (bench/bench_gaussian.py).

    >>> from core.workloads import AllRange
    >>> round(float(GaussianMatrix().strategy_norms(AllRange(8))[1].max()), 12)
    1.0
    """

    delta: float = 1e-6
    calibration: str = "analytic"
    name: str = "gaussian-mm-opt"

    def __post_init__(self) -> None:
        self._check_knobs()

    def strategy_norms(self, workload: Workload) -> tuple[np.ndarray, np.ndarray]:
        """Column L1 and L2 norms of the dense strategy."""
        matrix = eigen_strategy(workload).matrix
        return np.abs(matrix).sum(axis=0), np.linalg.norm(matrix, axis=0)


# ----------------------------------------------------------------------------- privacy targets → mechanisms
def for_privacy(mechanism, privacy: Privacy):
    """The mechanism (knobs set) and the ``epsilon`` argument that make one release meet ``privacy``.

    Laplace mechanisms are pure ε-DP: under (ε, δ) they run at ε; under ρ-zCDP at ε = √(2ρ)
    (ε-DP ⇒ ε²/2-zCDP). Gaussian ones: under (ε, δ) the analytic Gaussian at that δ; under ρ-zCDP
    σ = Δ₂/√(2ρ) (passed as "ε at the mechanism's δ", which it converts back to ρ, rounding down).

    >>> from core.mechanisms import MECHANISMS
    >>> mech, epsilon = for_privacy(MECHANISMS["hb"], ZCDP(0.5))
    >>> epsilon
    1.0
    >>> mech, epsilon = for_privacy(MECHANISMS["gaussian-hb"], ApproxDP(1.0, 1e-9))
    >>> mech.delta, mech.calibration, epsilon
    (1e-09, 'analytic', 1.0)
    """
    gaussian = noise_kind(mechanism) == "gaussian"
    if isinstance(privacy, PureDP):
        if gaussian:
            raise ValueError(f"{mechanism.name} adds Gaussian noise, which is never pure epsilon-DP; "
                             "choose the (epsilon, delta) or zCDP definition, or a Laplace mechanism")
        return mechanism, privacy.epsilon
    if isinstance(privacy, ApproxDP):
        if gaussian:
            return dataclasses.replace(mechanism, delta=privacy.delta, calibration="analytic"), privacy.epsilon
        return mechanism, privacy.epsilon
    if isinstance(privacy, ZCDP):
        if gaussian:
            mechanism = dataclasses.replace(mechanism, calibration="zcdp")
            return mechanism, zcdp_epsilon(privacy.rho, mechanism.delta)
        return mechanism, math.sqrt(2.0 * privacy.rho)
    raise ValueError(f"privacy must be PureDP, ApproxDP or ZCDP, got {privacy!r}")


def release_cost(release: Release) -> Privacy:
    """What a release charges, in its own definition's unit: ε, (ε, δ), or ρ.

    >>> import numpy as np
    >>> from core.mechanisms import MECHANISMS
    >>> from core.workloads import Identity as I
    >>> release_cost(MECHANISMS["identity"].run(np.ones(2), I(2), 0.5, np.random.default_rng(0)))
    PureDP(epsilon=0.5)
    """
    definition = release.params.get("definition")
    if definition == "zcdp":
        return ZCDP(zcdp_rho(release.epsilon, float(release.params["delta"])))
    if definition == "approx":
        return ApproxDP(release.epsilon, float(release.params["delta"]))
    return PureDP(release.epsilon)


@dataclass(frozen=True)
class Matched:
    """A mechanism run at matched privacy: ``epsilon`` means "ε at δ" under ``definition`` for every mechanism.

    The common x-axis of Compare: under "zcdp" both Laplace (at ε = √(2ρ)) and Gaussian mechanisms get
    the same ρ = ``zcdp_rho(ε, δ)``; under "approx" both are (ε, δ)-DP. Releases report ε and the loss
    of the noise added in that unit (ε at δ).

    >>> from core.mechanisms import MECHANISMS
    >>> from core.workloads import Prefix
    >>> lap = Matched(MECHANISMS["hb"], "zcdp", 1e-6)
    >>> lap.expected_mse(Prefix(8), 1.0) > MECHANISMS["hb"].expected_mse(Prefix(8), 1.0)
    True
    """

    inner: object
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

    def resolve(self, epsilon: float):
        """(mechanism, epsilon argument) for "ε at δ" under the definition."""
        return for_privacy(self.inner, target(self.definition, check_epsilon(epsilon), self.delta))

    def run(self, x: np.ndarray, workload: Workload, epsilon: float, rng: np.random.Generator) -> Release:
        mechanism, argument = self.resolve(epsilon)
        release = mechanism.run(x, workload, argument, rng)
        loss = release.privacy_loss
        if self.definition == "zcdp" and noise_kind(mechanism) == "laplace":
            loss = zcdp_epsilon(loss**2 / 2.0, self.delta) if loss > 0 else 0.0  # back in "ε at δ"
        params = {**release.params, "definition": self.definition,
                  "delta": 0.0 if self.definition == "pure" else self.delta}
        return dataclasses.replace(release, epsilon=float(epsilon), privacy_loss=loss, params=params)

    def expected_mse(self, workload: Workload, epsilon: float) -> float | None:
        mechanism, argument = self.resolve(epsilon)
        return mechanism.expected_mse(workload, argument)
