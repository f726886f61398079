"""Memory linear in (n + queries): OM, WDA and Greedy-H at 65,536 bins on 2000 random ranges.

tracemalloc sees NumPy's allocations; the bound is generous (the query × n matrix alone would be 1 GB).
"""

import tracemalloc

import numpy as np
import pytest

from dplens.core.mechanisms import MECHANISMS, greedy_h, om, wda
from dplens.core.queries.workloads import random_range

BINS, QUERIES, BOUND_MB = 65_536, 2000, 500


@pytest.mark.parametrize("name", ["om", "wda", "greedy-h"])
def test_peak_memory_at_65536_bins(name, monkeypatch):
    for cache in (om._FACTORISATIONS, wda._DIVISIONS, greedy_h._STRATEGIES):
        cache.clear()  # a cold run: the strategy is built inside the measurement
    x = np.floor(np.random.default_rng(0).exponential(20.0, BINS))
    workload = random_range(BINS, QUERIES, seed=0)
    tracemalloc.start()
    try:
        release = MECHANISMS[name].run(x, workload, 1.0, np.random.default_rng(1))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert release.answers.shape == (QUERIES,)
    assert peak / 2**20 <= BOUND_MB, f"{name} peaked at {peak / 2**20:.0f} MB"
