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
