"""Mechanisms on tables of records, one contract (dplens.core.tables.contract), one registry.

Every entry answers a :class:`~dplens.core.queries.marginals.MarginalWorkload` at a ρ-zCDP budget:
``run(records, workload, rho, rng) -> Release``, ``expected_mse(workload, rho)`` (per query, a closed form, or
None when the error depends on the data), and ``data_dependent`` / ``synthesizes`` flags.

>>> from dplens.core.data.domain import Domain
>>> from dplens.core.queries.marginals import MarginalWorkload
>>> w = MarginalWorkload.all_kway(Domain(("a", "b", "c"), (2, 3, 4)), 2)
>>> [round(math.sqrt(TABLE_MECHANISMS[n].expected_mse(w, 0.5)), 4) for n in ("gaussian-marginals", "residual-planner")]
[1.7321, 1.3985]

Each class states its settings' valid values on their fields (``setting(default, range)``, as the histogram
mechanisms do) and a one-line ``summary``; :func:`table_mechanism` builds one from them. ``dplens.core.registry`` lists
these beside the histogram mechanisms.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from dplens.core.catalogue import add, view
from dplens.core.mechanisms import MECHANISMS, Range, Release, configure
from dplens.core.mechanisms.contract import laplace_epsilon, parameter_ranges, setting
from dplens.core.mechanisms.measurement import (
    GaussianMeasurement,
    LaplaceMeasurement,
    NoisyAnswers,
    composed_loss,
    relabelled,
)
from dplens.core.privacy.definitions import ZCDP
from dplens.core.privacy.noise import add_gaussian, noise_kind
from dplens.core.queries.marginals import MarginalWorkload
from dplens.core.tables.contract import INTERVAL_LEVEL, check_rho, marginal_release
from dplens.core.tables.opt_marginals import measure_marginals, plan_opt_marginals
from dplens.core.tables.residual_planner import measure, plan_residuals
from dplens.core.tables.synthesis import AIM, MST, IdentityPGM


def identity_sigma(workload: MarginalWorkload, rho: float) -> float:
    """σ of i.i.d. Gaussian noise on every marginal cell at ρ: Δ₂ / √(2ρ), Δ₂ = √K for K marginals.

    The cells released are unweighted, so their sensitivity is (add/remove one record changes one cell of each
    marginal by 1); the workload's weights do not lower it.

    >>> from dplens.core.data.domain import Domain
    >>> w = MarginalWorkload(Domain(("a", "b"), (2, 3)), (("a", "b"), ("b",)), weights=(0.1, 0.1))
    >>> round(identity_sigma(w, 0.5), 4)  # √2 / √(2 · 0.5), not √(0.1² + 0.1²) / 1
    1.4142
    """
    return workload.cells_l2_sensitivity / math.sqrt(2 * check_rho(rho))


def identity_privacy_loss(workload: MarginalWorkload, sigma: float) -> float:
    """ρ-zCDP loss of i.i.d. Gaussian noise σ on every marginal cell: Δ₂² / (2σ²), Δ₂ = √K (add/remove one record)."""
    return workload.cells_l2_sensitivity ** 2 / (2 * sigma * sigma)


def identity_marginals(workload: MarginalWorkload, records: np.ndarray, rho: float, rng: np.random.Generator):
    """Each workload marginal plus i.i.d. Gaussian noise, σ² = K / (2ρ) per cell (ρ-zCDP; the K unweighted
    marginals have L2 sensitivity √K under add/remove).

    Returns the noisy marginals and the per-cell standard deviation (the same for every cell).

    >>> from dplens.core.data.domain import Domain
    >>> w = MarginalWorkload.all_kway(Domain(("a", "b"), (2, 2)), 1)
    >>> round(identity_marginals(w, np.array([[0, 1]]), 1.0, np.random.default_rng(0))[1], 4)
    1.0
    """
    sigma = identity_sigma(workload, rho)
    return [add_gaussian(rng, m, sigma) for m in workload.answer(records)], sigma


@dataclass(frozen=True)
class IdentityMarginals:
    """Gaussian noise on every cell of every workload marginal (the baseline every strategy must beat).

    Every marginal is measured at one σ = √K / √(2ρ): the weights, which steer the strategy mechanisms, change
    nothing here (the params say so).
    """

    summary: ClassVar[str] = "Gaussian noise on every marginal cell; error in closed form."
    name = "gaussian-marginals"
    data_dependent = False
    synthesizes = False

    def expected_mse(self, workload: MarginalWorkload, rho: ZCDP | float) -> float:
        """σ² per cell; a range of L cells sums L independent noises, so ranges average σ² tr(QᵀQ) / m."""
        traces = sum(math.prod(t for _, t, _ in workload.axis_stats(i)) for i in range(len(workload.marginals)))
        return identity_sigma(workload, check_rho(rho)) ** 2 * traces / workload.queries

    def run(self, records: np.ndarray, workload: MarginalWorkload, rho: ZCDP | float,
            rng: np.random.Generator) -> Release:
        rho = check_rho(rho)
        estimates, sigma = identity_marginals(workload, records, rho, rng)
        metadata = {"privacy": "rho-zCDP (Gaussian), add/remove one record", "sigma": sigma,
                    "l2_sensitivity": workload.cells_l2_sensitivity,
                    "weights": "not used: every marginal cell is measured at one sigma",
                    "intervals": "exact (Gaussian noise, count ± z·std)"}
        measured = (NoisyAnswers(f"every cell of the {len(estimates)} workload marginals", GaussianMeasurement(sigma),
                                 workload.cells_l2_sensitivity, np.concatenate([np.ravel(e) for e in estimates])),)
        return marginal_release(self.name, rho, identity_privacy_loss(workload, sigma), workload, estimates,
                                stds=[sigma] * len(estimates), params=metadata, measurements=measured)


class PlannedMarginals:
    """A data-independent table mechanism as strategy → measurement → inference: ``plan`` chooses the strategy and
    its noise from the workload and ρ (its error and privacy loss in closed form), ``measured`` draws the noisy
    marginals from the records, ``stds`` and ``about`` describe the release."""

    data_dependent = False
    synthesizes = False
    name: ClassVar[str]

    def plan(self, workload: MarginalWorkload, rho: float) -> Any:
        raise NotImplementedError

    def measured(self, plan: Any, records: np.ndarray, rng: np.random.Generator) -> list[np.ndarray]:
        raise NotImplementedError

    def stds(self, plan: Any, workload: MarginalWorkload) -> list[float]:
        raise NotImplementedError

    def about(self, plan: Any, workload: MarginalWorkload) -> dict:
        raise NotImplementedError

    def measurements(self, plan: Any) -> tuple[NoisyAnswers, ...]:
        raise NotImplementedError

    def expected_mse(self, workload: MarginalWorkload, rho: ZCDP | float) -> float:
        return self.plan(workload, check_rho(rho)).expected_mse

    def run(self, records: np.ndarray, workload: MarginalWorkload, rho: ZCDP | float,
            rng: np.random.Generator) -> Release:
        rho = check_rho(rho)
        plan = self.plan(workload, rho)
        estimates = self.measured(plan, records, rng)
        return marginal_release(self.name, rho, plan.privacy_loss, workload, estimates,
                                stds=self.stds(plan, workload), params=self.about(plan, workload),
                                measurements=self.measurements(plan))


@dataclass(frozen=True)
class ResidualPlannerMechanism(PlannedMarginals):
    """ResidualPlanner (Xiao et al., NeurIPS 2023): the optimal Gaussian strategy for marginals (sum of variances)."""

    summary: ClassVar[str] = "The optimal Gaussian strategy for marginals (ResidualPlanner); error in closed form."
    name = "residual-planner"

    def plan(self, workload: MarginalWorkload, rho: float) -> Any:
        return plan_residuals(workload, rho)

    def measured(self, plan: Any, records: np.ndarray, rng: np.random.Generator) -> list[np.ndarray]:
        return measure(plan, records, rng)

    def stds(self, plan: Any, workload: MarginalWorkload) -> list[float]:
        return [math.sqrt(plan.cell_variance(m)) for m in workload.marginals]

    def about(self, plan: Any, workload: MarginalWorkload) -> dict:
        return {"privacy": "rho-zCDP (Gaussian), add/remove one record", "residuals": len(plan.sigma2),
                "intervals": "exact (Gaussian noise, count ± z·std)"}

    def measurements(self, plan: Any) -> tuple[NoisyAnswers, ...]:
        """One Gaussian measurement per residual: σ_S, and Δ₂ = √p_S (Xiao et al. 2023, Thm. 4.3)."""
        names = plan.workload.domain.names
        return tuple(NoisyAnswers("the residual on " + ("+".join(names[i] for i in subset) or "the total"),
                                  GaussianMeasurement(math.sqrt(variance)), math.sqrt(plan.residual_cost(subset)))
                     for subset, variance in plan.sigma2.items() if math.isfinite(variance))


@dataclass(frozen=True)
class HDMMMarginals(PlannedMarginals):
    """HDMM's marginals strategy OPT_M (McKenna et al., VLDB 2018) with Laplace noise at ε = √(2ρ), least squares."""

    summary: ClassVar[str] = "HDMM's marginals strategy with Laplace noise (pure DP); error in closed form."
    name = "hdmm-marginals"

    def plan(self, workload: MarginalWorkload, rho: float) -> Any:
        return plan_opt_marginals(workload, rho)

    def measured(self, plan: Any, records: np.ndarray, rng: np.random.Generator) -> list[np.ndarray]:
        return measure_marginals(plan, records, rng)

    def stds(self, plan: Any, workload: MarginalWorkload) -> list[float]:
        return [math.sqrt(plan.marginal_variance(m)) for m in workload.marginals]

    def about(self, plan: Any, workload: MarginalWorkload) -> dict:
        return {"privacy": f"pure epsilon-DP (Laplace), epsilon = sqrt(2 rho) = {plan.epsilon:.6g}, "
                           "add/remove one record", "epsilon": plan.epsilon, "l1_sensitivity": plan.l1_sensitivity,
                "measured": [{"marginal": "|".join(workload.domain.names[i] for i in columns), "weight": theta}
                             for columns, theta in plan.measured()],
                "intervals": "count ± z·std: std exact, the normal shape an approximation (each cell's noise is a "
                             "least-squares sum of Laplace noises)"}

    def measurements(self, plan: Any) -> tuple[NoisyAnswers, ...]:
        """The θ-weighted marginals in one Laplace draw at b = Δ₁/ε: Δ₁ = Σ θ_a (McKenna et al. 2018, Sec. 6)."""
        return (NoisyAnswers(f"the {len(plan.measured())} marginals OPT_M measures, weighted by θ",
                             LaplaceMeasurement(plan.noise_scale), plan.l1_sensitivity),)


@dataclass(frozen=True)
class MarginalHistograms:
    """A registered 1-D/2-D histogram mechanism (default hb) on each 1- or 2-way marginal, ρ split equally.

    Marginal i gets ρ_i = ρ/K and runs at ``ZCDP(ρ_i)`` (a Laplace mechanism at
    ε_i = √(2ρ_i)); its workload is every cell of the marginal (2-way marginals are row-major grids). zCDP
    composes by addition, and the ρ reported is Σ_i of each release's own loss.
    """

    # the built-in histogram mechanisms (dplens.core.registry.register adds no choice here)
    method: str = setting("hb", Range(choices=tuple(MECHANISMS)))
    summary: ClassVar[str] = "A histogram mechanism (hb by default) on each 1- or 2-way marginal; ρ split equally."
    name = "histograms"
    synthesizes = False

    def __post_init__(self) -> None:
        if self.method not in MECHANISMS:
            raise ValueError(f"method {self.method!r} is not a histogram mechanism; one of: {', '.join(MECHANISMS)}")

    @property
    def data_dependent(self) -> bool:
        return bool(MECHANISMS[self.method].data_dependent)

    def _each(self, workload: MarginalWorkload, rho: ZCDP | float):
        from dplens.core.mechanisms.measurement import supported_privacy

        rho = check_rho(rho)
        wide = [m for m in workload.marginals if len(m) > 2]
        if wide:
            raise ValueError(f"histogram mechanisms release 1- or 2-way marginals; {'+'.join(wide[0])} is "
                             f"{len(wide[0])}-way (use residual-planner, gaussian-marginals or a synthesiser)")
        mechanism = MECHANISMS[self.method]
        return mechanism, supported_privacy(mechanism, ZCDP(rho / len(workload.marginals)))

    def expected_mse(self, workload: MarginalWorkload, rho: ZCDP | float) -> float | None:
        mechanism, epsilon = self._each(workload, rho)
        total = 0.0
        for index in range(len(workload.marginals)):
            queries = workload.queries_on(index)
            mse = mechanism.expected_mse(queries, epsilon) if hasattr(mechanism, "expected_mse") else None
            if mse is None:
                return None
            total += mse * queries.shape[0]
        return total / workload.queries

    def run(self, records: np.ndarray, workload: MarginalWorkload, rho: ZCDP | float,
            rng: np.random.Generator) -> Release:
        rho = check_rho(rho)
        mechanism, epsilon = self._each(workload, rho)
        estimates, measured, halfwidths = [], [], []
        for index, truth in enumerate(workload.answer(records)):
            # Plain 2-way marginals go in as grids (2-D-aware mechanisms use the shape); range marginals as the
            # vector their range operator acts on, and the mechanism's own cell estimate comes back.
            ranged = workload.ranges[index] is not None
            x = workload.query_order(index, truth) if ranged else truth
            release = mechanism.run(x, workload.queries_on(index), epsilon, rng)
            # each marginal's own records, named by it; their maps give the ρ of the noise drawn (a Laplace
            # measurement at ε is ε²/2-zCDP, Bun & Steinke 2016 Prop. 1.4) and zCDP composes by addition
            measured += [relabelled(record, "+".join(workload.marginals[index])) for record in release.measurements]
            if not ranged:
                estimates.append(np.asarray(release.answers, dtype=float).reshape(truth.shape))
            elif release.estimate is None:
                raise ValueError(f"{self.method} answers ranges without estimating the cells; choose another "
                                 "method for range marginals (hb, privelet, dawa, ...)")
            else:
                estimates.append(workload.from_query_order(index, np.ravel(release.estimate)))
            halfwidths.append(_cell_halfwidths(mechanism, release, workload, index))
        exact = all(h is not None for h in halfwidths)
        each = f"epsilon {laplace_epsilon(epsilon):.6g}" if noise_kind(mechanism) == "laplace" else \
            f"rho {epsilon.rho:.6g}"
        metadata = {"privacy": f"rho-zCDP: {self.method} on each marginal at rho/{len(estimates)} "
                               f"({each} each), add/remove one record", "method": self.method,
                    "epsilon_each": laplace_epsilon(epsilon) if noise_kind(mechanism) == "laplace" else None,
                    "intervals": "exact quantiles of the strategy's noise per cell" if exact else
                                 "none (data-dependent method: its error depends on the data)"}
        return marginal_release(self.name, rho, composed_loss(measured, ZCDP(rho)), workload, estimates,
                                params=metadata, halfwidths=halfwidths if exact else None,  # type: ignore[arg-type]  # exact: none is None
                                measurements=tuple(measured))


def _cell_halfwidths(mechanism, release, workload: MarginalWorkload, index: int) -> np.ndarray | None:
    """Exact per-cell half-widths at INTERVAL_LEVEL of one marginal's release, shaped like the marginal; None for
    data-dependent methods. Plain Laplace/Gaussian per cell, or the strategy's noise
    (dplens.core.analysis.strategy_noise)."""
    from dplens.core.analysis.intervals import bin_halfwidths
    from dplens.core.analysis.strategy_noise import strategy_halfwidths

    half = bin_halfwidths(release, INTERVAL_LEVEL)  # None without a cell estimate, or without plain noise per cell
    if half is None:
        half = strategy_halfwidths(mechanism, release, workload.queries_on(index), values="bins",
                                   level=INTERVAL_LEVEL)
    if half is None:
        return None
    return workload.from_query_order(index, half) if workload.ranges[index] is not None else \
        np.asarray(half, dtype=float).reshape(workload.domain.sizes_of(workload.marginals[index]))


# The built-in table mechanisms, stored in the one catalogue (dplens.core.catalogue) beside the histogram ones.
for _builtin in (IdentityMarginals(), ResidualPlannerMechanism(), HDMMMarginals(), MarginalHistograms(), IdentityPGM(),
                 MST(), AIM()):
    add(_builtin, "table")
del _builtin
# Read by name here and in dplens.core.tables.compare (below the registry); read-only and always current, since
# dplens.core.registry.register adds to the same catalogue.
TABLE_MECHANISMS: Mapping[str, Any] = view("table")


def table_mechanism(name: str, **settings: object):
    """The registered mechanism ``name``, built with ``settings``: the settings whose range it declares
    (:func:`~dplens.core.mechanisms.contract.parameter_ranges`; strings are converted, values range-checked;
    anything else is refused).

    >>> table_mechanism("mst", measure_split="0.5").measure_split
    0.5
    >>> table_mechanism("mst", rounds=3)
    Traceback (most recent call last):
    ValueError: rounds is not a setting of mst (mst takes measure_split, iters)
    """
    if name not in TABLE_MECHANISMS:
        raise ValueError(f"mechanism {name!r} is not a table mechanism; one of: {', '.join(TABLE_MECHANISMS)}")
    mechanism = TABLE_MECHANISMS[name]
    allowed = parameter_ranges(mechanism)
    unknown = sorted(set(settings) - set(allowed))
    if unknown:
        takes = ", ".join(allowed) or "no settings"
        raise ValueError(f"{unknown[0]} is not a setting of {name} ({name} takes {takes})")
    return configure(mechanism, settings) if settings else mechanism
