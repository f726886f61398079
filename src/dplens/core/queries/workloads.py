"""Workloads as implicit linear operators (see docs/architecture.md): an m × n matrix we never have to build.

Every workload has ``shape``, ``matvec`` (W x), ``rmatvec`` (Wᵀ y), ``column_norms(ord)`` in closed
form (so L1 sensitivity and ‖W‖_F² are exact without densifying) and ``describe()``.

>>> w = parse_workload("prefix", (4,))
>>> w.matvec(np.array([1.0, 2, 3, 4])).tolist(), l1_sensitivity(w)
([1.0, 3.0, 6.0, 10.0], 4.0)
"""

from __future__ import annotations

import csv
import io
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

import numpy as np
import scipy.sparse

from dplens.core.data.files import check_size, read_bounded
from dplens.core.data.limits import (  # dense() guard; implicit workloads beyond m are refused
    DENSE_LIMIT,
    MAX_QUERIES,
    MAX_RECIPE_NUMBERS,
)
from dplens.core.validate import integer


@runtime_checkable
class Workload(Protocol):
    """The protocol every workload satisfies."""

    @property
    def shape(self) -> tuple[int, int]: ...
    def matvec(self, x: np.ndarray) -> np.ndarray: ...
    def rmatvec(self, y: np.ndarray) -> np.ndarray: ...
    def column_norms(self, ord: Literal[1, 2]) -> np.ndarray: ...
    def describe(self) -> str: ...


def _check_ord(ord: int) -> None:
    if ord not in (1, 2):
        raise ValueError(f"ord must be 1 or 2, got {ord!r}")


def _check_length(name: str, vector: np.ndarray, length: int) -> np.ndarray:
    vector = np.asarray(vector, dtype=float)
    if vector.shape != (length,):
        raise ValueError(f"{name} must have shape ({length},), got {vector.shape}")
    return vector


class WorkloadOperator:
    """The closed forms every workload operator answers beyond the protocol, by default from its ``matvec`` and
    ``rmatvec``; a workload with a faster form overrides the method. Mechanisms call these (or the functions
    ``gram_apply``, ``gram_rows``, ``query_rows``, ``workload_key``, ``as_intervals``, ``block_gram`` below, which
    also take workloads defined elsewhere) and never switch on a workload's type.

    >>> Prefix(3).gram_apply(np.eye(3)).tolist()
    [[3.0, 2.0, 1.0], [2.0, 2.0, 1.0], [1.0, 1.0, 1.0]]
    """

    @property
    def shape(self) -> tuple[int, int]:
        raise NotImplementedError

    def matvec(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def rmatvec(self, y: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def column_norms(self, ord: Literal[1, 2]) -> np.ndarray:
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError

    def gram_apply(self, v: np.ndarray) -> np.ndarray:
        """(WᵀW) v for an n × k block of columns v."""
        v = np.asarray(v, dtype=float)
        return np.stack([self.rmatvec(self.matvec(col)) for col in v.T], axis=1)

    def gram_rows(self, v: np.ndarray) -> np.ndarray:
        """v (WᵀW) for a k × n block of rows v (mm-opt applies the Gram to its p × n strategy this way)."""
        return self.gram_apply(np.asarray(v, dtype=float).T).T

    def rows_block(self, start: int, stop: int) -> np.ndarray:
        """Rows start … stop − 1 of W as a dense (n × rows) block, here as Wᵀ e_q."""
        unit = np.zeros(self.shape[0])
        columns = []
        for query in range(start, stop):
            unit[query] = 1.0
            columns.append(self.rmatvec(unit))
            unit[query] = 0.0
        return np.stack(columns, axis=1)

    def cache_key(self) -> object:
        """A hashable key equal for workloads with the same queries (a frozen dataclass compares by value)."""
        return self

    def intervals(self) -> Ranges | None:
        """The workload as 0/1 interval rows when it is one, else None."""
        return None

    def block_gram(self, bounds: np.ndarray) -> np.ndarray | None:
        """Σ_{i∈B_c, j∈B_d} (WᵀW)_ij over buckets B_c = [bounds[c], bounds[c+1]) in closed form, or None."""
        return None

    def separable_gram(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(left, right) when (WᵀW)_ij = left[min(i, j)] · right[max(i, j)] (prefix and all-range), else None."""
        return None

    def row_range(self, i: int) -> tuple[int, int] | None:
        """(lo, hi) when row ``i`` is the 0/1 interval of cells lo … hi (every row of a range workload), else None."""
        return None

    def matvec_elements(self) -> float:
        """Elements touched by one ``matvec`` (≈ its cost), from the operator's structure."""
        m, n = self.shape
        return float(m + n)

    def dense_entries(self) -> float:
        """Entries of W as ``sparse_matrix`` builds it (nnz for sparse-native workloads, else m·n)."""
        m, n = self.shape
        return float(m) * n

    def max_abs_entry(self) -> float:
        """max |W_ij| (a query's sensitivity to one record); here the larger, still valid, L1 sensitivity."""
        return float(np.max(self.column_norms(1)))

    sparse_native: ClassVar[bool] = False  # True where sparse_rows reads W's entries without densifying it

    def sparse_rows(self) -> Any:
        """W as a scipy.sparse CSR matrix, here from the dense W."""
        return scipy.sparse.csr_matrix(dense(self))

    def sparse_row(self, i: int) -> tuple[np.ndarray, np.ndarray] | None:
        """(columns ascending, values) of row ``i``'s stored entries when W is held as a sparse matrix, else None."""
        return None

    def gram_matrix(self) -> np.ndarray:
        """WᵀW as a dense n × n matrix, here from the dense W (ValueError when W is too big to densify)."""
        matrix = dense(self)
        return matrix.T @ matrix

    def gram_parts(self) -> tuple:
        """Workloads whose Grams sum to this one's (a stack's parts), here the workload itself."""
        return (self,)

    # True where the rows are every range [i, j]: m = n(n+1)/2, too many to list by their end points
    all_ranges: ClassVar[bool] = False

    # True where query i is cell i alone with weight 1 (W = I by construction): each answer is one cell's count,
    # so noise added to the cells reaches the answers unchanged and independent.
    queries_are_cells: ClassVar[bool] = False

    def kron_grid(self) -> tuple[int, int] | None:
        """(rows, cols) when the workload is a Kronecker product over a 2-D grid (its factors' widths), else None."""
        return None

    def grid_shape(self) -> tuple[int, int]:
        """The grid the workload lives on: a Kron's (rows, cols), here else (1, n).

        Mechanisms with a tree or wavelet on the grid read it from the workload: ``expected_mse`` has no data.
        """
        grid = _own(self, "kron_grid")()
        return grid if grid is not None else (1, self.shape[1])

    def marginal_names(self) -> tuple[tuple[str, ...], ...] | None:
        """The attribute sets of the marginals asked on a table of records, None for a workload on a histogram.

        Here it reads the ``marginals`` field ``dplens.core.queries.marginals.MarginalWorkload`` declares (no other
        operator has one); that class may answer it itself.
        """
        return getattr(self, "marginals", None)

    def recipe(self) -> dict:
        """This workload as a session-config recipe node (``dplens.core.release.config``), nonzeros only."""
        raise ValueError(f"a {type(self).__name__} workload has no config recipe; add it from the registry "
                         "(its spec is a recipe) or upload it as a query matrix")


def _own(w: Workload, name: str) -> Callable[..., Any]:
    """``w``'s closed form ``name``, or the default one for a workload defined outside this module."""
    method = getattr(w, name, None)
    return method if method is not None else getattr(WorkloadOperator, name).__get__(w)


def _fact(w: Workload, name: str) -> bool:
    """``w``'s declared fact ``name`` (a class attribute of ``WorkloadOperator``), or its default for a workload
    defined outside this module."""
    return bool(getattr(w, name, getattr(WorkloadOperator, name)))


def sparse_native(w: Workload) -> bool:
    """Whether ``sparse_matrix`` reads W's entries without densifying it (ranges and explicit matrices).

    >>> sparse_native(Explicit(np.eye(2))), sparse_native(Prefix(2))
    (True, False)
    """
    return _fact(w, "sparse_native")


def all_ranges(w: Workload) -> bool:
    """Whether the rows are every range [i, j] (m = n(n+1)/2: too many to list by their end points).

    >>> all_ranges(AllRange(3)), all_ranges(Prefix(3))
    (True, False)
    """
    return _fact(w, "all_ranges")


def queries_are_cells(w: Workload) -> bool:
    """Whether query i is cell i alone with weight 1 (W = I by construction).

    >>> queries_are_cells(Identity(3)), queries_are_cells(Explicit(np.eye(3)))
    (True, False)
    """
    return _fact(w, "queries_are_cells")


def workload_grid(w: Workload) -> tuple[int, int]:
    """The grid a workload lives on: (rows, cols) for a Kron (or a Stack holding one), else (1, n).

    >>> workload_grid(Kron((Prefix(3), Identity(4)))), workload_grid(Stack((Prefix(12), Kron((Total(2), Prefix(6))))))
    ((3, 4), (2, 6))
    >>> workload_grid(Prefix(5))
    (1, 5)
    """
    return _own(w, "grid_shape")()


def marginal_names(w: Workload | None) -> tuple[tuple[str, ...], ...] | None:
    """The attribute sets of the marginals ``w`` asks on a table of records; None on a histogram (or no workload)."""
    return None if w is None else _own(w, "marginal_names")()


def gram_apply(w: Workload, v: np.ndarray) -> np.ndarray:
    """(WᵀW) v for an n × k block of columns v, in closed form where the workload has one."""
    return _own(w, "gram_apply")(np.asarray(v, dtype=float))


def gram_rows(w: Workload, v: np.ndarray) -> np.ndarray:
    """v (WᵀW) for a k × n block of rows v.

    >>> v = np.arange(8.0).reshape(2, 4)
    >>> np.allclose(gram_rows(Prefix(4), v), v @ dense(Prefix(4)).T @ dense(Prefix(4)))
    True
    """
    return _own(w, "gram_rows")(np.asarray(v, dtype=float))


def separable_gram(w: Workload) -> tuple[np.ndarray, np.ndarray] | None:
    """(left, right) with (WᵀW)_ij = left[min(i, j)] · right[max(i, j)] when the Gram has that form, else None.

    >>> left, right = separable_gram(AllRange(3))
    >>> gram = dense(AllRange(3)).T @ dense(AllRange(3))
    >>> bool(np.array_equal(gram, [[left[min(i, j)] * right[max(i, j)] for j in range(3)] for i in range(3)]))
    True
    >>> separable_gram(Identity(3)) is None
    True
    """
    return _own(w, "separable_gram")()


def query_rows(w: Workload, start: int, stop: int) -> np.ndarray:
    """Rows start … stop − 1 of W as a dense (n × rows) block: from the rows' structure, else Wᵀ e_q."""
    return _own(w, "rows_block")(start, stop)


def workload_key(w: Workload) -> object:
    """A hashable key equal for workloads with the same queries (copies from a cache, re-parsed specs).

    >>> workload_key(Prefix(4)) == workload_key(Prefix(4))
    True
    """
    return _own(w, "cache_key")()


def row_range(w: Workload, i: int) -> tuple[int, int] | None:
    """(lo, hi) of row ``i`` when it is a 0/1 interval of cells, else None.

    >>> row_range(Prefix(4), 2), row_range(AllRange(3), 3), row_range(Explicit(np.eye(2)), 0)
    ((0, 2), (1, 1), None)
    """
    return _own(w, "row_range")(i)


def matvec_elements(w: Workload) -> float:
    """Elements touched by one ``w.matvec`` (≈ its cost).

    >>> matvec_elements(Prefix(100)), matvec_elements(Kron((Identity(4), Total(8))))
    (100.0, 64.0)
    """
    return float(_own(w, "matvec_elements")())


def dense_entries(w: Workload) -> float:
    """Entries of W as ``sparse_matrix`` builds it: nnz for sparse-native workloads, else m·n (via dense())."""
    return float(_own(w, "dense_entries")())


def max_abs_entry(w: Workload) -> float:
    """max |W_ij|: exact for the 0/1 range workloads, explicit matrices and their Kron/Stack combinations;
    other workloads give their (larger, still valid) L1 sensitivity.

    >>> max_abs_entry(Prefix(5)), max_abs_entry(Explicit(np.array([[1.0, -3.0]])))
    (1.0, 3.0)
    """
    return float(_own(w, "max_abs_entry")())


def sparse_row(w: Workload, i: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(columns ascending, values) of row ``i``'s stored entries when W is held as a sparse matrix, else None.

    A display can then touch a row's non-zeros only; a dense or implicit W answers None.

    >>> columns, values = sparse_row(Explicit(scipy.sparse.csr_matrix([[0.0, 2.0, 3.0]])), 0)
    >>> columns.tolist(), values.tolist(), sparse_row(Prefix(3), 0)
    ([1, 2], [2.0, 3.0], None)
    """
    return _own(w, "sparse_row")(i)


def recipe(w: Workload) -> dict:
    """The session-config recipe of a drawn range, a query matrix, or a Kron or Stack of them (nonzeros only).

    >>> recipe(Ranges(8, [2], [5], label="drawn range"))
    {'ranges': [[2, 5]], 'n': 8, 'label': 'drawn range'}

    Raises:
        ValueError: for other workload types (their registry spec is their recipe) or beyond MAX_RECIPE_NUMBERS.
    """
    return _own(w, "recipe")()


def check_recipe_numbers(count: int) -> None:
    """Refuse a recipe of more than MAX_RECIPE_NUMBERS numbers (a config stays small enough to show).

    >>> check_recipe_numbers(MAX_RECIPE_NUMBERS)
    """
    if count > MAX_RECIPE_NUMBERS:
        raise ValueError(f"the custom workload needs {count:,} numbers in the config; the limit is "
                         f"MAX_RECIPE_NUMBERS={MAX_RECIPE_NUMBERS:,} (3 per matrix nonzero, 2 per range): "
                         "use a registry workload or a smaller matrix")


def _recipe_numbers(node: dict) -> int:
    """Numbers a built recipe node holds: 2 per range, 3 per matrix nonzero."""
    if "ranges" in node:
        return 2 * len(node["ranges"])
    if "matrix" in node:
        return 3 * len(node["matrix"]["entries"])
    return sum(_recipe_numbers(part) for part in node.get("stack", node.get("kron", [])))


def _composite_recipe(kind: str, parts: tuple) -> dict:
    """A stack or kron node of its parts' recipes, refused at this level when it is too large as a whole."""
    node = {kind: [recipe(part) for part in parts]}
    check_recipe_numbers(_recipe_numbers(node))
    return node


def block_gram(w: Workload, bounds: np.ndarray) -> np.ndarray | None:
    """Σ_{i∈B_c, j∈B_d} (WᵀW)_ij over the buckets ``bounds`` in closed form, or None without a fast path."""
    return _own(w, "block_gram")(bounds)


# ----------------------------------------------------------------------------- closed forms of the Gram WᵀW


def gram_matrix(w: Workload) -> np.ndarray:
    """WᵀW as a dense n × n matrix (``WorkloadOperator.gram_matrix``); ValueError when W cannot be densified."""
    return _own(w, "gram_matrix")()


def cell_gram_matrix(w: Workload) -> np.ndarray:
    """WᵀW on the cells: the closed form of the cells' block Gram where there is one, else ``gram_matrix``.

    >>> cell_gram_matrix(Kron((Identity(2), Total(2)))).tolist()
    [[1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0], [0.0, 0.0, 1.0, 1.0]]
    """
    block = block_gram(w, np.arange(w.shape[1] + 1))
    return block if block is not None else gram_matrix(w)


def gram_parts(w: Workload) -> tuple:
    """Workloads whose Grams sum to WᵀW: a stack's parts, else ``(w,)``."""
    return _own(w, "gram_parts")()


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


def _interval_gram_rows(v: np.ndarray, prefix: bool) -> np.ndarray:
    """v (WᵀW) along the rows for prefix (``prefix``) or all-range workloads: two running sums, no reversed copies."""
    n = v.shape[1]
    left = np.arange(1, n + 1, dtype=float)                # i + 1
    right = left[::-1].copy()                              # n − i
    weighted = v * right
    above = weighted.sum(axis=1, keepdims=True) - np.cumsum(weighted, axis=1)  # Σ_{j > i} (n − j) v_j
    if prefix:  # (n − i) Σ_{j ≤ i} v_j + Σ_{j > i} (n − j) v_j
        out = np.cumsum(v, axis=1)
    else:  # (n − i) Σ_{j ≤ i} (j + 1) v_j + (i + 1) Σ_{j > i} (n − j) v_j
        out = np.cumsum(v * left, axis=1)
        above *= left
    out *= right
    out += above
    return out


def _ranges_block_gram(lo: np.ndarray, hi: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """Block sums Σ_{i∈B_c, j∈B_d} (WᵀW)_ij for 0/1 range queries [lo, hi], in O(m + buckets²).

    For buckets c < d every i ∈ B_c lies left of every j ∈ B_d, so a range covers both iff lo ≤ i and
    hi ≥ j: the block sum is Σ_q a_q(c)·b_q(d) with a_q(c) = |{i ∈ B_c : i ≥ lo_q}| and
    b_q(d) = |{j ∈ B_d : j ≤ hi_q}| — a full bucket width strictly between the end buckets c_lo, c_hi
    plus partial overlaps α_q, β_q at them. Expanded, that is a few cumulated 2-D histograms of
    (c_lo, c_hi); the diagonal blocks are Σ_q |range_q ∩ B_c|².
    """
    k = bounds.size - 1
    width = np.diff(bounds).astype(float)
    cl = np.searchsorted(bounds, lo, side="right") - 1
    ch = np.searchsorted(bounds, hi, side="right") - 1
    alpha = (bounds[cl + 1] - lo).astype(float)  # overlap of [lo, ∞) with its first bucket
    beta = (hi - bounds[ch] + 1).astype(float)   # overlap of (−∞, hi] with its last bucket
    # Every term is an integer below 2^53, so the sums are exact in any order: 2-D histograms by bincount
    # rows 1…k of `block` hold Σ_{b > d} #(c_lo = a, c_hi = b) · w_d + Σ #(c_lo = a, c_hi = d) β, row 0 is 0
    pair = (cl + 1) * k + ch
    block = np.bincount(pair, minlength=(k + 1) * k).astype(float).reshape(k + 1, k)
    np.cumsum(block[:, ::-1], axis=1, out=block[:, ::-1])
    block[:, :-1] = block[:, 1:].copy()  # strictly beyond d
    block[:, -1] = 0.0
    block *= width[None, :]
    block += np.bincount(pair, weights=beta, minlength=(k + 1) * k).reshape(k + 1, k)
    np.cumsum(block, axis=0, out=block)  # Σ_{a < c}
    block = block[:k]
    block *= width[:, None]
    # + w_d Σ_{b > d} α_q over queries starting in c
    tail = np.bincount(cl * k + ch, weights=alpha, minlength=k * k).reshape(k, k)
    np.cumsum(tail[:, ::-1], axis=1, out=tail[:, ::-1])
    tail[:, :-1] = tail[:, 1:].copy()
    tail[:, -1] = 0.0
    block += tail * width[None, :]
    block += np.bincount(cl * k + ch, weights=alpha * beta, minlength=k * k).reshape(k, k)
    block = np.triu(block, 1)  # keep c < d, then mirror
    block += block.T
    same = cl == ch
    inner = np.bincount(cl[~same] + 1, minlength=k + 1)[: k + 1] - np.bincount(ch[~same], minlength=k + 1)[: k + 1]
    diagonal = np.cumsum(inner)[:k] * width**2
    diagonal += np.bincount(cl[same], weights=(hi[same] - lo[same] + 1.0) ** 2, minlength=k)
    diagonal += np.bincount(cl[~same], weights=alpha[~same] ** 2, minlength=k)
    diagonal += np.bincount(ch[~same], weights=beta[~same] ** 2, minlength=k)
    block[np.diag_indices(k)] = diagonal
    return block


def _separable_block_gram(left: np.ndarray, right: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """Block sums of a Gram (WᵀW)_ij = left[min(i,j)] · right[max(i,j)] (prefix and all-range workloads)."""
    starts = bounds[:-1]
    block = np.triu(np.outer(np.add.reduceat(left, starts), np.add.reduceat(right, starts)), 1)
    block += block.T
    bucket_of = np.repeat(np.arange(starts.size), np.diff(bounds))
    before = np.cumsum(left) - left                 # Σ_{i < j} left[i] over the whole domain …
    before -= before[starts][bucket_of]             # … restricted to j's bucket
    diagonal = np.bincount(bucket_of, weights=right * (2 * before + left), minlength=starts.size)
    block[np.diag_indices(starts.size)] = diagonal
    return block


def allrange_block_gram(n: int, bounds: np.ndarray) -> np.ndarray:
    # (WᵀW)_ij = (min(i,j) + 1)(n − max(i,j)): the ranges containing both i and j
    return _separable_block_gram(np.arange(1.0, n + 1), n - np.arange(n, dtype=float), bounds)


def l1_sensitivity(w: Workload) -> float:
    """Δ₁(W): the largest column L1 norm (add/remove neighbours)."""
    return float(w.column_norms(1).max())


def l2_sensitivity(w: Workload) -> float:
    """Δ₂(W): the largest column L2 norm."""
    return float(w.column_norms(2).max())


def squared_frobenius(w: Workload) -> float:
    """‖W‖_F², the sum of squared column L2 norms."""
    return float((w.column_norms(2) ** 2).sum())


def dense(w: Workload) -> np.ndarray:
    """The explicit m × n matrix (test oracle and small-workload fallback), guarded by DENSE_LIMIT.

    >>> dense(Prefix(3)).tolist()
    [[1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [1.0, 1.0, 1.0]]
    """
    m, n = w.shape
    if m * n > DENSE_LIMIT:
        raise ValueError(f"dense() refuses a {m} x {n} matrix ({m * n} entries > {DENSE_LIMIT}); use matvec")
    if isinstance(w, Explicit):
        return w.matrix.toarray() if hasattr(w.matrix, "toarray") else np.array(w.matrix, dtype=float)
    out = np.empty((m, n))
    unit = np.zeros(n)
    for j in range(n):
        unit[j] = 1.0
        out[:, j] = w.matvec(unit)
        unit[j] = 0.0
    return out


@lru_cache(maxsize=16)
def sparse_matrix(w: Workload):
    """W as a scipy.sparse CSR matrix: Explicit and Ranges without densifying, others via dense().

    For row-level algorithms (WDA's division, OM's factorisation) that need W's entries. Cached per
    workload object: callers must not modify the returned matrix.

    >>> sparse_matrix(Ranges(4, [0, 1], [1, 3])).toarray().tolist()
    [[1.0, 1.0, 0.0, 0.0], [0.0, 1.0, 1.0, 1.0]]
    """
    matrix = _own(w, "sparse_rows")()
    matrix.eliminate_zeros()
    return matrix


# ----------------------------------------------------------------------------- 1-D building blocks
@dataclass(frozen=True)
class IntervalWorkload(WorkloadOperator):
    """A workload of 0/1 intervals over ``n`` cells defined by ``n`` alone (identity, total, prefix, all-range)."""

    n: int

    def __post_init__(self) -> None:
        integer("n", self.n)

    def matvec_elements(self):
        return float(self.n)

    def max_abs_entry(self):
        return 1.0


@dataclass(frozen=True)
class Identity(IntervalWorkload):
    """One query per cell: W = I_n."""

    queries_are_cells: ClassVar[bool] = True

    @property
    def shape(self) -> tuple[int, int]:
        return (self.n, self.n)

    def matvec(self, x):
        return _check_length("x", x, self.n).copy()

    def rmatvec(self, y):
        return _check_length("y", y, self.n).copy()

    def column_norms(self, ord=1):
        _check_ord(ord)
        return np.ones(self.n)

    def describe(self) -> str:
        return f"identity: every cell count ({self.n} queries)"

    def gram_apply(self, v):
        return np.array(v, dtype=float)

    def intervals(self):
        ends = np.arange(self.n)
        return Ranges(self.n, ends, ends)

    def block_gram(self, bounds):
        return np.diag(np.diff(bounds).astype(float))

    def row_range(self, i):
        return int(i), int(i)


@dataclass(frozen=True)
class Total(IntervalWorkload):
    """One query: the sum of all cells."""

    @property
    def shape(self) -> tuple[int, int]:
        return (1, self.n)

    def matvec(self, x):
        return np.array([_check_length("x", x, self.n).sum()])

    def rmatvec(self, y):
        return np.full(self.n, float(_check_length("y", y, 1)[0]))

    def column_norms(self, ord=1):
        _check_ord(ord)
        return np.ones(self.n)

    def describe(self) -> str:
        return "total: the sum of all cells (1 query)"

    def gram_apply(self, v):
        v = np.asarray(v, dtype=float)
        return np.broadcast_to(v.sum(axis=0), v.shape).copy()

    def intervals(self):
        return Ranges(self.n, np.array([0]), np.array([self.n - 1]))

    def block_gram(self, bounds):
        width = np.diff(bounds).astype(float)
        return np.outer(width, width)

    def row_range(self, i):
        return 0, self.n - 1


@dataclass(frozen=True)
class Prefix(IntervalWorkload):
    """Prefix sums: query i is x_0 + … + x_i (an empirical CDF)."""

    @property
    def shape(self) -> tuple[int, int]:
        return (self.n, self.n)

    def matvec(self, x):
        return np.cumsum(_check_length("x", x, self.n))

    def rmatvec(self, y):
        return np.cumsum(_check_length("y", y, self.n)[::-1])[::-1]

    def column_norms(self, ord=1):
        _check_ord(ord)
        ones = np.arange(self.n, 0, -1, dtype=float)  # column j is in n - j prefixes
        return ones if ord == 1 else np.sqrt(ones)

    def describe(self) -> str:
        return f"prefix: {self.n} prefix sums (cumulative counts)"

    def gram_apply(self, v):
        return _prefix_gram(np.asarray(v, dtype=float))

    def gram_rows(self, v):
        return _interval_gram_rows(np.asarray(v, dtype=float), prefix=True)

    def separable_gram(self):  # (WᵀW)_ij = n − max(i, j)
        return np.ones(self.n), self.n - np.arange(self.n, dtype=float)

    def intervals(self):
        ends = np.arange(self.n)
        return Ranges(self.n, np.zeros_like(ends), ends)

    def block_gram(self, bounds):  # (WᵀW)_ij = n − max(i, j)
        return _separable_block_gram(np.ones(self.n), self.n - np.arange(self.n, dtype=float), bounds)

    def row_range(self, i):
        return 0, int(i)


@dataclass(frozen=True)
class AllRange(IntervalWorkload):
    """Every contiguous range [i, j], i ≤ j: n(n+1)/2 queries, never materialised.

    Rows are ordered by start i, then end j. The operator exists at any size: its column norms, Gram
    (``gram_apply``, ``gram_rows``, ``separable_gram``, ``block_gram``) and rows (``row_range``, ``rows_block``) are
    closed forms in n, so mm-opt and the analytic errors use it at 16,384 cells (134,225,920 queries). Only what lists
    a value per query (``matvec``: the answers, ``intervals``: the end points) is refused beyond MAX_QUERIES rows,
    as is any run (``mechanisms.check_inputs``, ``analysis.cost.check_cost``): a release holds one answer per query.

    >>> AllRange(3).matvec(np.array([1.0, 2, 3])).tolist()
    [1.0, 3.0, 6.0, 2.0, 5.0, 3.0]
    >>> big = AllRange(16384)
    >>> big.shape, float(big.column_norms(1).max())
    ((134225920, 16384), 67117056.0)
    >>> big.matvec(np.ones(16384))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: all-range on n=16384 has 134,225,920 queries, more than MAX_QUERIES=16,777,216 (...): its answers ...
    """

    all_ranges: ClassVar[bool] = True

    @property
    def shape(self) -> tuple[int, int]:
        return (self.n * (self.n + 1) // 2, self.n)

    def _check_listable(self, what: str) -> None:
        """Refuse to list ``what`` (one value per query) beyond MAX_QUERIES queries."""
        m = self.shape[0]
        if m > MAX_QUERIES:
            raise ValueError(f"all-range on n={self.n} has {m:,} queries, more than MAX_QUERIES={MAX_QUERIES:,} "
                             f"(dplens.core.data.limits): {what} would list one value per query; its closed forms "
                             "(column norms, Gram, row_range) need no rows, or choose the workload random-range:m=2000")

    def matvec(self, x):
        x = _check_length("x", x, self.n)
        self._check_listable("its answers")
        c = np.concatenate(([0.0], np.cumsum(x)))
        return np.concatenate([c[i + 1:] - c[i] for i in range(self.n)])

    def rmatvec(self, y):
        y = _check_length("y", y, self.shape[0])
        out = np.zeros(self.n)
        start = 0
        for i in range(self.n):  # ranges starting at i cover column k for every end j >= k
            block = y[start:start + self.n - i]
            out[i:] += np.cumsum(block[::-1])[::-1]
            start += self.n - i
        return out

    def column_norms(self, ord=1):
        _check_ord(ord)
        k = np.arange(self.n, dtype=float)
        count = (k + 1) * (self.n - k)  # ranges containing column k
        return count if ord == 1 else np.sqrt(count)

    def describe(self) -> str:
        return f"all-range: all {self.shape[0]} contiguous ranges of {self.n} cells"

    def gram_apply(self, v):
        return _allrange_gram(np.asarray(v, dtype=float))

    def gram_rows(self, v):
        return _interval_gram_rows(np.asarray(v, dtype=float), prefix=False)

    def separable_gram(self):  # (WᵀW)_ij = (min(i, j) + 1)(n − max(i, j))
        return np.arange(1.0, self.n + 1), self.n - np.arange(self.n, dtype=float)

    def intervals(self):  # rows by start, then end
        self._check_listable("its end points")
        counts = np.arange(self.n, 0, -1)
        lo = np.repeat(np.arange(self.n), counts)
        hi = np.arange(lo.size) - np.repeat(np.cumsum(counts) - counts, counts) + lo
        return Ranges(self.n, lo, hi)

    def block_gram(self, bounds):
        return allrange_block_gram(self.n, bounds)

    def row_range(self, i):  # start s has n − s rows and begins at offset s·n − s(s−1)/2
        s = np.arange(self.n)
        offsets = s * self.n - s * (s - 1) // 2
        start = int(np.searchsorted(offsets, i, side="right") - 1)
        return start, start + int(i) - int(offsets[start])

    def rows_block(self, start, stop):  # from the rows' end points (row_range), not through m-long unit vectors
        s = np.arange(self.n)
        offsets = s * self.n - s * (s - 1) // 2
        rows = np.arange(start, stop)
        lo = np.searchsorted(offsets, rows, side="right") - 1
        hi = lo + rows - offsets[lo]
        cells = np.arange(self.n)[:, None]
        return ((cells >= lo) & (cells <= hi)).astype(float)

    def matvec_elements(self):
        m, n = self.shape
        return float(m + n)


@dataclass(frozen=True, eq=False)
class Ranges(WorkloadOperator):
    """Arbitrary 0/1 range queries [lo_i, hi_i] (inclusive), answered through prefix sums."""

    n: int
    lo: np.ndarray
    hi: np.ndarray
    label: str = "ranges"

    def __post_init__(self) -> None:
        integer("n", self.n)
        lo, hi = np.asarray(self.lo, dtype=np.int64), np.asarray(self.hi, dtype=np.int64)
        if lo.ndim != 1 or lo.shape != hi.shape or lo.size == 0:
            raise ValueError("ranges need equal-length, non-empty lo and hi arrays")
        if lo.min() < 0 or hi.max() >= self.n or np.any(lo > hi):
            raise ValueError(f"every range must satisfy 0 <= lo <= hi < n={self.n}")
        object.__setattr__(self, "lo", lo)
        object.__setattr__(self, "hi", hi)

    @property
    def shape(self) -> tuple[int, int]:
        return (int(self.lo.size), self.n)

    def matvec(self, x):
        c = np.concatenate(([0.0], np.cumsum(_check_length("x", x, self.n))))
        return c[self.hi + 1] - c[self.lo]

    def rmatvec(self, y):
        y = _check_length("y", y, self.shape[0])
        diff = np.bincount(self.lo, weights=y, minlength=self.n + 1)
        diff -= np.bincount(self.hi + 1, weights=y, minlength=self.n + 1)
        return np.cumsum(diff)[: self.n]

    @cached_property
    def _coverage(self) -> np.ndarray:
        return self.rmatvec(np.ones(self.shape[0]))

    def column_norms(self, ord=1):
        _check_ord(ord)
        return self._coverage.copy() if ord == 1 else np.sqrt(self._coverage)

    def describe(self) -> str:
        return f"{self.label}: {self.shape[0]} range queries over {self.n} cells"

    def gram_apply(self, v):
        return _ranges_gram(self, np.asarray(v, dtype=float))

    def rows_block(self, start, stop):
        cells = np.arange(self.n)[:, None]
        return ((cells >= self.lo[start:stop]) & (cells <= self.hi[start:stop])).astype(float)

    def cache_key(self):
        return ("ranges", self.n, self.lo.tobytes(), self.hi.tobytes())

    def intervals(self):
        return self

    def block_gram(self, bounds):
        return _ranges_block_gram(self.lo, self.hi, bounds)

    def row_range(self, i):
        return int(self.lo[i]), int(self.hi[i])

    sparse_native: ClassVar[bool] = True

    def sparse_rows(self):
        lengths = self.hi - self.lo + 1
        indptr = np.concatenate(([0], np.cumsum(lengths)))
        indices = np.arange(indptr[-1]) - np.repeat(indptr[:-1] - self.lo, lengths)
        return scipy.sparse.csr_matrix((np.ones(indptr[-1]), indices, indptr), shape=self.shape)

    def dense_entries(self):
        return float(((self.hi - self.lo) + 1).sum())

    def recipe(self):
        check_recipe_numbers(2 * self.lo.size)
        return {"ranges": np.c_[self.lo, self.hi].tolist(), "n": self.n, "label": self.label}

    def max_abs_entry(self):
        return 1.0


def as_intervals(w: Workload) -> Ranges | None:
    """The workload as 0/1 interval rows when it is one (Ranges, Identity, Total, Prefix, AllRange), else None.

    Row-level algorithms (WDA's division, OM's factorisation) use it to work on interval ends instead
    of an m × n matrix.

    >>> as_intervals(Prefix(3)).hi.tolist(), as_intervals(Explicit(np.eye(2))) is None
    ([0, 1, 2], True)
    """
    return _own(w, "intervals")()


def random_range(n: int, m: int, seed: int = 0) -> Ranges:
    """m ranges with both ends uniform on {0..n-1} (sorted), as DPBench draws them; seeded.

    >>> random_range(100, 5, seed=1).shape
    (5, 100)
    """
    integer("n", n)
    integer("m", m)
    if m > MAX_QUERIES:
        raise ValueError(f"random-range m={m} exceeds the limit of {MAX_QUERIES} queries")
    ends = np.sort(np.random.default_rng(seed).integers(0, n, size=(m, 2)), axis=1)
    return Ranges(n, ends[:, 0], ends[:, 1], label=f"random-range (m={m}, seed={seed})")


@dataclass(frozen=True, eq=False)
class Ranges2D(WorkloadOperator):
    """Arbitrary 2-D rectangles [r0, r1] × [c0, c1] (inclusive) on a rows × cols grid, via summed-area tables.

    ``matvec`` and ``rmatvec`` are O(n + m): a 256 × 256 grid with thousands of rectangles never builds
    a 65,536-column matrix.

    >>> w = Ranges2D((2, 3), [0, 1], [1, 1], [0, 2], [2, 2])
    >>> w.matvec(np.arange(6.0)).tolist(), w.column_norms(1).tolist()
    ([15.0, 5.0], [1.0, 1.0, 1.0, 1.0, 1.0, 2.0])
    """

    grid: tuple[int, int]
    r0: np.ndarray
    r1: np.ndarray
    c0: np.ndarray
    c1: np.ndarray
    label: str = "rectangles"

    def __post_init__(self) -> None:
        rows, cols = (int(v) for v in self.grid)
        integer("rows", rows)
        integer("cols", cols)
        ends = [np.asarray(v, dtype=np.int64) for v in (self.r0, self.r1, self.c0, self.c1)]
        if any(e.ndim != 1 or e.shape != ends[0].shape for e in ends) or ends[0].size == 0:
            raise ValueError("rectangles need equal-length, non-empty r0, r1, c0, c1 arrays")
        r0, r1, c0, c1 = ends
        if r0.min() < 0 or c0.min() < 0 or r1.max() >= rows or c1.max() >= cols or np.any(r0 > r1) or np.any(c0 > c1):
            raise ValueError(f"every rectangle must satisfy 0 <= r0 <= r1 < {rows} and 0 <= c0 <= c1 < {cols}")
        if r0.size > MAX_QUERIES:
            raise ValueError(f"{r0.size} rectangles exceed the limit of {MAX_QUERIES} queries")
        object.__setattr__(self, "grid", (rows, cols))
        for name, value in zip(("r0", "r1", "c0", "c1"), ends, strict=True):
            object.__setattr__(self, name, value)

    @property
    def shape(self) -> tuple[int, int]:
        return (int(self.r0.size), self.grid[0] * self.grid[1])

    def matvec(self, x):
        rows, cols = self.grid
        table = np.zeros((rows + 1, cols + 1))
        table[1:, 1:] = _check_length("x", x, rows * cols).reshape(rows, cols).cumsum(0).cumsum(1)
        return (table[self.r1 + 1, self.c1 + 1] - table[self.r0, self.c1 + 1]
                - table[self.r1 + 1, self.c0] + table[self.r0, self.c0])

    def rmatvec(self, y):
        rows, cols = self.grid
        y = _check_length("y", y, self.shape[0])
        corners = np.concatenate([self.r0 * (cols + 1) + self.c0, self.r0 * (cols + 1) + self.c1 + 1,
                                  (self.r1 + 1) * (cols + 1) + self.c0, (self.r1 + 1) * (cols + 1) + self.c1 + 1])
        signs = np.concatenate([y, -y, -y, y])
        diff = np.bincount(corners, weights=signs, minlength=(rows + 1) * (cols + 1)).reshape(rows + 1, cols + 1)
        return diff.cumsum(0).cumsum(1)[:rows, :cols].ravel()

    def max_abs_entry(self):
        return 1.0

    def rows_block(self, start: int, stop: int) -> np.ndarray:
        """Rows start … stop − 1 as a dense (n × rows) block of 0/1 indicators."""
        rows, cols = self.grid
        r, c = np.arange(rows)[:, None], np.arange(cols)[:, None]
        in_rows = (r >= self.r0[start:stop]) & (r <= self.r1[start:stop])
        in_cols = (c >= self.c0[start:stop]) & (c <= self.c1[start:stop])
        return (in_rows[:, None, :] & in_cols[None, :, :]).reshape(rows * cols, -1).astype(float)

    @cached_property
    def _coverage(self) -> np.ndarray:
        return self.rmatvec(np.ones(self.shape[0]))

    def column_norms(self, ord=1):
        _check_ord(ord)
        return self._coverage.copy() if ord == 1 else np.sqrt(self._coverage)

    def describe(self) -> str:
        return f"{self.label}: {self.shape[0]} rectangles on a {self.grid[0]} × {self.grid[1]} grid"

    def grid_shape(self) -> tuple[int, int]:
        """Rectangles live on their 2-D grid: hb builds its quadtree and privelet its 2-D transform there (on the
        flat row-major cells a rectangle is many scattered ranges)."""
        return self.grid


def random_range_2d(grid: tuple[int, int], m: int, seed: int = 0) -> Ranges2D:
    """m rectangles whose row ends and column ends are each uniform on the grid (sorted); seeded.

    The 2-D analogue of ``random_range`` (DPBench draws 2-D ranges the same way).

    >>> random_range_2d((256, 256), 5, seed=1).shape
    (5, 65536)
    """
    rows, cols = grid
    integer("m", m)
    if m > MAX_QUERIES:
        raise ValueError(f"random-range-2d m={m} exceeds the limit of {MAX_QUERIES} queries")
    gen = np.random.default_rng(seed)
    r = np.sort(gen.integers(0, rows, size=(m, 2)), axis=1)
    c = np.sort(gen.integers(0, cols, size=(m, 2)), axis=1)
    return Ranges2D((rows, cols), r[:, 0], r[:, 1], c[:, 0], c[:, 1], label=f"random-range-2d (m={m}, seed={seed})")


@dataclass(frozen=True, eq=False)
class Explicit(WorkloadOperator):
    """A given m × n query matrix (dense array, or a scipy.sparse matrix for large sparse workloads)."""

    matrix: Any  # a dense array or a scipy.sparse matrix (untyped)
    label: str = "explicit"

    def __post_init__(self) -> None:
        import scipy.sparse as sp

        matrix = self.matrix.tocsr().astype(float) if sp.issparse(self.matrix) else np.asarray(
            self.matrix, dtype=float)
        if matrix.ndim != 2 or 0 in matrix.shape:
            raise ValueError(f"an explicit workload must be a non-empty 2-D matrix, got shape {matrix.shape}")
        values = matrix.data if sp.issparse(matrix) else matrix
        if not np.all(np.isfinite(values)):
            raise ValueError("an explicit workload must contain only finite numbers")
        object.__setattr__(self, "matrix", matrix)

    @property
    def shape(self) -> tuple[int, int]:
        rows, columns = self.matrix.shape  # 2-D (checked in __post_init__)
        return int(rows), int(columns)

    def matvec(self, x):
        return np.asarray(self.matrix @ _check_length("x", x, self.shape[1])).ravel()

    def rmatvec(self, y):
        return np.asarray(self.matrix.T @ _check_length("y", y, self.shape[0])).ravel()

    def column_norms(self, ord=1):
        _check_ord(ord)
        a = abs(self.matrix)
        if ord == 1:
            return np.asarray(a.sum(axis=0)).ravel()
        return np.sqrt(np.asarray(a.multiply(a).sum(axis=0) if hasattr(a, "multiply") else (a * a).sum(axis=0))
                       .ravel())

    def describe(self) -> str:
        m, n = self.shape
        return f"{self.label}: {m} × {n} query matrix"

    def gram_apply(self, v):
        return np.asarray(self.matrix.T @ (self.matrix @ np.asarray(v, dtype=float)))

    def rows_block(self, start, stop):
        rows = self.matrix[start:stop]
        return np.asarray(rows.toarray() if scipy.sparse.issparse(rows) else rows, dtype=float).T

    def cache_key(self):
        matrix = self.matrix
        if hasattr(matrix, "tocsr"):
            matrix = matrix.tocsr()
            return ("sparse", matrix.shape, matrix.data.tobytes(), matrix.indices.tobytes(), matrix.indptr.tobytes())
        return ("dense", matrix.shape, np.ascontiguousarray(matrix).tobytes())

    def matvec_elements(self):
        m, n = self.shape
        return float(self.matrix.nnz if hasattr(self.matrix, "nnz") else m * n)

    def dense_entries(self):
        return self.matvec_elements()

    def max_abs_entry(self):
        return float(abs(self.matrix).max())

    sparse_native: ClassVar[bool] = True

    def sparse_rows(self):
        return scipy.sparse.csr_matrix(self.matrix, dtype=float)

    def sparse_row(self, i):
        if not scipy.sparse.issparse(self.matrix):  # a dense matrix's rows are read densely
            return None
        span = slice(self.matrix.indptr[i], self.matrix.indptr[i + 1])
        columns, values = self.matrix.indices[span], self.matrix.data[span]
        order = np.argsort(columns)
        return columns[order], values[order]

    def recipe(self):
        matrix = self.matrix
        nonzeros = matrix.nnz if hasattr(matrix, "nnz") else int(np.count_nonzero(matrix))
        check_recipe_numbers(3 * nonzeros)  # before the entries are listed: a large matrix is refused cheaply
        rows, cols = matrix.nonzero()
        values = np.asarray(matrix[rows, cols]).ravel()
        entries = [[int(i), int(j), float(v)] for i, j, v in zip(rows, cols, values, strict=True)]
        return {"matrix": {"shape": list(self.shape), "entries": entries}, "label": self.label}


# ----------------------------------------------------------------------------- the papers' generators

    def gram_matrix(self):
        product = self.matrix.T @ self.matrix
        return np.asarray(product.toarray() if hasattr(product, "toarray") else product)


def _probability(name: str, value: float) -> float:
    if not 0 <= value <= 1:
        raise ValueError(f"{name} must be a probability in [0, 1], got {value!r}")
    return float(value)


def hot_spot(n: int, m: int = 2000, p: float = 0.2, seed: int = 0) -> Explicit:
    """WDA's hot-spot workload (Li et al., Sec. 5) — OUR reconstruction; the paper under-specifies it.

    Each query is a range [c − h, c + h] around a uniform centre c with half-width h = round(|N(0, 10)|)
    (clipped to the domain); with probability p it also includes one hot column, drawn once per seed.

    >>> w = hot_spot(64, m=50, p=0.5, seed=1)
    >>> w.shape, "our reconstruction" in w.describe()
    ((50, 64), True)
    """
    import scipy.sparse as sp

    integer("n", n)
    integer("m", m)
    _probability("p", p)
    gen = np.random.default_rng(seed)
    hot = int(gen.integers(n))
    centres = gen.integers(0, n, size=m)
    half = np.rint(np.abs(gen.normal(0.0, 10.0, size=m))).astype(np.int64)
    ranges = sparse_matrix(Ranges(n, np.maximum(centres - half, 0), np.minimum(centres + half, n - 1)))
    with_hot = np.flatnonzero(gen.random(m) < p)
    matrix = ranges + sp.csr_matrix((np.ones(with_hot.size), (with_hot, np.full(with_hot.size, hot))), shape=(m, n))
    matrix.data = np.minimum(matrix.data, 1.0)  # a range that already covers the hot column keeps a 1
    return Explicit(matrix, label=f"hot-spot (our reconstruction of the WDA paper's workload; m={m}, p={p:g}, "
                                  f"hot column {hot}, seed={seed})")


def random_linear(n: int, m: int = 200, tau: float = 0.2, seed: int = 0) -> Explicit:
    """OM's random workload (Huang et al., Sec. 5): w_ij ~ U(0,1) where h_ij < τ (h ~ U(0,1)), else 0; sparse.

    >>> random_linear(100, m=20, tau=0.2, seed=1).shape
    (20, 100)
    """
    import scipy.sparse as sp

    integer("n", n)
    integer("m", m)
    _probability("tau", tau)
    if m * n > DENSE_LIMIT:
        raise ValueError(f"random-linear draws an m × n mask; {m} x {n} exceeds {DENSE_LIMIT} entries")
    gen = np.random.default_rng(seed)
    mask = gen.random((m, n)) < tau
    rows, cols = np.nonzero(mask)
    matrix = sp.csr_matrix((gen.random(rows.size), (rows, cols)), shape=(m, n))
    return Explicit(matrix, label=f"random-linear (OM paper; m={m}, tau={tau:g}, seed={seed})")


def _seed(params: dict[str, str], rng: np.random.Generator) -> int:
    return int(params["seed"]) if "seed" in params else int(rng.integers(2**31))


# ----------------------------------------------------------------------------- combinators
def _apply_along(w: Workload, matrix: np.ndarray, transpose: bool) -> np.ndarray:
    """Apply W (or Wᵀ) to every column of `matrix`."""
    op = w.rmatvec if transpose else w.matvec
    m, n = w.shape
    # closed forms on whole blocks: a 256 × 256 marginal is a reshape and a sum, not a 256³ dense product
    if isinstance(w, Identity):
        return matrix.copy()
    if isinstance(w, Total):
        return np.broadcast_to(matrix, (n, matrix.shape[1])).copy() if transpose else matrix.sum(axis=0, keepdims=True)
    if isinstance(w, Prefix):
        return np.cumsum(matrix[::-1], axis=0)[::-1] if transpose else np.cumsum(matrix, axis=0)
    if isinstance(w, Explicit):
        mat = w.matrix.T if transpose else w.matrix
        return np.asarray(mat @ matrix)
    if m * n <= 2**20:  # small factor: one dense product beats many matvecs
        mat = dense(w)
        return (mat.T if transpose else mat) @ matrix
    return np.stack([op(matrix[:, k]) for k in range(matrix.shape[1])], axis=1)


@dataclass(frozen=True)
class Kron(WorkloadOperator):
    """Kronecker product of two workloads: 2-D marginals and 2-D ranges (row-major data vector).

    >>> w = Kron((Identity(2), Total(3)))
    >>> w.shape, w.matvec(np.arange(6.0)).tolist()
    ((2, 6), [3.0, 12.0])
    """

    factors: tuple

    def __post_init__(self) -> None:
        if len(self.factors) != 2:
            raise ValueError(f"Kron takes exactly two factors, got {len(self.factors)}")
        if self.shape[0] > MAX_QUERIES:
            raise ValueError(f"Kron workload has {self.shape[0]} queries; the limit is {MAX_QUERIES}")

    @property
    def shape(self) -> tuple[int, int]:
        (m1, n1), (m2, n2) = (f.shape for f in self.factors)
        return (m1 * m2, n1 * n2)

    def matvec(self, x):
        a, b = self.factors
        x = _check_length("x", x, self.shape[1]).reshape(a.shape[1], b.shape[1])
        left = _apply_along(a, x, transpose=False)           # m1 × n2
        return _apply_along(b, left.T, transpose=False).T.ravel()   # m1 × m2

    def rmatvec(self, y):
        a, b = self.factors
        y = _check_length("y", y, self.shape[0]).reshape(a.shape[0], b.shape[0])
        left = _apply_along(a, y, transpose=True)            # n1 × m2
        return _apply_along(b, left.T, transpose=True).T.ravel()

    def column_norms(self, ord=1):
        _check_ord(ord)
        a, b = self.factors
        return np.kron(a.column_norms(ord), b.column_norms(ord))

    def describe(self) -> str:
        a, b = self.factors
        return f"rows: {a.describe()}, crossed with columns: {b.describe()} ({self.shape[0]} queries)"

    def gram_apply(self, v):
        a, b = self.factors
        v = np.asarray(v, dtype=float)
        cube = v.reshape(a.shape[1], b.shape[1], -1)
        cube = _along_first(cube, lambda m: gram_apply(a, m))
        cube = np.moveaxis(_along_first(np.moveaxis(cube, 1, 0), lambda m: gram_apply(b, m)), 0, 1)
        return cube.reshape(v.shape)

    def rows_block(self, start, stop):  # row (i, j) of A ⊗ B is kron(row i of A, row j of B): from the factors
        a, b = self.factors
        i, j = np.divmod(np.arange(start, stop), b.shape[0])
        left = query_rows(a, int(i.min()), int(i.max()) + 1)[:, i - i.min()]
        right = query_rows(b, int(j.min()), int(j.max()) + 1)[:, j - j.min()]
        return (left[:, None, :] * right[None, :, :]).reshape(a.shape[1] * b.shape[1], -1)

    def cache_key(self):
        return ("kron", tuple(workload_key(f) for f in self.factors))

    def kron_grid(self):
        a, b = self.factors
        return (a.shape[1], b.shape[1])

    def matvec_elements(self):
        (m1, n1), (m2, n2) = (f.shape for f in self.factors)
        # matvec applies the first factor along n2 columns, then the second along m1 rows
        return float(min(matvec_elements(self.factors[0]), m1 * n1) * n2
                     + min(matvec_elements(self.factors[1]), m2 * n2) * m1)

    def max_abs_entry(self):
        return float(np.prod([max_abs_entry(f) for f in self.factors]))

    def recipe(self):
        return _composite_recipe("kron", self.factors)

    def gram_matrix(self):
        """(A ⊗ B)ᵀ(A ⊗ B) = AᵀA ⊗ BᵀB, each factor's Gram in closed form where it has one."""
        return np.kron(*(cell_gram_matrix(f) for f in self.factors))


@dataclass(frozen=True)
class Stack(WorkloadOperator):
    """Union of workloads over the same domain (rows stacked)."""

    parts: tuple

    def __post_init__(self) -> None:
        if not self.parts:
            raise ValueError("Stack needs at least one workload")
        widths = {p.shape[1] for p in self.parts}
        if len(widths) != 1:
            raise ValueError(f"stacked workloads must share the domain size, got {sorted(widths)}")

    @property
    def shape(self) -> tuple[int, int]:
        return (sum(p.shape[0] for p in self.parts), self.parts[0].shape[1])

    def matvec(self, x):
        return np.concatenate([p.matvec(x) for p in self.parts])

    def rmatvec(self, y):
        y = _check_length("y", y, self.shape[0])
        out, start = np.zeros(self.shape[1]), 0
        for p in self.parts:
            out += p.rmatvec(y[start:start + p.shape[0]])
            start += p.shape[0]
        return out

    def column_norms(self, ord=1):
        _check_ord(ord)
        norms = np.array([p.column_norms(ord) for p in self.parts])
        return norms.sum(axis=0) if ord == 1 else np.sqrt((norms**2).sum(axis=0))

    def describe(self) -> str:
        return f"{len(self.parts)} parts: " + "; ".join(p.describe() for p in self.parts)

    def gram_apply(self, v):
        return sum(gram_apply(part, v) for part in self.parts)

    def rows_block(self, start, stop):
        blocks, offset = [], 0
        for part in self.parts:
            lo, hi = max(start - offset, 0), min(stop - offset, part.shape[0])
            if lo < hi:
                blocks.append(query_rows(part, lo, hi))
            offset += part.shape[0]
        return np.hstack(blocks)

    def cache_key(self):
        return ("stack", tuple(workload_key(p) for p in self.parts))

    def block_gram(self, bounds):
        parts = [block_gram(p, bounds) for p in self.parts]
        return None if any(p is None for p in parts) else sum(parts)

    def matvec_elements(self):
        return float(sum(matvec_elements(p) for p in self.parts))

    def max_abs_entry(self):
        return max(max_abs_entry(p) for p in self.parts)

    def recipe(self):
        return _composite_recipe("stack", self.parts)

    def gram_parts(self):
        return self.parts

    def grid_shape(self):  # the first part on a 2-D grid (a Kron, rectangles) gives the grid
        grids = (_own(part, "grid_shape")() for part in self.parts)
        return next((grid for grid in grids if grid[0] != 1), (1, self.shape[1]))


# ----------------------------------------------------------------------------- parsing and registry
def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def explicit_from_csv(source: str | Path | bytes, n: int | None = None) -> Explicit:
    """Read query rows (one row per query, n numbers per row) from a CSV path or bytes.

    Bounded before parsing: the file's bytes (``MAX_UPLOAD_BYTES``; a path must be a regular file, sized first),
    its width against ``n``, and rows × columns (``DENSE_LIMIT``, from the line count and the first row);
    ragged rows are refused by a linear scan. Numbers are then parsed in C, a block of rows at a time.

    >>> explicit_from_csv(b"a,b,c\\n1,1,0\\n0,0.5,2\\n", n=3).matrix.tolist()
    [[1.0, 1.0, 0.0], [0.0, 0.5, 2.0]]
    >>> explicit_from_csv(b"1,1,0\\n1,2\\n", n=3)  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    dplens.core.data.datasets.DataError: row 2 has 2 values but earlier rows have 3; every row needs the same number
    of columns (ragged rows)
    """
    data = _query_bytes(source)
    if b"\x00" in data[:4096] or data.startswith(b"\x93NUMPY"):
        raise ValueError("query-matrix file looks binary; expected a CSV of numbers, one row per query")
    try:
        text = data.decode("utf-8-sig").lstrip()
    except UnicodeDecodeError as err:
        raise ValueError(f"query-matrix file is not UTF-8 text (byte {err.start}); expected a CSV of numbers") from None
    if not text:
        raise ValueError("query-matrix CSV is empty")
    first = _LINE.match(text).group()  # type: ignore[union-attr]  # _LINE matches any text (maybe empty)
    width = _QUOTED.sub("q", first).count(",") + 1  # counted, not split: the first row may hold 10^7 cells
    header = not _is_number(first.split(",", 1)[0].strip().strip('"'))
    if n is not None and width != n:
        raise ValueError(f"query matrix has {width} columns but the histogram has {n} cells")
    lines = data.count(b"\n") + (not data.endswith(b"\n")) - header
    if lines * width > DENSE_LIMIT:  # before any scan: even if every line is a row, the matrix is over the limit
        raise ValueError(f"query matrix has up to {lines:,} rows × {width:,} columns = {lines * width:,} entries; "
                         f"at most {DENSE_LIMIT:,} (DENSE_LIMIT) are allowed: upload fewer queries")
    from dplens.core.data.datasets import scan_rows  # imports pandas: only when a workload file is read

    rows, _ = scan_rows(data, ",")  # refuses ragged rows, naming the row
    rows -= header
    if rows < 1:
        raise ValueError("query-matrix CSV needs at least one row of numbers (one row per query)")
    body = text[len(first):].lstrip() if header else text
    matrix = _plain_numbers(body, rows, width)
    if matrix is None:  # quotes, blank lines or a cell that is not a finite number: row by row, naming the cell
        matrix = _numbers_by_row(body, rows, width)
    return Explicit(matrix, label="file")


_QUOTED = re.compile(r'"[^"]*"')
_LINE = re.compile(r"[^\n\r]*")


def _query_bytes(source: str | Path | bytes) -> bytes:
    """The bytes of a query file or upload: a path's kind and size checked before reading (``read_bounded``)."""
    if isinstance(source, bytes | bytearray):
        check_size(len(source), what="query-matrix file")
        return bytes(source)
    return read_bounded(source, what="query-matrix file")


def _plain_numbers(body: str, rows: int, width: int) -> np.ndarray | None:
    """A table of plain comma-separated finite numbers parsed in C (one pass), or None if it is anything else."""
    if '"' in body or "\n\n" in body or "\n\r" in body:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # older NumPy warns (and stops) at the first cell it cannot read
            values = np.fromstring(body.strip().replace("\r\n", ",").replace("\n", ",").replace("\r", ","), sep=",")
    except ValueError:  # NumPy 2: a cell it cannot read
        return None
    if values.size != rows * width or not np.all(np.isfinite(values)):
        return None
    return values.reshape(rows, width)


def _numbers_by_row(body: str, rows: int, width: int) -> np.ndarray:
    """Row by row into one preallocated matrix; the first cell that is not a finite number is named, never quoted
    (the file may be any file's)."""
    matrix, i = np.empty((rows, width)), 0
    for row in csv.reader(io.StringIO(body, newline="")):
        if not row or not any(c.strip() for c in row):
            continue
        if i >= rows or len(row) != width:
            raise ValueError(f"query-matrix CSV: data row {i + 1} has {len(row)} values, not {width} (a quoted "
                             "field may hold a line break)")
        for j, cell in enumerate(row):
            if not _is_number(cell) or not np.isfinite(float(cell)):
                what = "a finite number" if _is_number(cell) else "a number"
                raise ValueError(f"query-matrix CSV must hold only numbers: data row {i + 1}, "
                                 f"column {j + 1} is not {what}")
        matrix[i] = [float(c) for c in row]
        i += 1
    if i != rows:
        raise ValueError(f"query-matrix CSV has {i:,} rows of numbers, not {rows:,}")
    return matrix


def _marginals(shape):
    (r, c) = shape
    return Stack((Kron((Identity(r), Total(c))), Kron((Total(r), Identity(c)))))


def _range_2d(shape):
    rows, cols = _need_2d("range-2d", shape)
    queries = rows * (rows + 1) // 2 * (cols * (cols + 1) // 2)
    if queries > MAX_QUERIES:
        side = int(np.sqrt(2.0) * MAX_QUERIES ** 0.25)  # n(n+1)/2 squared stays under the limit
        raise ValueError(f"range-2d on a {rows} × {cols} grid has {queries:,} queries; the limit is {MAX_QUERIES:,} "
                         f"(dplens.core.data.limits.MAX_QUERIES): choose the workload random-range-2d:m=1000 or "
                         f"marginals-ranges-2d (Workloads page), or coarsen the grid to at most {side} × {side} "
                         "(Data page)")
    return Kron((AllRange(rows), AllRange(cols)))


def _marginals_ranges(shape, params, rng):
    grid = _need_2d("marginals-ranges-2d", shape)
    rectangles = random_range_2d(grid, _int_param(params, "m", 256), _int_seed(params, rng))
    return Stack((*_marginals(grid).parts, rectangles))


def _int_seed(params: dict[str, str], rng: np.random.Generator) -> int:
    return _int_param(params, "seed", None) if "seed" in params else int(rng.integers(2**31))


def _int_param(params: dict[str, str], key: str, default: int | None) -> int:
    """A workload parameter given as text, e.g. ``m=2000``; non-integers name the key and value."""
    text = params.get(key)
    if text is None:
        return default  # type: ignore[return-value]  # a None default is passed only when the key is present
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"workload parameter {key} must be an integer, got {text!r}") from None


def _need_2d(name, shape):
    if len(shape) != 2:
        raise ValueError(f"workload {name!r} needs a 2-D histogram, got shape {tuple(shape)}")
    return shape


# name -> (description, builder(shape, params, rng))
WORKLOADS: dict[str, tuple[str, Callable[..., Workload]]] = {
    "identity": ("every cell count", lambda shape, p, rng: Identity(int(np.prod(shape)))),
    "total": ("the sum of all cells", lambda shape, p, rng: Total(int(np.prod(shape)))),
    "prefix": ("prefix sums (1-D)", lambda shape, p, rng: Prefix(int(np.prod(shape)))),
    "all-range": ("every contiguous range, n(n+1)/2 queries (1-D)",
                  lambda shape, p, rng: AllRange(int(np.prod(shape)))),
    "random-range": ("m random ranges, ends uniform (1-D); m=2000, seed",
                     lambda shape, p, rng: random_range(
                         int(np.prod(shape)), _int_param(p, "m", 2000),
                         _int_param(p, "seed", None) if "seed" in p else int(rng.integers(2**31)))),
    "hot-spot": ("WDA paper: m ranges, a hot column with probability p (our reconstruction); m=2000, p=0.2, seed",
                 lambda shape, p, rng: hot_spot(int(np.prod(shape)), int(p.get("m", 2000)),
                                                float(p.get("p", 0.2)), _seed(p, rng))),
    "random-linear": ("OM paper: random weights U(0,1) with density tau (sparse); m=200, tau=0.2, seed",
                      lambda shape, p, rng: random_linear(int(np.prod(shape)), int(p.get("m", 200)),
                                                          float(p.get("tau", 0.2)), _seed(p, rng))),
    "file": ("query rows from a CSV file: file:PATH", None),  # type: ignore[dict-item]  # read by parse_workload
    "marginals": ("row and column sums (2-D)", lambda shape, p, rng: _marginals(_need_2d("marginals", shape))),
    "range-2d": ("all axis-aligned rectangles (2-D; up to about 90 × 90 cells)",
                 lambda shape, p, rng: _range_2d(shape)),
    "random-range-2d": ("m random rectangles, ends uniform per axis (2-D); m=1000, seed",
                        lambda shape, p, rng: random_range_2d(_need_2d("random-range-2d", shape),
                                                              _int_param(p, "m", 1000), _int_seed(p, rng))),
    "marginals-ranges-2d": ("row and column sums plus m random rectangles (2-D default); m=256, seed",
                            _marginals_ranges),
    "prefix-2d": ("2-D prefix (CDF) rectangles anchored at the origin (2-D)",
                  lambda shape, p, rng: Kron(tuple(Prefix(s) for s in _need_2d("prefix-2d", shape)))),
}


def parse_workload(spec: str, shape, rng: np.random.Generator | None = None, *,
                   allow_files: bool = False) -> Workload:
    """Build a workload from a spec such as ``random-range:m=2000,seed=3`` for a histogram shape.

    ``file:PATH`` reads a CSV of query rows, only with ``allow_files=True`` (the command line, whose
    user owns the files); text from the app (a pasted config, a spec) never names a server file.
    Unknown names or keys raise ValueError naming them.

    >>> parse_workload("random-range:m=10,seed=1", (64,)).shape
    (10, 64)
    >>> parse_workload("file:/etc/passwd", (4,))
    Traceback (most recent call last):
    ...
    ValueError: workload 'file:' specs are refused here: query files come only from uploads
    """
    if isinstance(shape, int | np.integer):
        shape = (int(shape),)
    shape = tuple(int(s) for s in shape)
    spec = spec.strip()
    name, _, rest = spec.partition(":")
    name = name.strip().lower()
    if name == "file":
        if not allow_files:
            raise ValueError("workload 'file:' specs are refused here: query files come only from uploads")
        if not rest:
            raise ValueError("workload 'file' needs a path: file:PATH")
        return explicit_from_csv(rest, n=int(np.prod(shape)))
    if name not in WORKLOADS:
        raise ValueError(f"unknown workload {name!r}; choose one of {', '.join(WORKLOADS)}")
    params: dict[str, str] = {}
    for item in filter(None, (s.strip() for s in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq:
            raise ValueError(f"workload parameter {item!r} must look like key=value")
        params[key.strip()] = value.strip()
    allowed = WORKLOAD_PARAMETERS.get(name, set())
    unknown = set(params) - allowed
    if unknown:
        raise ValueError(f"workload {name!r} does not take {sorted(unknown)}; it takes {sorted(allowed) or 'none'}")
    try:
        return WORKLOADS[name][1](shape, params, rng or np.random.default_rng(0))
    except (TypeError, KeyError) as err:  # pragma: no cover - defensive
        raise ValueError(f"cannot build workload {spec!r}: {err}") from None


WORKLOAD_PARAMETERS: dict[str, set[str]] = {"random-range": {"m", "seed"}, "hot-spot": {"m", "p", "seed"},
                                              "random-linear": {"m", "tau", "seed"},
                                              "random-range-2d": {"m", "seed"}, "marginals-ranges-2d": {"m", "seed"}}
