"""StrategyCache: LRU order and limit, one stored value under concurrent computes, the worker-side install,
the registry by name, and every data-independent mechanism declaring the caches its expected_mse fills."""

from __future__ import annotations

import threading

import pytest

from dplens.core.mechanisms import MECHANISMS, greedy_h
from dplens.core.mechanisms.cache import StrategyCache, cache_named, registered_caches
from dplens.core.queries.workloads import Kron, Prefix, random_range


def test_least_recently_used_entry_goes_beyond_the_limit():
    cache = StrategyCache("test lru", limit=2)
    cache.get_or_compute("a", lambda: 1)
    cache.get_or_compute("b", lambda: 2)
    assert cache.get_or_compute("a", lambda: -1) == 1  # a hit: "a" is now the most recently used
    cache.get_or_compute("c", lambda: 3)
    assert list(cache.entries()) == ["a", "c"] and len(cache) == 2
    assert "b" not in cache and cache.get_or_compute("b", lambda: 4) == 4  # recomputed once gone


def test_limit_is_a_positive_integer():
    with pytest.raises(ValueError, match="limit must be an integer >= 1, got 0"):
        StrategyCache("test bad limit", limit=0)


def test_two_threads_computing_the_same_key_store_one_value():
    cache = StrategyCache("test threads", limit=4)
    both_inside = threading.Barrier(2)
    results: list[object] = []

    def compute() -> object:
        both_inside.wait(timeout=10)  # both threads computing at once: neither found the key stored
        return object()

    def worker() -> None:
        results.append(cache.get_or_compute("key", compute))

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert len(results) == 2 and results[0] is results[1]  # the first value stored is everyone's
    assert len(cache) == 1 and cache.entries()["key"] is results[0]


def test_install_keeps_values_here_and_the_newest_entries():
    cache = StrategyCache("test install", limit=2)
    cache.get_or_compute("old", lambda: 0)
    cache.get_or_compute("kept", lambda: "here")
    cache.install({"kept": "shipped", "x": 1, "y": 2}, limit=3)
    assert cache.entries() == {"kept": "here", "x": 1, "y": 2}  # "old" went; a value already here stays
    assert list(cache.entries()) == ["kept", "x", "y"]
    cache.clear()
    assert len(cache) == 0


def test_caches_are_found_by_name_and_an_unknown_name_is_refused_by_name():
    cache = StrategyCache("test registry", limit=1)
    assert cache_named("test registry") is cache and cache in registered_caches()
    assert cache.module == __name__  # where it was created: the store versions entries by its source
    with pytest.raises(ValueError, match="strategy cache 'no such cache' is unknown; registered: .*mm-opt strategies"):
        cache_named("no such cache")
    with pytest.raises(ValueError, match="name must be unique among strategy caches, got 'test registry'"):
        StrategyCache("test registry", limit=1, module="elsewhere")


@pytest.mark.parametrize("name", [n for n, m in MECHANISMS.items() if not m.data_dependent])
def test_every_cache_expected_mse_fills_is_declared(name, monkeypatch):
    mechanism = MECHANISMS[name]
    declared = {cache.name for cache in getattr(type(mechanism), "STRATEGY_CACHES", ())}
    workloads = (random_range(16, 12, seed=3), Kron((Prefix(4), Prefix(4))))  # 1-D, and 2-D (a dense Gram)
    for sketched in (False, True):
        # large domains take other paths (Greedy-H's sketch and its exact trace): reach them at a small size
        monkeypatch.setattr(greedy_h, "EXACT_CELLS", 8 if sketched else greedy_h.EXACT_CELLS)
        for workload in workloads:
            for cache in registered_caches():
                cache.clear()
            mechanism.expected_mse(workload, 1.0)
            filled = {cache.name for cache in registered_caches() if len(cache)}
            assert filled <= declared, f"{name} fills {sorted(filled - declared)} without declaring them"
