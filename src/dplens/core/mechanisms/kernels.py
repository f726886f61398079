"""Compiled inner loops (numba) of the data-dependent mechanisms: MWEM's multiplicative-weights passes,
DAWA's partition search and AHP's greedy clustering.

Each kernel performs the same floating-point operations, in the same order, as the scalar Python
loop it replaces (sequential sums, no fastmath), so a release is bit-for-bit the same for the same
noise; tests keep the Python loops as oracles. The module is imported lazily by the mechanisms (numba
takes about half a second to import) and compiled functions are cached on disk.

A query on atom 0 whose target (answer / 2N̂ = 0.25) it already meets leaves the estimate alone:

>>> import numpy as np
>>> mw_interval_passes(np.array([1.0, 1.0]), np.array([0]), np.array([1]), np.array([0.25]), 2.0, 1).tolist()
[1.0, 1.0]
"""

from __future__ import annotations

import math

import numba
import numpy as np

_jit = numba.njit(cache=True, nogil=True)  # no fastmath: the float operations stay in the order written


@_jit
def _rescale_to(values: np.ndarray, total: float) -> float:
    """Scale ``values`` in place to sum to ``total`` (summed in order, as MWEM's passes do); returns ``total``."""
    summed = 0.0
    for v in values:
        summed += v
    rescale = total / summed
    for i in range(values.size):
        values[i] *= rescale
    return total


@_jit
def mw_interval_passes(values: np.ndarray, starts: np.ndarray, stops: np.ndarray, targets: np.ndarray,
                       total: float, rounds: int) -> np.ndarray:
    """MWEM's passes when query k covers the atoms starts[k] … stops[k] − 1; targets[k] = answer/(2N̂).

    The normalised estimate is carried as the running sum (A = total · mass / running) and
    renormalised once per pass, exactly as ``MWEM._interval_passes``.
    """
    values = values.copy()
    running = 0.0
    for v in values:
        running += v
    for _ in range(rounds):
        for k in range(starts.size):
            share = 0.0
            for i in range(starts[k], stops[k]):
                share += values[i]
            factor = math.exp(targets[k] - 0.5 * share / running)
            for i in range(starts[k], stops[k]):
                values[i] *= factor
            running += (factor - 1.0) * share
        running = _rescale_to(values, total)
    return values


@_jit
def mw_counting_passes(values: np.ndarray, indptr: np.ndarray, indices: np.ndarray, targets: np.ndarray,
                       total: float, rounds: int, limit: float) -> np.ndarray:
    """MWEM's passes for 0/1 queries given as index lists (CSR), exponent clipped to ±limit
    (``MWEM._counting_passes``)."""
    values = values.copy()
    running = 0.0
    for v in values:
        running += v
    for _ in range(rounds):
        for k in range(targets.size):
            share = 0.0
            for p in range(indptr[k], indptr[k + 1]):
                share += values[indices[p]]
            error = targets[k] - 0.5 * share / running
            if error > limit:
                error = limit
            elif error < -limit:
                error = -limit
            factor = math.exp(error)
            for p in range(indptr[k], indptr[k + 1]):
                values[indices[p]] *= factor
            running += (factor - 1.0) * share
        running = _rescale_to(values, total)
    return values


@_jit
def dawa_partition(noisy: np.ndarray, offsets: np.ndarray, lengths: np.ndarray, singleton: float,
                   n: int) -> np.ndarray:
    """DAWA's partition from the noisy bucket costs, in one pass (``dawa.cheapest_partition``, compiled).

    Bucket [s, s + lengths[k]) has noisy cost noisy[offsets[k] + s], floored at ``singleton`` (its score). A
    bucket is a candidate where its score is below the cheapest cover of its two halves by shorter dyadic
    buckets or singletons (``cover``, built length by length as ``np.minimum(score, split)``); the others
    are given an infinite score, which no comparison below ever picks. At every end t the singleton extension
    comes first, then candidates by increasing length, and a candidate replaces the best when it is ≤ it
    (ties go to the longer bucket), as ``dawa._plain_partition``. Returns the bounds.
    """
    scores = np.empty(noisy.size)
    cover = np.full(n, singleton)
    next_cover = np.empty(n)
    for k in range(lengths.size):
        half = lengths[k] // 2
        for s in range(n - lengths[k] + 1):
            value = noisy[offsets[k] + s]
            score = value if value >= singleton else singleton  # np.maximum(value, singleton)
            split = cover[s] + cover[half + s]
            scores[offsets[k] + s] = score if score < split else np.inf  # else the halves are as cheap
            next_cover[s] = score if score <= split else split  # np.minimum(score, split)
        cover, next_cover = next_cover, cover
    cost = np.empty(n + 1)
    back = np.full(n + 1, -1, dtype=np.int64)
    cost[0] = 0.0
    for t in range(1, n + 1):
        best = cost[t - 1] + singleton
        arg = -1
        for k in range(lengths.size):
            start = t - lengths[k]
            if start < 0:
                break
            candidate = cost[start] + scores[offsets[k] + start]
            if candidate <= best:
                best = candidate
                arg = start
        cost[t] = best
        back[t] = arg
    return _bounds_from(back, n)


@_jit
def _bounds_from(back: np.ndarray, n: int) -> np.ndarray:
    """The partition's bounds read back from the dynamic programme's choices (−1: a singleton)."""
    count = 0
    t = n
    while t > 0:
        t = back[t] if back[t] >= 0 else t - 1
        count += 1
    bounds = np.empty(count + 1, dtype=np.int64)
    t = n
    bounds[count] = n
    for i in range(count - 1, -1, -1):
        t = back[t] if back[t] >= 0 else t - 1
        bounds[i] = t
    return bounds


@_jit
def dawa_below(zeros: np.ndarray, zero_sums: np.ndarray, zero_total: np.ndarray, bits: int, lo: np.ndarray,
               hi: np.ndarray, threshold: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Count and sum of x[i], lo ≤ i < hi, with rank below ``threshold``: the wavelet-matrix walk of
    ``dawa._Deviations.below``, one level at a time over all queries (neighbouring windows walk nearby
    positions, so each level's rows stay in cache)."""
    a, b = lo.copy(), hi.copy()
    count = np.zeros(lo.size, dtype=np.int64)
    total = np.zeros(lo.size)
    for level in range(bits):
        shift = bits - 1 - level
        row, sums, offset = zeros[level], zero_sums[level], zero_total[level]
        for q in range(lo.size):
            a0, b0 = row[a[q]], row[b[q]]
            if (threshold[q] >> shift) & 1:
                count[q] += b0 - a0
                total[q] += sums[b[q]] - sums[a[q]]
                a[q], b[q] = offset + a[q] - a0, offset + b[q] - b0
            else:
                a[q], b[q] = a0, b0
    return count.astype(np.float64), total


@_jit
def _term(values: np.ndarray, index: int, shift: float, plain: bool) -> float:
    return values[index] if plain else abs(values[index] - shift)


@_jit
def _numpy_block_sum(values: np.ndarray, start: int, length: int, shift: float, plain: bool) -> float:
    """Σ values[start + i] (``plain``) or Σ|values[start + i] − shift| in NumPy's own order for a contiguous
    block of ≤ 128 elements: sequential below 8, else eight running sums combined pairwise and the
    remainder added in turn (numpy's pairwise_sum), so results match ``ndarray.sum`` bit for bit."""
    if length < 8:
        result = 0.0
        for i in range(length):
            result += _term(values, start + i, shift, plain)
        return result
    r0, r1, r2, r3 = (_term(values, start, shift, plain), _term(values, start + 1, shift, plain),
                      _term(values, start + 2, shift, plain), _term(values, start + 3, shift, plain))
    r4, r5, r6, r7 = (_term(values, start + 4, shift, plain), _term(values, start + 5, shift, plain),
                      _term(values, start + 6, shift, plain), _term(values, start + 7, shift, plain))
    i = 8
    while i < length - (length % 8):
        k = start + i
        r0 += _term(values, k, shift, plain)
        r1 += _term(values, k + 1, shift, plain)
        r2 += _term(values, k + 2, shift, plain)
        r3 += _term(values, k + 3, shift, plain)
        r4 += _term(values, k + 4, shift, plain)
        r5 += _term(values, k + 5, shift, plain)
        r6 += _term(values, k + 6, shift, plain)
        r7 += _term(values, k + 7, shift, plain)
        i += 8
    result = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < length:
        result += _term(values, start + i, shift, plain)
        i += 1
    return result


@_jit
def _search_left(values: np.ndarray, target: float) -> int:
    """First index i with values[i] >= target (``np.searchsorted(values, target, side="left")``)."""
    lo, hi = 0, values.size
    while lo < hi:
        mid = (lo + hi) // 2
        if values[mid] < target:
            lo = mid + 1
        else:
            hi = mid
    return lo


@_jit
def dawa_deviations(x: np.ndarray, prefix: np.ndarray, nonzero: np.ndarray, sorted_values: np.ndarray,
                    zeros: np.ndarray, zero_sums: np.ndarray, zero_total: np.ndarray, bits: int, lengths: np.ndarray,
                    direct: int, exact: bool) -> np.ndarray:
    """Every window deviation of every length, concatenated by length (``dawa._Deviations.windows``, compiled).

    Lengths up to ``direct`` are summed directly, in NumPy's order on a sliding view (with ``exact``, x holds
    integers whose every sum is exact, so a window's sum is read off ``prefix`` instead: the same number);
    longer ones are
    2 · (count · mean − sum) over the values below the window's mean, the count and sum read by the
    wavelet-matrix walk of ``dawa_below``, with the mean, its rank threshold and the floor at 0 computed by
    the same operations as the NumPy code (``(prefix[hi] − prefix[lo]) / length``, ``np.searchsorted``,
    ``np.maximum``). A window without a nonzero cell (``nonzero``: running count of them) has deviation +0.0
    either way, so it is not summed; a walk stops once its range is empty (nothing more to add).
    """
    n = x.size
    size = 0
    for k in range(lengths.size):
        size += n - lengths[k] + 1
    out = np.empty(size)
    at = 0
    for k in range(lengths.size):
        length = lengths[k]
        if length <= direct:
            for s in range(n - length + 1):
                if nonzero[s + length] == nonzero[s]:
                    out[at + s] = 0.0
                    continue
                if exact:
                    mean = (prefix[s + length] - prefix[s]) / length
                else:
                    mean = _numpy_block_sum(x, s, length, 0.0, True) / length
                out[at + s] = _numpy_block_sum(x, s, length, mean, False)
            at += n - length + 1
            continue
        for s in range(n - length + 1):
            if nonzero[s + length] == nonzero[s]:
                out[at + s] = 0.0
                continue
            mean = (prefix[s + length] - prefix[s]) / length
            threshold = _search_left(sorted_values, mean)
            a, b = s, s + length
            count = 0
            total = 0.0
            for level in range(bits):
                if a == b:
                    break
                a0, b0 = zeros[level, a], zeros[level, b]
                if (threshold >> (bits - 1 - level)) & 1:
                    count += b0 - a0
                    total += zero_sums[level, b] - zero_sums[level, a]
                    a, b = zero_total[level] + a - a0, zero_total[level] + b - b0
                else:
                    a, b = a0, b0
            value = 2.0 * (float(count) * mean - total)
            out[at + s] = value if (value >= 0.0 or value != value) else 0.0  # np.maximum(value, 0.0)
        at += n - length + 1
    return out


@_jit
def dawa_wavelet_levels(x: np.ndarray, rank: np.ndarray, bits: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The levels of a wavelet matrix over ``rank`` (ranks below 2^bits) carrying x's values:
    per level, the running count and sum of the entries whose bit is 0, and how many there are; then a
    stable partition (zeros first) for the next level."""
    n = x.size
    zeros = np.zeros((bits, n + 1), dtype=np.int64)
    zero_sums = np.zeros((bits, n + 1))
    zero_total = np.zeros(bits, dtype=np.int64)
    rank, values = rank.copy(), x.copy()
    next_rank, next_values = np.empty_like(rank), np.empty_like(values)
    for level in range(bits):
        shift = bits - 1 - level
        count, total = 0, 0.0
        for i in range(n):
            if (rank[i] >> shift) & 1 == 0:
                count += 1
                total += values[i]
            else:
                total += 0.0  # as np.cumsum over np.where(zero, values, 0.0)
            zeros[level, i + 1] = count
            zero_sums[level, i + 1] = total
        zero_total[level] = count
        low, high = 0, count
        for i in range(n):
            if (rank[i] >> shift) & 1 == 0:
                next_rank[low], next_values[low] = rank[i], values[i]
                low += 1
            else:
                next_rank[high], next_values[high] = rank[i], values[i]
                high += 1
        rank, next_rank = next_rank, rank
        values, next_values = next_values, values
    return zeros, zero_sums, zero_total


@_jit
def ahp_best_new_cluster_error(values: np.ndarray, noise_variance: float, lookahead: int) -> np.ndarray:
    """err*(j) of ``ahp.best_new_cluster_error``, one cell at a time: the same scan over lengths with the
    same early stop, the same operations per step."""
    n = values.size
    prefix = np.zeros(n + 1)
    for i in range(n):
        prefix[i + 1] = prefix[i] + values[i]
    result = np.empty(n)
    run_end = n  # values are sorted: the first index after the run of values equal to values[row]
    for row in range(n - 1, -1, -1):
        if row < n - 1 and values[row] != values[row + 1]:
            run_end = row + 1
        if run_end - row >= lookahead:  # inside a long run of equal values the scan never stops early
            result[row] = noise_variance / (float(lookahead) * float(lookahead))
            continue
        head, base = values[row], prefix[row]
        span = float(n + 1 - row)
        floor = noise_variance / (span * span)
        last_deviation = head - (prefix[row + 1] - base)
        last_deviation = last_deviation * last_deviation
        last_noise = noise_variance
        best = last_deviation + last_noise
        for length in range(2, min(lookahead, n) + 1):
            if row + length > n:
                break
            deviation = head - (prefix[row + length] - base) / length
            deviation = deviation * deviation
            if (deviation - last_deviation) >= (last_noise - floor):
                break
            last_noise = noise_variance / (float(length) * float(length))
            best = min(best, deviation + last_noise)
            last_deviation = deviation
        result[row] = best
    return result


@_jit
def ahp_greedy_clusters(values: np.ndarray, best_new: np.ndarray, noise_variance: float, two: float) -> np.ndarray:
    """Cluster starts of ``ahp.greedy_clusters``: cell j opens a cluster when error(i, j) ≥ error(i, j − 1)
    + err*(j). ``two`` is 2.0 passed at run time so that the squares written with ``**`` in the Python
    loop go through libm's pow here too (CPython's float ** 2 is pow, not x·x)."""
    n = values.size
    prefix = np.zeros(n + 1)
    squares = np.zeros(n + 1)
    for i in range(n):
        prefix[i + 1] = prefix[i] + values[i]
        squares[i + 1] = squares[i] + values[i] ** 2
    starts = np.empty(n, dtype=np.int64)
    starts[0] = 0
    count = 1
    i, base, base_squares = 0, prefix[0], squares[0]
    last = squares[1] - squares[0] - math.pow(prefix[1] - prefix[0], two) + noise_variance
    for j in range(1, n):
        size = j - i + 1
        total = prefix[j + 1] - base
        now = squares[j + 1] - base_squares - total * total / size + noise_variance / size
        if now >= last + best_new[j]:
            starts[count] = j
            count += 1
            i, base, base_squares = j, prefix[j], squares[j]
            last = squares[j + 1] - squares[j] - math.pow(prefix[j + 1] - prefix[j], two) + noise_variance
        else:
            last = now
    return starts[:count].copy()


@_jit
def _bisect_right(values: np.ndarray, target: float, lo: int, hi: int) -> int:
    """Python's bisect.bisect_right on values[lo:hi]."""
    while lo < hi:
        middle = (lo + hi) // 2
        if target < values[middle]:
            hi = middle
        else:
            lo = middle + 1
    return lo


@_jit
def _segment_mre(start: int, stop: int, values: np.ndarray, cum_v: np.ndarray, cum_w: np.ndarray,
                 cum_vw: np.ndarray, scale: float) -> float:
    k = stop - start
    mean = (cum_v[stop] - cum_v[start]) / k
    t = _bisect_right(values, mean, start, stop)
    spread = (mean * (cum_w[t] - cum_w[start]) - (cum_vw[t] - cum_vw[start])
              + (cum_vw[stop] - cum_vw[t]) - mean * (cum_w[stop] - cum_w[t]))
    return (spread + scale / k * (cum_w[stop] - cum_w[start])) / k


@_jit
def sreb_ggs(values: np.ndarray, floored: np.ndarray, cum_v: np.ndarray, cum_w: np.ndarray, cum_vw: np.ndarray,
             scale: float) -> np.ndarray:
    """The cut positions of ``sreb_gca.ggs`` (its sequential loop, the same arithmetic in the same order)."""
    n = values.size
    cuts = np.empty(max(n - 1, 0), dtype=np.int64)
    count = 0
    start = 0
    for r in range(1, n):
        size = r - start
        bound = (_segment_mre(start, r, values, cum_v, cum_w, cum_vw, scale) * size
                 + scale / ((n - r) * floored[r])) / (size + 1)
        if _segment_mre(start, r + 1, values, cum_v, cum_w, cum_vw, scale) >= bound:
            cuts[count] = r - 1
            count += 1
            start = r
    return cuts[:count].copy()
