"""Gradual release (Koufogiannis, Han & Pappas, JPC 2017) and accuracy-first search (Ligett et al., NIPS 2017).

Both are surveyed in Zhao, Sec. 4.2.1 (gradual private release) and Sec. 4.2.2 (the threshold method).

Noise reduction releases y_1, …, y_T with ε_1 < … < ε_T, each y_t distributed exactly as v + Lap(Δ/ε_t),
and the whole prefix y_1..y_t costs ε_t (the largest epsilon released), not Σ ε_s. The ledger therefore
charges the increments ε_t − ε_{t−1}, which sum to the last epsilon (``increments``).

Accuracy-first (Ligett et al.: noise reduction followed by AboveThreshold) runs AboveThreshold over a noise-reduction
walk and stops at the first hypothesis whose noisy error is below the target; its ex-post loss is ε_A + ε_{t*}.

>>> walk = noise_reduction(np.zeros(3), 1.0, [0.5, 1.0], np.random.default_rng(0))
>>> walk.shape, increments([0.5, 1.0, 2.0])
((2, 3), (0.5, 0.5, 1.0))
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from dplens.core.analysis.metrics import mae, max_abs, rmse
from dplens.core.mechanisms import Release, check_epsilon, check_inputs, laplace_privacy_loss
from dplens.core.privacy.budget import Budget, Ledger
from dplens.core.privacy.definitions import PureDP
from dplens.core.queries.workloads import Workload, squared_frobenius
from dplens.core.validate import fraction, integer, positive

THRESHOLD_RULES = ("opt", "fixed")


# ----------------------------------------------------------------------------- validation
def check_schedule(epsilons: Sequence[float] | np.ndarray) -> np.ndarray:
    """Validate an epsilon schedule: finite, > 0 and STRICTLY increasing (never silently sorted).

    >>> check_schedule([0.1, 0.5]).tolist()
    [0.1, 0.5]
    """
    eps = np.asarray(epsilons, dtype=float)
    if eps.ndim != 1 or eps.size == 0:
        raise ValueError(f"epsilons must be a non-empty 1-D sequence, got {epsilons!r}")
    for e in eps:
        check_epsilon(float(e), "each epsilon")
    if np.any(np.diff(eps) <= 0):
        # a decreasing schedule makes the keep "probabilities" (ε_t/ε_{t+1})² exceed 1: no fresh noise is
        # ever added and the marginals are wrong, so it is refused rather than silently sorted
        raise ValueError(f"epsilons must be strictly increasing (most private first), got {eps.tolist()}")
    return eps


def _check_values(values, name: str = "values") -> np.ndarray:
    values = np.asarray(values, dtype=float)
    if values.size == 0 or not np.all(np.isfinite(values)):
        raise ValueError(f"{name} must be a non-empty array of finite numbers")
    return values


# ----------------------------------------------------------------------------- noise reduction
def noise_reduction(values, sensitivity: float, epsilons: Sequence[float] | np.ndarray,
                    rng: np.random.Generator) -> np.ndarray:
    """Backward construction (Ligett et al., Alg. 1, noise reduction): the whole walk, most private first.

    Row t is ``values + ν_t`` with ν_t ~ Lap(sensitivity/ε_t) per coordinate. Going from the more
    accurate step t+1 to step t, each coordinate keeps its value with probability (ε_t/ε_{t+1})² and
    otherwise adds fresh Lap(Δ/ε_t) noise at the SMALLER epsilon. The coin is drawn per coordinate (one
    shared coin would give wrong, non-product marginals) and the fresh noise uses ε_t, not ε_{t+1}.

    >>> walk = noise_reduction(np.array([5.0, 7.0]), 1.0, [0.1, 1.0, 2.0], np.random.default_rng(1))
    >>> walk.shape
    (3, 2)
    """
    values = _check_values(values)
    sensitivity = positive("sensitivity", sensitivity)
    eps = check_schedule(epsilons)
    noise = np.empty((eps.size,) + values.shape)
    noise[-1] = rng.laplace(scale=sensitivity / eps[-1], size=values.shape)
    for t in range(eps.size - 2, -1, -1):
        move = rng.random(values.shape) >= (eps[t] / eps[t + 1]) ** 2  # one coin per coordinate
        noise[t] = noise[t + 1]
        noise[t][move] += rng.laplace(scale=sensitivity / eps[t], size=int(move.sum()))
    return values + noise


def next_release(previous, true_values, sensitivity: float, epsilon_previous: float,
                 epsilon_next: float, rng: np.random.Generator) -> np.ndarray:
    """Forward (online) step: from y₁ = v + Lap(Δ/ε₁) to y₂ distributed as v + Lap(Δ/ε₂) (Koufogiannis et al.'s lazy
    Markov process).

    Per coordinate, stay at y₁ with probability (ε₁/ε₂)·exp(−(ε₂−ε₁)|y₁−v|/Δ) (averaged: (ε₁/ε₂)²);
    otherwise sample the density ∝ exp(−ε₂|y−v|/Δ − ε₁|y₁−y|/Δ), piecewise exponential on three pieces.
    Runs inside the curator: it reads the true values.

    >>> v = np.zeros(4)
    >>> y = next_release(v + 3.0, v, 1.0, 0.5, 1.0, np.random.default_rng(0))
    >>> y.shape
    (4,)
    """
    v = _check_values(true_values, "true_values")
    y1 = _check_values(previous, "previous")
    if y1.shape != v.shape:
        raise ValueError(f"previous has shape {y1.shape} but true_values has shape {v.shape}")
    delta = positive("sensitivity", sensitivity)
    e1, e2 = check_schedule([epsilon_previous, epsilon_next])
    distance = np.abs(y1 - v)
    stay = rng.random(v.shape) < (e1 / e2) * np.exp(-(e2 - e1) * distance / delta)
    # Density relative to its peak at y = v (exponent 0 after dividing by e^{−ε₁ d/Δ}); toward y₁ it decays
    # at rate k, beyond either end at rate s. Masses: v-side tail 1/s, middle (1−e^{−kd})/k, far tail e^{−kd}/s.
    s, k = (e1 + e2) / delta, (e2 - e1) / delta
    decay = np.exp(-k * distance)
    masses = np.stack([np.full(v.shape, 1.0 / s), -np.expm1(-k * distance) / k, decay / s])
    pick = rng.random(v.shape) * masses.sum(axis=0)
    direction = np.where(y1 >= v, 1.0, -1.0)  # from v toward y₁
    tail = np.abs(rng.laplace(scale=1.0 / s, size=v.shape))  # |Lap(1/s)| ~ Exp(rate s)
    uniform = rng.random(v.shape)
    middle = -np.log1p(uniform * np.expm1(-k * distance)) / k  # inverse CDF of Exp(k) truncated to [0, d]
    moved = np.where(pick < masses[0], v - direction * tail,
                     np.where(pick < masses[0] + masses[1], v + direction * middle, y1 + direction * tail))
    return np.where(stay, y1, moved)


def gradual_release(x, workload: Workload, epsilons: Sequence[float], rng: np.random.Generator) -> list[Release]:
    """Noise reduction on the histogram (Δ = 1) as Release records, most private first (see docs/architecture.md).

    Step t's ``privacy_loss`` is the loss of its Laplace(1/ε_t) marginal, ε_t: the walk is Markov and every
    step after the last depends only on the previous one, never on the data (Koufogiannis et al.), so that is
    also the loss of publishing steps 1..t together.

    >>> from dplens.core.queries.workloads import Prefix
    >>> steps = gradual_release(np.array([3.0, 1, 4]), Prefix(3), [0.5, 1.0], np.random.default_rng(0))
    >>> [(r.epsilon, r.privacy_loss) for r in steps]
    [(0.5, 0.5), (1.0, 1.0)]
    """
    eps = check_schedule(epsilons)
    x, _ = check_inputs(x, workload, float(eps[-1]))
    walk = noise_reduction(x, 1.0, eps, rng)
    return [Release("identity", PureDP(float(e)), laplace_privacy_loss([(np.ones(x.size), 1.0 / e)]),
                    workload.matvec(theta),
                    theta, {"noise_scale": 1.0 / float(e), "gradual_step": t + 1, "schedule": tuple(eps.tolist())},
                    workload=workload)
            for t, (e, theta) in enumerate(zip(eps, walk, strict=True))]


def walk_step(true_values, sensitivity: float, previous, epsilon_previous: float | None,
              epsilon_next: float, rng: np.random.Generator) -> np.ndarray:
    """One online step of a walk: a fresh Laplace release first, then ``next_release``.

    >>> v = np.zeros(3)
    >>> first = walk_step(v, 1.0, None, None, 0.5, np.random.default_rng(0))
    >>> walk_step(v, 1.0, first, 0.5, 1.0, np.random.default_rng(1)).shape
    (3,)
    """
    if previous is None:
        values = _check_values(true_values, "true_values")
        scale = positive("sensitivity", sensitivity) / check_epsilon(epsilon_next, "epsilon_next")
        return values + rng.laplace(scale=scale, size=values.shape)
    # epsilon_previous comes with previous
    return next_release(previous, true_values, sensitivity, epsilon_previous, epsilon_next, rng)  # type: ignore[arg-type]


def increments(epsilons: Sequence[float]) -> tuple[float, ...]:
    """What the ledger charges at each step: ε₁, ε₂−ε₁, …; they sum to the last epsilon (the prefix costs its largest
    ε).

    >>> sum(increments([0.1, 0.3, 1.0]))
    1.0
    """
    eps = check_schedule(epsilons)
    return tuple(float(d) for d in np.diff(eps, prepend=0.0))


def step_charge(epsilon_previous: float, epsilon_next: float) -> Budget:
    """What one step of a Laplace walk from ε_previous (0 before the first) to ε_next costs a ledger: the ε increment
    for basic composition, and the ρ increment (ε_next² − ε_previous²)/2, since the walk up to ε_next is ε_next-DP,
    hence (ε_next²/2)-zCDP.

    >>> step_charge(0.25, 0.5)
    Budget(epsilon=0.25, delta=0.0, rho=0.09375)
    """
    if epsilon_previous == 0:
        epsilon = check_epsilon(epsilon_next)
        return Budget(epsilon, rho=epsilon**2 / 2)
    return Budget(increments([epsilon_previous, epsilon_next])[1], rho=(epsilon_next**2 - epsilon_previous**2) / 2)


def charge_step(ledger: Ledger, label: str, epsilon_previous: float, epsilon_next: float) -> Ledger:
    """Charge one gradual step: only the increment ε_next − ε_previous (ε_previous = 0 for the first).

    >>> from dplens.core.privacy.budget import Budget, Ledger
    >>> charge_step(Ledger(Budget(1.0)), "step 2", 0.25, 0.5).spent.epsilon
    0.25
    >>> charge_step(charge_step(Ledger(Budget.zcdp(1.0, 1e-6)), "1", 0, 0.5), "2", 0.5, 1.0).spent.rho
    0.5
    """
    return ledger.spend(label, step_charge(epsilon_previous, epsilon_next))


def cumulative_loss(epsilons: Sequence[float] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Privacy loss of each prefix: noise reduction (the last ε) vs independent releases (Σ ε).

    >>> nr, independent = cumulative_loss([0.5, 1.0, 2.0])
    >>> nr.tolist(), independent.tolist()
    ([0.5, 1.0, 2.0], [0.5, 1.5, 3.5])
    """
    eps = check_schedule(epsilons)
    return eps.copy(), np.cumsum(eps)


def one_shot_comparison(x, epsilons: Sequence[float] | np.ndarray, trials: int,
                        rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Mean per-bin RMSE of each walk step and of independent one-shot releases at the same ε.

    They agree by design (noise reduction loses no accuracy: step t is distributed as a one-shot release at ε_t); both
    are Laplace histograms (sensitivity 1).

    >>> walk, one_shot = one_shot_comparison(np.zeros(500), [0.5, 1.0], 4, np.random.default_rng(0))
    >>> bool(np.all(np.abs(walk / one_shot - 1) < 0.1))
    True
    """
    x = _check_values(x, "x").ravel()
    eps = check_schedule(epsilons)
    integer("trials", trials)
    walk = np.zeros(eps.size)
    one_shot = np.zeros(eps.size)
    for _ in range(trials):
        steps = noise_reduction(x, 1.0, eps, rng)
        walk += np.sqrt(np.mean((steps - x) ** 2, axis=1))
        fresh = rng.laplace(scale=1.0 / eps[:, None], size=(eps.size, x.size))
        one_shot += np.sqrt(np.mean(fresh**2, axis=1))
    return walk / trials, one_shot / trials


# ----------------------------------------------------------------------------- accuracy first (Ligett et al.)
def _check_range(epsilon_min: float, epsilon_max: float) -> None:
    check_epsilon(epsilon_min, "epsilon_min")
    check_epsilon(epsilon_max, "epsilon_max")
    if not epsilon_min < epsilon_max:
        raise ValueError(f"epsilon_min must be < epsilon_max, got {epsilon_min!r} and {epsilon_max!r}")


def geometric_grid(epsilon_min: float, epsilon_max: float, steps: int) -> np.ndarray:
    """ε_t = ε_min·(ε_max/ε_min)^{(t−1)/(T−1)}: includes ε_max.

    Ligett et al.'s reference code uses ε_min·c^k, k = 0..T−1, c = (ε_max/ε_min)^{1/T}, which never reaches
    ε_max (an off-by-one); we include it, otherwise the last step is one grid step short of the cap.

    >>> geometric_grid(0.1, 10.0, 3).tolist()
    [0.1, 1.0, 10.0]
    """
    _check_range(epsilon_min, epsilon_max)
    integer("steps", steps, low=2)
    grid = np.geomspace(epsilon_min, epsilon_max, steps)
    grid[-1] = epsilon_max  # exact, not round-off
    return grid


def above_threshold_params(alpha: float, gamma: float, query_sensitivity: float, steps: int,
                           threshold: str = "opt") -> tuple[float, float, float]:
    """(threshold s, threshold-noise scale b, ε_A) for AboveThreshold (Ligett et al.'s reference code,
    sparsevec.compute_epsilon).

    >>> s, b, epsilon_a = above_threshold_params(0.1, 0.1, 1.0, 1000, "opt")
    >>> round(s, 7), round(b, 8), round(epsilon_a, 3)
    (0.0120071, 0.00412503, 484.845)
    """
    positive("alpha (target error)", alpha)
    fraction("gamma (failure probability)", gamma)
    positive("sensitivity", query_sensitivity)
    integer("steps", steps)
    if threshold == "opt":
        b = alpha / (4 * math.log(1.5**0.75 * math.sqrt(steps) / gamma))
        s = alpha / 4 + 0.75 * b * math.log(1.5) - 0.5 * b * math.log(steps)
    elif threshold == "fixed":
        s = alpha / 2
        b = (alpha - s) / (3 * math.log((0.5 + steps ** (2 / 3)) / gamma))
    else:
        raise ValueError(f"threshold must be one of {THRESHOLD_RULES}, got {threshold!r}")
    if not b > 0:
        raise ValueError(f"gamma={gamma!r} is too large for {steps} steps: the threshold noise scale "
                         f"would be {b:.3g}; lower gamma")
    return s, b, 2 * query_sensitivity / b


def above_threshold(query_values: Iterable[float], threshold: float, epsilon: float,
                    sensitivity: float, rng: np.random.Generator) -> int | None:
    """Index of the first query whose noisy value is ≤ the noisy threshold, or None (Dwork & Roth, AboveThreshold).

    Below-threshold form of Dwork–Roth AboveThreshold: Ŵ = W + Lap(2Δ/ε), each query gets fresh
    Lap(4Δ/ε). ε-DP for the index however many queries pass first. ``query_values`` is consumed lazily.

    >>> above_threshold([5.0, 0.0], 1.0, 1000.0, 1.0, np.random.default_rng(0))
    1
    """
    epsilon = check_epsilon(epsilon)
    sensitivity = positive("sensitivity", sensitivity)
    noisy_threshold = threshold + rng.laplace(scale=2 * sensitivity / epsilon)
    for t, value in enumerate(query_values):
        if value + rng.laplace(scale=4 * sensitivity / epsilon) <= noisy_threshold:
            return t
    return None


def histogram_error(x, workload: Workload, metric: str = "rmse") -> tuple[Callable[[np.ndarray], float], float]:
    """err(θ; x) = metric(W x, W θ) for a histogram estimate θ, and its sensitivity in x (θ held fixed).

    Moving one record changes W(θ − x) by a column W e_j, so by the triangle inequality the sensitivity
    is Δ₂(W)/√m for RMSE, Δ₁(W)/m for MAE and the largest |W_ij| for max |error|.

    >>> from dplens.core.queries.workloads import Identity
    >>> error, sensitivity = histogram_error(np.zeros(4), Identity(4))
    >>> error(np.ones(4)), sensitivity
    (1.0, 0.5)
    """
    x, _ = check_inputs(x, workload, 1.0)
    m = workload.shape[0]
    truth = workload.matvec(x)
    if metric == "rmse":
        function, sensitivity = rmse, float(np.max(workload.column_norms(2))) / math.sqrt(m)
    elif metric == "mae":
        function, sensitivity = mae, float(np.max(workload.column_norms(1))) / m
    elif metric == "max_abs":
        # the largest entry of a column is at most its L2 norm, and equals it for 0/1 columns with one 1;
        # we use the L2 norm: an upper bound on max_ij |W_ij| that needs no dense matrix
        function, sensitivity = max_abs, float(np.max(workload.column_norms(2)))
    else:
        raise ValueError(f"metric must be 'rmse', 'mae' or 'max_abs', got {metric!r}")
    if not sensitivity > 0:
        raise ValueError("the workload does not read the data (all columns are zero)")
    return (lambda theta: function(truth, workload.matvec(theta))), sensitivity


def theory_epsilon(workload: Workload, target: float, metric: str = "rmse") -> float | None:
    """The ε that meets an RMSE target by inverting the Laplace histogram's error formula, no search (Ligett et al.'s
    theory baseline).

    A release x + Lap(1/ε) answers W with per-query MSE 2‖W‖²_F/(m ε²), so RMSE α needs
    ε = √(2‖W‖²_F/m)/α: √2/α for the identity workload. None for MAE and max error (no closed form).

    >>> from dplens.core.queries.workloads import Identity
    >>> round(theory_epsilon(Identity(4096), 2.0), 6)
    0.707107
    """
    positive("target (α)", target)
    if metric != "rmse":
        return None
    return math.sqrt(2 * squared_frobenius(workload) / workload.shape[0]) / target


@dataclass(frozen=True, eq=False)
class AccuracyFirstResult:
    """Outcome of ``accuracy_first``: where it stopped and what it cost.

    The ex-post loss depends on the data (through t*), so it is reported as ε_A + ε_{t*} with the ex-ante cap
    ε_A + ε_T, never as ε_{t*} alone."""

    epsilons: np.ndarray  # the grid ε_1 < … < ε_T (includes ε_max)
    stopped_at: int | None  # index t* into the grid, None = FAIL
    estimate: np.ndarray | None  # θ_{t*}; None on FAIL (θ_T is NOT released)
    threshold: float  # s
    query_sensitivity: float  # Δ_q of the error
    epsilon_above_threshold: float  # ε_A
    epsilon_noise_reduction: float  # ε_{t*} (0 on FAIL)
    ex_ante_cap: float  # ε_A + ε_T
    errors: np.ndarray  # true error of every θ_t, for the lab's display only (not private)

    @property
    def ex_post_loss(self) -> float:
        """ε_A + ε_{t*} (ε_A alone on FAIL)."""
        return self.epsilon_above_threshold + self.epsilon_noise_reduction

    @property
    def succeeded(self) -> bool:
        """True when the search stopped below the threshold."""
        return self.stopped_at is not None


def accuracy_first(x, workload: Workload, target: float, *, epsilon_max: float, epsilon_min: float = 0.01,
                   steps: int = 20, gamma: float = 0.1, threshold: str = "opt", metric: str = "rmse",
                   rng: np.random.Generator) -> AccuracyFirstResult:
    """Noise reduction on the histogram (Δ = 1) over a geometric grid + AboveThreshold on its error.

    With probability ≥ 1−γ, if the search stops then err(θ_{t*}) ≤ target (Ligett et al.). Report the ex-post
    loss ε_A + ε_{t*} and the ex-ante cap ε_A + ε_T, never ε_{t*} alone.

    >>> from dplens.core.queries.workloads import Identity
    >>> result = accuracy_first(np.full(4096, 50.0), Identity(4096), 2.0, epsilon_max=10.0,
    ...                         rng=np.random.default_rng(0))
    >>> result.succeeded, bool(result.errors[result.stopped_at] <= 2.0)
    (True, True)
    """
    x, _ = check_inputs(x, workload, 1.0)
    grid = geometric_grid(epsilon_min, epsilon_max, steps)
    error, query_sensitivity = histogram_error(x, workload, metric)
    s, _, epsilon_a = above_threshold_params(target, gamma, query_sensitivity, steps, threshold)
    walk = noise_reduction(x, 1.0, grid, rng)
    errors = np.array([error(theta) for theta in walk])
    t = above_threshold(iter(errors), s, epsilon_a, query_sensitivity, rng)
    return AccuracyFirstResult(grid, t, None if t is None else walk[t], s, query_sensitivity, epsilon_a,
                               0.0 if t is None else float(grid[t]), epsilon_a + float(grid[-1]), errors)


@dataclass(frozen=True, eq=False)
class DoublingResult:
    """Outcome of the doubling baseline (Ligett et al.'s reference code): independent releases, each tested
    separately."""

    epsilons: np.ndarray  # ε_min·2^k, k = 0..K
    stopped_at: int | None
    epsilon_test: float  # budget of each noisy test
    release_loss: float  # Σ_{i≤k} ε_i (every step on FAIL)
    test_loss: float  # (k+1)·ε_test
    errors: np.ndarray

    @property
    def privacy_loss(self) -> float:
        """Σ_{i≤k} ε_i + (k+1)·ε_test: basic composition of independent releases and tests."""
        return self.release_loss + self.test_loss


def doubling_test_epsilon(alpha: float, gamma: float, query_sensitivity: float, tests: int) -> float:
    """ε_test = Δ_q/b with b = (α/2)/ln(tests/(2γ)) (Ligett et al.'s reference ``naive_outputpert.py``).

    >>> round(doubling_test_epsilon(0.1, 0.1, 1.0, 11), 4)
    80.1467
    """
    positive("alpha (target error)", alpha)
    fraction("gamma (failure probability)", gamma)
    positive("sensitivity", query_sensitivity)
    if not tests > 2 * gamma:
        raise ValueError(f"tests must exceed 2·gamma, got tests={tests!r}, gamma={gamma!r}")
    return query_sensitivity / ((alpha / 2) / math.log(tests / (2 * gamma)))


def doubling_search(x, workload: Workload, target: float, *, epsilon_max: float, epsilon_min: float = 0.01,
                    gamma: float = 0.1, metric: str = "rmse", rng: np.random.Generator) -> DoublingResult:
    """The doubling baseline: ε_k = ε_min·2^k with independent noise; stop when err + Lap ≤ α/2.

    >>> from dplens.core.queries.workloads import Identity
    >>> result = doubling_search(np.full(4096, 50.0), Identity(4096), 2.0, epsilon_max=10.0,
    ...                          rng=np.random.default_rng(0))
    >>> result.stopped_at is not None and bool(result.privacy_loss > result.epsilons[result.stopped_at])
    True
    """
    x, _ = check_inputs(x, workload, 1.0)
    _check_range(epsilon_min, epsilon_max)
    error, query_sensitivity = histogram_error(x, workload, metric)
    count = math.floor(math.log2(epsilon_max / epsilon_min)) + 2  # k = 0..K, K = ⌊log2(max/min)⌋ + 1
    grid = epsilon_min * 2.0 ** np.arange(count)
    epsilon_test = doubling_test_epsilon(target, gamma, query_sensitivity, count)
    errors = np.array([error(x + rng.laplace(scale=1.0 / e, size=x.size)) for e in grid])
    noisy = errors + rng.laplace(scale=query_sensitivity / epsilon_test, size=count)
    passing = np.flatnonzero(noisy <= target / 2)
    k = int(passing[0]) if passing.size else None
    last = count - 1 if k is None else k
    return DoublingResult(grid, k, epsilon_test, float(grid[: last + 1].sum()), (last + 1) * epsilon_test, errors)
