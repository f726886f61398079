"""Exact noise of the data-independent strategy mechanisms, value by value (for intervals).

hb, privelet, greedy-h and mm-opt (and their Gaussian twins) release x̂ = x + L z: z is i.i.d. noise on
the p strategy coordinates (Lap(b), or N(0, σ²)) and L the reconstruction (tree or greedy least squares,
the inverse Haar transform, mm-opt's least squares, A⁻¹ of the eigen strategy). Released value i (bin i,
or query i of W x̂) carries the noise Σ_j c_ij z_j, c_i = row i of L (or of W L). The rows are read
through the adjoint Lᵀ a block at a time (implicit operators; greedy-h, which only has L, forms it
densely up to DENSE_ENTRIES entries and is refused above).

* Gaussian: exactly N(0, σ²‖c_i‖²), half-width σ‖c_i‖·Φ⁻¹(1 − β/2).
* Laplace: N = Σ_j c_ij Lap(b), φ(t) = Π_j 1/(1 + b²c_ij²t²), P(|N| ≤ x) = (2/π)∫₀^∞ sin(tx) φ(t)/t dt
  (Gil-Pelaez), by the trapezoid rule, solved for x by safeguarded Newton, all values at once.
  Accuracy: each |c_ij| (standardised so that Var N = 1) is rounded to a log grid of spacing
  LOG_STEP, i.e. by a factor within e^{±LOG_STEP/2}; P(|N| ≤ x) does not increase in any |c_ij|
  (Anderson's theorem: N is a sum of symmetric unimodal terms), so the half-width is within a relative
  e^{LOG_STEP/2} − 1 = 0.1 % of the exact one. The trapezoid step h keeps the aliased mass
  P(|N| ≥ 2π/h − x) (Chernoff-bounded) below 10⁻³·β, and the range [0, T] is extended until the
  truncation error 4φ(T)/(πxT) is below that too; coefficients below TINY (relative, ≪ 1/T) enter
  through their exact first two cumulant terms (error < 10⁻⁹). So the coverage is the level to within
  10⁻³·β, and the half-width exact to 0.1 %.

>>> import numpy as np
>>> from dplens.core.mechanisms import MECHANISMS
>>> from dplens.core.queries.workloads import Prefix
>>> release = MECHANISMS["privelet"].run(np.ones(8), Prefix(8), 1.0, np.random.default_rng(0))
>>> half = strategy_halfwidths(MECHANISMS["privelet"], release, Prefix(8))
>>> half.shape, bool(np.all(half > 0))
((8,), True)
>>> laplace_sum_halfwidths(np.array([[1.0]]), 1.0, 0.05).round(3).tolist()  # one term: b·ln(1/β) = 2.996
[2.996]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.sparse
from scipy import special

from dplens.core.mechanisms import Mechanism, Release
from dplens.core.queries.workloads import Workload

LOG_STEP = 0.002      # log-grid spacing of the standardised coefficient magnitudes (0.1 % on the half-width)
TINY = 1e-6           # standardised coefficients below this enter by their cumulants (a²t², a⁴t⁴ terms)
FIRST_T = 50.0        # first range of the Gil-Pelaez integral (standardised t); ×8 while truncation matters
LAST_T = 3200.0
ROW_BLOCK = 2**22     # coefficient entries held at once (rows × coordinates)
DENSE_ENTRIES = 2**24  # greedy-h forms its reconstruction L densely up to this many entries, else None
RELATIVE_TOLERANCE = 1e-3  # allowed error of P(|N| > x), relative to the tail β


@dataclass(frozen=True, eq=False)
class Reconstruction:
    """x̂ − x = L z with z i.i.d. ``kind`` noise of ``scale`` (b or σ) on ``coordinates`` strategy values."""

    kind: str
    scale: float
    coordinates: int
    adjoint: Callable[[np.ndarray], np.ndarray]  # Lᵀ on an (n × k) block → (coordinates × k)


def reconstruction(mechanism: Mechanism, release: Release, workload: Workload) -> Reconstruction | None:
    """The noise map of a data-independent strategy release, or None (another mechanism, or too large).

    >>> import numpy as np
    >>> from dplens.core.mechanisms import MECHANISMS
    >>> from dplens.core.queries.workloads import Identity
    >>> r = MECHANISMS["hb"].run(np.ones(4), Identity(4), 1.0, np.random.default_rng(0))
    >>> rec = reconstruction(MECHANISMS["hb"], r, Identity(4))
    >>> rec.kind, rec.coordinates  # hb on 4 cells: the 4 leaves under an unmeasured root (b = 4)
    ('laplace', 4)
    """
    from dplens.core.mechanisms.gaussian import GaussianEigenDesign, GaussianMixin, Matched, eigen_strategy
    from dplens.core.mechanisms.greedy_h import GreedyH, cell_strategy
    from dplens.core.mechanisms.hierarchical import Hierarchical, build_tree, workload_grid
    from dplens.core.mechanisms.matrix import MatrixMechanism
    from dplens.core.mechanisms.privelet import Privelet, padded_length, reconstruct_transpose

    if isinstance(mechanism, Matched):  # matched privacy changes the scale only, read from the release
        mechanism = mechanism.inner
    if release.estimate is None or getattr(mechanism, "name", None) != release.mechanism:
        return None
    gaussian = isinstance(mechanism, GaussianMixin)
    key = "sigma" if gaussian else "noise_scale"
    if release.params.get(key) is None:
        return None
    kind, scale = ("gaussian" if gaussian else "laplace"), float(release.params[key])
    n = workload.shape[1]
    if np.size(release.estimate) != n:
        return None
    if isinstance(mechanism, Hierarchical):
        args = mechanism._tree_args(workload_grid(workload))
        tree = build_tree(*args)
        if release.params.get("levels") != tree.height or release.params.get("branching") != args[1]:
            return None
        return Reconstruction(kind, scale, tree.coordinates, lambda v: _tree_adjoint(tree, v))
    if isinstance(mechanism, Privelet):
        grid = workload_grid(workload)
        return Reconstruction(kind, scale, padded_length(grid[0]) * padded_length(grid[1]),
                              lambda v: reconstruct_transpose(v, grid))
    if isinstance(mechanism, GreedyH):
        hierarchy = (release.details or {}).get("hierarchy")
        if hierarchy is None:
            hierarchy = cell_strategy(workload, mechanism.branching, mechanism.granularity, mechanism.weights_norm)[0]
        q = hierarchy.query_weight.size
        if hierarchy.units != n or n * q > DENSE_ENTRIES:
            return None
        dense = _greedy_solve(hierarchy, np.eye(q))  # L, n × q
        return Reconstruction(kind, scale, q, lambda v: dense.T @ v)
    if isinstance(mechanism, MatrixMechanism):
        strategy = mechanism.strategy(workload)
        if release.params.get("p") != strategy.theta.shape[0]:
            return None
        return Reconstruction(kind, scale, n + strategy.theta.shape[0], lambda v: _pidentity_adjoint(strategy, v))
    if isinstance(mechanism, GaussianEigenDesign):
        eigen = eigen_strategy(workload)
        # L = A⁻¹ = S⁻¹ V Λ^{-1/4} Vᵀ, so Lᵀ v = V Λ^{-1/4} Vᵀ S⁻¹ v
        return Reconstruction(kind, scale, n, lambda v: eigen.vectors @ (
            eigen.values[:, None] ** -0.25 * (eigen.vectors.T @ (v / eigen.scale[:, None]))))
    return None


def _tree_adjoint(tree, v: np.ndarray) -> np.ndarray:
    """Lᵀ v = A (AᵀA)⁻¹ v for the hb tree: (AᵀA)⁻¹ v by least squares of v placed on the leaves, then A."""
    n_cells = tree.shape[0] * tree.shape[1]
    blocks: list[np.ndarray | None] = []
    for level, (leaf_nodes, cells), measured in zip(tree.levels, tree.leaves, tree.measured, strict=True):
        block = np.zeros((level.r0.size, v.shape[1]))
        block[leaf_nodes] = v[cells]
        blocks.append(block if measured else None)
    solved = tree.least_squares(blocks, n_cells)  # (AᵀA)⁻¹ v, n × k
    sums: list[np.ndarray] = [np.empty(0)] * len(tree.levels)
    for depth in range(len(tree.levels) - 1, -1, -1):  # node sums bottom-up, batched
        level, (leaf_nodes, cells) = tree.levels[depth], tree.leaves[depth]
        values = np.zeros((level.r0.size, v.shape[1]))
        values[leaf_nodes] = solved[cells]
        if level.internal is not None and level.internal.size:
            values[level.internal] = np.add.reduceat(sums[depth + 1], level.child_start, axis=0)
        sums[depth] = values
    return np.concatenate([s for s, m in zip(sums, tree.measured, strict=True) if m], axis=0)


def _pidentity_adjoint(strategy, v: np.ndarray) -> np.ndarray:
    """mm-opt: L = D (I + ΘᵀΘ)⁻¹ [I Θᵀ], so Lᵀ v = [I; Θ] (I + ΘᵀΘ)⁻¹ D v (Woodbury, O(pn) per column)."""
    theta = strategy.theta
    u = strategy.scaling[:, None] * v
    inner = np.eye(theta.shape[0]) + theta @ theta.T
    u = u - theta.T @ scipy.linalg.solve(inner, theta @ u, assume_a="pos")
    return np.concatenate([u, theta @ u], axis=0)


def _greedy_solve(tree, y: np.ndarray) -> np.ndarray:
    """greedy-h's ``Hierarchy.least_squares`` on a (queries × k) block at once: Aᵀy by interval ends, then
    the hierarchy's own batched (AᵀA)⁻¹."""
    q = tree.query_weight.size
    ends = scipy.sparse.csr_matrix((np.r_[tree.query_weight, -tree.query_weight],
                                    (np.r_[tree.query_start, tree.query_start + tree.query_size],
                                     np.r_[np.arange(q), np.arange(q)])), shape=(tree.units + 1, q))
    return tree.gram_solve(np.cumsum(ends @ y, axis=0)[:tree.units])


def _target_rows(workload: Workload, values: str, start: int, stop: int) -> np.ndarray:
    """Rows start … stop − 1 of the map from the estimate to the released values, as an (n × k) block."""
    from dplens.core.mechanisms.gram import query_rows

    if values == "answers":
        return query_rows(workload, start, stop)
    block = np.zeros((workload.shape[1], stop - start))
    block[np.arange(start, stop), np.arange(stop - start)] = 1.0
    return block


def strategy_halfwidths(mechanism: Mechanism, release: Release, workload: Workload, *, values: str = "bins",
                        level: float = 0.95, count: int = 1) -> np.ndarray | None:
    """Exact half-widths t_i with P(|noise_i| > t_i) = (1 − level)/count, per bin or per query; else None.

    ``count`` > 1 gives Bonferroni widths for ``count`` values at once. None when the release is not
    from a data-independent strategy mechanism this module knows (see ``reconstruction``).

    >>> import numpy as np
    >>> from dplens.core.mechanisms import MECHANISMS
    >>> from dplens.core.queries.workloads import Identity
    >>> r = MECHANISMS["uniform"].run(np.ones(4), Identity(4), 1.0, np.random.default_rng(0))
    >>> strategy_halfwidths(MECHANISMS["uniform"], r, Identity(4)) is None
    True
    """
    if values not in ("bins", "answers"):
        raise ValueError(f"values must be 'bins' or 'answers', got {values!r}")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    if not (isinstance(count, int | np.integer) and count >= 1):
        raise ValueError(f"count must be an integer >= 1, got {count!r}")
    rec = reconstruction(mechanism, release, workload)
    if rec is None:
        return None
    tail = (1 - level) / count
    m = workload.shape[0] if values == "answers" else workload.shape[1]
    step = max(1, ROW_BLOCK // max(rec.coordinates, workload.shape[1]))
    out = np.empty(m)
    for start in range(0, m, step):
        stop = min(m, start + step)
        rows = rec.adjoint(_target_rows(workload, values, start, stop)).T  # k × coordinates
        if rec.kind == "gaussian":
            out[start:stop] = rec.scale * np.sqrt(np.sum(rows**2, axis=1)) * special.ndtri(1 - tail / 2)
        else:
            out[start:stop] = laplace_sum_halfwidths(rows, rec.scale, tail)
    return out


def _chernoff(tail: float) -> float:
    """y with P(|N| > y) ≤ tail for any Var-1 sum of Laplace terms (θ = 0.7 in E e^{θN} = Π 1/(1 − a²θ²))."""
    return (np.log(2.0 / tail) + 0.3245) / 0.7


def laplace_sum_halfwidths(rows: np.ndarray, scale: float, tail: float) -> np.ndarray:
    """x_i with P(|Σ_j rows_ij Lap(scale)| > x_i) = tail, by Gil-Pelaez inversion (module docstring).

    Two equal terms (b = 1): P(|N| > x) = (1 + x/2)e^{−x}, which is 0.05 at x = 4.1154.

    >>> laplace_sum_halfwidths(np.array([[1.0, 0], [0.5, 0.5]]), 2.0, 0.05).round(3).tolist()
    [5.992, 4.115]
    """
    rows = np.abs(np.asarray(rows, dtype=float))
    if rows.ndim != 2:
        raise ValueError(f"rows must be a 2-D array (values × coordinates), got shape {rows.shape}")
    if not (scale > 0 and 0 < tail < 1):
        raise ValueError(f"scale must be > 0 and tail in (0, 1), got scale={scale!r}, tail={tail!r}")
    std = scale * np.sqrt(2.0 * np.sum(rows**2, axis=1))  # Var(c Lap(b)) = 2b²c²
    out = np.zeros(rows.shape[0])
    live = np.flatnonzero(std > 0)
    if not live.size:
        return out
    a = scale * rows[live] / std[live, None]  # standardised: Σ a² = 1/2, Var N = 1
    small = a < TINY
    gauss = np.sum(np.where(small, a**2, 0.0), axis=1)
    quartic = np.sum(np.where(small, a**4, 0.0), axis=1)
    grid_max = np.log(np.sqrt(0.5))
    bins = int(np.ceil((grid_max - np.log(TINY)) / LOG_STEP)) + 1  # anchored at the largest possible a
    index = np.clip(np.rint((grid_max - np.log(np.where(small, 1.0, a))) / LOG_STEP), 0, bins - 1).astype(int)
    r, c = np.nonzero(~small)
    counts = scipy.sparse.csr_matrix((np.ones(r.size), (r, index[r, c])), shape=(live.size, bins))
    counts.sum_duplicates()
    used = np.unique(counts.indices)
    counts = counts[:, used].toarray()  # only the occupied magnitudes
    magnitude = np.exp(grid_max - used * LOG_STEP)
    tolerance = RELATIVE_TOLERANCE * tail
    x_high = _chernoff(tail)
    h = 2 * np.pi / (x_high + _chernoff(tolerance))  # aliased mass P(|N| ≥ 2π/h − x) ≤ tolerance
    x = np.zeros(live.size)
    todo = np.arange(live.size)
    limit = FIRST_T
    while todo.size:
        t = np.arange(1, int(np.ceil(limit / h)) + 1) * h
        log_phi = -(counts[todo] @ np.log1p(np.outer(magnitude**2, t**2)))
        log_phi -= np.outer(gauss[todo], t**2) - np.outer(quartic[todo], t**4) / 2
        phi = np.exp(log_phi)
        x[todo] = _solve(phi, t, h, 1 - tail, x_high)
        # truncation: |∫_T^∞ sin(tx) φ(t)/t dt| ≤ 2φ(T)/(xT) (φ(t)/t decreasing), times 2/π
        bound = 4 * phi[:, -1] / (np.pi * np.maximum(x[todo], 1e-12) * t[-1])
        if limit >= LAST_T:
            break
        todo, limit = todo[bound > tolerance], limit * 8
    out[live] = x * std[live]
    return out


def _solve(phi: np.ndarray, t: np.ndarray, h: float, target: float, x_high: float) -> np.ndarray:
    """x with F(x) = target per row, F(x) = (2/π) h [x/2 + Σ_k sin(t_k x) φ_k / t_k]; Newton kept in a bracket."""
    lo, hi = np.zeros(phi.shape[0]), np.full(phi.shape[0], x_high)
    x = np.full(phi.shape[0], min(special.ndtri((1 + target) / 2), x_high / 2))
    over_t = phi / t
    for _ in range(100):
        arg = np.outer(x, t)
        f = (2 / np.pi) * h * (x / 2 + np.sum(np.sin(arg) * over_t, axis=1)) - target
        slope = (2 / np.pi) * h * (0.5 + np.sum(np.cos(arg) * phi, axis=1))
        lo, hi = np.where(f < 0, x, lo), np.where(f < 0, hi, x)
        newton = x - f / np.where(slope > 0, slope, np.inf)
        inside = (newton > lo) & (newton < hi) & (slope > 0)
        step = np.where(inside, newton, (lo + hi) / 2)
        if np.all(np.abs(step - x) <= 1e-12 * np.maximum(x, 1.0)):
            return step
        x = step
    return x
