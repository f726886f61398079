"""HDMM's marginals strategy OPT_M (McKenna, Miklau, Hay, Machanavajjhala, VLDB 2018, §6.2) for Laplace noise.

The strategy measures a weighted set of marginals, θ_a · M_a for subsets a of the workload's attributes U, and
answers the workload by least squares. Everything is diagonal in ResidualPlanner's residual basis (Xiao, Ding, Kifer et
al. 2023): on the
residual R_b (dimension d_b = ∏_{i∈b}(n_i − 1)) the strategy's Gram has eigenvalue λ_b = Σ_{a⊇b} θ_a² c_a and
the workload's Σ_{M⊇b} w_M c_M = μ_b, with c_a = ∏_{i∈U∖a} n_i. With Laplace noise at ε, Δ₁ = Σ_a θ_a, the
weighted total variance is 2 (Σθ)² / ε² · Σ_b d_b μ_b / λ_b, optimised over θ ≥ 0 by L-BFGS-B with its exact
gradient (superset and subset sums over the 2^|U| subsets). Tables are ρ-zCDP: ε = √(2ρ) (pure ε-DP implies
ε²/2-zCDP, Bun & Steinke 2016, Prop. 1.4). Nothing touches the full domain.

>>> from dplens.core.data.domain import Domain
>>> from dplens.core.queries.marginals import MarginalWorkload
>>> w = MarginalWorkload.all_kway(Domain(("a", "b", "c"), (2, 3, 4)), 2)
>>> plan = plan_opt_marginals(w, rho=0.5)
>>> plan.expected_rmse <= laplace_identity_rmse(w, 0.5)
True
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize
from threadpoolctl import threadpool_limits

from dplens.core.privacy.noise import add_laplace
from dplens.core.queries.marginals import MarginalWorkload, check_records, marginal_counts, subsets
from dplens.core.tables.contract import PlannedError, check_rho

MAX_ATTRIBUTES = 20           # the optimisation has 2^|U| parameters
MAX_MEASURED_CELLS = 2 ** 20  # a marginal the strategy may measure is at most this large
PRUNE = 1e-6                  # a weight whose eigenvalue share is below this everywhere is dropped (exactly)
RANDOM_STARTS = 8             # seeded random L-BFGS-B starts (HDMM's start) beside the three fixed ones …
RANDOM_STARTS_SMALL = 32      # … and with at most SMALL_CANDIDATES candidate marginals, where a start costs ms
SMALL_CANDIDATES = 512


def laplace_identity_rmse(workload: MarginalWorkload, rho: float) -> float:
    """Per-cell RMSE of Laplace noise on every workload marginal at ε = √(2ρ): √2 · K / ε for K marginals (the
    unweighted cells' Δ₁; weights do not lower it)."""
    epsilon = math.sqrt(2 * check_rho(rho))
    return math.sqrt(2) * workload.cells_l1_sensitivity / epsilon


@dataclass(frozen=True)
class MarginalsPlan(PlannedError):
    """The optimised weights θ (arrays indexed by membership of each attribute of ``attributes``) and their error."""

    workload: MarginalWorkload
    rho: float
    attributes: tuple[int, ...]     # U: domain indices of the workload's attributes
    theta: np.ndarray               # shape (2,)*|U|; θ_a > 0 only on measured marginals

    @property
    def epsilon(self) -> float:
        return math.sqrt(2 * self.rho)

    @property
    def l1_sensitivity(self) -> float:
        return float(self.theta.sum())

    @property
    def noise_scale(self) -> float:
        """Laplace scale b on every measured cell (before dividing by its θ_a)."""
        return self.l1_sensitivity / self.epsilon

    @property
    def privacy_loss(self) -> float:
        """ρ of the noise actually used: ε²/2 with ε = Δ₁ / b (= ρ)."""
        return (self.l1_sensitivity / self.noise_scale) ** 2 / 2

    def measured(self) -> list[tuple[tuple[int, ...], float]]:
        """(attribute indices of a, θ_a) for every measured marginal."""
        return [(tuple(self.attributes[i] for i, bit in enumerate(index) if bit), float(self.theta[index]))
                for index in zip(*np.nonzero(self.theta), strict=True)]

    @functools.cached_property
    def eigenvalues(self) -> np.ndarray:
        """λ_b = Σ_{a⊇b} θ_a² c_a: the strategy Gram's eigenvalue on residual b (computed once per plan)."""
        return _lattice(self.theta ** 2 * _cost(_sizes(self)), supersets=True)

    def _total(self, stats) -> float:
        """2b² Σ_{b⊆M} c_M · factor(M, b) / λ_b for a marginal M with per-axis Gram statistics ``stats``."""
        sizes = self.workload.domain.sizes
        lam = self.eigenvalues
        c_m = math.prod(sizes[i] for i in self.attributes if i not in {c for c, _, _ in stats})
        total = 0.0
        for subset, factor in _factors(sizes, stats):
            total += c_m * factor / lam[tuple(int(i in subset) for i in self.attributes)]
        return 2 * self.noise_scale ** 2 * total

    def marginal_variance(self, marginal: tuple[str, ...]) -> float:
        """Variance of every cell of one marginal's estimate (the same for all its cells)."""
        columns = self.workload.domain.index(marginal)
        sizes = self.workload.domain.sizes
        return self._total(tuple((c, float(sizes[c]), float(sizes[c])) for c in columns)) / math.prod(
            sizes[c] for c in columns)

    def query_variance(self, index: int) -> float:
        """Σ over the queries of workload marginal ``index`` (cells, or ranges) of their variances."""
        return self._total(self.workload.axis_stats(index))



def _factors(sizes: tuple[int, ...], stats):
    """(b, ∏_{i∈b}(tr G_i − 1ᵀG_i1/n_i) ∏_{i∈M∖b} 1ᵀG_i1/n_i) for every b ⊆ M: tr(Q M P_b Mᵀ Qᵀ) / c_M.

    For plain cells (G_i = I) this is d_b = ∏_{i∈b}(n_i − 1).
    """
    columns = tuple(c for c, _, _ in stats)
    for subset in subsets(columns):
        factor = 1.0
        for column, trace, total in stats:
            n = sizes[column]
            factor *= (trace - total / n) if column in subset else total / n
        yield subset, factor


def _sizes(plan: MarginalsPlan) -> np.ndarray:
    return np.array([plan.workload.domain.sizes[i] for i in plan.attributes], dtype=float)


def _along(sizes: np.ndarray, inside, outside) -> np.ndarray:
    """∏ over attributes of (inside(n_i) if i ∈ a else outside(n_i)), as an array over all subsets a."""
    result = np.ones((2,) * len(sizes))
    for axis, n in enumerate(sizes):
        shape = [1] * len(sizes)
        shape[axis] = 2
        result = result * np.array([outside(n), inside(n)]).reshape(shape)
    return result


def _cost(sizes: np.ndarray) -> np.ndarray:
    """c_a = ∏_{i∉a} n_i: how many full-domain cells each cell of marginal a sums."""
    return _along(sizes, lambda n: 1.0, lambda n: n)


def _lattice(values: np.ndarray, *, supersets: bool, combine=np.add) -> np.ndarray:
    """out[b] = combine over a ⊇ b (``supersets``) or a ⊆ b of values[a]: the zeta transform on the subset
    lattice, one attribute axis at a time (np.add: sums; np.minimum: minima)."""
    out = values.copy()
    for axis in range(out.ndim):
        lower, upper = (slice(None),) * axis + (0,), (slice(None),) * axis + (1,)
        target, source = (lower, upper) if supersets else (upper, lower)
        out[target] = combine(out[target], out[source])
    return out


def plan_opt_marginals(workload: MarginalWorkload, rho: float, *, iterations: int = 2000,
                       seed: int = 0) -> MarginalsPlan:
    """The optimised plan at ρ (the weights do not depend on ρ: they are optimised once per workload and cached)."""
    rho = check_rho(rho)
    attributes, theta = _optimal_weights(workload, iterations, seed)
    return MarginalsPlan(workload, rho, attributes, theta)


@functools.lru_cache(maxsize=32)
def _optimal_weights(workload: MarginalWorkload, iterations: int, seed: int) -> tuple[tuple[int, ...], np.ndarray]:
    """Optimised marginal weights θ for Laplace noise at ε = √(2ρ); never worse than Laplace on each marginal.

    The objective is not convex and has many local optima (a reweighted identity, one large marginal, mixtures),
    so L-BFGS-B runs from several starts and the best is kept: the identity strategy (θ = 1 on the workload's
    marginals, plus a small weight on every other candidate, which could not leave a bound at exactly 0),
    uniform weights, the full table of the workload's attributes (when it is a candidate), and seeded uniform
    random starts as in HDMM (RANDOM_STARTS_SMALL when there are at most 512 candidates, else RANDOM_STARTS).
    Candidates: subsets of the workload's attributes with at most 2^20 cells. Data-independent: the seed makes
    the strategy, and so ``expected_rmse``, reproducible.
    """
    domain = workload.domain
    attributes = tuple(sorted({i for m in workload.marginals for i in domain.index(m)}))
    if len(attributes) > MAX_ATTRIBUTES:
        raise ValueError(f"HDMM's marginals strategy optimises over 2^k marginals of the workload's k attributes; "
                         f"the rule is k ≤ {MAX_ATTRIBUTES}, got k = {len(attributes)}")
    sizes = np.array([domain.sizes[i] for i in attributes], dtype=float)
    d = len(attributes)
    cost = _cost(sizes)
    cells = _along(sizes, lambda n: n, lambda n: 1.0)
    identity = np.zeros((2,) * d)
    coef = np.zeros((2,) * d)  # Σ_{M ⊇ b} w_M c_M factor(M, b): the weight of 1/λ_b in the objective
    for index, w in enumerate(workload.weights):
        columns = set(domain.index(workload.marginals[index]))
        member = tuple(int(i in columns) for i in attributes)
        identity[member] = 1.0
        for subset, factor in _factors(domain.sizes, workload.axis_stats(index)):
            coef[tuple(int(i in subset) for i in attributes)] += w * cost[member] * factor
    # Residuals of one-level attributes have d_b = 0 (factor 0) and need nothing.
    need = coef > 0
    candidate = (cells <= MAX_MEASURED_CELLS) | (identity > 0)
    unit = cost / cost.max()  # the objective is scale-free in θ and in c; c spans up to 10^17 on Adult

    def objective(flat: np.ndarray):
        theta = flat.reshape(cost.shape)
        lam = _lattice(theta * theta * unit, supersets=True)
        if not np.all(lam[need] > 0):
            return math.inf, np.zeros_like(flat)
        total = theta.sum()
        safe = np.where(need, lam, 1.0)
        ratio = np.where(need, coef / safe, 0.0)
        grad = 2 * total * ratio.sum() - total * total * 2 * theta * unit * _lattice(ratio / safe, supersets=False)
        return total * total * ratio.sum(), grad.ravel()

    f0 = objective(identity.ravel())[0]  # relative tolerances: the identity's objective is 1
    bounds = [(0.0, None) if ok else (0.0, 0.0) for ok in candidate.ravel()]
    best, best_value = identity, f0
    for start in _starts(identity, candidate, np.random.default_rng(seed)):
        with threadpool_limits(limits=1, user_api="blas"):  # vectors of 2^k: threads only spin
            result = minimize(lambda x: tuple(v / f0 for v in objective(x)), start.ravel(), jac=True,
                              method="L-BFGS-B", bounds=bounds,
                              options={"maxiter": iterations, "ftol": 1e-13, "gtol": 1e-10})
        if result.fun * f0 < best_value:
            best, best_value = result.x.reshape(cost.shape), result.fun * f0
    theta = best / best.sum()
    lam_parts = theta ** 2 * cost
    lam = _lattice(lam_parts, supersets=True)
    # Drop a weight whose share of every eigenvalue it feeds is below PRUNE (the error is recomputed exactly).
    share = np.where(theta > 0, lam_parts / _lattice(np.where(need, lam, np.inf), supersets=False, combine=np.minimum),
                     0.0)
    theta = np.where(share >= PRUNE, theta, 0.0)
    optimised = MarginalsPlan(workload, 1.0, attributes, theta / theta.sum())
    baseline = MarginalsPlan(workload, 1.0, attributes, identity / identity.sum())
    try:
        better = optimised.expected_mse <= baseline.expected_mse
    except (ZeroDivisionError, FloatingPointError):
        better = False
    chosen = optimised if better and math.isfinite(optimised.expected_mse) else baseline
    chosen.theta.setflags(write=False)  # shared by every plan of this workload
    return attributes, chosen.theta


def _starts(identity: np.ndarray, candidate: np.ndarray, rng: np.random.Generator):
    """Where L-BFGS-B starts: identity (+ a little everywhere), uniform, the full table, seeded random ones."""
    yield np.where(candidate, 0.05, 0.0) + identity
    yield np.where(candidate, 1.0, 0.0)
    full = (1,) * identity.ndim
    if candidate[full]:
        table = np.where(candidate, 0.05, 0.0)
        table[full] = 1.0
        yield table
    count = RANDOM_STARTS_SMALL if candidate.sum() <= SMALL_CANDIDATES else RANDOM_STARTS
    for _ in range(count):
        yield np.where(candidate, rng.random(candidate.shape), 0.0)


def measure_marginals(plan: MarginalsPlan, records: np.ndarray, rng) -> list[np.ndarray]:
    """Laplace measurements of the plan's marginals, and each workload marginal by least squares.

    z_a = θ_a M_a x + Lap(Δ₁/ε) per cell. The estimate of marginal M is Σ_{b⊆M} (c_M/λ_b) · broadcast of
    Σ_{a⊇b} θ_a · centre_b(Σ_{a∖b} z_a) / ∏_{i∈a∖b} n_i: the residual components of Aᵀz scaled by (AᵀA)⁻¹.

    >>> from dplens.core.data.domain import Domain
    >>> w = MarginalWorkload(Domain(("a", "b"), (2, 3)), (("a", "b"),))
    >>> est = measure_marginals(plan_opt_marginals(w, rho=1e12), np.array([[0, 0], [1, 2], [1, 2]]),
    ...                         np.random.default_rng(0))[0]
    >>> (np.round(est, 2) + 0.0).tolist()
    [[1.0, 0.0, 0.0], [0.0, 0.0, 2.0]]
    """
    domain = plan.workload.domain
    records = check_records(domain, records)
    attributes = plan.attributes
    lam = plan.eigenvalues
    scale = plan.noise_scale
    # components[b]: Σ_{a⊇b} θ_a · centre_b(Σ_{a∖b} z_a) / ∏_{i∈a∖b} n_i, as a table over b (domain order)
    components: dict[tuple[int, ...], np.ndarray] = {}
    wanted = {s for m in plan.workload.marginals for s in subsets(domain.index(m))}
    for columns, theta in plan.measured():
        names = tuple(domain.names[i] for i in columns)
        counts = marginal_counts(domain, records, names)
        z = add_laplace(rng, theta * counts, scale)
        for subset in subsets(columns):
            if subset not in wanted:
                continue
            drop = tuple(k for k, i in enumerate(columns) if i not in subset)
            table = z.sum(axis=drop) if drop else z
            table = table / math.prod(domain.sizes[columns[k]] for k in drop)
            for axis in range(table.ndim):
                table = table - table.mean(axis=axis, keepdims=True)
            components[subset] = components.get(subset, 0.0) + theta * table
    estimates = []
    for marginal in plan.workload.marginals:
        columns = domain.index(marginal)
        c_m = math.prod(domain.sizes[i] for i in attributes if i not in columns)
        estimate = np.zeros(tuple(domain.sizes[i] for i in columns))
        for subset in subsets(columns):
            if subset not in components:
                continue
            index = tuple(int(i in subset) for i in attributes)
            shape = tuple(domain.sizes[i] if i in subset else 1 for i in columns)
            estimate = estimate + components[subset].reshape(shape) * (c_m / lam[index])
        estimates.append(estimate)
    return estimates
