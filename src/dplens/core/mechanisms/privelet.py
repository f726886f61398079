"""Privelet: Haar wavelet coefficients with weighted Laplace noise (Xiao, Wang, Gehrke, ICDE 2010).

Xiao et al. add Lap(c/(ε·W(h))) to each Haar coefficient h, with weight W(h) = size of the coefficient's
subtree (n for the base coefficient) and generalised sensitivity c = 1 + log₂ n (their ρ; not zCDP's ρ).
Since W(h)·h is the count difference "left half − right half" (and n·h₀ the total), this is the same as
measuring the unnormalised ±1 Haar strategy H (total plus one left−right difference per dyadic block) with
uniform noise Lap(c/ε), where c, the number of coefficients each cell enters, is every column's L1 norm, and
inverting H exactly. That form is used here. In 2-D the strategy is H₁ ⊗ H₂ (Xiao et al.'s standard
decomposition) with c = c₁c₂. Axes whose length is not a power of two are padded with empty cells, which
are dropped after reconstruction.

>>> import numpy as np
>>> from dplens.core.queries.workloads import Identity
>>> Privelet().run(np.ones(4), Identity(4), 1.0, np.random.default_rng(0)).params["noise_scale"]
3.0
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dplens.core.mechanisms.cache import StrategyCache
from dplens.core.mechanisms.contract import Release, check_epsilon, setting
from dplens.core.mechanisms.gram import family_energy, noise_energy
from dplens.core.mechanisms.greedy_h import workload_key
from dplens.core.mechanisms.hierarchical import workload_grid
from dplens.core.mechanisms.measurement import (
    NOISE_RANGE,
    LaplaceMeasurement,
    MeasuredPlan,
    Measurement,
    Reconstruction,
    laplace_record,
    pure_epsilon,
    stated_noise,
)
from dplens.core.privacy.definitions import PureDP
from dplens.core.queries.workloads import Kron, Workload


def padded_length(length: int) -> int:
    return 1 << max(0, int(np.ceil(np.log2(length))))


def haar_forward(v: np.ndarray, axis: int = 0, weight: float = 1.0) -> np.ndarray:
    """Unnormalised Haar transform along ``axis`` (length a power of two).

    Output order: total, then the left−right differences from the coarsest block to the finest.
    With ``weight`` 1/2 each pairwise sum and difference is halved: that is the transpose of
    ``haar_inverse``, which the exact error needs.

    >>> haar_forward(np.array([1.0, 2, 3, 4])).tolist()
    [10.0, -4.0, -1.0, -1.0]
    """
    s = np.moveaxis(v, axis, 0)
    details = []
    while s.shape[0] > 1:
        details.append(weight * (s[0::2] - s[1::2]))
        s = weight * (s[0::2] + s[1::2])
    return np.moveaxis(np.concatenate([s, *details[::-1]], axis=0), 0, axis)


def haar_inverse(c: np.ndarray, axis: int = 0) -> np.ndarray:
    """Inverse of ``haar_forward`` along ``axis``.

    >>> haar_inverse(np.array([10.0, -4, -1, -1])).tolist()
    [1.0, 2.0, 3.0, 4.0]
    """
    c = np.moveaxis(c, axis, 0)
    s, used = c[:1], 1
    while used < c.shape[0]:
        d = c[used:2 * used]
        out = np.empty((2 * used, *c.shape[1:]))
        out[0::2], out[1::2] = (s + d) / 2.0, (s - d) / 2.0
        s, used = out, 2 * used
    return np.moveaxis(s, 0, axis)


def haar_sensitivity(grid: tuple[int, int]) -> float:
    """Coefficients per cell, Π over axes of (1 + log₂ padded length): every cell's column L1 norm in H₁ ⊗ H₂.

    Its square root is the column L2 norm (the coefficients are ±1).

    >>> haar_sensitivity((1, 16)), haar_sensitivity((5, 8))
    (5.0, 16.0)
    """
    return float(np.prod([1 + int(np.log2(padded_length(s))) for s in grid]))


def _reconstruct(coefficients: np.ndarray, grid: tuple[int, int]) -> np.ndarray:
    """Cells (rows·cols × batch) from a padded coefficient block (R·C × batch)."""
    rows, cols = grid
    pr, pc = padded_length(rows), padded_length(cols)
    cube = coefficients.reshape(pr, pc, -1)
    cube = haar_inverse(haar_inverse(cube, axis=0), axis=1)
    return cube[:rows, :cols].reshape(rows * cols, -1)


def reconstruct_transpose(cells: np.ndarray, grid: tuple[int, int]) -> np.ndarray:
    """The transpose of ``_reconstruct``: a padded coefficient block (R·C × batch) from cells (rows·cols × batch)."""
    rows, cols = grid
    cube = np.zeros((padded_length(rows), padded_length(cols), cells.shape[1]))
    cube[:rows, :cols] = cells.reshape(rows, cols, -1)
    return haar_forward(haar_forward(cube, axis=1, weight=0.5), axis=0, weight=0.5).reshape(-1, cells.shape[1])


_ENERGIES = StrategyCache("privelet energies", limit=16)


def _unit_energy(grid: tuple[int, int], workload: Workload) -> float:
    """Σ_k ‖W h_k‖² over the inverse transform's columns, cached per (grid, workload content): in closed form for
    the families :func:`closed_energy` knows, else by pushing noise through the inverse (:func:`_energy`)."""
    def compute() -> float:
        closed = closed_energy(grid, workload)
        return _energy(grid, workload) if closed is None else closed

    return _ENERGIES.get_or_compute((grid, workload_key(workload)), compute)


def _energy(grid: tuple[int, int], workload: Workload) -> float:
    """Σ_k ‖W h_k‖² for any workload, O(n · min(m, N)); the oracle the closed forms are tested against.

    The estimate's error covariance under unit noise is H⁻¹H⁻ᵀ, applied as reconstruct ∘ its transpose.
    """
    coordinates = padded_length(grid[0]) * padded_length(grid[1])
    return noise_energy(workload, lambda noise: _reconstruct(noise, grid), coordinates,
                        lambda v: _reconstruct(reconstruct_transpose(v, grid), grid))


def axis_cell_variance(length: int) -> float:
    """Var(x̂_i − x_i) of every cell of an axis under unit noise on its Haar coefficients.

    Inverting H (Xiao et al., ICDE 2010, Sec. 4) gives cell i the total's coefficient over N (the padded
    length) plus ±1/s times the coefficient of each dyadic block of size s = 2, 4, ..., N holding it: the
    variance is 1/N² + Σ_s 1/s², the same for every cell.

    >>> axis_cell_variance(4)  # 1/16 + 1/16 + 1/4
    0.375
    """
    padded = padded_length(length)
    sizes = 2.0 ** np.arange(1, int(np.log2(padded)) + 1)
    return float(1.0 / padded**2 + np.sum(1.0 / sizes**2))


def axis_prefix_variances(length: int) -> np.ndarray:
    """Var(Σ_{i ≤ j} (x̂_i − x_i)) for every cell j of an axis under unit noise, in O(N log N).

    The prefix holds (j + 1)/N of the total's coefficient and, of each dyadic block of size s, L cells of its
    left half and R of its right: (L − R)/s of its coefficient (Xiao et al., ICDE 2010, Sec. 4). Blocks inside
    or outside the prefix give L = R or nothing; only the block around j at each size counts.

    >>> axis_prefix_variances(2).tolist()  # (1/2)² + (1/2)², then the total's 1
    [0.5, 1.0]
    """
    padded = padded_length(length)
    j = np.arange(length)
    out = ((j + 1.0) / padded) ** 2
    size = 2
    while size <= padded:
        held = j % size + 1  # cells of the prefix in the block of this size holding cell j
        left = np.minimum(held, size // 2)
        out += ((left - (held - left)) / size) ** 2
        size *= 2
    return out


def axis_range_variances(length: int, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Var(Σ_{lo ≤ i ≤ hi} (x̂_i − x_i)) for each range [lo, hi] of an axis under unit noise, in O(log N) per range.

    As for a prefix (``axis_prefix_variances``), the range holds (hi − lo + 1)/N of the total's coefficient and
    (L − R)/s of the coefficient of each dyadic block of size s, with L and R its cells in the block's left and
    right halves (Xiao et al., ICDE 2010, Sec. 4). A block inside the range has L = R and one outside has none, so
    at each size only the blocks holding lo and hi (one block when they share it) count.

    >>> axis_range_variances(4, np.array([0, 1, 0]), np.array([3, 2, 0])).tolist()  # total; 1/4 + two 1/4; a cell
    [1.0, 0.75, 0.375]
    """
    padded = padded_length(length)
    lo, hi = np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64)
    out = ((hi - lo + 1.0) / padded) ** 2
    size = 2
    while size <= padded:
        half = size // 2
        for block, counted in ((lo // size, True), (hi // size, hi // size != lo // size)):
            start = block * size
            left = np.maximum(0, np.minimum(hi, start + half - 1) - np.maximum(lo, start) + 1)
            right = np.maximum(0, np.minimum(hi, start + size - 1) - np.maximum(lo, start + half) + 1)
            out += np.where(counted, ((left - right) / size) ** 2, 0.0)
        size *= 2
    return out


def closed_energy(grid: tuple[int, int], workload: Workload) -> float | None:
    """Σ_k ‖W h_k‖² in closed form (:func:`~dplens.core.mechanisms.gram.family_energy`) for Identity, Total,
    Prefix, AllRange and lists of arbitrary ranges (Ranges, such as random-range: ``axis_range_variances``,
    O(m log n)), Stacks of them, and Krons of two of them on the grid (H⁻¹ = H₁⁻¹ ⊗ H₂⁻¹, so the error
    covariance is Σ₁ ⊗ Σ₂ and the energy of W₁ ⊗ W₂ is the product of the axes' energies). A rectangle
    [r0, r1] × [c0, c1] is the Kron of two ranges, so its variance is the product of the axes' range variances
    (Ranges2D on the grid, O(m log n)). None otherwise (ranges of a 2-D grid's flat cells take the oracle).

    >>> from dplens.core.queries.workloads import AllRange
    >>> bool(np.isclose(closed_energy((1, 10), AllRange(10)), _energy((1, 10), AllRange(10))))
    True
    """
    def kron(workload: Kron) -> float | None:
        if (workload.factors[0].shape[1], workload.factors[1].shape[1]) != grid:
            return None
        energies = [closed_energy((1, length), factor) for factor, length in zip(workload.factors, grid, strict=True)]
        return None if None in energies else float(energies[0] * energies[1])  # type: ignore[operator]

    return family_energy(workload, grid, cells=lambda: np.full(grid[0] * grid[1], axis_cell_variance(grid[0])
                                                               * axis_cell_variance(grid[1])),
                         prefixes=lambda: axis_prefix_variances(grid[1]),
                         functional=lambda u: float(np.sum(reconstruct_transpose(u[:, None], grid) ** 2)), kron=kron,
                         ranges=lambda lo, hi: axis_range_variances(grid[1], lo, hi),
                         rectangles=lambda w: (axis_range_variances(grid[0], w.r0, w.r1)
                                               * axis_range_variances(grid[1], w.c0, w.c1)))


@dataclass(frozen=True)
class Privelet(MeasuredPlan):
    """Privelet (Haar wavelet, weighted noise); 1-D and 2-D; exact ``expected_mse``."""

    # its strategy depends on the workload's grid only, not on its queries: one release answers every query group
    strategy_ignores_queries: ClassVar[bool] = True
    summary: ClassVar[str] = "Haar wavelets (Privelet): good for range queries, in 1-D and 2-D."
    STRATEGY_CACHES: ClassVar[tuple[StrategyCache, ...]] = (_ENERGIES,)

    gaussian_summary: ClassVar[str] = "Haar wavelets with Gaussian noise ((ε, δ) or zCDP)."
    noise: str = setting("laplace", NOISE_RANGE)
    name: str = "privelet"
    data_dependent: bool = False

    def strategy_norms(self, workload: Workload) -> tuple[np.ndarray, np.ndarray]:
        """c = Π(1 + log₂ padded length) coefficients of ±1 per cell: L1 = c, L2 = √c."""
        coefficients_per_cell = haar_sensitivity(workload_grid(workload))
        n = workload.shape[1]
        return np.full(n, coefficients_per_cell), np.full(n, np.sqrt(coefficients_per_cell))

    def measurement(self, workload: Workload, epsilon: float) -> LaplaceMeasurement:
        """Lap(c/ε) on every coefficient, c = ``haar_sensitivity`` coefficients of ±1 per cell."""
        return LaplaceMeasurement(haar_sensitivity(workload_grid(workload)) / epsilon)

    def measure(self, x: np.ndarray, workload: Workload, measurement: Measurement, rng: np.random.Generator) -> Release:
        """The Haar coefficients measured with ``measurement`` (x validated by ``run``), inverted exactly.

        >>> from dplens.core.queries.workloads import Identity
        >>> Privelet().measure(np.zeros(4), Identity(4), LaplaceMeasurement(6.0),
        ...                    np.random.default_rng(0)).privacy_loss
        0.5
        """
        grid = workload_grid(workload)  # as in hb: run and expected_mse use the workload's grid
        rows, cols = grid
        padded = np.zeros((padded_length(rows), padded_length(cols)))
        padded[:rows, :cols] = x.reshape(grid)
        coefficients = haar_forward(haar_forward(padded, axis=0), axis=1)
        coefficients_per_cell = haar_sensitivity(grid)
        noisy = measurement.noisy(coefficients, rng)
        estimate = _reconstruct(noisy.reshape(-1, 1), grid)[:, 0]
        # every real cell enters that many coefficients with weight ±1 (padding cells hold no data)
        measured = (laplace_record(f"the {noisy.size} Haar coefficients",
                                   [(np.full(x.size, coefficients_per_cell), measurement)], noisy.ravel()),)
        loss = pure_epsilon(measured)
        params = {"sensitivity": coefficients_per_cell, **measurement.params, "padded_shape": padded.shape}
        return Release(self.name, PureDP(loss), loss, workload.matvec(estimate), estimate, params, workload=workload,
                       measurements=measured)

    def reconstruction(self, release: Release, workload: Workload) -> Reconstruction | None:
        """x̂ − x = L z with L the inverse Haar transform (exact intervals); None for another release."""
        noise = stated_noise(self, release, workload)
        if noise is None:
            return None
        grid = workload_grid(workload)
        return Reconstruction(*noise, padded_length(grid[0]) * padded_length(grid[1]),
                              lambda v: reconstruct_transpose(v, grid))

    def laplace_expected_mse(self, workload: Workload, epsilon: float) -> float:
        """Exact per-query MSE 2 (c/ε)² Σ_k ‖W h_k‖² / m over the columns h_k of the inverse transform."""
        epsilon = check_epsilon(epsilon)
        grid = workload_grid(workload)
        return 2.0 * (haar_sensitivity(grid) / epsilon) ** 2 * _unit_energy(grid, workload) / workload.shape[0]
