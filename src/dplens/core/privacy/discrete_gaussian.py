"""The exact privacy curve of the discrete Gaussian (Canonne, Kamath & Steinke 2020), and σ calibrated on it.

Releases on integer counts draw OpenDP's discrete Gaussian N_Z(0, σ²) (``dplens.core.privacy.noise``). Its (ε, δ)
curve is not the continuous Gaussian's: CKS 2020 Thm. 7 gives it exactly for an integer shift Δ,
δ(ε) = P[Y > εσ²/Δ − Δ/2] − e^ε P[Y > εσ²/Δ + Δ/2], Y ~ N_Z(0, σ²), computed here as the
hockey-stick sum Σ_y max(0, p(y) − e^ε p(y − Δ)) over the lattice. At the analytic-Gaussian σ it
is larger than the continuous δ (by 2–4 % at ε = 1, up to ×5 at ε = 20, δ = 1e-4), so a discrete
Gaussian release under (ε, δ) uses ``discrete_gaussian_sigma`` (the least σ, on a 1e-4 relative grid
above the continuous one, whose exact discrete δ(ε) is at most δ). zCDP needs no correction:
N_Z(0, σ²) is Δ²/(2σ²)-zCDP like the continuous Gaussian (CKS 2020 Prop. 5 / Thm. 4).

>>> round(discrete_gaussian_delta(1.0, 3.730632) / 1e-5, 4)  # continuous δ(1) = 1e-5 at this σ
1.0346
>>> sigma = discrete_gaussian_sigma(1.0, 1e-5)
>>> round(sigma, 3), discrete_gaussian_delta(1.0, sigma) <= 1e-5
(3.741, True)
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy import special

from dplens.core.privacy.definitions import analytic_gaussian_sigma, check_delta
from dplens.core.search import bisect_monotone
from dplens.core.validate import positive

_TAIL_SIGMAS = 40  # the lattice sum stops 40σ (+ 40) past where the terms start: e^-800 is far below any δ
_STEP = 1e-4  # relative σ grid of the calibration search
_MAX_STEPS = 200_000  # ×e^20 above the continuous σ: never reached (the worst ratio seen is below ×2)


def _log_normaliser(sigma: float) -> float:
    """log Σ_y exp(−y²/2σ²): by Poisson summation σ√(2π) Σ_k exp(−2π²σ²k²) (exact; 3 terms suffice)."""
    if sigma >= 1.0:
        k = np.arange(1, 4)
        return math.log(sigma * math.sqrt(2 * math.pi)) + math.log1p(2 * float(np.exp(-2 * math.pi**2 * sigma**2
                                                                                       * k**2).sum()))
    y = np.arange(-int(_TAIL_SIGMAS * sigma + 40), int(_TAIL_SIGMAS * sigma + 40) + 1, dtype=float)
    return float(special.logsumexp(-(y**2) / (2 * sigma**2)))


def discrete_gaussian_delta(epsilon: float, sigma: float, sensitivity: int = 1) -> float:
    """The least δ for which x + N_Z(0, σ²) is (ε, δ)-DP under an integer shift ``sensitivity`` (CKS 2020 Thm. 7).

    >>> discrete_gaussian_delta(1.0, 1.0) > 0.1269  # the continuous curve says 0.12694
    True
    """
    positive("sigma", sigma)
    if sensitivity != int(sensitivity) or sensitivity < 0:
        raise ValueError(f"sensitivity must be a non-negative integer (a shift on the lattice), got {sensitivity!r}")
    if sensitivity == 0:
        return 0.0
    # p(y) > e^ε p(y − Δ) exactly when y < Δ/2 − εσ²/Δ: sum that half-line, from its edge 40σ down
    edge = math.ceil(sensitivity / 2 - epsilon * sigma**2 / sensitivity)
    y = np.arange(min(edge, 0) - int(_TAIL_SIGMAS * sigma + 40), edge + 1, dtype=float)
    log_z = _log_normaliser(sigma)
    log_p = -(y**2) / (2 * sigma**2) - log_z
    log_ratio = epsilon - ((y - sensitivity) ** 2 - y**2) / (2 * sigma**2)  # log of e^ε p(y − Δ) / p(y)
    keep = log_ratio < 0  # p(y) − e^ε p(y − Δ) = p(y)(1 − e^ratio) > 0; never forms e^ε (overflow at large ε)
    return float(math.fsum(np.exp(log_p[keep]) * -np.expm1(log_ratio[keep])))


@functools.lru_cache(maxsize=4096)
def discrete_gaussian_sigma(epsilon: float, delta: float, sensitivity: int = 1) -> float:
    """The least σ ≥ the continuous analytic-Gaussian σ (on a 1e-4 relative grid) with discrete δ(ε) ≤ δ.

    The discrete curve is not monotone in σ at small σ, so this steps up from the continuous σ rather
    than bisecting; the answer is checked, not assumed.

    >>> round(discrete_gaussian_sigma(8.0, 1e-6) / analytic_gaussian_sigma(8.0, 1e-6), 3)
    1.01
    """
    delta = check_delta(delta)
    sigma = analytic_gaussian_sigma(epsilon, delta, float(sensitivity))
    for _ in range(_MAX_STEPS):
        if discrete_gaussian_delta(epsilon, sigma, sensitivity) <= delta:
            return sigma
        sigma *= 1.0 + _STEP
    raise ValueError(f"no discrete Gaussian sigma found for epsilon={epsilon!r}, delta={delta!r}")


def discrete_gaussian_epsilon(sigma: float, delta: float, sensitivity: int = 1) -> float:
    """The least ε at which x + N_Z(0, σ²) is (ε, δ)-DP (bisection: δ(ε) is non-increasing in ε); rounded up.

    >>> round(discrete_gaussian_epsilon(discrete_gaussian_sigma(1.0, 1e-5), 1e-5), 4) <= 1.0
    True
    """
    delta = check_delta(delta)
    if discrete_gaussian_delta(0.0, sigma, sensitivity) <= delta:
        return 0.0
    low, high = 0.0, 1.0
    while discrete_gaussian_delta(high, sigma, sensitivity) > delta:
        low, high = high, high * 2.0
    return bisect_monotone(lambda e: discrete_gaussian_delta(e, sigma, sensitivity) <= delta, low, high,
                           true_side="high", rtol=1e-12)[1]


__all__ = ["discrete_gaussian_delta", "discrete_gaussian_epsilon", "discrete_gaussian_sigma"]
