"""The matrix mechanism with a workload-optimised p-Identity strategy (McKenna et al., HDMM, PVLDB 2018, OPT0).

Strategy A = [I; Θ]·D⁻¹ with Θ ≥ 0 (p × n) and D = diag(1 + 1ᵀΘ), so every column of A has L1 norm 1
(Δ_A = 1). The release is y = A x + Lap(1/ε)^(n+p), answered by least squares x̂ = (AᵀA)⁻¹Aᵀy, with
per-query MSE 2Δ_A²·tr(WᵀW (AᵀA)⁻¹)/(m ε²) (the matrix mechanism, Li et al., PODS 2010). Θ minimises that trace by
projected L-BFGS
from one uniform random start (scaled down above MID_CELLS), stopped at a relative tolerance as HDMM's OPT0 is.

The objective needs only WᵀW applied to p vectors (``gram_rows``: O(n) each for prefix and all-range),
and (AᵀA)⁻¹ = D (I + ΘᵀΘ)⁻¹ D with (I + ΘᵀΘ)⁻¹ = I − Θᵀ(I + ΘΘᵀ)⁻¹Θ (Woodbury), so an evaluation with
its gradient costs O(p²n) instead of HDMM's dense O(n³) or O(pn²).

>>> import numpy as np
>>> from dplens.core.queries.workloads import Prefix
>>> mech = MatrixMechanism()
>>> round(mech.expected_mse(Prefix(16), 1.0) / mech.expected_mse(Prefix(16), 2.0), 6)
4.0
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import scipy.linalg
from scipy.linalg.blas import daxpy, ddot
from threadpoolctl import threadpool_limits

from dplens.core.mechanisms.cache import StrategyCache
from dplens.core.mechanisms.contract import Range, Release, check_epsilon, setting
from dplens.core.mechanisms.cost_model import OVERHEAD_SECONDS, Cost
from dplens.core.mechanisms.gram import gram_rows
from dplens.core.mechanisms.greedy_h import workload_key
from dplens.core.mechanisms.measurement import (
    LaplaceMeasurement,
    MeasuredPlan,
    Measurement,
    Reconstruction,
    laplace_record,
    pure_epsilon,
    stated_noise,
)
from dplens.core.privacy.definitions import PureDP
from dplens.core.queries.workloads import Workload, separable_gram
from dplens.core.validate import integer

MAX_CELLS = 16384  # largest domain mm-opt optimises for (implicit operators, O(p²n) per iteration; bench_mmopt.py)
SMALL_CELLS = 512     # at most this many cells: the tighter SMALL_TOLERANCE (one start costs under 0.5 s there)
MID_CELLS = 1024      # above this many cells: a scaled start (START_MEAN) and, up to LARGE_CELLS, MID_TOLERANCE
MAX_ITERATIONS = 1000  # projected L-BFGS iterations per start up to LARGE_CELLS (the tolerance stops it first) …
LARGE_ITERATIONS = 400  # … and above it, where an iteration costs O(p²n) and time is the target (at 4096 cells
# 400 iterations ended 0.7 % above p = n/16 run to its stop; at 16,384 they take about 22 s: bench_mmopt.py)
TOLERANCE = 1e-4  # stop when the trace fell by less than this fraction per iteration over the last WINDOW ones …
WINDOW = 5        # … (HDMM stops at one iteration's relative decrease below 1e-4, McKenna et al. 2018, Sec. 5)
SMALL_TOLERANCE = 1e-6  # at 512 cells 1e-4 stopped 0.2 % above HDMM's OPT0 even with the best of 4 starts
MID_TOLERANCE = 2e-5  # 1024 < n ≤ 2048: 1e-4 over 5 stopped 0.3 % above HDMM's OPT0 at n = 2048; 2e-5 over …
MID_WINDOW = 10       # … 10 iterations ended 0.25-0.7 % below it on three seeds (bench_mmopt.py)
START_MEAN = 6.4  # above MID_CELLS Θ starts uniform on [0, 2·START_MEAN/p): column sums 1ᵀΘ ≈ 6.4 instead of
# p/2 (the optimum's are 1-3); at n = 2048 this reached HDMM's error in 240-400 evaluations instead of 310-600
MEMORY = 5        # L-BFGS correction pairs: 10 cost 1 ms more per iteration at n = 1024 and converged no better
MAX_P = 96        # rows of Θ for p="auto": n/16 as in HDMM up to this cap (at n = 2048 an evaluation with p = 96
# costs 25 % less than with HDMM's 128 and reached HDMM's error sooner; p = 80 stalled at HDMM's error) …
LARGE_CELLS = 2048  # … and above this many cells at most √(LARGE_WORK/n) rows, to bound an iteration's O(p²n) …
LARGE_WORK = 2**26  # … (p = 128 at 4096 cells, 90 at 8192, 64 at 16,384; p = 64 at 4096 ended 5 % above
LARGE_P = 64        # p = n/16), but at least LARGE_P
COMPILED_ENTRIES = 2**17  # Θ with at least this many entries (p·n) takes the compiled passes (matrix_kernels): the
# same floats, but loading numba and its cached kernels costs a process about 0.4 s CPU once, more than they save
# below about 2048 cells (bench_mmopt.py --before)


@dataclass(frozen=True)
class Settings:
    """How one start of the optimiser runs: its iteration cap, its stop (relative decrease ``tolerance`` per
    iteration over ``window`` iterations) and its start, uniform on [0, ``start``)."""

    iterations: int
    tolerance: float
    window: int
    start: float


def settings(n: int, p: int) -> Settings:
    """The optimiser's settings for n cells and p rows of Θ (bench_mmopt.py forces them by size)."""
    start = 1.0 if n <= MID_CELLS else min(1.0, 2.0 * START_MEAN / p)
    if n <= SMALL_CELLS:
        return Settings(MAX_ITERATIONS, SMALL_TOLERANCE, WINDOW, start)
    if n <= MID_CELLS:
        return Settings(MAX_ITERATIONS, TOLERANCE, WINDOW, start)
    if n <= LARGE_CELLS:
        return Settings(MAX_ITERATIONS, MID_TOLERANCE, MID_WINDOW, start)
    return Settings(LARGE_ITERATIONS, MID_TOLERANCE, MID_WINDOW, start)


def auto_p(n: int, large: bool | None = None) -> int:
    """Rows of Θ for p="auto": n // 16 as in HDMM, at most MAX_P up to LARGE_CELLS cells; above them (or with
    ``large``) at most √(LARGE_WORK / n) and at least LARGE_P, since an iteration costs O(p²n)."""
    large = n > LARGE_CELLS if large is None else large
    cap = max(LARGE_P, math.isqrt(LARGE_WORK // n)) if large else MAX_P
    return min(cap, max(1, n // 16))


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
    g_z = gram_rows(workload, m_theta * d)                 # Θ̃ D G
    y = g_z * d                                            # Ỹ = Θ̃ X
    g_z *= theta
    theta_y = g_z.sum(axis=0)                              # Σ_a θ_a ∘ (Θ̃ D G)_a
    value = float(gram_diag @ d**2 - theta_y @ d)          # tr(X) − Σ Θ∘Ỹ
    # ∂/∂Θ through B: −2 M Θ X B = −2 (Ỹ − (ỸΘᵀ) Θ̃); through d (d_j = 1 + Σ_k Θ_kj):
    # 2 (G∘B) d = 2 (diag(G)∘d − Σ_a θ_a ∘ G((MΘ)_a ∘ d))
    grad = (y @ theta.T) @ m_theta
    grad -= y
    grad += gram_diag * d - theta_y
    grad *= 2.0
    return value, grad.ravel()


class _SeparableObjective:
    """``_objective`` for a workload whose Gram is separable, (WᵀW)_ij = left[min(i, j)] · right[max(i, j)]
    (prefix, all-range): the same operations in the same order, bit for bit, with the Gram rows, Ỹ, Σ Θ∘Ỹ and the
    gradient's elementwise steps fused into two compiled passes (``matrix_kernels``) and Θ̃ and Ỹ in buffers
    reused across evaluations. The four p × p × n products stay with BLAS."""

    def __init__(self, p: int, gram_diag: np.ndarray, left: np.ndarray, right: np.ndarray) -> None:
        # compiled on first use (numba imports in 0.5 s)
        from dplens.core.mechanisms.matrix_kernels import finish_gradient, separable_gram_terms

        n = gram_diag.size
        self._gram_terms, self._finish_gradient = separable_gram_terms, finish_gradient
        self.p, self.gram_diag = p, gram_diag
        self.left, self.right = np.ascontiguousarray(left, dtype=float), np.ascontiguousarray(right, dtype=float)
        self.m_theta, self.y = np.empty((p, n)), np.empty((p, n))
        self.theta_y, self.weighted = np.empty(n), np.empty(n)

    def __call__(self, flat: np.ndarray) -> tuple[float, np.ndarray]:
        theta = flat.reshape(self.p, -1)
        d = 1.0 + theta.sum(axis=0)
        m_inv = np.linalg.inv(np.eye(self.p) + theta @ theta.T)
        m_theta = np.matmul(m_inv, theta, out=self.m_theta)
        y, theta_y = self.y, self.theta_y
        self._gram_terms(m_theta, theta, d, self.left, self.right, y, theta_y, self.weighted)
        value = float(self.gram_diag @ d**2 - theta_y @ d)
        grad = (y @ theta.T) @ m_theta
        self._finish_gradient(grad, y, self.gram_diag * d - theta_y)
        return value, grad.ravel()


def objective_function(workload: Workload, p: int):
    """flat Θ ↦ (tr(WᵀW (AᵀA)⁻¹), gradient) for ``workload``: compiled passes when its Gram is separable (prefix,
    all-range) and Θ has at least COMPILED_ENTRIES entries (same values bit for bit), else ``_objective`` with the
    workload's ``gram_rows``."""
    gram_diag = workload.column_norms(2) ** 2
    factors = separable_gram(workload) if p * gram_diag.size >= COMPILED_ENTRIES else None
    if factors is not None and gram_diag.size >= 2:  # one column: NumPy sums Θ's column pairwise, not in order
        return _SeparableObjective(p, gram_diag, *factors)
    return lambda flat: _objective(flat, p, workload, gram_diag)


def _projected_lbfgs(function, x: np.ndarray, iterations: int, tolerance: float,
                     window: int | None = None) -> tuple[np.ndarray, float]:
    """Minimise ``function`` (value, gradient) over x ≥ 0 by L-BFGS with projection onto the bound.

    Coordinates at the bound whose gradient points outwards are held fixed for the step (the active
    set of a projected quasi-Newton method, Kim, Sra and Dhillon 2010, Sec. 3); the step is projected
    onto x ≥ 0 and backtracked until the Armijo condition holds along the projected path. This needs
    O(MEMORY·pn) vector work per iteration where scipy's L-BFGS-B spent 3 ms per iteration at
    n = 1024 in its bounded bookkeeping (cauchy point, subspace minimisation). Stops when the value fell
    by less than ``tolerance`` (relative) per iteration over the last ``window`` iterations (WINDOW).
    The dot products and updates are BLAS's; the elementwise steps NumPy's or, from COMPILED_ENTRIES coordinates on,
    the same operations compiled (``_CompiledSteps``): the iterates are the same bit for bit.
    """
    window = WINDOW if window is None else window
    size = x.size
    x = np.maximum(x, 0.0)
    value, grad = function(x)
    s_pairs, y_pairs = np.empty((MEMORY, size)), np.empty((MEMORY, size))
    rho, alpha, y_norms = np.empty(MEMORY), np.empty(MEMORY), np.empty(MEMORY)
    steps = _CompiledSteps(size) if size >= COMPILED_ENTRIES else _VectorSteps()
    stored, head = 0, 0
    history = [value]
    for _ in range(iterations):
        free, q = steps.masked_gradient(x, grad)  # free = (x > 0) | (grad ≤ 0); q = grad · free
        order = [(head - 1 - i) % MEMORY for i in range(stored)]
        for i in order:  # the two-loop recursion (Nocedal and Wright 2006, Alg. 7.4)
            alpha[i] = rho[i] * ddot(s_pairs[i], q)
            q = daxpy(y_pairs[i], q, a=-alpha[i])
        q *= 1.0 / (rho[order[0]] * y_norms[order[0]]) if stored else (
            0.1 / max(np.abs(grad).max(), 1e-300))
        for i in reversed(order):
            q = daxpy(s_pairs[i], q, a=alpha[i] - rho[i] * ddot(y_pairs[i], q))
        q *= free
        if ddot(grad, q) <= 0.0:  # not a descent direction: restart from the scaled gradient
            q, stored = grad * free * (0.1 / max(np.abs(grad).max(), 1e-300)), 0
        step, grad_x = 1.0, ddot(grad, x)
        while True:
            trial = steps.projected_step(x, q, step)  # max(x − step · q, 0)
            trial_value, trial_grad = function(trial)
            if trial_value <= value + 1e-4 * (ddot(grad, trial) - grad_x):
                break
            step *= 0.5
            if step < 1e-10:
                return x, value
        s, y = s_pairs[head], y_pairs[head]
        steps.differences(trial, x, trial_grad, grad, s, y)  # s = trial − x, y = trial_grad − grad
        curvature, y_norms[head] = ddot(s, y), ddot(y, y)
        if curvature > 1e-12 * y_norms[head]:
            rho[head] = 1.0 / curvature
            head, stored = (head + 1) % MEMORY, min(stored + 1, MEMORY)
        x, value, grad = trial, trial_value, trial_grad
        history.append(value)
        if len(history) > window and history[-1 - window] - value <= tolerance * window * value:
            break
    return x, value


class _VectorSteps:
    """The projected L-BFGS's elementwise steps in NumPy, fresh arrays each time (below COMPILED_ENTRIES)."""

    def masked_gradient(self, x: np.ndarray, grad: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        free = (x > 0.0) | (grad <= 0.0)
        return free, grad * free

    def projected_step(self, x: np.ndarray, direction: np.ndarray, step: float) -> np.ndarray:
        trial = np.subtract(x, direction) if step == 1.0 else np.subtract(x, step * direction)
        return np.maximum(trial, 0.0, out=trial)

    def differences(self, trial: np.ndarray, x: np.ndarray, trial_grad: np.ndarray, grad: np.ndarray,
                    s: np.ndarray, y: np.ndarray) -> None:
        np.subtract(trial, x, out=s)
        np.subtract(trial_grad, grad, out=y)


class _CompiledSteps(_VectorSteps):
    """The same steps as compiled single passes (``matrix_kernels``, bit for bit) into reused buffers: the mask, the
    direction, and two iterates, a trial going to whichever does not hold x (fresh 8 MB arrays per step at 16,384
    cells cost page faults and cache)."""

    def __init__(self, size: int) -> None:
        # compiled on first use (numba imports in 0.5 s)
        from dplens.core.mechanisms.matrix_kernels import differences, masked_gradient, projected_step

        self._masked, self._projected, self._differences = masked_gradient, projected_step, differences
        self.free, self.direction = np.empty(size, dtype=bool), np.empty(size)
        self.iterates = (np.empty(size), np.empty(size))

    def masked_gradient(self, x, grad):
        self._masked(x, grad, self.free, self.direction)
        return self.free, self.direction

    def projected_step(self, x, direction, step):
        trial = self.iterates[0] if x is not self.iterates[0] else self.iterates[1]
        self._projected(x, direction, step, trial)
        return trial

    def differences(self, trial, x, trial_grad, grad, s, y):
        self._differences(trial, x, trial_grad, grad, s, y)


_STRATEGIES = StrategyCache("mm-opt strategies", limit=16)


def optimise_strategy(workload: Workload, p: int, restarts: int, seed: int) -> PIdentity:
    """OPT0: minimise tr(WᵀW (AᵀA)⁻¹) over Θ ≥ 0; cached per (workload content, settings).

    Every start is uniform random on [0, 1) as in HDMM; the best result is kept. Data-independent
    (no privacy cost): the starts come from a seeded generator so the strategy, and hence
    ``expected_mse``, is reproducible.
    """
    n = workload.shape[1]
    if n > MAX_CELLS:
        raise ValueError(f"mm-opt optimises strategies for at most {MAX_CELLS} cells, got n={n}; "
                         "use hb or privelet for larger domains")
    return _STRATEGIES.get_or_compute((workload_key(workload), p, restarts, seed),
                                      lambda: single_threaded(optimise_p_identity, workload, p, restarts, seed))


def single_threaded(function, *args):
    """``function(*args)`` with BLAS on one thread.

    >>> single_threaded(sum, [1, 2])
    3
    """
    # the optimiser's vector steps call BLAS on p·n-long vectors; threaded OpenBLAS spins against any other
    # load and cost 10× the CPU at n = 4096 (33 s vs 2.8 s measured with two threads on 2 cores)
    with threadpool_limits(limits=1, user_api="blas"):
        return function(*args)


def optimise_p_identity(workload: Workload, p: int, restarts: int, seed: int) -> PIdentity:
    """The p-Identity strategy optimised for ``workload`` (uncached; ``MatrixMechanism.strategy`` caches it)."""
    n = workload.shape[1]
    function = objective_function(workload, p)
    generator = np.random.default_rng(seed)
    setting = settings(n, p)
    best: PIdentity | None = None
    for _ in range(restarts):
        start = generator.random(p * n)
        if setting.start != 1.0:
            start *= setting.start
        theta, trace = _projected_lbfgs(function, start, setting.iterations, setting.tolerance, setting.window)
        if best is None or trace < best.trace:
            best = PIdentity(theta.reshape(p, n), float(trace))
    return best  # type: ignore[return-value]  # at least one start ran


@dataclass(frozen=True)
class MatrixMechanism(MeasuredPlan):
    """Matrix mechanism with an HDMM OPT0 p-Identity strategy, least squares, exact ``expected_mse``.

    Args:
        p: rows of Θ; "auto" = n // 16 as in HDMM for 1-D workloads, at most MAX_P = 96 up to 2048 cells and
            √(LARGE_WORK / n) above (``auto_p``).
        restarts: uniform random starts of the optimiser (HDMM's start), the best is kept.
        seed: seeds the starts (the strategy is data-independent and costs no budget).
    """

    summary: ClassVar[str] = "Matrix mechanism: a measurement strategy optimised for your workload (HDMM's OPT0)."
    STRATEGY_CACHES: ClassVar[tuple[StrategyCache, ...]] = (_STRATEGIES,)

    p: int | str = setting("auto", Range(1, 512, integer=True, choices=("auto",)))
    restarts: int = setting(1, Range(1, 20, integer=True))
    seed: int = setting(0, Range(0, 2**32 - 1, integer=True))
    name: str = "mm-opt"
    data_dependent: bool = False

    def __post_init__(self) -> None:
        p = int(self.p) if isinstance(self.p, str) and self.p.strip().isdigit() else self.p
        if not (p == "auto" or (isinstance(p, int | np.integer) and not isinstance(p, bool) and p >= 1)):
            raise ValueError(f"p must be 'auto' or an integer >= 1, got {self.p!r}")
        object.__setattr__(self, "p", p)
        integer("restarts", self.restarts)

    def strategy(self, workload: Workload) -> PIdentity:
        """The optimised strategy for this workload (cached per workload and settings)."""
        p = auto_p(workload.shape[1]) if self.p == "auto" else int(self.p)
        return optimise_strategy(workload, p, int(self.restarts), int(self.seed))

    def cost(self, workload: Workload) -> Cost:
        """The optimisation: restarts × iterations to the stop × four p × p × n products and O(pn) vector work."""
        n = workload.shape[1]
        p = auto_p(n) if self.p == "auto" else int(self.p)
        restarts = int(self.restarts)
        # projected L-BFGS iterations per start until its stop (bench_mmopt.py, one BLAS thread): about 500 at the
        # 1e-6 stop up to 512 cells, 200 at 1e-4 up to 1024, 600 at 2e-5 up to 2048, the iteration cap above
        typical = 500 if n <= SMALL_CELLS else 200 if n <= MID_CELLS else 600
        iterations = min(settings(n, p).iterations, typical)
        # an iteration: four p × p × n products, O(pn) Gram and L-BFGS vector work, 0.1 ms of Python; measured
        # 0.06-0.08 s at n = 256, 0.6-1 s at 1024, 5-8 s at 2048 (p = 96), 12 s at 4096 (p = 128), 13-22 s at 16,384
        seconds = restarts * iterations * (1e-4 + n * p * (3.5e-8 + 3e-10 * p))
        return Cost(OVERHEAD_SECONDS + seconds, 8.0 * p * n * 40 + 8.0 * 4 * n,
                    f"p={p} × restarts={restarts} over {n:,} cells (mm-opt optimises a p × n strategy)")

    def measurement(self, workload: Workload, epsilon: float) -> LaplaceMeasurement:
        """Lap(1/ε) on every strategy answer: Δ_A = 1 by construction."""
        return LaplaceMeasurement(1.0 / epsilon)

    def measure(self, x: np.ndarray, workload: Workload, measurement: Measurement, rng: np.random.Generator) -> Release:
        """The strategy's answers A x measured with ``measurement`` (x validated by ``run``), then least squares."""
        strategy = self.strategy(workload)
        theta, d = strategy.theta, strategy.scaling
        scaled = x / d
        measured = np.concatenate([scaled, theta @ scaled])
        noisy = measurement.noisy(measured, rng)
        estimate = strategy.least_squares(noisy)
        records = (laplace_record(f"the p-Identity strategy's {noisy.size} answers (p = {theta.shape[0]})",
                                  [(strategy.column_norms(), measurement)], noisy),)
        loss = pure_epsilon(records)
        params = {"p": theta.shape[0], "restarts": self.restarts, **measurement.params}
        return Release(self.name, PureDP(loss), loss, workload.matvec(estimate), estimate, params, workload=workload,
                       measurements=records)

    def reconstruction(self, release: Release, workload: Workload) -> Reconstruction | None:
        """x̂ − x = L z for the p-Identity strategy (Woodbury, O(pn) per column); None for another release."""
        noise = stated_noise(self, release, workload)
        strategy = self.strategy(workload)
        if noise is None or release.params.get("p") != strategy.theta.shape[0]:
            return None
        return Reconstruction(*noise, workload.shape[1] + strategy.theta.shape[0],
                              lambda v: _pidentity_adjoint(strategy, v))

    def laplace_expected_mse(self, workload: Workload, epsilon: float) -> float:
        """2Δ_A²·tr(WᵀW (AᵀA)⁻¹)/(m ε²) with Δ_A = 1."""
        epsilon = check_epsilon(epsilon)
        return 2.0 * self.strategy(workload).trace / (workload.shape[0] * epsilon**2)


def _pidentity_adjoint(strategy, v: np.ndarray) -> np.ndarray:
    """mm-opt: L = D (I + ΘᵀΘ)⁻¹ [I Θᵀ], so Lᵀ v = [I; Θ] (I + ΘᵀΘ)⁻¹ D v (Woodbury, O(pn) per column)."""
    theta = strategy.theta
    u = strategy.scaling[:, None] * v
    inner = np.eye(theta.shape[0]) + theta @ theta.T
    u = u - theta.T @ scipy.linalg.solve(inner, theta @ u, assume_a="pos")
    return np.concatenate([u, theta @ u], axis=0)
