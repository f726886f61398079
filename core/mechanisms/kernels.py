"""Compiled inner loops (numba) of the data-dependent mechanisms: MWEM's multiplicative-weights passes,
DAWA's partition search and AHP's greedy clustering.

Each kernel performs the same floating-point operations, in the same order, as the scalar Python
loop it replaces (sequential sums, no fastmath), so a release is bit-for-bit the same for the same
noise; tests keep the Python loops as oracles. The module is imported lazily by the mechanisms (numba
takes about half a second to import) and compiled functions are cached on disk.

>>> import numpy as np
>>> mw_interval_passes(np.array([1.0, 1.0]), np.array([0]), np.array([1]), np.array([0.5]), 2.0, 1).tolist()
[1.0, 1.0]
"""

from __future__ import annotations

import math

import numba
import numpy as np

_jit = numba.njit(cache=True, nogil=True)


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
        summed = 0.0
        for v in values:
            summed += v
        rescale = total / summed
        for i in range(values.size):
            values[i] *= rescale
        running = total
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
        summed = 0.0
        for v in values:
            summed += v
        rescale = total / summed
        for i in range(values.size):
            values[i] *= rescale
        running = total
    return values
