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

import numpy as np
import scipy.linalg
import scipy.sparse
from scipy import special

from dplens.core.mechanisms import Mechanism, Release
from dplens.core.mechanisms.measurement import Reconstruction
from dplens.core.queries.workloads import Workload
from dplens.core.validate import fraction, integer, positive

LOG_STEP = 0.002      # log-grid spacing of the standardised coefficient magnitudes (0.1 % on the half-width)
TINY = 1e-6           # standardised coefficients below this enter by their cumulants (a²t², a⁴t⁴ terms)
FIRST_T = 50.0        # first range of the Gil-Pelaez integral (standardised t); ×8 while truncation matters
LAST_T = 3200.0
ROW_BLOCK = 2**22     # coefficient entries held at once (rows × coordinates)
RELATIVE_TOLERANCE = 1e-3  # allowed error of P(|N| > x), relative to the tail β


def reconstruction(mechanism: Mechanism, release: Release, workload: Workload) -> Reconstruction | None:
    """The noise map of a data-independent strategy release (the mechanism's own ``reconstruction``), or None.

    >>> import numpy as np
    >>> from dplens.core.mechanisms import MECHANISMS
    >>> from dplens.core.queries.workloads import Identity
    >>> r = MECHANISMS["hb"].run(np.ones(4), Identity(4), 1.0, np.random.default_rng(0))
    >>> rec = reconstruction(MECHANISMS["hb"], r, Identity(4))
    >>> rec.kind, rec.coordinates  # hb on 4 cells: the 4 leaves under an unmeasured root (b = 4)
    ('laplace', 4)
    """
    own = getattr(mechanism, "reconstruction", None)
    return own(release, workload) if own is not None else None


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
    fraction("level", level)
    integer("count", count)
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
    positive("scale", scale)
    fraction("tail", tail)
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
