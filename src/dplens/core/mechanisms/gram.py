"""The workload Gram matrix WᵀW as a fast operator, and the exact error of linear estimators.

Every data-independent mechanism here (hb, privelet, mm-opt) releases x̂ = x + L z with z a vector of
independent Laplace(b) noise, so the expected total squared error on a workload W is
2 b² Σ_k ‖W l_k‖² = 2 b² Σ_k l_kᵀ (WᵀW) l_k (the matrix-mechanism error of Li et al., PODS 2010).
``gram_apply`` applies WᵀW in O(n) per vector for the range workloads (closed forms below), so this sum
costs O(n · #noise coordinates) instead of a dense O(n³) trace.

>>> from dplens.core.queries.workloads import AllRange, dense
>>> v = np.arange(5.0)
>>> np.allclose(gram_apply(AllRange(5), v[:, None])[:, 0], dense(AllRange(5)).T @ dense(AllRange(5)) @ v)
True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
import scipy.sparse

from dplens.core.queries.workloads import (
    AllRange,
    Explicit,
    Identity,
    Kron,
    Prefix,
    Ranges,
    Ranges2D,
    Stack,
    Total,
    Workload,
)

ENERGY_BATCH = 512  # noise coordinates pushed through the estimator at once (bounds memory at n·512)
ROW_BLOCK_ENTRIES = 2**22  # query rows materialised at once for the covariance path (32 MB of floats)


def _along_first(v: np.ndarray, apply: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """Apply a column operator to axis 0 of v, whatever its trailing dimensions."""
    flat = v.reshape(v.shape[0], -1)
    return apply(flat).reshape(v.shape)


def _prefix_gram(v: np.ndarray) -> np.ndarray:
    # (WᵀW)_ij = n − max(i, j): prefixes containing both i and j
    n = v.shape[0]
    below = np.cumsum(v, axis=0)                               # Σ_{j ≤ i} v_j
    weight = np.arange(n, 0, -1, dtype=float)[:, None]         # n − j
    above = np.cumsum((weight * v)[::-1], axis=0)[::-1]        # Σ_{j ≥ i} (n − j) v_j
    above = np.vstack([above[1:], np.zeros((1, v.shape[1]))])  # strictly j > i
    return weight * below + above


def _allrange_gram(v: np.ndarray) -> np.ndarray:
    # (WᵀW)_ij = (min(i, j) + 1)(n − max(i, j)): ranges containing both i and j
    n = v.shape[0]
    left = np.arange(1, n + 1, dtype=float)[:, None]           # i + 1
    right = np.arange(n, 0, -1, dtype=float)[:, None]          # n − i
    below = np.cumsum(left * v, axis=0)
    above = np.cumsum((right * v)[::-1], axis=0)[::-1]
    above = np.vstack([above[1:], np.zeros((1, v.shape[1]))])
    return right * below + left * above


def _ranges_gram(w: Ranges, v: np.ndarray) -> np.ndarray:
    c = np.vstack([np.zeros((1, v.shape[1])), np.cumsum(v, axis=0)])
    answers = c[w.hi + 1] - c[w.lo]                            # W v, m × k
    m = w.lo.size
    # Wᵀ: +answer at lo, −answer after hi, then a running sum (a sparse product beats np.add.at)
    ends = scipy.sparse.csr_matrix((np.r_[np.ones(m), -np.ones(m)], (np.r_[w.lo, w.hi + 1], np.r_[
        np.arange(m), np.arange(m)])), shape=(w.n + 1, m))
    return np.cumsum(ends @ answers, axis=0)[: w.n]


def gram_apply(workload: Workload, v: np.ndarray) -> np.ndarray:
    """(WᵀW) v for an n × k block of columns v, in closed form where the workload has one.

    Falls back to ``rmatvec(matvec(·))`` column by column for other workloads.
    """
    v = np.asarray(v, dtype=float)
    if isinstance(workload, Identity):
        return v.copy()
    if isinstance(workload, Total):
        return np.broadcast_to(v.sum(axis=0), v.shape).copy()
    if isinstance(workload, Prefix):
        return _prefix_gram(v)
    if isinstance(workload, AllRange):
        return _allrange_gram(v)
    if isinstance(workload, Ranges):
        return _ranges_gram(workload, v)
    if isinstance(workload, Explicit):
        return np.asarray(workload.matrix.T @ (workload.matrix @ v))
    if isinstance(workload, Stack):
        return sum(gram_apply(part, v) for part in workload.parts)  # type: ignore[return-value]  # a stack has parts
    if isinstance(workload, Kron):
        a, b = workload.factors
        n1, n2 = a.shape[1], b.shape[1]
        cube = v.reshape(n1, n2, -1)
        cube = _along_first(cube, lambda m: gram_apply(a, m))
        cube = np.moveaxis(_along_first(np.moveaxis(cube, 1, 0), lambda m: gram_apply(b, m)), 0, 1)
        return cube.reshape(v.shape)
    return np.stack([workload.rmatvec(workload.matvec(col)) for col in v.T], axis=1)


def gram_rows(workload: Workload, v: np.ndarray) -> np.ndarray:
    """v (WᵀW) for a k × n block of rows v: the transpose of ``gram_apply`` for row-major blocks.

    Prefix and all-range work along the rows with two running sums and no reversed copies
    (mm-opt's objective applies the Gram to its p × n strategy block on every evaluation).

    >>> from dplens.core.queries.workloads import Prefix, dense
    >>> v = np.arange(8.0).reshape(2, 4)
    >>> np.allclose(gram_rows(Prefix(4), v), v @ dense(Prefix(4)).T @ dense(Prefix(4)))
    True
    """
    v = np.asarray(v, dtype=float)
    if isinstance(workload, Prefix | AllRange):
        n = v.shape[1]
        left = np.arange(1, n + 1, dtype=float)                # i + 1
        right = left[::-1].copy()                              # n − i
        weighted = v * right
        above = weighted.sum(axis=1, keepdims=True) - np.cumsum(weighted, axis=1)  # Σ_{j > i} (n − j) v_j
        if isinstance(workload, Prefix):  # (n − i) Σ_{j ≤ i} v_j + Σ_{j > i} (n − j) v_j
            out = np.cumsum(v, axis=1)
        else:  # (n − i) Σ_{j ≤ i} (j + 1) v_j + (i + 1) Σ_{j > i} (n − j) v_j
            out = np.cumsum(v * left, axis=1)
            above *= left
        out *= right
        out += above
        return out
    return gram_apply(workload, v.T).T


_T = TypeVar("_T")


def remember(cache: dict[Any, Any], key: object, compute: Callable[[], _T], limit: int = 16) -> _T:
    """``cache[key]``, computed once; beyond ``limit`` entries the oldest is dropped.

    Keys should use ``greedy_h.workload_key`` so that equal workloads (re-parsed specs, fresh Ranges with
    the same ends) share an entry.

    >>> cache = {}
    >>> remember(cache, "a", lambda: 1), remember(cache, "a", lambda: 2)
    (1, 1)
    """
    if key not in cache:
        if len(cache) >= limit:
            cache.pop(next(iter(cache)))
        cache[key] = compute()
    return cache[key]


def query_rows(workload: Workload, start: int, stop: int) -> np.ndarray:
    """Rows start … stop − 1 of W as a dense (n × rows) block: from the rows' structure, else Wᵀ e_q."""
    if isinstance(workload, Ranges2D):
        return workload.rows_block(start, stop)
    if isinstance(workload, Stack):
        blocks, offset = [], 0
        for part in workload.parts:
            lo, hi = max(start - offset, 0), min(stop - offset, part.shape[0])
            if lo < hi:
                blocks.append(query_rows(part, lo, hi))
            offset += part.shape[0]
        return np.hstack(blocks)
    if isinstance(workload, Kron):  # row (i, j) of A ⊗ B is kron(row i of A, row j of B): from the factors
        a, b = workload.factors
        q = np.arange(start, stop)
        i, j = np.divmod(q, b.shape[0])
        left = query_rows(a, int(i.min()), int(i.max()) + 1)[:, i - i.min()]
        right = query_rows(b, int(j.min()), int(j.max()) + 1)[:, j - j.min()]
        return (left[:, None, :] * right[None, :, :]).reshape(a.shape[1] * b.shape[1], -1)
    if not isinstance(workload, Ranges | Explicit):
        unit = np.zeros(workload.shape[0])
        columns = []
        for query in range(start, stop):
            unit[query] = 1.0
            columns.append(workload.rmatvec(unit))
            unit[query] = 0.0
        return np.stack(columns, axis=1)
    if isinstance(workload, Ranges):
        cells = np.arange(workload.n)[:, None]
        return ((cells >= workload.lo[start:stop]) & (cells <= workload.hi[start:stop])).astype(float)
    rows = workload.matrix[start:stop]
    return np.asarray(rows.toarray() if scipy.sparse.issparse(rows) else rows, dtype=float).T


def noise_energy(workload: Workload, response: Callable[[np.ndarray], np.ndarray], coordinates: int,
                 covariance: Callable[[np.ndarray], np.ndarray] | None = None) -> float:
    """Σ_k ‖W l_k‖² where l_k = response(e_k) is the estimate error caused by unit noise on coordinate k.

    ``response`` maps a (coordinates × batch) block of noise to the (n × batch) error of the estimate;
    it must be linear. Noise is pushed through in batches of ENERGY_BATCH unit vectors.

    The same sum is tr(W Σ Wᵀ) with Σ = L Lᵀ. When ``covariance`` (v ↦ Σ v on n × batch blocks) is given
    and W has fewer rows than ``coordinates``, the m queries are pushed through Σ instead:
    Σ_q w_qᵀ Σ w_q, the same number at m/coordinates of the cost (2000 random ranges against 4096 Haar
    coefficients: about half; the 512 marginals of a 256 × 256 grid against its 87,381 quadtree nodes:
    1/170). Rows come from the workload's structure (Kron rows from its factors), a few at a time.
    """
    m, n = workload.shape
    if covariance is not None and m < coordinates:
        total = 0.0
        batch = max(1, min(ENERGY_BATCH, ROW_BLOCK_ENTRIES // n))  # rows of a 65,536-cell grid: 64 at a time
        for start in range(0, m, batch):
            rows = query_rows(workload, start, min(m, start + batch))
            total += float(np.einsum("ij,ij->", rows, covariance(rows)))
        return total
    total = 0.0
    for start in range(0, coordinates, ENERGY_BATCH):
        stop = min(coordinates, start + ENERGY_BATCH)
        unit = np.zeros((coordinates, stop - start))
        unit[np.arange(start, stop), np.arange(stop - start)] = 1.0
        columns = response(unit)
        total += float(np.sum(columns * gram_apply(workload, columns)))
    return total
