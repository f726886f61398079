"""(ε_u, δ_u)-usefulness bounds of Xiao, Xiong & Yuan (TR-2010-003), as pure functions.

Notation warning: in this report α is the DP parameter and (ε_u, δ_u) are the usefulness
parameters (Blum–Ligett–Roth): with probability ≥ 1 − δ_u every answer is within ε_u.

Interval queries on released cell fractions (Theorems 4.2/5.2, Lemma 4.1): a release with per-cell
noise Lap(b), b = Δ/(α n), fails with probability ≤ β·exp(−ε_u/(β b)); Δ = 1 for add/remove and 2
for replace-one neighbours. The report's sensitivity 1/n on fractions is too small: under add/remove n itself
changes, so every fraction moves, and under replace-one two cells change by 1/n each; either way its
Lap(1/(α n)) costs up to 2α.

>>> round(interval_min_records(100, 0.05, 0.02, 0.05), 2)
760090.25
"""

from __future__ import annotations

import math

from dplens.core.privacy.definitions import cell_sensitivity
from dplens.core.validate import fraction, integer, positive


def _cells(beta: int) -> int:
    return integer("beta (number of cells)", beta)


def _log_argument(value: float, what: str) -> float:
    if not value > 1:
        raise ValueError(f"{what} = {value:.6g} must be > 1 for the bound to be meaningful; "
                         "use more cells, a smaller error or a smaller failure probability")
    return math.log(value)


def interval_min_records(beta: int, alpha: float, eps_u: float, delta_u: float, *,
                         neighbouring: str = "add_remove") -> float:
    """Smallest n for which cell release is (ε_u, δ_u)-useful for all interval queries (Thm 4.2/5.2).

    n ≥ Δ·β·ln(β/δ_u)/(α ε_u); the paper's 2-D case (β = 8000, ε_u = 0.01) needs 1.917×10⁸.

    >>> f"{interval_min_records(8000, 0.05, 0.01, 0.05):.6e}"
    '1.917269e+08'
    """
    beta, alpha = _cells(beta), positive("alpha", alpha)
    eps_u, delta_u = positive("eps_u", eps_u), fraction("delta_u", delta_u)
    log = _log_argument(beta / delta_u, "beta/delta_u")
    return cell_sensitivity(neighbouring) * beta * log / (alpha * eps_u)


def interval_failure_probability(n: float, beta: int, alpha: float, eps_u: float, *,
                                 neighbouring: str = "add_remove") -> float:
    """Bound on P(some interval errs by more than ε_u): β·exp(−ε_u/(β b)), b = Δ/(α n) (Lemma 4.1).

    The bound may exceed 1 (then it says nothing).

    >>> round(interval_failure_probability(1e6, 100, 0.05, 0.02), 5)
    0.00454
    """
    n, beta = positive("n", n), _cells(beta)
    alpha, eps_u = positive("alpha", alpha), positive("eps_u", eps_u)
    scale = cell_sensitivity(neighbouring) / (alpha * n)
    return beta * math.exp(-eps_u / (beta * scale))


def interval_sensitivity_bound(beta: int, alpha: float, eps_u: float, delta_u: float) -> float:
    """Largest global sensitivity GS of a cell fraction that keeps (ε_u, δ_u)-usefulness: α ε_u/(β ln(β/δ_u)).

    >>> f"{interval_sensitivity_bound(100, 0.05, 0.02, 0.05):.5e}"
    '1.31563e-06'
    """
    beta, alpha = _cells(beta), positive("alpha", alpha)
    eps_u, delta_u = positive("eps_u", eps_u), fraction("delta_u", delta_u)
    return alpha * eps_u / (beta * _log_argument(beta / delta_u, "beta/delta_u"))


def max_query_lemma42(beta: int, alpha: float, eps_u: float) -> tuple[float, float]:
    """Lemma 4.2 for the (literal) max query: (minimum n, the δ_u = e^α/(e^α+1) it guarantees).

    n ≥ (β/(α ε_u))·ln(β/(ε_u(e^α+1))). The δ_u > 1/2 makes the guarantee nearly vacuous (Xiao et al., Sec. 4.1.2).

    >>> n, delta_u = max_query_lemma42(100, 0.05, 5)
    >>> round(n, 3), round(delta_u, 6)
    (910.909, 0.512497)
    """
    beta, alpha, eps_u = _cells(beta), positive("alpha", alpha), positive("eps_u", eps_u)
    growth = math.exp(alpha) + 1
    log = _log_argument(beta / (eps_u * growth), "beta/(eps_u·(e^alpha+1))")
    return beta / (alpha * eps_u) * log, math.exp(alpha) / growth


def max_query_min_records(beta: int, alpha: float, eps_u: float, delta_u: float) -> float:
    """Theorem 4.4: n ≥ (β/(α ε_u))·ln(β/(ε_u δ_u (e^α+1)²)), valid only for δ_u < 1/(e^α+1).

    >>> round(max_query_min_records(100, 0.05, 5, 0.1), 2)
    1544.56
    """
    beta, alpha, eps_u = _cells(beta), positive("alpha", alpha), positive("eps_u", eps_u)
    delta_u = fraction("delta_u", delta_u)
    growth = math.exp(alpha) + 1
    if not delta_u < 1 / growth:
        raise ValueError(f"Theorem 4.4 needs delta_u < 1/(e^alpha+1) = {1 / growth:.6g}, got {delta_u!r}")
    log = _log_argument(beta / (eps_u * delta_u * growth**2), "beta/(eps_u·delta_u·(e^alpha+1)²)")
    return beta / (alpha * eps_u) * log
