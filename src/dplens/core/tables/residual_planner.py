"""ResidualPlanner (Xiao, Ding, Kifer et al., NeurIPS 2023, arXiv 2305.08175): the optimal Gaussian
strategy for weighted marginals under ρ-zCDP, sum-of-variance objective.

Every marginal M decomposes into orthogonal residuals R_S, S ⊆ M. Each residual in the closure of the
workload is measured once with Gaussian noise σ_S², chosen in closed form (Cauchy–Schwarz, paper §4),
and every marginal is rebuilt from its residuals. Nothing touches the full domain: a residual on S is
computed from the true marginal on S.

>>> from dplens.core.data.domain import Domain
>>> from dplens.core.queries.marginals import MarginalWorkload
>>> w = MarginalWorkload.all_kway(Domain(("a", "b", "c"), (2, 3, 4)), 1)
>>> plan = plan_residuals(w, rho=0.5)
>>> round(plan.total_variance, 6), round(plan.expected_rmse, 6)
(19.383242, 1.467547)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dplens.core.privacy.noise import add_gaussian
from dplens.core.queries.marginals import MarginalWorkload, check_records, marginal_counts, subsets
from dplens.core.tables.contract import PlannedError, check_rho


@dataclass(frozen=True)
class ResidualPlan(PlannedError):
    """The noise of every residual (σ_S² keyed by attribute-index tuples) and its exact error."""

    workload: MarginalWorkload
    rho: float
    sigma2: dict[tuple[int, ...], float]

    def residual_cost(self, subset: tuple[int, ...]) -> float:
        """p_S = ∏_{i∈S} (n_i−1)/n_i: the squared L2 sensitivity of the projected residual."""
        return _residual_cost(self.workload.domain.sizes, subset)

    @property
    def privacy_loss(self) -> float:
        """ρ spent: Σ_S p_S / (2σ_S²), computed from the σ actually used (≤ the budget ρ)."""
        return sum(self.residual_cost(s) / (2.0 * v) for s, v in self.sigma2.items())

    def cell_variance(self, marginal: tuple[str, ...]) -> float:
        """Variance of every cell of one reconstructed marginal (the same for all its cells)."""
        columns = self.workload.domain.index(marginal)
        sizes = self.workload.domain.sizes
        total = 0.0
        for subset in subsets(columns):
            spread = math.prod(sizes[i] ** -2 for i in columns if i not in subset)
            total += self.sigma2[subset] * self.residual_cost(subset) * spread
        return total

    def query_variance(self, index: int) -> float:
        """Σ over the queries of workload marginal ``index`` (cells, or ranges) of their variances."""
        stats = self.workload.axis_stats(index)
        return sum(v * query_factor(self.workload.domain.sizes, stats, s)
                   for s in subsets(tuple(c for c, _, _ in stats)) if math.isfinite(v := self.sigma2[s]))

    @property
    def total_variance(self) -> float:
        """Σ_M w_M · Σ over M's queries of their variances: the objective the plan minimises."""
        return sum(w * self.query_variance(i) for i, w in enumerate(self.workload.weights))



def query_factor(sizes: tuple[int, ...], stats, subset: tuple[int, ...]) -> float:
    """Σ over a marginal's queries of the variance that unit noise on residual S adds to them.

    The residual is rebuilt as C_S(z)/∏_{i∈M∖S} n_i broadcast over M; with the queries' Gram ⊗_i G_i this is
    ∏_{i∈S} (tr G_i − 1ᵀG_i1/n_i) · ∏_{i∈M∖S} 1ᵀG_i1/n_i² (for plain cells: ∏_{i∈S}(n_i−1) / ∏_{i∈M∖S} n_i).
    """
    factor = 1.0
    for column, trace, total in stats:
        n = sizes[column]
        factor *= (trace - total / n) if column in subset else total / (n * n)
    return factor


def _residual_cost(sizes: tuple[int, ...], subset: tuple[int, ...]) -> float:
    return math.prod((sizes[i] - 1) / sizes[i] for i in subset)


def plan_residuals(workload: MarginalWorkload, rho: float) -> ResidualPlan:
    """Closed-form optimal σ_S² for the sum-of-variance objective at ρ-zCDP.

    v_S = Σ_{M ⊇ S} w_M · query_factor(M, S) is the variance weight of residual S (for plain cells
    p_S ∏_{i∈S} n_i ∏_{i∈M∖S} 1/n_i; range marginals use their Gram factors) and p_S its privacy cost; minimising Σ v_S
    σ_S² subject to Σ p_S/σ_S² = 2ρ gives 1/σ_S² = 2ρ √(v_S/p_S) / Σ_T √(v_T p_T).
    """
    rho = check_rho(rho)
    sizes = workload.domain.sizes
    weight: dict[tuple[int, ...], float] = {}
    cost: dict[tuple[int, ...], float] = {}
    for index, w in enumerate(workload.weights):
        stats = workload.axis_stats(index)
        for subset in subsets(tuple(c for c, _, _ in stats)):
            cost[subset] = _residual_cost(sizes, subset)
            share = w * query_factor(sizes, stats, subset) / cost[subset] if cost[subset] > 0 else 0.0
            weight[subset] = weight.get(subset, 0.0) + share
    # A residual of a one-level attribute is identically zero (p_S = 0): it needs no measurement.
    # weight[S] is v_S / p_S, so √(v_S p_S) = p_S √weight[S] and √(v_S / p_S) = √weight[S].
    norm = sum(cost[s] * math.sqrt(weight[s]) for s in weight)  # Σ_T √(v_T p_T)
    sigma2 = {s: norm / (2 * rho * math.sqrt(weight[s])) if cost[s] > 0 else math.inf for s in weight}
    return ResidualPlan(workload, rho, sigma2)


def measure(plan: ResidualPlan, records: np.ndarray, rng: np.random.Generator) -> list[np.ndarray]:
    """Noisy marginals: measure each residual once, rebuild every workload marginal from its residuals.

    The residual on S is released as the centred marginal C_S(x_S + z), z ~ N(0, σ_S² I), which is the
    paper's R_S measurement up to the invertible map Sub_S (C = Sub⁺Sub centres along each axis).

    >>> from dplens.core.data.domain import Domain
    >>> from dplens.core.queries.marginals import MarginalWorkload
    >>> w = MarginalWorkload(Domain(("a", "b"), (2, 3)), (("a", "b"),))
    >>> records = np.array([[0, 0], [1, 2], [1, 2]])
    >>> est = measure(plan_residuals(w, rho=1e9), records, np.random.default_rng(0))[0]
    >>> (np.round(est, 2) + 0.0).tolist()
    [[1.0, 0.0, 0.0], [0.0, 0.0, 2.0]]
    """
    domain = plan.workload.domain
    records = check_records(domain, records)
    residuals: dict[tuple[int, ...], np.ndarray] = {}
    for subset, variance in plan.sigma2.items():
        if not math.isfinite(variance):
            continue
        names = tuple(domain.names[i] for i in subset)
        noisy = add_gaussian(rng, marginal_counts(domain, records, names), math.sqrt(variance))
        for axis in range(noisy.ndim):
            noisy = noisy - noisy.mean(axis=axis, keepdims=True)
        residuals[subset] = noisy
    estimates = []
    for marginal in plan.workload.marginals:
        columns = domain.index(marginal)
        estimate = np.zeros(tuple(domain.sizes[i] for i in columns))
        for subset in subsets(columns):
            if subset not in residuals:
                continue
            shape = tuple(domain.sizes[i] if i in subset else 1 for i in columns)
            spread = math.prod(domain.sizes[i] for i in columns if i not in subset)
            estimate = estimate + residuals[subset].reshape(shape) / spread
        estimates.append(estimate)
    return estimates
