"""Compare table mechanisms across the privacy budget ρ, measured on the true marginals.

Each (mechanism, ρ) pair runs ``trials`` times on independent seeded streams (``trial_rng``, order-free) and
is scored on the workload (RMSE per marginal cell, the papers' measure) and on *evaluation marginals* the
user picks, which may lie outside the workload: the mean total-variation distance between normalised
marginals, the honest test of synthetic data. Mechanisms that release only marginals are scored on the
evaluation marginals they released. The non-private **independence baseline** (the product of the exact
1-way marginals) is scored the same way: a method that does not beat it has learnt no correlation.

>>> from dplens.core.data.domain import Domain
>>> from dplens.core.queries.marginals import MarginalWorkload
>>> w = MarginalWorkload.all_kway(Domain(("a", "b"), (2, 2)), 2)
>>> records = np.array([[0, 0], [1, 1], [1, 1], [0, 1]])
>>> df = compare_tables(records, w, ["gaussian-marginals"], [1.0], trials=2)
>>> df[["mechanism", "rho", "trial"]].values.tolist(), round(float(df.expected_rmse[0]), 4)
([['gaussian-marginals', 1.0, 0], ['gaussian-marginals', 1.0, 1]], 0.7071)
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from dplens.core.analysis.bounded import RunTimeLimitError, run_bounded
from dplens.core.analysis.execution import Cell, CellResult, run_cell
from dplens.core.analysis.experiment import SweepCache
from dplens.core.mechanisms.contract import Release
from dplens.core.privacy.definitions import ZCDP
from dplens.core.queries.marginals import MarginalWorkload, marginal_counts
from dplens.core.tables.contract import check_rho, workload_rmse
from dplens.core.tables.mechanisms import table_mechanism
from dplens.core.validate import integer

COLUMNS = ["mechanism", "rho", "trial", "rmse", "tvd", "expected_rmse", "seconds"]
BASELINE = "independence (non-private)"


def _distribution(counts: np.ndarray) -> np.ndarray:
    counts = np.clip(np.asarray(counts, dtype=float), 0, None)  # post-processing: a distribution is ≥ 0
    total = counts.sum()
    return counts / total if total > 0 else np.full(counts.shape, 1.0 / counts.size)


def _tvd(truth: np.ndarray, estimate: np.ndarray) -> float:
    return float(0.5 * np.abs(_distribution(truth) - _distribution(estimate)).sum())


def evaluation_tvd(release: Release, evaluation: MarginalWorkload, truth: list[np.ndarray]) -> float:
    """Mean TVD over all the evaluation marginals: from the synthetic records, or else from the released
    marginals (an evaluation marginal inside a released one is its sum, post-processing). NaN when a marginal-only
    release cannot give every evaluation marginal, so that no method is scored on an easier subset."""
    if release.records is not None:
        estimates = evaluation.answer(release.records)
        return float(np.mean([_tvd(t, e) for t, e in zip(truth, estimates, strict=True)]))
    scores = []
    for marginal, true in zip(evaluation.marginals, truth, strict=True):
        inside = [(m, e) for m, e in release.by_marginal() if set(marginal) <= set(m)]
        if not inside:
            return math.nan
        m, estimate = min(inside, key=lambda pair: len(pair[0]))  # the smallest released marginal holding it
        drop = tuple(axis for axis, name in enumerate(m) if name not in marginal)
        scores.append(_tvd(true, np.sum(estimate, axis=drop) if drop else estimate))
    return float(np.mean(scores))


@dataclass(frozen=True, eq=False)
class TableContext:
    """What the runs of one comparison share, read by ``dplens.core.analysis.execution.run_cell`` as a histogram
    sweep's ``Context``: the records the mechanisms run on, and how a release scores (RMSE per query on the
    workload, mean TVD on the evaluation marginals, against their true values)."""

    records: np.ndarray
    workload: MarginalWorkload
    evaluation: MarginalWorkload
    truth_workload: list[np.ndarray]
    truth_evaluation: list[np.ndarray]
    seed: int = 0
    metrics: tuple[str, ...] = ("rmse", "tvd")

    @property
    def data(self) -> np.ndarray:
        return self.records

    def privacy_at(self, rho: float) -> ZCDP:
        """A table sweep's axis is ρ itself."""
        return ZCDP(rho)

    def scores(self, release: Release) -> np.ndarray:
        rho = release.allowed_loss
        if release.privacy_loss > rho * (1 + 1e-9):
            raise RuntimeError(f"{release.mechanism} spent rho={release.privacy_loss!r} > {rho!r}")  # a bug, not input
        estimates = [estimate for _, estimate in release.by_marginal()]
        return np.array([workload_rmse(self.workload, self.truth_workload, estimates),
                         evaluation_tvd(release, self.evaluation, self.truth_evaluation)])


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


# Compare-only settings of the synthesisers: estimation (post-processing) only, never the measurements, so each run
# is still a full ρ run of the same mechanism. MST's final model at 300 mirror-descent iterations scores within
# COMPARE_TOLERANCE of the release's 1000 fitted on the same measurements, on the sample table
# (bench/bench_tables_compare.py --full-fit). Other synthesisers were not measured: they run as released.
COMPARE_SETTINGS: dict[str, dict] = {"mst": {"iters": 300}}
COMPARE_TOLERANCE = 0.10     # relative difference of mean TVD and RMSE allowed between Compare's fit and the full fit
SYNTH_TRIALS = 1             # the page's default runs per ρ for a synthesiser in Compare (closed forms: ``trials``)
# Expected seconds of one run, until runs of the mechanism have finished (then their mean is used): a synthesiser
# run in a worker on a few attributes (the worker's start-up, OpenDP's noise calibration, the fit; MST on the sample
# table: 25 to 85 s on 2 shared cores), a closed form.
EXPECTED_SECONDS = {"mst": 30.0, "identity-pgm": 30.0, "aim": 240.0}
FAST_SECONDS = 0.05


def compare_settings(name: str, settings: dict | None = None) -> dict:
    """The settings Compare runs ``name`` with: COMPARE_SETTINGS under the user's own ``settings``."""
    return {**COMPARE_SETTINGS.get(name, {}), **(settings or {})}


def compare_note(names: Sequence[str], trials: int, synth_trials: int | None = None) -> str:
    """One line for the page: what Compare runs differently from a release (empty when nothing differs)."""
    from dplens.core.tables.mechanisms import TABLE_MECHANISMS

    parts = []
    for name in names:
        mechanism = TABLE_MECHANISMS[name]
        if not mechanism.synthesizes:
            continue
        runs = trials if synth_trials is None else synth_trials
        what = [f"{runs} run{'s' if runs != 1 else ''} per ρ" + (f" (the others: {trials})" if runs != trials else "")]
        for key, value in COMPARE_SETTINGS.get(name, {}).items():
            what.append(f"{value} estimator iterations; the release uses {getattr(mechanism, key)}"
                        if key == "iters" else f"{key} {value}; the release uses {getattr(mechanism, key)}")
        parts.append(f"{name.upper() if name in ('mst', 'aim') else name} in Compare: {', '.join(what)}")
    return ". ".join(parts) + ("." if parts else "")


def _clock(seconds: float) -> str:
    seconds = max(float(seconds), 0.0)
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.1f} min"


class _Clock:
    """Progress by expected time: every run weighs its expected seconds (the mean of its mechanism's finished runs,
    else EXPECTED_SECONDS); the text says the elapsed time and about how long is left."""

    def __init__(self, jobs: list[tuple[str, bool]], workers: int, progress) -> None:
        self.start, self.progress, self.workers = time.monotonic(), progress, max(workers, 1)
        self.left: dict[str, int] = {}  # name -> runs not finished
        self.synth: dict[str, bool] = {}  # name -> whether it is a synthesiser
        for name, synth in jobs:
            self.left[name] = self.left.get(name, 0) + 1
            self.synth[name] = synth
        self.observed: dict[str, list[float]] = {}
        self.shown = 0.0

    def expected(self, name: str) -> float:
        seen = self.observed.get(name)
        if seen:
            return float(np.mean(seen))
        return EXPECTED_SECONDS.get(name, 30.0) if self.synth[name] else FAST_SECONDS

    def finished(self, name: str, seconds: float) -> None:
        self.observed.setdefault(name, []).append(seconds)
        self.left[name] -= 1

    def remaining(self, running: dict | None = None) -> float:
        """Seconds of wall time left: fast runs one after another, synthesiser runs ``workers`` at a time."""
        running = running or {}
        fast = sum(n * self.expected(name) for name, n in self.left.items() if not self.synth[name])
        synth = sum(n * self.expected(name) for name, n in self.left.items() if self.synth[name])
        for name, fraction, *started in running.values():  # (name, fraction of ρ measured[, perf_counter start])
            expected = self.expected(name)
            ran = time.perf_counter() - started[0] if started else 0.0
            # what is left of a running run: its estimate less the larger of its time so far and its share of ρ
            # measured; a run past its estimate is not nearly done: a tenth of its time so far
            left = max(expected - max(ran, min(fraction, 1.0) * expected), 0.1 * ran, 0.05 * expected)
            synth -= expected - left
        return fast + max(synth, 0.0) / self.workers

    def report(self, text: str, running: dict | None = None) -> None:
        if self.progress is None:
            return
        elapsed = time.monotonic() - self.start
        left = self.remaining(running)
        self.shown = max(self.shown, elapsed / (elapsed + left) if elapsed + left > 0 else 1.0)
        self.progress(min(self.shown, 0.99), f"{text} · {_clock(elapsed)} elapsed, about {_clock(left)} left")


def _label(name: str, rho: float, trial: int, trials: int) -> str:
    return f"{name.upper() if name in ('mst', 'aim') else name} ρ={rho:g} trial {trial + 1}/{trials}"


def compare_tables(records: np.ndarray, workload: MarginalWorkload, mechanisms: Sequence[str], rhos: Sequence[float],
                   *, trials: int = 3, seed: int = 0, evaluation: MarginalWorkload | None = None,
                   settings: dict[str, dict] | None = None, cache: SweepCache | None = None, data_key: str = "",
                   progress: Callable[[float, str], None] | None = None,
                   should_stop: Callable[[], bool] | None = None, seconds: float | None = None,
                   synth_trials: int | None = None, workers: int | None = None) -> pd.DataFrame:
    """One row per (mechanism, ρ, trial): measured RMSE, evaluation TVD, the closed-form RMSE if any, time.

    With ``cache`` (keyed by ``data_key``, the records' fingerprint) pairs already computed are reused, so
    adding a mechanism or a ρ runs only the new pairs. ``should_stop`` is polled between runs; with ``seconds``
    the whole comparison has that deadline, and each synthesiser run (minutes, hundreds of MB) runs in a worker
    process killed at the deadline (``dplens.core.analysis.bounded``), so its memory goes with it; ``workers`` such
    runs (default: one more than the machine's cores, at most 4) run at once. A stopped comparison returns the finished
    rows with ``df.attrs["stopped"] = True``.

    Synthesisers run with :data:`COMPARE_SETTINGS` under ``settings`` (estimation only: the same measurements at
    the full ρ) and ``synth_trials`` runs per ρ (default ``trials``). ``progress(fraction, text)``: the fraction of
    the expected time, the text with the elapsed time and an estimate of what is left.
    """
    rhos = _checked(trials, synth_trials, rhos, mechanisms)
    instances = _instances(mechanisms, settings or {})
    evaluation = evaluation or workload
    if evaluation.domain != workload.domain:
        raise ValueError("the evaluation marginals must be on the workload's table")
    context = TableContext(records, workload, evaluation, workload.answer(records), evaluation.answer(records),
                           int(seed))
    deadline = None if seconds is None else time.monotonic() + float(seconds)
    # one more than the cores: three runs on two cores end after 1.5 runs' time, not 2 (at most 4: memory)
    workers = workers or min((os.cpu_count() or 1) + 1, 4)

    def runs_of(mechanism) -> int:
        return (synth_trials or trials) if mechanism.synthesizes else trials

    pairs, done, jobs = _plan(instances, rhos, runs_of, cache,
                              (data_key, repr((workload, evaluation))), int(seed))
    clock = _Clock([(pairs[i][0], instances[pairs[i][0]].synthesizes) for i, _ in jobs], workers, progress)
    rows: dict[int, list] = {}
    stopped = False

    def score(index: int, trial: int, result: CellResult, spent: float | None = None) -> None:
        if result.error is not None:
            raise ValueError(result.error)
        name, rho, _ = pairs[index]
        mse = instances[name].expected_mse(workload, rho)
        expected = math.nan if mse is None else math.sqrt(mse)
        spent = float(result.seconds[0]) if spent is None else spent
        rmse, tvd = (float(v) for v in result.values[0])
        rows.setdefault(index, []).append([name, rho, trial, rmse, tvd, expected, spent])
        clock.finished(name, spent)

    def halted() -> bool:
        return (should_stop is not None and should_stop()) or (deadline is not None and time.monotonic() >= deadline)

    # Closed forms (and synthesisers without a deadline) in this process, one run after another.
    pooled = [job for job in jobs if instances[pairs[job[0]][0]].synthesizes and deadline is not None]
    for index, trial in (job for job in jobs if job not in pooled):
        name, rho, _ = pairs[index]
        mechanism = instances[name]
        if halted():
            stopped = True
            break
        text = _label(name, rho, trial, runs_of(mechanism))
        clock.report(text)
        options = {}
        if progress is not None and mechanism.synthesizes:
            options["progress"] = lambda f, t=text, n=name: clock.report(t, {0: (n, f)})
        score(index, trial, run_cell(context, _cell(mechanism, rho, trial), **options))  # type: ignore[arg-type]  # TableContext reads like a Context
    if not stopped and pooled:
        stopped = _run_pooled(pooled, pairs, instances, context, deadline, workers, clock, score, halted, runs_of)
    frames = _frames(pairs, done, rows, cache, lambda name: runs_of(instances[name]))
    if progress is not None:
        progress(1.0, f"done in {_clock(time.monotonic() - clock.start)}")
    df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COLUMNS)
    df.attrs["stopped"] = stopped
    return df


def _checked(trials: int, synth_trials: int | None, rhos: Sequence[float], mechanisms: Sequence[str]) -> list[float]:
    """The ρ values, checked, once the run counts are integers in [1, 1000] and something is chosen."""
    for label, value in (("trials", trials), ("synth_trials", trials if synth_trials is None else synth_trials)):
        integer(label, value, 1, 1000)
    checked = [check_rho(r) for r in rhos]
    if not checked or not mechanisms:
        raise ValueError("choose at least one mechanism and one rho")
    return checked


def _instances(mechanisms: Sequence[str], settings: dict[str, dict]) -> dict:
    """Each named table mechanism with its settings; synthesisers with the comparison's (estimation) settings."""
    instances = {}
    for name in mechanisms:
        mechanism = table_mechanism(name, **settings.get(name, {}))
        if mechanism.synthesizes and COMPARE_SETTINGS.get(name):
            mechanism = table_mechanism(name, **compare_settings(name, settings.get(name)))
        instances[name] = mechanism
    return instances


def _plan(instances: dict, rhos: Sequence[float], runs_of: Callable, cache: SweepCache | None, key_prefix: tuple,
          seed: int) -> tuple[list, dict, list]:
    """The (mechanism, ρ) pairs in order with their cache keys, the pairs the cache already holds (by index), and
    the (pair index, trial) runs still to do."""
    pairs, done, jobs = [], {}, []
    for name, mechanism in instances.items():
        for rho in rhos:
            n = runs_of(mechanism)
            key = (*key_prefix, repr(mechanism), rho, n, seed)
            pairs.append((name, rho, key))
            hit = cache.get(key) if cache is not None else None
            if hit is not None:
                done[len(pairs) - 1] = {"frame": hit[0]}
            else:
                jobs += [(len(pairs) - 1, trial) for trial in range(n)]
    return pairs, done, jobs


def _frames(pairs: list, done: dict, rows: dict, cache: SweepCache | None, runs: Callable[[str], int]) -> list:
    """One frame per pair that has rows (cached, or run now); a pair run to completion goes into the cache."""
    frames = []
    for index, (name, _rho, key) in enumerate(pairs):
        if index in done:
            frames.append(done[index]["frame"])
            continue
        found = sorted(rows.get(index, []), key=lambda row: row[2])
        if not found:
            continue
        frame = pd.DataFrame(found, columns=COLUMNS)
        frames.append(frame)
        if cache is not None and len(found) == runs(name):
            cache.put(key, frame)
    return frames


def _cell(mechanism, rho: float, trial: int) -> Cell:
    """Trial ``trial`` of a table mechanism at ρ (``run_cell`` passes ρ where a histogram cell passes ε)."""
    return Cell(0, mechanism, rho, trial, trial + 1)


def _run_pooled(jobs, pairs, instances, context: TableContext, deadline, workers, clock, score, halted,
                runs_of) -> bool:
    """Synthesiser runs in bounded worker processes, ``workers`` at a time (threads wait on them; progress is
    reported from this thread only). True when stopped (asked to, or at the deadline)."""
    running: dict = {}   # future -> (job, name, perf_counter at its start)
    fractions: dict = {}
    todo = list(jobs)
    stopped = False
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="dplens-compare") as pool:
        while todo or running:
            while todo and len(running) < workers and not stopped:
                if halted():
                    stopped = True
                    break
                index, trial = job = todo.pop(0)
                name, rho, _ = pairs[index]
                fractions[job] = 0.0
                report = lambda f, j=job: fractions.__setitem__(j, float(f))  # noqa: E731
                future = pool.submit(_bounded_run, context, _cell(instances[name], rho, trial), report, deadline)
                running[future] = (job, name, time.perf_counter())
            if stopped and not running:
                break
            finished, _ = wait(list(running), timeout=0.5, return_when=FIRST_COMPLETED)
            for future in finished:
                job, name, start = running.pop(future)
                try:
                    result = future.result()
                except RunTimeLimitError:
                    stopped = True
                    continue
                score(job[0], job[1], result, time.perf_counter() - start)
            if running:
                job, name, _ = next(iter(running.values()))
                name, rho, _ = pairs[job[0]]
                more = f" (+{len(running) - 1} running)" if len(running) > 1 else ""
                clock.report(_label(name, rho, job[1], runs_of(instances[name])) + more,
                             {j: (n, fractions.get(j, 0.0), t) for j, n, t in running.values()})
            if stopped:
                todo.clear()
    return stopped


def _bounded_run(context: TableContext, cell: Cell, report, deadline) -> CellResult:
    return run_bounded(_worker_run, context, cell, progress=report, seconds=max(deadline - time.monotonic(), 1e-3),
                       estimated_seconds=60.0)


def jax_cache_dir() -> Path | None:
    """Where synthesiser workers keep JAX's compiled programs (``$DPLENS_JAX_CACHE``, ``off`` for none; default
    ``$DPLENS_HOME/jax-cache``, beside the ledger store: the programs' shapes follow the attribute pairs MST picked
    on the private table, so they stay in the installation's private folder, made 0700)."""
    from dplens.core.privacy.store import default_path

    value = os.environ.get("DPLENS_JAX_CACHE")
    if value is not None:
        return None if value.strip().lower() in ("", "off", "0", "none") else Path(value)
    return default_path().parent / "jax-cache"


def _use_jax_cache() -> None:
    """JAX's persistent compilation cache, for this (worker) process: each worker is a fresh process that would
    compile private-pgm's ~300 programs again (about a quarter of an MST run on the sample table). Best effort."""
    folder = jax_cache_dir()
    if folder is None:
        return
    with contextlib.suppress(Exception):
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        import jax

        jax.config.update("jax_compilation_cache_dir", str(folder))
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


def _worker_run(context: TableContext, cell: Cell, progress=None) -> CellResult:
    """One synthesiser run in a worker, scored there (``run_cell``), with JAX's compilation cache on (compiled
    programs only: no data, no noise, nothing of the release is kept)."""
    _use_jax_cache()
    return run_cell(context, cell, **({} if progress is None else {"progress": progress}))  # type: ignore[arg-type]  # TableContext reads like a Context


def summarise_tables(df: pd.DataFrame) -> pd.DataFrame:
    """Mean and standard deviation over trials per (mechanism, ρ)."""
    return (df.groupby(["mechanism", "rho"], sort=False)
            .agg(rmse=("rmse", "mean"), rmse_std=("rmse", "std"), tvd=("tvd", "mean"), tvd_std=("tvd", "std"),
                 expected_rmse=("expected_rmse", "first"), trials=("trial", "count"), seconds=("seconds", "mean"))
            .reset_index())
