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
from dplens.core.mechanisms.contract import Release, check_epsilon
from dplens.core.mechanisms.gram import noise_energy
from dplens.core.mechanisms.greedy_h import workload_key
from dplens.core.mechanisms.hierarchical import workload_grid
from dplens.core.mechanisms.measurement import (
    LaplaceMeasurement,
    MeasuredPlan,
    Measurement,
    Reconstruction,
    pure_loss,
    stated_noise,
)
from dplens.core.privacy.definitions import PureDP
from dplens.core.queries.workloads import Workload


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
    """Σ_k ‖W h_k‖² over the inverse transform's columns, cached per (grid, workload content).

    The estimate's error covariance under unit noise is H⁻¹H⁻ᵀ, applied as reconstruct ∘ its transpose.
    """
    coordinates = padded_length(grid[0]) * padded_length(grid[1])
    return _ENERGIES.get_or_compute((grid, workload_key(workload)),
                                    lambda: noise_energy(workload, lambda noise: _reconstruct(noise, grid), coordinates,
                                         lambda v: _reconstruct(reconstruct_transpose(v, grid), grid)))


@dataclass(frozen=True)
class Privelet(MeasuredPlan):
    """Privelet (Haar wavelet, weighted noise); 1-D and 2-D; exact ``expected_mse``."""

    # its strategy depends on the workload's grid only, not on its queries: one release answers every query group
    strategy_ignores_queries: ClassVar[bool] = True
    summary: ClassVar[str] = "Haar wavelets (Privelet): good for range queries, in 1-D and 2-D."
    STRATEGY_CACHES: ClassVar[tuple[StrategyCache, ...]] = (_ENERGIES,)

    name: str = "privelet"
    data_dependent: bool = False

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
        loss = pure_loss([(np.full(x.size, coefficients_per_cell), measurement)])
        params = {"sensitivity": coefficients_per_cell, **measurement.params, "padded_shape": padded.shape}
        return Release(self.name, PureDP(loss), loss, workload.matvec(estimate), estimate, params, workload=workload)

    def reconstruction(self, release: Release, workload: Workload) -> Reconstruction | None:
        """x̂ − x = L z with L the inverse Haar transform (exact intervals); None for another release."""
        noise = stated_noise(self, release, workload)
        if noise is None:
            return None
        grid = workload_grid(workload)
        return Reconstruction(*noise, padded_length(grid[0]) * padded_length(grid[1]),
                              lambda v: reconstruct_transpose(v, grid))

    def expected_mse(self, workload: Workload, epsilon: float) -> float:
        """Exact per-query MSE 2 (c/ε)² Σ_k ‖W h_k‖² / m over the columns h_k of the inverse transform."""
        epsilon = check_epsilon(epsilon)
        grid = workload_grid(workload)
        return 2.0 * (haar_sensitivity(grid) / epsilon) ** 2 * _unit_energy(grid, workload) / workload.shape[0]
