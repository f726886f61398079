"""LRM, the low-rank mechanism of Yuan, Zhang, Winslett, Xiao, Yang & Hao (VLDB 2012).

Factor the workload W = B·L with L of r rows (r ≈ 1.2·rank(W), the paper's default), minimising
tr(BᵀB) subject to Δ₁(L) ≤ 1 (every column of L in the L1 ball) and ‖W − BL‖_F ≤ γ; release
B(Lx + Lap(Δ₁(L)/ε)^r). The total expected squared error is 2·tr(BᵀB)·Δ₁(L)²/ε² (Yuan et al. §4;
``expected_mse`` reports it per query, /m, like every mechanism here), plus the bias ‖(W − BL)x‖²
when γ > 0.

How it is solved (the paper's augmented Lagrangian, made fast and exact):

* **Row space.** Only WᵀW matters: with W = U S Vᵀ (rank k) an optimal B lies in span(U), so the
  program is solved for W̄ = S Vᵀ (k × n) and B = U C = W·V S⁻¹·C is never built. The release is the
  histogram-space vector x̂ = V S⁻¹ C z, answered as W x̂, so m (e.g. all 32,896 ranges of 256 cells)
  costs nothing.
* **Augmented Lagrangian** (paper §5): ½‖C‖² + ⟨Π, W̄ − CL⟩ + (β/2)‖W̄ − CL‖², multiplier update
  Π += β(W̄ − CL) and a growing β. The paper alternates a closed-form B-step with a few projected
  gradient L-steps; here the B-step, C = A Lᵀ(LLᵀ + I/β)⁻¹ with A = W̄ + Π/β, is taken exactly inside
  every evaluation (variable projection), and L moves by spectral projected gradient (Birgin, Martínez
  & Raydan 2000) with exact per-column projections onto the L1 ball.
* **r ≥ n.** Every full-rank L is then feasible (C = W̄L⁺ exactly), so the penalty is not needed and
  the same solver runs on the exact objective tr(W̄ (LᵀL)⁻¹ W̄ᵀ), started from a p-Identity-like L
  (identity plus random rows; a pure identity start is a stationary point of the L1-constrained program).
* **Exact by default (γ = 0).** The ALM result is projected onto W̄ = CL exactly (L += C⁺(W̄ − CL),
  then C = W̄L⁺, then L rescaled to Δ₁ = 1), so the error formula is exact, not a relaxation. If the
  optimiser stops unconverged, or ends worse than its start, the release says so in ``params["note"]``
  (the original reports "LowRankDP Fail!" on some workloads, e.g. all ranges at n = 256).

>>> import numpy as np
>>> from dplens.core.queries.workloads import Prefix
>>> f = LRM().factorisation(Prefix(8))
>>> f.residual < 1e-9, f.sensitivity <= 1 + 1e-12, f.rank
(True, True, 8)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import scipy.linalg
from threadpoolctl import threadpool_limits

from dplens.core.mechanisms.cache import StrategyCache
from dplens.core.mechanisms.contract import (
    Range,
    Release,
    check_epsilon,
    check_inputs,
    laplace_epsilon,
    setting,
)
from dplens.core.mechanisms.cost_model import OVERHEAD_SECONDS, Cost
from dplens.core.mechanisms.gram import gram_apply
from dplens.core.mechanisms.greedy_h import workload_key
from dplens.core.mechanisms.measurement import laplace_record, measure_laplace, pure_epsilon, stated_at
from dplens.core.privacy.definitions import Privacy, PureDP
from dplens.core.queries.workloads import Workload, dense
from dplens.core.validate import integer, non_negative

MAX_CELLS = 4096          # largest domain LRM factorises (an n × n eigendecomposition) …
MAX_FLOPS = 1e12          # … and the most work it starts (``optimisation_flops``; ~1e11 took 6 s CPU at (200, 1000))
DENSE_SVD_ENTRIES = 2**22  # up to this many entries of W the row space comes from an SVD of W, else from WᵀW
EXACTNESS = 1e-9          # ‖W̄ − CL‖_max ≤ EXACTNESS·max(1, ‖W̄‖_max) after the projection (γ = 0)
CONVERGED = 1e-5          # relative residual ‖W̄ − CL‖_F/‖W̄‖_F at which the ALM counts as converged
ALM_ROUNDS = 8            # outer ALM rounds (multiplier updates) when r < n
FIRST_PENALTIES = (0.1, 0.03, 0.01)  # 1/β of the first round, retried smaller when L's rank collapsed (the
#                           result then cannot be made exact); L has column L1 ≤ 1, so the scale is workload-free …
PENALTY_SHRINK = 0.2      # … and 1/β shrinks by this factor each round (the paper grows β by 5)
EXACT_PENALTY = 1e-10     # the ridge kept when r ≥ n (the objective is then the exact one)
FLOPS_PER_SECOND = 2e10   # single-threaded rate of the optimiser (1.3e11 estimated flops: 6 s CPU at (200, 1000))


def project_columns_l1(v: np.ndarray, radius: float = 1.0) -> np.ndarray:
    """Euclidean projection of every column of v onto the L1 ball of ``radius`` (exact).

    Newton's method on the soft threshold θ of each column, from θ = 0: the excess Σ(|v| − θ)₊ − radius
    is convex, decreasing and piecewise linear in θ, so the iterates rise monotonically and stop exactly
    on the right piece. Compiled with numba (a row per column of v, contiguous); ``_project_numpy`` is
    the vectorised oracle.

    >>> project_columns_l1(np.array([[3.0, 0.2], [1.0, -0.3]])).round(6).tolist()
    [[1.0, 0.2], [0.0, -0.3]]
    """
    kernel = _compiled_projection()
    if kernel is None:
        return _project_numpy(v, radius)
    return kernel(np.ascontiguousarray(v.T, dtype=float), float(radius)).T


_KERNEL: list = []


def _compiled_projection():
    """The numba kernel, compiled on first use (cached on disk); None when numba is unavailable."""
    if not _KERNEL:
        try:
            import numba
        except ImportError:  # pragma: no cover - numba is a pinned dependency
            _KERNEL.append(None)
        else:
            _KERNEL.append(numba.njit(cache=True, nogil=True)(_project_rows))
    return _KERNEL[0]


def _project_rows(rows: np.ndarray, radius: float) -> np.ndarray:  # pragma: no cover - runs compiled
    out = np.empty_like(rows)
    count, length = rows.shape
    for j in range(count):
        total = 0.0
        for i in range(length):
            total += abs(rows[j, i])
        theta = 0.0
        if total > radius:
            for _ in range(length + 1):
                excess, above = -radius, 0
                for i in range(length):
                    a = abs(rows[j, i])
                    if a > theta:
                        excess += a - theta
                        above += 1
                if excess <= 1e-13 * radius:
                    break
                theta += excess / above
        for i in range(length):
            a = abs(rows[j, i]) - theta
            out[j, i] = (a if rows[j, i] >= 0 else -a) if a > 0 else 0.0
    return out


def _project_numpy(v: np.ndarray, radius: float) -> np.ndarray:
    """The vectorised projection (all columns at once; the compiled kernel's oracle)."""
    magnitude = np.abs(v)
    out = v.copy()
    active = np.flatnonzero(magnitude.sum(axis=0) > radius)
    if active.size == 0:
        return out
    mag = magnitude[:, active]
    theta = np.zeros(active.size)
    for _ in range(v.shape[0] + 1):  # at most one step per piece
        above = mag > theta
        excess = np.where(above, mag - theta, 0.0).sum(axis=0) - radius
        if np.all(excess <= 1e-13 * radius):
            break
        theta += np.maximum(excess, 0.0) / np.maximum(above.sum(axis=0), 1)
    out[:, active] = np.sign(v[:, active]) * np.maximum(mag - theta, 0.0)
    return out


def column_l1(matrix: np.ndarray) -> np.ndarray:
    """Per-column L1 norms (Δ₁ is their maximum)."""
    return np.abs(matrix).sum(axis=0)


def row_space(workload: Workload) -> tuple[np.ndarray, np.ndarray]:
    """(W̄, basis): W̄ = S Vᵀ (k × n) with W̄ᵀW̄ = WᵀW, and basis = V S⁻¹ (n × k), so that W·basis = U.

    Small W: a thin SVD of W itself. Large m (e.g. all ranges): the eigendecomposition of WᵀW from
    ``gram_apply`` (closed forms for ranges); singular values below 1e-7·σ_max are then dropped, since
    squaring loses half the digits.
    """
    m, n = workload.shape
    if m * n <= DENSE_SVD_ENTRIES:
        _, s, vt = np.linalg.svd(dense(workload), full_matrices=False)
        keep = s > (s[0] if s.size else 0.0) * max(m, n) * np.finfo(float).eps
        s, v = s[keep], vt[keep].T
    else:
        gram = gram_apply(workload, np.eye(n))
        values, vectors = np.linalg.eigh((gram + gram.T) / 2.0)
        order = np.argsort(values)[::-1]
        values, vectors = values[order], vectors[:, order]
        s = np.sqrt(np.maximum(values, 0.0))
        keep = s > (s[0] if s.size else 0.0) * 1e-7
        s, v = s[keep], vectors[:, keep]
    return s[:, None] * v.T, v / s


class _Objective:
    """The augmented Lagrangian with C eliminated: φ(L) = min_C ½‖C‖² + ‖A − CL‖²/(2δ), δ = 1/β.

    φ(L) = ½ tr(A (LᵀL + δI)⁻¹ Aᵀ), and by the envelope theorem ∇φ = −Cᵀ(A − CL)/δ = −Cᵀ A(LᵀL + δI)⁻¹
    at the optimal C = A(LᵀL + δI)⁻¹Lᵀ = ALᵀ(LLᵀ + δI)⁻¹. The n × n form is used when r ≥ n, the r × r
    form otherwise (the smaller Cholesky).
    """

    def __init__(self, target: np.ndarray, penalty: float):
        self.target = target
        self.penalty = penalty
        self.evaluations = 0

    def __call__(self, strategy: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        self.evaluations += 1
        a, delta = self.target, self.penalty
        r, n = strategy.shape
        if r >= n:
            inner = strategy.T @ strategy
            inner[np.diag_indices(n)] += delta
            factor = scipy.linalg.cho_factor(inner, check_finite=False)
            am = scipy.linalg.cho_solve(factor, a.T, check_finite=False).T   # A (LᵀL + δI)⁻¹
            c = am @ strategy.T
            value = 0.5 * float(np.sum(am * a))
            grad = -(c.T @ am)
        else:
            inner = strategy @ strategy.T
            inner[np.diag_indices(r)] += delta
            factor = scipy.linalg.cho_factor(inner, check_finite=False)
            c = scipy.linalg.cho_solve(factor, strategy @ a.T, check_finite=False).T
            residual = a - c @ strategy
            value = 0.5 * float(np.sum(c * c)) + 0.5 * float(np.sum(residual * residual)) / delta
            grad = -(c.T @ residual) / delta
        return value, grad, c


def _spectral_projected_gradient(objective: _Objective, strategy: np.ndarray, iterations: int,
                                 memory: int = 8) -> tuple[np.ndarray, np.ndarray, int]:
    """Minimise φ over L with every column in the L1 ball: SPG with BB steps and a non-monotone Armijo
    search (Birgin, Martínez & Raydan 2000). Returns (L, C, iterations used)."""
    value, grad, c = objective(strategy)
    recent = [value]
    step = 1e-2 / max(float(np.abs(grad).max()), 1e-300)
    used = 0
    for used in range(1, iterations + 1):  # noqa: B007 (the count is returned)
        direction = project_columns_l1(strategy - step * grad) - strategy
        slope = float(np.sum(grad * direction))
        if not slope < -1e-15 * abs(value):
            break
        reference, shrink = max(recent[-memory:]), 1.0
        while True:
            candidate = strategy + shrink * direction
            new_value, new_grad, new_c = objective(candidate)
            if new_value <= reference + 1e-4 * shrink * slope or shrink < 1e-8:
                break
            shrink *= 0.5
        s, y = candidate - strategy, new_grad - grad
        sy = float(np.sum(s * y))
        step = float(np.sum(s * s)) / sy if sy > 0 else 10.0 * step
        step = min(max(step, 1e-12), 1e12)
        strategy, value, grad, c = candidate, new_value, new_grad, new_c
        recent.append(value)
        if len(recent) > 20 and recent[-21] - value <= 1e-9 * abs(value):
            break  # stalled: less than a 1e-9 relative gain in 20 steps
    return strategy, c, used


def _exact(reduced: np.ndarray, mixing: np.ndarray, strategy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Project (C, L) onto W̄ = CL exactly and rescale to Δ₁(L) = 1 (the γ = 0 polish)."""
    r, n = strategy.shape
    if r < n:  # the smallest change of L that makes CL = W̄ (C has full row rank k ≤ r)
        strategy = strategy + np.linalg.pinv(mixing) @ (reduced - mixing @ strategy)
    mixing = reduced @ np.linalg.pinv(strategy)   # min-norm C given L
    scale = float(column_l1(strategy).max())
    return mixing * scale, strategy / scale


def _svd_factorisation(reduced: np.ndarray, r: int) -> tuple[np.ndarray, np.ndarray]:
    """The exact factorisation W̄ = S·Vᵀ (L = Vᵀ padded with zero rows, scaled to Δ₁ = 1): the last resort."""
    k, n = reduced.shape
    norms = np.linalg.norm(reduced, axis=1)
    strategy = np.zeros((r, n))
    strategy[:k] = reduced / norms[:, None]
    mixing = np.zeros((k, r))
    mixing[np.arange(k), np.arange(k)] = norms
    scale = float(column_l1(strategy).max())
    return mixing * scale, strategy / scale


def _error_trace(reduced: np.ndarray, mixing: np.ndarray, strategy: np.ndarray) -> tuple[float, float]:
    """(tr(CᵀC)·Δ₁(L)², ‖W̄ − CL‖_max): the total error at ε = 1 over 2, and the exactness gap."""
    trace = float(np.sum(mixing * mixing)) * float(column_l1(strategy).max()) ** 2
    return trace, float(np.abs(reduced - mixing @ strategy).max(initial=0.0))


@dataclass(frozen=True, eq=False)
class LowRankFactorisation:
    """W = B·L with B = W·basis·C (never built): L (``strategy``, r × n), C (``mixing``, k × r)."""

    strategy: np.ndarray
    mixing: np.ndarray
    basis: np.ndarray          # V S⁻¹ (n × k): histogram-space image of the row coordinates
    reduced: np.ndarray        # W̄ = S Vᵀ (k × n)
    rank: int                  # k = rank(W)
    sensitivity: float         # Δ₁(L), computed from L
    residual: float            # ‖W − BL‖_F = ‖W̄ − CL‖_F (U has orthonormal columns)
    iterations: int            # projected-gradient iterations used
    converged: bool
    note: str                  # what the optimiser did, stated when it fell short

    @property
    def trace(self) -> float:
        """tr(BᵀB) = ‖C‖_F² (U has orthonormal columns)."""
        return float(np.sum(self.mixing * self.mixing))

    @property
    def exact(self) -> bool:
        """W = BL to EXACTNESS (no bias term)."""
        return self.residual <= EXACTNESS * max(1.0, float(np.abs(self.reduced).max(initial=0.0)))

    def expected_total_mse(self, epsilon: float) -> float:
        """2·tr(BᵀB)·Δ₁(L)²/ε², the total over all queries (Yuan et al. §4), without the γ bias."""
        return 2.0 * self.trace * self.sensitivity**2 / epsilon**2

    def bias_squared(self, x: np.ndarray) -> float:
        """‖(W − BL)x‖², the γ-relaxation's bias on data x (0 when exact)."""
        return float(np.sum(((self.reduced - self.mixing @ self.strategy) @ x) ** 2))


def optimise(workload: Workload, *, rank: int | None = None, rank_ratio: float = 1.2, gamma: float = 0.0,
             iterations: int = 320, seed: int = 0) -> LowRankFactorisation:
    """The LRM factorisation (uncached; ``LRM.factorisation`` caches it). Single-threaded BLAS.

    Raises:
        ValueError: if n > MAX_CELLS.
    """
    n = workload.shape[1]
    if n > MAX_CELLS:
        raise ValueError(f"lrm factorises domains of at most {MAX_CELLS} cells (its work is cubic in n), "
                         f"got n={n}; use mm-opt, hb or privelet")
    work = optimisation_flops(workload, rank_ratio=rank_ratio, iterations=iterations)
    if work > MAX_FLOPS:
        raise ValueError(f"lrm would need ~{work:.1e} floating-point operations for this {workload.shape[0]} × {n} "
                         f"workload (limit {MAX_FLOPS:.0e}, about a minute); use fewer cells or queries, or mm-opt")
    with threadpool_limits(limits=1, user_api="blas"):  # small BLAS calls: threads only spin (see matrix.py)
        return _optimise(workload, rank, rank_ratio, gamma, iterations, seed)


def _start(r: int, n: int, seed: int) -> np.ndarray:
    """A seeded start scaled to Δ₁ = 1: identity plus U(0,1) rows when r ≥ n (p-Identity), else U(0,1).

    The columns stay inside the ball (only the largest touches it): a start with every column on the sphere
    collapsed L's rank on 64 random ranges. The paper's SVD start converged worse in our trials (tr 2.2–3.8k
    vs 2.0–2.4k on 64 random ranges of 256 cells)."""
    generator = np.random.default_rng(seed)
    start = np.vstack([np.eye(n), generator.random((r - n, n))]) if r >= n else generator.random((r, n))
    return start / column_l1(start).max()


def _optimise(workload: Workload, rank: int | None, rank_ratio: float, gamma: float, iterations: int,
              seed: int) -> LowRankFactorisation:
    reduced, basis = row_space(workload)
    k, n = reduced.shape
    r = int(rank) if rank is not None else max(1, math.ceil(rank_ratio * k))
    if k == 0:  # W = 0: nothing to measure
        return LowRankFactorisation(np.zeros((0, n)), np.zeros((0, 0)), basis, reduced, 0, 0.0, 0.0, 0, True,
                                    "W is zero: nothing is measured")
    if r < k:
        raise ValueError(f"rank must be >= rank(W) = {k} for W = BL to be possible, got {r}")
    norm = float(np.linalg.norm(reduced))
    start = _start(r, n, seed)
    fallback_c, fallback_l = _exact(reduced, reduced @ np.linalg.pinv(start), start)
    if _error_trace(reduced, fallback_c, fallback_l)[1] > EXACTNESS * max(1.0, float(np.abs(reduced).max())):
        fallback_c, fallback_l = _svd_factorisation(reduced, r)  # a degenerate start: W̄ = S·Vᵀ is exact
    tolerance = EXACTNESS * max(1.0, float(np.abs(reduced).max()))
    start_trace = _error_trace(reduced, fallback_c, fallback_l)[0]
    notes: list[str] = []
    used = 0
    for attempt, first_penalty in enumerate(FIRST_PENALTIES if r < n else (EXACT_PENALTY,)):  # noqa: B007
        if r >= n:
            strategy, mixing, steps = _spectral_projected_gradient(_Objective(reduced, EXACT_PENALTY), start,
                                                                   iterations)
        else:
            strategy, mixing, steps = _augmented_lagrangian(reduced, start, first_penalty, iterations, gamma)
        used += steps
        relative = float(np.linalg.norm(reduced - mixing @ strategy)) / max(norm, 1e-300)
        converged = relative <= max(CONVERGED, gamma / max(norm, 1e-300))
        if not converged:
            notes.append(f"the optimiser stopped at relative residual {relative:.2g} after {steps} iterations "
                         f"(1/β from {first_penalty:g}; not converged)")
        if gamma > 0.0:
            scale = float(column_l1(strategy).max())
            mixing, strategy = mixing * scale, strategy / scale
            break
        mixing, strategy = _exact(reduced, mixing, strategy)
        trace, gap = _error_trace(reduced, mixing, strategy)
        if gap <= tolerance and trace <= start_trace:
            if not converged:
                notes.append("made exact by projection (W = BL holds; the error formula is exact)")
            break
        notes.append(f"its exact projection missed W by {gap:.2g}" if gap > tolerance
                     else f"it ended {trace / start_trace - 1:+.0%} worse than its start")
    else:
        notes.append("fell back to the start factorisation")
        mixing, strategy = fallback_c, fallback_l
    if attempt and "fell back" not in notes[-1]:
        notes.append(f"retried with 1/β from {first_penalty:g}")
    residual = float(np.linalg.norm(reduced - mixing @ strategy))
    for array in (strategy, mixing):
        array.setflags(write=False)
    return LowRankFactorisation(strategy, mixing, basis, reduced, k, float(column_l1(strategy).max()), residual,
                                used, converged and not attempt, "; ".join(notes) or "converged")


def _augmented_lagrangian(reduced: np.ndarray, start: np.ndarray, first_penalty: float, iterations: int,
                          gamma: float) -> tuple[np.ndarray, np.ndarray, int]:
    """The paper's ALM rounds (r < n): minimise the Lagrangian over (C, L), then Π += β(W̄ − CL), β ×= 5."""
    multiplier, penalty, used = np.zeros_like(reduced), first_penalty, 0
    strategy, norm = start, float(np.linalg.norm(reduced))
    per_round = max(1, iterations // ALM_ROUNDS)
    for _ in range(ALM_ROUNDS):
        strategy, mixing, steps = _spectral_projected_gradient(
            _Objective(reduced + penalty * multiplier, penalty), strategy, per_round)
        used += steps
        gap = reduced - mixing @ strategy
        if np.linalg.norm(gap) <= max(gamma, CONVERGED * norm):
            break
        multiplier += gap / penalty          # Π += β(W̄ − CL)
        penalty *= PENALTY_SHRINK            # β grows
    return strategy, mixing, used


def optimisation_flops(workload: Workload, *, rank_ratio: float = 1.2, iterations: int = 320) -> float:
    """Rough floating-point work of ``optimise``: the row space (O(m·n·min(m, n)) or O(n³)) plus
    ~2.5 evaluations per iteration of O(r·n·(r + 2k)) each with k = min(m, n) (cubic in n when k ≈ n).

    >>> from dplens.core.queries.workloads import Prefix
    >>> optimisation_flops(Prefix(100)) > optimisation_flops(Prefix(50)) * 7
    True
    """
    m, n = workload.shape
    k = min(m, n)
    r = math.ceil(rank_ratio * k)
    space = m * n * k if m * n <= DENSE_SVD_ENTRIES else 10.0 * n**3
    return float(space + 2.5 * iterations * (min(r, n) ** 3 / 3 + r * n * (min(r, n) + 2 * k)))


_FACTORISATIONS = StrategyCache("lrm factorisations", limit=16)


@dataclass(frozen=True)
class LRM:
    """Low-rank mechanism (Yuan et al. 2012): x̂ = V S⁻¹ C (Lx + Lap(Δ₁(L)/ε)^r), answers W x̂ = B(Lx + noise).

    Args:
        rank: r, the rows of L; None uses ceil(rank_ratio · rank(W)).
        rank_ratio: the paper's 1.2.
        gamma: the paper's relaxation ‖W − BL‖_F ≤ γ. 0 (default) makes W = BL exact; γ > 0 stops the
            optimiser at that residual and leaves a data-dependent bias, so ``expected_mse`` is then None.
        iterations: projected-gradient iterations (split over ALM_ROUNDS rounds when r < n).
        seed: seeds the start (data-independent; costs no budget).

    >>> from dplens.core.queries.workloads import Identity
    >>> round(LRM().expected_mse(Identity(4), 1.0), 6)
    2.0
    """

    summary: ClassVar[str] = "Low-rank mechanism (Yuan et al.): measures a low-rank factorisation of the workload."
    STRATEGY_CACHES: ClassVar[tuple[StrategyCache, ...]] = (_FACTORISATIONS,)


    rank: int | None = setting(None, Range(1, 10 * MAX_CELLS, integer=True, choices=(None,)))
    rank_ratio: float = setting(1.2, Range(1, 10))
    gamma: float = setting(0.0, Range(0, 1e12))
    iterations: int = setting(320, Range(1, 100_000, integer=True))
    seed: int = setting(0, Range(0, 2**32 - 1, integer=True))
    name: str = "lrm"
    data_dependent: bool = False

    def __post_init__(self) -> None:
        if self.rank is not None and (isinstance(self.rank, bool) or not isinstance(self.rank, int | np.integer)
                                      or self.rank < 1):
            raise ValueError(f"rank must be None or an integer >= 1, got {self.rank!r}")
        if not (isinstance(self.rank_ratio, int | float) and math.isfinite(self.rank_ratio) and self.rank_ratio >= 1):
            raise ValueError("rank_ratio must be a number >= 1 (r = ratio · rank(W) >= rank(W)), got "
                             f"{self.rank_ratio!r}")
        non_negative("gamma", self.gamma)
        integer("iterations", self.iterations)

    def factorisation(self, workload: Workload) -> LowRankFactorisation:
        """W = BL for this workload (data-independent; cached per workload content and settings)."""
        key = (workload_key(workload), self.rank, float(self.rank_ratio), float(self.gamma), int(self.iterations),
               int(self.seed))
        return _FACTORISATIONS.get_or_compute(key, lambda: optimise(
            workload, rank=self.rank, rank_ratio=self.rank_ratio, gamma=self.gamma, iterations=self.iterations,
            seed=self.seed))

    def estimated_flops(self, workload: Workload) -> float:
        """Estimated floating-point work of the factorisation (``optimisation_flops``); cubic in n."""
        return optimisation_flops(workload, rank_ratio=self.rank_ratio, iterations=self.iterations)

    def cost(self, workload: Workload):
        """The first run's seconds and peak bytes (``dplens.core.mechanisms.cost_model.Cost``): the optimisation
        dominates; a workload over MAX_CELLS or MAX_FLOPS is refused at once by ``run``, so its run costs nothing.

        >>> from dplens.core.queries.workloads import Prefix
        >>> LRM().cost(Prefix(256)).seconds > LRM().cost(Prefix(64)).seconds
        True
        """
        m, n = workload.shape
        flops = self.estimated_flops(workload)
        if n > MAX_CELLS or flops > MAX_FLOPS:
            return Cost(OVERHEAD_SECONDS, 8.0 * n, f"nothing: lrm refuses {m:,} × {n:,} at once (~{flops:.0e} flops)")
        k = min(m, n)
        r = self.rank if self.rank is not None else math.ceil(self.rank_ratio * k)
        space = m * n if m * n <= DENSE_SVD_ENTRIES else 3 * n * n
        return Cost(OVERHEAD_SECONDS + flops / FLOPS_PER_SECOND, 8.0 * (2 * space + 8 * r * n + 3 * k * n),
                    f"rank(W) ≈ {k:,} and n = {n:,} cells (lrm's optimisation is cubic in n when rank(W) ≈ n)")

    def run(self, x: np.ndarray, workload: Workload, privacy: Privacy | float, rng: np.random.Generator) -> Release:
        x, epsilon = check_inputs(x, workload, privacy)
        f = self.factorisation(workload)
        scale = f.sensitivity / epsilon
        measured, blocks = measure_laplace(f.strategy @ x, column_l1(f.strategy), scale, rng)  # W = 0: scale 0
        estimate = f.basis @ (f.mixing @ measured)
        records = (laplace_record(f"the {f.strategy.shape[0]} rows of the low-rank strategy L", blocks, measured),)
        loss = pure_epsilon(records)
        params = {"rank_of_w": f.rank, "r": f.strategy.shape[0], "sensitivity": f.sensitivity, "noise_scale": scale,
                  "trace_btb": f.trace, "residual": f.residual, "gamma": self.gamma, "iterations": f.iterations,
                  "converged": f.converged, "note": f.note}
        full_rank = f.rank == workload.shape[1]  # x̂ estimates x only when W has full column rank
        summary = [{"rank(W)": f.rank, "rows of L (r)": f.strategy.shape[0], "Δ₁(L)": f.sensitivity,
                    "tr(BᵀB)": f.trace, "‖W − BL‖_F": f.residual, "optimiser": f.note}]
        release = Release(self.name, PureDP(epsilon), loss, workload.matvec(estimate), estimate if full_rank else None,
                          params, {"factorisation": summary, "strategy_L": f.strategy}, workload=workload,
                          measurements=records)
        return stated_at(release, privacy)

    def expected_mse_on(self, x: np.ndarray, workload: Workload, epsilon: float) -> float:
        """Per-query MSE on data x, for any γ: (2·tr(BᵀB)·Δ₁(L)²/ε² + ‖(W − BL)x‖²)/m (variance plus bias).

        Reads the data, so it is for evaluation (tests, reproductions), never for a release.
        """
        x, epsilon = check_inputs(x, workload, epsilon)
        f = self.factorisation(workload)
        return (f.expected_total_mse(epsilon) + f.bias_squared(x)) / workload.shape[0]

    def expected_mse(self, workload: Workload, privacy: Privacy | float) -> float | None:
        """Per-query 2·tr(BᵀB)·Δ₁(L)²/(m ε²); None when γ > 0 left W ≠ BL (the bias depends on the data)."""
        epsilon = laplace_epsilon(privacy)
        epsilon = check_epsilon(epsilon)
        f = self.factorisation(workload)
        if not f.exact:
            return None
        return f.expected_total_mse(epsilon) / workload.shape[0]
