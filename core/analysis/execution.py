"""One execution layer for sweeps: independent cells run serially, in local processes, or on Dask.

A *cell* is one (context, mechanism, epsilon, block of trials); a *context* is what many cells share
(histogram, workload, metrics, seed). Trial ``t`` of a cell always draws its noise from
``trial_rng(seed, mechanism, epsilon, t)``, and every backend runs cells with one BLAS thread, so the
numbers are identical bit for bit whatever the backend, the worker count or the order cells finish in.

Backends (``scheduler`` argument, as in ``python -m core grid --scheduler ...``):

- ``"serial"``: in this process (tests, tiny sweeps); ``"auto"`` picks it for small sweeps, else processes.
- ``"processes"`` or ``"processes:N"``: a pool of N local worker processes (default: every core),
  started once and reused. Each sweep's contexts are written once to a temporary directory; arrays
  of 64 KiB or more are stored as ``.npy`` files that workers memory-map read-only instead of
  receiving a pickled copy with every task. Tasks themselves are a few hundred bytes.
- ``"local:N"``: a Dask ``LocalCluster`` of N single-threaded worker processes, closed after the run.
- ``"tcp://HOST:8786"``: an existing Dask cluster (``dask scheduler`` + ``dask worker``). The contexts
  are scattered once to every worker (broadcast) and each task refers to them.

Strategy caches of data-independent mechanisms (mm-opt's optimised strategy, Greedy-H's hierarchy,
OM's factorisation, WDA's division, HB/Privelet energies) are filled once in the calling process
(computing ``expected_mse`` does it) and shipped with the contexts, so no worker recomputes them.

>>> from core.data.domain import Histogram
>>> from core.queries.workloads import Prefix
>>> context = Context(Histogram.from_counts([5.0, 0, 3, 8]), Prefix(4), ("mae",), seed=1)
>>> cells = make_cells({"h": context}, ["identity"], [1.0], trials=3)
>>> [len(r.values) for r in execute({"h": context}, cells, scheduler="serial")]
[3]
"""

from __future__ import annotations

import atexit
import concurrent.futures
import math
import multiprocessing
import os
import pickle
import shutil
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Generator, Hashable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from core.analysis.metrics import HISTOGRAM_METRICS, METRICS
from core.data.domain import Histogram
from core.extras import require
from core.mechanisms import Mechanism
from core.queries.workloads import Workload

SHARED_ARRAY_BYTES = 64 * 1024  # arrays at least this large are memory-mapped, not pickled, for local workers
DASK_NOMINAL_WORKERS = 8  # cells are sized for this many workers on a Dask cluster given by address
POLL_SECONDS = 0.1  # how often a parallel backend checks should_stop while no cell finishes
SHIPPED_CACHE_LIMIT = 16  # entries kept per strategy cache in a worker (the mechanisms' own caches keep 8-16)
_CACHE_MODULES = (  # module, dict: the data-independent strategy caches shipped to workers
    ("core.mechanisms.matrix", "_STRATEGIES"),
    ("core.mechanisms.greedy_h", "_STRATEGIES"),
    ("core.mechanisms.greedy_h", "_TRACES"),
    ("core.mechanisms.om", "_FACTORISATIONS"),
    ("core.mechanisms.wda", "_DIVISIONS"),
    ("core.mechanisms.hierarchical", "_ENERGIES"),
    ("core.mechanisms.privelet", "_ENERGIES"),
)


@dataclass(frozen=True, eq=False)
class Context:
    """What the cells of one sweep share: the data, the workload, the metrics and the base seed."""

    histogram: Histogram
    workload: Workload
    metrics: tuple[str, ...]
    seed: int = 0


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


@dataclass(frozen=True, eq=False)
class CellResult:
    """``values[t, k]``: metric k of trial ``first + t``; ``seconds[t]``: its wall time; or an error."""

    index: int  # position of the cell in the list given to ``execute``
    cell: Cell
    values: np.ndarray
    seconds: np.ndarray
    error: str | None = None


def make_cells(contexts: Mapping[Hashable, Context], mechanisms: Sequence[Mechanism | str],
               epsilons: Sequence[float], trials: int, *, block: int | None = None) -> list[Cell]:
    """Every (context, mechanism, epsilon, trial block), in canonical order; blocks of ``block`` trials.

    >>> from core.queries.workloads import Total
    >>> h = Histogram.from_counts([1.0, 2.0])
    >>> [(c.first, c.stop) for c in make_cells({0: Context(h, Total(2), ("mae",))}, ["identity"], [1.0], 5,
    ...                                          block=2)]
    [(0, 2), (2, 4), (4, 5)]
    """
    from core.analysis.experiment import resolve_mechanisms  # experiment imports this module

    instances = resolve_mechanisms(mechanisms)
    size = trials if block is None else max(1, int(block))
    return [Cell(key, m, float(e), t, min(t + size, trials))
            for key in contexts for m in instances for e in epsilons for t in range(0, trials, size)]


def run_cell(context: Context, cell: Cell, index: int = 0,
             should_stop: Callable[[], bool] | None = None) -> CellResult:
    """Run one cell here; ValueError becomes ``error``. Backends call it with one BLAS thread.

    ``should_stop`` (serial only) is polled before each trial; a stopped cell returns the trials done.
    """
    from core.analysis.experiment import trial_rng

    histogram, workload, metrics = context.histogram, context.workload, context.metrics
    counts, vector, total = histogram.counts, histogram.vector, histogram.total
    values = np.full((cell.runs, len(metrics)), np.nan)
    seconds = np.zeros(cell.runs)
    true_answers = None
    done = cell.runs
    for row, trial in enumerate(range(cell.first, cell.stop)):
        if should_stop is not None and should_stop():
            done = row
            break
        start = time.perf_counter()
        try:
            release = cell.mechanism.run(counts, workload, cell.epsilon,
                                         trial_rng(context.seed, cell.mechanism.name, cell.epsilon, trial))
        except ValueError as err:
            return CellResult(index, cell, values[:0], seconds[:0], str(err))
        seconds[row] = time.perf_counter() - start
        for k, metric in enumerate(metrics):
            if metric in HISTOGRAM_METRICS:
                if release.estimate is not None:
                    values[row, k] = METRICS[metric](vector, release.estimate, total=total)
            else:
                if true_answers is None:
                    true_answers = workload.matvec(vector)
                values[row, k] = METRICS[metric](true_answers, release.answers, total=total)
    return CellResult(index, cell, values[:done], seconds[:done])


# ---------------------------------------------------------------- scheduler specs


@dataclass(frozen=True)
class Scheduler:
    """A parsed ``scheduler`` spec: kind is "serial", "processes", "local" (Dask LocalCluster) or "dask"."""

    kind: str
    workers: int = 0  # 0: this process
    address: str = ""


AUTO_PARALLEL_WORK = 2_000_000  # runs × cells below which "auto" stays in this process (pool start-up ~0.5 s)


def resolve_auto(spec: str | None, runs: int, cells_per_run: int) -> str | None:
    """``"auto"`` → "serial" for small work (runs × histogram cells), else "processes"; others unchanged.

    >>> resolve_auto("auto", 100, 64), resolve_auto("auto", 1600, 4096), resolve_auto("serial", 10**9, 1)
    ('serial', 'processes', 'serial')
    """
    if spec != "auto":
        return spec
    return "serial" if runs * cells_per_run < AUTO_PARALLEL_WORK or (os.cpu_count() or 1) < 2 else "processes"


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


def _cache_dicts() -> list[tuple[str, str, dict]]:
    found = []
    for module, name in _CACHE_MODULES:
        loaded = sys.modules.get(module)
        cache = getattr(loaded, name, None) if loaded is not None else None
        if isinstance(cache, dict):
            found.append((module, name, cache))
    return found


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


def strategy_snapshot(contexts: Mapping[Hashable, Context]) -> dict[tuple[str, str], dict]:
    """The entries of the strategy caches that belong to these contexts' workloads (to ship to workers).

    Fill them first (``expected_mse`` of each data-independent mechanism does it).
    """
    from core.mechanisms.greedy_h import workload_key

    wanted = [workload_key(c.workload) for c in contexts.values()]
    return {(module, name): {k: v for k, v in list(cache.items()) if _mentions(k, wanted)}
            for module, name, cache in _cache_dicts()}


def install_snapshot(snapshot: Mapping[tuple[str, str], dict]) -> None:
    """Put shipped strategy-cache entries into this process's caches (worker side)."""
    import importlib

    for (module, name), entries in snapshot.items():
        cache = getattr(importlib.import_module(module), name)
        for key, value in entries.items():
            cache.setdefault(key, value)
        while len(cache) > SHIPPED_CACHE_LIMIT:  # a long-lived worker sees many workloads: keep the newest
            cache.pop(next(iter(cache)))


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


def _process_task(folder: str, index: int, cell: Cell) -> CellResult:
    _one_blas_thread_here()
    contexts = _payload_contexts(folder, lambda: read_payload(Path(folder)))
    return run_cell(contexts[cell.context], cell, index)


def _dask_task(payload: dict, batch: list[tuple[int, Cell]]) -> list[CellResult]:
    _one_blas_thread_here()
    contexts = _payload_contexts(payload["id"], lambda: payload)
    return [run_cell(contexts[cell.context], cell, index) for index, cell in batch]


DASK_TASKS_PER_WORKER = 24  # cells are batched into about this many tasks per worker


def dask_batches(cells: Sequence[Cell], workers: int) -> list[list[tuple[int, Cell]]]:
    """Cells grouped into about DASK_TASKS_PER_WORKER tasks per worker, dealt round-robin so that every batch
    mixes cheap and costly cells. Each Dask task costs the scheduler and this process about a millisecond:
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
                context.set_forkserver_preload(["core.analysis.execution", "core.mechanisms", "core.analysis.experiment"])
            pool = concurrent.futures.ProcessPoolExecutor(workers, mp_context=context)
            _POOLS[workers] = pool
        return pool


def shutdown_pools() -> None:
    """Stop the local worker pools (they are restarted on demand)."""
    with _POOL_LOCK:
        for pool in _POOLS.values():
            pool.shutdown(wait=True, cancel_futures=True)
        _POOLS.clear()


atexit.register(shutdown_pools)


def _serial(contexts, cells, should_stop) -> Generator[CellResult, None, None]:
    # one BLAS thread as in the workers (threaded sums may round differently); restored at the end
    with threadpool_limits(limits=1, user_api="blas"):
        for index, cell in enumerate(cells):
            yield run_cell(contexts[cell.context], cell, index, should_stop)


def _processes(contexts, cells, workers, snapshot, should_stop) -> Generator[CellResult, None, None]:
    folder = Path(tempfile.mkdtemp(prefix="dplens-sweep-"))
    pool = _pool(workers)
    futures: list[concurrent.futures.Future] = []
    try:
        write_payload({"contexts": dict(contexts), "strategies": snapshot}, folder)
        futures = [pool.submit(_process_task, str(folder), i, cell) for i, cell in enumerate(cells)]
        pending = set(futures)
        while pending:
            finished, pending = concurrent.futures.wait(pending, timeout=POLL_SECONDS,
                                                        return_when=concurrent.futures.FIRST_COMPLETED)
            for future in finished:
                yield future.result()
            if should_stop is not None and should_stop():
                return
    except concurrent.futures.process.BrokenProcessPool:
        with _POOL_LOCK:
            _POOLS.pop(workers, None)
        raise
    finally:
        for future in futures:
            future.cancel()  # Stop: pending cells never start; running ones finish and are dropped
        shutil.rmtree(folder, ignore_errors=True)  # workers keep their maps; Linux frees them on unmap


_CLIENTS: dict[str, Any] = {}  # dask.distributed clients


def dask_client(address: str):
    """A ``dask.distributed.Client`` connected to ``address`` (one per address, reused)."""
    require("dask.distributed", "cluster", "Running on a Dask cluster")
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


def _dask(client, contexts, cells, snapshot, should_stop) -> Generator[CellResult, None, None]:
    from dask.distributed import as_completed

    payload = {"id": uuid.uuid4().hex, "contexts": dict(contexts), "strategies": snapshot}
    # once per worker, not per task; a list, because scatter would split a dict into futures named by its keys
    (shared,) = client.scatter([payload], broadcast=True, hash=False)
    workers = len(client.scheduler_info().get("workers", {})) or 1
    futures = [client.submit(_dask_task, shared, batch, pure=False) for batch in dask_batches(cells, workers)]
    try:
        finishing = as_completed(futures)
        while not finishing.is_empty():
            batch = finishing.next_batch(block=False)
            for future in batch:
                yield from future.result()
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
        client.cancel([shared])


def _local_cluster(workers: int, contexts, cells, snapshot, should_stop) -> Generator[CellResult, None, None]:
    require("dask.distributed", "cluster", "Running on a local Dask cluster")
    from dask.distributed import Client, LocalCluster

    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        yield from _dask(client, contexts, cells, snapshot, should_stop)


def execute(contexts: Mapping[Any, Context], cells: Sequence[Cell], *, scheduler: str | None = "serial",
            should_stop: Callable[[], bool] | None = None) -> Generator[CellResult, None, None]:
    """Run ``cells`` on a backend, yielding each result as it finishes (any order; ``index`` says which).

    Closing the iterator early (``break``, or ``should_stop`` becoming true) cancels the pending cells.
    """
    plan = parse_scheduler(scheduler)
    if plan.kind == "serial" or not cells:
        iterator = _serial(contexts, cells, should_stop)
    else:
        snapshot = strategy_snapshot(contexts)
        if plan.kind == "processes":
            iterator = _processes(contexts, cells, plan.workers, snapshot, should_stop)
        elif plan.kind == "local":
            iterator = _local_cluster(plan.workers, contexts, cells, snapshot, should_stop)
        else:
            iterator = _dask(dask_client(plan.address), contexts, cells, snapshot, should_stop)
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
