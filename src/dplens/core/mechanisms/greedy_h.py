"""Greedy-H: the workload-adaptive hierarchical strategy of DAWA's second stage (Li, Hay, Miklau, Wang,
PVLDB 2014, §4), standalone on the cells.

The strategy is a tree of interval queries (fan-out ``branching``) whose weights are chosen greedily,
bottom-up: at every node a share 1 − p of the remaining weight goes to the node's own query and p to its
subtree, with p picked on a grid of ``granularity`` values to minimise a local error estimate (the
reference implementations' rule, including their 1/b^(depth/2) damping of cross terms and their use of
(WᵀW)² as the local error metric). Weights along every root-to-leaf path sum to 1, so the strategy's L1
sensitivity is 1. The strategy depends on the workload only; the inverse (AᵀA)⁻¹ is kept in the
recursive Sherman–Morrison form, so least squares costs O(n log n) and the exact error
tr(WᵀW (AᵀA)⁻¹) falls out of the same recursion.

>>> import numpy as np
>>> from dplens.core.queries.workloads import Prefix
>>> release = GreedyH().run(np.arange(8.0), Prefix(8), 1.0, np.random.default_rng(0))
>>> release.privacy_loss <= 1.0, release.estimate.shape
(True, (8,))
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar

import numpy as np
import scipy.sparse

from dplens.core.mechanisms.cache import StrategyCache
from dplens.core.mechanisms.contract import (
    BRANCHING_RANGE,
    Range,
    Release,
    setting,
)
from dplens.core.mechanisms.cost_model import Cost, tree_cost
from dplens.core.mechanisms.gram import gram_apply
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
from dplens.core.queries.workloads import (
    Workload,
    all_ranges,
    allrange_block_gram,
    as_intervals,
    block_gram,
    gram_matrix,
    gram_parts,
    workload_key,  # noqa: F401  (re-exported: the strategy caches' key)
)

# grid points for a node's weight p (Greedy-H, DAWA; Li et al. 2014 §4)
GRANULARITY_RANGE = Range(2, 1000, integer=True)
MAX_UNITS = 4096  # Greedy-H holds dense unit × unit matrices; beyond this it refuses (memory)
DENSE_RECONSTRUCTION = 2**24  # entries of L formed for exact intervals; beyond this, no exact intervals


# ----------------------------------------------------------------------------- workload Gram over buckets
def _cell_gram(workload: Workload) -> tuple[np.ndarray, bool]:
    """(WᵀW, exact) on the cells."""
    block = block_gram(workload, np.arange(workload.shape[1] + 1))
    return (block, True) if block is not None else _full_gram(workload)


# dense n × n: an intermediate of the strategy and its trace, never shipped nor stored (they are kept instead)
_FULL_GRAMS = StrategyCache("greedy-h dense grams", limit=2, shipped=False)


def _full_gram(workload: Workload) -> tuple[np.ndarray, bool]:
    """(WᵀW, exact) for workloads without a bucket fast path, kept for the last two workloads."""
    return _FULL_GRAMS.get_or_compute(workload_key(workload), lambda: _compute_full_gram(workload))


def _compute_full_gram(workload: Workload) -> tuple[np.ndarray, bool]:
    """(WᵀW, exact); the all-range Gram as a proxy when the workload is too big to densify."""
    n = workload.shape[1]
    if n <= MAX_UNITS:
        try:
            return gram_matrix(workload), True
        except ValueError:
            pass
    # A workload we cannot densify: range queries stand in for its usage (docs/mechanisms.md).
    return allrange_block_gram(n, np.arange(n + 1)), False


def bucket_gram(workload: Workload, bounds: np.ndarray) -> tuple[np.ndarray, bool]:
    """Gram matrix of the workload reduced to buckets, and whether it is exact (not a proxy).

    Bucket c spans cells bounds[c] … bounds[c+1] − 1 and stands for their uniform expansion, so the
    reduced workload is W E with E_ic = 1/|B_c| (DAWA §4) and its Gram is EᵀWᵀWE.

    >>> from dplens.core.queries.workloads import Prefix
    >>> bucket_gram(Prefix(4), np.array([0, 2, 4]))[0].tolist()
    [[3.25, 1.5], [1.5, 1.25]]
    """
    bounds = np.asarray(bounds, dtype=np.int64)
    if bounds.size - 1 > MAX_UNITS:
        raise ValueError(f"the reduced Gram is dense: at most {MAX_UNITS} buckets, got {bounds.size - 1}")
    block = block_gram(workload, bounds)
    exact = True
    if block is None:
        full, exact = _full_gram(workload)
        starts = bounds[:-1]
        block = np.add.reduceat(np.add.reduceat(full, starts, axis=0), starts, axis=1)
    width = np.diff(bounds).astype(float)
    if np.any(width != 1):
        block /= np.outer(width, width)
    return block, exact


def gram_sketch(workload: Workload, bounds: np.ndarray, rows: int) -> np.ndarray:
    """Row j = S (EᵀWᵀWE) e_j for the bucket expansion E and a fixed Gaussian S (rows × buckets) / √rows.

    ‖S G u‖² estimates ‖G u‖² (Johnson–Lindenstrauss), which is all Greedy-H's greedy rule reads. S is
    drawn from a fixed seed: it is part of the algorithm, not privacy noise, and keeps runs reproducible.
    Range workloads take O((m + buckets) · rows) through their end points; others go through
    ``gram_apply`` on the cells.
    """
    buckets = bounds.size - 1
    ends = _interval_ends(workload)
    if ends is not None and buckets == workload.shape[1] and np.array_equal(bounds, np.arange(buckets + 1)):
        return _cell_ranges_sketch(*ends, buckets, rows)
    capacity = 1 << max(0, buckets - 1).bit_length()  # the first rows of a larger draw are the same draw
    return _sketch_of(workload, bounds, _gaussian(capacity, rows)[:buckets])


SKETCH_CHUNK = 2**16  # cells of the Gaussian sketch drawn at once on the cell path (bounds its memory)


def _cell_ranges_sketch(lo: np.ndarray, hi: np.ndarray, n: int, rows: int) -> np.ndarray:
    """WᵀW Sᵀ on the cells for 0/1 ranges, with S's rows drawn chunk by chunk (the same numbers as
    ``_gaussian``'s single draw) and never held whole: memory is the n × rows result plus a chunk.

    W Sᵀ needs S's prefix sums only at the 2m query ends; Wᵀ of it is a difference array.
    """
    position = np.concatenate((lo, hi + 1))
    order = np.argsort(position, kind="stable")
    sorted_position = position[order]
    at_ends = np.empty((position.size, rows))
    generator, running = np.random.default_rng(0), np.zeros(rows)
    for start in range(0, n, SKETCH_CHUNK):
        block = generator.standard_normal((min(SKETCH_CHUNK, n - start), rows)) / np.sqrt(rows)
        cumulative = np.vstack([running[None, :], running + np.cumsum(block, axis=0)])  # Σ_{i < t}, t = start…
        a, b = np.searchsorted(sorted_position, [start, start + block.shape[0]], side="left")
        at_ends[order[a:b]] = cumulative[sorted_position[a:b] - start]
        running = cumulative[-1]
    at_ends[order[np.searchsorted(sorted_position, n):]] = running
    answers = at_ends[lo.size:] - at_ends[: lo.size]                     # W Sᵀ, m × rows
    out = np.zeros((n + 1, rows))
    np.add.at(out, lo, answers)
    np.add.at(out, hi + 1, -answers)
    np.cumsum(out, axis=0, out=out)
    return out[:n]


def _interval_ends(workload: Workload) -> tuple[np.ndarray, np.ndarray] | None:
    """(lo, hi) of a 0/1 range workload given by its ends (not all-range: its m is quadratic)."""
    if all_ranges(workload):
        return None
    intervals = as_intervals(workload)
    return None if intervals is None else (intervals.lo, intervals.hi)


@lru_cache(maxsize=4)
def _gaussian(count: int, rows: int) -> np.ndarray:
    return np.random.default_rng(0).standard_normal((count, rows)) / np.sqrt(rows)


def _sketch_of(workload: Workload, bounds: np.ndarray, sketch: np.ndarray) -> np.ndarray:
    parts = gram_parts(workload)
    if len(parts) > 1:  # WᵀW = Σ the parts' Grams
        return sum(_sketch_of(part, bounds, sketch) for part in parts)  # type: ignore[return-value]  # arrays
    ends = _interval_ends(workload)
    if ends is not None:
        return _ranges_sketch(*ends, bounds, sketch)
    width = np.diff(bounds)
    spread = np.repeat(sketch / width[:, None], width, axis=0)          # E Sᵀ
    return np.add.reduceat(gram_apply(workload, spread), bounds[:-1], axis=0) / width[:, None]


@lru_cache(maxsize=8)
def _sorted_ends(lo: bytes, hi: bytes) -> tuple[np.ndarray, np.ndarray]:
    """The query end points lo and hi + 1 in order, and that order: the workload's, reused across runs."""
    position = np.concatenate((np.frombuffer(lo, dtype=np.int64), np.frombuffer(hi, dtype=np.int64) + 1))
    order = np.argsort(position, kind="stable")
    return position[order], order


def _ranges_sketch(lo: np.ndarray, hi: np.ndarray, bounds: np.ndarray, sketch: np.ndarray) -> np.ndarray:
    """EᵀWᵀW E Sᵀ for 0/1 ranges without touching the cells: only query ends and bucket bounds."""
    k, r = sketch.shape
    width = np.append(np.diff(bounds), 1).astype(float)
    padded = np.vstack([sketch, np.zeros((1, r))])
    before = np.vstack([np.zeros((1, r)), np.cumsum(sketch, axis=0)])   # Σ of whole buckets before c

    def prefix(t):  # Σ_{i < t} (E Sᵀ)_i: whole buckets, plus a share of the bucket holding t
        c = np.searchsorted(bounds, t, side="right") - 1
        return before[c] + ((t - bounds[c]) / width[c])[:, None] * padded[c]

    answers = prefix(hi + 1) - prefix(lo)                                 # W E Sᵀ, m × r
    # Σ_{i < b} (Wᵀ answers)_i = Σ_e w_e (b − p_e)₊ over the +answers at lo and −answers at hi + 1
    position, order = _sorted_ends(np.asarray(lo, dtype=np.int64).tobytes(), np.asarray(hi, dtype=np.int64).tobytes())
    weight = np.concatenate((answers, -answers))[order]
    first = np.vstack([np.zeros((1, r)), np.cumsum(weight, axis=0)])
    second = np.vstack([np.zeros((1, r)), np.cumsum(position[:, None] * weight, axis=0)])
    below = np.searchsorted(position, bounds, side="left")
    cumulative = bounds[:, None] * first[below] - second[below]
    return np.diff(cumulative, axis=0) / width[:-1, None]


# ----------------------------------------------------------------------------- the greedy hierarchy
@dataclass(frozen=True, eq=False)
class Hierarchy:
    """A weighted interval tree over `units` units and its least-squares operator.

    Per depth d (root = 0): node ``starts``/``sizes``; ``terminal`` marks leaves and uniform nodes
    (answered by one query); ``p`` and ``shrink`` are the Sherman–Morrison factors of internal nodes;
    ``u_before`` is (AᵀA)⁻¹1 of the children, per cell, before the node's own query is added.
    """

    units: int
    starts: tuple[np.ndarray, ...]
    sizes: tuple[np.ndarray, ...]
    terminal: tuple[np.ndarray, ...]
    p: tuple[np.ndarray, ...]
    shrink: tuple[np.ndarray, ...]
    u_before: tuple[np.ndarray, ...]
    query_start: np.ndarray
    query_size: np.ndarray
    query_weight: np.ndarray
    trace: float  # tr(WᵀW (AᵀA)⁻¹) for the Gram it was built for

    @property
    def cell_l1(self) -> np.ndarray:
        """Column L1 norms of the weighted strategy A (1 up to round-off)."""
        return sum_along_paths(self.units, self.query_start, self.query_size, self.query_weight)

    def measure(self, x: np.ndarray) -> np.ndarray:
        """A x: the weighted interval sums of x."""
        c = np.concatenate(([0.0], np.cumsum(x)))
        return self.query_weight * (c[self.query_start + self.query_size] - c[self.query_start])

    def least_squares(self, y: np.ndarray) -> np.ndarray:
        """(AᵀA)⁻¹ Aᵀ y in O(n log n), bottom-up through the recursive inverse."""
        return self.gram_solve(sum_along_paths(self.units, self.query_start, self.query_size, self.query_weight * y))

    def gram_solve(self, z: np.ndarray) -> np.ndarray:
        """(AᵀA)⁻¹ z for z of shape (units,) or a block (units, k) (columns solved at once, same steps)."""
        shape = z.shape
        z = z.reshape(shape[0], -1)
        zsum = np.vstack([np.zeros((1, z.shape[1])), np.cumsum(z, axis=0)])
        out = z.copy()
        for d in range(len(self.starts) - 1, -1, -1):
            starts, sizes, terminal = self.starts[d], self.sizes[d], self.terminal[d]
            inner = ~terminal
            if inner.any():
                cells = interval_cells(starts[inner], sizes[inner])
                totals = np.add.reduceat(out[cells], np.cumsum(sizes[inner]) - sizes[inner], axis=0)
                per_cell = np.repeat(np.arange(inner.sum()), sizes[inner])
                out[cells] = (out[cells] - (self.shrink[d][per_cell] * self.u_before[d])[:, None] * totals[per_cell]) \
                    / (self.p[d][per_cell] ** 2)[:, None]
            uniform = terminal & (sizes > 1)
            if uniform.any():  # one query over the node: spread its share evenly (pseudo-inverse J/n²)
                s, z_ = starts[uniform], sizes[uniform]
                out[interval_cells(s, z_)] = np.repeat((zsum[s + z_] - zsum[s]) / (z_**2)[:, None], z_, axis=0)
        return out.reshape(shape)


def interval_cells(starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Concatenated cell indices of the intervals [start, start + size)."""
    offsets = np.repeat(starts - (np.cumsum(sizes) - sizes), sizes)
    return np.arange(int(sizes.sum())) + offsets


def sum_along_paths(units: int, starts: np.ndarray, sizes: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Σ over intervals covering each cell of the interval's value (a difference array)."""
    diff = np.zeros(units + 1)
    np.add.at(diff, starts, values)
    np.add.at(diff, starts + sizes, -values)
    return np.cumsum(diff)[:units]


def _split(starts: np.ndarray, sizes: np.ndarray, branching: int):
    """Children of every node of size > 1 (the reference split: the last n mod b children are 1 larger)."""
    parents = np.flatnonzero(sizes > 1)
    size = sizes[parents]
    count = np.minimum(size, branching)
    rank = np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count)
    size_r = np.repeat(size, count)
    step, rem = size_r // branching, size_r % branching
    child = np.where(size_r <= branching, 1, step + (rank >= branching - rem))
    before = np.cumsum(child) - child
    first = np.repeat(before[np.cumsum(count) - count], count)
    return parents, count, np.repeat(starts[parents], count) + before - first, child


@lru_cache(maxsize=64)
def _layout(units: int, branching: int) -> tuple[tuple, tuple, tuple]:
    """Top-down tree layout (per depth: node starts, sizes; (parent, child count) links): shape only."""
    starts, sizes, children = [np.array([0])], [np.array([units])], []
    while (sizes[-1] > 1).any():
        parents, count, s, z = _split(starts[-1], sizes[-1], branching)
        children.append((parents, count))
        starts.append(s)
        sizes.append(z)
    for array in (*starts, *sizes, *(a for pair in children for a in pair)):
        array.flags.writeable = False  # shared between calls through the cache
    return tuple(starts), tuple(sizes), tuple(children)


def greedy_hierarchy(gram: np.ndarray | None, branching: int = 2, granularity: int = 100, *,
                     sketch: np.ndarray | None = None, norm: int = 1) -> Hierarchy:
    """Greedy-H's weighted hierarchy for a workload with Gram matrix ``gram`` over its units.

    The greedy rule only reads ‖(WᵀW) u‖² for node vectors u. With ``sketch`` (units × r, row j =
    S (WᵀW) e_j for an r × units Gaussian S/√r) it reads ‖S (WᵀW) u‖² instead, in O(units · r) per
    level; ``gram`` is then optional and only needed for the exact ``trace`` (NaN without it).

    ``norm`` is the sensitivity the weights are normalised for: 1 (Laplace, Li et al.: the weights on
    every root path sum to 1) or 2 (Gaussian: their squares do, so Δ₂ = 1 and the greedy rule minimises
    Δ₂² tr(WᵀW (AᵀA)⁻¹)). The local rule only sees the variances p² (subtree) and w² (own query), so
    the L2 version grids over w² = t, p² = 1 − t instead of w = 1 − p.

    >>> h = greedy_hierarchy(np.ones((4, 4)))  # a total query only: one query over everything
    >>> h.query_size.tolist(), h.query_weight.tolist()
    ([4], [1.0])
    """
    rows, gram = _greedy_inputs(gram, sketch, norm)
    units = rows.shape[0]
    starts, sizes, children = _layout(units, branching)
    depth = len(starts)
    column_energy = np.einsum("ij,ij->i", rows, rows)  # ‖(WᵀW) e_j‖²: the reference's leaf error metric
    diagonal = np.diag(gram) if gram is not None else np.full(units, np.nan)
    tolerance = 1e-12 * max(float(np.abs(rows).max()), 1e-300)
    u_cell, grid = np.ones(units), np.arange(granularity, dtype=float)
    terminal: list[Any] = [None] * depth  # per level, filled bottom-up
    p_all: list[Any] = [None] * depth
    shrink_all: list[Any] = [None] * depth
    u_before: list[Any] = [None] * depth
    below: Any = None  # (err, trace, k, rows V, ‖V‖², uniform) of the level underneath; V = (WᵀW)_node u_node
    for d in range(depth - 1, -1, -1):
        s, z = starts[d], sizes[d]
        nodes = s.size
        err, trace, energy = column_energy[s], diagonal[s], column_energy[s]
        k, p, shrink = np.ones(nodes), np.ones(nodes), np.zeros(nodes)
        uniform, inner = np.ones(nodes, dtype=bool), np.zeros(nodes, dtype=bool)
        if d < depth - 1:
            parents, count = children[d]
            first = np.cumsum(count) - count
            uniform[parents] = _uniform_parents(rows, gram, below[5], starts[d + 1], np.repeat(s[parents], count),
                                                first, count, tolerance)
            inner[parents] = ~uniform[parents]
        v = _leaf_rows(rows, s, inner, units)
        if inner.any():
            sel = inner[parents]
            idx = parents[sel]
            v_sum, m_all, m_blocks, sum_err, sum_trace, kk = _child_sums(below, first, sel)
            cells = interval_cells(s[idx], z[idx])
            quad = _quadratic_forms(gram, sketch is not None, u_cell, v_sum, cells, z[idx])
            total, best, pp = _local_rule(sum_err, m_all, m_blocks, kk, branching ** (-d / 2.0), grid, granularity,
                                          norm)
            own2 = _own_weight(pp, norm) ** 2
            cc = own2 / (pp**2 + kk * own2)
            scale = (1 - cc * kk) / pp**2
            u_before[d] = u_cell[cells].copy()
            u_cell[cells] *= np.repeat(scale, z[idx])
            err[idx] = total[np.arange(idx.size), best] * granularity**2
            trace[idx] = (sum_trace - cc * quad) / pp**2
            k[idx] = kk * scale
            v_sum *= scale[:, None]
            if v is None:
                v = v_sum
            else:
                v[idx] = v_sum
            energy[idx] = m_all * scale**2
            p[idx], shrink[idx] = pp, cc
        flat = parents[uniform[parents]] if d < depth - 1 else np.zeros(0, dtype=np.int64)
        if flat.size:  # a constant Gram block: one query, its estimate spread evenly
            u_cell[interval_cells(s[flat], z[flat])] = np.repeat(1.0 / z[flat], z[flat])
        terminal[d], p_all[d], shrink_all[d] = ~inner, p[inner], shrink[inner]
        if u_before[d] is None:
            u_before[d] = np.zeros(0)
        below = (err, trace, k, v, energy, uniform)
    q_start, q_size, q_weight = _top_down_queries(starts, sizes, children, terminal, p_all, norm)
    asked = q_weight > 0
    return Hierarchy(units, tuple(starts), tuple(sizes), tuple(terminal), tuple(p_all), tuple(shrink_all),
                     tuple(u_before), q_start[asked], q_size[asked], q_weight[asked], float(below[1][0]))


def _uniform_parents(rows: np.ndarray, gram: np.ndarray | None, c_uniform: np.ndarray, c_start: np.ndarray,
                     p_start: np.ndarray, first: np.ndarray, count: np.ndarray, tolerance: float) -> np.ndarray:
    """Per parent: uniform (all its Gram columns equal) iff its children are and their first columns equal its
    own; the diagonal entry screens cheaply before the full comparison."""
    same = c_uniform.copy()
    if gram is not None:  # screen on one entry before comparing whole columns
        same &= np.abs(gram[c_start, c_start] - gram[c_start, p_start]) <= tolerance
    maybe = np.logical_and.reduceat(same, first)
    if maybe.any():
        check = np.repeat(maybe, count)
        same[check] &= _rows_equal(rows, c_start[check], p_start[check], tolerance)
    return np.logical_and.reduceat(same, first)


def _greedy_inputs(gram: np.ndarray | None, sketch: np.ndarray | None,
                   norm: int) -> tuple[np.ndarray, np.ndarray | None]:
    """The rows the greedy rule reads (the sketch, else the Gram) and the Gram, checked."""
    if norm not in (1, 2):
        raise ValueError(f"norm must be 1 (Laplace) or 2 (Gaussian), got {norm!r}")
    rows = np.asarray(sketch if sketch is not None else gram, dtype=float)
    if rows.shape[0] > MAX_UNITS and sketch is None:
        raise ValueError(f"Greedy-H supports at most {MAX_UNITS} units, got {rows.shape[0]}; use hb for larger domains")
    return rows, None if gram is None else np.asarray(gram, dtype=float)


def _leaf_rows(rows: np.ndarray, s: np.ndarray, inner: np.ndarray, units: int) -> np.ndarray | None:
    """V = (WᵀW) u per node where the node is a leaf (row j is column j: WᵀW is symmetric), the inner nodes' rows
    left to fill; the rows themselves where every cell is a leaf (no copies of n × r arrays where avoidable:
    they bound Greedy-H's memory at 2^20 cells); None when every node is inner."""
    if inner.all():
        return None
    if not inner.any() and s.size == units:
        return rows
    v = np.empty((s.size, rows.shape[1]))
    v[~inner] = rows[s[~inner]]
    return v


def _child_sums(below: tuple, first: np.ndarray, sel: np.ndarray) -> tuple[np.ndarray, ...]:
    """Over the selected parents' children: Σ V, ‖Σ V‖², Σ ‖V‖², Σ error, Σ trace and Σ k."""
    c_err, c_trace, c_k, c_v, c_energy, _ = below
    v_sum = np.add.reduceat(c_v, first, axis=0)
    if not sel.all():
        v_sum = v_sum[sel]
    return (v_sum, np.einsum("ij,ij->i", v_sum, v_sum), np.add.reduceat(c_energy, first)[sel],
            np.add.reduceat(c_err, first)[sel], np.add.reduceat(c_trace, first)[sel], np.add.reduceat(c_k, first)[sel])


def _quadratic_forms(gram: np.ndarray | None, sketched: bool, u_cell: np.ndarray, v_sum: np.ndarray,
                     cells: np.ndarray, widths: np.ndarray) -> np.ndarray:
    """uᵀ(WᵀW)u per node: from V = (WᵀW)u, from the Gram itself when V is only a sketch, NaN without a Gram."""
    if gram is not None and not sketched:
        owner = np.repeat(np.arange(widths.size), widths)
        return np.add.reduceat(u_cell[cells] * v_sum[owner, cells], np.cumsum(widths) - widths)
    if gram is not None:
        return np.array([u_cell[c] @ gram[np.ix_(c, c)] @ u_cell[c] for c in np.split(cells, np.cumsum(widths)[:-1])])
    return np.full(widths.size, np.nan)


def _local_rule(sum_err: np.ndarray, m_all: np.ndarray, m_blocks: np.ndarray, kk: np.ndarray, decay: float,
                grid: np.ndarray, granularity: int, norm: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The reference's local rule: a grid over p, cross terms damped by ``decay`` = 1/b^(depth/2); returns the
    error over the grid, the best grid index and its p per node."""
    # e1 ∝ p² (the subtree's variance weight), e2 ∝ w² (the node's own query); L1: w = 1 − p, L2: w² = 1 − p²
    e1 = (granularity - grid) ** 2 if norm == 1 else (granularity - grid) * granularity
    e2 = (grid**2 if norm == 1 else grid * granularity) * decay
    mixed = (m_all - m_blocks) * decay + m_blocks
    total = (sum_err[:, None] - mixed[:, None] * e2 / (e1 + e2 * kk[:, None])) / e1
    best = np.argmin(total, axis=1)
    pp = 1.0 - best / granularity if norm == 1 else np.sqrt(1.0 - best / granularity)
    return total, best, pp


def _top_down_queries(starts, sizes, children, terminal, p_all, norm: int) -> tuple[np.ndarray, ...]:
    """(start, size, weight) of every node's own query, top-down: a node's query gets (1 − p) of what reaches it
    (L1; √(1 − p²) under L2), its subtree p."""
    start_parts: list[np.ndarray] = []
    size_parts: list[np.ndarray] = []
    weight_parts: list[np.ndarray] = []
    reach = np.ones(1)
    for d in range(len(starts)):
        s, z = starts[d], sizes[d]
        p = np.ones(s.size)
        p[~terminal[d]] = p_all[d]
        own = np.where(terminal[d], reach, reach * _own_weight(p, norm))
        start_parts.append(s)
        size_parts.append(z)
        weight_parts.append(own)
        if d < len(starts) - 1:
            parents, count = children[d]
            passed = np.where(terminal[d], 0.0, reach * p)
            reach = np.repeat(passed[parents], count)
    return tuple(np.concatenate(a) for a in (start_parts, size_parts, weight_parts))


def _own_weight(p: np.ndarray, norm: int) -> np.ndarray:
    """A node's own query weight when its subtree keeps ``p``: 1 − p (L1) or √(1 − p²) (L2)."""
    return 1.0 - p if norm == 1 else np.sqrt(np.maximum(1.0 - p**2, 0.0))


STRATEGY_CACHE = 8  # workloads whose Greedy-H strategy is kept (it depends on the workload only)
_STRATEGIES = StrategyCache("greedy-h strategies", limit=STRATEGY_CACHE)
_TRACES = StrategyCache("greedy-h traces", limit=STRATEGY_CACHE)  # exact traces of sketched strategies
EXACT_CELLS = 2048  # up to this many cells the greedy rule reads the exact Gram, beyond it a sketch …
CELL_SKETCH_ROWS = 64  # … with this many rows (it reproduced the exact strategies at n = 2048) …
LARGE_CELLS, LARGE_SKETCH_ROWS = 2**16, 32  # … and beyond 65,536 cells with 32 (memory: n × rows floats;
# 32 rows matched the exact Gram's strategy error to 1e-4 at n = 2048 and 4096 on ranges and prefix)


def l2_objective(tree: Hierarchy) -> float:
    """Δ₂(A)² tr(WᵀW (AᵀA)⁻¹): the Gaussian error of a hierarchy, up to σ²/m per unit Δ₂ (NaN when sketched)."""
    squares = sum_along_paths(tree.units, tree.query_start, tree.query_size, tree.query_weight**2)
    return float(squares.max()) * tree.trace


def cell_strategy(workload: Workload, branching: int, granularity: int, norm: int = 1) -> tuple[Hierarchy, str]:
    """The strategy on the cells and how its greedy rule saw the workload ("exact", "sketch", "proxy").

    ``norm=2`` (Gaussian noise): the L2-normalised greedy tree, or the L1 one when its exact
    Δ₂² tr(WᵀW (AᵀA)⁻¹) is smaller (the greedy rule is a heuristic; this keeps L2 never worse).
    """
    return _STRATEGIES.get_or_compute((workload_key(workload), branching, granularity, norm),
                                      lambda: _compute_cell_strategy(workload, branching, granularity, norm))


def _compute_cell_strategy(workload: Workload, branching: int, granularity: int, norm: int) -> tuple[Hierarchy, str]:
    n = workload.shape[1]
    if n <= EXACT_CELLS:
        gram, exact = bucket_gram(workload, np.arange(n + 1))
        tree = greedy_hierarchy(gram, branching, granularity, norm=norm)
        if norm == 2:
            l1_tree = cell_strategy(workload, branching, granularity)[0]
            if l2_objective(l1_tree) < l2_objective(tree):
                tree = l1_tree
        return tree, "exact" if exact else "all-range proxy"
    # O(n · rows) per level instead of O(n²); the exact error is computed on demand
    rows = CELL_SKETCH_ROWS if n <= LARGE_CELLS else LARGE_SKETCH_ROWS
    sketch = gram_sketch(workload, np.arange(n + 1), rows)
    return (greedy_hierarchy(None, branching, granularity, sketch=sketch, norm=norm), f"sketch ({rows} rows)")


def hierarchy_trace(tree: Hierarchy, gram: np.ndarray) -> float:
    """tr(WᵀW (AᵀA)⁻¹) of a hierarchy for the Gram ``gram``, through the same recursion as the inverse.

    >>> tree = greedy_hierarchy(np.eye(4))
    >>> round(hierarchy_trace(tree, np.eye(4)), 9) == round(tree.trace, 9)
    True
    """
    below = None
    for d in range(len(tree.starts) - 1, -1, -1):
        starts, sizes, terminal = tree.starts[d], tree.sizes[d], tree.terminal[d]
        trace = gram[starts, starts].astype(float)  # a leaf, or a uniform node: its Gram block is constant
        if below is not None:
            child_starts, child_trace = below
            parent = np.searchsorted(starts, child_starts, side="right") - 1
            summed = np.bincount(parent, weights=child_trace, minlength=starts.size)
            inner = np.flatnonzero(~terminal)
            quad, offset, u = np.empty(inner.size), 0, tree.u_before[d]
            for i, (s, z) in enumerate(zip(starts[inner].tolist(), sizes[inner].tolist(), strict=True)):
                part = u[offset:offset + z]
                quad[i] = part @ gram[s:s + z, s:s + z] @ part
                offset += z
            trace[inner] = (summed[inner] - tree.shrink[d] * quad) / tree.p[d] ** 2
        below = (starts, trace)
    return float(below[1][0])  # type: ignore[index]  # a hierarchy has at least one level


def _rows_equal(rows: np.ndarray, a: np.ndarray, b: np.ndarray, tolerance: float, chunk: int = 2**14) -> np.ndarray:
    """rows[a[i]] == rows[b[i]] within ``tolerance``, in chunks (the gathered rows would be n × r)."""
    out = np.empty(a.size, dtype=bool)
    for start in range(0, a.size, chunk):
        part = slice(start, start + chunk)
        out[part] = np.all(np.abs(rows[a[part]] - rows[b[part]]) <= tolerance, axis=1)
    return out


def check_tree_settings(branching: int, granularity: int) -> None:
    if isinstance(branching, bool) or not isinstance(branching, int | np.integer) or branching < 2:
        raise ValueError(f"branching must be an integer >= 2, got {branching!r}")
    if isinstance(granularity, bool) or not isinstance(granularity, int | np.integer) or granularity < 2:
        raise ValueError(f"granularity must be an integer >= 2, got {granularity!r}")


@dataclass(frozen=True)
class GreedyH(MeasuredPlan):
    """Greedy-H on the cells (Li et al. PVLDB 2014 §4): Laplace(1/ε) on the weighted tree, least squares.

    ``expected_mse`` is exact: 2 Δ₁² tr(WᵀW (AᵀA)⁻¹) / (m ε²) with Δ₁ = 1. Workloads without a closed-form
    Gram that are too large to densify use the all-range Gram as a proxy for choosing the weights (the
    error formula then uses that proxy too, and ``params['gram']`` says so).

    >>> from dplens.core.queries.workloads import AllRange
    >>> round(GreedyH().expected_mse(AllRange(8), 2 ** 0.5), 4) > 0
    True
    """

    summary: ClassVar[str] = "Greedy-H: a weighted tree of ranges fitted to your workload."
    STRATEGY_CACHES: ClassVar[tuple[StrategyCache, ...]] = (_STRATEGIES, _TRACES, _FULL_GRAMS)

    branching: int = setting(2, BRANCHING_RANGE)
    granularity: int = setting(100, GRANULARITY_RANGE)
    gaussian_summary: ClassVar[str] = "Greedy-H's weighted tree with Gaussian noise ((ε, δ) or zCDP)."
    noise: str = setting("laplace", NOISE_RANGE)
    name: str = "greedy-h"
    data_dependent: bool = False

    @property
    def weights_norm(self) -> int:
        """The sensitivity the tree's weights are chosen for: L1 under Laplace noise; L2 under Gaussian noise, whose
        error is Δ₂² tr(WᵀW (AᵀA)⁻¹), so Li et al.'s (2014) rule holds the path sums of *squared* weights at 1."""
        return 2 if self.noise == "gaussian" else 1

    def strategy_norms(self, workload: Workload) -> tuple[np.ndarray, np.ndarray]:
        """Σ of the query weights (L1) and √Σ of their squares (L2) along each cell's root path."""
        tree, _ = cell_strategy(workload, self.branching, self.granularity, self.weights_norm)
        l2 = np.sqrt(sum_along_paths(tree.units, tree.query_start, tree.query_size, tree.query_weight**2))
        return tree.cell_l1, l2

    def __post_init__(self) -> None:
        check_tree_settings(self.branching, self.granularity)

    def cost(self, workload: Workload) -> Cost:
        """The weighted hierarchy over at most 4096 units and their dense unit × unit Gram."""
        return tree_cost(workload, int(self.granularity), int(self.branching), dense_gram=True)

    def measurement(self, workload: Workload, epsilon: float) -> LaplaceMeasurement:
        """Lap(Δ₁/ε) on every weighted query, Δ₁ the largest path sum of weights (1 for the L1 tree)."""
        tree, _ = cell_strategy(workload, self.branching, self.granularity, self.weights_norm)
        return LaplaceMeasurement(float(tree.cell_l1.max()) / epsilon)

    def measure(self, x: np.ndarray, workload: Workload, measurement: Measurement, rng: np.random.Generator) -> Release:
        """The weighted tree's queries measured with ``measurement`` (x validated by ``run``), then least squares.

        >>> from dplens.core.queries.workloads import Prefix
        >>> GreedyH().measure(np.zeros(4), Prefix(4), LaplaceMeasurement(2.0),
        ...                   np.random.default_rng(0)).privacy_loss
        0.5
        """
        tree, metric = cell_strategy(workload, self.branching, self.granularity, self.weights_norm)
        noisy = measurement.noisy(tree.measure(x), rng)
        estimate = tree.least_squares(noisy)
        measured = (laplace_record(f"the weighted tree's {tree.query_weight.size} queries",
                                   [(tree.cell_l1, measurement)], noisy),)
        loss = pure_epsilon(measured)
        return Release(self.name, PureDP(loss), loss, workload.matvec(estimate), estimate,
                       {"branching": self.branching, "granularity": self.granularity, **measurement.params,
                        "queries": int(tree.query_weight.size), "gram": metric},
                       {"hierarchy": tree}, workload=workload, measurements=measured)

    def reconstruction(self, release: Release, workload: Workload) -> Reconstruction | None:
        """x̂ − x = L z with L formed densely (up to DENSE_RECONSTRUCTION entries); None for another release."""
        noise = stated_noise(self, release, workload)
        if noise is None:
            return None
        hierarchy = (release.details or {}).get("hierarchy")
        if hierarchy is None:
            hierarchy = cell_strategy(workload, self.branching, self.granularity, self.weights_norm)[0]
        n, q = workload.shape[1], hierarchy.query_weight.size
        if hierarchy.units != n or n * q > DENSE_RECONSTRUCTION:
            return None
        dense = _greedy_solve(hierarchy, np.eye(q))  # L, n × q
        return Reconstruction(*noise, q, lambda v: dense.T @ v)

    def laplace_expected_mse(self, workload: Workload, epsilon: float) -> float:
        """Per-query MSE 2 (Δ₁/ε)² tr(WᵀW (AᵀA)⁻¹) / m of the least-squares estimate."""
        tree, _ = cell_strategy(workload, self.branching, self.granularity, self.weights_norm)
        trace = tree.trace
        if not np.isfinite(trace):  # a sketched strategy: its exact error needs the Gram, once per workload
            if workload.shape[1] > MAX_UNITS:
                raise ValueError(f"greedy-h's exact expected_mse needs the dense {workload.shape[1]}-cell Gram; "
                                 f"it is computed up to {MAX_UNITS} cells (runs work at any size)")
            key = (workload_key(workload), self.branching, self.granularity, self.weights_norm)
            trace = _TRACES.get_or_compute(key, lambda: hierarchy_trace(tree, _cell_gram(workload)[0]))
        sensitivity = float(tree.cell_l1.max())
        return 2.0 * (sensitivity / epsilon) ** 2 * trace / workload.shape[0]


def _greedy_solve(tree, y: np.ndarray) -> np.ndarray:
    """greedy-h's ``Hierarchy.least_squares`` on a (queries × k) block at once: Aᵀy by interval ends, then
    the hierarchy's own batched (AᵀA)⁻¹."""
    q = tree.query_weight.size
    ends = scipy.sparse.csr_matrix((np.r_[tree.query_weight, -tree.query_weight],
                                    (np.r_[tree.query_start, tree.query_start + tree.query_size],
                                     np.r_[np.arange(q), np.arange(q)])), shape=(tree.units + 1, q))
    return tree.gram_solve(np.cumsum(ends @ y, axis=0)[:tree.units])
