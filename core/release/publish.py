"""One release for the Release page: run it, describe its accuracy (95 % intervals), log it in the history.

The intervals are for the curator, who sees the true data; they are never exported.
Exact where each value carries plain Laplace or Gaussian noise (±b·ln(1/0.05), ±1.96σ), otherwise the
2.5–97.5 % range of the errors over re-runs on a simulation stream (nothing is charged or published).

>>> from core.mechanisms import MECHANISMS
>>> from core.queries.workloads import Identity
>>> release = MECHANISMS["identity"].run(np.array([3.0, 1, 4]), Identity(3), 1.0, np.random.default_rng(0))
>>> bin_halfwidths(release).round(3).tolist()
[2.996, 2.996, 2.996]
"""

from __future__ import annotations

import datetime as dt
import json
import math

import numpy as np
from scipy import special

from core.mechanisms import Mechanism, Release
from core.papers.teaching import laplace_halfwidth
from core.queries.workloads import Workload

LEVEL = 0.95
# Mechanisms whose estimate is x + Lap(b) per cell, i.i.d. (Identity, DP_BASE): exact per-bin intervals.
LAPLACE_HISTOGRAMS = frozenset({"identity", "dp-base"})
# Mechanisms whose answers are W x + Lap(b) per query: exact per-query intervals.
LAPLACE_ANSWERS = frozenset({"laplace-on-answers"})
# Their Gaussian twins: x + N(0, σ²) per cell, W x + N(0, σ²) per query (release.params["sigma"]).
GAUSSIAN_HISTOGRAMS = frozenset({"gaussian-identity"})
GAUSSIAN_ANSWERS = frozenset({"gaussian-answers"})


def exact_noise(release: Release, values: str) -> tuple[str, float, bool] | None:
    """(kind, scale, integer) when every released bin (``values="bins"``) or answer ("answers") carries its
    own i.i.d. Laplace (scale b) or Gaussian (σ) noise; else None (intervals then need simulation).

    ``integer`` is True when the released values are all integers: the secure path then drew OpenDP's
    discrete Laplace or discrete Gaussian (core.privacy.noise), whose quantiles differ from the continuous ones
    (at σ = 0.5 the continuous ±1.96σ covers only 79 % of the discrete Gaussian).

    >>> exact_noise(Release("gaussian-answers", 1.0, 1.0, np.array([0.5, 2]), None, {"sigma": 2.0}), "answers")
    ('gaussian', 2.0, False)
    """
    if values == "bins" and release.estimate is None:
        return None
    laplace, gaussian = ((LAPLACE_HISTOGRAMS, GAUSSIAN_HISTOGRAMS) if values == "bins"
                         else (LAPLACE_ANSWERS, GAUSSIAN_ANSWERS))
    shown = np.asarray(release.estimate if values == "bins" else release.answers, dtype=float)
    integer = bool(shown.size) and bool(np.all(np.isfinite(shown)) and np.all(shown == np.round(shown)))
    if release.mechanism in laplace and release.params.get("noise_scale") is not None:
        return "laplace", float(release.params["noise_scale"]), integer
    if release.mechanism in gaussian and release.params.get("sigma") is not None:
        return "gaussian", float(release.params["sigma"]), integer
    return None


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

    >>> bin_halfwidths(Release("uniform", 1.0, 1.0, np.zeros(2), np.zeros(2))) is None
    True
    """
    noise = exact_noise(release, "bins")
    # exact_noise is None for bins without an estimate
    return None if noise is None else np.full(release.estimate.size, exact_halfwidth(noise, level))  # type: ignore[union-attr]


def answer_halfwidths(release: Release, level: float = LEVEL) -> np.ndarray | None:
    """Exact per-query interval half-widths when the answers carry plain Laplace or Gaussian noise, else None."""
    noise = exact_noise(release, "answers")
    return None if noise is None else np.full(release.answers.size, exact_halfwidth(noise, level))


def simulated_intervals(mechanism: Mechanism, x: np.ndarray, workload: Workload, epsilon: float,
                        trials: int, rng: np.random.Generator,
                        level: float = LEVEL) -> dict[str, np.ndarray | None]:
    """Central ``level`` range of the errors (output − truth) over ``trials`` re-runs, per bin and query.

    Returns ``{"bins_low", "bins_high", "answers_low", "answers_high"}`` (bins are None when the
    mechanism yields no histogram estimate).

    >>> from core.mechanisms import MECHANISMS
    >>> from core.queries.workloads import Prefix
    >>> out = simulated_intervals(MECHANISMS["uniform"], np.array([4.0, 0]), Prefix(2), 1.0, 20,
    ...                           np.random.default_rng(1))
    >>> out["bins_low"].shape, bool(np.all(out["answers_low"] <= out["answers_high"]))
    ((2,), True)
    """
    if trials < 2:
        raise ValueError(f"trials must be >= 2, got {trials!r}")
    truth_bins = np.asarray(x, dtype=float).ravel()
    truth_answers = workload.matvec(truth_bins)
    bins, answers = [], []
    for _ in range(trials):
        release = mechanism.run(x, workload, epsilon, rng)
        answers.append(release.answers - truth_answers)
        if release.estimate is not None:
            bins.append(np.ravel(release.estimate) - truth_bins)
    tail = 100 * (1 - level) / 2
    out: dict[str, np.ndarray | None] = {"bins_low": None, "bins_high": None}
    if bins:
        out["bins_low"], out["bins_high"] = np.percentile(bins, [tail, 100 - tail], axis=0)
    out["answers_low"], out["answers_high"] = np.percentile(answers, [tail, 100 - tail], axis=0)
    return out


def history_entry(release: Release, *, number: int, dataset: str, workload: str, seed: int | None,
                  stream: int | None, noise_path: str, noise_sampler: str | None = None) -> dict[str, object]:
    """One row of the release history: what was charged, how, and how to reproduce it.

    >>> r = Release("identity", 0.5, 0.5, np.zeros(1), np.zeros(1), {"noise_scale": 2.0})
    >>> e = history_entry(r, number=1, dataset="smooth", workload="identity", seed=0, stream=0,
    ...                   noise_path="exploration")
    >>> e["epsilon"], e["params"]
    (0.5, '{"noise_scale": 2.0}')
    """
    return {
        "number": number,
        "time": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "mechanism": release.mechanism,
        "epsilon": release.epsilon,
        "privacy_loss": release.privacy_loss,
        "params": json.dumps(dict(release.params), sort_keys=True, default=_plain),
        "dataset": dataset,
        "workload": workload,
        "noise_path": noise_path,
        "noise_sampler": noise_sampler,
        "seed": seed,
        "stream": stream,
    }


def _plain(value: object) -> object:
    """JSON fallback for NumPy scalars/arrays and anything else (as text)."""
    return value.tolist() if isinstance(value, np.generic | np.ndarray) else str(value)
