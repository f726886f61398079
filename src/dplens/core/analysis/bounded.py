"""Bounded single runs: one user action in a worker process, stopped at the action time limit.

A sweep polls a ``dplens.core.analysis.cost.Deadline`` between its cells; a single mechanism run has no such steps
(DAWA's partition search, an mm-opt optimisation), and the cost models that refuse a run up front are
order-of-magnitude fits. ``run_bounded`` closes the gap: the call runs in a separate process (a
``forkserver`` child: safe under Streamlit's threads, and quick after the first call because the
server has core and NumPy imported), and the process is killed when the limit passes. Nothing it
computed reaches the caller then, so a stopped release publishes nothing and, because callers charge
the ledger only after a run returns, spends nothing.

A single-threaded caller (the command line) may instead fork the worker straight from itself: inside
``fork_directly()`` there is no fork server, so the process tree holds two processes, not three (the server holds its
own NumPy, SciPy and OpenDP: about 200 MB of RSS at a 10^6-cell release, bench/bench_release_memory.py), and no
server start-up is paid. It is safe where the fork server's own forks are: see ``fork_directly``.

Runs whose estimate is tiny skip the process (``estimated_seconds`` below ``IN_PROCESS_SECONDS`` and
below 1 % of the limit): the estimates are within about 10× of measured times (bench/bench_bounds.py),
so such a run takes seconds at most, and a release of a small histogram should not pay a process start-up.

>>> import operator
>>> run_bounded(operator.add, 2, 3, seconds=30)
5
>>> run_bounded(operator.add, 2, 3, seconds=30, estimated_seconds=0.001)  # in this process
5
"""

from __future__ import annotations

import contextlib
import multiprocessing
import sys
import threading
import time
import traceback
import types
from collections.abc import Callable, Iterator
from typing import Any

from dplens.core.data.limits import MAX_ACTION_SECONDS

IN_PROCESS_SECONDS = 0.5  # runs estimated below this run in the caller's process (no start-up cost)
_PRELOAD = ["__main__", "numpy", "scipy.sparse", "dplens.core.mechanisms", "dplens.core.privacy.noise",
            "opendp.prelude"]  # imported once by the fork server (__main__: not re-run per child)
_CONTEXT = None
_FORK_DIRECTLY = False  # set inside fork_directly(), by a caller that has no other Python thread


class RunTimeLimitError(RuntimeError):
    """A run stopped at the action time limit; nothing it computed was returned."""


_MAIN_LOCK = threading.Lock()


@contextlib.contextmanager
def hidden_page_main() -> Iterator[None]:
    """While child processes start in the block, a Streamlit page is not ``__main__``, so they do not run it again.

    Streamlit runs each page as a hand-made module installed as ``sys.modules["__main__"]`` (no loader, the page's
    ``__file__``). A ``forkserver`` or ``spawn`` child re-runs its parent's ``__main__`` by path, as ``__mp_main__``,
    before it reads its task, and a fork server started then preloads it: every worker started from a page ran the
    whole page again. The workers run dplens's module-level functions, never page code, so within the block such a
    ``__main__`` is replaced by a bare module. A script Python runs (it has a loader) is left alone: its functions
    may be the task.

    >>> import sys, types
    >>> page = types.ModuleType("__main__"); page.__file__ = "pages/1_Compare.py"
    >>> real, sys.modules["__main__"] = sys.modules["__main__"], page
    >>> with hidden_page_main():
    ...     hasattr(sys.modules["__main__"], "__file__")
    False
    >>> sys.modules["__main__"] is page
    True
    >>> sys.modules["__main__"] = real
    """
    with _MAIN_LOCK:
        page = sys.modules.get("__main__")
        if page is None or getattr(page, "__loader__", None) is not None or not getattr(page, "__file__", None):
            yield
            return
        bare = types.ModuleType("__main__")
        sys.modules["__main__"] = bare
        try:
            yield
        finally:
            if sys.modules.get("__main__") is bare:  # another page's run may have installed its own since
                sys.modules["__main__"] = page


def _fork_safe_here() -> bool:
    """No Python thread but this one, and no JAX runtime: XLA's thread pools are not safe across a fork (JAX warns
    that a forked child may deadlock), and a table release or an earlier run in this process may have loaded it."""
    return threading.active_count() == 1 and "jax" not in sys.modules


def _context():
    global _CONTEXT  # one fork server per process, started on first use
    if _FORK_DIRECTLY and _fork_safe_here():  # checked per run: a thread started since sends it back
        return multiprocessing.get_context("fork")
    if _CONTEXT is None:
        _CONTEXT = multiprocessing.get_context("forkserver")
        _CONTEXT.set_forkserver_preload(_PRELOAD)
    return _CONTEXT


@contextlib.contextmanager
def fork_directly() -> Iterator[None]:
    """Within the block, ``run_bounded`` forks its worker from this process itself, with no fork server.

    For a single-threaded caller: the command line, never the app (Streamlit's threads may hold a lock, the import
    lock or a logging handler's, that a forked child would wait on forever). Each run checks that this process has
    one Python thread and uses the fork server otherwise. The native threads a caller has by then are the ones the
    fork server forks with too (it preloads NumPy and OpenDP): OpenBLAS's pool, stopped before a fork by its own
    ``pthread_atfork`` handler, and the jemalloc background thread of Polars (which OpenDP imports), whose
    ``pthread_atfork`` handlers take and reset its locks. The child only runs the function and sends its result, then
    leaves by ``os._exit`` (no ``atexit`` handlers, no second close of the parent's files); the ledger's SQLite
    connections are opened per operation, so none is open across the fork. OpenDP draws its noise from OpenSSL,
    whose generator reseeds in a forked child, so a child never repeats its parent's or a sibling's noise.

    >>> import operator
    >>> with fork_directly():
    ...     run_bounded(operator.add, 2, 3, seconds=30)
    5
    """
    global _FORK_DIRECTLY
    before, _FORK_DIRECTLY = _FORK_DIRECTLY, True
    try:
        yield
    finally:
        _FORK_DIRECTLY = before


def _ready() -> bool:
    return True


def _warm() -> None:
    with contextlib.suppress(Exception):  # best effort: a real action starts the server itself if this failed
        run_bounded(_ready, seconds=120.0)


def warm_up() -> threading.Thread:
    """Start the fork server (NumPy, core and OpenDP preloaded) in the background, so that the first bounded
    action of a server does not wait seconds for it. Returns the (daemon) thread doing it."""
    thread = threading.Thread(target=_warm, daemon=True, name="dplens-warm-up")
    thread.start()
    return thread


def _child(connection, function: Callable, args: tuple, kwargs: dict, report: bool = False) -> None:
    if report:  # the function's progress(fraction) calls travel to the caller on the same pipe
        kwargs = kwargs | {"progress": lambda fraction: connection.send(("progress", float(fraction)))}
    try:
        result: tuple[object, ...] = ("ok", function(*args, **kwargs))
    except BaseException as err:  # noqa: BLE001 - sent back to the caller, which re-raises it
        result = ("error", err, traceback.format_exc(limit=-3))
    try:
        connection.send(result)
    except Exception as err:  # noqa: BLE001 - an unpicklable exception or result: send its text
        connection.send(("error", RuntimeError(f"{type(err).__name__}: {err}"), ""))
    finally:
        connection.close()


def run_bounded(function: Callable, *args: Any, seconds: float = MAX_ACTION_SECONDS,
                estimated_seconds: float | None = None, progress: Callable[[float], None] | None = None,
                **kwargs: Any) -> Any:
    """``function(*args, **kwargs)`` in a worker process killed after ``seconds``; its result or its exception.

    ``function`` and its arguments must pickle for the fork server (inside ``fork_directly`` the child inherits
    them, and only the result must pickle) (module-level functions, bound methods of frozen
    mechanisms, arrays, ``np.random.Generator`` all do). A generator is copied into the worker: the
    caller's copy does not advance, so draw a fresh one per run (as the app and CLI do). With ``progress``,
    ``function`` is called with a ``progress(fraction)`` argument whose calls reach ``progress`` here.

    Raises:
        RunTimeLimitError: naming the limit and what to change; the worker is killed, nothing is returned.
        ValueError: for ``seconds`` that is not > 0.
    """
    if not seconds > 0:  # not validate.positive: the CLI imports this module at start, without numpy
        raise ValueError(f"time limit seconds must be > 0, got {seconds!r}")
    if estimated_seconds is not None and estimated_seconds < min(IN_PROCESS_SECONDS, seconds / 100):
        return function(*args, **kwargs) if progress is None else function(*args, progress=progress, **kwargs)
    context = _context()
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(target=_child, args=(sender, function, args, kwargs, progress is not None),
                              daemon=True)
    with hidden_page_main():
        process.start()
    sender.close()  # the child holds the only writer: EOF if it dies without sending
    deadline = time.monotonic() + seconds
    try:
        while True:
            if not receiver.poll(max(deadline - time.monotonic(), 0.0)):
                raise RunTimeLimitError(
                    f"stopped at the time limit of {seconds:g} s per action (DPLENS_MAX_ACTION_SECONDS, or the command "
                    "line's --time-limit); nothing was released or charged: use fewer bins, a smaller workload, or a "
                    "faster mechanism")
            try:
                outcome = receiver.recv()
            except EOFError:
                raise RuntimeError(f"the worker process ended without a result (exit code {process.exitcode}; "
                                   "out of memory?)") from None
            if outcome[0] != "progress":
                break
            if progress is not None:
                progress(outcome[1])
    finally:
        if process.is_alive():
            process.kill()
        process.join(timeout=5)
        receiver.close()
    if outcome[0] == "ok":
        return outcome[1]
    raise outcome[1]


__all__ = ["IN_PROCESS_SECONDS", "RunTimeLimitError", "fork_directly", "hidden_page_main", "run_bounded"]
