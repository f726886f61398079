"""OM, the orthogonal mechanism of Huang, Han, Li & Yu (Sec. 4.2, Algorithms 1–3), with the factorisation made exact.

W = B·W̃: the rows of W̃ form groups with pairwise disjoint column supports (one group per *atom*:
the columns sharing a support signature over r independent rows of W). The release is
B(W̃x + Lap(S̃/ε)^s) with S̃ the column-L1 maximum of the final W̃ (never assumed 1, as the
paper's example does: it holds only with group-level normalisation). B comes from block least squares
and is checked exact, because the paper's Algorithm 3 leaves B incomplete for groups of two or more rows;
never-queried columns are dropped, because Algorithm 2's loop never ends on them.

>>> import numpy as np
>>> from dplens.core.queries.workloads import Explicit
>>> f = om_decompose(Explicit(np.array([[1.0, 1], [1, -1], [2, 0]])))
>>> f.mixing.round(6).tolist(), f.sensitivity
([[2.0, 0.0], [0.0, 2.0], [2.0, 2.0]], 1.0)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import scipy.sparse as sp

from dplens.core.mechanisms.cache import StrategyCache
from dplens.core.mechanisms.contract import (
    SEED_RANGE,
    Range,
    Release,
    check_inputs,
    laplace_epsilon,
    setting,
)
from dplens.core.mechanisms.cost_model import OVERHEAD_SECONDS, SECONDS_PER_ELEMENT, Cost, matvec_elements
from dplens.core.mechanisms.greedy_h import interval_cells, workload_key
from dplens.core.mechanisms.measurement import laplace_record, measure_laplace, pure_epsilon, stated_at
from dplens.core.privacy.definitions import Privacy, PureDP
from dplens.core.queries.workloads import DENSE_LIMIT, Ranges, Workload, as_intervals, sparse_matrix
from dplens.core.validate import non_negative

EXACTNESS = 1e-9  # ‖W − BW̃‖_max ≤ EXACTNESS·max(1, ‖W‖_max) (Theorem 4: W = BW̃)
FLOP_LIMIT = 5e9  # m·n·min(m, n) above which the dense factorisation is refused (≈ (1000, 4096) fits)


@dataclass(frozen=True, eq=False)
class OmFactorisation:
    """W = B·W̃ with W̃ (``reduced``, s × n, sparse) in orthogonal groups and B (``mixing``, m × s;
    sparse for interval workloads)."""

    reduced: sp.csr_matrix
    mixing: np.ndarray | sp.csr_matrix
    groups: tuple[tuple[int, ...], ...]   # the columns (atom) of each group
    group_sizes: tuple[int, ...]          # τ_σ: rows of W̃ in each group, in order
    selected_rows: tuple[int, ...]        # R: the r independent rows of W the atoms are built from
    sensitivity: float                    # S̃ = max column L1 norm of W̃

    def expected_total_mse(self, epsilon: float) -> float:
        """Total squared error 2‖B‖_F²S̃²/ε² (Theorem 5; the paper reads it per query, but it is a total)."""
        squared = self.mixing.multiply(self.mixing).sum() if sp.issparse(self.mixing) else np.sum(self.mixing**2)  # type: ignore[union-attr]  # sparse here
        return 2.0 * float(squared) * self.sensitivity**2 / epsilon**2


def independent_rows(matrix: np.ndarray, tol: float, block: int = 64) -> np.ndarray:
    """First-found greedy: indices of rows that are not (within ``tol``) in the span of earlier rows.

    Block Gram–Schmidt with re-orthogonalisation: each block of rows is projected off the basis kept so
    far with matrix products (BLAS-3), then scanned row by row against the block's own new vectors. A
    row's residual norm is its distance to the span of the rows kept before it.

    >>> independent_rows(np.array([[1.0, 1], [2, 2], [1, -1], [3, 0]]), 1e-9).tolist()
    [0, 2]
    """
    m, n = matrix.shape
    basis = np.zeros((min(m, n), n))
    count = 0
    kept: list[int] = []
    for start in range(0, m, block):
        chunk = np.array(matrix[start:start + block], dtype=float)
        for _ in range(2):  # twice is enough (Giraud et al.)
            chunk -= (chunk @ basis[:count].T) @ basis[:count]
        first = count
        for i, residual in enumerate(chunk):
            for _ in range(2):
                residual = residual - basis[first:count].T @ (basis[first:count] @ residual)
            norm = float(np.linalg.norm(residual))
            if norm > tol and count < basis.shape[0]:
                basis[count] = residual / norm
                count += 1
                kept.append(start + i)
        if count == basis.shape[0]:
            break
    return np.array(kept, dtype=int)


def _default_tol(dense: np.ndarray) -> float:
    # numpy's matrix_rank default, with ‖W‖_F ≥ σ_max (cheaper and slightly more conservative)
    return max(dense.shape) * np.finfo(float).eps * max(float(np.linalg.norm(dense)), 1.0)


def _signature_labels(support: np.ndarray) -> np.ndarray:
    """Label the columns of a boolean r × n support by their signature (identical columns share one)."""
    packed = np.ascontiguousarray(np.packbits(support, axis=0).T)
    keys = packed.view(np.dtype((np.void, packed.shape[1]))).ravel()
    _, labels = np.unique(keys, return_inverse=True)
    return labels.ravel()


def _first_found_intervals(lo: np.ndarray, hi: np.ndarray, order: np.ndarray) -> np.ndarray:
    """First-found independent interval rows, exactly: 1[lo..hi] = P_hi − P_{lo−1} in the basis of prefix
    indicators (P_{−1} = 0), so a set of intervals is independent iff its edges {lo−1, hi} form a forest
    (the graphic matroid); greedy in row order is Kruskal with union–find."""
    parent = list(range(int(hi.max()) + 2))  # node k + 1 stands for P_k; node 0 for P_{−1} = 0

    def root(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    kept = []
    for i in order:
        a, b = root(int(lo[i])), root(int(hi[i]) + 1)
        if a != b:
            parent[a] = b
            kept.append(int(i))
    return np.sort(np.array(kept, dtype=int))


MIXING_ENTRIES = 2**25  # non-zeros of B an interval factorisation may hold (about 0.8 GB while it is built)


def _interval_decompose(ranges: Ranges, row_seed: int | None) -> OmFactorisation:
    """OM_DECOMPOSE for 0/1 interval workloads on elementary segments, never the m × n matrix.

    Every row of W is constant between consecutive query ends, so the cells are cut into segments at
    those ends and everything is computed per segment: signatures over the selected rows (hashed),
    atoms, and B[i, a] = |row_i ∩ A_a| / |A_a| (block least squares: every atom's restricted rows are
    all ones, so each group is one row of W̃, the atom's indicator, column L1 = 1). Memory is
    O(n + m + nnz(B)); B has at most one entry per (query, segment) pair.
    """
    m, n = ranges.shape
    order = np.arange(m) if row_seed is None else np.random.default_rng(row_seed).permutation(m)
    selected = _first_found_intervals(ranges.lo, ranges.hi, order)
    bounds = np.unique(np.concatenate(([0, n], ranges.lo, ranges.hi + 1)))
    length = np.diff(bounds)
    first_segment = np.searchsorted(bounds, ranges.lo)
    stop_segment = np.searchsorted(bounds, ranges.hi + 1)
    # signature of a segment = the selected intervals covering it, hashed as a sum of random 64-bit
    # weights (difference array over segments; uint64 arithmetic wraps) plus the coverage count
    weights = np.random.default_rng(20240501).integers(0, 2**63, size=selected.size, dtype=np.uint64) * 2 + 1
    diff = np.zeros(bounds.size, dtype=np.uint64)
    np.add.at(diff, first_segment[selected], weights)
    np.add.at(diff, stop_segment[selected], ~weights + np.uint64(1))  # −w modulo 2^64
    signature = np.cumsum(diff[:-1], dtype=np.uint64)
    coverage = np.cumsum(np.bincount(first_segment[selected], minlength=bounds.size)
                         - np.bincount(stop_segment[selected], minlength=bounds.size))[:-1]
    queried = np.flatnonzero(coverage > 0)
    _, first, labels = np.unique(signature[queried], return_index=True, return_inverse=True)
    rank = np.empty(first.size, dtype=np.int64)
    rank[np.argsort(first)] = np.arange(first.size)  # groups ordered by their first column
    atom_of_segment = np.full(length.size, -1, dtype=np.int64)
    atom_of_segment[queried] = rank[labels.ravel()]
    sizes = np.bincount(atom_of_segment[queried], weights=length[queried], minlength=first.size)
    columns = interval_cells(bounds[queried], length[queried])
    atom = np.repeat(atom_of_segment[queried], length[queried])
    reduced = sp.csr_matrix((np.ones(columns.size), (atom, columns)), shape=(sizes.size, n))
    # B: one entry per (query, segment it covers), summed per atom
    runs = stop_segment - first_segment
    if int(runs.sum()) > MIXING_ENTRIES:
        raise ValueError(f"OM on this interval workload needs {int(runs.sum()):,} entries of B (queries × "
                         f"segments); the limit is {MIXING_ENTRIES:,}: use fewer or shorter ranges")
    segment = interval_cells(first_segment, runs)
    counts = sp.csr_matrix((length[segment].astype(float), (np.repeat(np.arange(m), runs),
                                                             atom_of_segment[segment])), shape=(m, sizes.size))
    # exactness (Theorem 4): every row covers whole atoms only, and no unqueried cell
    if np.any(atom_of_segment[segment] < 0) or np.any(counts.data != sizes[counts.indices]):
        raise ValueError("OM factorisation of the interval workload is not exact (signature hash collision)")
    counts.data /= sizes[counts.indices]
    by_atom = np.lexsort((columns, atom))
    groups = tuple(tuple(part.tolist()) for part in np.split(columns[by_atom], np.cumsum(sizes.astype(np.int64))[:-1]))
    return OmFactorisation(reduced, counts, groups, (1,) * sizes.size, tuple(int(i) for i in selected),
                           1.0 if sizes.size else 0.0)


_FACTORISATIONS = StrategyCache("om factorisations", limit=16)


def om_decompose(workload: Workload, *, tol: float | None = None, row_seed: int | None = None) -> OmFactorisation:
    """Algorithms 2–3 of Huang et al., corrected: W̃, B and the groups, exact to EXACTNESS; cached per workload content.

    Args, Raises: as ``factorise``.
    """
    return _FACTORISATIONS.get_or_compute((workload_key(workload), tol, row_seed),
                                          lambda: factorise(workload, tol=tol, row_seed=row_seed))


def factorise(workload: Workload, *, tol: float | None = None, row_seed: int | None = None) -> OmFactorisation:
    """The factorisation itself, uncached (for timing; everything else uses ``om_decompose``).

    Args:
        workload: W.
        tol: rank and support tolerance; None uses max(m, n)·eps·‖W‖_F.
        row_seed: None selects R first-found in row order; an int shuffles the row order first with
            ``np.random.default_rng(row_seed)`` (the paper picks "randomly"; public, data-independent).

    Raises:
        ValueError: if W is too large to factorise densely or the factorisation is not exact.
    """
    m, n = workload.shape
    intervals = as_intervals(workload)
    if intervals is not None:
        return _interval_decompose(intervals, row_seed)
    if m * n > DENSE_LIMIT or m * n * min(m, n) > FLOP_LIMIT:
        raise ValueError(f"OM factorises a general W densely in O(m·n·min(m, n)); m={m}, n={n} is above the "
                         f"limit of {FLOP_LIMIT:.0e}: use fewer queries (interval workloads have no limit)")
    matrix = sparse_matrix(workload)  # type: ignore[arg-type]  # workloads are frozen dataclasses: hashable
    dense = matrix.toarray()
    tol = _default_tol(dense) if tol is None else float(tol)
    non_negative("tol", tol)
    order = np.arange(m) if row_seed is None else np.random.default_rng(row_seed).permutation(m)
    selected = np.sort(order[independent_rows(dense[order], tol)])
    support = np.abs(dense[selected]) > tol
    queried = support.any(axis=0)   # columns with an empty signature are never queried
    labels = _signature_labels(support)
    columns = np.flatnonzero(queried)
    # group the queried columns by signature, groups ordered by their first column
    by_label: dict[int, list[int]] = {}
    for j in columns:
        by_label.setdefault(int(labels[j]), []).append(int(j))
    groups = tuple(tuple(cols) for cols in by_label.values())

    mixing_blocks, row_blocks, col_blocks, val_blocks = [], [], [], []
    row = 0
    group_sizes: list[int] = []
    for cols in groups:
        if len(cols) == 1:  # a singleton atom (typical for the paper's random W, Sec. 5): W̃ row e_j, B column W[:, j]
            block_rows = np.array([[1.0]])
            mixing = dense[:, cols]
        else:
            atom = dense[np.ix_(selected[support[:, cols[0]]], cols)]
            block_rows = atom[independent_rows(atom, tol)]
            block_rows = block_rows / np.abs(block_rows).sum(axis=0).max()  # group-level normalisation
            mixing = np.linalg.lstsq(block_rows.T, dense[:, cols].T, rcond=None)[0].T  # W[:, A]·pinv(G)
        tau = block_rows.shape[0]
        r_idx, c_idx = np.nonzero(block_rows)
        row_blocks.append(r_idx + row)
        col_blocks.append(np.asarray(cols)[c_idx])
        val_blocks.append(block_rows[r_idx, c_idx])
        mixing_blocks.append(mixing)
        group_sizes.append(tau)
        row += tau
    reduced = sp.csr_matrix(
        (np.concatenate(val_blocks) if val_blocks else np.zeros(0),
         (np.concatenate(row_blocks) if row_blocks else np.zeros(0, int),
          np.concatenate(col_blocks) if col_blocks else np.zeros(0, int))), shape=(row, n))
    mixing = np.hstack(mixing_blocks) if mixing_blocks else np.zeros((m, 0))
    scale = max(1.0, float(np.abs(dense).max()))
    mixing[np.abs(mixing) < EXACTNESS * 1e-3 * scale] = 0.0  # round-off from lstsq, for display
    residual = dense - np.asarray((reduced.T @ mixing.T).T)
    if np.abs(residual).max(initial=0.0) > EXACTNESS * scale:
        raise ValueError(f"OM factorisation is not exact (‖W − BW̃‖_max = {np.abs(residual).max():.3g}); "
                         f"try a larger tol than {tol:.3g}")
    sensitivity = float(np.asarray(abs(reduced).sum(axis=0)).max()) if row else 0.0
    mixing.setflags(write=False)
    return OmFactorisation(reduced, mixing, groups, tuple(group_sizes), tuple(int(i) for i in selected),
                           sensitivity)


def literal_algorithm3_mixing(workload: Workload, factorisation: OmFactorisation, tol: float = 1e-12) -> np.ndarray:
    """The paper's literal Algorithm 3 (incomplete: it misses groups of two or more rows), kept only to show its
    failure.

    B(i, k) is filled only when W̃ row k's support lies inside row i's support and the two restricted
    rows are proportional; other entries stay 0, so W ≠ BW̃ in general.
    """
    dense = sparse_matrix(workload).toarray()  # type: ignore[arg-type]  # workloads are frozen dataclasses: hashable
    reduced = factorisation.reduced.toarray()
    mixing = np.zeros((dense.shape[0], reduced.shape[0]))
    for k, q in enumerate(reduced):
        cols = np.abs(q) > tol
        for i, w in enumerate(dense):
            if np.all(np.abs(w[cols]) > tol) and np.linalg.matrix_rank(np.vstack([w[cols], q[cols]])) == 1:
                mixing[i, k] = w[cols][0] / q[cols][0]
    return mixing


def structure_table(factorisation: OmFactorisation) -> list[dict[str, object]]:
    """The groups as display rows: group, columns (atom), rows of W̃ (τ)."""
    return [{"group": g, "columns": ", ".join(map(str, cols[:20])) + (" …" if len(cols) > 20 else ""),
             "atom_size": len(cols), "rows_of_reduced": tau}
            for g, (cols, tau) in enumerate(zip(factorisation.groups, factorisation.group_sizes, strict=True))]


@dataclass(frozen=True)
class OM:
    """Orthogonal mechanism (Huang et al., Algorithm 1, corrected): B(W̃x + Lap(S̃/ε)).

    >>> from dplens.core.queries.workloads import Identity
    >>> OM().expected_mse(Identity(4), 1.0)
    2.0
    """

    summary: ClassVar[str] = "Orthogonal mechanism (Huang et al.): answers a low-rank version of the queries."
    STRATEGY_CACHES: ClassVar[tuple[StrategyCache, ...]] = (_FACTORISATIONS,)

    tol: float | None = setting(None, Range(0, 1e6, open=True, choices=(None,)))
    row_seed: int | None = setting(None, SEED_RANGE)
    name: str = "om"
    data_dependent: bool = False

    def factorisation(self, workload: Workload) -> OmFactorisation:
        """W = B·W̃ for this workload (data-independent, cached)."""
        return om_decompose(workload, tol=self.tol, row_seed=self.row_seed)

    def cost(self, workload: Workload) -> Cost:
        """Elementary segments for interval workloads, else a dense factorisation of W."""
        m, n = workload.shape
        if as_intervals(workload) is not None:  # elementary segments: B holds ≤ one entry per (query, segment)
            mixing = float(m) * min(2 * m + 1, n) / 2
            return Cost(OVERHEAD_SECONDS + SECONDS_PER_ELEMENT * (20 * (n + matvec_elements(workload)) + 10 * mixing),
                        8.0 * (8 * n + 4 * mixing), f"the workload's {m:,} interval queries over {n:,} cells")
        return Cost(OVERHEAD_SECONDS + 2e-10 * m * n * min(m, n), 8.0 * 3 * m * n,
                    f"the workload ({m:,} queries × {n:,} cells, which OM factorises densely)")

    def run(self, x: np.ndarray, workload: Workload, privacy: Privacy | float, rng: np.random.Generator) -> Release:
        x, epsilon = check_inputs(x, workload, privacy)
        f = self.factorisation(workload)
        scale = f.sensitivity / epsilon
        noisy, blocks = measure_laplace(f.reduced @ x, np.asarray(abs(f.reduced).sum(axis=0)).ravel(), scale, rng)
        params = {"tol": self.tol, "row_seed": self.row_seed, "groups": len(f.groups),
                  "reduced_rows": f.reduced.shape[0], "sensitivity": f.sensitivity}
        records = (laplace_record(f"the {f.reduced.shape[0]} rows of the reduced workload", blocks, noisy),)
        release = Release(self.name, PureDP(epsilon), pure_epsilon(records), f.mixing @ noisy, None, params,
                          {"groups": structure_table(f), "reduced": f.reduced, "mixing": f.mixing}, workload=workload,
                          measurements=records)
        return stated_at(release, privacy)

    def expected_mse(self, workload: Workload, privacy: Privacy | float) -> float:
        """Exact per-query MSE 2‖B‖_F²S̃²/(m ε²)."""
        epsilon = laplace_epsilon(privacy)
        return self.factorisation(workload).expected_total_mse(epsilon) / workload.shape[0]
