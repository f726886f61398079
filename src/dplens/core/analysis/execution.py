"""One execution layer for sweeps: independent cells run serially, in local processes, or on Dask.

A *cell* is one (context, mechanism, epsilon, block of trials); a *context* is what many cells share
(histogram, workload, metrics, seed). Trial ``t`` of a cell always draws its noise from
``trial_rng(seed, mechanism, epsilon, t)``, and every backend runs cells with one BLAS thread, so the
numbers are identical bit for bit whatever the backend, the worker count or the order cells finish in.

Backends (``scheduler`` argument, as in ``python -m dplens grid --scheduler ...``):

- ``"serial"``: in this process (tests, tiny sweeps); ``"auto"`` picks it when the runs are estimated under
  AUTO_PARALLEL_SECONDS (``resolve_auto``), else processes.
- ``"processes"`` or ``"processes:N"``: a pool of N local worker processes (default: every core),
  started once and reused. Each sweep's contexts are written once to a temporary directory; arrays
  of 64 KiB or more are stored as ``.npy`` files that workers memory-map read-only instead of
  receiving a pickled copy with every task. Tasks themselves are a few hundred bytes.
- ``"local:N"``: a Dask ``LocalCluster`` of N single-threaded worker processes, closed after the run.
- ``"tcp://HOST:8786"``: an existing Dask cluster (``dask scheduler`` + ``dask worker``). The contexts
  are scattered once to every worker (broadcast) and each task refers to them.

Strategy caches of data-independent mechanisms (mm-opt's optimised strategy, Greedy-H's hierarchy,
OM's and LRM's factorisations, WDA's division, HB/Privelet energies, gaussian-eigen's eigen design: the
``StrategyCache``s each mechanism class lists in ``STRATEGY_CACHES``) already filled in the calling process
are shipped with the contexts, by cache name, so no worker recomputes them. Strategies still to compute can be given to
``execute`` as ``StrategyJob``s (one per distinct mechanism and workload, not per ε): a parallel backend
optimises them in its workers, in parallel with the cells that need no strategy, hands the filled cache
entries and the expected errors back (``on_strategy``), and ships the entries with the cells that need
them; the serial backend computes them here, before the cells.

>>> from dplens.core.data.domain import Histogram
>>> from dplens.core.queries.workloads import Prefix
>>> context = Context(Histogram.from_counts([5.0, 0, 3, 8]), Prefix(4), ("mae",), seed=1)
>>> cells = make_cells({"h": context}, ["identity"], [1.0], trials=3)
>>> [len(r.values) for r in execute({"h": context}, cells, scheduler="serial")]
[3]
"""

from __future__ import annotations

import atexit
import collections
import concurrent.futures
import math
import multiprocessing
import os
import pickle
import shutil
import struct
import sys
import tempfile
import threading
import time
import uuid
import zlib
from collections.abc import Callable, Generator, Hashable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from threadpoolctl import threadpool_limits

from dplens.core.analysis.bounded import hidden_page_main
from dplens.core.analysis.metrics import HISTOGRAM_METRICS, METRICS, check_metrics, expected_metrics
from dplens.core.analysis.strategy_store import StrategyStore, stable_hash
from dplens.core.data.domain import Histogram
from dplens.core.extras import require
from dplens.core.mechanisms import MECHANISMS, Mechanism, Release
from dplens.core.mechanisms.cache import StrategyCache, cache_named, registered_caches
from dplens.core.mechanisms.greedy_h import workload_key
from dplens.core.privacy.definitions import PURE_AXIS, EpsilonAxis, Privacy
from dplens.core.queries.workloads import Workload

_Item = TypeVar("_Item")  # what dask_batches deals out: cells or their indices
SHARED_ARRAY_BYTES = 64 * 1024  # arrays at least this large are memory-mapped, not pickled, for local workers
DASK_NOMINAL_WORKERS = 8  # cells are sized for this many workers on a Dask cluster given by address
IN_FLIGHT_PER_WORKER = 2  # tasks queued per local worker: enough to keep it busy, few enough to keep the order
POLL_SECONDS = 0.1  # how often a parallel backend checks should_stop while no cell finishes
SHIPPED_CACHE_LIMIT = 16  # entries kept per strategy cache in a worker, at least (the caches' own limits: 2-32)


@dataclass(frozen=True, eq=False)
class Context:
    """What the cells of one sweep share: the data, the workload, the metrics, the base seed and the ε axis.

    ``run_cell`` asks it for what a mechanism runs on (``data``), for the privacy value at a cell's point
    (``privacy_at``: "ε at δ" under the axis's definition) and for the metrics of a release (``scores``); a sweep
    on a table of records gives a context of its own with the same three methods
    (``dplens.core.tables.compare.TableContext``).
    """

    histogram: Histogram
    workload: Workload
    metrics: tuple[str, ...]
    seed: int = 0
    axis: EpsilonAxis = PURE_AXIS

    def __post_init__(self) -> None:
        # refused here, before any run: a metric undefined on this histogram (scaled error on an all-zero one)
        check_metrics(self.metrics, total=self.histogram.total)

    @property
    def data(self) -> np.ndarray:
        """What the mechanisms run on: the histogram's counts (1-D or 2-D)."""
        return self.histogram.counts

    def privacy_at(self, epsilon: float) -> Privacy:
        """The privacy value every mechanism of the sweep runs at, at the axis point ``epsilon``."""
        return self.axis.privacy(epsilon)

    @cached_property
    def true_answers(self) -> np.ndarray:
        """W x on the true data, computed once per context (on each worker that reads it)."""
        return self.workload.matvec(self.histogram.vector)

    def scores(self, release: Release) -> np.ndarray:
        """Each metric of ``release`` (only those of the context): on the bins where it has an estimate (NaN
        otherwise), else on the answers."""
        vector, total = self.histogram.vector, self.histogram.total
        values = np.full(len(self.metrics), np.nan)
        for k, metric in enumerate(self.metrics):
            if metric in HISTOGRAM_METRICS:
                if release.estimate is not None:
                    values[k] = METRICS[metric](vector, release.estimate, total=total)
            else:
                values[k] = METRICS[metric](self.true_answers, release.answers, total=total)
        return values


@dataclass(frozen=True)
class Cell:
    """Trials ``first``..``stop - 1`` of one mechanism at one epsilon, in context ``context``."""

    context: Hashable
    mechanism: Mechanism
    epsilon: float
    first: int
    stop: int

    @property
    def runs(self) -> int:
        """Trials in the cell."""
        return self.stop - self.first


@dataclass(frozen=True)
class StrategyJob:
    """The strategy ``mechanism`` uses on the workload of context ``context``, and its expected errors at
    ``epsilons`` (``metrics.expected_metrics``, the analytic MSE and RMSE per query)."""

    context: Hashable
    mechanism: Mechanism
    epsilons: tuple[float, ...]


@dataclass(frozen=True, eq=False)
class StrategyResult:
    """A computed ``StrategyJob``: the cache entries it filled and ``expected[ε]`` (metric → value)."""

    index: int  # position of the job in the list given to ``execute``
    job: StrategyJob
    entries: dict[str, dict]  # cache name → the entries the job filled
    expected: dict[float, dict[str, float]]
    seconds: float  # wall time of the computation, where it ran


@dataclass(frozen=True, eq=False)
class CellResult:
    """``values[t, k]``: metric k of trial ``first + t``; ``seconds[t]``: its wall time; or an error."""

    index: int  # position of the cell in the list given to ``execute``
    cell: Cell
    values: np.ndarray
    seconds: np.ndarray
    error: str | None = None


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


def make_cells(contexts: Mapping[Hashable, Context], mechanisms: Sequence[Mechanism | str],
               epsilons: Sequence[float], trials: int, *, block: int | None = None) -> list[Cell]:
    """Every (context, mechanism, epsilon, trial block), in canonical order; blocks of ``block`` trials.

    >>> from dplens.core.queries.workloads import Total
    >>> h = Histogram.from_counts([1.0, 2.0])
    >>> [(c.first, c.stop) for c in make_cells({0: Context(h, Total(2), ("mae",))}, ["identity"], [1.0], 5,
    ...                                          block=2)]
    [(0, 2), (2, 4), (4, 5)]
    """
    instances = resolve_mechanisms(mechanisms)
    size = trials if block is None else max(1, int(block))
    return [Cell(key, m, float(e), t, min(t + size, trials))
            for key in contexts for m in instances for e in epsilons for t in range(0, trials, size)]


def run_cell(context: Context, cell: Cell, index: int = 0,
             should_stop: Callable[[], bool] | None = None, **run_options: Any) -> CellResult:
    """Run one cell here, on histogram and table contexts alike; ValueError becomes ``error``. Backends call it
    with one BLAS thread.

    Trial t runs ``cell.mechanism.run(context.data, workload, context.privacy_at(ε), trial_rng(seed, name, ε, t),
    **run_options)`` (ε is the cell's point on the sweep's axis: ρ on a table) and ``context.scores`` measures it.
    ``should_stop`` (serial only) is polled before each trial; a stopped cell returns the trials done.
    """
    values = np.full((cell.runs, len(context.metrics)), np.nan)
    seconds = np.zeros(cell.runs)
    done = cell.runs
    for row, trial in enumerate(range(cell.first, cell.stop)):
        if should_stop is not None and should_stop():
            done = row
            break
        start = time.perf_counter()
        try:
            release = cell.mechanism.run(context.data, context.workload, context.privacy_at(cell.epsilon),
                                         trial_rng(context.seed, cell.mechanism.name, cell.epsilon, trial),
                                         **run_options)
        except ValueError as err:
            return CellResult(index, cell, values[:0], seconds[:0], str(err))
        seconds[row] = time.perf_counter() - start
        values[row] = context.scores(release)
    return CellResult(index, cell, values[:done], seconds[:done])


# ---------------------------------------------------------------- scheduler specs


@dataclass(frozen=True)
class Scheduler:
    """A parsed ``scheduler`` spec: kind is "serial", "processes", "local" (Dask LocalCluster) or "dask"."""

    kind: str
    workers: int = 0  # 0: this process
    address: str = ""


# Estimated serial seconds (dplens.core.analysis.cost) from which "auto" uses the process pool. Measured with
# bench/bench_compare_scale.py on idle cores (docs/benchmarks.md): below it a pool's start-up and its workers' own
# caches cost more than the second core gives back (the CLI's defaults at 2^20 cells, estimated 5.1 s: 5.1 s serial,
# 5.5 s and more CPU on the pool; the page's sweep at 2^16, 2.3 s: 3.1 s either way); above it the pool wins (the
# page's sweep at 2^18, 8.6 s: 8.6 s serial, 6.6 s on the pool).
AUTO_PARALLEL_SECONDS = 6.0


def resolve_auto(spec: str | None, serial_seconds: float) -> str | None:
    """``"auto"`` → "serial" for work estimated below AUTO_PARALLEL_SECONDS in this process (or on one core), else
    "processes"; any other spec unchanged.

    >>> resolve_auto("auto", 0.5), resolve_auto("serial", 1e6)
    ('serial', 'serial')
    >>> resolve_auto("auto", 60.0) == ("processes" if (os.cpu_count() or 1) >= 2 else "serial")
    True
    """
    if spec != "auto":
        return spec
    return "serial" if serial_seconds < AUTO_PARALLEL_SECONDS or (os.cpu_count() or 1) < 2 else "processes"


def parse_scheduler(spec: str | None) -> Scheduler:
    """``serial``, ``processes[:N]``, ``local:N`` or ``tcp://HOST:PORT`` → Scheduler (None = processes).

    >>> parse_scheduler("local:2"), parse_scheduler("tcp://10.0.0.5:8786").kind
    (Scheduler(kind='local', workers=2, address=''), 'dask')
    >>> parse_scheduler("serial").workers  # 0: this process (one-trial cells, progress per run)
    0
    """
    cores = os.cpu_count() or 1
    spec = "processes" if spec is None else str(spec).strip()
    kind, _, count = spec.partition(":")
    if spec == "serial":
        return Scheduler("serial", 0)
    if "://" in spec:  # the cluster's size is unknown until connected: size cells for a nominal one
        return Scheduler("dask", DASK_NOMINAL_WORKERS, address=spec)
    if kind in ("processes", "local"):
        if not count and kind == "processes":
            return Scheduler(kind, cores)
        if not count.isdigit() or int(count) < 1:
            raise ValueError(f"scheduler {spec!r}: the worker count after '{kind}:' must be an integer >= 1")
        return Scheduler(kind, int(count))
    raise ValueError(f"scheduler must be 'auto', 'serial', 'processes[:N]', 'local:N' or a Dask address such as "
                     f"tcp://HOST:8786, got {spec!r}")


# ---------------------------------------------------------------- strategy caches


def _mentions(key: object, wanted: list[object]) -> bool:
    parts = key if isinstance(key, tuple) else (key,)
    for part in parts:
        for w in wanted:
            try:
                if type(part) is type(w) and part == w:
                    return True
            except (TypeError, ValueError):  # dataclasses holding arrays may refuse ==
                continue
    return False


def strategy_caches(mechanism: Mechanism) -> tuple[StrategyCache, ...]:
    """The strategy caches a data-independent ``mechanism``'s ``expected_mse`` fills: its class's
    ``STRATEGY_CACHES``. Empty for data-dependent mechanisms and closed forms: their cells need no
    strategy and may start at once.

    >>> from dplens.core.mechanisms import MECHANISMS
    >>> [c.name for c in strategy_caches(MECHANISMS["mm-opt"])], strategy_caches(MECHANISMS["identity"])
    (['mm-opt strategies'], ())
    """
    if mechanism.data_dependent:
        return ()
    return tuple(getattr(type(mechanism), "STRATEGY_CACHES", ()))


def _belonging(cache: StrategyCache, wanted: list[object]) -> dict:
    return {k: v for k, v in cache.entries().items() if _mentions(k, wanted)}


def job_entries(mechanism: Mechanism, workload: Workload) -> dict[str, dict]:
    """The entries of ``mechanism``'s shipped strategy caches that belong to ``workload``, by cache name
    (fill them first)."""
    wanted = [workload_key(workload)]
    return {cache.name: _belonging(cache, wanted) for cache in strategy_caches(mechanism) if cache.shipped}


def compute_strategy(context: Context, job: StrategyJob, index: int = 0) -> StrategyResult:
    """Compute a job's strategy here (one BLAS thread, as everywhere, so every backend finds the same one)."""
    start = time.perf_counter()
    with threadpool_limits(limits=1, user_api="blas"):
        expected = {e: expected_metrics(job.mechanism, context.workload, context.privacy_at(e)) for e in job.epsilons}
    return StrategyResult(index, job, job_entries(job.mechanism, context.workload), expected,
                          time.perf_counter() - start)


_KNOWN_JOBS: dict[tuple[str, str], list[tuple[str, object]]] = {}  # this process: job → its entries (cache, key)
KNOWN_JOBS_LIMIT = 256
_KNOWN_JOBS_LOCK = threading.Lock()


def _job_hash(mechanism: Mechanism, workload: Workload) -> tuple[str, str]:
    return stable_hash(mechanism), stable_hash(workload_key(workload))


def remember_job(mechanism: Mechanism, workload: Workload, entries: Mapping[str, Mapping]) -> None:
    """Note which cache entries ``mechanism`` fills for ``workload``, so ``known_job`` finds them in this process."""
    listed = [(name, key) for name, items in entries.items() for key in items]
    with _KNOWN_JOBS_LOCK:
        _KNOWN_JOBS.pop(_job_hash(mechanism, workload), None)
        while len(_KNOWN_JOBS) >= KNOWN_JOBS_LIMIT:
            _KNOWN_JOBS.pop(next(iter(_KNOWN_JOBS)))
        _KNOWN_JOBS[_job_hash(mechanism, workload)] = listed


def known_job(mechanism: Mechanism, workload: Workload) -> bool:
    """True when this process's caches still hold every entry ``mechanism`` filled for ``workload``."""
    with _KNOWN_JOBS_LOCK:
        listed = _KNOWN_JOBS.get(_job_hash(mechanism, workload))
    if listed is None:
        return False
    return all(key in cache_named(name) for name, key in listed)


def load_strategies(mechanisms: Sequence[Mechanism], workload: Workload, store: StrategyStore) -> list[Mechanism]:
    """Put ``store``'s strategies of ``mechanisms`` for ``workload`` into this process's caches.

    Returns the mechanisms it lacked (those with no strategy are never missing). A sweep calls it
    before computing its expected errors, and ``save_strategies`` with what it returns after.
    """
    missing = []
    for mechanism in mechanisms:
        if strategy_caches(mechanism) and not known_job(mechanism, workload):
            entries = store.load(mechanism, workload_key(workload))
            if entries is None:
                missing.append(mechanism)
            else:
                install_snapshot(entries)
                remember_job(mechanism, workload, entries)
    return missing


def save_strategies(mechanisms: Sequence[Mechanism], workload: Workload, store: StrategyStore) -> None:
    """Store the strategies ``mechanisms`` filled for ``workload`` in this process (after ``expected_mse``)."""
    for mechanism in mechanisms:
        if strategy_caches(mechanism):
            entries = job_entries(mechanism, workload)
            remember_job(mechanism, workload, entries)
            store.save(mechanism, workload_key(workload), entries)


def strategy_snapshot(contexts: Mapping[Hashable, Context]) -> dict[str, dict]:
    """The entries of the shipped strategy caches that belong to these contexts' workloads, by cache name
    (to ship to workers); caches holding none are left out.

    Fill them first (``expected_mse`` of each data-independent mechanism does it).
    """
    wanted = [workload_key(c.workload) for c in contexts.values()]
    found = {cache.name: _belonging(cache, wanted) for cache in registered_caches() if cache.shipped}
    return {name: entries for name, entries in found.items() if entries}


def install_snapshot(snapshot: Mapping[str, Mapping]) -> None:
    """Put shipped strategy-cache entries (cache name → entries) into this process's caches (worker side).

    A long-lived worker sees many workloads: each cache keeps the newest ``SHIPPED_CACHE_LIMIT`` entries
    (or its own limit, if larger).
    """
    for name, entries in snapshot.items():
        cache = cache_named(name)
        cache.install(entries, max(SHIPPED_CACHE_LIMIT, cache.limit))


# ---------------------------------------------------------------- shared payload (local processes)


class _ArrayPickler(pickle.Pickler):
    """Pickles large ndarrays as references to .npy files in ``folder`` (memory-mapped on load)."""

    def __init__(self, file, folder: Path) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.folder, self.count = folder, 0

    def persistent_id(self, obj):
        if type(obj) is np.ndarray and obj.nbytes >= SHARED_ARRAY_BYTES and obj.dtype.hasobject is False:
            self.count += 1
            name = f"array{self.count}.npy"
            np.save(self.folder / name, obj)
            return name
        return None


class _ArrayUnpickler(pickle.Unpickler):
    def __init__(self, file, folder: Path) -> None:
        super().__init__(file)
        self.folder = folder

    def persistent_load(self, pid):
        return np.asarray(np.load(self.folder / pid, mmap_mode="r"))  # read-only view of the shared pages


def write_payload(payload: object, folder: Path) -> Path:
    """Write ``payload`` to ``folder``/payload.pkl, large arrays beside it as .npy; returns the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "payload.pkl", "wb") as file:
        _ArrayPickler(file, folder).dump(payload)
    return folder


def read_payload(folder: Path) -> dict:
    """Read what ``write_payload`` wrote, memory-mapping the large arrays."""
    with open(Path(folder) / "payload.pkl", "rb") as file:
        return _ArrayUnpickler(file, Path(folder)).load()


_WORKER_PAYLOADS: dict[str, dict] = {}  # worker side: payload id → contexts (a few, oldest dropped)
_WORKER_LOCK = threading.Lock()


def _payload_contexts(payload_id: str, load: Callable[[], dict]) -> dict:
    with _WORKER_LOCK:
        if payload_id not in _WORKER_PAYLOADS:
            payload = load()
            install_snapshot(payload["strategies"])
            while len(_WORKER_PAYLOADS) >= 4:
                _WORKER_PAYLOADS.pop(next(iter(_WORKER_PAYLOADS)))
            _WORKER_PAYLOADS[payload_id] = payload["contexts"]
        return _WORKER_PAYLOADS[payload_id]


_ONE_BLAS_THREAD: list = []


def _one_blas_thread_here() -> None:
    """Limit BLAS to one thread for the rest of this worker process (once: the call costs ~1 ms)."""
    if not _ONE_BLAS_THREAD:
        _ONE_BLAS_THREAD.append(threadpool_limits(limits=1, user_api="blas"))


_WORKER_EXTRAS: set[str] = set()  # worker side: strategy payloads installed already


def _install_extras(extras: Sequence[str], load: Callable[[str], Mapping]) -> None:
    with _WORKER_LOCK:
        for extra in extras:
            if extra not in _WORKER_EXTRAS:
                install_snapshot(load(extra))
                if len(_WORKER_EXTRAS) > 256:
                    _WORKER_EXTRAS.clear()
                _WORKER_EXTRAS.add(extra)


def _process_task(folder: str, index: int, cell: Cell, extras: tuple[str, ...] = ()) -> CellResult:
    _one_blas_thread_here()
    contexts = _payload_contexts(folder, lambda: read_payload(Path(folder)))
    _install_extras(extras, lambda extra: read_payload(Path(extra))["strategies"])  # strategies computed since
    return run_cell(contexts[cell.context], cell, index)


def _process_strategy_task(folder: str, index: int, job: StrategyJob) -> StrategyResult:
    _one_blas_thread_here()
    contexts = _payload_contexts(folder, lambda: read_payload(Path(folder)))
    return compute_strategy(contexts[job.context], job, index)


def _dask_task(payload: dict, batch: list[tuple[int, Cell]], extra: dict | None = None) -> list[CellResult]:
    _one_blas_thread_here()
    contexts = _payload_contexts(payload["id"], lambda: payload)
    if extra is not None:
        _install_extras([extra["id"]], lambda _: extra["strategies"])
    return [run_cell(contexts[cell.context], cell, index) for index, cell in batch]


def _dask_strategy_task(payload: dict, index: int, job: StrategyJob) -> StrategyResult:
    _one_blas_thread_here()
    contexts = _payload_contexts(payload["id"], lambda: payload)
    return compute_strategy(contexts[job.context], job, index)


DASK_TASKS_PER_WORKER = 24  # cells are batched into about this many tasks per worker


def dask_batches(cells: Sequence[_Item], workers: int) -> list[list[tuple[int, _Item]]]:
    """Cells (or their indices) grouped into about DASK_TASKS_PER_WORKER tasks per worker, dealt round-robin so that
    every batch mixes cheap and costly cells. Each Dask task costs the scheduler and this process about a millisecond:
    one task per cell (1,764 in the DPBench grid) kept a 2-core machine's driver busy for seconds.

    >>> [[i for i, _ in b] for b in dask_batches(list("abcde"), 1)]
    [[0], [1], [2], [3], [4]]
    >>> len(dask_batches(list(range(1000)), 2))
    48
    """
    count = max(1, min(len(cells), DASK_TASKS_PER_WORKER * max(1, workers)))
    return [list(enumerate(cells))[start::count] for start in range(count)]


# ---------------------------------------------------------------- backends


_POOLS: dict[int, concurrent.futures.ProcessPoolExecutor] = {}
_POOL_LOCK = threading.Lock()


def _pool(workers: int) -> concurrent.futures.ProcessPoolExecutor:
    """A persistent pool of ``workers`` processes (forkserver: safe beside a threaded server)."""
    with _POOL_LOCK:
        pool = _POOLS.get(workers)
        if pool is None:
            method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
            context = multiprocessing.get_context(method)
            if method == "forkserver":
                context.set_forkserver_preload(["dplens.core.analysis.execution", "dplens.core.mechanisms",
                                                "dplens.core.analysis.experiment"])
            pool = concurrent.futures.ProcessPoolExecutor(workers, mp_context=context)
            _POOLS[workers] = pool
        return pool


def _submit(pool: concurrent.futures.ProcessPoolExecutor, task: Callable, *args: Any) -> concurrent.futures.Future:
    """``pool.submit``, which starts the pool's workers on demand: with a page out of ``__main__``
    (:func:`dplens.core.analysis.bounded.hidden_page_main`), so that a worker does not run the page again."""
    with hidden_page_main():
        return pool.submit(task, *args)


def shutdown_pools() -> None:
    """Stop the local worker pools (they are restarted on demand)."""
    with _POOL_LOCK:
        for pool in _POOLS.values():
            pool.shutdown(wait=True, cancel_futures=True)
        _POOLS.clear()


atexit.register(shutdown_pools)


def _serial(contexts, cells, should_stop, jobs, on_strategy) -> Generator[CellResult, None, None]:
    for index, job in enumerate(jobs):  # here, before the cells (they find the strategies in this process)
        if should_stop is not None and should_stop():
            return
        result = compute_strategy(contexts[job.context], job, index)
        if on_strategy is not None:
            on_strategy(result)
    # one BLAS thread as in the workers (threaded sums may round differently); restored at the end
    with threadpool_limits(limits=1, user_api="blas"):
        for index, cell in enumerate(cells):
            yield run_cell(contexts[cell.context], cell, index, should_stop)


def _dependencies(contexts, cells, jobs) -> tuple[list[int], dict[int, list[int]]]:
    """Cells free to start now, and the cells waiting for each job (same mechanism, same workload)."""
    workloads: dict[Hashable, str] = {}  # context → hash of its workload's content
    mechanisms: dict[int, str] = {}  # id → hash of the mechanism's settings

    def key(context: Hashable, mechanism: Mechanism) -> tuple[str, str]:
        if context not in workloads:
            workloads[context] = stable_hash(workload_key(contexts[context].workload))
        if id(mechanism) not in mechanisms:
            mechanisms[id(mechanism)] = stable_hash(mechanism)
        return mechanisms[id(mechanism)], workloads[context]

    owner = {key(job.context, job.mechanism): j for j, job in enumerate(jobs)}
    free: list[int] = []
    waiting: dict[int, list[int]] = {j: [] for j in range(len(jobs))}
    for i, cell in enumerate(cells):
        j = owner.get(key(cell.context, cell.mechanism)) if owner else None
        (free if j is None else waiting[j]).append(i)
    return free, waiting


def _job_order(contexts, jobs) -> list[int]:
    """Jobs largest domain first (mm-opt's optimisation grows about as n²): the longest start first."""
    return sorted(range(len(jobs)), key=lambda j: -contexts[jobs[j].context].workload.shape[1])


def _processes(contexts, cells, workers, snapshot, should_stop, jobs, on_strategy
               ) -> Generator[CellResult, None, None]:
    """Jobs first, then cells: those waiting for a finished job before the free ones (they are the
    costlier, and the grid's last pairs); a few tasks per worker in flight, so the order holds."""
    folder = Path(tempfile.mkdtemp(prefix="dplens-sweep-"))
    pool = _pool(workers)
    in_flight: dict[concurrent.futures.Future, tuple[str, int]] = {}
    try:
        write_payload({"contexts": dict(contexts), "strategies": snapshot}, folder)
        free, waiting = _dependencies(contexts, cells, jobs)
        queued_jobs = collections.deque(_job_order(contexts, jobs))
        ready: collections.deque[tuple[int, tuple[str, ...]]] = collections.deque()
        free_cells = collections.deque(free)
        limit = IN_FLIGHT_PER_WORKER * workers
        while queued_jobs or ready or free_cells or in_flight:
            while len(in_flight) < limit and (queued_jobs or ready or free_cells):
                if queued_jobs:
                    j = queued_jobs.popleft()
                    in_flight[_submit(pool, _process_strategy_task, str(folder), j, jobs[j])] = ("job", j)
                elif ready:
                    i, extras = ready.popleft()
                    in_flight[_submit(pool, _process_task, str(folder), i, cells[i], extras)] = ("cell", i)
                else:
                    i = free_cells.popleft()
                    in_flight[_submit(pool, _process_task, str(folder), i, cells[i])] = ("cell", i)
            finished, _ = concurrent.futures.wait(in_flight, timeout=POLL_SECONDS,
                                                  return_when=concurrent.futures.FIRST_COMPLETED)
            for future in finished:
                kind, _ = in_flight.pop(future)
                if kind == "cell":
                    yield future.result()
                    continue
                result: StrategyResult = future.result()
                extra = write_payload({"strategies": result.entries}, folder / f"strategy{result.index}")
                ready.extend((i, (str(extra),)) for i in waiting.pop(result.index))
                if on_strategy is not None:
                    on_strategy(result)
            if should_stop is not None and should_stop():
                return
    except concurrent.futures.process.BrokenProcessPool:
        with _POOL_LOCK:
            _POOLS.pop(workers, None)
        raise
    finally:
        for future in in_flight:
            future.cancel()  # Stop: pending cells never start; running ones finish and are dropped
        shutil.rmtree(folder, ignore_errors=True)  # workers keep their maps; Linux frees them on unmap


_CLIENTS: dict[str, Any] = {}  # dask.distributed clients


def dask_client(address: str):
    """A ``dask.distributed.Client`` connected to ``address`` (one per address, reused)."""
    for module in ("dask.distributed", "distributed"):  # dask.distributed is a shim that imports distributed lazily
        require(module, "cluster", "Running on a Dask cluster")
    from dask.distributed import Client

    client = _CLIENTS.get(address)
    if client is None or getattr(client, "status", "") in ("closed", "closing"):
        try:
            client = Client(address, timeout="10s")
        except (OSError, TimeoutError) as err:
            raise ValueError(f"scheduler {address!r}: cannot reach a Dask scheduler there ({err}); start one "
                             "with `dask scheduler` and workers with `dask worker ADDRESS`") from None
        _CLIENTS[address] = client
    return client


def close_dask_clients() -> None:
    """Close the clients ``dask_client`` opened (before their cluster goes away)."""
    while _CLIENTS:
        _CLIENTS.popitem()[1].close()


atexit.register(close_dask_clients)


def _dask(client, contexts, cells, snapshot, should_stop, jobs=(), on_strategy=None
          ) -> Generator[CellResult, None, None]:
    """Jobs and the free cells' batches at once; the waiting cells' batches once every job is done,
    with the jobs' strategies scattered to every worker."""
    from dask.distributed import as_completed

    payload = {"id": uuid.uuid4().hex, "contexts": dict(contexts), "strategies": snapshot}
    # once per worker, not per task; a list, because scatter would split a dict into futures named by its keys
    (shared,) = client.scatter([payload], broadcast=True, hash=False)
    workers = len(client.scheduler_info().get("workers", {})) or 1
    free, waiting = _dependencies(contexts, cells, jobs)
    later = sorted(i for waiting_cells in waiting.values() for i in waiting_cells)
    scattered = [shared]
    futures = [client.submit(_dask_strategy_task, shared, j, jobs[j], pure=False)
               for j in _job_order(contexts, jobs)]
    futures += [client.submit(_dask_task, shared, [(i, cells[i]) for _, i in part], pure=False)
                for part in (dask_batches(free, workers) if free else [])]
    jobs_left = len(jobs)
    entries: dict[str, dict] = {}
    try:
        finishing = as_completed(futures)
        while not finishing.is_empty():
            batch = finishing.next_batch(block=False)
            for future in batch:
                result = future.result()
                if isinstance(result, StrategyResult):
                    for cache, items in result.entries.items():
                        entries.setdefault(cache, {}).update(items)
                    if on_strategy is not None:
                        on_strategy(result)
                    jobs_left -= 1
                    if jobs_left == 0 and later:
                        (extra,) = client.scatter([{"id": uuid.uuid4().hex, "strategies": entries}],
                                                  broadcast=True, hash=False)
                        scattered.append(extra)
                        more = [client.submit(_dask_task, shared, [(i, cells[i]) for _, i in part], extra,
                                              pure=False) for part in dask_batches(later, workers)]
                        futures += more
                        finishing.update(more)
                else:
                    yield from result
            if should_stop is not None and should_stop():
                return
            if not batch:  # sleep until a cell finishes (as_completed notifies) or POLL_SECONDS pass
                condition = getattr(finishing, "thread_condition", None)
                if condition is None:
                    time.sleep(POLL_SECONDS)
                else:
                    with condition:
                        condition.wait(timeout=POLL_SECONDS)
    finally:
        client.cancel(futures)
        client.cancel(scattered)


def _local_cluster(workers: int, contexts, cells, snapshot, should_stop, jobs=(), on_strategy=None
                   ) -> Generator[CellResult, None, None]:
    for module in ("dask.distributed", "distributed"):
        require(module, "cluster", "Running on a local Dask cluster")
    from dask.distributed import Client, LocalCluster

    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        yield from _dask(client, contexts, cells, snapshot, should_stop, jobs, on_strategy)


def execute(contexts: Mapping[Any, Context], cells: Sequence[Cell], *, scheduler: str | None = "serial",
            should_stop: Callable[[], bool] | None = None, strategies: Sequence[StrategyJob] = (),
            on_strategy: Callable[[StrategyResult], None] | None = None) -> Generator[CellResult, None, None]:
    """Run ``cells`` on a backend, yielding each result as it finishes (any order; ``index`` says which).

    ``strategies``: jobs to compute first, each handed to ``on_strategy`` (in this process) when done.
    The cells of a job's mechanism and workload wait for it; on a parallel backend the other cells
    start at once. Closing the iterator early (``break``, or ``should_stop`` becoming true) cancels
    the pending cells and jobs.
    """
    plan = parse_scheduler(scheduler)
    jobs = list(strategies)
    if plan.kind == "serial" or not (cells or jobs):
        iterator = _serial(contexts, cells, should_stop, jobs, on_strategy)
    else:
        snapshot = strategy_snapshot(contexts)
        if plan.kind == "processes":
            iterator = _processes(contexts, cells, plan.workers, snapshot, should_stop, jobs, on_strategy)
        elif plan.kind == "local":
            iterator = _local_cluster(plan.workers, contexts, cells, snapshot, should_stop, jobs, on_strategy)
        else:
            iterator = _dask(dask_client(plan.address), contexts, cells, snapshot, should_stop, jobs, on_strategy)
    try:
        for result in iterator:
            yield result
            if should_stop is not None and plan.kind != "serial" and should_stop():
                return
    finally:
        iterator.close()


def default_block(cells_without_blocks: int, trials: int, workers: int) -> int:
    """Trials per cell: at least ~4 cells per worker (load balance); 1 when serial (``workers`` 0).

    Serial cells of one trial give a progress call per run at no cost; a worker task costs a round trip.

    >>> default_block(80, 20, 2), default_block(1, 20, 2), default_block(80, 20, 0)
    (20, 3, 1)
    """
    if workers <= 0:
        return 1
    wanted = 4 * max(1, workers)
    if cells_without_blocks >= wanted:
        return trials
    return max(1, math.ceil(trials * cells_without_blocks / wanted))


class ProgressBar:
    """A progress callback drawing ``[####....] 45% 800/1,600 runs  ETA 0:12  label`` on a stream.

    On a terminal the bar redraws in place; otherwise a line is written every 10 %. The ETA assumes
    the remaining runs cost what the finished ones did (``start`` is the first ``done`` seen, so
    runs resumed from a file do not count).

    >>> import io
    >>> stream = io.StringIO()
    >>> bar = ProgressBar(stream, width=10)
    >>> bar(5, 10, "hb"); bar(10, 10, "hb")
    >>> stream.getvalue().splitlines()[-1].startswith("[##########] 100% 10/10 runs")
    True
    """

    def __init__(self, stream=None, *, width: int = 30) -> None:
        self.stream = sys.stderr if stream is None else stream
        self.width = width
        self.started = time.monotonic()
        self.first: int | None = None
        self.last_decile = -1
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())

    def __call__(self, done: int, total: int, label: str) -> None:
        """Draw the bar for ``done`` of ``total`` runs."""
        if self.first is None:
            self.first, self.started = done, time.monotonic()
        fraction = done / total if total else 1.0
        elapsed = time.monotonic() - self.started
        made = done - self.first
        eta = elapsed / made * (total - done) if made > 0 else math.nan
        eta_text = "--:--" if math.isnan(eta) else f"{int(eta) // 60}:{int(eta) % 60:02d}"
        filled = int(round(fraction * self.width))
        line = (f"[{'#' * filled}{'.' * (self.width - filled)}] {fraction:4.0%} {done:,}/{total:,} runs  "
                f"ETA {eta_text}  {label}")
        decile = int(fraction * 10)
        if self.tty:
            print(f"\r{line:<100}", end="\n" if done >= total else "", file=self.stream, flush=True)
        elif decile > self.last_decile or done >= total:
            print(line, file=self.stream, flush=True)
        self.last_decile = max(decile, self.last_decile)
