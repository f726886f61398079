"""Sweep runner: mechanisms × epsilons × trials on a histogram and workload → tidy DataFrame.

Columns: ``mechanism, epsilon, trial, metric, value, seconds, expected``. ``expected`` is the analytic
value of the metric (MSE, RMSE) where the mechanism states ``expected_mse``, else NaN. Each trial's
noise comes from ``trial_rng(seed, mechanism, epsilon, trial)``, so results do not depend on order.

>>> from dplens.core.data.domain import Histogram
>>> from dplens.core.queries.workloads import Prefix
>>> h = Histogram.from_counts([5.0, 0, 3, 8])
>>> df = run_sweep(h, Prefix(4), ["identity"], [1.0], trials=2, metrics=["rmse"])
>>> sorted(df.columns), len(df)
(['epsilon', 'expected', 'mechanism', 'metric', 'seconds', 'trial', 'value'], 2)
"""

from __future__ import annotations

import collections
import contextlib
import multiprocessing
import threading
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from dplens.core.analysis.cost import Deadline, RunLimits, RunTooLargeError, check_cost, estimate_cost, runs_seconds
from dplens.core.analysis.execution import (  # trial_rng, resolve_mechanisms: re-exported for callers of this module
    Cell,
    CellResult,
    Context,
    StrategyJob,
    StrategyResult,
    default_block,
    execute,
    install_snapshot,
    job_entries,
    load_strategies,
    parse_scheduler,
    resolve_auto,
    resolve_mechanisms,
    save_strategies,
    trial_rng,
)
from dplens.core.analysis.metrics import METRICS, check_metrics, expected_metrics
from dplens.core.analysis.strategy_store import StrategyStore
from dplens.core.data.domain import Histogram
from dplens.core.data.fingerprint import dataset_fingerprint
from dplens.core.data.limits import MAX_SWEEP_RUNS  # mechanisms × epsilons × trials refused beyond this
from dplens.core.mechanisms import Mechanism, check_budget_epsilon
from dplens.core.privacy.definitions import PURE_AXIS, EpsilonAxis
from dplens.core.queries.workloads import Prefix, Workload
from dplens.core.validate import integer

# The Compare page's default selection: DPBench's standard 1-D mechanisms and its two baselines.
DEFAULT_COMPARE_MECHANISMS = ("identity", "hb", "privelet", "dawa", "mwem", "ahp", "uniform", "laplace-on-answers")
# DPBench's baselines: a sweep runs them first (with the data-independent mechanisms), so they are never the ones a
# time limit cuts.
REFERENCE_MECHANISMS = ("identity", "uniform")


def run_order(mechanisms: Sequence[Mechanism]) -> list[Mechanism]:
    """The order a sweep runs its mechanisms in: the references, then the data-independent mechanisms (their error
    has a closed form or an analytic value), then the data-dependent ones (simulated only); the given order within
    each. Results do not depend on it (``trial_rng``); it decides what is drawn first and what a time limit cuts.

    >>> from dplens.core.mechanisms import MECHANISMS
    >>> [m.name for m in run_order([MECHANISMS[n] for n in ("dawa", "hb", "uniform", "mwem", "identity")])]
    ['uniform', 'identity', 'hb', 'dawa', 'mwem']
    """
    def rank(mechanism: Mechanism) -> int:
        return 0 if mechanism.name in REFERENCE_MECHANISMS else 2 if mechanism.data_dependent else 1

    return sorted(mechanisms, key=rank)  # stable: the given order within a rank


class SweepCache:
    """Runs per (dataset fingerprint, workload, mechanism and its settings, ε, seed): every metric of trials
    0..k−1 (a trial's noise depends only on its own index: ``trial_rng``).

    ``run_sweep(..., cache=c)`` runs only what ``c`` lacks: adding a mechanism or an epsilon runs only the new
    cells, more trials only the new trials, fewer trials or other metrics nothing. Holds at most ``limit``
    pairs (oldest dropped).

    >>> from dplens.core.queries.workloads import Prefix
    >>> cache, h = SweepCache(), Histogram.from_counts([5.0, 0, 3, 8])
    >>> _ = run_sweep(h, Prefix(4), ["identity"], [1.0], trials=2, cache=cache)
    >>> df = run_sweep(h, Prefix(4), ["identity", "uniform"], [1.0], trials=2, cache=cache)
    >>> df.attrs["computed"], len(cache)
    (2, 2)
    >>> run_sweep(h, Prefix(4), ["identity"], [1.0], trials=3, metrics=("mae",), cache=cache).attrs["computed"]
    1
    >>> run_sweep(h, Prefix(4), ["identity"], [1.0], trials=3, metrics=("max",), cache=cache).attrs["computed"]
    3
    """

    def __init__(self, limit: int = 4096) -> None:
        self.limit = limit
        self._entries: dict[tuple, tuple[pd.DataFrame | None, str | None]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: tuple) -> tuple[pd.DataFrame | None, str | None] | None:
        """(rows, None), (None, error message) or None when the pair was never completed."""
        return self._entries.get(key)

    def put(self, key: tuple, rows: pd.DataFrame | None, error: str | None = None) -> None:
        """Remember one completed (mechanism, ε) pair: its rows, or the message it was skipped with."""
        self._entries.pop(key, None)
        while len(self._entries) >= self.limit:
            self._entries.pop(next(iter(self._entries)))
        self._entries[key] = (rows, error)


def _pair_key(data: str, workload: Workload, mechanism: Mechanism, epsilon: float, seed: int,
              axis: EpsilonAxis) -> tuple:
    from dplens.core.mechanisms.greedy_h import workload_key

    return (data, workload_key(workload), repr(mechanism), float(epsilon), int(seed), axis)


COLUMNS = ["mechanism", "epsilon", "trial", "metric", "value", "seconds", "expected"]
UNKNOWN = dict.fromkeys(METRICS, float("nan"))  # the expected metrics of a pair whose strategy job never finished


def _trials_held(entry: tuple[pd.DataFrame | None, str | None] | None, metrics: Sequence[str]) -> int:
    """How many leading trials (0..k−1, each with every one of ``metrics``) a cache entry holds; an error entry
    counts as complete."""
    if entry is None:
        return 0
    rows, error = entry
    if error is not None or rows is None:
        return 1 << 30
    per_trial = rows[rows.metric.isin(metrics)].groupby("trial").metric.nunique()
    trials = sorted(per_trial.index[per_trial == len(set(metrics))].tolist())
    return next((k for k, t in enumerate(trials) if t != k), len(trials))


def run_sweep(histogram: Histogram, workload: Workload, mechanisms: Sequence[str | Mechanism],
              epsilons: Sequence[float], trials: int, *, seed: int = 0,
              metrics: Sequence[str] = ("mae", "rmse"), progress: Callable[[int, int, str], None] | None = None,
              should_stop: Callable[[], bool] | None = None,
              deadline: Deadline | None = None, limits: RunLimits | None = None,
              scheduler: str | None = "serial", cache: SweepCache | None = None, store: StrategyStore | None = None,
              on_partial: Callable[[pd.DataFrame], None] | None = None, axis: EpsilonAxis = PURE_AXIS) -> pd.DataFrame:
    """Run every mechanism at every epsilon ``trials`` times and measure the chosen metrics. Each is handed
    ``axis.privacy(ε)``: ε itself (pure ε-DP, the default axis) or "ε at δ" under (ε, δ)-DP or ρ-zCDP.

    Cells run through ``dplens.core.analysis.execution`` on ``scheduler`` ("serial", "processes[:N]", "local:N",
    "tcp://HOST:8786", or "auto": serial when the runs are estimated under 6 s, else processes); the numbers are
    identical whichever is used. With ``cache``, pairs already computed are reused and only new ones run
    (``df.attrs["computed"]`` counts the runs made). With ``store``, data-independent strategies are loaded from it
    and saved to it. Mechanisms that reject this input are skipped, with messages in ``df.attrs["errors"]``. With
    ``limits``, mechanisms whose estimated run (``dplens.core.analysis.cost``) is over the memory or time limit are
    left out before anything runs; the reasons are in ``df.attrs["left_out"]``.
    ``df.attrs["stopped"]`` is True when ``should_stop`` or the ``deadline`` ended the sweep early
    (checked between trials when serial; on workers, pending cells are cancelled within 0.1 s and
    running ones finish unseen); ``df.attrs["stop_reason"]`` says why.

    Mechanisms run in ``run_order``: the references and the data-independent ones first, the data-dependent ones
    last. With ``on_partial``, each time a mechanism's last run arrives (and once at the start when the cache holds
    whole mechanisms), it is called with the rows of every mechanism finished so far, in the sweep's order, the same
    rows the returned frame holds for them; its ``attrs["running"]`` names the mechanisms still running. On a
    parallel backend the strategies a sweep lacks are computed in the workers, beside the cells that need none.

    >>> seen = []
    >>> df = run_sweep(Histogram.from_counts([5.0, 0, 3, 8]), Prefix(4), ["uniform", "identity"], [1.0], trials=2,
    ...                on_partial=lambda part: seen.append((sorted(set(part.mechanism)), part.attrs["running"])))
    >>> seen
    [(['uniform'], ['identity']), (['identity', 'uniform'], [])]
    """
    instances, epsilons, left_out = _checked(histogram, workload, mechanisms, epsilons, trials, metrics, limits)
    total_runs = len(instances) * len(epsilons) * trials
    metrics = tuple(metrics)
    context = Context(histogram, workload, metrics, int(seed), axis)  # only these metrics are computed
    data = dataset_fingerprint(histogram) if cache is not None else ""
    pairs = [(m, e) for m in instances for e in epsilons]  # the frame's order; cells run in run_order
    keys = {(m.name, e): _pair_key(data, workload, m, e, seed, axis) for m, e in pairs}
    cached = {p: cache.get(keys[p[0].name, p[1]]) for p in pairs} if cache is not None else {}
    have = {p: _trials_held(cached.get(p), metrics) for p in pairs}  # trials 0..k−1 held (all for an error)
    todo = [(m, e) for m in run_order(instances) for e in epsilons if have[m, e] < trials]
    scheduler = resolve_auto(scheduler, _serial_seconds(instances, workload, {p: trials - have[p] for p in todo}))
    plan = parse_scheduler(scheduler)
    block = default_block(len(todo), trials, plan.workers)
    cells = [Cell(0, m, e, t, min(t + block, trials)) for m, e in todo for t in range(have[m, e], trials, block)]
    computed = load_strategies(instances, workload, store) if store is not None else []
    # one expected_mse per pair: strategies held here or in the store are shipped as they are; on a parallel backend
    # those still to compute are StrategyJobs in the workers (errors come back with them), serially computed here
    parallel = plan.kind != "serial" and bool(cells)
    job_names = {m.name for m in computed if not any(job_entries(m, workload).values())} if parallel else set()
    jobs = [StrategyJob(0, m, tuple(epsilons)) for m in run_order(instances) if m.name in job_names]
    at = context.privacy_at
    expected = {(m.name, e): expected_metrics(m, workload, at(e)) for m, e in pairs if m.name not in job_names}

    def strategy_done(result: StrategyResult) -> None:
        install_snapshot(result.entries)  # here too: the store saves them, and a later sweep reuses them
        for e in result.job.epsilons:
            expected[result.job.mechanism.name, e] = result.expected[e]

    if store is not None and not jobs:
        save_strategies(computed, workload, store)

    # Stop button or the action's deadline (dplens.core.analysis.cost), polled between trials and cells
    def stop() -> bool:
        return bool((should_stop is not None and should_stop()) or (deadline is not None and deadline.expired))

    done = total_runs - sum(trials - have[p] for p in todo)
    counted = None if progress is None else lambda runs, name: progress(done + runs, total_runs, name)
    partial = None if on_partial is None else _Partial(
        on_partial, pairs, cells, lambda pair, found: _pair_rows(pair[0].name, pair[1], found, expected[
            pair[0].name, pair[1]], cached.get(pair), trials, metrics, None, None))
    results, errors = _run_cells(context, cells, scheduler, stop, counted, jobs, strategy_done, partial)
    if store is not None and jobs:
        save_strategies([m for m in computed if all((m.name, e) in expected for e in epsilons)], workload, store)
    return _sweep_frame(pairs, cells, results, errors, cached, expected, keys, cache, trials, metrics, left_out,
                        deadline)


def _sweep_frame(pairs: list, cells: list, results: dict, errors: dict, cached: dict, expected: dict, keys: dict,
                 cache: SweepCache | None, trials: int, metrics: tuple[str, ...], left_out: dict[str, str],
                 deadline: Deadline | None) -> pd.DataFrame:
    """The sweep's frame: rows in ``pairs``' order from the finished cells (canonical order, whatever order they
    finished in), the cached pairs and the errors, with the attrs ``run_sweep`` documents."""
    stopped = len(results) < len(cells) or any(
        r.error is None and len(r.values) < r.cell.runs for r in results.values())
    failed = set(errors)
    by_pair: dict[tuple[str, float], list] = {}
    for index in sorted(results):  # canonical order, whatever order cells finished in
        cell = results[index].cell
        if cell.mechanism.name not in failed:
            by_pair.setdefault((cell.mechanism.name, cell.epsilon), []).append(results[index])
    rows: list[tuple] = []
    for mechanism, epsilon in pairs:
        entry = cached.get((mechanism, epsilon))
        if entry is not None and entry[1] is not None:
            errors.setdefault(mechanism.name, entry[1])
        elif mechanism.name in failed:
            if cache is not None:
                cache.put(keys[mechanism.name, epsilon], None, errors[mechanism.name])
        else:
            key = keys[mechanism.name, epsilon] if cache is not None else None
            rows.extend(_pair_rows(mechanism.name, epsilon, by_pair.get((mechanism.name, epsilon), []),
                                   expected.get((mechanism.name, epsilon), UNKNOWN), entry, trials, metrics, cache,
                                   key))  # UNKNOWN: a job stopped before it finished (so none of its cells ran)
    df = pd.DataFrame(rows, columns=COLUMNS)
    df.attrs["errors"] = errors
    df.attrs["left_out"] = left_out
    df.attrs["stopped"] = stopped
    df.attrs["computed"] = int(sum(len(r.values) for r in results.values()))
    df.attrs["stop_reason"] = (deadline.reason if deadline is not None and deadline.expired else
                               "stopped" if stopped else "")
    return df


def _serial_seconds(instances: Sequence[Mechanism], workload: Workload,
                    trials_left: dict[tuple[Mechanism, float], int]) -> float:
    """The estimated serial seconds of the trials left per (mechanism, ε): each mechanism's ``runs_seconds``."""
    runs_left: collections.Counter[str] = collections.Counter()
    for (mechanism, _), trials in trials_left.items():
        runs_left[mechanism.name] += trials
    return sum(runs_seconds(m, workload, runs_left[m.name]) for m in instances)


def _checked(histogram: Histogram, workload: Workload, mechanisms: Sequence[str | Mechanism],
             epsilons: Sequence[float], trials: int, metrics: Sequence[str],
             limits: RunLimits | None) -> tuple[list[Mechanism], list[float], dict[str, str]]:
    """A sweep's arguments checked: the mechanisms kept, the epsilons, and those left out by ``limits``."""
    instances = resolve_mechanisms(mechanisms)
    epsilons = [check_budget_epsilon(e) for e in epsilons]
    if not epsilons:
        raise ValueError("choose at least one epsilon")
    integer("trials", trials)
    check_metrics(metrics, total=histogram.total)  # before any work: unknown metrics, scaled error on zero data
    left_out = _over_limits(instances, workload, limits) if limits is not None else {}
    instances = [m for m in instances if m.name not in left_out]
    total_runs = len(instances) * len(epsilons) * trials
    if total_runs > MAX_SWEEP_RUNS:
        raise ValueError(f"sweep has {total_runs} runs (mechanisms × epsilons × trials); "
                         f"the limit is {MAX_SWEEP_RUNS}")
    if workload.shape[1] != histogram.domain.size:
        raise ValueError(f"workload has {workload.shape[1]} columns but the histogram has "
                         f"{histogram.domain.size} cells")
    return instances, epsilons, left_out


class _Partial:
    """Calls ``on_partial`` with the rows of the mechanisms finished so far, each time one finishes (see run_sweep)."""

    def __init__(self, on_partial: Callable[[pd.DataFrame], None], pairs: list[tuple[Mechanism, float]],
                 cells: list[Cell], rows: Callable[[tuple[Mechanism, float], list[CellResult]], list[tuple]]) -> None:
        self.on_partial, self.pairs, self.rows = on_partial, pairs, rows
        self.left: dict[str, int] = {}
        for cell in cells:
            self.left[cell.mechanism.name] = self.left.get(cell.mechanism.name, 0) + 1
        self.order = list(dict.fromkeys(m.name for m, _ in pairs))
        self.running = [name for name in (c.mechanism.name for c in cells) if name in self.left]
        self.running = list(dict.fromkeys(self.running))  # in run order
        self.found: dict[str, list[CellResult]] = {}
        self.failed: set[str] = set()

    def start(self) -> None:
        """Draw what the cache already holds whole, if anything."""
        if len(self.running) < len(self.order):
            self._emit()

    def arrived(self, result: CellResult) -> None:
        name = result.cell.mechanism.name
        if result.error is not None:
            self.failed.add(name)
        self.found.setdefault(name, []).append(result)
        self.left[name] -= 1
        if self.left[name] == 0:
            self.running.remove(name)
            self._emit()

    def _emit(self) -> None:
        rows: list[tuple] = []
        for mechanism, epsilon in self.pairs:
            name = mechanism.name
            if name in self.running or name in self.failed:
                continue
            found = sorted((r for r in self.found.get(name, []) if r.cell.epsilon == epsilon),
                           key=lambda r: r.cell.first)
            rows.extend(self.rows((mechanism, epsilon), found))
        frame = pd.DataFrame(rows, columns=COLUMNS)
        frame.attrs["running"] = list(self.running)
        self.on_partial(frame)


def _run_cells(context: Context, cells: list[Cell], scheduler: str | None, stop: Callable[[], bool],
               progress: Callable[[int, str], None] | None, jobs: Sequence[StrategyJob] = (),
               on_strategy: Callable[[StrategyResult], None] | None = None,
               partial: _Partial | None = None) -> tuple[dict[int, CellResult], dict[str, str]]:
    """Run ``cells`` (and the strategy ``jobs`` they wait for) on ``scheduler``: the results by cell index, and the
    first error of each failed mechanism.

    Ends early when a serial cell comes back cut short by ``stop``.
    """
    results: dict[int, CellResult] = {}
    errors: dict[str, str] = {}
    runs = 0
    if partial is not None:
        partial.start()
    iterator = execute({0: context}, cells, scheduler=scheduler, should_stop=stop, strategies=jobs,
                       on_strategy=on_strategy)
    try:
        for result in iterator:
            name = result.cell.mechanism.name
            if result.error is not None:
                errors.setdefault(name, result.error)
            results[result.index] = result
            runs += result.cell.runs
            if progress is not None:
                progress(runs, name)
            if result.error is None and len(result.values) < result.cell.runs:
                break
            if partial is not None:
                partial.arrived(result)
    finally:
        iterator.close()
    return results, errors


def _pair_rows(name: str, epsilon: float, results: list[CellResult], expected: dict[str, float],
               entry: tuple[pd.DataFrame | None, str | None] | None, trials: int, metrics: tuple[str, ...],
               cache: SweepCache | None, key: tuple | None) -> list[tuple]:
    """The rows of one (mechanism, ε) pair, trials 0..trials−1 by trial then metric, from the runs held in
    ``entry`` (the cache) and the new ``results`` (which computed ``metrics`` only); what the pair holds then, for
    any metric, goes back to the cache."""
    fresh = [(name, epsilon, result.cell.first + t, metric, float(result.values[t, k]), float(result.seconds[t]),
              expected[metric])
             for result in results for t in range(len(result.values)) for k, metric in enumerate(metrics)]
    held = entry[0] if entry is not None else None
    if held is None:  # the common case: rows straight from the runs, in order (cells come sorted by trial)
        if cache is not None and key is not None and fresh:
            frame = pd.DataFrame(fresh, columns=COLUMNS)
            if _trials_held((frame, None), metrics) > 0:  # a stopped sweep may hold later trials only: keep nothing
                cache.put(key, frame)
        return fresh
    pair = held
    if fresh:  # a trial's release is the same whichever metrics measured it: the new metrics join the held ones
        pair = pd.concat([held, pd.DataFrame(fresh, columns=COLUMNS)]).drop_duplicates(["trial", "metric"])
    chosen = pair[(pair.trial < trials) & pair.metric.isin(metrics)]
    chosen = chosen.assign(metric=pd.Categorical(chosen.metric, metrics)).sort_values(["trial", "metric"])
    if cache is not None and key is not None and len(pair) > len(held):
        cache.put(key, pair)
    return list(chosen.assign(metric=chosen.metric.astype(str)).itertuples(index=False, name=None))


def warm_up_workers(mechanisms: Sequence[str], histogram: Histogram | None = None, workload: Workload | None = None,
                    *, scheduler: str = "processes", after: threading.Thread | None = None) -> threading.Thread:
    """Start the sweep workers in the background and run each of ``mechanisms`` in them a few times, so a
    user's first sweep finds them running, with their modules and compiled kernels loaded. Given the
    server's default ``histogram`` and ``workload``, this process's analytic-error caches for that workload
    are filled too (the first Compare of a new user). With ``after``, that thread is waited for first (the
    bounded-action fork server, whose preload of ``__main__`` every later worker then shares). Returns the
    (daemon) thread doing it; failures are ignored (a sweep starts its workers itself). In a worker process
    it does nothing: a worker that re-ran the app's script would otherwise start workers of its own.

    >>> warm_up_workers(["identity"], scheduler="serial").join()
    """
    if histogram is None or workload is None:
        histogram = Histogram.from_counts(np.random.default_rng(0).poisson(5.0, size=64).astype(float))
        workload = Prefix(64)

    def warm() -> None:
        if after is not None:
            after.join()
        if multiprocessing.parent_process() is not None:
            return
        with contextlib.suppress(Exception):  # best effort, never in a user's way
            run_sweep(histogram, workload, list(mechanisms), [1.0], trials=4, metrics=("mae",), scheduler=scheduler)

    thread = threading.Thread(target=warm, daemon=True, name="dplens-warm-sweeps")
    thread.start()
    return thread


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
           *, seed: int = 0, axis: EpsilonAxis = PURE_AXIS):
    """Re-run one (mechanism, epsilon, trial) of a sweep on ``axis`` with the same ``trial_rng``: the identical
    release.

    >>> from dplens.core.queries.workloads import Prefix
    >>> h = Histogram.from_counts([5.0, 0, 3, 8])
    >>> df = run_sweep(h, Prefix(4), ["identity"], [1.0], trials=2, metrics=["mae"], seed=4)
    >>> r = replay(h, Prefix(4), "identity", 1.0, 1, seed=4)
    >>> bool(np.isclose(np.abs(r.answers - Prefix(4).matvec(h.vector)).mean(), df.value.iloc[1]))
    True
    """
    (instance,) = resolve_mechanisms([mechanism])
    return instance.run(histogram.counts, workload, axis.privacy(epsilon),
                        trial_rng(seed, instance.name, epsilon, trial))


def per_bin_errors(histogram: Histogram, workload: Workload, mechanism: str | Mechanism, epsilon: float,
                   trials: int, *, seed: int = 0, axis: EpsilonAxis = PURE_AXIS) -> np.ndarray | None:
    """Mean |estimate − x| per bin over the sweep's first ``trials`` trials (None: no histogram estimate).

    The per-bin view (error against the true bin count) that SReB_GCA's small-bin argument is about.
    """
    total = np.zeros(histogram.domain.size)
    for trial in range(trials):
        release = replay(histogram, workload, mechanism, epsilon, trial, seed=seed, axis=axis)
        if release.estimate is None:
            return None
        total += np.abs(np.asarray(release.estimate, dtype=float).ravel() - histogram.vector)
    return total / trials
