"""The matrix mechanism with a workload-optimised p-Identity strategy (McKenna et al., HDMM, PVLDB 2018, OPT0).

Strategy A = [I; Θ]·D⁻¹ with Θ ≥ 0 (p × n) and D = diag(1 + 1ᵀΘ), so every column of A has L1 norm 1
(Δ_A = 1). The release is y = A x + Lap(1/ε)^(n+p), answered by least squares x̂ = (AᵀA)⁻¹Aᵀy, with
per-query MSE 2Δ_A²·tr(WᵀW (AᵀA)⁻¹)/(m ε²) (the matrix mechanism, Li et al., PODS 2010). Θ minimises that trace by L-BFGS-B.

The objective needs only WᵀW applied to p vectors (``gram_rows``: O(n) each for prefix and all-range),
and (AᵀA)⁻¹ = D (I + ΘᵀΘ)⁻¹ D with (I + ΘᵀΘ)⁻¹ = I − Θᵀ(I + ΘΘᵀ)⁻¹Θ (Woodbury), so an evaluation with
its gradient costs O(p²n) instead of HDMM's dense O(n³) or O(pn²).

>>> import numpy as np
>>> from core.queries.workloads import Prefix
>>> mech = MatrixMechanism()
>>> round(mech.expected_mse(Prefix(16), 1.0) / mech.expected_mse(Prefix(16), 2.0), 6)
4.0
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import scipy.linalg
import scipy.optimize
from threadpoolctl import threadpool_limits

from core.mechanisms import Release, check_epsilon, check_inputs, laplace_privacy_loss
from core.mechanisms.gram import gram_rows, remember
from core.mechanisms.greedy_h import workload_key
from core.privacy.noise import add_laplace
from core.queries.workloads import Workload

MAX_CELLS = 16384  # largest domain mm-opt optimises for (implicit operators, O(p²n) per iteration; bench_mmopt.py)
SMALL_CELLS = 512     # at most this many cells: at least SMALL_RESTARTS optimiser starts
SMALL_RESTARTS = 4
MAX_ITERATIONS = 1000  # L-BFGS-B iterations per start up to LARGE_CELLS: 200 stopped 1-2.4 % above HDMM …
LARGE_ITERATIONS = 200  # … and above it, where an iteration costs O(p²n) and time is the target (bench_mmopt.py)
MAX_P = 128       # rows of Θ for p="auto": n/16 as in HDMM (the cap of 64 cost 1 % at n = 2048) …
LARGE_CELLS = 2048  # … and 32 above this many cells, to keep an iteration O(32²·n) (bench/bench_mmopt.py)
LARGE_P = 32


@dataclass(frozen=True, eq=False)
class PIdentity:
    """An optimised strategy: Θ (p × n, non-negative) and its error trace tr(WᵀW (AᵀA)⁻¹)."""

    theta: np.ndarray
    trace: float

    @property
    def scaling(self) -> np.ndarray:
        """d = 1 + 1ᵀΘ: column j of [I; Θ] is divided by d_j so that it has L1 norm 1."""
        return 1.0 + self.theta.sum(axis=0)

    def column_norms(self) -> np.ndarray:
        """Column L1 norms of A = [I; Θ] D⁻¹ (all 1 by construction)."""
        return (1.0 + np.abs(self.theta).sum(axis=0)) / self.scaling

    def least_squares(self, y: np.ndarray) -> np.ndarray:
        """(AᵀA)⁻¹Aᵀy = D (I + ΘᵀΘ)⁻¹ (y_I + Θᵀ y_Θ), via Woodbury in O(pn)."""
        theta = self.theta
        n = theta.shape[1]
        v = y[:n] + theta.T @ y[n:]
        inner = np.eye(theta.shape[0]) + theta @ theta.T
        v = v - theta.T @ scipy.linalg.solve(inner, theta @ v, assume_a="pos")
        return self.scaling * v


def _objective(flat: np.ndarray, p: int, workload: Workload, gram_diag: np.ndarray) -> tuple[float, np.ndarray]:
    """tr(X B) and its gradient, X = D G D, B = (I + ΘᵀΘ)⁻¹ (derivation in the module docstring).

    With M = (I + ΘΘᵀ)⁻¹ and Θ̃ = MΘ: B = I − ΘᵀΘ̃, so tr(XB) = tr(X) − Σ Θ∘(Θ̃X). One Gram product
    (Θ̃X, O(pn) for ranges) and four O(p²n) matrix products per evaluation.
    """
    n = gram_diag.size
    theta = flat.reshape(p, n)
    d = 1.0 + theta.sum(axis=0)
    m_inv = np.linalg.inv(np.eye(p) + theta @ theta.T)    # M (p × p): explicit, a p × n solve costs 8× more
    m_theta = m_inv @ theta                                # Θ̃ = MΘ
    g_z = gram_rows(workload, m_theta * d)                # Θ̃ D G
    y = g_z * d                                            # Ỹ = Θ̃ X
    theta_y = np.sum(theta * g_z, axis=0)                 # Σ_a θ_a ∘ (Θ̃ D G)_a
    value = float(gram_diag @ d**2 - theta_y @ d)          # tr(X) − Σ Θ∘Ỹ
    # ∂/∂Θ through B: −2 M Θ X B = −2 (Ỹ − (ỸΘᵀ) Θ̃)
    grad = -2.0 * (y - (y @ theta.T) @ m_theta)
    # ∂/∂Θ through d (d_j = 1 + Σ_k Θ_kj): 2 (G∘B) d = 2 (diag(G)∘d − Σ_a θ_a ∘ G((MΘ)_a ∘ d))
    grad += 2.0 * (gram_diag * d - theta_y)
    return value, grad.ravel()


def _block_start(p: int, n: int) -> np.ndarray:
    """Θ with row k summing block k of n/p consecutive cells: a two-level hierarchy, a good first start."""
    theta = np.zeros((p, n))
    theta[np.arange(n) * p // n, np.arange(n)] = 1.0
    return theta.ravel()


_STRATEGIES: dict[object, PIdentity] = {}


def optimise_strategy(workload: Workload, p: int, restarts: int, seed: int) -> PIdentity:
    """OPT0: minimise tr(WᵀW (AᵀA)⁻¹) over Θ ≥ 0 by L-BFGS-B; cached per (workload content, settings).

    The first start is the two-level block hierarchy, the others are uniform random (HDMM's start);
    the best result is kept. Data-independent (no privacy cost): the starts come from a seeded
    generator so the strategy, and hence ``expected_mse``, is reproducible.
    """
    n = workload.shape[1]
    if n > MAX_CELLS:
        raise ValueError(f"mm-opt optimises strategies for at most {MAX_CELLS} cells, got n={n}; "
                         "use hb or privelet for larger domains")
    return remember(_STRATEGIES, (workload_key(workload), p, restarts, seed),
                    lambda: _single_threaded(_optimise, workload, p, restarts, seed))


def _single_threaded(function, *args):
    # L-BFGS-B's vector steps call BLAS on p·n-long vectors; threaded OpenBLAS spins against any other
    # load and cost 10× the CPU at n = 4096 (33 s vs 2.8 s measured with two threads on 2 cores)
    with threadpool_limits(limits=1, user_api="blas"):
        return function(*args)


def _optimise(workload: Workload, p: int, restarts: int, seed: int) -> PIdentity:
    n = workload.shape[1]
    gram_diag = workload.column_norms(2) ** 2
    generator = np.random.default_rng(seed)
    best: PIdentity | None = None
    # Small domains get SMALL_RESTARTS starts at least: they cost under 2 s there, and at n = 256 (prefix) two
    # starts stopped 0.4 % above HDMM's OPT0 where four reach 0.3 % below it (bench/bench_mmopt.py).
    for attempt in range(max(restarts, SMALL_RESTARTS) if n <= SMALL_CELLS else restarts):
        start = _block_start(p, n) if attempt == 0 else generator.random(p * n)
        iterations = MAX_ITERATIONS if n <= LARGE_CELLS else LARGE_ITERATIONS
        result = scipy.optimize.minimize(_objective, start, args=(p, workload, gram_diag), jac=True,
                                         method="L-BFGS-B", bounds=[(0.0, None)] * (p * n),
                                         options={"maxiter": iterations})
        candidate = PIdentity(result.x.reshape(p, n), float(result.fun))
        if best is None or candidate.trace < best.trace:
            best = candidate
    return best  # type: ignore[return-value]  # at least one start ran


@dataclass(frozen=True)
class MatrixMechanism:
    """Matrix mechanism with an HDMM OPT0 p-Identity strategy, least squares, exact ``expected_mse``.

    Args:
        p: rows of Θ; "auto" = n // 16 as in HDMM for 1-D workloads (at most 128), 32 above 2048 cells.
        restarts: starts of the optimiser, the best is kept: the block hierarchy first, then uniform
            random starts (HDMM's). At n = 2048 the random start won on all-range (9.09 vs 9.89). At most
            512 cells the optimiser makes at least 4 starts (cheap there).
        seed: seeds the starts (the strategy is data-independent and costs no budget).
    """

    summary: ClassVar[str] = "Matrix mechanism: a measurement strategy optimised for your workload (HDMM's OPT0)."

    p: int | str = "auto"
    restarts: int = 2
    seed: int = 0
    name: str = "mm-opt"
    data_dependent: bool = False

    def __post_init__(self) -> None:
        p = int(self.p) if isinstance(self.p, str) and self.p.strip().isdigit() else self.p
        if not (p == "auto" or (isinstance(p, int | np.integer) and not isinstance(p, bool) and p >= 1)):
            raise ValueError(f"p must be 'auto' or an integer >= 1, got {self.p!r}")
        object.__setattr__(self, "p", p)
        if isinstance(self.restarts, bool) or not isinstance(self.restarts, int | np.integer) or self.restarts < 1:
            raise ValueError(f"restarts must be an integer >= 1, got {self.restarts!r}")

    def strategy(self, workload: Workload) -> PIdentity:
        """The optimised strategy for this workload (cached per workload and settings)."""
        n = workload.shape[1]
        cap = MAX_P if n <= LARGE_CELLS else LARGE_P
        p = min(cap, max(1, n // 16)) if self.p == "auto" else int(self.p)
        return optimise_strategy(workload, p, int(self.restarts), int(self.seed))

    def run(self, x: np.ndarray, workload: Workload, epsilon: float, rng: np.random.Generator) -> Release:
        x, epsilon = check_inputs(x, workload, epsilon)
        strategy = self.strategy(workload)
        theta, d = strategy.theta, strategy.scaling
        scale = 1.0 / epsilon  # Δ_A = 1
        scaled = x / d
        measured = np.concatenate([scaled, theta @ scaled])
        noisy = add_laplace(rng, measured, scale)
        estimate = strategy.least_squares(noisy)
        loss = laplace_privacy_loss([(strategy.column_norms(), scale)])
        params = {"p": theta.shape[0], "restarts": self.restarts, "noise_scale": scale}
        return Release(self.name, epsilon, loss, workload.matvec(estimate), estimate, params)

    def expected_mse(self, workload: Workload, epsilon: float) -> float:
        """2Δ_A²·tr(WᵀW (AᵀA)⁻¹)/(m ε²) with Δ_A = 1."""
        epsilon = check_epsilon(epsilon)
        return 2.0 * self.strategy(workload).trace / (workload.shape[0] * epsilon**2)
