"""Experiment grids in the manner of DPBench: datasets × domain sizes × scales × mechanisms × ε × trials.

Domain sizes come from *coarsening* (summing runs of adjacent bins), data scales from *sampling* a
given number of records from the histogram's shape (multinomial with p = x / ‖x‖₁, seeded), as in
Hay et al., "Principled Evaluation of Differentially Private Algorithms using DPBench" (SIGMOD 2016,
§5.1). The result is a tidy Parquet file, one row per (cell, trial, metric), with the schema
``GRID_SCHEMA``. ``run_grid`` writes the file as soon as the first (mechanism, ε) pair is complete, then
every few seconds, so an interrupted grid resumes where it stopped: cells already in the file are skipped.
Data-independent strategies (mm-opt's optimisation above all) are optimised on the execution backend, one
task per distinct (mechanism, workload), and kept on disk (``strategy_store``) for later and resumed grids.

>>> from dplens.core.data.domain import Histogram
>>> coarsen(Histogram.from_counts([1.0, 2, 3, 4]), 2).vector.tolist()
[3.0, 7.0]
"""

from __future__ import annotations

import collections
import math
import os
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import numpy as np
import pandas as pd

from dplens.core.analysis.cost import runs_seconds
from dplens.core.analysis.execution import (
    Cell,
    Context,
    StrategyJob,
    StrategyResult,
    default_block,
    execute,
    install_snapshot,
    known_job,
    parse_scheduler,
    remember_job,
    resolve_auto,
    strategy_caches,
)
from dplens.core.analysis.experiment import resolve_mechanisms
from dplens.core.analysis.metrics import check_metrics, expected_metrics
from dplens.core.analysis.strategy_store import StrategyStore, stable_hash
from dplens.core.data.datasets import load_histogram
from dplens.core.data.domain import Histogram
from dplens.core.data.fingerprint import dataset_fingerprint
from dplens.core.mechanisms import check_epsilon
from dplens.core.mechanisms.greedy_h import workload_key
from dplens.core.queries.workloads import parse_workload
from dplens.core.validate import integer

SAMPLE_STREAM = 0x5CA1E  # seeds the scale samples, apart from every trial's noise stream
FLUSH_SECONDS = 5.0  # finished cells reach the file at least this often (the first complete pair at once)
KEY = ["dataset", "domain_size", "scale", "workload", "seed", "mechanism", "epsilon"]  # one grid cell


def _schema():
    import pyarrow as pa

    return pa.schema([
        ("dataset", pa.string()), ("data_fingerprint", pa.string()), ("domain_size", pa.int64()),
        ("scale", pa.int64()), ("workload", pa.string()), ("seed", pa.int64()), ("mechanism", pa.string()),
        ("epsilon", pa.float64()), ("trial", pa.int64()), ("metric", pa.string()), ("value", pa.float64()),
        ("expected", pa.float64()), ("seconds", pa.float64()),
    ])


GRID_COLUMNS = ["dataset", "data_fingerprint", "domain_size", "scale", "workload", "seed", "mechanism", "epsilon",
                "trial", "metric", "value", "expected", "seconds"]


def coarsen(histogram: Histogram, size: int) -> Histogram:
    """Sum runs of n / size adjacent bins (1-D): DPBench's domain-size reduction.

    Raises:
        ValueError: the histogram is not 1-D, or ``size`` does not divide its n bins.
    """
    n = histogram.domain.size
    if len(histogram.domain.shape) != 1:
        raise ValueError(f"grid sizes coarsen 1-D histograms only; {histogram.name!r} has shape "
                         f"{histogram.domain.shape}")
    if isinstance(size, bool) or not isinstance(size, int | np.integer) or size < 1 or n % size:
        raise ValueError(f"size must be an integer that divides the {n} bins of {histogram.name!r}, got {size!r}")
    counts = histogram.vector.reshape(int(size), n // int(size)).sum(axis=1)
    return Histogram.from_counts(counts, name=histogram.name)


def rescale(histogram: Histogram, scale: int, rng: np.random.Generator) -> Histogram:
    """``scale`` records drawn from the histogram's shape (multinomial): DPBench's data scale.

    >>> h = rescale(Histogram.from_counts([1.0, 0, 3]), 1000, np.random.default_rng(0))
    >>> h.total, float(h.vector[1])
    (1000.0, 0.0)
    """
    integer("scale (number of records)", scale)
    total = histogram.total
    if not total > 0:
        raise ValueError(f"cannot sample a scale from {histogram.name!r}: it has no records")
    p = histogram.vector / total
    counts = rng.multinomial(int(scale), p / p.sum()).astype(float)
    return Histogram.from_counts(counts.reshape(histogram.domain.shape), name=histogram.name)


@dataclass(frozen=True)
class GridSpec:
    """What a grid runs; ``sizes``/``scales`` None mean the dataset's own (native) size or scale."""

    datasets: tuple[str, ...]
    mechanisms: tuple[str, ...]
    epsilons: tuple[float, ...]
    trials: int
    sizes: tuple[int | None, ...] = (None,)
    scales: tuple[int | None, ...] = (None,)
    workload: str = "random-range:m=2000"
    seed: int = 0
    metrics: tuple[str, ...] = ("mae", "rmse")

    def __post_init__(self) -> None:
        if not self.datasets:
            raise ValueError("datasets: choose at least one dataset")
        resolve_mechanisms(list(self.mechanisms))
        if not self.epsilons:
            raise ValueError("epsilons: choose at least one epsilon")
        for e in self.epsilons:
            check_epsilon(e)
        integer("trials", self.trials)
        check_metrics(self.metrics)  # each dataset's total is checked with its context

    @property
    def runs(self) -> int:
        """Mechanism runs in the whole grid."""
        return (len(self.datasets) * len(self.sizes) * len(self.scales) * len(self.mechanisms)
                * len(self.epsilons) * self.trials)


def dataset_label(source: str) -> str:
    """The name a dataset gets in the grid file: a sample's name, or a file's stem."""
    return Path(source).stem if ("/" in source or "." in source) else source


def build_contexts(spec: GridSpec) -> dict[tuple, Context]:
    """One context per (dataset, size, scale): sampled at the scale first, then coarsened to the size.

    The key is (dataset, domain_size, scale, workload, seed), the grid file's first columns.
    """
    contexts: dict[tuple, Context] = {}
    for source in spec.datasets:
        original = load_histogram(source)
        label = dataset_label(source)
        for scale in spec.scales:
            if scale is None:
                scaled = original
            else:
                rng = np.random.default_rng([int(spec.seed), zlib.crc32(label.encode()), int(scale), SAMPLE_STREAM])
                scaled = rescale(original, int(scale), rng)
            records = int(round(scaled.total))
            for size in spec.sizes:
                histogram = scaled if size is None else coarsen(scaled, int(size))
                n = histogram.domain.size
                workload = parse_workload(spec.workload, histogram.domain.shape, np.random.default_rng(spec.seed))
                contexts[(label, n, records, spec.workload, int(spec.seed))] = Context(
                    histogram, workload, tuple(spec.metrics), int(spec.seed))
    return contexts


def load_grid(path: str | Path) -> pd.DataFrame:
    """Read a grid file, checking it has the grid schema's columns (any file ``run_grid`` wrote)."""
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    missing = [c for c in GRID_COLUMNS if c not in table.column_names]
    if missing:
        raise ValueError(f"{Path(path).name} is not a dplens grid file: columns {missing} are missing")
    return table.to_pandas()[GRID_COLUMNS]


def _write(frame: pd.DataFrame, path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(frame[GRID_COLUMNS], schema=_schema(), preserve_index=False)
    temporary = path.with_name(path.name + ".partial")
    pq.write_table(table, temporary)
    os.replace(temporary, path)  # atomic: an interruption never leaves a half-written file


@dataclass
class GridOutcome:
    """What one ``run_grid`` call did."""

    computed: int = 0  # runs made now
    skipped: int = 0  # runs found in the file already
    stopped: bool = False
    errors: dict[str, str] = field(default_factory=dict)
    strategies_computed: int = 0  # distinct (mechanism, workload) strategies optimised now
    strategies_loaded: int = 0  # … found in this process's caches or in the strategy store instead


def _done_cells(existing: pd.DataFrame, trials: int, metrics: Sequence[str]) -> set[tuple]:
    if existing.empty:
        return set()
    rows = existing[existing["metric"].isin(metrics)]
    counts = rows.groupby(KEY)["trial"].nunique()
    metric_counts = rows.groupby(KEY)["metric"].nunique()
    complete = counts[(counts >= trials) & (metric_counts >= len(metrics))]
    return {tuple(k) for k in complete.index}


def _strategy_jobs(contexts: dict[tuple, Context], pairs: list[tuple], store: StrategyStore | None,
                   metrics: Sequence[str], expected: dict[tuple, list[float]]
                   ) -> tuple[list[StrategyJob], dict[int, list[tuple]], int]:
    """Strategy jobs still to compute (one per distinct mechanism and workload, ε gathered), the pairs each
    serves, and how many were found in this process's caches or loaded from ``store``. Fills ``expected``
    for every other pair, here."""
    groups: dict[tuple[str, str], list[tuple]] = {}
    workload_hashes: dict[tuple, str] = {}
    for key, m, e in pairs:
        if strategy_caches(m):
            if key not in workload_hashes:
                workload_hashes[key] = stable_hash(workload_key(contexts[key].workload))
            groups.setdefault((stable_hash(m), workload_hashes[key]), []).append((key, m, e))
        else:  # closed forms and data-dependent mechanisms: nothing to optimise
            analytic = expected_metrics(m, contexts[key].workload, contexts[key].privacy_at(e))
            expected[key, m.name, e] = [analytic[metric] for metric in metrics]
    jobs: list[StrategyJob] = []
    served: dict[int, list[tuple]] = {}
    loaded = 0
    for group in groups.values():
        key, m, _ = group[0]
        workload = contexts[key].workload
        if not known_job(m, workload):  # computed by an earlier grid or sweep of this process: nothing to do
            entries = store.load(m, workload_key(workload)) if store is not None else None
            if entries is None:
                served[len(jobs)] = group
                jobs.append(StrategyJob(key, m, tuple(sorted({e for _, _, e in group}))))
                continue
            install_snapshot(entries)  # this process's caches: the expected errors below and the workers' snapshot
            remember_job(m, workload, entries)
        loaded += 1
        for pair_key, pair_m, e in group:
            analytic = expected_metrics(pair_m, workload, contexts[pair_key].privacy_at(e))
            expected[pair_key, pair_m.name, e] = [analytic[metric] for metric in metrics]
    return jobs, served, loaded


def run_grid(spec: GridSpec, output: str | Path, *, scheduler: str | None = "serial",
             progress: Callable[[int, int, str], None] | None = None,
             should_stop: Callable[[], bool] | None = None, store: StrategyStore | bool = True) -> GridOutcome:
    """Run the grid's missing cells and add them to ``output`` (Parquet), written every few seconds.

    Cells already complete in ``output`` are skipped, so an interrupted grid resumes without
    recomputing. Mechanisms that reject a dataset are reported in ``errors`` and write no rows.
    The file is first written as soon as one (mechanism, ε) pair is complete.

    Data-independent strategies come from ``store`` (True: ``$DPLENS_HOME/strategies``; False: none)
    when it has them; the others are optimised on the backend (in parallel with the cells that need
    none) and added to it.
    """
    output = Path(output)
    strategy_store = StrategyStore() if store is True else (store or None)
    contexts = build_contexts(spec)
    existing = load_grid(output) if output.exists() else pd.DataFrame(columns=GRID_COLUMNS)
    done = _done_cells(existing, spec.trials, spec.metrics)
    mechanisms = resolve_mechanisms(list(spec.mechanisms))
    pairs = [(key, m, float(e)) for key in contexts for m in mechanisms for e in spec.epsilons
             if (*key, m.name, float(e)) not in done]
    outcome = GridOutcome(skipped=spec.runs - len(pairs) * spec.trials)
    runs_left = collections.Counter((key, m.name) for key, m, _ in pairs)  # ε left per (context, mechanism)
    serial = sum(runs_seconds(m, contexts[key].workload, runs_left[key, m.name] * spec.trials)
                 for key in contexts for m in mechanisms)
    scheduler = resolve_auto(scheduler, serial)
    block = default_block(len(pairs), spec.trials, parse_scheduler(scheduler).workers)
    cells = [Cell(key, m, e, t, min(t + block, spec.trials)) for key, m, e in pairs
             for t in range(0, spec.trials, block)]
    blocks_per_pair = math.ceil(spec.trials / block)
    expected: dict[tuple, list[float]] = {}
    jobs, served, outcome.strategies_loaded = _strategy_jobs(contexts, pairs, strategy_store, spec.metrics, expected)

    def on_strategy(result: StrategyResult) -> None:  # here, as each job finishes (before its cells run)
        workload = contexts[cast(tuple, result.job.context)].workload  # a grid's contexts are keyed by tuples
        install_snapshot(result.entries)
        remember_job(result.job.mechanism, workload, result.entries)
        if strategy_store is not None:
            strategy_store.save(result.job.mechanism, workload_key(workload), result.entries)
        for key, m, e in served[result.index]:
            expected[key, m.name, e] = [result.expected[e][metric] for metric in spec.metrics]
        outcome.strategies_computed += 1

    file = _GridFile(output, existing)
    pending: dict[tuple, list] = {}
    finished = outcome.skipped
    iterator = execute(contexts, cells, scheduler=scheduler, should_stop=should_stop, strategies=jobs,
                       on_strategy=on_strategy)
    try:
        for result in iterator:
            cell = result.cell
            context = cast(tuple, cell.context)  # a grid's contexts are keyed by tuples (dataset, n)
            finished += cell.runs
            if progress is not None:
                progress(finished, spec.runs, f"{context[0]} n={context[1]} {cell.mechanism.name}")
            if result.error is not None:
                outcome.errors.setdefault(cell.mechanism.name, result.error)
                continue
            if len(result.values) < cell.runs:  # cut short by should_stop: the pair stays undone
                outcome.stopped = True
                break
            outcome.computed += cell.runs
            pair = (context, cell.mechanism.name, cell.epsilon)
            pending.setdefault(pair, []).append(result)
            if len(pending[pair]) == blocks_per_pair:  # the whole pair is done: it may enter the file
                file.add(_rows(contexts[context], context, pending.pop(pair), expected[pair], spec.metrics))
    finally:
        iterator.close()
        file.flush()  # also on KeyboardInterrupt: what finished is kept
    outcome.stopped = outcome.stopped or finished < spec.runs
    return outcome


class _GridFile:
    """The grid's Parquet file: rows already there, then new pairs' rows, written when the first pair is
    complete (a kill after it keeps it) and then every FLUSH_SECONDS."""

    def __init__(self, path: Path, existing: pd.DataFrame) -> None:
        self.path, self.frames = path, [existing] if not existing.empty else []
        self.new_rows: list[tuple] = []
        self.written, self.last_flush = False, time.monotonic()

    def add(self, rows: list[tuple]) -> None:
        self.new_rows.extend(rows)
        if not self.written or time.monotonic() - self.last_flush > FLUSH_SECONDS:
            self.flush()

    def flush(self) -> None:
        if self.new_rows:
            self.frames.append(pd.DataFrame(self.new_rows, columns=GRID_COLUMNS))
            self.new_rows = []
            _write(pd.concat(self.frames, ignore_index=True) if len(self.frames) > 1 else self.frames[0], self.path)
            self.written = True
        self.last_flush = time.monotonic()


def _rows(context: Context, key: tuple, results: list, expected: list[float], metrics: Sequence[str]) -> list:
    dataset, size, scale, workload, seed = key
    data = dataset_fingerprint(context.histogram)
    rows = []
    for result in sorted(results, key=lambda r: r.cell.first):
        cell = result.cell
        for t in range(len(result.values)):
            for k, metric in enumerate(metrics):
                rows.append((dataset, data, size, scale, workload, seed, cell.mechanism.name, cell.epsilon,
                             cell.first + t, metric, float(result.values[t, k]), expected[k],
                             float(result.seconds[t])))
    return rows


# ---------------------------------------------------------------- DPComp-style views


def grid_ranking(df: pd.DataFrame, metric: str, by: Sequence[str] = ("dataset", "domain_size", "scale", "epsilon")
                 ) -> pd.DataFrame:
    """Mean error per setting and mechanism, with regret (÷ the best mean there) and rank (1 = best).

    >>> df = pd.DataFrame({"dataset": "d", "domain_size": 4, "scale": 10, "epsilon": 1.0, "metric": "mae",
    ...                    "mechanism": ["a", "a", "b", "b"], "value": [1.0, 3.0, 4.0, 4.0]})
    >>> grid_ranking(df, "mae")[["mechanism", "error", "regret", "rank"]].to_dict("list")
    {'mechanism': ['a', 'b'], 'error': [2.0, 4.0], 'regret': [1.0, 2.0], 'rank': [1.0, 2.0]}
    """
    by = list(by)
    rows = df[df["metric"] == metric]
    means = rows.groupby([*by, "mechanism"])["value"].mean().rename("error").reset_index()
    best = means.groupby(by)["error"].transform("min")
    means["regret"] = means["error"] / best.where(best > 0)
    means["rank"] = means.groupby(by)["error"].rank(method="min")
    return means


def regret_table(df: pd.DataFrame, metric: str, across: str) -> pd.DataFrame:
    """Mean regret of each mechanism (rows) for each value of ``across`` (columns): DPComp's summary."""
    ranking = grid_ranking(df, metric)
    return ranking.pivot_table(index="mechanism", columns=across, values="regret", aggfunc="mean")


def rank_table(df: pd.DataFrame, metric: str, across: str) -> pd.DataFrame:
    """Mean rank of each mechanism (rows) for each value of ``across`` (columns)."""
    ranking = grid_ranking(df, metric)
    return ranking.pivot_table(index="mechanism", columns=across, values="rank", aggfunc="mean")


def grid_setting(df: pd.DataFrame, dataset: str, domain_size: int, scale: int) -> pd.DataFrame:
    """One (dataset, size, scale) of a grid in ``run_sweep``'s columns, for ``summarise`` and the frontier.

    >>> df = pd.DataFrame({"dataset": "d", "domain_size": 4, "scale": 10, "mechanism": "a", "epsilon": 1.0,
    ...                    "trial": [0, 1], "metric": "mae", "value": [1.0, 3.0], "seconds": 0.1, "expected": 2.0})
    >>> list(grid_setting(df, "d", 4, 10).columns)
    ['mechanism', 'epsilon', 'trial', 'metric', 'value', 'seconds', 'expected']
    """
    rows = df[(df["dataset"] == dataset) & (df["domain_size"] == domain_size) & (df["scale"] == scale)]
    return rows[["mechanism", "epsilon", "trial", "metric", "value", "seconds", "expected"]].reset_index(drop=True)
