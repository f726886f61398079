"""Bounded runs: what one mechanism run will cost before it starts, and a deadline that long work checks.

**Cost estimates.** ``estimate_cost(mechanism, workload)`` returns a ``Cost``: seconds and peak bytes
of one run (the first one, before any per-workload cache), and ``driver``, the setting that makes it
large (what to change). A mechanism states its own estimate with a method
``cost(self, workload) -> Cost``; without one, ``default_cost`` assumes work linear in the number of
cells n plus the workload's matvec, which is right for the noise-on-cells families. The models below
are order-of-magnitude fits to ``bench/bench_bounds.py`` on a 2-core machine: they decide whether to
warn, refuse or leave a mechanism out of a sweep, not how long to sleep.

**Run limits.** ``check_cost`` refuses a run whose estimate exceeds the memory limit or the action
time limit (``RunLimits``, defaults from core.data.limits), naming what to change; it returns a warning
for a run over ``warn_seconds``.

**Deadlines.** A ``Deadline`` is a cancel token with a time limit: long loops call ``expired`` between
steps (cells, trials) and stop cleanly; a Stop button calls ``cancel()``. It does not depend on how
the work is executed, so a serial loop and a parallel backend can both poll it.

>>> from core.mechanisms import MECHANISMS
>>> from core.queries.workloads import Prefix
>>> cost = estimate_cost(MECHANISMS["identity"], Prefix(4096))
>>> cost.seconds < 1 and cost.bytes < 2**20
True
>>> check_cost(estimate_cost(MECHANISMS["identity"], Prefix(4096)))
''
"""

from __future__ import annotations

import dataclasses
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from core.data.limits import MAX_ACTION_SECONDS, MAX_RUN_BYTES, WARN_SECONDS
from core.mechanisms import Mechanism, check_parameters
from core.queries.workloads import (
    AllRange,
    Explicit,
    Identity,
    Kron,
    Prefix,
    Ranges,
    Stack,
    Total,
    Workload,
    as_intervals,
)

# Per-element costs of vectorised NumPy on this class of machine (bench/bench_bounds.py).
SECONDS_PER_ELEMENT = 5e-9
OVERHEAD_SECONDS = 2e-4   # Python overhead of one run of a simple mechanism


@dataclass(frozen=True)
class Cost:
    """Estimated wall seconds and peak bytes of one mechanism run, and the setting that drives them.

    >>> Cost(2.0, 1e6, "rounds") .scaled(10).seconds
    20.0
    """

    seconds: float
    bytes: float
    driver: str = ""

    def scaled(self, runs: float) -> Cost:
        """``runs`` repetitions in sequence: time adds up, peak memory does not."""
        return dataclasses.replace(self, seconds=self.seconds * runs)

    def describe(self) -> str:
        """'about 3.2 s and 120 MB' (rounded for people)."""
        return f"about {_seconds(self.seconds)} and {_bytes(self.bytes)}"


def _seconds(value: float) -> str:
    return f"{value:.2g} s" if value < 120 else f"{value / 60:.3g} min" if value < 7200 else f"{value / 3600:.3g} h"


def _bytes(value: float) -> str:
    for unit, size in (("GB", 2**30), ("MB", 2**20), ("kB", 2**10)):
        if value >= size:
            return f"{value / size:.3g} {unit}"
    return f"{value:.0f} B"


def matvec_elements(workload: Workload) -> float:
    """Elements touched by one ``workload.matvec`` (≈ its cost), from the operator's structure.

    >>> matvec_elements(Prefix(100)), matvec_elements(Kron((Identity(4), Total(8))))
    (100.0, 64.0)
    """
    m, n = workload.shape
    if isinstance(workload, Identity | Total | Prefix):
        return float(n)
    if isinstance(workload, AllRange | Ranges):
        return float(m + n)
    if isinstance(workload, Explicit):
        matrix = workload.matrix
        return float(matrix.nnz if hasattr(matrix, "nnz") else m * n)
    if isinstance(workload, Stack):
        return float(sum(matvec_elements(p) for p in workload.parts))
    if isinstance(workload, Kron):
        (m1, n1), (m2, n2) = (f.shape for f in workload.factors)
        # Kron.matvec applies the first factor along n2 columns, then the second along m1 rows
        return float(min(matvec_elements(workload.factors[0]), m1 * n1) * n2
                     + min(matvec_elements(workload.factors[1]), m2 * n2) * m1)
    structure = getattr(workload, "matvec_elements", None)  # a new workload may say so itself
    return float(structure()) if callable(structure) else float(m + n)


def default_cost(workload: Workload, *, passes: float = 4.0, driver: str = "") -> Cost:
    """Work linear in the cells plus ``passes`` matvecs; memory a few vectors of n and m floats."""
    m, n = workload.shape
    elements = passes * (n + matvec_elements(workload))
    return Cost(OVERHEAD_SECONDS + SECONDS_PER_ELEMENT * elements, 8.0 * (6 * n + 3 * m),
                driver or f"the domain ({n:,} cells) and the workload ({m:,} queries)")


def _dense_rows(workload: Workload) -> float:
    """Entries of W as ``sparse_matrix`` builds it: nnz for sparse-native workloads, else m·n (via dense())."""
    m, n = workload.shape
    if isinstance(workload, Explicit):
        return float(workload.matrix.nnz if hasattr(workload.matrix, "nnz") else m * n)
    if isinstance(workload, Ranges):
        return float(((workload.hi - workload.lo) + 1).sum())
    return float(m) * n


def _mwem(mechanism, workload: Workload) -> Cost:
    m, n = workload.shape
    rounds, updates = int(mechanism.rounds), int(mechanism.update_rounds)
    per_round = 3 * matvec_elements(workload) + 4 * m + 6 * n
    atoms = min(n, 2 * rounds + 1) if isinstance(workload, Ranges | Prefix | AllRange | Identity | Total) else n
    seconds = SECONDS_PER_ELEMENT * (rounds * per_round + 0.2 * rounds * updates * atoms)  # compiled updates
    return Cost(OVERHEAD_SECONDS * rounds + seconds, 8.0 * (8 * n + 4 * m + rounds * n),
                f"rounds={rounds} × update_rounds={updates} over {n:,} cells and {m:,} queries")


def _greedy(mechanism, workload: Workload) -> Cost:
    m, n = workload.shape
    granularity, branching = int(mechanism.granularity), int(mechanism.branching)
    units = min(n, 4096)
    tree = SECONDS_PER_ELEMENT * (20 * units * granularity + 30 * (n + matvec_elements(workload))
                                  + 40 * n * math.log2(max(n, 2)))  # DAWA's partition and the tree's layout
    memory = 8.0 * (4 * units * granularity / branching + 64 * n + 3 * m)
    if type(mechanism).__name__ in ("GreedyH", "GaussianGreedyH"):
        memory += 8.0 * units * units  # the unit × unit Gram (dense, MAX_UNITS = 4096)
        tree += SECONDS_PER_ELEMENT * 10 * units * units
    return Cost(OVERHEAD_SECONDS + tree, memory,
                f"granularity={granularity} over {n:,} cells (and the workload, {m:,} queries)")


def _matrix(mechanism, workload: Workload) -> Cost:
    from core.mechanisms.matrix import MID_CELLS, SMALL_CELLS, auto_p, settings

    n = workload.shape[1]
    p = auto_p(n) if mechanism.p == "auto" else int(mechanism.p)
    restarts = int(mechanism.restarts)
    # projected L-BFGS iterations per start until its stop (bench_mmopt.py, one BLAS thread): about 500 at the
    # 1e-6 stop up to 512 cells, 200 at 1e-4 up to 1024, 600 at 2e-5 up to 2048, the iteration cap above
    typical = 500 if n <= SMALL_CELLS else 200 if n <= MID_CELLS else 600
    iterations = min(settings(n, p).iterations, typical)
    # an iteration: four p × p × n products, O(pn) Gram and L-BFGS vector work, 0.1 ms of Python; measured
    # 0.06-0.08 s at n = 256, 0.6-0.7 s at 1024, 5-8 s at 2048 (p = 96), 15 s at 4096 (p = 128), 25 s at 16,384
    seconds = restarts * iterations * (1e-4 + n * p * (3.5e-8 + 3e-10 * p))
    return Cost(OVERHEAD_SECONDS + seconds, 8.0 * p * n * 40 + 8.0 * 4 * n,
                f"p={p} × restarts={restarts} over {n:,} cells (mm-opt optimises a p × n strategy)")


def _wda(mechanism, workload: Workload) -> Cost:
    m, n = workload.shape
    if as_intervals(workload) is not None:  # divided on the interval ends: O(m log m) per split, no matrix
        seconds = SECONDS_PER_ELEMENT * (40 * m * max(1.0, math.log2(max(m, 2))) + 4 * (n + matvec_elements(workload)))
        return Cost(OVERHEAD_SECONDS + seconds, 8.0 * (4 * n + 12 * m),
                    f"the workload's {m:,} interval queries over {n:,} cells")
    entries = _dense_rows(workload)
    seconds = 1e-8 * entries * max(1.0, math.log2(max(m, 2))) + SECONDS_PER_ELEMENT * 8 * m * 64
    if not isinstance(workload, Explicit):  # sparse_matrix builds W column by column via dense()
        seconds += n * (5e-5 + SECONDS_PER_ELEMENT * matvec_elements(workload))
    return Cost(OVERHEAD_SECONDS + seconds, 8.0 * (3 * entries + 4 * n + 4 * m),
                f"the workload's {entries:,.0f} matrix entries ({m:,} queries × {n:,} cells)")


def _om(mechanism, workload: Workload) -> Cost:
    m, n = workload.shape
    if as_intervals(workload) is not None:  # elementary segments: B holds ≤ one entry per (query, segment)
        mixing = float(m) * min(2 * m + 1, n) / 2
        return Cost(OVERHEAD_SECONDS + SECONDS_PER_ELEMENT * (20 * (n + matvec_elements(workload)) + 10 * mixing),
                    8.0 * (8 * n + 4 * mixing), f"the workload's {m:,} interval queries over {n:,} cells")
    return Cost(OVERHEAD_SECONDS + 2e-10 * m * n * min(m, n), 8.0 * 3 * m * n,
                f"the workload ({m:,} queries × {n:,} cells, which OM factorises densely)")


def _sorting(mechanism, workload: Workload) -> Cost:
    n = workload.shape[1]
    base = default_cost(workload)
    factor = 60 if type(mechanism).__name__ == "SrebGca" else 10  # SReB_GCA's grouping pass is slower than AHP's
    return dataclasses.replace(base, seconds=base.seconds + SECONDS_PER_ELEMENT * factor * n * math.log2(max(n, 2)))


# Estimates for the registered mechanisms, by class; a mechanism's own ``cost`` method takes precedence.
COST_MODELS: dict[str, Callable[[Mechanism, Workload], Cost]] = {
    "MWEM": _mwem, "DAWA": _greedy, "GreedyH": _greedy, "MatrixMechanism": _matrix, "WDA": _wda, "OM": _om,
    "SrebGca": _sorting, "AHP": _sorting,
}


def estimate_cost(mechanism: Mechanism, workload: Workload) -> Cost:
    """Seconds and peak bytes of one run of ``mechanism`` on ``workload`` (settings checked first).

    Raises:
        ValueError: a setting outside its documented range (``check_parameters``).
    """
    mechanism = check_parameters(mechanism)
    own = getattr(mechanism, "cost", None)
    if callable(own):
        return own(workload)
    model = COST_MODELS.get(type(mechanism).__name__)
    return model(mechanism, workload) if model is not None else default_cost(workload)


def sweep_seconds(mechanisms, workload: Workload, epsilons: int, trials: int) -> float:
    """Estimated serial seconds of a sweep: each mechanism's run estimate × epsilons × trials.

    >>> from core.mechanisms import MECHANISMS
    >>> from core.queries.workloads import Prefix
    >>> sweep_seconds([MECHANISMS["identity"]], Prefix(64), epsilons=10, trials=20) < 1
    True
    """
    return sum(estimate_cost(m, workload).seconds for m in mechanisms) * epsilons * trials


def affordable_trials(mechanisms, workload: Workload, epsilons: int, *, seconds: float = 20.0,
                      most: int = 20, least: int = 2) -> int:
    """The most trials (between ``least`` and ``most``) whose estimated runs fit in ``seconds``.

    20 s of runs leaves room, within a 30 s sweep, for the analytic errors computed once per workload.

    A default for the Compare page: 20 trials on a 4096-bin histogram, fewer on a 256 × 256 grid.
    """
    per_trial = sweep_seconds(mechanisms, workload, epsilons, 1)
    return int(min(most, max(least, seconds // per_trial if per_trial > 0 else most)))


@dataclass(frozen=True)
class RunLimits:
    """When to warn about and when to refuse one user action (defaults: core.data.limits)."""

    warn_seconds: float = WARN_SECONDS
    max_seconds: float = MAX_ACTION_SECONDS
    max_bytes: float = MAX_RUN_BYTES


class RunTooLargeError(ValueError):
    """A run whose estimate exceeds the memory or time limit; the message names what to change."""


def check_cost(cost: Cost, limits: RunLimits = RunLimits(), *, what: str = "this run") -> str:
    """'' when fine, a warning over ``warn_seconds``; raises RunTooLargeError over the memory or time limit.

    >>> check_cost(Cost(30.0, 1e6, "rounds=100"))
    'this run is estimated at about 30 s and 977 kB (rounds=100)'
    >>> check_cost(Cost(1.0, 2e12, "p=512"))
    Traceback (most recent call last):
    core.analysis.cost.RunTooLargeError: this run would need about 1.86e+03 GB (limit 1 GB): reduce p=512
    """
    if cost.bytes > limits.max_bytes:
        raise RunTooLargeError(f"{what} would need about {_bytes(cost.bytes)} (limit {_bytes(limits.max_bytes)}): "
                               f"reduce {cost.driver}")
    if cost.seconds > limits.max_seconds:
        raise RunTooLargeError(f"{what} is estimated at {_seconds(cost.seconds)} (limit "
                               f"{_seconds(limits.max_seconds)} per action): reduce {cost.driver}")
    if cost.seconds > limits.warn_seconds:
        return f"{what} is estimated at {cost.describe()} ({cost.driver})"
    return ""


class Deadline:
    """A time limit plus a cancel flag, polled between steps of long work (thread-safe).

    >>> d = Deadline(60)
    >>> d.expired, d.cancel(), d.expired, d.reason
    (False, None, True, 'cancelled')
    """

    def __init__(self, seconds: float = MAX_ACTION_SECONDS, *, clock: Callable[[], float] = time.monotonic):
        if not seconds > 0:
            raise ValueError(f"deadline seconds must be > 0, got {seconds!r}")
        self.seconds, self._clock = float(seconds), clock
        self._end = clock() + self.seconds
        self._cancelled = threading.Event()

    def cancel(self) -> None:
        """Stop at the next check (a Stop button, a closed session)."""
        self._cancelled.set()

    @property
    def remaining(self) -> float:
        """Seconds left (0 once cancelled or past the limit)."""
        return 0.0 if self._cancelled.is_set() else max(0.0, self._end - self._clock())

    @property
    def expired(self) -> bool:
        """True once cancelled or past the time limit."""
        return self.remaining <= 0.0

    @property
    def reason(self) -> str:
        """'cancelled', 'time limit of N s reached', or '' while running."""
        if self._cancelled.is_set():
            return "cancelled"
        return f"time limit of {self.seconds:g} s reached" if self.expired else ""
