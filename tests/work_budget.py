"""A bound on work, not on wall time, for tests that must notice a hang or a blow-up.

A wall-clock bound fails on a loaded machine (a fuzz example once took 5.47 s under CI load against a 5 s bound)
and lets a regression that multiplies the work pass on a fast one; CPU time is a clock too. Instead the code
under test runs with a profile hook counting its function calls (Python and C): the same count for the same input
and code, whatever the load. Past the budget the next call raises ``WorkBudgetExceeded`` where it happens, so a
runaway loop stops there instead of running on. Work done in C without calls (one huge NumPy array) is seen as
memory instead: the block's peak of traced allocations (``tracemalloc``, which NumPy reports its buffers to).

>>> with call_budget(10_000) as work:
...     _ = sorted(str(i) for i in range(100))
>>> 100 <= work.calls <= 10_000, work.peak_bytes is None
(True, True)
>>> with call_budget(10_000, peak_bytes=1 << 30) as work:
...     _ = bytearray(1 << 20)
>>> work.peak_bytes >= 1 << 20, work.within
(True, True)
"""

from __future__ import annotations

import contextlib
import sys
import threading
import tracemalloc
from collections.abc import Iterator
from dataclasses import dataclass


class WorkBudgetExceeded(BaseException):
    """More calls than the budget. A BaseException, as KeyboardInterrupt is: no ``except Exception`` in the code
    under test (the command line's last-resort handler, Streamlit's script runner) can turn it into a normal
    refusal."""


@dataclass
class Work:
    """The calls counted so far, against ``budget``; with a memory cap, the block's peak traced bytes."""

    budget: int
    calls: int = 0
    peak_cap: int | None = None
    peak_bytes: int | None = None  # known when the block has ended

    @property
    def within(self) -> bool:
        """Whether the work stayed within the budget (and the memory peak within its cap)."""
        return self.calls <= self.budget and (self.peak_cap is None or (self.peak_bytes or 0) <= self.peak_cap)


@contextlib.contextmanager
def call_budget(budget: int, *, thread_name: str | None = None, peak_bytes: int | None = None) -> Iterator[Work]:
    """Count the function calls made while the block runs, raising ``WorkBudgetExceeded`` past ``budget``.

    Without ``thread_name`` the calls of this thread are counted. With it, only those of threads of that name
    started inside the block (AppTest runs a page in a thread named "ScriptRunner.scriptThread" while this one
    polls the clock waiting for it: counting the waiting would count time again). With ``peak_bytes``, the
    block's peak of traced allocations is measured too (``work.peak_bytes``, checked by ``work.within``); a
    waiting thread frees what each poll allocates, so its share of the peak does not grow with the wait.
    """
    if not (isinstance(budget, int) and budget > 0):
        raise ValueError(f"budget must be an int > 0 calls, got {budget!r}")
    if peak_bytes is not None and not (isinstance(peak_bytes, int) and peak_bytes > 0):
        raise ValueError(f"peak_bytes must be an int > 0 or None, got {peak_bytes!r}")
    work = Work(budget, peak_cap=peak_bytes)
    tracing = peak_bytes is not None and not tracemalloc.is_tracing()
    if tracing:
        tracemalloc.start()
    if peak_bytes is not None:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]

    def count(frame, event, arg) -> None:
        if event == "call" or event == "c_call":
            work.calls += 1
            if work.calls > budget:
                sys.setprofile(None)
                raise WorkBudgetExceeded(f"more than {budget:,} function calls")

    def start(frame, event, arg) -> None:  # the first event of each new thread: count there only if it is named
        sys.setprofile(count if threading.current_thread().name == thread_name else None)

    if thread_name is None:
        sys.setprofile(count)
    else:
        threading.setprofile(start)
    try:
        yield work
    finally:
        if thread_name is None:
            sys.setprofile(None)
        else:
            threading.setprofile(None)
        if peak_bytes is not None:
            work.peak_bytes = tracemalloc.get_traced_memory()[1] - before
        if tracing:
            tracemalloc.stop()
