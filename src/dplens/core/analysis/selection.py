"""Choosing epsilon: from an accuracy target, from a re-identification risk (Lee & Clifton), and back.

Three tools, all pure functions:

* **Accuracy → epsilon** (``epsilon_for_accuracy``): one generic monotone search (``smallest_epsilon``,
  as OpenDP's ``binary_search_param``) over the mechanism's analytic error (``expected_mse``), the
  Laplace tail bound for "±a with probability 1−β", or seeded simulations when no formula exists.
  ``accuracy_for_epsilon`` is the inverse, with per-bin and simultaneous (union-bound) intervals.
* **Risk → epsilon** (Lee & Clifton, ISC 2011, as surveyed in Zhao, Sec. 3): the adversary
  knows the universe except who is missing and sees ``f(X′) + Lap(Δf/ε)``. Eq. (7) gives the **largest**
  epsilon that keeps the posterior below ρ under a worst-case bound; the tight search (Eq. 3) gives a
  larger one. The bound is conservative in utility, not in privacy: Lee & Clifton (and Zhao after them)
  call Eq. (7) a minimum ε and say it overstates the ε needed; numerically it is a maximum and smaller.
* **Usefulness** (Xiao, Xiong & Yuan, Secs. 4.1 and 5.4) lives in ``dplens.core.analysis.usefulness`` and is
  re-exported here.

>>> worlds = possible_worlds([1, 2, 3, 10], "mean")
>>> round(lee_clifton_epsilon_upper(1 / 3, worlds.sensitivity, worlds.value_spread, worlds.n), 7)
0.3829393
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np

from dplens.core.analysis.metrics import mae, max_abs, rmse

# Xiao et al. usefulness bounds (Secs. 4.1 and 5.4 of their report): one implementation, in
# dplens.core.analysis.usefulness
from dplens.core.analysis.usefulness import (  # noqa: F401  (re-exported)
    interval_failure_probability,
    interval_min_records,
    interval_sensitivity_bound,
    max_query_lemma42,
    max_query_min_records,
)
from dplens.core.mechanisms import Mechanism, check_epsilon, check_inputs
from dplens.core.mechanisms.contract import laplace_epsilon
from dplens.core.privacy.definitions import PURE_AXIS, EpsilonAxis
from dplens.core.queries.workloads import Identity as IdentityWorkload  # noqa: F401  (the doctests' workload)
from dplens.core.queries.workloads import Workload, queries_are_cells, workload_grid
from dplens.core.search import bisect_monotone
from dplens.core.validate import fraction

ACCURACY_METRICS: dict[str, Callable[..., float]] = {"rmse": rmse, "mae": mae, "max_abs": max_abs}
LC_QUERIES: dict[str, Callable[[np.ndarray], float]] = {
    "mean": lambda v: float(np.mean(v)),
    "median": lambda v: float(np.median(v)),
    "count": lambda v: float(len(v)),
    "sum": lambda v: float(np.sum(v)),
}
MAX_UNIVERSE = 200  # the paper's Δf enumerates all (n−1)-subsets and removals: O(n²) query evaluations


# ----------------------------------------------------------------------------- generic monotone search
def smallest_epsilon(error_at: Callable[[float], float], target: float, *,
                     low: float = 1e-4, high: float = 100.0, tolerance: float = 1e-12) -> float:
    """Smallest epsilon in [low, high] whose error is at most `target`.

    Assumes `error_at` is non-increasing in epsilon (true for every mechanism in MECHANISMS). Bisects
    on log(epsilon) to a relative precision of `tolerance`.

    >>> round(smallest_epsilon(lambda e: 1 / e, target=0.5), 6)
    2.0

    Raises:
        ValueError: when even `high` misses the target, or the bounds are invalid.
    """
    check_epsilon(low, "low")
    check_epsilon(high, "high")
    if not low < high:
        raise ValueError(f"low must be < high, got low={low!r}, high={high!r}")
    if not (math.isfinite(target) and target > 0):
        raise ValueError(f"target must be finite and > 0, got {target!r}")
    if error_at(high) > target:
        raise ValueError(f"target {target:g} is not reached even at epsilon={high:g} "
                         f"(error there is {error_at(high):.4g}); raise the target or the upper limit")
    if error_at(low) <= target:
        return float(low)
    _, hi = bisect_monotone(lambda t: error_at(math.exp(t)) <= target, math.log(low), math.log(high),
                            true_side="high", atol=tolerance, max_steps=10_000)
    return math.exp(hi)


def _largest_epsilon(risk_at: Callable[[float], float], target: float, high: float) -> float:
    """Largest epsilon in [0, high] with a non-decreasing `risk_at` still at most `target`."""
    return bisect_monotone(lambda e: risk_at(e) <= target, 0.0, high, true_side="low", rtol=1e-13, atol=1e-13)[0]


# ----------------------------------------------------------------------------- Lee & Clifton
@dataclass(frozen=True, eq=False)
class PossibleWorlds:
    """The adversary model of Lee & Clifton: each world ω_i is the universe minus one individual.

    ``world_values[i] = f(U without universe[i])``; ``sensitivity`` is the paper's Δf (universe-based,
    removal-only, not the global sensitivity over an attribute range) and ``value_spread`` is Δv = max_ij |f_i − f_j|.
    """

    universe: tuple[float, ...]
    query: str
    world_values: np.ndarray
    sensitivity: float
    value_spread: float

    @property
    def n(self) -> int:
        """Number of possible worlds (= size of the universe)."""
        return len(self.universe)


def _check_universe(universe: Sequence[float]) -> np.ndarray:
    values = np.asarray(universe, dtype=float)
    if values.ndim != 1 or not 3 <= values.size <= MAX_UNIVERSE:  # Δf removes a 2nd record from a world
        raise ValueError(f"universe must be a list of 3 to {MAX_UNIVERSE} values, got {values.size}")
    if not np.all(np.isfinite(values)):
        raise ValueError("universe values must be finite numbers")
    return values


def possible_worlds(universe: Sequence[float], query: str = "mean") -> PossibleWorlds:
    """Worlds, Δf and Δv for a query over a small universe (Lee & Clifton's possible-worlds model).

    World i leaves out ``universe[i]``. Δf = max over (n−1)-subsets Y and t ∈ Y of |f(Y) − f(Y without t)|
    (the paper's definition, not the global sensitivity over an attribute range).

    >>> w = possible_worlds([1, 2, 3, 10], "mean")
    >>> w.world_values.round(4).tolist(), round(w.sensitivity, 6), w.value_spread
    ([5.0, 4.6667, 4.3333, 2.0], 2.833333, 3.0)
    """
    values = _check_universe(universe)
    if query not in LC_QUERIES:
        raise ValueError(f"query must be one of {', '.join(LC_QUERIES)}, got {query!r}")
    f = LC_QUERIES[query]
    n = values.size
    worlds = [np.delete(values, i) for i in range(n)]
    world_values = np.array([f(y) for y in worlds])
    sensitivity = max(abs(f(y) - f(np.delete(y, t))) for y in worlds for t in range(n - 1))
    spread = float(world_values.max() - world_values.min())
    world_values.setflags(write=False)
    return PossibleWorlds(tuple(values.tolist()), query, world_values, float(sensitivity), spread)


def _check_lc(sensitivity: float, n: int | None = None) -> None:
    if not (math.isfinite(sensitivity) and sensitivity > 0):
        raise ValueError(f"sensitivity (Δf) must be finite and > 0, got {sensitivity!r}")
    if n is not None and not (isinstance(n, int | np.integer) and n >= 2):
        raise ValueError(f"n (number of possible worlds) must be an integer >= 2, got {n!r}")


def _check_rho(rho: float, n: int) -> None:
    if not 1 / n < rho < 1:
        raise ValueError(f"rho must be in (1/n, 1) = ({1 / n:.4g}, 1), got {rho!r}; "
                         "at rho <= 1/n no epsilon > 0 meets the target (the prior is already 1/n)")


def _world_values(world_values: Sequence[float] | np.ndarray) -> np.ndarray:
    values = np.asarray(world_values, dtype=float)
    if values.ndim != 1 or values.size < 2 or not np.all(np.isfinite(values)):
        raise ValueError("world_values must be at least 2 finite numbers (one query answer per world)")
    return values


def _nonnegative_epsilons(epsilon) -> np.ndarray:
    eps = np.asarray(epsilon, dtype=float)
    if not np.all(np.isfinite(eps) & (eps >= 0)):
        raise ValueError(f"epsilon must be finite and >= 0, got {epsilon!r}")
    return eps


def _scalar_or_array(out: np.ndarray):
    return float(out) if out.ndim == 0 else out


def lee_clifton_posterior(gamma: float, world_values: Sequence[float] | np.ndarray, epsilon: float,
                          sensitivity: float) -> np.ndarray:
    """Posterior β(ω_i) over the worlds after seeing the noisy answer γ (uniform prior; Lee & Clifton).

    Reproduces Lee & Clifton's Table 3 at γ = 2:

    >>> w = possible_worlds([1, 2, 3, 10], "mean")
    >>> np.round(lee_clifton_posterior(2.0, w.world_values[::-1], 2.0, w.sensitivity), 4).tolist()
    [0.6825, 0.1315, 0.1039, 0.0821]
    """
    values = _world_values(world_values)
    check_epsilon(epsilon)
    _check_lc(sensitivity)
    if not math.isfinite(gamma):
        raise ValueError(f"gamma (the noisy answer) must be finite, got {gamma!r}")
    logits = -epsilon * np.abs(gamma - values) / sensitivity
    weights = np.exp(logits - logits.max())  # shift for stability; the ratio is unchanged
    return weights / weights.sum()


def lee_clifton_risk_upper(epsilon, sensitivity: float, value_spread: float, n: int):
    """Eq. (5): β_upper(ε) = 1 / (1 + (n−1)·exp(−ε Δv/Δf)), an upper bound on the adversary's posterior.

    Accepts a scalar or an array of epsilons (≥ 0) for curves.

    >>> round(lee_clifton_risk_upper(0.5, 17 / 6, 3.0, 4), 7)
    0.3614213
    """
    _check_lc(sensitivity, n)
    if not (math.isfinite(value_spread) and value_spread >= 0):
        raise ValueError(f"value_spread (Δv) must be finite and >= 0, got {value_spread!r}")
    eps = _nonnegative_epsilons(epsilon)
    return _scalar_or_array(1.0 / (1.0 + (n - 1) * np.exp(-eps * value_spread / sensitivity)))


def lee_clifton_risk_tight(epsilon, world_values: Sequence[float] | np.ndarray, sensitivity: float):
    """Eq. (3): the worst-case posterior max_i 1/(1 + Σ_{k≠i} exp(−ε|f_i − f_k|/Δf)) (sup over γ).

    >>> round(lee_clifton_risk_tight(0.5, [2, 13 / 3, 14 / 3, 5], 17 / 6), 7)
    0.3476971
    """
    values = _world_values(world_values)
    _check_lc(sensitivity)
    eps = _nonnegative_epsilons(epsilon)
    gaps = np.abs(values[:, None] - values[None, :]) / sensitivity  # includes k = i (exp(0) = 1)
    sums = np.exp(-np.multiply.outer(eps, gaps)).sum(axis=-1)  # shape eps.shape + (n,)
    return _scalar_or_array(np.max(1.0 / sums, axis=-1))


def lee_clifton_epsilon_upper(rho: float, sensitivity: float, value_spread: float, n: int) -> float:
    """Eq. (7): the **largest** ε meeting risk ρ under the bound, (Δf/Δv)·ln((n−1)ρ/(1−ρ)).

    Lee & Clifton (and Zhao) call this a minimum epsilon; it is a maximum, and it is smaller than the tight
    value, so it costs utility, never privacy.

    >>> round(lee_clifton_epsilon_upper(1 / 3, 5 / 6, 1.0, 4), 7)
    0.3378876
    """
    _check_lc(sensitivity, n)
    if not (math.isfinite(value_spread) and value_spread > 0):
        raise ValueError(f"value_spread (Δv) must be > 0, got {value_spread!r}; when every world gives "
                         "the same answer the query reveals nothing about who is missing")
    _check_rho(rho, n)
    return sensitivity / value_spread * math.log((n - 1) * rho / (1 - rho))


def lee_clifton_epsilon_tight(rho: float, world_values: Sequence[float] | np.ndarray, sensitivity: float) -> float:
    """Largest ε with β_tight(ε) ≤ ρ, by bisection (β_tight is non-decreasing in ε; Lee & Clifton, Eq. 3).

    Returns ``math.inf`` when no epsilon can exceed ρ: β_tight tends to 1/(size of the smallest group of
    worlds with equal answers), e.g. 1/2 for the median example and 1/n for a count.

    >>> round(lee_clifton_epsilon_tight(1 / 3, [2, 13 / 3, 14 / 3, 5], 17 / 6), 7)
    0.4317201
    """
    values = _world_values(world_values)
    _check_lc(sensitivity)
    _check_rho(rho, values.size)
    _, multiplicity = np.unique(values, return_counts=True)
    if rho >= 1.0 / multiplicity.min():
        return math.inf
    spread = float(values.max() - values.min())
    high = max(lee_clifton_epsilon_upper(rho, sensitivity, spread, values.size), 1e-6)
    while lee_clifton_risk_tight(high, values, sensitivity) <= rho:  # double until the risk is exceeded
        high *= 2.0
    return _largest_epsilon(lambda e: lee_clifton_risk_tight(e, values, sensitivity), rho, high)


# ----------------------------------------------------------------------------- accuracy ↔ epsilon
def laplace_answer_scale(mechanism: Mechanism, workload: Workload, epsilon: float, *,
                         axis: EpsilonAxis = PURE_AXIS) -> tuple[float, str] | None:
    """(b, unit) when every released value carries independent Lap(b) noise, else None.

    The Laplace histogram ("identity") adds Lap(1/ε) to every bin; "laplace-on-answers" adds
    Lap(Δ₁(W)/ε) to every answer. Other mechanisms' errors are not plain Laplace.

    >>> from dplens.core.mechanisms.laplace import LaplaceIdentity, LaplaceOnAnswers
    >>> laplace_answer_scale(LaplaceOnAnswers(), IdentityWorkload(3), 0.5)
    (2.0, 'answer')

    ``epsilon`` is a point on ``axis``: under zCDP the Laplace histogram at ρ (its "ε at δ") is Lap(1/ε') on every
    bin with ε' = √(2ρ), and under (ε, δ) it is pure Laplace at ε.

    >>> from dplens.core.privacy.definitions import EpsilonAxis
    >>> laplace_answer_scale(LaplaceIdentity(), IdentityWorkload(3), 1.0, axis=EpsilonAxis("zcdp", 1e-6))
    (4.53..., 'bin')
    """
    privacy = axis.privacy(check_epsilon(epsilon))
    # the class says where its noise is i.i.d. (iid_noise_on) and at which scale (noise_scale); the Gaussian
    # variants inherit both but not Laplace noise
    where = getattr(mechanism, "iid_noise_on", None)
    if where is None or getattr(mechanism, "noise", "laplace") != "laplace":
        return None
    epsilon = laplace_epsilon(privacy)
    return mechanism.noise_scale(workload, epsilon), "answer" if where == "answers" else "bin"  # type: ignore[attr-defined]  # it declares iid_noise_on


def laplace_error_bound(scale: float, confidence: float, count: int = 1) -> float:
    """Half-width a with P(some of `count` Lap(scale) errors exceeds a) ≤ 1 − confidence.

    Per value (count = 1) a = b·ln(1/β) exactly; for `count` values at once the union bound gives
    a = b·ln(count/β) (β = 1 − confidence; P(|Lap(b)| > t) = e^{−t/b}).

    >>> round(laplace_error_bound(1.0, 0.95), 4), round(laplace_error_bound(1.0, 0.95, count=100), 4)
    (2.9957, 7.6009)
    """
    fraction("confidence", confidence)
    if not scale > 0:
        raise ValueError(f"scale must be > 0, got {scale!r}")
    if not (isinstance(count, int | np.integer) and count >= 1):
        raise ValueError(f"count must be an integer >= 1, got {count!r}")
    return scale * math.log(count / (1.0 - confidence))


def laplace_confidence_intervals(noisy: np.ndarray, scale: float, confidence: float = 0.95, *,
                                 simultaneous: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Per-value or simultaneous (union-bound) intervals around Laplace-noised values.

    >>> lo, hi = laplace_confidence_intervals(np.array([10.0]), 1.0, 0.95)
    >>> round(float(hi[0] - 10), 4)
    2.9957
    """
    noisy = np.asarray(noisy, dtype=float)
    half = laplace_error_bound(scale, confidence, noisy.size if simultaneous else 1)
    return noisy - half, noisy + half


class NeedsDataError(ValueError):
    """No formula gives this mechanism's error: epsilon can only be estimated by simulating on the data.

    ``reason`` says why in words for people ("is data-dependent: its error depends on the data").
    """

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True, eq=False)
class EpsilonChoice:
    """Result of ``epsilon_for_accuracy``: the epsilon and the curve it was read from."""

    epsilon: float
    target: float
    metric: str
    confidence: float | None
    method: str  # "analytic", "laplace bound" or "simulation"
    epsilons: np.ndarray  # the curve's x (geometric grid)
    errors: np.ndarray  # the curve's y, same quantity as the target
    note: str = ""


def tradeoff(mechanism: Mechanism, workload: Workload, epsilons: Sequence[float], *,
             axis: EpsilonAxis = PURE_AXIS) -> np.ndarray:
    """Expected per-query RMSE sqrt(expected_mse) at each epsilon on ``axis`` (analytic; data-independent only).

    >>> from dplens.core.mechanisms.laplace import LaplaceIdentity, LaplaceOnAnswers
    >>> tradeoff(LaplaceOnAnswers(), IdentityWorkload(2), [1.0, 2.0]).round(4).tolist()
    [1.4142, 0.7071]
    """
    if mechanism.expected_mse(workload, axis.privacy(1.0)) is None:
        raise ValueError(f"mechanism {mechanism.name!r} has no analytic error (expected_mse is None)")
    # not None at any ε (checked at 1.0 above)
    return np.array([math.sqrt(mechanism.expected_mse(workload, axis.privacy(check_epsilon(e))))  # type: ignore[arg-type]
                     for e in epsilons])


def _simulated_error(mechanism, workload, x, metric, confidence, seeds, axis):
    """Error at ε from seeded runs; the same seeds at every ε (common random numbers) keep it monotone."""
    truth = workload.matvec(x)

    def error_at(epsilon: float) -> float:
        values = []
        for seed in seeds:
            answers = mechanism.run(x, workload, axis.privacy(epsilon), np.random.default_rng(seed)).answers
            if confidence is None:
                values.append(ACCURACY_METRICS[metric](truth, answers))
            else:  # per-answer errors pooled, or the max over answers, whose (confidence)-quantile is read
                err = np.abs(answers - truth)
                values.extend(err if metric != "max_abs" else [err.max()])
        return float(np.mean(values)) if confidence is None else float(np.quantile(values, confidence))

    return error_at


def _analytic_error(mechanism, workload, metric, confidence, simultaneous, axis=PURE_AXIS):
    """Error as a function of ε on ``axis`` from a formula, or None when no formula applies."""
    m = workload.shape[0]
    if laplace_answer_scale(mechanism, workload, 1.0, axis=axis) is not None:
        def scale(e):
            return laplace_answer_scale(mechanism, workload, e, axis=axis)[0]  # type: ignore[index]  # not None (checked above)
        count = laplace_answer_scale(mechanism, workload, 1.0, axis=axis)[1]  # type: ignore[index]  # not None (checked above)
        if count == "bin" and not queries_are_cells(workload):
            scale = None  # type: ignore[assignment]  # bins are Laplace, but answers are sums of several: no plain-Laplace form
        if scale is not None:
            if confidence is not None:
                k = m if (metric == "max_abs" and simultaneous) else 1
                return (lambda e: laplace_error_bound(scale(e), confidence, k)), "laplace bound"
            if metric == "mae":
                return (lambda e: scale(e)), "analytic"  # E|Lap(b)| = b
            if metric == "max_abs":  # |Lap(b)| ~ Exp(1/b): E max of m is b·H_m
                harmonic = float(np.sum(1.0 / np.arange(1, m + 1)))
                return (lambda e: scale(e) * harmonic), "analytic"
    if metric == "rmse" and confidence is None:
        mse_at_one = mechanism.expected_mse(workload, axis.privacy(1.0))
        if mse_at_one is not None:
            # Laplace noise of scale ∝ 1/ε gives RMSE ∝ 1/ε: one (possibly costly, e.g. OM's
            # factorisation) evaluation draws the curve; epsilon_for_accuracy checks the scaling at ε*.
            return (lambda e: math.sqrt(mse_at_one) / e), "analytic"
    return None


def epsilon_for_accuracy(mechanism: Mechanism, workload: Workload, target: float, metric: str = "rmse",
                         confidence: float | None = None, *, simultaneous: bool = True,
                         data: np.ndarray | None = None, trials: int = 10, low: float = 1e-3,
                         high: float = 100.0, points: int = 40,
                         rng: np.random.Generator | None = None, axis: EpsilonAxis = PURE_AXIS) -> EpsilonChoice:
    """Smallest epsilon on ``axis`` (ε, or "ε at δ" under another definition) whose error meets `target`, and the
    error-vs-epsilon curve.

    * ``confidence=None``: `target` bounds the expected RMSE / MAE / max |error| per query. Analytic when
      the mechanism has ``expected_mse`` (RMSE) or adds plain Laplace noise (all three).
    * ``confidence=1−β``: every answer (``metric="max_abs"`` with ``simultaneous=True``: all answers at
      once, union bound) is within ±target with probability ≥ 1−β. For Laplace answers this is the
      closed form ε = Δ·ln(k/β)/target (k = 1 per answer, m simultaneous).
    * Otherwise a bisection over seeded simulations on ``data`` (needs ``data`` and ``rng``); a
      data-dependent mechanism's error depends on the data, so there is no answer without it
      (``NeedsDataError``, a ValueError).

    >>> from dplens.core.queries.workloads import Total
    >>> from dplens.core.mechanisms.laplace import LaplaceIdentity, LaplaceOnAnswers
    >>> choice = epsilon_for_accuracy(LaplaceOnAnswers(), Total(10), 10.0, "max_abs", confidence=0.95)
    >>> round(choice.epsilon, 4), choice.method          # ln(20) / 10
    (0.2996, 'laplace bound')
    """
    if metric not in ACCURACY_METRICS:
        raise ValueError(f"metric must be one of {', '.join(ACCURACY_METRICS)}, got {metric!r}")
    if not (isinstance(target, int | float | np.floating) and math.isfinite(target) and target > 0):
        raise ValueError(f"target must be finite and > 0, got {target!r}")
    if confidence is not None:
        fraction("confidence", confidence)
    if not (isinstance(points, int) and points >= 2):
        raise ValueError(f"points must be an integer >= 2, got {points!r}")
    grid = np.geomspace(low, high, points)
    analytic = _analytic_error(mechanism, workload, metric, confidence, simultaneous, axis)
    note = ""
    if analytic is not None:
        error_at, method = analytic
    else:
        reason = ("is data-dependent: its error depends on the data" if mechanism.data_dependent
                  else "has no closed-form error for this metric")
        if data is None or rng is None:
            raise NeedsDataError(f"mechanism {mechanism.name!r} {reason}; pass data= and rng= to estimate "
                                 "epsilon by seeded simulation", reason)
        if not (isinstance(trials, int) and trials >= 1):
            raise ValueError(f"trials must be an integer >= 1, got {trials!r}")
        x, _ = check_inputs(data, workload, 1.0)
        seeds = rng.integers(2**63, size=trials)
        error_at, method = _simulated_error(mechanism, workload, x, metric, confidence, seeds, axis), "simulation"
        note = (f"estimated from {trials} seeded runs per epsilon on this data; the mechanism {reason}, "
                "so the value holds for this data only")
    errors = np.array([error_at(float(e)) for e in grid])
    if method == "simulation":  # read the first grid crossing, then refine inside that cell
        passing = np.flatnonzero(errors <= target)
        if passing.size == 0:
            raise ValueError(f"target {target:g} is not reached even at epsilon={high:g} "
                             f"(simulated error {errors[-1]:.4g}); raise the target or the upper limit")
        i = int(passing[0])
        epsilon = float(grid[0]) if i == 0 else smallest_epsilon(  # 1 % in ε: finer than the noise
            error_at, target, low=grid[i - 1], high=grid[i], tolerance=1e-2)
    else:
        epsilon = smallest_epsilon(error_at, target, low=low, high=high)
        if method == "analytic" and metric == "rmse":
            exact = lambda e: math.sqrt(mechanism.expected_mse(workload, axis.privacy(e)))  # type: ignore[arg-type]  # noqa: E731  # analytic: not None
            if not math.isclose(exact(epsilon), error_at(epsilon), rel_tol=1e-6):  # not ∝ 1/ε: search it
                errors = np.array([exact(float(e)) for e in grid])
                epsilon = smallest_epsilon(exact, target, low=low, high=high)
    return EpsilonChoice(epsilon, float(target), metric, confidence, method, grid, errors, note)


@dataclass(frozen=True, eq=False)
class Accuracy:
    """What a given epsilon buys (``accuracy_for_epsilon``); None where no formula applies."""

    epsilon: float
    rmse: float | None
    mae: float | None
    max_abs: float | None
    confidence: float
    noise_scale: float | None  # b of the Laplace noise on each bin/answer
    unit: str | None  # "bin" or "answer"
    half_width: float | None  # per bin/answer: P(|error| > half_width) ≤ β
    simultaneous_half_width: float | None  # all bins/answers at once (union bound)


def accuracy_for_epsilon(mechanism: Mechanism, workload: Workload, epsilon: float, *,
                         confidence: float = 0.95, axis: EpsilonAxis = PURE_AXIS) -> Accuracy:
    """The inverse of ``epsilon_for_accuracy``: the expected error and intervals at `epsilon` on ``axis``.

    Intervals are given for Laplace histograms (per bin) and Laplace-on-answers (per answer).

    >>> from dplens.core.mechanisms.laplace import LaplaceIdentity, LaplaceOnAnswers
    >>> acc = accuracy_for_epsilon(LaplaceIdentity(), IdentityWorkload(100), 1.0, confidence=0.95)
    >>> round(acc.rmse, 4), acc.mae, round(acc.half_width, 4), round(acc.simultaneous_half_width, 4)
    (1.4142, 1.0, 2.9957, 7.6009)
    """
    epsilon = check_epsilon(epsilon)
    fraction("confidence", confidence)
    mse = mechanism.expected_mse(workload, axis.privacy(epsilon))
    values = {}
    for metric in ("mae", "max_abs"):
        analytic = _analytic_error(mechanism, workload, metric, None, False, axis)
        values[metric] = analytic[0](epsilon) if analytic else None
    laplace = laplace_answer_scale(mechanism, workload, epsilon, axis=axis)
    scale, unit, half, joint = None, None, None, None
    if laplace is not None:
        scale, unit = laplace
        count = workload.shape[1] if unit == "bin" else workload.shape[0]
        half = laplace_error_bound(scale, confidence)
        joint = laplace_error_bound(scale, confidence, count)
    return Accuracy(epsilon, None if mse is None else math.sqrt(mse), values["mae"], values["max_abs"],
                    confidence, scale, unit, half, joint)


# ----------------------------------------------------------------------------- several targets at once
@dataclass(frozen=True, eq=False)
class AccuracyTarget:
    """One accuracy target on one group of queries, e.g. "every prefix ± 200 at 95 %, all at once".

    ``metric``/``confidence``/``simultaneous`` mean what they mean in ``epsilon_for_accuracy``.
    """

    label: str
    workload: Workload
    target: float
    metric: str = "max_abs"
    confidence: float | None = 0.95
    simultaneous: bool = True


@dataclass(frozen=True, eq=False)
class TargetsPlan:
    """The least ε for one mechanism (or a mix) to meet every target.

    ``epsilons[g]`` is the least ε that meets target g (None when no formula gives it: ``reason``).
    Groups in ``shared`` are answered together by one release (at the largest of their ε, by
    post-processing one histogram); every other group by its own release, and sequential
    composition adds the releases' ε. Each group's error depends only on the ε of its release, so
    this is the least total for that plan shape.
    """

    mechanism: str
    epsilons: tuple[float | None, ...]
    reason: str = ""
    shared: tuple[int, ...] = ()

    @property
    def total(self) -> float | None:
        """Σ over separate releases of their ε plus the shared release's ε; None without a formula."""
        if any(e is None for e in self.epsilons):
            return None
        epsilons = cast(tuple[float, ...], self.epsilons)  # none is None (returned above)
        together = [epsilons[g] for g in self.shared]
        alone = [e for g, e in enumerate(epsilons) if g not in self.shared]
        return float(sum(alone) + (max(together) if together else 0.0))


def _shared(mechanism: Mechanism, targets: Sequence[AccuracyTarget]) -> tuple[int, ...]:
    """All groups when one release of ``mechanism`` is the release each target's ε was computed for, else ()."""
    grids = {workload_grid(t.workload) for t in targets}
    one = getattr(mechanism, "strategy_ignores_queries", False) and len(grids) == 1 and len(targets) > 1
    return tuple(range(len(targets))) if one else ()


def epsilon_for_targets(mechanisms: Sequence[Mechanism], targets: Sequence[AccuracyTarget], *,
                        high: float = 100.0) -> tuple[list[TargetsPlan], TargetsPlan | None]:
    """Least ε meeting every target, per mechanism, and the best plan over mechanisms.

    A group released on its own needs ε_g, the least value meeting target g (errors fall as ε
    grows), and separate releases add up (sequential composition). A histogram mechanism whose
    strategy ignores the groups (``strategy_ignores_queries`` on its class: identity, hb, privelet; on one grid)
    answers every group from one release, so its plan costs max_g ε_g, not the sum. The best plan lets each group
    take its cheapest own release, or puts any subset of groups on one shared release of such a
    mechanism (all subsets are tried; there are a handful of groups): it is returned second
    (``"best per group"`` or ``"best plan"``; the mechanism per group in ``reason``, ``shared`` the
    groups on the shared release).
    Mechanisms without a formula for a target (data-dependent ones) get None there and say why.

    >>> from dplens.core.queries.workloads import Prefix, Total
    >>> targets = [AccuracyTarget("total ± 50", Total(64), 50.0),
    ...            AccuracyTarget("prefixes, RMSE 20", Prefix(64), 20.0, "rmse", confidence=None)]
    >>> from dplens.core.mechanisms.laplace import LaplaceIdentity, LaplaceOnAnswers
    >>> plans, best = epsilon_for_targets([LaplaceOnAnswers(), LaplaceIdentity()], targets)
    >>> [round(e, 4) for e in plans[0].epsilons]   # ln(20)/50 and √2·64/20
    [0.0599, 4.5255]
    >>> plans[1].epsilons[0] is None, round(plans[1].epsilons[1], 4)   # a sum of Laplace bins: no bound
    (True, 0.4031)
    >>> round(best.total, 4), best.reason
    (0.463, 'laplace-on-answers, identity')
    >>> from dplens.core.mechanisms import MECHANISMS
    >>> hb = epsilon_for_targets([MECHANISMS["hb"]], targets[1:] * 2)[0][0]   # one hb release answers both
    >>> hb.shared, round(hb.total, 4) == round(hb.epsilons[0], 4)
    ((0, 1), True)
    """
    if not targets:
        raise ValueError("targets must list at least one accuracy target")
    plans = []
    for mechanism in mechanisms:
        epsilons: list[float | None] = []
        reasons: list[str] = []
        for target in targets:
            try:
                choice = epsilon_for_accuracy(mechanism, target.workload, target.target, target.metric,
                                              target.confidence, simultaneous=target.simultaneous, high=high)
                epsilons.append(choice.epsilon)
            except NeedsDataError as err:
                epsilons.append(None)
                reasons.append(f"{target.label}: {err.reason}")
            except ValueError as err:  # e.g. not reachable below `high`
                epsilons.append(None)
                reasons.append(f"{target.label}: {str(err).split(';')[0]}")
        plans.append(TargetsPlan(mechanism.name, tuple(epsilons), "; ".join(reasons), _shared(mechanism, targets)))
    cheapest = []  # per group: (ε, mechanism) of its cheapest own release
    for g in range(len(targets)):
        options = [(p.epsilons[g], p.mechanism) for p in plans if p.epsilons[g] is not None]
        if not options:
            return plans, None
        cheapest.append(min(options))
    best = TargetsPlan("best per group", tuple(e for e, _ in cheapest), ", ".join(m for _, m in cheapest))
    for plan in plans:  # a shared release of a group-free mechanism for some groups, own releases for the rest
        if not plan.shared:
            continue
        for size in range(2, len(targets) + 1):
            for together in itertools.combinations(range(len(targets)), size):
                if any(plan.epsilons[g] is None for g in together):
                    continue
                mix = TargetsPlan("best plan", tuple(plan.epsilons[g] if g in together else cheapest[g][0]
                                                     for g in range(len(targets))),
                                  ", ".join(plan.mechanism if g in together else cheapest[g][1]
                                            for g in range(len(targets))), together)
                if mix.total < best.total - 1e-12:  # type: ignore[operator]  # both plans have every ε (skipped above)
                    best = mix
    return plans, best
