"""Bounded runs: what one mechanism run will cost before it starts, and a deadline that long work checks.

**Cost estimates.** ``estimate_cost(mechanism, workload)`` returns a ``Cost``: seconds and peak bytes
of one run (the first one, before any per-workload cache), and ``driver``, the setting that makes it
large (what to change). Each mechanism states its own estimate with a method ``cost(self, workload)``
(``dplens.core.mechanisms.cost_model`` holds the record, the constants and the shared models); without one,
``default_cost`` assumes work linear in the number of cells n plus the workload's matvec.

**Run limits.** ``check_cost`` refuses a run whose estimate exceeds the memory limit or the action
time limit, or whose release would list more than MAX_QUERIES answers (``RunLimits``, defaults from
dplens.core.data.limits), naming what to change; it returns a warning for a run over ``warn_seconds``.

**Deadlines.** A ``Deadline`` is a cancel token with a time limit: long loops call ``expired`` between
steps (cells, trials) and stop cleanly; a Stop button calls ``cancel()``. It does not depend on how
the work is executed, so a serial loop and a parallel backend can both poll it.

>>> from dplens.core.mechanisms import MECHANISMS
>>> from dplens.core.queries.workloads import Prefix
>>> cost = estimate_cost(MECHANISMS["identity"], Prefix(4096))
>>> cost.seconds < 1 and cost.bytes < 2**20
True
>>> check_cost(estimate_cost(MECHANISMS["identity"], Prefix(4096)))
''
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from dplens.core.data.limits import MAX_ACTION_SECONDS, MAX_QUERIES, MAX_RUN_BYTES, WARN_SECONDS
from dplens.core.mechanisms.contract import too_many_answers
from dplens.core.mechanisms.cost_model import (  # re-exported: callers of this module use them
    OVERHEAD_SECONDS,
    SECONDS_PER_ELEMENT,
    Cost,
    bytes_text,
    default_cost,
    matvec_elements,
    mechanism_cost,
    seconds_text,
)
from dplens.core.queries.workloads import Workload
from dplens.core.validate import positive

__all__ = ["OVERHEAD_SECONDS", "SECONDS_PER_ELEMENT", "Cost", "Deadline", "RunLimits", "RunTooLargeError",
           "affordable_trials", "check_cost", "default_cost", "estimate_cost", "matvec_elements", "runs_seconds",
           "sweep_seconds"]

estimate_cost = mechanism_cost  # one run's estimate: the mechanism's own model (dplens.core.mechanisms.cost_model)


def runs_seconds(mechanism, workload: Workload, runs: float) -> float:
    """Estimated serial seconds of ``runs`` runs of ``mechanism`` on ``workload``.

    A data-independent mechanism with a strategy cache (``STRATEGY_CACHES``: mm-opt, Greedy-H, OM, ...) pays its
    strategy once: its first run's estimate, then each further run costs what a run on a fixed strategy does, the
    cells and the workload's matvec (``default_cost``). Any other mechanism pays its estimate on every run.

    >>> from dplens.core.mechanisms import MECHANISMS
    >>> from dplens.core.queries.workloads import Prefix
    >>> once = estimate_cost(MECHANISMS["mm-opt"], Prefix(1024)).seconds
    >>> once < runs_seconds(MECHANISMS["mm-opt"], Prefix(1024), 200) < 2 * once
    True
    >>> identity = estimate_cost(MECHANISMS["identity"], Prefix(1024)).seconds
    >>> runs_seconds(MECHANISMS["identity"], Prefix(1024), 200) == 200 * identity
    True
    """
    from dplens.core.analysis.execution import strategy_caches  # here: this module is read at start-up

    if runs <= 0:
        return 0.0
    first = estimate_cost(mechanism, workload).seconds
    if not strategy_caches(mechanism):
        return first * runs
    return first + default_cost(workload).seconds * (runs - 1)


def sweep_seconds(mechanisms, workload: Workload, epsilons: int, trials: int) -> float:
    """Estimated serial seconds of a sweep: each mechanism's ``runs_seconds`` over epsilons × trials runs.

    >>> from dplens.core.mechanisms import MECHANISMS
    >>> from dplens.core.queries.workloads import Prefix
    >>> sweep_seconds([MECHANISMS["identity"]], Prefix(64), epsilons=10, trials=20) < 1
    True
    """
    return sum(runs_seconds(m, workload, epsilons * trials) for m in mechanisms)


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
    """When to warn about and when to refuse one user action (defaults: dplens.core.data.limits)."""

    warn_seconds: float = WARN_SECONDS
    max_seconds: float = MAX_ACTION_SECONDS
    max_bytes: float = MAX_RUN_BYTES
    max_answers: float = MAX_QUERIES


class RunTooLargeError(ValueError):
    """A run whose estimate exceeds the memory or time limit; the message names what to change."""


def check_cost(cost: Cost, limits: RunLimits = RunLimits(), *, what: str = "this run") -> str:
    """'' when fine, a warning over ``warn_seconds``; raises RunTooLargeError over the memory or time limit.

    >>> check_cost(Cost(30.0, 1e6, "rounds=100"))
    'this run is estimated at about 30 s and 977 kB (rounds=100)'
    >>> check_cost(Cost(1.0, 2e12, "p=512"))
    Traceback (most recent call last):
    dplens.core.analysis.cost.RunTooLargeError: this run would need about 1.86e+03 GB (limit 1 GB): reduce p=512
    >>> check_cost(Cost(1.0, 1e6, "p=64", answers=134_225_920))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    dplens.core.analysis.cost.RunTooLargeError: this run would release 134,225,920 answers (one per query of the ...
    """
    if cost.answers > limits.max_answers:
        raise RunTooLargeError(too_many_answers(what, cost.answers, limits.max_answers))
    if cost.bytes > limits.max_bytes:
        raise RunTooLargeError(f"{what} would need about {bytes_text(cost.bytes)} (limit "
                               f"{bytes_text(limits.max_bytes)}): "
                               f"reduce {cost.driver}")
    if cost.seconds > limits.max_seconds:
        raise RunTooLargeError(f"{what} is estimated at {seconds_text(cost.seconds)} (limit "
                               f"{seconds_text(limits.max_seconds)} per action): reduce {cost.driver}")
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
        positive("deadline seconds", seconds)
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
