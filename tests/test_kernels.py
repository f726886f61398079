"""The compiled kernels (src/dplens/core/mechanisms/kernels.py) against the NumPy/Python code they replaced, kept
here as oracles: the same seeded inputs must give bit-for-bit the same results.
SReB_GCA's GGS loop is here too (compiled for 2^20 bins). MWEM's oracles live in test_mwem.py; DAWA's partition DP
oracle in test_dawa.py."""

from __future__ import annotations

import bisect

import numpy as np
import pytest

from dplens.core.mechanisms import ahp as ahp_module
from dplens.core.mechanisms.ahp import AHP, LOOKAHEAD, best_new_cluster_error, greedy_clusters
from dplens.core.mechanisms.dawa import _DEVIATIONS, DAWA, DIRECT_WINDOW, _Deviations
from dplens.core.mechanisms.sreb_gca import _check_floor, ggs
from dplens.core.queries.workloads import random_range

# ----------------------------------------------------------------------------- AHP: the vectorised version
SCAN = 24


def _old_best_new_cluster_error(values: np.ndarray, noise_variance: float) -> np.ndarray:
    """err*(j): min over lengths L of (v_j − mean(v_j … v_{j+L−1}))² + noise_variance/L², for sorted v.

    The scan over L stops at the first L where the squared-deviation term grows by at least what the
    noise term could still shrink (the paper's early termination), and after ``LOOKAHEAD`` cells.
    One vectorised step per length over the cells still scanning (few stop early, so this beats
    blocks of lengths that redo work).

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


def _old_greedy_clusters(values: np.ndarray, noise_variance: float) -> np.ndarray:
    """Start index of every cluster of the sorted `values` (AHP's greedy pass; starts with 0).

    Cell j starts a new cluster when error(i, j) ≥ error(i, j − 1) + err*(j) for the current cluster
    start i. Short clusters are grown in a scalar loop; once a cluster is longer than ``SCAN`` cells the
    first split after it is found with the same arithmetic on windows of cells (clusters are few and
    long at small ε, where a cell-by-cell loop would dominate).

    """
    n = values.size
    best_new_array = _old_best_new_cluster_error(values, noise_variance)
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


# ----------------------------------------------------------------------------- DAWA: the NumPy wavelet matrix
class _OldDeviations:
    def __init__(self, x: np.ndarray, *, compiled: bool = False) -> None:  # one path only: compiled is ignored
        n = x.size
        order = np.argsort(x, kind="stable")
        self.x, self.sorted, self.n = x, x[order], n
        rank = np.empty(n, dtype=np.int64)
        rank[order] = np.arange(n)
        self.bits = max(1, int(n).bit_length())
        self.zeros, self.zero_sums, self.zero_total = [], [], []
        values = x.copy()
        for level in range(self.bits):
            zero = ((rank >> (self.bits - 1 - level)) & 1) == 0
            self.zeros.append(np.concatenate(([0], np.cumsum(zero))))
            self.zero_sums.append(np.concatenate(([0.0], np.cumsum(np.where(zero, values, 0.0)))))
            self.zero_total.append(int(zero.sum()))
            rank = np.concatenate((rank[zero], rank[~zero]))
            values = np.concatenate((values[zero], values[~zero]))

    def below(self, lo, hi, threshold):
        count = np.zeros(lo.size, dtype=np.int64)
        total = np.zeros(lo.size)
        for level in range(self.bits):
            ones = (threshold >> (self.bits - 1 - level)) & 1
            zeros, sums = self.zeros[level], self.zero_sums[level]
            lo0, hi0 = zeros[lo], zeros[hi]
            count += ones * (hi0 - lo0)
            total += ones * (sums[hi] - sums[lo])
            up = ones.astype(bool)
            lo = np.where(up, self.zero_total[level] + lo - lo0, lo0)
            hi = np.where(up, self.zero_total[level] + hi - hi0, hi0)
        return count.astype(float), total

    def windows(self, lengths):
        out = {}
        prefix = np.concatenate(([0.0], np.cumsum(self.x)))
        for length in lengths:
            if length <= DIRECT_WINDOW:
                window = np.lib.stride_tricks.sliding_window_view(self.x, int(length))
                out[length] = np.abs(window - window.mean(axis=1, keepdims=True)).sum(axis=1)
                continue
            lo = np.arange(self.n - length + 1)
            hi = lo + length
            mean = (prefix[hi] - prefix[lo]) / length
            count, total = self.below(lo, hi, np.searchsorted(self.sorted, mean, side="left"))
            out[length] = np.maximum(2.0 * (count * mean - total), 0.0)
        return [out[length] for length in lengths]


def _histograms(seed: int, n: int) -> list[np.ndarray]:
    gen = np.random.default_rng(seed)
    sparse = np.round(gen.exponential(40.0, n) * (gen.random(n) < 0.1))
    steps = np.repeat(gen.integers(0, 500, n // 16 + 1), 16)[:n] + gen.integers(0, 3, n)
    return [sparse, steps.astype(float), gen.random(n) * 1000.0]


@pytest.mark.parametrize("seed", range(3))
def test_dawa_deviations_equal_the_numpy_wavelet_matrix(seed):
    for n in (1, 7, 300, 1024):
        for x in _histograms(seed, n):
            lengths = 2 ** np.arange(1, max(1, n.bit_length()))
            lengths = lengths[lengths <= n]
            for fast, slow in zip(_Deviations(x).windows(lengths), _OldDeviations(x).windows(lengths), strict=True):
                np.testing.assert_array_equal(fast, slow)


@pytest.mark.parametrize("seed", range(3))
def test_dawa_releases_equal_with_the_numpy_deviations(seed, monkeypatch):
    workload = random_range(512, 200, seed=seed)
    for x in _histograms(seed, 512):
        fast = [DAWA().run(x, workload, epsilon, np.random.default_rng(seed)) for epsilon in (0.1, 1.0)]
        _DEVIATIONS.clear()
        with monkeypatch.context() as patched:  # undo() would also drop the autouse DPLENS_HOME
            patched.setattr("dplens.core.mechanisms.dawa._Deviations", _OldDeviations)
            slow = [DAWA().run(x, workload, epsilon, np.random.default_rng(seed)) for epsilon in (0.1, 1.0)]
        _DEVIATIONS.clear()
        for a, b in zip(fast, slow, strict=True):
            np.testing.assert_array_equal(a.details["bounds"], b.details["bounds"])
            np.testing.assert_array_equal(a.estimate, b.estimate)


@pytest.mark.parametrize("seed", range(4))
def test_ahp_kernels_equal_the_vectorised_version(seed):
    gen = np.random.default_rng(seed)
    for _ in range(25):
        size = int(gen.integers(1, 400))
        values = np.sort(np.round(gen.exponential(gen.uniform(0.1, 50), size), int(gen.integers(0, 3))))
        values[: int(gen.integers(0, size + 1))] = 0.0  # thresholded cells: long runs of zeros
        values.sort()
        noise_variance = float(gen.uniform(0.01, 100))
        np.testing.assert_array_equal(best_new_cluster_error(values, noise_variance),
                                      _old_best_new_cluster_error(values, noise_variance))
        np.testing.assert_array_equal(greedy_clusters(values, noise_variance),
                                      _old_greedy_clusters(values, noise_variance))


@pytest.mark.parametrize("epsilon", [0.01, 0.1, 1.0, 10.0])
def test_ahp_releases_equal_the_vectorised_version(epsilon, monkeypatch):
    x = _histograms(3, 1024)[1]
    workload = random_range(1024, 100, seed=1)
    fast = AHP().run(x, workload, epsilon, np.random.default_rng(2))
    monkeypatch.setattr(ahp_module, "greedy_clusters", _old_greedy_clusters)
    slow = AHP().run(x, workload, epsilon, np.random.default_rng(2))
    np.testing.assert_array_equal(fast.estimate, slow.estimate)


# ----------------------------------------------------------------------------- SReB_GCA: the Python GGS loop
def _old_ggs(sorted_noisy: np.ndarray, scale: float, error_floor: float = 1.0) -> list[int]:
    """Greedy group search (Chen et al. 2024, Definition 5 / Algorithm 2, corrected: λ2 in the body, the group
    closed at r − 1, noisy values clamped at 0 and floored at δ).

    Args:
        sorted_noisy: noisy bin values, sorted ascending and clamped at 0 (post-processing only).
        scale: λ2 = 1/ε2, the Laplace scale of the stage-2 group sums.
        error_floor: relative-error floor δ.

    Returns:
        The (0-based, inclusive) end positions of every group but the last.
    """
    values = np.asarray(sorted_noisy, dtype=float)
    error_floor = _check_floor(error_floor)
    if np.any(np.diff(values) < 0):
        raise ValueError("ggs needs values sorted ascending")
    n = values.size
    # Prefix sums make MRE of a contiguous sorted segment O(log n): Σ|h − μ|/max(h, δ) splits at μ.
    # Python lists and bisect: this loop is sequential, and list indexing beats NumPy scalar access
    weight = 1.0 / np.maximum(values, error_floor)
    cum_v = np.concatenate(([0.0], np.cumsum(values))).tolist()
    cum_w = np.concatenate(([0.0], np.cumsum(weight))).tolist()
    cum_vw = np.concatenate(([0.0], np.cumsum(values * weight))).tolist()
    sorted_values = values.tolist()
    floored = np.maximum(values, error_floor).tolist()

    def mre(start: int, stop: int) -> float:  # group_mre(values[start:stop]) without the loop
        k = stop - start
        mean = (cum_v[stop] - cum_v[start]) / k
        t = bisect.bisect_right(sorted_values, mean, start, stop)
        spread = (mean * (cum_w[t] - cum_w[start]) - (cum_vw[t] - cum_vw[start])
                  + (cum_vw[stop] - cum_vw[t]) - mean * (cum_w[stop] - cum_w[t]))
        return (spread + scale / k * (cum_w[stop] - cum_w[start])) / k

    cuts: list[int] = []
    start = 0
    for r in range(1, n):
        size = r - start
        bound = (mre(start, r) * size + scale / ((n - r) * floored[r])) / (size + 1)
        if mre(start, r + 1) >= bound:
            cuts.append(r - 1)  # close the group at r − 1 (the paper's `d` can be undefined)
            start = r
    return cuts


@pytest.mark.parametrize("seed", range(3))
def test_ggs_kernel_equals_the_python_loop(seed):
    gen = np.random.default_rng(seed)
    for _ in range(40):
        values = np.sort(np.maximum(gen.exponential(gen.uniform(0.5, 100), gen.integers(1, 400))
                                    + gen.normal(0, 5), 0.0))
        scale, error_floor = float(gen.uniform(0.1, 50)), float(gen.choice([0.5, 1.0, 3.0]))
        assert ggs(values, scale, error_floor) == _old_ggs(values, scale, error_floor)
