"""DAWA: data- and workload-aware range queries (Li, Hay, Miklau, Wang, PVLDB 2014).

Stage 1 (ε₁ = ratio·ε) privately partitions the cells into intervals whose counts are nearly uniform:
every candidate bucket (all intervals whose length is a power of two, DAWA's approximate variant used
by DPBench) costs its L1 deviation Σ|x_i − x̄_B| plus the noise cost 1/ε₂ of measuring it, perturbed by
Laplace noise scaled to the deviation's sensitivity; a dynamic programme picks the cheapest partition.
Stage 2 (ε₂ = ε − ε₁) runs Greedy-H on the bucket counts for the workload reduced to buckets, and the
estimate spreads each bucket's count evenly over its cells.

The deviations of all O(n log n) candidate buckets come from one wavelet matrix over the ranks of x
(count and sum of the values below each window's mean, in O(log n) vectorised steps), so stage 1 is
O(n log² n) numpy work plus an O(n log n) scalar loop for the dynamic programme. Both have compiled kernels
(``kernels``), which a process loads only once its NumPy partitions have cost as much as numba's start-up.

>>> import numpy as np
>>> from dplens.core.queries.workloads import Prefix
>>> release = DAWA().run(np.array([5.0, 5, 5, 5, 0, 0, 9, 9]), Prefix(8), 1.0, np.random.default_rng(0))
>>> release.privacy_loss <= 1.0, release.estimate.shape
(True, (8,))
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dplens.core.mechanisms.cache import StrategyCache
from dplens.core.mechanisms.contract import (
    BRANCHING_RANGE,
    RATIO_RANGE,
    Release,
    check_inputs,
    check_ratio,
    setting,
)
from dplens.core.mechanisms.cost_model import Cost, tree_cost
from dplens.core.mechanisms.greedy_h import (
    GRANULARITY_RANGE,
    bucket_gram,
    check_tree_settings,
    gram_sketch,
    greedy_hierarchy,
)
from dplens.core.mechanisms.measurement import (
    LaplaceMeasurement,
    PrivateChoice,
    laplace_record,
    pure_epsilon,
    stated_at,
)
from dplens.core.privacy.definitions import Privacy, PureDP
from dplens.core.queries.workloads import Workload

EXACT_BUCKETS = 256   # up to this many buckets Greedy-H reads the exact reduced Gram, beyond it a sketch
BUCKET_SKETCH_ROWS = 16  # rows of that sketch: 16 left DPBench errors unchanged against the exact Gram
DIRECT_WINDOW = 32    # windows up to this length are summed directly, longer ones use the wavelet matrix
# The compiled kernels' first use in a process costs numba's start-up (about 0.4 s of CPU, 0.4-1 s of wall time:
# importing numba, then its first load of a cached kernel), against 2-3 times their time per run on NumPy. Up to
# NUMPY_UP_TO cells the partition always runs on NumPy; above, on NumPy and SciPy until the process has spent
# NUMPY_SECONDS of CPU on such partitions (as much as the start-up: a rent-or-buy rule, never over twice the better
# choice), then compiled; above COMPILED_ABOVE cells, compiled at once. So a release never waits for numba, and a
# sweep soon runs compiled.
NUMPY_UP_TO = 512
NUMPY_SECONDS = 0.4
COMPILED_ABOVE = 2**17  # from here one NumPy run costs more than the start-up and a compiled run
BATCH_WINDOWS = 2**18  # windows whose counts below the mean are read in one vectorised walk (memory)


class _KernelChoice:
    """Which partition code a run uses: NumPy up to ``NUMPY_UP_TO`` cells; above, NumPy until this process has spent
    ``NUMPY_SECONDS`` of CPU on it, or compiled at once above ``COMPILED_ABOVE`` cells or when the kernels are loaded
    already (MWEM and AHP load them too). Both give the same numbers to the bit; only the time differs. ``always``
    (tests, benches) fixes the answer above ``NUMPY_UP_TO`` cells."""

    def __init__(self, always: bool | None = None) -> None:
        self.numpy_seconds = 0.0
        self.always = always

    def compiled(self, n: int) -> bool:
        """Whether a partition of n cells runs compiled."""
        if n <= NUMPY_UP_TO:
            return False
        if self.always is not None:
            return self.always
        return (n > COMPILED_ABOVE or self.numpy_seconds >= NUMPY_SECONDS
                or "dplens.core.mechanisms.kernels" in sys.modules)

    def spent(self, n: int, seconds: float) -> None:
        """Count the CPU seconds of a NumPy partition of n cells (above ``NUMPY_UP_TO`` only)."""
        if n > NUMPY_UP_TO:
            self.numpy_seconds += seconds


_KERNELS = _KernelChoice()


def window_deviations(x: np.ndarray, length: int) -> np.ndarray:
    """L1 deviation Σ|x_i − mean| of every window x[s : s + length], s = 0 … n − length.

    >>> window_deviations(np.array([1.0, 3, 3, 7]), 2).tolist()
    [2.0, 0.0, 4.0]
    """
    return _Deviations(np.asarray(x, dtype=float)).windows(np.array([length]))[0]


class _Deviations:
    """A wavelet matrix over the ranks of x: count and sum of values < t inside any position range.

    Integer counts whose sums are exact in floating point (below 2^53) are ranked among their distinct values,
    so the matrix has bit_length(#distinct − 1) levels instead of bit_length(n): 5 or 6 instead of 13 on sparse
    DPBench histograms. Every count and sum it returns is then an exact integer, whatever the levels, so the
    deviations are the same to the bit as with the ranks of a stable sort (which other data keep). Without
    ``compiled`` the NumPy versions of the kernels serve, without importing numba.
    """

    def __init__(self, x: np.ndarray, *, compiled: bool = False) -> None:
        n = x.size
        self.x, self.n = x, n
        self.compiled = compiled
        distinct = np.unique(x)
        self.exact = bool(np.array_equal(x, np.round(x)) and float(np.abs(x).sum()) < 2.0**53)
        if self.exact:
            self.sorted, rank = distinct, np.searchsorted(distinct, x).astype(np.int64)
            self.bits = max(1, int(distinct.size - 1).bit_length())
        else:
            order = np.argsort(x, kind="stable")
            self.sorted = x[order]
            rank = np.empty(n, dtype=np.int64)
            rank[order] = np.arange(n)
            self.bits = max(1, int(n).bit_length())
        if self.compiled:
            from dplens.core.mechanisms.kernels import dawa_wavelet_levels

            self.zeros, self.zero_sums, self.zero_total = dawa_wavelet_levels(x, rank, self.bits)
        else:
            self.zeros, self.zero_sums, self.zero_total = _wavelet_levels(x, rank, self.bits)

    def below(self, lo: np.ndarray, hi: np.ndarray, threshold: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Count and sum of x[i], lo ≤ i < hi, whose rank is below `threshold` (one compiled walk per query)."""
        lo, hi, threshold = (np.asarray(v, dtype=np.int64) for v in (lo, hi, threshold))
        if not self.compiled:
            return _below(self.zeros, self.zero_sums, self.zero_total, self.bits, lo, hi, threshold)
        from dplens.core.mechanisms.kernels import dawa_below

        return dawa_below(self.zeros, self.zero_sums, self.zero_total, self.bits, lo, hi, threshold)

    def windows(self, lengths: np.ndarray) -> list[np.ndarray]:
        """Deviation of every window of each length: 2 Σ_{x_i < mean} (mean − x_i) (Σ(x_i − mean) = 0).

        Short windows are summed directly; long ones go through the wavelet matrix. Compiled, one pass computes every
        length; on NumPy, one vectorised sum per short length and one walk for the long windows of all lengths.
        """
        if self.compiled:
            from dplens.core.mechanisms.kernels import dawa_deviations

            lengths = np.asarray(lengths, dtype=np.int64)
            prefix = np.concatenate(([0.0], np.cumsum(self.x)))
            nonzero = np.concatenate(([0], np.cumsum(self.x != 0)))
            flat = dawa_deviations(self.x, prefix, nonzero, self.sorted, self.zeros, self.zero_sums, self.zero_total,
                                   self.bits, lengths, DIRECT_WINDOW, self.exact)
            return np.split(flat, np.cumsum(self.n - lengths[:-1] + 1))
        out = {}
        for length in (length for length in lengths if length <= DIRECT_WINDOW):
            window = np.lib.stride_tricks.sliding_window_view(self.x, int(length))
            out[length] = np.abs(window - window.mean(axis=1, keepdims=True)).sum(axis=1)
        long = np.array([length for length in lengths if length > DIRECT_WINDOW], dtype=np.int64)
        out.update(zip(long.tolist(), self._long_windows(long), strict=True))
        return [out[length] for length in lengths]

    def _long_windows(self, lengths: np.ndarray) -> list[np.ndarray]:
        """The windows of ``lengths`` on NumPy: those holding a nonzero cell, all lengths together in batches of
        ``BATCH_WINDOWS``, through the wavelet matrix; the others are +0.0, as compiled."""
        if lengths.size == 0:
            return []
        sizes = self.n - lengths + 1
        ends = np.cumsum(sizes)
        flat = np.zeros(int(ends[-1]))
        prefix = np.concatenate(([0.0], np.cumsum(self.x)))
        nonzero = np.concatenate(([0], np.cumsum(self.x != 0)))
        for first in range(0, flat.size, BATCH_WINDOWS):
            at = np.arange(first, min(first + BATCH_WINDOWS, flat.size))
            which = np.searchsorted(ends, at, side="right")  # the length of window `at`
            lo = at - (ends - sizes)[which]
            hi = lo + lengths[which]
            live = nonzero[hi] != nonzero[lo]
            at, lo, hi = at[live], lo[live], hi[live]
            mean = (prefix[hi] - prefix[lo]) / (hi - lo)
            count, total = self.below(lo, hi, np.searchsorted(self.sorted, mean, side="left"))
            flat[at] = np.maximum(2.0 * (count * mean - total), 0.0)
        return np.split(flat, ends[:-1])


def _wavelet_levels(x: np.ndarray, rank: np.ndarray, bits: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``kernels.dawa_wavelet_levels`` in NumPy (the same sums in the same order), for small histograms."""
    zeros = np.zeros((bits, x.size + 1), dtype=np.int64)
    zero_sums = np.zeros((bits, x.size + 1))
    zero_total = np.zeros(bits, dtype=np.int64)
    values = x.copy()
    for level in range(bits):
        zero = ((rank >> (bits - 1 - level)) & 1) == 0
        np.cumsum(zero, out=zeros[level, 1:])
        np.cumsum(np.where(zero, values, 0.0), out=zero_sums[level, 1:])
        zero_total[level] = zeros[level, -1]
        rank = np.concatenate((rank[zero], rank[~zero]))
        values = np.concatenate((values[zero], values[~zero]))
    return zeros, zero_sums, zero_total


def _below(zeros: np.ndarray, zero_sums: np.ndarray, zero_total: np.ndarray, bits: int, lo: np.ndarray,
           hi: np.ndarray, threshold: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``kernels.dawa_below`` in NumPy, one level at a time over all queries. A walk whose range is empty has
    nothing more to add (as compiled, it stops): once a quarter of the walks are over, the rest go on alone."""
    count = np.zeros(lo.size, dtype=np.int64)
    total = np.zeros(lo.size)
    query = np.arange(lo.size)  # the walks still going, and their partial count and total
    walk_count, walk_total = count.copy(), total.copy()
    for level in range(bits):
        going = lo != hi
        if 4 * np.count_nonzero(going) < 3 * going.size:
            over = ~going
            count[query[over]], total[query[over]] = walk_count[over], walk_total[over]
            query, lo, hi, threshold = query[going], lo[going], hi[going], threshold[going]
            walk_count, walk_total = walk_count[going], walk_total[going]
        up = ((threshold >> (bits - 1 - level)) & 1).astype(bool)
        lo0, hi0 = zeros[level][lo], zeros[level][hi]
        walk_count += np.where(up, hi0 - lo0, 0)
        walk_total = np.where(up, walk_total + (zero_sums[level][hi] - zero_sums[level][lo]), walk_total)
        lo = np.where(up, zero_total[level] + lo - lo0, lo0)
        hi = np.where(up, zero_total[level] + hi - hi0, hi0)
    count[query], total[query] = walk_count, walk_total
    return count.astype(np.float64), total


def l1_partition(x: np.ndarray, epsilon_partition: float, epsilon_measure: float,
                 rng: np.random.Generator) -> tuple[np.ndarray, float]:
    """DAWA stage 1: bucket bounds [0, b₁, …, n] of a private L1 partition, and its privacy loss.

    A bucket of length L ≥ 2 scores dev(B) + 1/ε₂ + Lap(Δ_L/ε₁), floored at 1/ε₂, where
    Δ_L = 2 − 1/L − 1/n bounds the change of dev(B) when one count moves by one (DPBench's
    calibration); singletons score 1/ε₂ exactly (their deviation is always 0). The minimum-cost
    partition into such buckets is ε₁-DP (Li et al. 2014, §3: the noisy cost of every partition is a
    sum over disjoint buckets); the loss returned is max_L Δ_L / scale_L, i.e. ε₁ recovered from the
    noise actually drawn.
    """
    n = x.size
    noise_cost = 1.0 / epsilon_measure
    lengths = 2 ** np.arange(1, max(1, int(n).bit_length()))
    lengths = lengths[lengths <= n]
    if lengths.size == 0:
        return np.array([0, n]), 0.0
    sensitivity = 2.0 - 1.0 / lengths - 1.0 / n
    measurements = [LaplaceMeasurement(scale) for scale in sensitivity / epsilon_partition]
    compiled = _KERNELS.compiled(n)
    started = time.thread_time()
    deviations = _DEVIATIONS.get_or_compute((x.tobytes(), lengths.tobytes()),
                                            lambda: _Deviations(x, compiled=compiled).windows(lengths))
    costs = [m.noisy(dev + noise_cost, rng) for dev, m in zip(deviations, measurements, strict=True)]
    # a max, not pure_loss's sum: each partition's noisy cost sums over disjoint buckets (Li et al. 2014, §3)
    loss = max(float(delta) / m.scale for delta, m in zip(sensitivity, measurements, strict=True))
    bounds = cheapest_partition(costs, lengths, noise_cost, n, compiled=compiled)
    if not compiled:
        _KERNELS.spent(n, time.thread_time() - started)
    return bounds, loss


# Window deviations depend on the data only: a sweep re-uses them across runs and epsilons. Keyed by the
# data, so never shipped with a sweep's strategies nor stored: each worker computes them for its data.
_DEVIATIONS = StrategyCache("dawa window deviations", limit=4, shipped=False)


def cheapest_partition(costs: list[np.ndarray], lengths: np.ndarray, singleton: float, n: int, *,
                       compiled: bool = False) -> np.ndarray:
    """Bounds of the minimum-cost partition of n cells into singletons (cost ``singleton`` each) and
    buckets [s, s + lengths[k]) scoring costs[k][s] floored at ``singleton``; ties go to the longer bucket (as
    the reference).

    cost[t] = min(cost[t − 1] + singleton, min_k cost[t − L_k] + score_k[t − L_k]). A bucket scoring at least
    the cheapest cover of its two halves (by dyadic sub-buckets or singletons) never beats that cover, so only
    the cheaper ones are candidates. ``compiled``: one numba pass (``kernels.dawa_partition``); else, up to
    ``NUMPY_UP_TO`` cells, the programme in Python, and above, its costs as shortest-path distances
    (``_shortest_costs``, SciPy) with the choices read off them (faster from about 400 cells).

    >>> cheapest_partition([np.array([1.5, 9, 9])], np.array([2]), 1.0, 4).tolist()
    [0, 2, 3, 4]
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    if compiled:
        from dplens.core.mechanisms.kernels import dawa_partition

        offsets = np.concatenate(([0], np.cumsum([cost.size for cost in costs])[:-1])).astype(np.int64)
        return dawa_partition(np.concatenate(costs).astype(float), offsets, lengths, float(singleton), int(n))
    singleton = float(singleton)
    scores = []  # score of bucket [s, s + L), or inf where it cannot beat its halves (never a candidate)
    cover = np.full(n, singleton)  # cheapest cover of [s, s + L/2) by dyadic sub-buckets of that window
    for length, cost in zip(lengths, costs, strict=True):
        score = np.maximum(cost, singleton)
        half = length // 2
        split = cover[: n - length + 1] + cover[half: half + n - length + 1]
        scores.append(np.where(score < split, score, np.inf))  # else two halves are as cheap (and ≤ L singletons)
        cover = np.minimum(score, split)
    if n <= NUMPY_UP_TO:
        return _plain_partition([score.tolist() for score in scores], lengths.tolist(), singleton, int(n))
    cost = _shortest_costs(scores, lengths, singleton, n)
    # the programme's choice at t: the last candidate, by increasing length after the singleton, equal to cost[t]
    back = np.arange(-1, n)
    for length, score in zip(lengths, scores, strict=True):
        ends_here = cost[: n + 1 - length] + score == cost[length:]
        back[length:][ends_here] = np.flatnonzero(ends_here)
    on_path = np.zeros(n + 1, dtype=bool)  # the bounds: n and its ancestors through back, by pointer doubling
    on_path[n] = True
    back[0] = 0
    for _ in range(int(n).bit_length()):
        on_path[back[on_path]] = True
        back = back[back]
    return np.flatnonzero(on_path)


def _shortest_costs(scores: list[np.ndarray], lengths: np.ndarray, singleton: float, n: int) -> np.ndarray:
    """cost[t] of ``cheapest_partition``'s programme, as the distances from 0 to t in the graph with an edge
    s → s + 1 (weight ``singleton``) and s → s + L_k (weight scores[k][s], where finite), by SciPy's Dijkstra.

    The same floats as the programme's: a distance is the smallest dist[s] + weight over the edges into t, one
    addition each, every dist[s] final (an edge from a later-settled s cannot lower it: weights are positive).
    """
    from scipy.sparse import csr_array  # scipy.sparse is loaded with dplens; csgraph costs 10 ms, and only here
    from scipy.sparse.csgraph import dijkstra

    sources, targets, weights = [np.arange(n)], [np.arange(1, n + 1)], [np.full(n, singleton)]
    for length, score in zip(lengths, scores, strict=True):
        start = np.flatnonzero(score < np.inf)
        sources.append(start)
        targets.append(start + length)
        weights.append(score[start])
    edges = (np.concatenate(sources), np.concatenate(targets))
    graph = csr_array((np.concatenate(weights), edges), shape=(n + 1, n + 1))
    return dijkstra(graph, indices=0)


def _plain_partition(scores: list[list[float]], lengths: list[int], singleton: float, n: int) -> np.ndarray:
    """The dynamic programme of ``kernels.dawa_partition`` in Python (the same comparisons and sums), for small
    histograms."""
    cost = [0.0] * (n + 1)
    back = [-1] * (n + 1)
    for t in range(1, n + 1):
        best, arg = cost[t - 1] + singleton, -1
        for k, length in enumerate(lengths):
            start = t - length
            if start < 0:
                break
            candidate = cost[start] + scores[k][start]  # inf where the bucket is no candidate: never ≤ best
            if candidate <= best:
                best, arg = candidate, start
        cost[t], back[t] = best, arg
    bounds = [n]
    while bounds[-1] > 0:
        t = bounds[-1]
        bounds.append(back[t] if back[t] >= 0 else t - 1)
    return np.array(bounds[::-1], dtype=np.int64)


@dataclass(frozen=True)
class DAWA:
    """DAWA (Li et al. PVLDB 2014): private L1 partition at ratio·ε, Greedy-H over buckets at the rest.

    Data-dependent, so ``expected_mse`` is None. ``params`` reports the number of buckets.
    """

    summary: ClassVar[str] = "DAWA: merges bins that look alike (reads the data), then a tree over the merged bins."

    ratio: float = setting(0.25, RATIO_RANGE)
    branching: int = setting(2, BRANCHING_RANGE)
    granularity: int = setting(100, GRANULARITY_RANGE)
    name: str = "dawa"
    data_dependent: bool = True

    def __post_init__(self) -> None:
        check_ratio(self.ratio)
        check_tree_settings(self.branching, self.granularity)

    def cost(self, workload: Workload) -> Cost:
        """The partition (n log n) and Greedy-H's tree over the buckets."""
        return tree_cost(workload, int(self.granularity), int(self.branching), dense_gram=False)

    def run(self, x: np.ndarray, workload: Workload, privacy: Privacy | float, rng: np.random.Generator) -> Release:
        x, epsilon = check_inputs(x, workload, privacy)
        epsilon_partition = self.ratio * epsilon
        epsilon_measure = epsilon - epsilon_partition
        bounds, partition_loss = l1_partition(x, epsilon_partition, epsilon_measure, rng)
        width = np.diff(bounds)
        if width.size <= EXACT_BUCKETS:
            gram, exact = bucket_gram(workload, bounds)
            tree = greedy_hierarchy(gram, self.branching, self.granularity)
            metric = "exact" if exact else "all-range proxy"
        else:
            sketch = gram_sketch(workload, bounds, BUCKET_SKETCH_ROWS)
            tree = greedy_hierarchy(None, self.branching, self.granularity, sketch=sketch)
            metric = f"sketch ({BUCKET_SKETCH_ROWS} rows)"
        bucket_l1 = tree.cell_l1
        measurement = LaplaceMeasurement(float(bucket_l1.max()) / epsilon_measure)
        counts = np.add.reduceat(x, bounds[:-1])
        noisy = measurement.noisy(tree.measure(counts), rng)
        estimate = np.repeat(tree.least_squares(noisy) / width, width)
        # a cell's record moves its bucket's count by one: the bucket's column of A is the cell's column
        records = (PrivateChoice(f"the partition into {width.size} buckets (noisy L1 costs)", partition_loss),
                   laplace_record(f"Greedy-H's {noisy.size} queries over the buckets",
                                  [(np.repeat(bucket_l1, width), measurement)], noisy))
        release = Release(self.name, PureDP(epsilon), pure_epsilon(records), workload.matvec(estimate), estimate,
                          {"ratio": self.ratio, "branching": self.branching, "granularity": self.granularity,
                           "buckets": int(width.size), **measurement.params,
                           "gram": metric},
                          {"bounds": bounds, "hierarchy": tree}, workload=workload, measurements=records)
        return stated_at(release, privacy)

    def expected_mse(self, workload: Workload, privacy: Privacy | float) -> None:
        return None
