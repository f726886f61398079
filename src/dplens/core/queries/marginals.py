"""Tables of records and their marginals (see docs/tables.md): the full domain stays virtual.

A table has attributes with finite domains (integer codes 0..size-1). The marginal on a set of
attributes counts records per combination of their levels. Adult's full domain has ~6·10^17 cells, so
nothing here builds the full data vector: marginals are computed from the records directly.

>>> domain = Domain(("sex", "income"), (2, 2))
>>> records = np.array([[0, 1], [1, 1], [1, 0]])
>>> MarginalWorkload(domain, (("sex",), ("sex", "income"))).answer(records)[1].tolist()
[[0.0, 1.0], [1.0, 1.0]]
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from dplens.core.data.domain import Domain
from dplens.core.queries.workloads import AllRange, Identity, Kron, WorkloadOperator
from dplens.core.validate import integer

MAX_MARGINAL_CELLS = 2**24  # largest single marginal that is materialised (same bound as MAX_QUERIES)


@dataclass(frozen=True)
class MarginalWorkload(WorkloadOperator):
    """Weighted marginals of a table: the queries are every cell of every listed marginal.

    Attribute tuples are normalised to the domain's column order. One record changes one cell of each
    marginal by 1 (add/remove neighbours), so the marginals' cells have Δ₁ = K and Δ₂ = √K for K marginals,
    whatever the weights (the weights steer the strategy optimisers only; the released queries are unweighted).

    It is also a workload like any other (the ``Workload`` protocol): an implicit operator W = stack_i Q_i P_i on
    the table's full contingency vector (its cells row-major in domain order), P_i the projection onto marginal i
    and Q_i its queries (``queries_on``), unweighted (the weights steer the strategy optimisers only). So a
    histogram mechanism runs on a small table's contingency vector as on any histogram.

    >>> d = Domain(("a", "b", "c"), (2, 3, 4))
    >>> w = MarginalWorkload.all_kway(d, 2)
    >>> w.marginals, w.cells, w.cells_l1_sensitivity, round(w.cells_l2_sensitivity, 4)
    ((('a', 'b'), ('a', 'c'), ('b', 'c')), 26, 3.0, 1.7321)
    """

    domain: Domain
    marginals: tuple[tuple[str, ...], ...]
    weights: tuple[float, ...] = ()
    ranges: tuple[str | None, ...] = ()  # per marginal: the ordinal attribute whose ranges are asked, or None

    def __post_init__(self) -> None:
        if not self.marginals:
            raise ValueError("a marginal workload needs at least one marginal")
        ordered = tuple(tuple(self.domain.names[i] for i in self.domain.index(tuple(m))) for m in self.marginals)
        weights = tuple(float(w) for w in self.weights) or (1.0,) * len(ordered)
        if len(weights) != len(ordered):
            raise ValueError(f"weights has {len(weights)} entries for {len(ordered)} marginals; give one each")
        if not all(math.isfinite(w) and w > 0 for w in weights):
            raise ValueError(f"weights must be finite and > 0, got {list(weights)}")
        ranges = tuple(self.ranges) or (None,) * len(ordered)
        if len(ranges) != len(ordered):
            raise ValueError(f"ranges has {len(ranges)} entries for {len(ordered)} marginals; give one each")
        for marginal, ordinal in zip(ordered, ranges, strict=True):
            cells = math.prod(self.domain.sizes_of(marginal))
            if cells > MAX_MARGINAL_CELLS:
                raise ValueError(f"marginal {marginal} has {cells:,} cells; the limit is {MAX_MARGINAL_CELLS:,}"
                                 f" (choose fewer or coarser attributes)")
            if ordinal is not None and ordinal not in marginal:
                raise ValueError(f"ranges over {ordinal!r} must be inside their marginal {'+'.join(marginal)}")
        object.__setattr__(self, "marginals", ordered)
        object.__setattr__(self, "weights", weights)
        object.__setattr__(self, "ranges", ranges)
        for index in range(len(ordered)):
            self.queries_on(index)  # refuses range sets over the query limit now, not at release time

    @classmethod
    def all_kway(cls, domain: Domain, k: int) -> MarginalWorkload:
        """All k-way marginals (k = 0 gives the total)."""
        integer("k", k, 0, len(domain.names))  # up to the number of attributes
        return cls(domain, tuple(itertools.combinations(domain.names, k)))

    @property
    def cells(self) -> int:
        """Number of queries: the cells of all marginals."""
        return sum(math.prod(self.domain.sizes_of(m)) for m in self.marginals)

    @property
    def cells_l1_sensitivity(self) -> float:
        """Δ₁ of every cell of every marginal, unweighted (what is released): one record changes one cell of each
        marginal by 1, so K for K marginals. The weights do not enter: they steer a strategy's choice of what
        to measure, and each strategy's noise is calibrated to what it measures.

        >>> MarginalWorkload(Domain(("a", "b"), (2, 3)), (("a",), ("b",)), weights=(0.1, 0.1)).cells_l1_sensitivity
        2.0
        """
        return float(len(self.marginals))

    @property
    def cells_l2_sensitivity(self) -> float:
        """Δ₂ of every cell of every marginal, unweighted: √K for K marginals (see ``cells_l1_sensitivity``)."""
        return math.sqrt(len(self.marginals))

    @property
    def squared_frobenius(self) -> float:
        """‖W‖_F² of the whole workload over the full (virtual) domain, in closed form: each query of marginal M
        sums ∏_{i∉M} n_i full-domain cells, so ‖W‖_F² = Σ_M w_M² · ∏_{i∉M} n_i · ∏_{i∈M} tr G_i (G_i = I for plain
        axes, AllRangeᵀAllRange for the ranges axis).

        >>> MarginalWorkload(Domain(("a", "b"), (2, 3)), (("a",), ("a", "b"))).squared_frobenius
        12.0
        """
        total = 0.0
        for index, w in enumerate(self.weights):
            columns = set(self.domain.index(self.marginals[index]))
            outside = math.prod(n for i, n in enumerate(self.domain.sizes) if i not in columns)
            total += w * w * outside * math.prod(t for _, t, _ in self.axis_stats(index))
        return total

    @property
    def queries(self) -> int:
        """Number of queries: the cells of plain marginals plus the ranges of range marginals."""
        return sum(self.queries_on(i).shape[0] for i in range(len(self.marginals)))

    def queries_on(self, index: int):
        """The queries on marginal ``index`` as an implicit operator over its cells (row-major, domain order).

        Plain marginals: every cell (Identity). Ranges over ordinal attribute o: every range [lo, hi] of o within
        every cell of the other attributes, AllRange(n_o) ⊗ I over the cells with o's axis moved first, so its
        column norms (Δ₁ = max (k+1)(n_o−k), Δ₂ = √Δ₁, 0/1 entries) come in closed form from the factors.

        >>> w = MarginalWorkload(Domain(("sex", "age"), (2, 3)), (("sex", "age"),), ranges=("age",))
        >>> op = w.queries_on(0)
        >>> answers = w.answer_queries(0, np.array([[1., 2, 3], [4, 5, 6]]))
        >>> op.shape, float(op.column_norms(1).max()), answers[:6].tolist()
        ((12, 6), 4.0, [1.0, 4.0, 3.0, 9.0, 6.0, 15.0])
        """
        marginal, ordinal = self.marginals[index], self.ranges[index]
        sizes = self.domain.sizes_of(marginal)
        if ordinal is None:
            return Identity(math.prod(sizes))
        axis = marginal.index(ordinal)
        rest = math.prod(s for k, s in enumerate(sizes) if k != axis)
        return Kron((AllRange(sizes[axis]), Identity(rest)))

    def query_order(self, index: int, marginal: np.ndarray) -> np.ndarray:
        """Marginal ``index``'s cells as the vector ``queries_on(index)`` acts on (the ranges axis first)."""
        marginal = np.asarray(marginal, dtype=float)
        ordinal = self.ranges[index]
        if ordinal is not None:
            marginal = np.moveaxis(marginal, self.marginals[index].index(ordinal), 0)
        return marginal.ravel()

    def from_query_order(self, index: int, vector: np.ndarray) -> np.ndarray:
        """The inverse of :meth:`query_order`: the marginal's cells shaped by its attributes."""
        marginal, ordinal = self.marginals[index], self.ranges[index]
        sizes = self.domain.sizes_of(marginal)
        if ordinal is None:
            return np.asarray(vector, dtype=float).reshape(sizes)
        axis = marginal.index(ordinal)
        moved = (sizes[axis],) + tuple(s for k, s in enumerate(sizes) if k != axis)
        return np.moveaxis(np.asarray(vector, dtype=float).reshape(moved), 0, axis)

    def answer_queries(self, index: int, marginal: np.ndarray) -> np.ndarray:
        """The queries on marginal ``index`` answered from its (true or estimated) cells."""
        return self.queries_on(index).matvec(self.query_order(index, marginal))

    def axis_stats(self, index: int) -> tuple[tuple[int, float, float], ...]:
        """Per attribute of marginal ``index``: (domain column, tr G, 1ᵀG1) of its queries' Gram factor G.

        The queries' Gram is a Kronecker product over the marginal's axes (I for a plain axis; AllRangeᵀAllRange
        for the ranges axis: tr = n(n+1)(n+2)/6, 1ᵀG1 = Σ_L (n−L+1) L² = n(n+1)²(n+2)/12), which is all the
        closed-form errors of the table mechanisms need.
        """
        marginal, ordinal = self.marginals[index], self.ranges[index]
        stats = []
        for column, name in zip(self.domain.index(marginal), marginal, strict=True):
            n = float(self.domain.sizes[column])
            if name == ordinal:
                stats.append((column, n * (n + 1) * (n + 2) / 6, n * (n + 1) ** 2 * (n + 2) / 12))
            else:
                stats.append((column, n, n))
        return tuple(stats)

    def answer(self, records: np.ndarray) -> list[np.ndarray]:
        """True (unweighted) marginals of integer-coded records, each shaped by its attributes' sizes."""
        records = check_records(self.domain, records)
        return [marginal_counts(self.domain, records, m) for m in self.marginals]

    @property
    def shape(self) -> tuple[int, int]:
        """(queries, cells of the full table): the operator on the table's contingency vector."""
        return (self.queries, self.domain.size)

    def matvec(self, x: np.ndarray) -> np.ndarray:
        """Every query answered from the full contingency vector ``x`` (row-major in domain order)."""
        cube = np.asarray(x, dtype=float).reshape(self.domain.sizes)
        return np.concatenate([self.answer_queries(i, self._project(i, cube)) for i in range(len(self.marginals))])

    def rmatvec(self, y: np.ndarray) -> np.ndarray:
        """Wᵀ y: each marginal's queries' adjoint, spread back over the full table's cells."""
        y, out, start = np.asarray(y, dtype=float), np.zeros(self.domain.sizes), 0
        for index in range(len(self.marginals)):
            queries = self.queries_on(index)
            part = y[start:start + queries.shape[0]]
            start += queries.shape[0]
            out += self._spread(index, self.from_query_order(index, queries.rmatvec(part)))
        return out.ravel()

    def column_norms(self, ord=1) -> np.ndarray:
        """Per full-table cell: Σ_i of its marginal-i cell's query column norm (L1), or the root of the squares (L2)."""
        total = np.zeros(self.domain.sizes)
        for index in range(len(self.marginals)):
            norms = self.from_query_order(index, self.queries_on(index).column_norms(ord))
            total += self._spread(index, norms if ord == 1 else norms**2)
        return (total if ord == 1 else np.sqrt(total)).ravel()

    def _project(self, index: int, cube: np.ndarray) -> np.ndarray:
        """P_i: marginal ``index`` of the full table ``cube``, its axes in the marginal's attribute order."""
        axes = self.domain.index(self.marginals[index])
        kept = sorted(axes)
        summed = cube.sum(axis=tuple(a for a in range(cube.ndim) if a not in axes))
        return np.transpose(summed, [kept.index(a) for a in axes])

    def _spread(self, index: int, cells: np.ndarray) -> np.ndarray:
        """P_iᵀ: marginal ``index``'s cells (axes in its attribute order) broadcast over the full table."""
        axes = self.domain.index(self.marginals[index])
        arranged = np.transpose(cells, [axes.index(a) for a in sorted(axes)])
        shape = [size if a in axes else 1 for a, size in enumerate(self.domain.sizes)]
        return np.broadcast_to(arranged.reshape(shape), self.domain.sizes)

    def describe(self) -> str:
        ranged = sum(o is not None for o in self.ranges)
        if not ranged:
            return f"{len(self.marginals)} marginals, {self.cells:,} cells"
        return (f"{len(self.marginals)} marginals ({ranged} asked as ranges), {self.cells:,} cells, "
                f"{self.queries:,} queries")


def subsets(columns: tuple[int, ...]):
    """Every subset of ``columns`` (as sorted tuples), smallest first: the residuals a marginal decomposes into.

    >>> list(subsets((0, 2)))
    [(), (0,), (2,), (0, 2)]
    """
    return (s for k in range(len(columns) + 1) for s in itertools.combinations(columns, k))


def check_records(domain: Domain, records: np.ndarray) -> np.ndarray:
    """Records as an (N, d) integer array with every code inside its attribute's domain."""
    records = np.asarray(records)
    if records.ndim != 2 or records.shape[1] != len(domain.names):
        raise ValueError(f"records must be an (N, {len(domain.names)}) array, got shape {records.shape}")
    if records.size and not np.issubdtype(records.dtype, np.integer):
        raise ValueError("records must hold integer codes")
    for column, (name, size) in enumerate(zip(domain.names, domain.sizes, strict=True)):
        values = records[:, column]
        if values.size and (values.min() < 0 or values.max() >= size):
            bad = int(values[(values < 0) | (values >= size)][0])
            raise ValueError(f"column {name!r} holds code {bad}, outside its declared domain 0..{size - 1}")
    return records


def marginal_counts(domain: Domain, records: np.ndarray, attributes: tuple[str, ...]) -> np.ndarray:
    """Counts of records per cell of one marginal (the empty marginal is the total, shape ())."""
    columns = domain.index(attributes)
    shape = tuple(domain.sizes[i] for i in columns)
    if not columns:
        return np.array(float(len(records)))
    flat = np.ravel_multi_index(tuple(records[:, i] for i in columns), shape)
    return np.bincount(flat, minlength=math.prod(shape)).astype(float).reshape(shape)
