"""Sweep runner: mechanisms × epsilons × trials on a histogram and workload → tidy DataFrame.

Columns: ``mechanism, epsilon, trial, metric, value, seconds, expected``. ``expected`` is the analytic
value of the metric (MSE, RMSE) where the mechanism states ``expected_mse``, else NaN. Each trial's
noise comes from ``trial_rng(seed, mechanism, epsilon, trial)``, so results do not depend on order.

>>> from core.domain import Histogram
>>> from core.workloads import Prefix
>>> h = Histogram.from_counts([5.0, 0, 3, 8])
>>> df = run_sweep(h, Prefix(4), ["identity"], [1.0], trials=2, metrics=["rmse"])
>>> sorted(df.columns), len(df)
(['epsilon', 'expected', 'mechanism', 'metric', 'seconds', 'trial', 'value'], 2)
"""

from __future__ import annotations

import math
import struct
import time
import zlib
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from core.cost import Deadline, RunLimits, RunTooLargeError, check_cost, estimate_cost
from core.domain import Histogram
from core.limits import MAX_SWEEP_RUNS  # mechanisms × epsilons × trials refused beyond this
from core.mechanisms import MECHANISMS, Mechanism, check_budget_epsilon, check_epsilon
from core.metrics import HISTOGRAM_METRICS, METRICS
from core.workloads import Workload


def trial_rng(seed: int, mechanism: str, epsilon: float, trial: int) -> np.random.Generator:
    """An independent stream per (seed, mechanism, epsilon, trial), independent of run order.

    >>> a = trial_rng(1, "identity", 0.5, 3).random()
    >>> b = trial_rng(1, "identity", 0.5, 3).random()
    >>> a == b, a == trial_rng(1, "identity", 0.5, 4).random()
    (True, False)
    """
    high, low = struct.unpack("<II", struct.pack("<d", float(epsilon)))
    return np.random.default_rng([int(seed) & 0xFFFFFFFF, zlib.crc32(mechanism.encode()), high, low, int(trial)])


def resolve_mechanisms(mechanisms: Sequence[str | Mechanism]) -> list[Mechanism]:
    """Names (registry keys) or instances → instances; unknown names raise ValueError listing the choices."""
    resolved = []
    for m in mechanisms:
        if isinstance(m, str):
            if m not in MECHANISMS:
                raise ValueError(f"unknown mechanism {m!r}; choose from {', '.join(MECHANISMS)}")
            m = MECHANISMS[m]
        resolved.append(m)
    if not resolved:
        raise ValueError("choose at least one mechanism")
    return resolved


def _expected(mechanism: Mechanism, workload: Workload, epsilon: float, metric: str) -> float:
    if metric not in ("mse", "rmse"):
        return math.nan
    try:
        value = mechanism.expected_mse(workload, epsilon)
    except ValueError:
        return math.nan
    if value is None:
        return math.nan
    return float(value) if metric == "mse" else math.sqrt(value)


def run_sweep(histogram: Histogram, workload: Workload, mechanisms: Sequence[str | Mechanism],
              epsilons: Sequence[float], trials: int, *, seed: int = 0,
              metrics: Sequence[str] = ("mae", "rmse"),
              progress: Callable[[int, int, str], None] | None = None,
              should_stop: Callable[[], bool] | None = None,
              deadline: Deadline | None = None, limits: RunLimits | None = None) -> pd.DataFrame:
    """Run every mechanism at every epsilon ``trials`` times and measure the chosen metrics.

    Mechanisms that reject this input (e.g. a 2-D-only mechanism on 1-D data) are skipped; their
    messages are in ``df.attrs["errors"]``. With ``limits``, mechanisms whose estimated run
    (``core.cost``) is over the memory or time limit are left out before anything runs; the reasons
    are in ``df.attrs["left_out"]``. ``df.attrs["stopped"]`` is True when ``should_stop`` or the
    ``deadline`` (checked between trials) ended the sweep early; ``df.attrs["stop_reason"]`` says why.
    """
    instances = resolve_mechanisms(mechanisms)
    epsilons = [check_budget_epsilon(e) for e in epsilons]
    if not epsilons:
        raise ValueError("choose at least one epsilon")
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        raise ValueError(f"trials must be an integer >= 1, got {trials!r}")
    unknown = [m for m in metrics if m not in METRICS]
    if unknown or not metrics:
        raise ValueError(f"unknown metrics {unknown}; choose from {', '.join(METRICS)}")
    left_out = _over_limits(instances, workload, limits) if limits is not None else {}
    instances = [m for m in instances if m.name not in left_out]
    total_runs = len(instances) * len(epsilons) * trials
    if total_runs > MAX_SWEEP_RUNS:
        raise ValueError(f"sweep has {total_runs} runs (mechanisms × epsilons × trials); "
                         f"the limit is {MAX_SWEEP_RUNS}")
    if workload.shape[1] != histogram.domain.size:
        raise ValueError(f"workload has {workload.shape[1]} columns but the histogram has "
                         f"{histogram.domain.size} cells")

    counts, vector, total = histogram.counts, histogram.vector, histogram.total
    true_answers = workload.matvec(vector)
    rows: list[tuple] = []
    errors: dict[str, str] = {}
    done, stopped = 0, False
    for mechanism in instances:
        for position, epsilon in enumerate(epsilons):
            expected = {m: _expected(mechanism, workload, epsilon, m) for m in metrics}
            for trial in range(trials):
                if (should_stop is not None and should_stop()) or (deadline is not None and deadline.expired):
                    stopped = True
                    break
                start = time.perf_counter()
                try:
                    release = mechanism.run(counts, workload, epsilon,
                                            trial_rng(seed, mechanism.name, epsilon, trial))
                except ValueError as err:
                    errors[mechanism.name] = str(err)
                    done += (len(epsilons) - position) * trials - trial  # every skipped run counts
                    break
                seconds = time.perf_counter() - start
                for metric in metrics:
                    if metric in HISTOGRAM_METRICS:
                        value = (METRICS[metric](vector, release.estimate, total=total)
                                 if release.estimate is not None else math.nan)
                    else:
                        value = METRICS[metric](true_answers, release.answers, total=total)
                    rows.append((mechanism.name, epsilon, trial, metric, value, seconds, expected[metric]))
                done += 1
                if progress is not None:
                    progress(done, total_runs, mechanism.name)
            if stopped or mechanism.name in errors:
                break
        if stopped:
            break
    df = pd.DataFrame(rows, columns=["mechanism", "epsilon", "trial", "metric", "value", "seconds", "expected"])
    df.attrs["errors"] = errors
    df.attrs["left_out"] = left_out
    df.attrs["stopped"] = stopped
    df.attrs["stop_reason"] = (deadline.reason if deadline is not None and deadline.expired else
                               "stopped" if stopped else "")
    return df


def _over_limits(instances: Sequence[Mechanism], workload: Workload, limits: RunLimits) -> dict[str, str]:
    """name -> why it is left out: one run's estimate is over the memory or time limit for this input."""
    reasons = {}
    for mechanism in instances:
        try:
            check_cost(estimate_cost(mechanism, workload), limits, what="one run")
        except RunTooLargeError as err:
            reasons[mechanism.name] = f"left out: {err}"
    return reasons


def summarise(df: pd.DataFrame) -> pd.DataFrame:
    """Mean, 2.5/97.5 % band over trials, analytic value and mean seconds per (mechanism, epsilon, metric).

    The band is the empirical 2.5–97.5 % range of single-trial errors: what one release may give.
    """
    if df.empty:
        return pd.DataFrame(columns=["mechanism", "epsilon", "metric", "mean", "low", "high", "expected",
                                     "seconds", "trials"])
    grouped = df.groupby(["mechanism", "epsilon", "metric"], sort=False)
    out = grouped["value"].agg(mean="mean", low=lambda v: np.quantile(v, 0.025),
                               high=lambda v: np.quantile(v, 0.975), trials="size")
    out["expected"] = grouped["expected"].first()
    out["seconds"] = grouped["seconds"].mean()
    return out.reset_index()


def regret(df: pd.DataFrame, metric: str) -> pd.DataFrame:
    """DPBench regret: each mechanism's mean error ÷ the best mean error at that epsilon, averaged over ε."""
    means = df[df["metric"] == metric].groupby(["epsilon", "mechanism"])["value"].mean().unstack()
    best = means.min(axis=1)
    ratio = means.div(best.where(best > 0), axis=0)
    return ratio.mean(axis=0).sort_values().rename("regret").reset_index()


def replay(histogram: Histogram, workload: Workload, mechanism: str | Mechanism, epsilon: float, trial: int,
           *, seed: int = 0):
    """Re-run one (mechanism, epsilon, trial) of a sweep with the same ``trial_rng``: the identical release.

    >>> from core.workloads import Prefix
    >>> h = Histogram.from_counts([5.0, 0, 3, 8])
    >>> df = run_sweep(h, Prefix(4), ["identity"], [1.0], trials=2, metrics=["mae"], seed=4)
    >>> r = replay(h, Prefix(4), "identity", 1.0, 1, seed=4)
    >>> bool(np.isclose(np.abs(r.answers - Prefix(4).matvec(h.vector)).mean(), df.value.iloc[1]))
    True
    """
    (instance,) = resolve_mechanisms([mechanism])
    return instance.run(histogram.counts, workload, check_epsilon(epsilon),
                        trial_rng(seed, instance.name, epsilon, trial))


def per_bin_errors(histogram: Histogram, workload: Workload, mechanism: str | Mechanism, epsilon: float,
                   trials: int, *, seed: int = 0) -> np.ndarray | None:
    """Mean |estimate − x| per bin over the sweep's first ``trials`` trials (None: no histogram estimate).

    The per-bin view (error against the true bin count) that SReB_GCA's small-bin argument is about.
    """
    total = np.zeros(histogram.domain.size)
    for trial in range(trials):
        release = replay(histogram, workload, mechanism, epsilon, trial, seed=seed)
        if release.estimate is None:
            return None
        total += np.abs(np.asarray(release.estimate, dtype=float).ravel() - histogram.vector)
    return total / trials
