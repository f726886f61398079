"""Intervals for every released value, computed from the *released* output only (never the true data).

* Plain Laplace or Gaussian noise on each value (the Laplace/Gaussian histogram on bins, Laplace/Gaussian
  on the answers): exact quantiles, ±b·ln(1/β) or ±σ·Φ⁻¹(1 − β/2) per value, or the Bonferroni widths
  b·ln(k/β) and σ·Φ⁻¹(1 − β/(2k)) for all k values at once.
* The data-independent strategy mechanisms (hb, privelet, greedy-h, mm-opt and their Gaussian twins):
  value i carries Σ_j c_ij z_j, c_i a row of the reconstruction; exact normal quantiles for the Gaussian
  twins, and for Laplace the exact quantile by inverting the characteristic function (half-width within
  0.1 %; ``dplens.core.analysis.strategy_noise``); Bonferroni for all values at once.
* Any other mechanism (or a strategy too large to read row by row): re-run it on a stand-in for the data, the released
  estimate clipped at 0
  (post-processing of the release), and read the spread of output − stand-in. For a data-independent
  mechanism the noise does not depend on the data, so this is its exact noise distribution up to
  Monte-Carlo error. For a data-dependent one it is an approximation and is labelled so. Simultaneous
  intervals use the exact max-of-noise: the level-quantile of max_i |error_i| / spread_i.

>>> import numpy as np
>>> from dplens.core.mechanisms import MECHANISMS
>>> from dplens.core.queries.workloads import Identity
>>> r = MECHANISMS["identity"].run(np.array([3.0, 1, 4]), Identity(3), 1.0, np.random.default_rng(0))
>>> iv = release_intervals(MECHANISMS["identity"], r, Identity(3), rng=np.random.default_rng(1))
>>> iv.method.startswith("exact Laplace"), round(float(iv.upper[0] - r.estimate[0]), 3)
(True, 2.996)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from dplens.core.analysis.strategy_noise import strategy_halfwidths
from dplens.core.mechanisms import MECHANISMS, Mechanism, Release
from dplens.core.mechanisms.measurement import noise_of
from dplens.core.privacy.definitions import Privacy
from dplens.core.queries.workloads import Workload
from dplens.core.validate import fraction, integer

LEVEL = 0.95
def exact_noise(release: Release, values: str) -> tuple[str, float, bool] | None:
    """(kind, scale, integer) when every released bin (``values="bins"``) or answer ("answers") carries its
    own i.i.d. Laplace (scale b) or Gaussian (σ) noise; else None (intervals then need simulation).

    ``integer`` is True when the released values are all integers: the secure path then drew OpenDP's
    discrete Laplace or discrete Gaussian (dplens.core.privacy.noise), whose quantiles differ from the continuous ones
    (at σ = 0.5 the continuous ±1.96σ covers only 79 % of the discrete Gaussian).

    >>> from dplens.core.privacy.definitions import PureDP
    >>> exact_noise(Release("gaussian-answers", PureDP(1.0), 1.0, np.array([0.5, 2]), None, {"sigma": 2.0}), "answers")
    ('gaussian', 2.0, False)
    """
    if values == "bins" and release.estimate is None:
        return None
    # the mechanism's class says where its noise is i.i.d. (iid_noise_on: "bins" or "answers") and of which kind
    mechanism = MECHANISMS.get(release.mechanism)
    if getattr(mechanism, "iid_noise_on", None) != values:
        return None
    noise = noise_of(mechanism, release)
    if noise is None:
        return None
    shown = np.asarray(release.estimate if values == "bins" else release.answers, dtype=float)
    integer = bool(shown.size) and bool(np.all(np.isfinite(shown)) and np.all(shown == np.round(shown)))
    return (*noise, integer)


def exact_halfwidth(noise: tuple[str, float, bool], level: float = LEVEL, values: int = 1) -> float:
    """Half-width t with P(|noise| ≤ t) ≥ level for one value, or for all ``values`` at once (Bonferroni).

    Continuous: Laplace b·ln(k/β), Gaussian σ·Φ⁻¹(1 − β/(2k)), with β = 1 − level and k = ``values``.
    Integer noise: the least integer t with P(|Y| > t) ≤ β/k, for the discrete Laplace
    (P(|Y| > t) = 2q^(t+1)/(1 + q), q = e^(−1/b)) and the discrete Gaussian (summed over the lattice).

    >>> round(exact_halfwidth(("gaussian", 1.0, False)), 4), round(exact_halfwidth(("laplace", 1.0, False)), 4)
    (1.96, 2.9957)
    >>> exact_halfwidth(("laplace", 1.0, True)), exact_halfwidth(("gaussian", 0.5, True))
    (3.0, 1.0)
    """
    kind, scale, integer = noise
    tail = (1 - level) / values  # allowed P(|Y| > t) per value
    if not integer:
        if kind == "laplace":
            return laplace_halfwidth(scale, 1 - tail)
        return float(scale * special.ndtri(1 - tail / 2))
    if kind == "laplace":
        q = math.exp(-1.0 / scale)
        return float(max(0, math.ceil(scale * math.log(2 / ((1 + q) * tail)) - 1e-12) - 1))
    y = np.arange(0, int(40 * scale + 40) + 1, dtype=float)
    mass = np.exp(-(y**2) / (2 * scale**2))
    mass /= 2 * mass.sum() - mass[0]  # both sides of the lattice, zero once
    above = 2 * (mass.sum() - np.cumsum(mass))  # P(|Y| > t) for t = 0, 1, ...
    return float(np.argmax(above <= tail))


def bin_halfwidths(release: Release, level: float = LEVEL) -> np.ndarray | None:
    """Exact per-bin interval half-widths for plain Laplace or Gaussian histograms, else None.

    >>> from dplens.core.privacy.definitions import PureDP
    >>> bin_halfwidths(Release("uniform", PureDP(1.0), 1.0, np.zeros(2), np.zeros(2))) is None
    True
    """
    noise = exact_noise(release, "bins")
    # exact_noise is None for bins without an estimate
    return None if noise is None else np.full(release.estimate.size, exact_halfwidth(noise, level))  # type: ignore[union-attr]


def answer_halfwidths(release: Release, level: float = LEVEL) -> np.ndarray | None:
    """Exact per-query interval half-widths when the answers carry plain Laplace or Gaussian noise, else None."""
    noise = exact_noise(release, "answers")
    return None if noise is None else np.full(release.answers.size, exact_halfwidth(noise, level))


def simulated_intervals(mechanism: Mechanism, x: np.ndarray, workload: Workload, privacy: Privacy | float,
                        trials: int, rng: np.random.Generator,
                        level: float = LEVEL) -> dict[str, np.ndarray | None]:
    """Central ``level`` range of the errors (output − truth) over ``trials`` re-runs at ``privacy``, per bin and
    query.

    Returns ``{"bins_low", "bins_high", "answers_low", "answers_high"}`` (bins are None when the
    mechanism yields no histogram estimate).

    >>> from dplens.core.mechanisms import MECHANISMS
    >>> from dplens.core.queries.workloads import Prefix
    >>> out = simulated_intervals(MECHANISMS["uniform"], np.array([4.0, 0]), Prefix(2), 1.0, 20,
    ...                           np.random.default_rng(1))
    >>> out["bins_low"].shape, bool(np.all(out["answers_low"] <= out["answers_high"]))
    ((2,), True)
    """
    integer("trials", trials, low=2)
    truth_bins = np.asarray(x, dtype=float).ravel()
    truth_answers = workload.matvec(truth_bins)
    bins, answers = [], []
    for _ in range(trials):
        release = mechanism.run(x, workload, privacy, rng)
        answers.append(release.answers - truth_answers)
        if release.estimate is not None:
            bins.append(np.ravel(release.estimate) - truth_bins)
    tail = 100 * (1 - level) / 2
    out: dict[str, np.ndarray | None] = {"bins_low": None, "bins_high": None}
    if bins:
        out["bins_low"], out["bins_high"] = np.percentile(bins, [tail, 100 - tail], axis=0)
    out["answers_low"], out["answers_high"] = np.percentile(answers, [tail, 100 - tail], axis=0)
    return out


def laplace_halfwidth(scale: float, level: float = 0.95) -> float:
    """Half-width t with P(|Lap(b)| <= t) = level: t = b·ln(1/(1 - level)).

    >>> round(laplace_halfwidth(1.0), 4)
    2.9957
    """
    fraction("level", level)
    return float(scale) * math.log(1.0 / (1.0 - level))


@dataclass(frozen=True, eq=False)
class Intervals:
    """lower ≤ value ≤ upper per released value (bins when there is an estimate, else answers)."""

    lower: np.ndarray
    upper: np.ndarray
    level: float
    simultaneous: bool
    method: str


def release_intervals(mechanism: Mechanism, release: Release, workload: Workload, *, level: float = 0.95,
                      simultaneous: bool = False, trials: int = 100,
                      rng: np.random.Generator | None = None) -> Intervals:
    """Intervals for the released values of ``release`` (see the module docstring for the methods)."""
    fraction("level", level)
    values = release.estimate if release.estimate is not None else release.answers
    values = np.asarray(values, dtype=float).ravel()
    beta = 1 - level
    noise = exact_noise(release, "bins" if release.estimate is not None else "answers")
    if noise is not None:  # P(|Lap(b)| > t) = e^{-t/b}, P(|N(0, σ²)| > t) = 2Φ(−t/σ); Bonferroni over all
        half = exact_halfwidth(noise, level, values.size if simultaneous else 1)
        how = "Bonferroni over all values" if simultaneous else "per value"
        return Intervals(values - half, values + half, level, simultaneous,
                         f"exact {noise[0].capitalize()} quantiles ({how})")
    if not mechanism.data_dependent:  # strategy noise L z: exact per value (dplens.core.analysis.strategy_noise)
        halves = strategy_halfwidths(mechanism, release, workload, values="bins" if release.estimate is not None
                                     else "answers", level=level, count=values.size if simultaneous else 1)
        if halves is not None:
            kind = ("normal N(0, σ²‖c_i‖²)" if "sigma" in release.params
                    else "Laplace sum by characteristic-function inversion, half-width within 0.1 %")
            how = "Bonferroni over all values" if simultaneous else "per value"
            return Intervals(values - halves, values + halves, level, simultaneous,
                             f"exact strategy-noise quantiles (data-independent; {kind}; {how})")
    if rng is None:
        raise ValueError("rng is needed for the simulation-based intervals of this mechanism")
    integer("trials", trials, low=10)
    stand_in = np.clip(release.estimate if release.estimate is not None else _least_squares(release, workload),
                       0, None)
    shape = np.shape(release.estimate) if release.estimate is not None else stand_in.shape
    stand_in = stand_in.reshape(shape)
    target = stand_in.ravel() if release.estimate is not None else workload.matvec(stand_in.ravel())
    draws = []
    for _ in range(trials):
        again = mechanism.run(stand_in, workload, release.budget, rng)  # the privacy value it ran at
        out = again.estimate if release.estimate is not None else again.answers
        draws.append(np.asarray(out, dtype=float).ravel() - target)
    errors = np.array(draws)
    if simultaneous:  # exact max-of-noise: one multiple c of each value's spread covers all at once
        spread = np.maximum(np.quantile(np.abs(errors), 0.5, axis=0), 1e-12)
        c = np.quantile(np.max(np.abs(errors) / spread, axis=1), level)
        low, high = -c * spread, c * spread
    else:
        low, high = np.quantile(errors, [beta / 2, 1 - beta / 2], axis=0)
    kind = ("data-dependent: approximate, the noise depends on the data" if mechanism.data_dependent
            else "data-independent: the mechanism's own noise, exact up to simulation error")
    method = (f"simulation from the released output only ({trials} re-runs on the release clipped at 0; {kind}"
              f"{'; simultaneous by the max of the noise' if simultaneous else ''})")
    # value = truth + error, so truth ∈ [value − high, value − low]
    return Intervals(values - high, values - low, level, simultaneous, method)


def _least_squares(release: Release, workload: Workload) -> np.ndarray:
    """A histogram consistent with answers-only releases: least squares W x ≈ answers (post-processing)."""
    from scipy.sparse.linalg import LinearOperator, lsmr

    operator = LinearOperator(workload.shape, matvec=workload.matvec, rmatvec=workload.rmatvec)
    return lsmr(operator, np.asarray(release.answers, dtype=float), maxiter=200)[0]
