"""Intervals for every released value, computed from the *released* output only (never the true data).

* Plain Laplace or Gaussian noise on each value (the Laplace/Gaussian histogram on bins, Laplace/Gaussian
  on the answers): exact quantiles, ±b·ln(1/β) or ±σ·Φ⁻¹(1 − β/2) per value, or the Bonferroni widths
  b·ln(k/β) and σ·Φ⁻¹(1 − β/(2k)) for all k values at once.
* The data-independent strategy mechanisms (hb, privelet, greedy-h, mm-opt and their Gaussian twins):
  value i carries Σ_j c_ij z_j, c_i a row of the reconstruction; exact normal quantiles for the Gaussian
  twins, and for Laplace the exact quantile by inverting the characteristic function (half-width within
  0.1 %; ``core.analysis.strategy_noise``); Bonferroni for all values at once.
* Any other mechanism (or a strategy too large to read row by row): re-run it on a stand-in for the data, the released estimate clipped at 0
  (post-processing of the release), and read the spread of output − stand-in. For a data-independent
  mechanism the noise does not depend on the data, so this is its exact noise distribution up to
  Monte-Carlo error. For a data-dependent one it is an approximation and is labelled so. Simultaneous
  intervals use the exact max-of-noise: the level-quantile of max_i |error_i| / spread_i.

>>> import numpy as np
>>> from core.mechanisms import MECHANISMS
>>> from core.queries.workloads import Identity
>>> r = MECHANISMS["identity"].run(np.array([3.0, 1, 4]), Identity(3), 1.0, np.random.default_rng(0))
>>> iv = release_intervals(MECHANISMS["identity"], r, Identity(3), rng=np.random.default_rng(1))
>>> iv.method.startswith("exact Laplace"), round(float(iv.upper[0] - r.estimate[0]), 3)
(True, 2.996)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.analysis.strategy_noise import strategy_halfwidths
from core.mechanisms import Mechanism, Release
from core.queries.workloads import Workload
from core.release.publish import exact_halfwidth, exact_noise


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
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    values = release.estimate if release.estimate is not None else release.answers
    values = np.asarray(values, dtype=float).ravel()
    beta = 1 - level
    noise = exact_noise(release, "bins" if release.estimate is not None else "answers")
    if noise is not None:  # P(|Lap(b)| > t) = e^{-t/b}, P(|N(0, σ²)| > t) = 2Φ(−t/σ); Bonferroni over all
        half = exact_halfwidth(noise, level, values.size if simultaneous else 1)
        how = "Bonferroni over all values" if simultaneous else "per value"
        return Intervals(values - half, values + half, level, simultaneous,
                         f"exact {noise[0].capitalize()} quantiles ({how})")
    if not mechanism.data_dependent:  # strategy noise L z: exact per value (core.analysis.strategy_noise)
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
    if not (isinstance(trials, int) and trials >= 10):
        raise ValueError(f"trials must be an integer >= 10, got {trials!r}")
    stand_in = np.clip(release.estimate if release.estimate is not None else _least_squares(release, workload),
                       0, None)
    shape = np.shape(release.estimate) if release.estimate is not None else stand_in.shape
    stand_in = stand_in.reshape(shape)
    target = stand_in.ravel() if release.estimate is not None else workload.matvec(stand_in.ravel())
    draws = []
    for _ in range(trials):
        again = mechanism.run(stand_in, workload, release.epsilon, rng)
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
