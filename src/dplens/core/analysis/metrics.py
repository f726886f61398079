"""Error metrics between true and released values (per query or per bin).

Each metric in ``METRICS`` takes ``(true, noisy, *, total)``; ``total`` is the histogram's record
count, used only by the scaled error. ``per_element_error`` gives the per-query/per-bin view.

>>> true, noisy = np.array([10.0, 0, 5]), np.array([12.0, -1, 5])
>>> mae(true, noisy), max_abs(true, noisy), round(rmse(true, noisy), 4)
(1.0, 2.0, 1.291)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from dplens.core.validate import positive

if TYPE_CHECKING:  # type names only: mechanisms import nothing from here
    from dplens.core.mechanisms import Mechanism
    from dplens.core.privacy.definitions import Privacy
    from dplens.core.queries.workloads import Workload

RELATIVE_FLOOR = 1.0   # δ in MRE = mean |err| / max(true, δ) (Chen et al. 2024, SReB_GCA, Eq. 5)
KL_FLOOR = 1.0         # κ: released counts are floored at κ before normalising (see kl_divergence)


def _pair(true, noisy) -> tuple[np.ndarray, np.ndarray]:
    true, noisy = np.asarray(true, dtype=float), np.asarray(noisy, dtype=float)
    if true.shape != noisy.shape:
        raise ValueError(f"true and released values differ in shape: {true.shape} vs {noisy.shape}")
    if true.size == 0:
        raise ValueError("metrics need at least one value")
    return true, noisy


def mae(true, noisy, *, total: float | None = None) -> float:
    """Mean absolute error (L1 per query)."""
    true, noisy = _pair(true, noisy)
    return float(np.mean(np.abs(noisy - true)))


def mse(true, noisy, *, total: float | None = None) -> float:
    """Mean squared error per query."""
    true, noisy = _pair(true, noisy)
    return float(np.mean((noisy - true) ** 2))


def rmse(true, noisy, *, total: float | None = None) -> float:
    """Root mean squared error per query."""
    return float(np.sqrt(mse(true, noisy)))


def scaled_error(true, noisy, *, total: float | None = None) -> float:
    """Average L1 error per query divided by the histogram's total (DPBench's scaled error).

    >>> scaled_error([1.0, 1.0], [2.0, 0.0], total=100)
    0.01
    """
    if total is None or not total > 0:
        raise ValueError(f"scaled error needs the histogram total > 0, got {total!r}")
    return mae(true, noisy) / float(total)


def max_abs(true, noisy, *, total: float | None = None) -> float:
    """Largest absolute error over queries."""
    true, noisy = _pair(true, noisy)
    return float(np.max(np.abs(noisy - true)))


def mean_relative_error(true, noisy, *, total: float | None = None, floor: float = RELATIVE_FLOOR) -> float:
    """Mean of |err| / max(|true|, δ), δ = ``floor`` (default 1).

    >>> mean_relative_error([0.0, 10.0], [1.0, 5.0])
    0.75
    """
    true, noisy = _pair(true, noisy)
    positive("relative-error floor", floor)
    return float(np.mean(np.abs(noisy - true) / np.maximum(np.abs(true), floor)))


def kl_divergence(true, noisy, *, total: float | None = None, floor: float = KL_FLOOR) -> float:
    """KL(p‖q) with p = H/ΣH and q = max(H̃, κ)/Σ max(H̃, κ) (κ = ``floor``).

    Chen et al. 2024 (SReB_GCA) write Σ H_j log(H_j/H̃_j), which is neither normalised nor defined when a
    released count is ≤ 0; we normalise both sides and floor the released counts at κ.

    >>> kl_divergence([1.0, 1.0], [1.0, 1.0])
    0.0
    """
    true, noisy = _pair(true, noisy)
    positive("KL floor κ", floor)
    if not true.sum() > 0:
        raise ValueError("KL divergence needs a histogram with a positive total")
    p = true / true.sum()
    q = np.maximum(noisy, floor)
    q = q / q.sum()
    mask = p > 0
    return float(np.sum(p[mask] * np.log(p[mask] / q[mask])))


def per_element_error(true, noisy, kind: str = "abs", *, floor: float = RELATIVE_FLOOR) -> np.ndarray:
    """Per-query (or per-bin) error: ``abs``, ``squared`` or ``relative``."""
    true, noisy = _pair(true, noisy)
    err = noisy - true
    if kind == "abs":
        return np.abs(err)
    if kind == "squared":
        return err**2
    if kind == "relative":
        return np.abs(err) / np.maximum(np.abs(true), floor)
    raise ValueError(f"kind must be 'abs', 'squared' or 'relative', got {kind!r}")


METRICS: dict[str, Callable[..., float]] = {
    "mae": mae,
    "mse": mse,
    "rmse": rmse,
    "scaled": scaled_error,
    "max": max_abs,
    "mre": mean_relative_error,
    "kld": kl_divergence,
}

# Metrics compare histograms (bin estimates), not workload answers.
HISTOGRAM_METRICS = frozenset({"kld"})

METRIC_LABELS = {
    "mae": "MAE (mean |error| per query)",
    "mse": "MSE per query",
    "rmse": "RMSE per query",
    "scaled": "scaled error (MAE / total)",
    "max": "max |error|",
    "mre": "mean relative error (floor 1)",
    "kld": "KL divergence of the histogram (floor 1)",
}


# Metrics undefined on a histogram whose total is 0 (all bins zero, a fair input: teaching demos use it), and why.
NEEDS_POSITIVE_TOTAL = {
    "scaled": "it divides the mean |error| by the histogram's total",
    "kld": "it compares the histogram normalised by its total",
}


def check_metrics(metrics: Sequence[str], *, total: float | None = None) -> tuple[str, ...]:
    """``metrics`` checked before anything runs: at least one, each a ``METRICS`` key, and (given the histogram's
    ``total``) each defined on that histogram. Only the metrics named are ever computed, so a metric that is not
    asked for cannot refuse an input.

    >>> check_metrics(["mae", "rmse"], total=0.0)
    ('mae', 'rmse')
    >>> check_metrics(["rmse", "scaled"], total=0.0)
    Traceback (most recent call last):
    ...
    ValueError: metric 'scaled' (scaled error (MAE / total)) needs a histogram total > 0, got 0: it divides the \
mean |error| by the histogram's total; choose another metric (mae, mse, rmse, max, mre)
    """
    metrics = tuple(metrics)
    unknown = [m for m in metrics if m not in METRICS]
    if unknown or not metrics:
        raise ValueError(f"unknown metrics {unknown}; choose from {', '.join(METRICS)}")
    if total is not None and not total > 0:
        for metric in metrics:
            if metric in NEEDS_POSITIVE_TOTAL:
                others = ", ".join(m for m in METRICS if m not in NEEDS_POSITIVE_TOTAL)
                raise ValueError(f"metric {metric!r} ({METRIC_LABELS[metric]}) needs a histogram total > 0, got "
                                 f"{total:g}: {NEEDS_POSITIVE_TOTAL[metric]}; choose another metric ({others})")
    return metrics


def expected_metrics(mechanism: Mechanism, workload: Workload, privacy: Privacy | float) -> dict[str, float]:
    """The analytic MSE and RMSE per query of ``mechanism`` on ``workload`` at ``privacy``, keyed by metric
    (NaN where the mechanism states no ``expected_mse``, and for the other metrics).

    >>> from dplens.core.mechanisms import MECHANISMS
    >>> from dplens.core.queries.workloads import Prefix
    >>> round(expected_metrics(MECHANISMS["identity"], Prefix(4), 1.0)["mse"], 6)
    5.0
    """
    try:
        value = mechanism.expected_mse(workload, privacy)
    except ValueError:
        value = None
    mse = math.nan if value is None else float(value)
    return {metric: mse if metric == "mse" else math.sqrt(mse) if metric == "rmse" else math.nan
            for metric in METRICS}
