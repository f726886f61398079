"""Pure computations behind the Learn page: Laplace noise, neighbouring outputs, composition, range error.

Everything a teaching view plots comes from here, so the page only draws. Randomness is an argument.

>>> laplace_scale(sensitivity=1.0, epsilon=0.5)
2.0
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TypedDict

import numpy as np

from dplens.core.mechanisms import MECHANISMS, check_epsilon
from dplens.core.queries.workloads import Ranges
from dplens.core.validate import fraction, integer, positive

RANGE_MECHANISMS = ("identity", "hb", "privelet")  # the hierarchical-vs-flat story (Hay et al.; Xiao et al.)


def laplace_scale(sensitivity: float, epsilon: float) -> float:
    """The Laplace mechanism's scale b = Δ/ε (Dwork et al. 2006).

    >>> laplace_scale(2.0, 1.0)
    2.0
    """
    return positive("sensitivity", sensitivity) / check_epsilon(epsilon)


def laplace_density(grid: np.ndarray, scale: float, loc: float = 0.0) -> np.ndarray:
    """Density of Laplace(loc, scale) on ``grid``: exp(-|y - loc|/b) / 2b.

    >>> laplace_density(np.array([0.0]), 1.0).tolist()
    [0.5]
    """
    positive("scale", scale)
    return np.exp(-np.abs(np.asarray(grid, dtype=float) - loc) / scale) / (2.0 * scale)


def neighbouring_outputs(count: float, epsilon: float, releases: int,
                         rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """One count released ``releases`` times for x and for its neighbour x + 1 (Laplace, Δ = 1).

    >>> a, b = neighbouring_outputs(10, 1.0, 5, np.random.default_rng(0))
    >>> a.shape, b.shape
    ((5,), (5,))
    """
    scale = laplace_scale(1.0, epsilon)
    integer("releases", releases)
    return (count + rng.laplace(scale=scale, size=releases),
            count + 1 + rng.laplace(scale=scale, size=releases))


def output_ratio(outputs_x: np.ndarray, outputs_neighbour: np.ndarray, edges: np.ndarray,
                 *, min_count: int = 20) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Binned frequencies of both output samples and their ratio (NaN where a bin is too sparse).

    Differential privacy bounds the true ratio by e^ε in every bin; the empirical ratio shows it
    up to sampling noise, which is why sparse bins (fewer than ``min_count`` draws) are masked.

    >>> edges = np.array([0.0, 1.0, 2.0])
    >>> p, q, r = output_ratio(np.array([0.5, 0.5, 1.5]), np.array([0.5, 1.5, 1.5]), edges, min_count=1)
    >>> r.tolist()
    [2.0, 0.5]
    """
    p = np.histogram(outputs_x, bins=edges)[0].astype(float)
    q = np.histogram(outputs_neighbour, bins=edges)[0].astype(float)
    ratio = np.full(p.shape, np.nan)
    dense = (p >= min_count) & (q >= min_count)
    ratio[dense] = p[dense] / q[dense] * (len(outputs_neighbour) / len(outputs_x))
    return p / len(outputs_x), q / len(outputs_neighbour), ratio


def ratio_band(outputs_x: np.ndarray, outputs_neighbour: np.ndarray, edges: np.ndarray, *,
               level: float = 0.95, min_count: int = 20) -> tuple[np.ndarray, np.ndarray]:
    """Sampling band of ``output_ratio``'s ratios, simultaneous over the bins shown (NaN where masked).

    The count in a bin is binomial, so log(p̂/q̂) has standard error √((1−p̂)/a + (1−q̂)/b) for bin counts
    a and b (delta method). Bonferroni over the K bins shown makes all K bands hold together with
    probability ≥ ``level``: where a band contains e^ε, the overshoot of the point is sampling noise.

    >>> edges = np.linspace(-3, 4, 8)
    >>> rng = np.random.default_rng(0)
    >>> low, high = ratio_band(rng.laplace(size=50_000), 1 + rng.laplace(size=50_000), edges)
    >>> bool(np.all(low[~np.isnan(low)] < high[~np.isnan(high)]))
    True
    """
    fraction("level", level)
    from scipy.stats import norm  # scipy is a core dependency; imported here to keep import time low

    a = np.histogram(outputs_x, bins=edges)[0].astype(float)
    b = np.histogram(outputs_neighbour, bins=edges)[0].astype(float)
    dense = (a >= min_count) & (b >= min_count)
    low, high = np.full(a.shape, np.nan), np.full(a.shape, np.nan)
    if dense.any():
        p, q = a[dense] / len(outputs_x), b[dense] / len(outputs_neighbour)
        z = norm.ppf(1 - (1 - level) / (2 * int(dense.sum())))
        spread = z * np.sqrt((1 - p) / a[dense] + (1 - q) / b[dense])
        low[dense], high[dense] = p / q * np.exp(-spread), p / q * np.exp(spread)
    return low, high


def composition(epsilon: float, queries: int) -> dict[str, dict[str, float]]:
    """Sequential vs parallel composition of ``queries`` counting queries under a total ``epsilon``.

    Sequential (the queries overlap, e.g. the same people): the per-query budget is ε/k, so each
    answer's noise scale is k/ε. Parallel (disjoint cells of a histogram): each query may use the
    whole ε, since one person changes only one cell (McSherry 2009, PINQ).

    >>> c = composition(1.0, 4)
    >>> c["sequential"]["scale"], c["parallel"]["scale"]
    (4.0, 1.0)
    """
    epsilon = check_epsilon(epsilon)
    integer("queries", queries)
    out = {}
    for kind, per_query in (("sequential", epsilon / queries), ("parallel", epsilon)):
        scale = 1.0 / per_query
        out[kind] = {"per_query_epsilon": per_query, "total_loss": epsilon, "scale": scale,
                     "rmse": math.sqrt(2.0) * scale}
    return out


def range_lengths(n: int, points: int = 8) -> np.ndarray:
    """Log-spaced distinct range lengths from 1 to n.

    >>> range_lengths(16, 5).tolist()
    [1, 2, 4, 8, 16]
    """
    return np.unique(np.geomspace(1, n, points).round().astype(np.int64))


def ranges_of_length(n: int, length: int, *, count: int = 64) -> Ranges:
    """Up to ``count`` evenly spread ranges of exactly ``length`` cells.

    >>> ranges_of_length(8, 3, count=3).lo.tolist()
    [0, 2, 5]
    """
    integer("length", length, 1, n)
    starts = np.unique(np.linspace(0, n - length, min(count, n - length + 1)).round().astype(np.int64))
    return Ranges(n, starts, starts + length - 1, label=f"length-{length} ranges")


def range_error_by_length(n: int, epsilon: float, lengths: Sequence[int] | np.ndarray,
                          mechanisms: Sequence[str] = RANGE_MECHANISMS) -> dict[str, np.ndarray]:
    """Analytic RMSE of length-L range queries per mechanism (registry ``expected_mse``).

    Mechanisms that are not registered, or have no analytic error, are left out. Identity's error
    grows like √L; hierarchical strategies (hb, privelet) grow only polylogarithmically.

    >>> errors = range_error_by_length(16, 1.0, [1, 16], ["identity"])
    >>> errors["identity"].round(3).tolist()
    [1.414, 5.657]
    """
    out: dict[str, np.ndarray] = {}
    for name in mechanisms:
        mechanism = MECHANISMS.get(name)
        if mechanism is None:
            continue
        values = [mechanism.expected_mse(ranges_of_length(n, int(length)), epsilon) for length in lengths]
        if all(v is not None for v in values):
            out[name] = np.sqrt(np.asarray(values, dtype=float))
    return out


# ----------------------------------------------------------------------------- Laplace vs Gaussian
class LossDistributions(TypedDict):
    """What :func:`privacy_loss_distributions` returns."""

    grid: np.ndarray
    laplace_density: np.ndarray
    laplace_atoms: dict[float, float]
    gaussian_density: np.ndarray
    sigma: float
    mu: float
    gaussian_tail: float


def privacy_loss_distributions(epsilon: float, delta: float, grid: np.ndarray) -> LossDistributions:
    """The privacy-loss random variable L = ln(p(y)/p'(y)) of one count (Δ = 1) under Laplace(1/ε) and under
    the analytic Gaussian calibrated to (ε, δ).

    Laplace: atoms P(L = ε) = 1/2 and P(L = −ε) = e^{−ε}/2, density e^{−(1 − L/ε)ε/2}/4 on (−ε, ε): never
    beyond ε. Gaussian: L ~ N(μ, 2μ), μ = 1/(2σ²) (Balle & Wang 2018): unbounded, P(L > ε) is what δ pays for.

    >>> out = privacy_loss_distributions(1.0, 1e-6, np.linspace(-2, 2, 5))
    >>> out["laplace_atoms"], out["gaussian_tail"] > 0
    ({1.0: 0.5, -1.0: 0.18393972058572117}, True)
    """
    from scipy import stats

    from dplens.core.privacy.definitions import analytic_gaussian_sigma

    epsilon = check_epsilon(epsilon)
    grid = np.asarray(grid, dtype=float)
    inside = np.abs(grid) < epsilon
    laplace = np.where(inside, np.exp(-(1.0 - grid / epsilon) * epsilon / 2.0) / 4.0, 0.0)
    # density in L: y = (1 − L/ε)/2 on (0, 1) with y ~ Lap(1/ε) → f(L) = (ε/2)e^{−εy}·|dy/dL| = e^{−εy}/4
    sigma = analytic_gaussian_sigma(epsilon, delta)
    mu = 1.0 / (2.0 * sigma**2)
    gaussian = stats.norm.pdf(grid, mu, math.sqrt(2.0 * mu))
    return {"grid": grid, "laplace_density": laplace, "laplace_atoms": {epsilon: 0.5, -epsilon: math.exp(-epsilon) / 2},
            "gaussian_density": gaussian, "sigma": sigma, "mu": mu,
            "gaussian_tail": float(stats.norm.sf(epsilon, mu, math.sqrt(2.0 * mu)))}


def composition_by_definition(epsilon: float, delta: float, ks: Sequence[int] | np.ndarray) -> dict[str, np.ndarray]:
    """Total ε at δ after k releases, each at "ε at δ", under each definition (k = 1..1000 on the Learn page).

    * pure (Laplace): kε, basic composition (δ = 0);
    * (ε, δ) (analytic Gaussian): kε at kδ, basic composition;
    * zCDP (Gaussian): ρ = ``zcdp_rho(ε, δ)`` per release, kρ, read at δ by CKS;
    * pure Laplace accounted in zCDP: ε²/2 per release, then CKS at δ (never worse than kε is kept).

    >>> out = composition_by_definition(0.1, 1e-6, [1, 1000])
    >>> [round(float(v), 2) for v in out["pure"]], bool(out["zcdp"][1] < out["pure"][1])
    ([0.1, 100.0], True)
    """
    from dplens.core.privacy.definitions import zcdp_epsilon, zcdp_rho

    epsilon = check_epsilon(epsilon)
    ks = np.asarray(ks, dtype=int)
    rho = zcdp_rho(epsilon, delta)
    return {"k": ks, "pure": epsilon * ks, "approx": epsilon * ks, "approx_delta": delta * ks,
            "zcdp": np.array([zcdp_epsilon(k * rho, delta) for k in ks]),
            "pure_via_zcdp": np.array([min(k * epsilon, zcdp_epsilon(k * epsilon**2 / 2.0, delta)) for k in ks])}


class Crossover(TypedDict):
    """What :func:`gaussian_crossover` returns."""

    epsilons: np.ndarray
    laplace: np.ndarray
    gaussian: np.ndarray
    crossover: float | None
    gaussian_wins_above: bool


def gaussian_crossover(laplace, gaussian, workload, delta: float, epsilons: np.ndarray) -> Crossover:
    """Expected RMSE of a Laplace and a Gaussian mechanism at matched (ε, δ) over ``epsilons``, and the ε
    where they cross (Gaussian wins on one side). ``None`` when they do not cross in the range.

    >>> from dplens.core.mechanisms import MECHANISMS
    >>> from dplens.core.queries.workloads import Prefix
    >>> out = gaussian_crossover(MECHANISMS["privelet"], MECHANISMS["gaussian-privelet"], Prefix(256), 1e-6,
    ...                          np.geomspace(0.01, 100, 60))
    >>> round(out["crossover"], 2), out["gaussian_wins_above"]  # Gaussian wins below ε ≈ 1.06
    (1.06, False)
    """
    from dplens.core.privacy.definitions import ApproxDP

    epsilons = np.asarray(epsilons, dtype=float)
    lap = np.array([math.sqrt(laplace.expected_mse(workload, e)) for e in epsilons])
    gau = np.array([math.sqrt(gaussian.expected_mse(workload, ApproxDP(float(e), delta))) for e in epsilons])
    ratio = np.log(gau / lap)
    crossing = None
    change = np.flatnonzero(np.sign(ratio[:-1]) != np.sign(ratio[1:]))
    if change.size:
        i = int(change[0])  # interpolate in log ε between the grid points around the first sign change
        t = ratio[i] / (ratio[i] - ratio[i + 1])
        crossing = float(np.exp(np.log(epsilons[i]) + t * (np.log(epsilons[i + 1]) - np.log(epsilons[i]))))
    return {"epsilons": epsilons, "laplace": lap, "gaussian": gau, "crossover": crossing,
            "gaussian_wins_above": bool(crossing is not None and ratio[-1] < 0)}
