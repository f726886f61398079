"""WDA, the workload division algorithm of Li et al. (Sec. 4, Algorithm 1), in its corrected form.

The rows of W are split recursively around the hot *column* of W (never the data: Algorithm 1
line 3 picks the most frequent item of x, which is not DP);
each leaf block W_ℓ gets budget ε_ℓ and is answered with the Laplace mechanism at its own block
sensitivity Δ_ℓ. A split is taken only if it lowers the expected L1 error, with the budget halving
counted (line 6 of Algorithm 1 ignores it, so it always splits). Leaf budgets add up to ε (sequential
composition).

The division depends only on W, ``g``, ``budget`` and ``division_seed``; it is the same for every ε
(both sides of the split test scale with 1/ε), so it is computed once per workload and cached.

>>> import numpy as np
>>> from dplens.core.queries.workloads import Explicit
>>> w = Explicit(np.array([[1.0, 1, 0], [1, 0, 0], [0, 0, 1]]))
>>> [leaf.rows for leaf in wda_division(w)]
[(0,), (1, 2)]
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dplens.core.mechanisms.cache import StrategyCache
from dplens.core.mechanisms.contract import (
    SEED_RANGE,
    Range,
    Release,
    check_inputs,
    laplace_epsilon,
    laplace_privacy_loss,
    setting,
)
from dplens.core.mechanisms.cost_model import (
    OVERHEAD_SECONDS,
    SECONDS_PER_ELEMENT,
    Cost,
    dense_entries,
    matvec_elements,
)
from dplens.core.mechanisms.greedy_h import workload_key
from dplens.core.mechanisms.measurement import LaplaceMeasurement, NoisyAnswers, pure_epsilon, stated_at
from dplens.core.privacy.definitions import Privacy, PureDP
from dplens.core.queries.workloads import Ranges, Workload, as_intervals, sparse_matrix, sparse_native

BUDGET_RULES = ("optimal", "equal", "optimal_global")


@dataclass(frozen=True)
class WdaLeaf:
    """One leaf of the division: its rows of W, its share of ε and its block sensitivity Δ_ℓ."""

    rows: tuple[int, ...]
    share: float
    sensitivity: float

    def epsilon(self, epsilon: float) -> float:
        """The leaf's budget ε_ℓ = share · ε."""
        return self.share * epsilon


def check_tree_settings(budget: str, g: float) -> None:
    if budget not in BUDGET_RULES:
        raise ValueError(f"budget must be one of {BUDGET_RULES}, got {budget!r}")
    if not (isinstance(g, int | float) and math.isfinite(g)):
        raise ValueError(f"g must be a finite number, got {g!r}")


class _SparseRows:
    """Row blocks of a general W, read from its sparse matrix."""

    def __init__(self, workload: Workload) -> None:
        self.matrix = sparse_matrix(workload).tocsr()  # type: ignore[arg-type]  # workloads are frozen dataclasses: hashable

    def column_l1(self, rows: np.ndarray) -> np.ndarray:
        return np.asarray(abs(self.matrix[rows]).sum(axis=0)).ravel()

    def peak(self, rows: np.ndarray) -> tuple[float, int]:
        """(Δ of the block, its hot column: the first column with that L1 norm)."""
        column_l1 = self.column_l1(rows)
        return float(column_l1.max()), int(np.argmax(column_l1))

    def maxcol(self, rows: np.ndarray) -> float:
        return self.peak(rows)[0] if rows.size else 0.0

    def hot_rows(self, rows: np.ndarray, column: int) -> np.ndarray:
        return rows[np.asarray(self.matrix[rows][:, [column]].todense()).ravel() != 0]

    def loss_weights(self, inverse_scale: np.ndarray) -> np.ndarray:
        return abs(self.matrix).T @ inverse_scale


class _IntervalRows:
    """Row blocks of a 0/1 interval workload, read from the interval ends: O(|rows| log |rows|) per block,
    never an m × n matrix (the column L1 norms of a block are its coverage counts)."""

    def __init__(self, ranges: Ranges) -> None:
        self.ranges = ranges

    def peak(self, rows: np.ndarray) -> tuple[float, int]:
        """(largest coverage, first column reaching it): sweep the ends, at one position −1s before +1s,
        so the running count peaks exactly at the coverage of the first column where it is largest."""
        position = np.concatenate((self.ranges.lo[rows], self.ranges.hi[rows] + 1))
        delta = np.concatenate((np.ones(rows.size, dtype=np.int64), np.full(rows.size, -1, dtype=np.int64)))
        order = np.lexsort((delta, position))
        running = np.cumsum(delta[order])
        top = int(np.argmax(running))
        return float(running[top]), int(position[order][top])

    def maxcol(self, rows: np.ndarray) -> float:
        return self.peak(rows)[0] if rows.size else 0.0

    def hot_rows(self, rows: np.ndarray, column: int) -> np.ndarray:
        return rows[(self.ranges.lo[rows] <= column) & (self.ranges.hi[rows] >= column)]

    def loss_weights(self, inverse_scale: np.ndarray) -> np.ndarray:
        return self.ranges.rmatvec(inverse_scale)


def _rows_of(workload: Workload) -> _SparseRows | _IntervalRows:
    intervals = as_intervals(workload)
    return _SparseRows(workload) if intervals is None else _IntervalRows(intervals)


_DIVISIONS = StrategyCache("wda divisions", limit=32)


def wda_division(workload: Workload, *, budget: str = "optimal", g: float = 0.0,
                 division_seed: int | None = None) -> tuple[WdaLeaf, ...]:
    """``divide`` cached per workload content and settings (the division never depends on the data or ε)."""
    check_tree_settings(budget, g)
    return _DIVISIONS.get_or_compute((workload_key(workload), budget, g, division_seed),
                                     lambda: divide(workload, budget=budget, g=g, division_seed=division_seed))


def divide(workload: Workload, *, budget: str = "optimal", g: float = 0.0,
           division_seed: int | None = None) -> tuple[WdaLeaf, ...]:
    """Algorithm 1 (DIVIDEWORKLOAD), corrected: the leaves of the row division of W, depth first (W1 before W2).

    Args:
        workload: the workload W (its entries are read through ``sparse_matrix``).
        budget: ``"optimal"`` (ε_i ∝ √a_i at each split), ``"equal"`` (the paper's halving) or
            ``"optimal_global"`` (the optimal split test, then budgets ∝ √(|W_ℓ|Δ_ℓ) over all leaves).
        g: the paper's unexplained offset in |W1| = (|W| + Δ_W + g)/4 (Algorithm 1, line 4).
        division_seed: None takes the first k hot rows; an int picks them uniformly at random with
            ``np.random.default_rng(division_seed)`` (public, data-independent).

    Returns:
        The leaves; their shares of ε add up to 1.
    """
    check_tree_settings(budget, g)
    blocks = _rows_of(workload)
    chooser = None if division_seed is None else np.random.default_rng(division_seed)
    leaves: list[WdaLeaf] = []
    stack: list[tuple[np.ndarray, float]] = [(np.arange(workload.shape[0]), 1.0)]
    while stack:  # an explicit stack instead of recursion: divisions can be thousands deep
        rows, share = stack.pop()
        sensitivity, hot_column = blocks.peak(rows)  # ties → smallest column index
        if rows.size <= 1 or sensitivity == 0:
            leaves.append(WdaLeaf(tuple(int(r) for r in rows), share, sensitivity))
            continue
        hot = blocks.hot_rows(rows, hot_column)
        k = math.floor((rows.size + sensitivity + g) / 4 + 0.5)
        k = min(max(k, 1), hot.size, rows.size - 1)
        picked = hot[:k] if chooser is None else np.sort(chooser.permutation(hot)[:k])
        rest = np.setdiff1d(rows, picked, assume_unique=True)
        a = rows.size * sensitivity
        a1, a2 = picked.size * blocks.maxcol(picked), rest.size * blocks.maxcol(rest)
        if budget == "equal":  # cost in units of 1/ε_node: (a1 + a2)/(1/2) versus a
            split, share1 = 2 * (a1 + a2) < a, share / 2
        else:  # (√a1 + √a2)² versus a, ε_i ∝ √a_i (the paper's "ε1 = ε2 is optimal" holds only if a1 = a2)
            root1, root2 = math.sqrt(a1), math.sqrt(a2)
            split, share1 = (root1 + root2) ** 2 < a, share * root1 / (root1 + root2)
        if split:
            stack.append((rest, share - share1))
            stack.append((picked, share1))
        else:
            leaves.append(WdaLeaf(tuple(int(r) for r in rows), share, sensitivity))
    if budget == "optimal_global":
        return optimal_budgets(tuple(leaves))
    return tuple(leaves)


def optimal_budgets(leaves: tuple[WdaLeaf, ...]) -> tuple[WdaLeaf, ...]:
    """Re-spread ε over a fixed partition: ε_ℓ ∝ √(|W_ℓ|Δ_ℓ), the L1-optimal split.

    >>> [round(leaf.share, 6) for leaf in optimal_budgets((WdaLeaf((0,), .5, 4.0), WdaLeaf((1,), .5, 1.0)))]
    [0.666667, 0.333333]
    """
    roots = np.array([math.sqrt(len(leaf.rows) * leaf.sensitivity) for leaf in leaves])
    shares = roots / roots.sum()
    return tuple(WdaLeaf(leaf.rows, float(s), leaf.sensitivity) for leaf, s in zip(leaves, shares, strict=True))


def leaves_for(workload: Workload, row_blocks, shares) -> tuple[WdaLeaf, ...]:
    """Leaves for a hand-made partition (e.g. the paper's Fig. 2 example), with block sensitivities.

    >>> from dplens.core.queries.workloads import Identity
    >>> leaves_for(Identity(3), [[0], [1, 2]], [0.5, 0.5])[1].sensitivity
    1.0
    """
    blocks = _rows_of(workload)
    return tuple(WdaLeaf(tuple(int(r) for r in rows), float(s), blocks.maxcol(np.asarray(rows, dtype=int)))
                 for rows, s in zip(row_blocks, shares, strict=True))


def expected_error(leaves: tuple[WdaLeaf, ...], epsilon: float, *, squared: bool = True) -> float:
    """Exact average error per query: MSE (1/m)Σ|W_ℓ|·2Δ_ℓ²/ε_ℓ², or L1 (1/m)Σ|W_ℓ|Δ_ℓ/ε_ℓ.

    >>> expected_error((WdaLeaf((0, 1), 1.0, 4.0),), 1.0, squared=False)
    4.0
    """
    m = sum(len(leaf.rows) for leaf in leaves)
    total = 0.0
    for leaf in leaves:
        if leaf.sensitivity == 0:
            continue  # nothing in the block reads the data: no noise
        scale = leaf.sensitivity / leaf.epsilon(epsilon)
        total += len(leaf.rows) * (2 * scale**2 if squared else scale)
    return total / m


def division_table(leaves: tuple[WdaLeaf, ...], epsilon: float) -> list[dict[str, object]]:
    """The division as display rows: leaf, queries, rows, ε_ℓ, Δ_ℓ, noise scale."""
    return [{"leaf": i, "queries": len(leaf.rows), "rows": ", ".join(map(str, leaf.rows[:20]))
             + (" …" if len(leaf.rows) > 20 else ""), "epsilon": leaf.epsilon(epsilon),
             "sensitivity": leaf.sensitivity,
             "noise_scale": leaf.sensitivity / leaf.epsilon(epsilon) if leaf.sensitivity else 0.0}
            for i, leaf in enumerate(leaves)]


@dataclass(frozen=True)
class WDA:
    """Workload division (Li et al., Algorithm 1, corrected): Laplace noise per leaf block of W's rows.

    >>> from dplens.core.queries.workloads import Identity
    >>> WDA().expected_mse(Identity(4), 1.0)
    2.0
    """

    summary: ClassVar[str] = "Workload division (Li et al.): splits the queries into blocks and noises each block."
    STRATEGY_CACHES: ClassVar[tuple[StrategyCache, ...]] = (_DIVISIONS,)

    budget: str = setting("optimal", Range(choices=("optimal", "equal", "optimal_global")))
    g: float = setting(0.0, Range(-1e6, 1e6))
    division_seed: int | None = setting(None, SEED_RANGE)
    name: str = "wda"
    data_dependent: bool = False

    def __post_init__(self) -> None:
        check_tree_settings(self.budget, self.g)

    def division(self, workload: Workload) -> tuple[WdaLeaf, ...]:
        """The leaves for this workload (data-independent)."""
        return wda_division(workload, budget=self.budget, g=self.g, division_seed=self.division_seed)

    def cost(self, workload: Workload) -> Cost:
        """Divided on the interval ends (O(m log m) per split), else on the workload's matrix entries."""
        m, n = workload.shape
        if as_intervals(workload) is not None:
            seconds = SECONDS_PER_ELEMENT * (40 * m * max(1.0, math.log2(max(m, 2)))
                                             + 4 * (n + matvec_elements(workload)))
            return Cost(OVERHEAD_SECONDS + seconds, 8.0 * (4 * n + 12 * m),
                        f"the workload's {m:,} interval queries over {n:,} cells")
        entries = dense_entries(workload)
        seconds = 1e-8 * entries * max(1.0, math.log2(max(m, 2))) + SECONDS_PER_ELEMENT * 8 * m * 64
        if not sparse_native(workload):  # sparse_matrix builds W column by column via dense()
            seconds += n * (5e-5 + SECONDS_PER_ELEMENT * matvec_elements(workload))
        return Cost(OVERHEAD_SECONDS + seconds, 8.0 * (3 * entries + 4 * n + 4 * m),
                    f"the workload's {entries:,.0f} matrix entries ({m:,} queries × {n:,} cells)")

    def run(self, x: np.ndarray, workload: Workload, privacy: Privacy | float, rng: np.random.Generator) -> Release:
        x, epsilon = check_inputs(x, workload, privacy)
        leaves = self.division(workload)
        answers = workload.matvec(x)
        inverse_scale = np.zeros(workload.shape[0])  # ε_ℓ/Δ_ℓ on the rows of leaf ℓ; 0 where no data is read
        for leaf in leaves:
            if leaf.sensitivity:  # one scalar-scale draw per leaf (secure samplers take a scalar scale)
                rows = list(leaf.rows)
                measurement = LaplaceMeasurement(leaf.sensitivity / leaf.epsilon(epsilon))
                answers[rows] = measurement.noisy(answers[rows], rng)
                inverse_scale[rows] = 1.0 / measurement.scale
        # Σ_ℓ ‖W_ℓ e_j‖₁/b_ℓ as one row-weighted block: the same sum as one block per leaf (pure_loss over the
        # leaves' measurements would need each leaf's column norms, a pass over W per leaf)
        # one record of the whitened answers (each leaf's rows at unit scale): Δ₁ is that sum at scale 1
        records = (NoisyAnswers(f"the workload's answers, in {len(leaves)} leaves", LaplaceMeasurement(1.0),
                                laplace_privacy_loss([(_rows_of(workload).loss_weights(inverse_scale), 1.0)]),
                                answers),)
        params = {"budget": self.budget, "g": self.g, "division_seed": self.division_seed, "leaves": len(leaves)}
        release = Release(self.name, PureDP(epsilon), pure_epsilon(records), answers, None, params,
                          {"division": division_table(leaves, epsilon)}, workload=workload, measurements=records)
        return stated_at(release, privacy)

    def expected_mse(self, workload: Workload, privacy: Privacy | float) -> float:
        """Exact per-query MSE (1/m)Σ_ℓ |W_ℓ|·2Δ_ℓ²/ε_ℓ² over this workload's division."""
        epsilon = laplace_epsilon(privacy)
        return expected_error(self.division(workload), epsilon)
