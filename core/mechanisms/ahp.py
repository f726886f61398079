"""AHP: accurate histogram publication by noisy-sorted clustering (Zhang et al., SDM 2014; spec §9).

1. A noisy histogram x̃ = x + Lap(1/ε₁), ε₁ = ratio·ε; values ≤ η·ln(n)/ε₁ are set to 0.
2. The cells are sorted by their NOISY value (the erratum of spec §4(d)1: sorting by the true counts
   would leak) and cut greedily into contiguous clusters of the sorted order: a cell joins the current
   cluster unless that raises the cluster's estimated error (squared deviation plus the noise variance
   2/(ε₂²·size) of its mean) by at least err*(j), the best error the cell could have at the start of a
   new cluster (the paper's look-ahead with its early stop, looking at most ``LOOKAHEAD`` cells ahead).
3. Each cluster's true sum gets Lap(1/ε₂), ε₂ = ε − ε₁, and is spread evenly over its cells.

Every cell is in one cluster, so both Laplace blocks have sensitivity 1: the loss is ε₁ + ε₂.

>>> import numpy as np
>>> from core.workloads import Identity
>>> release = AHP().run(np.array([0.0, 0, 50, 52, 0, 51]), Identity(6), 1.0, np.random.default_rng(0))
>>> release.privacy_loss <= 1.0, release.estimate.shape
(True, (6,))
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.mechanisms import Release, check_inputs, check_ratio, laplace_privacy_loss
from core.workloads import Workload

LOOKAHEAD = 64  # cells err*(j) may look ahead (128 gave identical DPBench errors at twice the cost)


def best_new_cluster_error(values: np.ndarray, noise_variance: float) -> np.ndarray:
    """err*(j): min over lengths L of (v_j − mean(v_j … v_{j+L−1}))² + noise_variance/L², for sorted v.

    The scan over L stops at the first L where the squared-deviation term grows by at least what the
    noise term could still shrink (the paper's early termination), and after ``LOOKAHEAD`` cells.
    One vectorised step per length over the cells still scanning (few stop early, so this beats
    blocks of lengths that redo work).

    >>> best_new_cluster_error(np.array([1.0, 1.0, 1.0]), 2.0).tolist()
    [0.2222222222222222, 0.5, 2.0]
    """
    n = values.size
    prefix = np.concatenate(([0.0], np.cumsum(values)))
    result = np.full(n, np.inf)
    # inside a run of ≥ LOOKAHEAD equal values the deviation term stays 0 and the scan never stops early:
    # the truncated minimum is the noise term at LOOKAHEAD
    run_left = np.searchsorted(values, values, side="right") - np.arange(n)
    long_run = run_left >= LOOKAHEAD
    result[long_run] = noise_variance / LOOKAHEAD**2
    rows = np.flatnonzero(~long_run)
    head, base = values[rows], prefix[rows]
    floor = noise_variance / (n + 1 - rows) ** 2.0  # the reference's bound: just past the longest cluster
    last_deviation = (head - (prefix[rows + 1] - base)) ** 2
    last_noise = noise_variance
    best = last_deviation + last_noise
    for length in range(2, min(LOOKAHEAD, n) + 1):
        if rows.size and rows[-1] + length > n:  # rows are sorted: the last ones ran out of cells
            cut = np.searchsorted(rows, n - length, side="right")
            result[rows[cut:]] = best[cut:]
            rows, head, base, floor, best, last_deviation = (
                a[:cut] for a in (rows, head, base, floor, best, last_deviation))
        if rows.size == 0:
            break
        deviation = prefix[length:].take(rows)
        deviation -= base
        deviation /= length
        np.subtract(head, deviation, out=deviation)
        deviation *= deviation
        stop = (deviation - last_deviation) >= (last_noise - floor)
        if stop.any():
            result[rows[stop]] = best[stop]
            keep = ~stop
            rows, head, base, floor, best, deviation = (a[keep] for a in (rows, head, base, floor, best, deviation))
        last_noise = noise_variance / length**2.0
        np.minimum(best, deviation + last_noise, out=best)
        last_deviation = deviation
    result[rows] = best
    return result


SCAN = 24  # cells a cluster is grown one by one before the rest of it is searched in vectorised windows


def greedy_clusters(values: np.ndarray, noise_variance: float) -> np.ndarray:
    """Start index of every cluster of the sorted `values` (AHP's greedy pass; starts with 0).

    Cell j starts a new cluster when error(i, j) ≥ error(i, j − 1) + err*(j) for the current cluster
    start i. Short clusters are grown in a scalar loop; once a cluster is longer than ``SCAN`` cells the
    first split after it is found with the same arithmetic on windows of cells (clusters are few and
    long at small ε, where a cell-by-cell loop would dominate).

    >>> greedy_clusters(np.array([0.0, 0, 0, 100, 101, 100]), 2.0).tolist()
    [0, 3]
    """
    n = values.size
    best_new_array = best_new_cluster_error(values, noise_variance)
    prefix_array = np.concatenate(([0.0], np.cumsum(values)))
    squares_array = np.concatenate(([0.0], np.cumsum(values**2)))
    best_new, prefix, squares = best_new_array.tolist(), prefix_array.tolist(), squares_array.tolist()

    def first_split(i: int, j: int, last: float) -> int:
        """First j' ≥ j where cluster i … j' − 1 splits (or n), in growing windows."""
        width = 64
        while j < n:
            stop = min(n, j + width)
            size = np.arange(j - i + 1, stop - i + 1)
            total = prefix_array[j + 1: stop + 1] - prefix[i]
            now = squares_array[j + 1: stop + 1] - squares[i] - total * total / size + noise_variance / size
            before = np.concatenate(([last], now[:-1]))
            split = now >= before + best_new_array[j:stop]
            if split.any():
                return j + int(np.argmax(split))
            last, j, width = float(now[-1]), stop, width * 4
        return n

    # error(i, j) of cluster i … j inclusive = squared deviation + noise variance / size, inlined (hot loop)
    starts = [0]
    i, base, base_squares = 0, prefix[0], squares[0]
    last = squares[1] - squares[0] - (prefix[1] - prefix[0]) ** 2 + noise_variance
    j = 1
    while j < n:
        if j - i > SCAN:
            j = first_split(i, j, last)
            if j == n:
                break
            split = True
        else:
            size = j - i + 1
            total = prefix[j + 1] - base
            now = squares[j + 1] - base_squares - total * total / size + noise_variance / size
            split = now >= last + best_new[j]
        if split:
            starts.append(j)
            i, base, base_squares = j, prefix[j], squares[j]
            last = squares[j + 1] - squares[j] - (prefix[j + 1] - prefix[j]) ** 2 + noise_variance
        else:
            last = now
        j += 1
    return np.array(starts)


@dataclass(frozen=True)
class AHP:
    """AHP (Zhang et al. SDM 2014): noisy histogram at ratio·ε, threshold η, noisy-sorted clusters.

    Data-dependent, so ``expected_mse`` is None. ``params`` reports the number of clusters.
    """

    ratio: float = 0.85
    eta: float = 0.35
    name: str = "ahp"
    data_dependent: bool = True

    def __post_init__(self) -> None:
        check_ratio(self.ratio)
        if isinstance(self.eta, bool) or not isinstance(self.eta, int | float) or not 0 <= self.eta < np.inf:
            raise ValueError(f"eta must be a finite number >= 0, got {self.eta!r}")

    def run(self, x: np.ndarray, workload: Workload, epsilon: float, rng: np.random.Generator) -> Release:
        x, epsilon = check_inputs(x, workload, epsilon)
        n = x.size
        epsilon_sort = self.ratio * epsilon
        epsilon_clusters = epsilon - epsilon_sort
        scale_sort, scale_clusters = 1.0 / epsilon_sort, 1.0 / epsilon_clusters
        noisy = x + rng.laplace(scale=scale_sort, size=n)
        noisy[noisy <= self.eta * np.log(n) / epsilon_sort] = 0.0
        order = np.argsort(noisy, kind="stable")
        starts = greedy_clusters(noisy[order], 2.0 / epsilon_clusters**2)
        sizes = np.diff(np.append(starts, n))
        sums = np.add.reduceat(x[order], starts) + rng.laplace(scale=scale_clusters, size=starts.size)
        estimate = np.empty(n)
        estimate[order] = np.repeat(sums / sizes, sizes)
        loss = laplace_privacy_loss([(np.ones(n), scale_sort), (np.ones(n), scale_clusters)])
        return Release(self.name, epsilon, loss, workload.matvec(estimate), estimate,
                       {"ratio": self.ratio, "eta": self.eta, "clusters": int(starts.size)},
                       {"cluster_sizes": sizes})

    def expected_mse(self, workload: Workload, epsilon: float) -> None:
        return None
