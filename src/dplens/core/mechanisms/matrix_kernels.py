"""Compiled inner loops (numba) of mm-opt's optimiser (``matrix.py``): its objective on workloads whose Gram is
separable, and the vector steps of its projected L-BFGS.

Each kernel performs the same floating-point operations, in the same order, as the NumPy expressions it replaces
(elementwise steps, sequential running sums and column sums, NumPy's pairwise row sum; no fastmath), so the
objective, its gradient and every iterate are bit for bit those of the NumPy code and the optimiser finds the same
strategy; ``tests/test_mmopt_scale.py`` checks them against it. What they save is memory traffic: at 16,384 cells
Θ is 64 × 16,384 (8 MB) and the NumPy code passed over such arrays about 25 times per iteration, with fresh
temporaries; a fused loop passes once. The module is imported lazily by ``matrix.py`` (numba takes about half a
second to import) and compiled functions are cached on disk.

>>> import numpy as np
>>> rows = np.arange(20.0).reshape(2, 10)
>>> [bool(row_sum(rows[i]) == rows.sum(axis=1)[i]) for i in range(2)]
[True, True]
"""

from __future__ import annotations

import numba
import numpy as np

_jit = numba.njit(cache=True, nogil=True)  # no fastmath: the float operations stay in the order written

PAIRWISE_BLOCK = 128  # NumPy's PW_BLOCKSIZE: rows up to this length are summed with eight running sums


@_jit
def _block_sum(values: np.ndarray, start: int, count: int) -> float:
    """NumPy's sum of up to PAIRWISE_BLOCK values: in order below 8, else eight running sums then the rest."""
    if count < 8:
        total = 0.0
        for i in range(start, start + count):
            total += values[i]
        return total
    r0, r1, r2, r3 = values[start], values[start + 1], values[start + 2], values[start + 3]
    r4, r5, r6, r7 = values[start + 4], values[start + 5], values[start + 6], values[start + 7]
    i = 8
    stop = count - count % 8
    while i < stop:
        k = start + i
        r0 += values[k]
        r1 += values[k + 1]
        r2 += values[k + 2]
        r3 += values[k + 3]
        r4 += values[k + 4]
        r5 += values[k + 5]
        r6 += values[k + 6]
        r7 += values[k + 7]
        i += 8
    total = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < count:
        total += values[start + i]
        i += 1
    return total


@_jit
def _pairwise(values: np.ndarray, start: int, count: int) -> float:
    """NumPy's pairwise summation of values[start : start + count] (``pairwise_sum`` in its umath loops): halves
    (the first a multiple of 8) until a block has at most PAIRWISE_BLOCK values, then the left half's sum plus the
    right's. Walked with an explicit stack: numba's disk cache cannot load a recursive function."""
    if count <= PAIRWISE_BLOCK:
        return _block_sum(values, start, count)
    depth = 64
    starts, counts = np.empty(depth, np.int64), np.empty(depth, np.int64)
    visits, sums = np.zeros(depth, np.int64), np.empty(depth)
    top, done = 0, 0  # frames on the stack; finished sums waiting for their sibling
    starts[0], counts[0], visits[0] = start, count, 0
    while top >= 0:
        first, length = starts[top], counts[top]
        if length <= PAIRWISE_BLOCK:
            sums[done] = _block_sum(values, first, length)
            done += 1
            top -= 1
            continue
        half = length // 2
        half -= half % 8
        if visits[top] == 0:  # the left half first …
            visits[top] = 1
            top += 1
            starts[top], counts[top], visits[top] = first, half, 0
        elif visits[top] == 1:  # … then the right half …
            visits[top] = 2
            top += 1
            starts[top], counts[top], visits[top] = first + half, length - half, 0
        else:  # … then left + right
            done -= 1
            sums[done - 1] = sums[done - 1] + sums[done]
            top -= 1
    return sums[0]


@_jit
def row_sum(values: np.ndarray) -> float:
    """``values.sum()`` of a contiguous 1-D array, bit for bit (NumPy sums pairwise)."""
    return _pairwise(values, 0, values.size)


@_jit
def separable_gram_terms(m_theta: np.ndarray, theta: np.ndarray, d: np.ndarray, left: np.ndarray,
                         right: np.ndarray, y: np.ndarray, theta_y: np.ndarray, weighted: np.ndarray) -> None:
    """The Gram terms of mm-opt's objective when (WᵀW)_ij = left[min(i, j)] · right[max(i, j)].

    Row a of Z = (Θ̃ ∘ d) WᵀW is z_i = right_i Σ_{j≤i} left_j v_j + left_i Σ_{j>i} right_j v_j with v = Θ̃_a ∘ d,
    the later sum taken as the row's total less the running sum, exactly as ``workloads._interval_gram_rows``
    (prefix: left = 1). Writes Y = Z ∘ d into ``y`` and the column sums Σ_a Z_a ∘ Θ_a into ``theta_y``;
    ``weighted`` is a scratch row of length n.
    """
    p, n = theta.shape
    for a in range(p):
        for j in range(n):
            weighted[j] = (m_theta[a, j] * d[j]) * right[j]
        total = _pairwise(weighted, 0, n)
        running_left = 0.0
        running_right = 0.0
        for j in range(n):
            v = m_theta[a, j] * d[j]
            if j == 0:
                running_left = v * left[0]
                running_right = weighted[0]
            else:
                running_left += v * left[j]
                running_right += weighted[j]
            z = running_left * right[j] + (total - running_right) * left[j]
            y[a, j] = z * d[j]
            if a == 0:
                theta_y[j] = z * theta[a, j]
            else:
                theta_y[j] += z * theta[a, j]


@_jit
def finish_gradient(grad: np.ndarray, y: np.ndarray, column: np.ndarray) -> None:
    """grad = 2 (grad − Y + column), in place (``column`` broadcast along the rows)."""
    p, n = grad.shape
    for a in range(p):
        for j in range(n):
            grad[a, j] = ((grad[a, j] - y[a, j]) + column[j]) * 2.0


@_jit
def masked_gradient(x: np.ndarray, grad: np.ndarray, free: np.ndarray, out: np.ndarray) -> None:
    """free = (x > 0) | (grad ≤ 0) and out = grad · free: the coordinates the step may move."""
    for i in range(x.size):
        moves = x[i] > 0.0 or grad[i] <= 0.0
        free[i] = moves
        out[i] = grad[i] * (1.0 if moves else 0.0)


@_jit
def projected_step(x: np.ndarray, direction: np.ndarray, step: float, out: np.ndarray) -> None:
    """out = max(x − step · direction, 0) (with step = 1 the product is skipped, as ``x − direction``)."""
    for i in range(x.size):
        value = x[i] - direction[i] if step == 1.0 else x[i] - step * direction[i]
        out[i] = value if (value > 0.0 or value != value) else 0.0  # as np.maximum: NaN passes, -0.0 is 0.0


@_jit
def differences(new_x: np.ndarray, x: np.ndarray, new_grad: np.ndarray, grad: np.ndarray, s: np.ndarray,
                y: np.ndarray) -> None:
    """s = new_x − x and y = new_grad − grad: the L-BFGS correction pair."""
    for i in range(x.size):
        s[i] = new_x[i] - x[i]
        y[i] = new_grad[i] - grad[i]
