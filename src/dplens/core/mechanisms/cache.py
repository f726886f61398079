"""One facility for the strategy caches of the data-independent mechanisms.

A strategy (mm-opt's optimised matrix, Greedy-H's tree, OM's and LRM's factorisations, WDA's division,
HB's and Privelet's noise energies, gaussian-eigen's eigen design) depends on the workload and the
mechanism's settings only, never on the data, so it is computed once and kept in a ``StrategyCache``.
Each cache has a unique name under which it registers itself; a mechanism class lists the caches its
strategy uses in ``STRATEGY_CACHES``, and the execution layer ships their entries to worker processes
(``entries`` on this side, ``install`` on theirs) and stores them on disk, both keyed by that name.
Keys use ``greedy_h.workload_key`` so that equal workloads share an entry.

>>> squares = StrategyCache("doctest squares", limit=2)
>>> squares.get_or_compute(3, lambda: 9), squares.get_or_compute(3, lambda: -1)
(9, 9)
>>> cache_named("doctest squares") is squares
True
"""

from __future__ import annotations

import collections
import sys
import threading
from collections.abc import Callable, Hashable, Mapping
from typing import Any, TypeVar

from dplens.core.validate import integer

_T = TypeVar("_T")
_REGISTRY: dict[str, StrategyCache] = {}
_REGISTRY_LOCK = threading.Lock()


class StrategyCache:
    """A small least-recently-used mapping, safe to share between threads, registered under ``name``.

    ``limit``: entries kept; beyond it the least recently used goes (one per new entry, so that a
    worker that ``install``-ed more keeps them until it computes new ones). ``shipped``: whether the
    execution layer sends the entries to workers and the store keeps them (False for intermediates
    that are large and never needed once the strategy exists, such as a dense Gram matrix).
    ``module``: the module owning the cache (default: where it is created); the on-disk store
    versions entries by that module's source.
    """

    def __init__(self, name: str, limit: int, *, shipped: bool = True, module: str | None = None) -> None:
        integer("limit", limit)
        self.name = name
        self.limit = limit
        self.shipped = shipped
        self.module = module if module is not None else sys._getframe(1).f_globals.get("__name__", "")
        self._entries: collections.OrderedDict[Hashable, Any] = collections.OrderedDict()
        self._lock = threading.Lock()
        with _REGISTRY_LOCK:
            other = _REGISTRY.get(name)
            if other is not None and other.module != self.module:  # the same module again: a reload replaces it
                raise ValueError(f"name must be unique among strategy caches, got {name!r} in {self.module} "
                                 f"and in {other.module}")
            _REGISTRY[name] = self

    def __repr__(self) -> str:
        return f"StrategyCache({self.name!r}, limit={self.limit}, entries={len(self)})"

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._entries

    def get_or_compute(self, key: Hashable, compute: Callable[[], _T]) -> _T:
        """The value stored under ``key``, else ``compute()`` stored under it.

        ``compute`` runs outside the lock (it may take minutes, or use other caches); when two threads
        compute the same key, the first value stored is kept and both return it.
        """
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                return self._entries[key]
        value = compute()
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                return self._entries[key]
            if len(self._entries) >= self.limit:
                self._entries.popitem(last=False)
            self._entries[key] = value
            return value

    def entries(self) -> dict[Hashable, Any]:
        """A snapshot of the entries, least recently used first."""
        with self._lock:
            return dict(self._entries)

    def install(self, entries: Mapping[Hashable, Any], limit: int) -> None:
        """Add shipped ``entries`` (worker side), keeping a value already here, then keep the newest ``limit``.

        >>> cache = StrategyCache("doctest install", limit=4)
        >>> cache.install({"a": 1, "b": 2, "c": 3}, limit=2)
        >>> cache.entries()
        {'b': 2, 'c': 3}
        """
        with self._lock:
            for key, value in entries.items():
                self._entries.setdefault(key, value)
                self._entries.move_to_end(key)  # shipped because a task needs it: the newest
            while len(self._entries) > limit:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        """Drop every entry."""
        with self._lock:
            self._entries.clear()


def cache_named(name: str) -> StrategyCache:
    """The registered cache called ``name``; ValueError naming the known ones otherwise."""
    with _REGISTRY_LOCK:
        cache = _REGISTRY.get(name)
        if cache is None:
            raise ValueError(f"strategy cache {name!r} is unknown; registered: {', '.join(sorted(_REGISTRY))}")
        return cache


def registered_caches() -> tuple[StrategyCache, ...]:
    """Every registered cache, in the order they were created."""
    with _REGISTRY_LOCK:
        return tuple(_REGISTRY.values())
