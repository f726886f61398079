"""Uniform and adaptive grids for 2-D histograms (Qardaji, Yang, Li, ICDE 2013: UG and AG).

UG lays an m × m grid with m = ⌈√(N ε / c)⌉ (c = 10), adds Laplace noise to each block count and spreads
it uniformly over the block's cells. AG lays a coarse m₁ × m₁ grid, m₁ = max(10, ⌈¼√(N ε / c)⌉), counted
with α·ε; each coarse block with noisy count N' is split into m₂ × m₂ with m₂ = ⌈√(N'(1−α)ε / c₂)⌉,
c₂ = c/2, counted with (1−α)·ε; the two levels are made consistent (Qardaji et al. §IV-B: the
inverse-variance average of the coarse count and the sum of its sub-blocks, with the difference spread
evenly over the sub-blocks), then spread uniformly.

The paper treats N (the number of records) as known. Here N is a noisy total bought with
``total_ratio``·ε (default 5 %), so the grid size is itself private; the rest of ε goes to the grids.
Grids are laid over the histogram's cells: each axis is cut into min(m, length) near-equal parts.

>>> import numpy as np
>>> from dplens.core.queries.workloads import Identity
>>> release = UniformGrid().run(np.ones((8, 8)), Identity(64), 1.0, np.random.default_rng(0))
>>> release.estimate.shape, release.privacy_loss <= 1.0
((64,), True)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dplens.core.mechanisms.contract import (
    RATIO_RANGE,
    Range,
    Release,
    check_inputs,
    check_ratio,
    grid_shape,
    setting,
)
from dplens.core.mechanisms.measurement import LaplaceMeasurement, NoisyAnswers, pure_epsilon, stated_at
from dplens.core.privacy.definitions import Privacy, PureDP
from dplens.core.queries.workloads import Workload
from dplens.core.validate import positive

GRID_CONSTANT_RANGE = Range(1e-3, 1e6)  # the grid-size constant c (Qardaji et al. 2013 suggest c = 10)


def _cuts(length: int, parts: int) -> np.ndarray:
    """Boundaries of min(parts, length) near-equal pieces of 0..length (ceil split, as in hb)."""
    parts = max(1, min(int(parts), length))
    return -(-length * np.arange(parts + 1) // parts)


def _block_sums(cells: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    return np.add.reduceat(np.add.reduceat(cells, rows[:-1], axis=0), cols[:-1], axis=1)


def _spread(blocks: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Each block's value divided evenly over its cells."""
    heights, widths = np.diff(rows), np.diff(cols)
    per_cell = blocks / np.outer(heights, widths)
    return np.repeat(np.repeat(per_cell, heights, axis=0), widths, axis=1)


def _grid_input(x: np.ndarray, workload: Workload, privacy: Privacy | float, name: str) -> tuple[np.ndarray, float]:
    flat, epsilon = check_inputs(x, workload, privacy)
    shape = grid_shape(x)
    if len(shape) != 2:
        raise ValueError(f"{name} needs a 2-D histogram (rows, cols); got data of shape {shape}. "
                         "Use hb, privelet or dawa for 1-D data")
    return flat.reshape(shape), epsilon


def _noisy_total(cells: np.ndarray, measurement: LaplaceMeasurement, rng: np.random.Generator) -> float:
    return max(0.0, float(measurement.noisy(cells.sum(), rng)))


@dataclass(frozen=True)
class UniformGrid:
    """UG: one m × m grid of noisy block counts, uniform within blocks (Qardaji et al. ICDE 2013)."""

    summary: ClassVar[str] = "Uniform grid (2-D): block counts on a grid sized from the noisy total."

    c: float = setting(10.0, GRID_CONSTANT_RANGE)
    total_ratio: float = setting(0.05, RATIO_RANGE)
    name: str = "ugrid"
    data_dependent: bool = True

    def __post_init__(self) -> None:
        positive("c", self.c)
        check_ratio(self.total_ratio, "total_ratio")

    def run(self, x: np.ndarray, workload: Workload, privacy: Privacy | float, rng: np.random.Generator) -> Release:
        cells, epsilon = _grid_input(x, workload, privacy, self.name)
        eps_total, eps_grid = self.total_ratio * epsilon, (1 - self.total_ratio) * epsilon
        on_total, on_blocks = LaplaceMeasurement(1.0 / eps_total), LaplaceMeasurement(1.0 / eps_grid)
        total = _noisy_total(cells, on_total, rng)
        m = int(np.ceil(np.sqrt(total * eps_grid / self.c))) or 1
        rows, cols = _cuts(cells.shape[0], m), _cuts(cells.shape[1], m)
        blocks = _block_sums(cells, rows, cols)
        noisy = on_blocks.noisy(blocks, rng)
        estimate = _spread(noisy, rows, cols).ravel()
        # every cell is in the total and in exactly one block
        records = (NoisyAnswers("the total, to size the grid", on_total, 1.0, np.atleast_1d(total)),
                   NoisyAnswers(f"the {noisy.size} grid blocks", on_blocks, 1.0, noisy.ravel()))
        params = {"grid": (rows.size - 1, cols.size - 1), "noisy_total": total, "c": self.c,
                  "total_ratio": self.total_ratio}
        release = Release(self.name, PureDP(epsilon), pure_epsilon(records), workload.matvec(estimate), estimate,
                          params, workload=workload, measurements=records)
        return stated_at(release, privacy)

    def expected_mse(self, workload: Workload, privacy: Privacy | float) -> None:
        return None  # the grid size and the uniformity bias depend on the data


@dataclass(frozen=True)
class AdaptiveGrid:
    """AG: a coarse grid, then each block split by its own noisy count, two-level consistency."""

    summary: ClassVar[str] = "Adaptive grid (2-D): a coarse grid, then finer blocks where there are many records."

    alpha: float = setting(0.5, RATIO_RANGE)
    c: float = setting(10.0, GRID_CONSTANT_RANGE)
    total_ratio: float = setting(0.05, RATIO_RANGE)
    name: str = "agrid"
    data_dependent: bool = True

    def __post_init__(self) -> None:
        check_ratio(self.alpha, "alpha")
        positive("c", self.c)
        check_ratio(self.total_ratio, "total_ratio")

    def run(self, x: np.ndarray, workload: Workload, privacy: Privacy | float, rng: np.random.Generator) -> Release:
        cells, epsilon = _grid_input(x, workload, privacy, self.name)
        eps_total = self.total_ratio * epsilon
        eps_1 = self.alpha * (epsilon - eps_total)
        eps_2 = (1 - self.alpha) * (epsilon - eps_total)
        on_total, on_coarse, on_fine = (LaplaceMeasurement(1.0 / eps) for eps in (eps_total, eps_1, eps_2))
        total = _noisy_total(cells, on_total, rng)
        m1 = max(10, int(np.ceil(np.sqrt(total * (epsilon - eps_total) / self.c) / 4)))
        rows, cols = _cuts(cells.shape[0], m1), _cuts(cells.shape[1], m1)
        coarse = on_coarse.noisy(_block_sums(cells, rows, cols), rng)
        # level 2, vectorised over cells: each coarse block (i, j) is cut into k_r × k_c sub-blocks
        m2 = np.maximum(1, np.ceil(np.sqrt(np.maximum(coarse, 0.0) * eps_2 / (self.c / 2)))).astype(int)
        heights, widths = np.diff(rows), np.diff(cols)
        k_r, k_c = np.minimum(m2, heights[:, None]), np.minimum(m2, widths[None, :])
        block_r = np.repeat(np.arange(heights.size), heights)      # coarse block row of each cell row
        block_c = np.repeat(np.arange(widths.size), widths)
        local_r = np.arange(cells.shape[0]) - rows[block_r]
        local_c = np.arange(cells.shape[1]) - cols[block_c]
        kr, kc = k_r[block_r[:, None], block_c[None, :]], k_c[block_r[:, None], block_c[None, :]]
        sub_r = local_r[:, None] * kr // heights[block_r][:, None]    # ⌈·⌉ split: t = ⌊offset·k/length⌋
        sub_c = local_c[None, :] * kc // widths[block_c][None, :]
        per_block = (k_r * k_c).ravel()
        offset = (np.cumsum(per_block) - per_block).reshape(coarse.shape)
        label = (offset[block_r[:, None], block_c[None, :]] + sub_r * kc + sub_c).ravel()
        fine = np.bincount(label, weights=cells.ravel(), minlength=per_block.sum())
        size = np.bincount(label, minlength=per_block.sum())
        fine = fine_noisy = on_fine.noisy(fine, rng)
        parent = np.repeat(np.arange(per_block.size), per_block)
        fine_sum = np.bincount(parent, weights=fine, minlength=per_block.size)
        # Qardaji et al. §IV-B: Var(coarse) ∝ 1/α², Var(Σ fine) ∝ k/(1−α)²; inverse-variance average,
        # then the difference is spread evenly over the k sub-blocks
        weight = self.alpha**2 * per_block
        combined = (weight * coarse.ravel() + (1 - self.alpha) ** 2 * fine_sum) / (weight + (1 - self.alpha) ** 2)
        fine = fine + ((combined - fine_sum) / per_block)[parent]
        estimate = fine[label] / size[label]
        # each cell is in the total, one coarse block and one fine block
        records = (NoisyAnswers("the total, to size the grid", on_total, 1.0, np.atleast_1d(total)),
                   NoisyAnswers(f"the {coarse.size} coarse blocks", on_coarse, 1.0, coarse.ravel()),
                   NoisyAnswers(f"the {fine.size} fine blocks", on_fine, 1.0, fine_noisy))
        params = {"coarse_grid": coarse.shape, "fine_blocks": int(per_block.sum()), "noisy_total": total,
                  "alpha": self.alpha, "c": self.c, "total_ratio": self.total_ratio}
        release = Release(self.name, PureDP(epsilon), pure_epsilon(records), workload.matvec(estimate), estimate,
                          params, workload=workload, measurements=records)
        return stated_at(release, privacy)

    def expected_mse(self, workload: Workload, privacy: Privacy | float) -> None:
        return None  # the grid sizes and the uniformity bias depend on the data
