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

import numpy as np

from dplens.core.queries.workloads import (
    AllRange,
    Identity,
    Kron,
    Prefix,
    Ranges,
    Ranges2D,
    Stack,
    Total,
    Workload,
    gram_apply,
    gram_rows,  # noqa: F401  (re-exported: a method of the workloads)
    query_rows,
)

ENERGY_BATCH = 512  # noise coordinates pushed through the estimator at once (bounds memory at n·512)
ROW_BLOCK_ENTRIES = 2**22  # query rows materialised at once for the covariance path (32 MB of floats)


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


def family_energy(workload: Workload, grid: tuple[int, int], *, cells: Callable[[], np.ndarray],
                  prefixes: Callable[[], np.ndarray], functional: Callable[[np.ndarray], float],
                  kron: Callable[[Kron], float | None] | None = None,
                  ranges: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
                  rectangles: Callable[[Ranges2D], np.ndarray] | None = None) -> float | None:
    """Σ_k ‖W l_k‖² = tr(W Σ Wᵀ) in closed form from a few statistics of the error covariance Σ; None if W is not
    a family this knows.

    With e the estimate's error under unit noise (Cov e = Σ): Identity sums Var(e_i) (``cells()``); Prefix, on
    a 1-D grid, sums Var(P_j) over the prefix sums P_j = e_0 + ... + e_j (``prefixes()``); Total is
    Var(P_{n-1}) (``functional(1)``, u ↦ uᵀΣu). AllRange sums Var(P_b − P_a) over the n + 1 points
    P_{-1} = 0, P_0, ..., P_{n-1}, and Σ_{a<b} E(X_b − X_a)² = N Σ E X_i² − E(Σ X_i)² for N zero-mean X_i gives
    (n + 1) Σ Var(P_j) − Var(Σ_i (n − i) e_i). A list of arbitrary ranges [lo, hi] (Ranges, on a 1-D grid) sums
    Var(P_hi − P_{lo−1}) over its rows, which ``ranges(lo, hi)`` gives per row when given; rectangles on the grid
    (Ranges2D) go to ``rectangles`` (a variance per rectangle) when given. A Stack sums its blocks
    (its rows partition W); a Kron of identities is the identity (of totals, the total); any other Kron goes to
    ``kron`` when given.
    """
    if type(workload) is Stack:
        parts = [family_energy(part, grid, cells=cells, prefixes=prefixes, functional=functional, kron=kron,
                               ranges=ranges, rectangles=rectangles) for part in workload.parts]
        return None if any(part is None for part in parts) else float(sum(parts))  # type: ignore[arg-type]
    n = workload.shape[1]
    factors = workload.factors if type(workload) is Kron else (workload,)
    if all(type(f) is Identity for f in factors):
        return float(cells().sum())
    if all(type(f) is Total for f in factors):
        return functional(np.ones(n))
    if type(workload) is Kron:
        return None if kron is None else kron(workload)
    if type(workload) is Ranges2D:
        return None if rectangles is None or workload.grid != grid else float(rectangles(workload).sum())
    if grid[0] != 1:  # a flat prefix of a 2-D grid's row-major cells is no prefix of its tree
        return None
    if type(workload) is Prefix:
        return float(prefixes().sum())
    if type(workload) is AllRange:
        return (n + 1) * float(prefixes().sum()) - functional(np.arange(n, 0, -1.0))
    if type(workload) is Ranges and ranges is not None:
        return float(ranges(workload.lo, workload.hi).sum())
    return None
