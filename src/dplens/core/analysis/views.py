"""Display-side reductions the pages need, kept pure: sampled workload rows, downsampled arrays, error by count.

Nothing here densifies a large workload: rows are built in closed form for the structured workloads
(ranges, Kron, Stack, explicit) and through ``rmatvec`` on a unit vector otherwise.

>>> from dplens.core.queries.workloads import AllRange
>>> index, rows = sample_rows(AllRange(3), 10)
>>> index.tolist(), rows.tolist()[1]
([0, 1, 2, 3, 4, 5], [1.0, 1.0, 0.0])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dplens.core.queries.workloads import (
    Workload,
    query_rows,
    row_range,
    sparse_row,
)


def workload_row(w: Workload, i: int) -> np.ndarray:
    """Row ``i`` of W as a dense length-n vector, without building W.

    >>> from dplens.core.queries.workloads import Prefix
    >>> workload_row(Prefix(4), 1).tolist()
    [1.0, 1.0, 0.0, 0.0]
    """
    m, n = w.shape
    if not 0 <= i < m:
        raise ValueError(f"row index must be in [0, {m}), got {i!r}")
    span = row_range(w, i)
    if span is None:
        return query_rows(w, i, i + 1)[:, 0]
    out = np.zeros(n)
    out[span[0]:span[1] + 1] = 1.0
    return out


def spaced_rows(m: int, max_rows: int) -> np.ndarray:
    """Up to ``max_rows`` evenly spaced row indices of an m-row workload, first and last included.

    >>> spaced_rows(10, 4).tolist()
    [0, 3, 6, 9]
    """
    return np.unique(np.linspace(0, m - 1, min(m, max_rows)).round().astype(np.int64))


def sample_rows(w: Workload, max_rows: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """Up to ``max_rows`` evenly spaced rows of W (all rows when m is small): (row indices, k × n rows)."""
    m = w.shape[0]
    index = spaced_rows(m, max_rows)
    return index, np.array([workload_row(w, int(i)) for i in index])


def row_overview(w: Workload, x: np.ndarray, max_rows: int = 100, max_columns: int = 512) -> dict[str, Any]:
    """Evenly spaced rows of W for display, one row in memory at a time (works for n = 2^22).

    Returns ``index``, ``rows`` (averaged into at most ``max_columns`` column groups), ``group`` (the
    group size), and per row ``cells`` (non-zeros), ``first``/``last`` non-zero cell and ``answer`` (row · x).

    >>> from dplens.core.queries.workloads import Prefix
    >>> o = row_overview(Prefix(4), np.array([1.0, 2, 3, 4]), max_rows=2)
    >>> o["index"].tolist(), o["answer"].tolist(), o["last"].tolist()
    ([0, 3], [1.0, 10.0], [0, 3])
    """
    m = w.shape[0]
    index = spaced_rows(m, max_rows)
    n = w.shape[1]
    group = max(1, -(-n // max(1, int(max_columns))))
    starts = np.arange(0, n, group)
    ends = np.minimum(starts + group, n)
    prefix = np.concatenate(([0.0], np.cumsum(x)))
    ranged = row_range(w, 0) is not None
    rows, cells, first, last, answer = [], [], [], [], []
    for i in index:
        if ranged:  # closed form: O(n / group) per row instead of a dense length-n row
            lo, hi = row_range(w, int(i))  # type: ignore[misc]  # ranged: every row is an interval
            overlap = np.clip(np.minimum(ends, hi + 1) - np.maximum(starts, lo), 0, None)
            rows.append(overlap / (ends - starts))
            cells.append(hi - lo + 1)
            first.append(lo)
            last.append(hi)
            answer.append(prefix[hi + 1] - prefix[lo])
            continue
        stored = sparse_row(w, int(i))
        if stored is not None:  # W held sparse: touch the row's non-zeros only
            support, weights = stored
            reduced = np.bincount(support // group, weights=weights, minlength=starts.size) / (ends - starts)
            value = float(weights @ x[support])
        else:
            row = workload_row(w, int(i))
            support = np.flatnonzero(row)
            reduced, value = downsample(row, max_columns, how="mean")[0], float(row @ x)
        cells.append(support.size)
        first.append(support[0] if support.size else -1)
        last.append(support[-1] if support.size else -1)
        answer.append(value)
        rows.append(reduced)
    return {"index": index, "rows": np.array(rows), "group": group, "cells": np.array(cells),
            "first": np.array(first), "last": np.array(last), "answer": np.array(answer)}


def downsample(values: np.ndarray, max_length: int, *, how: str = "sum") -> tuple[np.ndarray, int]:
    """Aggregate the last axis into groups of ``k`` adjacent entries so it has at most ``max_length``.

    Returns (reduced array, k); k = 1 means unchanged. ``how`` is ``sum`` (counts) or ``mean``.

    >>> downsample(np.arange(10.0), 4)
    (array([ 3., 12., 21.,  9.]), 3)
    """
    if how not in ("sum", "mean"):
        raise ValueError(f"how must be 'sum' or 'mean', got {how!r}")
    values = np.asarray(values, dtype=float)
    length = values.shape[-1]
    k = max(1, -(-length // max(1, int(max_length))))
    if k == 1:
        return values, 1
    starts = np.arange(0, length, k)
    out = np.add.reduceat(values, starts, axis=-1)
    if how == "mean":
        out = out / np.diff(np.r_[starts, length])
    return out, k


def count_buckets(true_counts: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Bucket each bin by its true count: 0, 1–9, 10–99, … (the small-bin view of SReB_GCA).

    >>> count_buckets(np.array([0, 3, 10, 250.0]))
    (array([0, 1, 2, 3]), ['0', '1–9', '10–99', '100–999'])
    """
    true_counts = np.asarray(true_counts, dtype=float)
    decade = np.where(true_counts < 1, 0, np.floor(np.log10(np.maximum(true_counts, 1))) + 1).astype(int)
    labels = ["0"] + [f"{10**(d - 1):,}–{10**d - 1:,}" for d in range(1, int(decade.max(initial=0)) + 1)]
    return decade, labels
