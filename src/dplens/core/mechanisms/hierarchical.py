"""Hierarchical histograms: Hay et al. (PVLDB 2010) "H2" and Qardaji, Yang, Li (PVLDB 2013) "HB".

A tree of range counts is measured with the same Laplace scale on every level (uniform budget) and made
consistent by least squares. Least squares on a tree is solved exactly in O(#nodes) by two passes
(the generalisation of Hay et al.'s consistency step to any fan-out and uneven leaves): bottom-up, each
node combines its own count with the sum of its children's subtree estimates by inverse variance;
top-down, each parent's final value is shared back among its children in proportion to their variances.

2-D histograms use the quadtree-style product: each level splits every axis of a block by the branching
factor (an axis of length 1 is carried), as in ektelo's HB selection. The grid is read from the
workload (``workload_grid``: a Kron, or a Stack of them, is 2-D), so that ``run`` and ``expected_mse``
use the same tree; a flat workload on 2-D counts uses a 1-D tree over the row-major cells.

>>> import numpy as np
>>> from dplens.core.queries.workloads import Prefix
>>> mech = Hierarchical(branching=2)
>>> release = mech.run(np.arange(8.0), Prefix(8), 1.0, np.random.default_rng(0))
>>> release.params["levels"], release.privacy_loss <= 1.0
(4, True)
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import ClassVar

import numpy as np

from dplens.core.mechanisms.cache import StrategyCache
from dplens.core.mechanisms.contract import Range, Release, check_epsilon, setting
from dplens.core.mechanisms.gram import family_energy, noise_energy
from dplens.core.mechanisms.greedy_h import workload_key
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
from dplens.core.queries.workloads import Workload, workload_grid


def qardaji_branching(n: int) -> int:
    """Branching b minimising Qardaji et al.'s (PVLDB 2013, Eq. 3) range-query variance (b−1)h³ − 2(b+1)h²/3.

    h = ⌈log_b n⌉ levels. For a fixed h the variance grows with b, so only the smallest b reaching n in h
    levels is a candidate; ties go to the smaller b (as in DPBench/ektelo's search over every b).

    >>> qardaji_branching(2048), qardaji_branching(128)
    (46, 128)
    """
    if n < 2:
        return 2
    best: tuple[float, int] | None = None
    for h in range(1, int(np.ceil(np.log2(n))) + 1):
        b = max(2, int(round(n ** (1.0 / h))) - 1)
        while b**h < n:  # exact integer ceiling of n^(1/h)
            b += 1
        variance = (b - 1) * h**3 - 2 * (b + 1) * h**2 / 3
        if best is None or (variance, b) < best:
            best = (variance, b)
    return best[1]  # type: ignore[index]  # n >= 2: at least one h was tried


def _ceil_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return -(-a // b)


@dataclass(frozen=True, eq=False)
class _Level:
    r0: np.ndarray
    r1: np.ndarray
    c0: np.ndarray
    c1: np.ndarray
    child_start: np.ndarray | None = None  # start of each internal node's children in the next level
    internal: np.ndarray | None = None     # indices of nodes with children
    parent: np.ndarray | None = None       # index of each node's parent in the previous level


@dataclass(frozen=True, eq=False)
class Tree:
    """A hierarchy of blocks over a (rows, cols) grid, with the least-squares constants precomputed."""

    shape: tuple[int, int]
    levels: tuple[_Level, ...]
    measured: tuple[bool, ...]   # per level
    variance: tuple[np.ndarray, ...]      # variance of each node's subtree estimate (unit noise)
    child_variance: tuple[np.ndarray, ...]  # Σ variance of the children (0 for leaves)
    leaves: tuple[tuple[np.ndarray, np.ndarray], ...]  # per level: (leaf node indices, their cell index)

    @property
    def height(self) -> int:
        """Number of measured levels: every cell is counted at most once per level."""
        return sum(self.measured)

    @property
    def coordinates(self) -> int:
        """Number of noisy counts released."""
        return sum(lv.r0.size for lv, m in zip(self.levels, self.measured, strict=True) if m)

    def column_norms(self) -> np.ndarray:
        """How many measured nodes contain each cell (the column L1 norms of the strategy)."""
        norms = np.zeros(self.shape[0] * self.shape[1])
        for depth, (_, cells) in enumerate(self.leaves):
            norms[cells] = sum(self.measured[: depth + 1])
        return norms

    def counts(self, x: np.ndarray) -> list[np.ndarray]:
        """True count of every node, level by level (bottom-up sums of the cells)."""
        out: list[np.ndarray] = [np.empty(0)] * len(self.levels)
        for depth in range(len(self.levels) - 1, -1, -1):
            level, (leaf_nodes, cells) = self.levels[depth], self.leaves[depth]
            values = np.zeros(level.r0.size)
            values[leaf_nodes] = x[cells]
            if level.internal is not None and level.internal.size:
                values[level.internal] = np.add.reduceat(out[depth + 1], level.child_start)  # type: ignore[arg-type]  # set on internal levels
            out[depth] = values
        return out

    def least_squares(self, noisy: list[np.ndarray | None], n_cells: int) -> np.ndarray:
        """Least-squares cell estimates from the measured levels (None for an unmeasured level).

        Works on trailing batch dimensions, so unit-noise blocks give the estimator's columns.
        """
        depth_count = len(self.levels)
        tail = next(y.shape[1:] for y in noisy if y is not None)
        z: list[np.ndarray] = [np.empty(0)] * depth_count
        child_sum: list[np.ndarray] = [np.empty(0)] * depth_count
        for depth in range(depth_count - 1, -1, -1):  # bottom-up: subtree estimates
            level, y = self.levels[depth], noisy[depth]
            zc = np.zeros((level.r0.size, *tail))
            if level.internal is not None and level.internal.size:
                zc[level.internal] = np.add.reduceat(z[depth + 1], level.child_start, axis=0)  # type: ignore[arg-type]  # set on internal levels
            vc = self.child_variance[depth].reshape(-1, *([1] * len(tail)))
            if y is None:
                z[depth] = zc
            else:  # inverse-variance combination of the node's own count (variance 1) and its children
                z[depth] = np.where(vc > 0, (y * vc + zc) / (vc + 1.0), y)
            child_sum[depth] = zc
        estimate = np.zeros((n_cells, *tail))
        final = z[0]
        for depth in range(depth_count):  # top-down: share each parent's correction among its children
            level = self.levels[depth]
            if depth > 0:
                parent = level.parent
                share = (self.variance[depth] / self.child_variance[depth - 1][parent]).reshape(
                    -1, *([1] * len(tail)))
                final = z[depth] + share * (final[parent] - child_sum[depth - 1][parent])
            leaf_nodes, cells = self.leaves[depth]
            estimate[cells] = final[leaf_nodes]
        return estimate


@lru_cache(maxsize=16)
def build_tree(shape: tuple[int, int], branching: int, include_root: bool) -> Tree:
    """The block hierarchy: each level splits every axis of a block into min(b, length) near-equal parts.

    Split points are lo + ⌈length·i/k⌉, as in ektelo's HB; blocks of one cell are leaves.
    """
    rows, cols = shape
    levels: list[dict] = [dict(r0=np.array([0]), r1=np.array([rows]), c0=np.array([0]), c1=np.array([cols]))]
    while True:
        lv = levels[-1]
        sr, sc = lv["r1"] - lv["r0"], lv["c1"] - lv["c0"]
        kr, kc = np.minimum(branching, sr), np.minimum(branching, sc)
        count = np.where((sr == 1) & (sc == 1), 0, kr * kc)
        if not count.any():
            break
        starts = np.cumsum(count) - count
        lv["internal"] = np.flatnonzero(count)
        lv["child_start"] = starts[lv["internal"]]
        parent = np.repeat(np.arange(count.size), count)
        t = np.arange(parent.size) - starts[parent]
        i, j = t // kc[parent], t % kc[parent]
        r0, c0 = lv["r0"][parent], lv["c0"][parent]
        levels.append(dict(
            r0=r0 + _ceil_div(sr[parent] * i, kr[parent]), r1=r0 + _ceil_div(sr[parent] * (i + 1), kr[parent]),
            c0=c0 + _ceil_div(sc[parent] * j, kc[parent]), c1=c0 + _ceil_div(sc[parent] * (j + 1), kc[parent]),
            parent=parent))
    built = tuple(_Level(**lv) for lv in levels)
    # the root is measured when asked, or when it is the only node (a one-cell grid)
    measured = (include_root or len(built) == 1,) + (True,) * (len(built) - 1)
    variance: list[np.ndarray] = [np.empty(0)] * len(built)
    child_variance: list[np.ndarray] = [np.empty(0)] * len(built)
    for depth in range(len(built) - 1, -1, -1):
        level = built[depth]
        vc = np.zeros(level.r0.size)
        if level.internal is not None and level.internal.size:
            vc[level.internal] = np.add.reduceat(variance[depth + 1], level.child_start)  # type: ignore[arg-type]  # set on internal levels
        child_variance[depth] = vc
        if measured[depth]:
            variance[depth] = np.where(vc > 0, vc / (vc + 1.0), 1.0)
        else:
            variance[depth] = vc
    leaves = []
    for level in built:
        leaf = np.flatnonzero((level.r1 - level.r0 == 1) & (level.c1 - level.c0 == 1))
        leaves.append((leaf, level.r0[leaf] * cols + level.c0[leaf]))
    return Tree((rows, cols), built, measured, tuple(variance), tuple(child_variance), tuple(leaves))


def _grid(shape: tuple[int, ...]) -> tuple[int, int]:
    return (1, shape[0]) if len(shape) == 1 else (int(shape[0]), int(shape[1]))


_ENERGIES = StrategyCache("hb energies", limit=16)


def _unit_energy(tree_args: tuple[tuple[int, int], int, bool], workload: Workload) -> float:
    """Σ_k ‖W l_k‖² over the least-squares columns, cached per (tree, workload content): in closed form for the
    families :func:`closed_energy` knows, else by pushing noise through the estimator (:func:`_energy`)."""
    def compute() -> float:
        tree = build_tree(*tree_args)
        closed = closed_energy(tree, workload)
        return _energy(tree, workload) if closed is None else closed

    return _ENERGIES.get_or_compute((tree_args, workload_key(workload)), compute)


def _tree_covariance(tree: Tree, v: np.ndarray) -> np.ndarray:
    """(AᵀA)⁻¹ v on n × batch blocks: the error covariance under unit noise applied to v.

    Least squares is (AᵀA)⁻¹Aᵀ, and (AᵀA)⁻¹ v = (AᵀA)⁻¹Aᵀu for any u with Aᵀu = v: v placed on the leaves
    (one-cell nodes, all measured), zeros elsewhere.
    """
    blocks: list[np.ndarray | None] = []
    for level, (leaf_nodes, cells), measured in zip(tree.levels, tree.leaves, tree.measured, strict=True):
        block = np.zeros((level.r0.size, v.shape[1]))
        block[leaf_nodes] = v[cells]
        blocks.append(block if measured else None)
    return tree.least_squares(blocks, tree.shape[0] * tree.shape[1])


def _energy(tree: Tree, workload: Workload) -> float:
    """Σ_k ‖W l_k‖² for any workload, O(n · min(m, #nodes)); the oracle the closed forms are tested against."""
    n_cells = tree.shape[0] * tree.shape[1]
    sizes = [lv.r0.size if m else 0 for lv, m in zip(tree.levels, tree.measured, strict=True)]
    bounds = np.cumsum([0, *sizes])

    def response(noise: np.ndarray) -> np.ndarray:
        blocks = [noise[a:b] if m else None
                  for a, b, m in zip(bounds[:-1], bounds[1:], tree.measured, strict=True)]
        return tree.least_squares(blocks, n_cells)

    return noise_energy(workload, response, tree.coordinates, lambda v: _tree_covariance(tree, v))


def cell_variances(tree: Tree) -> np.ndarray:
    """Var(x̂_i − x_i) of every cell under unit noise (the diagonal of (AᵀA)⁻¹), in O(#nodes).

    Hay et al. (PVLDB 2010, Sec. 4) make the tree consistent by combining, for each node, the estimate from its
    subtree's counts (variance ``tree.variance``) with the one from everything else. The data outside a child c
    of p reach θ_c only through p's estimate from outside p and p's own count (variance U_p) minus its siblings'
    subtree estimates, so that outside estimate has variance O_c = U_p + Σ_siblings variance; the consistent
    estimate is their inverse-variance combination, variance 1 / (1/O_c + 1/variance_c). The root has no outside.

    >>> np.round(cell_variances(build_tree((1, 2), 2, True)), 6).tolist()  # y_0 with y_root − y_1: (1 + 1/2)⁻¹
    [0.666667, 0.666667]
    """
    out = np.empty(tree.shape[0] * tree.shape[1])
    outside = np.array([np.inf])
    upper = outside
    for depth, level in enumerate(tree.levels):
        variance = tree.variance[depth]
        if depth > 0:
            parent = level.parent
            outside = upper[parent] + tree.child_variance[depth - 1][parent] - variance
        leaf_nodes, cells = tree.leaves[depth]
        out[cells] = 1.0 / (1.0 / outside[leaf_nodes] + 1.0 / variance[leaf_nodes])
        upper = 1.0 / (1.0 / outside + 1.0) if tree.measured[depth] else outside
    return out


def prefix_variances(tree: Tree) -> np.ndarray:
    """Var(Σ_{i ≤ j} (x̂_i − x_i)) for every j under unit noise, for a 1-D tree, in O(n · height).

    Bottom-up over the levels, for each node c and each prefix Q of c's cells (ending at cell j), with the
    estimate from c's subtree alone: V = Var of Q's error sum, C = its covariance with the error of c's subtree
    estimate z_c, and K = the share of a correction to z_c that the top-down pass of least squares (Hay et al.,
    PVLDB 2010, Sec. 4) gives to Q. A prefix of c is its children before c_t (their subtree estimates, total
    variance A) plus a prefix of c_t, and every cell of it receives its share of c's correction
    D = v/(v + 1) (y_c − Σ z_children) (v = Σ children variances; D = 0 when c is not measured). D is uncorrelated
    with z_c, so with a = v/(v + 1) and g = 1/(v + 1) (a = 0, g = 1 unmeasured):
    V = A + V' + K² a² (1 + v) − 2 K a (A + C'),  C = g (A + C'),  K = A/v + K' variance_t/v.
    A whole leaf starts at V = C = its variance, K = 1; the root has no outside, so its V is the answer.

    >>> np.round(prefix_variances(build_tree((1, 2), 2, True)), 6).tolist()  # the total: (1 + 1/2)⁻¹ from
    ... # y_root and y_0 + y_1
    [0.666667, 0.666667]
    """
    n = tree.shape[1]
    if tree.shape[0] != 1:
        raise ValueError(f"prefix variances need a 1-D tree, got a {tree.shape} grid")
    v_sum, c_cov, k_share = np.zeros(n), np.zeros(n), np.zeros(n)
    for depth in range(len(tree.levels) - 1, -1, -1):
        level = tree.levels[depth]
        if level.internal is not None and level.internal.size:
            child = tree.levels[depth + 1]
            child_var, parent = tree.variance[depth + 1], child.parent
            total = tree.child_variance[depth][parent]  # v of each child's parent
            earlier = np.cumsum(child_var) - child_var
            first = np.zeros(level.r0.size, dtype=np.int64)
            first[level.internal] = level.child_start  # type: ignore[assignment]  # set on internal levels
            before = (earlier - earlier[first[parent]])  # A: siblings before each child
            lengths = child.c1 - child.c0
            node = np.repeat(np.arange(lengths.size), lengths)
            cell = child.c0[node] + np.arange(node.size) - np.repeat(np.cumsum(lengths) - lengths, lengths)
            a = total / (total + 1.0) if tree.measured[depth] else np.zeros_like(total)
            g = 1.0 / (total + 1.0) if tree.measured[depth] else np.ones_like(total)
            big_a, a, g = before[node], a[node], g[node]
            share = (before[node] + child_var[node] * k_share[cell]) / total[node]
            v_sum[cell] = (big_a + v_sum[cell] + share**2 * a**2 * (1.0 + total[node])
                           - 2.0 * share * a * (big_a + c_cov[cell]))
            c_cov[cell] = g * (big_a + c_cov[cell])
            k_share[cell] = share
        leaf_nodes, cells = tree.leaves[depth]
        v_sum[cells] = c_cov[cells] = tree.variance[depth][leaf_nodes]
        k_share[cells] = 1.0
    return v_sum


def range_variances(tree: Tree, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Var(Σ_{lo ≤ i ≤ hi} (x̂_i − x_i)) for each range [lo, hi] under unit noise, for a 1-D tree, in O(height) per
    range (after O(n) to find each cell's leaf).

    ``prefix_variances``'s recursion (Hay et al., PVLDB 2010, Sec. 4) holds for any set Q of a node c's cells made
    of whole children and parts of others. With V_i, C_i, K_i of Q's part in each child it meets (a whole child:
    V = C = its variance, K = 1; the children's subtree estimates are independent), and a, g, v as there:
    V = Σ V_i + K² a² (1 + v) − 2 K a Σ C_i,  C = g Σ C_i,  K = Σ K_i variance_i / v.
    Walking up from the leaves of lo and hi, Q's part in the node holding lo is a suffix of it (the part in lo's
    child and the whole children after it) and in the node holding hi a prefix, up to their lowest common ancestor,
    which joins the two parts and the whole children between them; above it Q lies in one child. The root's V is
    the range's variance.

    >>> tree = build_tree((1, 5), 2, True)
    >>> bool(np.allclose(range_variances(tree, np.zeros(5, dtype=int), np.arange(5)), prefix_variances(tree)))
    True
    """
    n = tree.shape[1]
    if tree.shape[0] != 1:
        raise ValueError(f"range variances need a 1-D tree, got a {tree.shape} grid")
    lo, hi = np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64)
    leaf_depth, leaf_node = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    for depth, (leaf_nodes, cells) in enumerate(tree.leaves):
        leaf_depth[cells], leaf_node[cells] = depth, leaf_nodes
    # per range, the node holding lo (row 0) and hi (row 1) at the current depth, −1 below its leaf, and V, C, K of
    # Q's part in it; once the two have met, row 0 holds Q's node and state
    node = np.full((2, lo.size), -1, dtype=np.int64)
    v_sum, c_cov, k_share = np.zeros((2, lo.size)), np.zeros((2, lo.size)), np.zeros((2, lo.size))
    met = np.zeros(lo.size, dtype=bool)
    for depth in range(len(tree.levels) - 1, -1, -1):
        level = tree.levels[depth]
        if level.internal is not None and level.internal.size:  # lift every part to its parent at this depth
            variance = tree.variance[depth + 1]
            parent: np.ndarray = tree.levels[depth + 1].parent  # type: ignore[assignment]  # set below the root
            before = np.concatenate(([0.0], np.cumsum(variance)))  # Σ variance of the children before index i
            first = np.zeros(level.r0.size, dtype=np.int64)
            first[level.internal] = level.child_start  # type: ignore[assignment]  # set on internal levels
            end = first + np.bincount(parent, minlength=level.r0.size)  # one past each node's last child
            low, high = node[0] >= 0, node[1] >= 0
            join = ~met & low & high
            join[join] = parent[node[0, join]] == parent[node[1, join]]
            for row, live in ((0, np.flatnonzero(low)), (1, np.flatnonzero(high & ~met & ~join))):
                child = node[row, live]
                up = parent[child]
                if row == 0:
                    joining, alone = join[live], met[live]
                    other = node[1, live]
                    stop = np.where(alone, child + 1, np.where(joining, other, end[up]))
                    whole = before[stop] - before[child + 1]
                    extra = np.where(joining, 1.0, 0.0)
                    sums = (v_sum[0, live] + whole + extra * v_sum[1, live],
                            c_cov[0, live] + whole + extra * c_cov[1, live],
                            k_share[0, live] * variance[child] + whole
                            + extra * k_share[1, live] * variance[np.where(joining, other, child)])
                else:
                    whole = before[child] - before[first[up]]
                    sums = (v_sum[1, live] + whole, c_cov[1, live] + whole, k_share[1, live] * variance[child] + whole)
                v = tree.child_variance[depth][up]
                a, g = (v / (v + 1.0), 1.0 / (v + 1.0)) if tree.measured[depth] else (np.zeros_like(v), np.ones_like(v))
                share = sums[2] / v
                v_sum[row, live] = sums[0] + share**2 * a**2 * (1.0 + v) - 2.0 * share * a * sums[1]
                c_cov[row, live] = g * sums[1]
                k_share[row, live] = share
                node[row, live] = up
            met |= join
            node[1, met] = -1
        leaf_nodes_variance = tree.variance[depth]
        for row, cell in ((0, lo), (1, hi)):
            starts = np.flatnonzero((leaf_depth[cell] == depth) & ((row == 0) | (lo != hi)))
            leaf = leaf_node[cell[starts]]
            node[row, starts] = leaf
            v_sum[row, starts] = c_cov[row, starts] = leaf_nodes_variance[leaf]
            k_share[row, starts] = 1.0
        met |= (lo == hi) & (leaf_depth[lo] == depth)
    return v_sum[0]


def closed_energy(tree: Tree, workload: Workload) -> float | None:
    """Σ_k ‖W l_k‖² in closed form (:func:`~dplens.core.mechanisms.gram.family_energy`) for Identity (any grid,
    also a Kron of two), Total, Prefix and AllRange (1-D), lists of arbitrary ranges (1-D Ranges, such as
    random-range: ``range_variances``, O(n + m log n)) and Stacks of them, in O(n log n); None otherwise
    (2-D ranges and other Krons on the quadtree, rectangles and explicit matrices take the oracle).

    >>> from dplens.core.queries.workloads import Prefix
    >>> tree = build_tree((1, 8), 2, True)
    >>> bool(np.isclose(closed_energy(tree, Prefix(8)), _energy(tree, Prefix(8))))
    True
    """
    return family_energy(workload, tree.shape, cells=lambda: cell_variances(tree),
                         prefixes=lambda: prefix_variances(tree),
                         functional=lambda u: float(u @ _tree_covariance(tree, u[:, None])[:, 0]),
                         ranges=lambda lo, hi: range_variances(tree, lo, hi))


@dataclass(frozen=True)
class Hierarchical(MeasuredPlan):
    """HB / H2: noisy tree counts, uniform budget per level, least-squares consistency.

    Args:
        branching: "auto" (Qardaji et al.'s choice for the domain size) or an int ≥ 2 (2 = Hay's H2).
        include_root: measure the total too; "auto" = yes for branching 2 (Hay's H2), no for "auto"
            (Qardaji's HB), as in the reference implementations.
    """

    # its strategy depends on the workload's grid only, not on its queries: one release answers every query group
    strategy_ignores_queries: ClassVar[bool] = True
    summary: ClassVar[str] = "A tree of range counts: good for range queries over ordered bins."
    STRATEGY_CACHES: ClassVar[tuple[StrategyCache, ...]] = (_ENERGIES,)

    branching: int | str = setting("auto", Range(2, 1024, integer=True, choices=("auto",)))
    include_root: bool | str = setting("auto", Range(choices=("auto", True, False)))
    gaussian_summary: ClassVar[str] = "The range tree with Gaussian noise ((ε, δ) or zCDP)."
    noise: str = setting("laplace", NOISE_RANGE)
    name: str = "hb"
    data_dependent: bool = False

    def strategy_norms(self, workload: Workload) -> tuple[np.ndarray, np.ndarray]:
        """Nodes containing each cell (unit weights): L1 = count, L2 = √count."""
        counts = build_tree(*self._tree_args(workload_grid(workload))).column_norms()
        return counts, np.sqrt(counts)

    def __post_init__(self) -> None:
        b = self.branching
        if isinstance(b, str) and b.strip().isdigit():
            b = int(b)
        if not (b == "auto" or (isinstance(b, int | np.integer) and not isinstance(b, bool) and b >= 2)):
            raise ValueError(f"branching must be 'auto' or an integer >= 2, got {self.branching!r}")
        object.__setattr__(self, "branching", b)
        root = self.include_root
        if isinstance(root, str) and root.lower() in ("true", "yes", "1", "false", "no", "0"):
            root = root.lower() in ("true", "yes", "1")
        if not (root == "auto" or isinstance(root, bool | np.bool_)):
            raise ValueError(f"include_root must be 'auto', True or False, got {self.include_root!r}")
        object.__setattr__(self, "include_root", root if root == "auto" else bool(root))

    def tree(self, shape: tuple[int, ...]) -> Tree:
        """The hierarchy used for a histogram of this shape ((n,) or (rows, cols))."""
        return build_tree(*self._tree_args(shape))

    def _tree_args(self, shape: tuple[int, ...]) -> tuple[tuple[int, int], int, bool]:
        grid = _grid(shape)
        # 2-D: the per-axis branching is chosen for the whole domain size, as ektelo's HB does
        b = qardaji_branching(grid[0] * grid[1]) if self.branching == "auto" else int(self.branching)
        root = (self.branching == 2) if self.include_root == "auto" else self.include_root
        return grid, b, bool(root)

    def measurement(self, workload: Workload, epsilon: float) -> LaplaceMeasurement:
        """Lap(h/ε) on every node: each cell is in one node per measured level (h of them)."""
        return LaplaceMeasurement(build_tree(*self._tree_args(workload_grid(workload))).height / epsilon)

    def measure(self, x: np.ndarray, workload: Workload, measurement: Measurement, rng: np.random.Generator) -> Release:
        """The tree's node counts measured with ``measurement`` (x validated by ``run``), then least squares.

        >>> from dplens.core.queries.workloads import Prefix
        >>> Hierarchical(branching=2).measure(np.zeros(4), Prefix(4), LaplaceMeasurement(3.0),
        ...                                   np.random.default_rng(0)).privacy_loss
        1.0
        """
        # the tree follows the workload's grid (as expected_mse must): a quadtree for 2-D workloads,
        # a 1-D tree over the row-major cells for flat ones (ranges of the flattened vector)
        args = self._tree_args(workload_grid(workload))
        tree = build_tree(*args)
        noisy = [measurement.noisy(c, rng) if m else None
                 for c, m in zip(tree.counts(x), tree.measured, strict=True)]
        estimate = tree.least_squares(noisy, x.size)
        measured = (laplace_record(f"the range tree's nodes (branching {args[1]}, {tree.height} levels)",
                                   [(tree.column_norms(), measurement)],
                                   np.concatenate([np.ravel(v) for v in noisy if v is not None])),)
        loss = pure_epsilon(measured)
        params = {"branching": args[1], "levels": tree.height,
                  "include_root": tree.measured[0], **measurement.params}
        return Release(self.name, PureDP(loss), loss, workload.matvec(estimate), estimate, params, workload=workload,
                       measurements=measured)

    def reconstruction(self, release: Release, workload: Workload) -> Reconstruction | None:
        """x̂ − x = L z for this tree's noise z (exact intervals); None for another release or tree."""
        noise = stated_noise(self, release, workload)
        args = self._tree_args(workload_grid(workload))
        tree = build_tree(*args)
        if noise is None or release.params.get("levels") != tree.height or release.params.get("branching") != args[1]:
            return None
        return Reconstruction(*noise, tree.coordinates, lambda v: _tree_adjoint(tree, v))

    def laplace_expected_mse(self, workload: Workload, epsilon: float) -> float:
        """Exact per-query MSE: 2 (h/ε)² Σ_k ‖W l_k‖² / m over the least-squares estimator's columns l_k."""
        epsilon = check_epsilon(epsilon)
        args = self._tree_args(workload_grid(workload))
        height = build_tree(*args).height
        return 2.0 * (height / epsilon) ** 2 * _unit_energy(args, workload) / workload.shape[0]


def _tree_adjoint(tree, v: np.ndarray) -> np.ndarray:
    """Lᵀ v = A (AᵀA)⁻¹ v for the hb tree: (AᵀA)⁻¹ v by least squares of v placed on the leaves, then A."""
    solved = _tree_covariance(tree, v)  # (AᵀA)⁻¹ v, n × k
    sums: list[np.ndarray] = [np.empty(0)] * len(tree.levels)
    for depth in range(len(tree.levels) - 1, -1, -1):  # node sums bottom-up, batched
        level, (leaf_nodes, cells) = tree.levels[depth], tree.leaves[depth]
        values = np.zeros((level.r0.size, v.shape[1]))
        values[leaf_nodes] = solved[cells]
        if level.internal is not None and level.internal.size:
            values[level.internal] = np.add.reduceat(sums[depth + 1], level.child_start, axis=0)
        sums[depth] = values
    return np.concatenate([s for s, m in zip(sums, tree.measured, strict=True) if m], axis=0)
