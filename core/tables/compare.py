"""Compare table mechanisms across the privacy budget ρ, measured on the true marginals.

Each (mechanism, ρ) pair runs ``trials`` times on independent seeded streams (``trial_rng``, order-free) and
is scored on the workload (RMSE per marginal cell, the papers' measure) and on *evaluation marginals* the
user picks, which may lie outside the workload: the mean total-variation distance between normalised
marginals, the honest test of synthetic data. Mechanisms that release only marginals are scored on the
evaluation marginals they released. The non-private **independence baseline** (the product of the exact
1-way marginals) is scored the same way: a method that does not beat it has learnt no correlation.

>>> from core.queries.marginals import MarginalWorkload, TableDomain
>>> w = MarginalWorkload.all_kway(TableDomain(("a", "b"), (2, 2)), 2)
>>> records = np.array([[0, 0], [1, 1], [1, 1], [0, 1]])
>>> df = compare_tables(records, w, ["identity"], [1.0], trials=2)
>>> df[["mechanism", "rho", "trial"]].values.tolist(), round(float(df.expected_rmse[0]), 4)
([['identity', 1.0, 0], ['identity', 1.0, 1]], 0.7071)
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from core.analysis.bounded import RunTimeLimitError, run_bounded
from core.analysis.experiment import SweepCache, trial_rng
from core.queries.marginals import MarginalWorkload, marginal_counts
from core.tables.contract import TableRelease, check_rho, workload_rmse
from core.tables.mechanisms import table_mechanism

COLUMNS = ["mechanism", "rho", "trial", "rmse", "tvd", "expected_rmse", "seconds"]
BASELINE = "independence (non-private)"


def _distribution(counts: np.ndarray) -> np.ndarray:
    counts = np.clip(np.asarray(counts, dtype=float), 0, None)  # post-processing: a distribution is ≥ 0
    total = counts.sum()
    return counts / total if total > 0 else np.full(counts.shape, 1.0 / counts.size)


def _tvd(truth: np.ndarray, estimate: np.ndarray) -> float:
    return float(0.5 * np.abs(_distribution(truth) - _distribution(estimate)).sum())


def evaluation_tvd(release: TableRelease, evaluation: MarginalWorkload, truth: list[np.ndarray]) -> float:
    """Mean TVD over all the evaluation marginals: from the synthetic records, or else from the released
    marginals (an evaluation marginal inside a released one is its sum, post-processing). NaN when a marginal-only
    release cannot give every evaluation marginal, so that no method is scored on an easier subset."""
    if release.records is not None:
        estimates = evaluation.answer(release.records)
        return float(np.mean([_tvd(t, e) for t, e in zip(truth, estimates, strict=True)]))
    scores = []
    for marginal, true in zip(evaluation.marginals, truth, strict=True):
        inside = [(m, e) for m, e in zip(release.workload.marginals, release.estimates, strict=True)
                  if set(marginal) <= set(m)]
        if not inside:
            return math.nan
        m, estimate = min(inside, key=lambda pair: len(pair[0]))  # the smallest released marginal holding it
        drop = tuple(axis for axis, name in enumerate(m) if name not in marginal)
        scores.append(_tvd(true, np.sum(estimate, axis=drop) if drop else estimate))
    return float(np.mean(scores))


def independence_marginals(evaluation: MarginalWorkload, records: np.ndarray) -> list[np.ndarray]:
    """Each evaluation marginal as the product of its exact 1-way marginals, scaled to the record count."""
    domain, total = evaluation.domain, len(records)
    out = []
    for marginal in evaluation.marginals:
        product = np.ones(())
        for attribute in marginal:
            product = np.multiply.outer(product, _distribution(marginal_counts(domain, records, (attribute,))))
        out.append(product * total)
    return out


def baseline_scores(workload: MarginalWorkload, evaluation: MarginalWorkload, records: np.ndarray) -> dict:
    """RMSE on the workload and mean TVD on the evaluation marginals of the independence baseline."""
    truth_w, truth_e = workload.answer(records), evaluation.answer(records)
    return {"rmse": workload_rmse(workload, truth_w, independence_marginals(workload, records)),
            "tvd": float(np.mean([_tvd(t, e) for t, e in
                                  zip(truth_e, independence_marginals(evaluation, records), strict=True)]))}


def compare_tables(records: np.ndarray, workload: MarginalWorkload, mechanisms: Sequence[str], rhos: Sequence[float],
                   *, trials: int = 3, seed: int = 0, evaluation: MarginalWorkload | None = None,
                   settings: dict[str, dict] | None = None, cache: SweepCache | None = None, data_key: str = "",
                   progress: Callable[[float, str], None] | None = None,
                   should_stop: Callable[[], bool] | None = None, seconds: float | None = None) -> pd.DataFrame:
    """One row per (mechanism, ρ, trial): measured RMSE, evaluation TVD, the closed-form RMSE if any, time.

    With ``cache`` (keyed by ``data_key``, the records' fingerprint) pairs already computed are reused, so
    adding a mechanism or a ρ runs only the new pairs. ``should_stop`` is polled between runs; with ``seconds``
    the whole comparison has that deadline, and each synthesiser run (minutes, hundreds of MB) runs in a worker
    process killed at the deadline (``core.analysis.bounded``), so its memory goes with it. A stopped comparison
    returns the finished rows with ``df.attrs["stopped"] = True``.
    """
    if isinstance(trials, bool) or not isinstance(trials, int) or not 1 <= trials <= 1000:
        raise ValueError(f"trials must be an integer from 1 to 1000, got {trials!r}")
    rhos = [check_rho(r) for r in rhos]
    if not rhos or not mechanisms:
        raise ValueError("choose at least one mechanism and one rho")
    settings = settings or {}
    instances = {name: table_mechanism(name, **settings.get(name, {})) for name in mechanisms}
    evaluation = evaluation or workload
    if evaluation.domain != workload.domain:
        raise ValueError("the evaluation marginals must be on the workload's table")
    truth_w, truth_e = workload.answer(records), evaluation.answer(records)
    frames, computed, stopped = [], 0, False
    total = len(instances) * len(rhos) * trials
    deadline = None if seconds is None else time.monotonic() + float(seconds)
    for name, mechanism in instances.items():
        for rho in rhos:
            key = (data_key, repr((workload, evaluation)), repr(mechanism), rho, trials, int(seed))
            hit = cache.get(key) if cache is not None else None
            if hit is not None:
                frames.append(hit[0])
                computed += trials
                continue
            expected = mechanism.expected_rmse(workload, rho)
            rows = []
            for trial in range(trials):
                if (should_stop is not None and should_stop()) or (deadline is not None and time.monotonic() >= deadline):
                    stopped = True
                    break
                if progress is not None:
                    progress(computed / total, f"{name} at rho={rho:g}, run {trial + 1} of {trials}")
                start = time.perf_counter()
                rng = trial_rng(seed, name, rho, trial)
                report = None
                if progress is not None and mechanism.synthesizes:  # minutes per run: report inside it
                    text = f"{name} at rho={rho:g}, run {trial + 1} of {trials}"
                    report = lambda f, t=text, done=computed: progress((done + f) / total, t)  # noqa: E731
                if deadline is not None and mechanism.synthesizes:
                    try:
                        release = run_bounded(mechanism.run, workload, records, rho, rng, progress=report,
                                              seconds=max(deadline - time.monotonic(), 1e-3), estimated_seconds=60.0)
                    except RunTimeLimitError:
                        stopped = True
                        break
                elif report is not None:
                    release = mechanism.run(workload, records, rho, rng, progress=report)
                else:
                    release = mechanism.run(workload, records, rho, rng)
                seconds = time.perf_counter() - start
                if release.privacy_loss > rho * (1 + 1e-9):
                    raise RuntimeError(f"{name} spent rho={release.privacy_loss!r} > {rho!r}")  # a bug, not input
                rows.append([name, rho, trial, workload_rmse(workload, truth_w, release.estimates),
                             evaluation_tvd(release, evaluation, truth_e),
                             math.nan if expected is None else expected, seconds])
                computed += 1
            frame = pd.DataFrame(rows, columns=COLUMNS)
            if rows:
                frames.append(frame)
            if stopped:
                break
            if cache is not None:
                cache.put(key, frame)
        if stopped:
            break
    if progress is not None:
        progress(1.0, "done")
    df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COLUMNS)
    df.attrs["stopped"] = stopped
    return df


def summarise_tables(df: pd.DataFrame) -> pd.DataFrame:
    """Mean and standard deviation over trials per (mechanism, ρ)."""
    return (df.groupby(["mechanism", "rho"], sort=False)
            .agg(rmse=("rmse", "mean"), rmse_std=("rmse", "std"), tvd=("tvd", "mean"), tvd_std=("tvd", "std"),
                 expected_rmse=("expected_rmse", "first"), trials=("trial", "count"), seconds=("seconds", "mean"))
            .reset_index())
