"""One release for the Release page: run it, describe its accuracy (95 % intervals), log it in the history.

The intervals are for the curator, who sees the true data; they are never exported.
Exact where the noise is plain Laplace (±b·ln(1/0.05), spec §1 baselines), otherwise the
2.5–97.5 % range of the errors over re-runs on a simulation stream (nothing is charged or published).

>>> from core.mechanisms import MECHANISMS
>>> from core.workloads import Identity
>>> release = MECHANISMS["identity"].run(np.array([3.0, 1, 4]), Identity(3), 1.0, np.random.default_rng(0))
>>> bin_halfwidths(release).round(3).tolist()
[2.996, 2.996, 2.996]
"""

from __future__ import annotations

import datetime as dt
import json

import numpy as np

from core.mechanisms import Mechanism, Release
from core.teaching import laplace_halfwidth
from core.workloads import Workload

LEVEL = 0.95
# Mechanisms whose estimate is x + Lap(b) per cell, i.i.d. (spec §1): exact per-bin intervals.
LAPLACE_HISTOGRAMS = frozenset({"identity", "dp-base"})
# Mechanisms whose answers are W x + Lap(b) per query: exact per-query intervals.
LAPLACE_ANSWERS = frozenset({"laplace-on-answers"})


def bin_halfwidths(release: Release, level: float = LEVEL) -> np.ndarray | None:
    """Exact per-bin interval half-widths for Laplace histograms, else None.

    >>> bin_halfwidths(Release("uniform", 1.0, 1.0, np.zeros(2), np.zeros(2))) is None
    True
    """
    scale = release.params.get("noise_scale")
    if release.mechanism not in LAPLACE_HISTOGRAMS or release.estimate is None or scale is None:
        return None
    return np.full(release.estimate.size, laplace_halfwidth(float(scale), level))


def answer_halfwidths(release: Release, level: float = LEVEL) -> np.ndarray | None:
    """Exact per-query interval half-widths when the answers carry plain Laplace noise, else None."""
    scale = release.params.get("noise_scale")
    if release.mechanism not in LAPLACE_ANSWERS or scale is None:
        return None
    return np.full(release.answers.size, laplace_halfwidth(float(scale), level))


def simulated_intervals(mechanism: Mechanism, x: np.ndarray, workload: Workload, epsilon: float,
                        trials: int, rng: np.random.Generator,
                        level: float = LEVEL) -> dict[str, np.ndarray | None]:
    """Central ``level`` range of the errors (output − truth) over ``trials`` re-runs, per bin and query.

    Returns ``{"bins_low", "bins_high", "answers_low", "answers_high"}`` (bins are None when the
    mechanism yields no histogram estimate).

    >>> from core.mechanisms import MECHANISMS
    >>> from core.workloads import Prefix
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
