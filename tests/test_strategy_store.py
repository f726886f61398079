"""The on-disk strategy store: round trips, code versions, corrupt files, size bounds, and its use by grids."""

from __future__ import annotations

import stat

import pytest

import dplens.core.analysis.strategy_store as strategy_store
import dplens.core.mechanisms.matrix as matrix
from dplens.core.analysis.grid import GridSpec, load_grid, run_grid
from dplens.core.analysis.strategy_store import StrategyStore, default_folder, stable_hash
from dplens.core.mechanisms import MECHANISMS
from dplens.core.mechanisms.greedy_h import workload_key
from dplens.core.queries.workloads import Prefix, random_range

CACHE = "mm-opt strategies"  # the cache of matrix.py
TINY = GridSpec(datasets=("tips-bill",), mechanisms=("identity", "mm-opt"), epsilons=(0.5, 1.0), trials=2,
                workload="prefix")


@pytest.fixture
def optimiser_calls(monkeypatch):
    """Counts mm-opt optimisations in this process, from an empty in-memory cache (as a new process)."""
    calls: list[int] = []
    original = matrix.optimise_p_identity

    def counting(*args):
        calls.append(args[0].shape[1])
        return original(*args)

    monkeypatch.setattr(matrix, "optimise_p_identity", counting)
    saved = matrix._STRATEGIES.entries()
    matrix._STRATEGIES.clear()
    yield calls
    matrix._STRATEGIES.clear()
    matrix._STRATEGIES.install(saved, matrix._STRATEGIES.limit)


def test_entries_and_jobs_round_trip_in_a_private_folder(dplens_home):
    store = StrategyStore()
    assert store.folder == default_folder() == dplens_home / "strategies"
    workload = random_range(16, 10, seed=1)
    mechanism = MECHANISMS["mm-opt"]
    strategy = mechanism.strategy(workload)
    entries = {CACHE: {k: v for k, v in matrix._STRATEGIES.entries().items() if k[0] == workload_key(workload)}}
    assert store.save(mechanism, workload_key(workload), entries)
    assert stat.S_IMODE(store.folder.stat().st_mode) == 0o700
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in store.folder.iterdir())
    loaded = StrategyStore().load(mechanism, workload_key(random_range(16, 10, seed=1)))  # an equal copy
    (value,) = loaded[CACHE].values()
    assert value.trace == strategy.trace and (value.theta == strategy.theta).all()
    assert StrategyStore().load(mechanism, workload_key(random_range(16, 10, seed=2))) is None
    other_settings = MECHANISMS["mm-opt"].__class__(restarts=2)
    assert StrategyStore().load(other_settings, workload_key(workload)) is None


def test_stable_hash_sees_whole_arrays_and_dataclass_fields():
    import numpy as np

    a, b = np.zeros(5000), np.zeros(5000)
    b[2500] = 1.0  # a repr would elide the middle
    assert stable_hash(a) != stable_hash(b)
    assert stable_hash(Prefix(8)) == stable_hash(Prefix(8)) != stable_hash(Prefix(9))


def test_a_changed_code_version_misses(tmp_path, monkeypatch):
    store = StrategyStore(tmp_path)
    assert store.save_entry(CACHE, ("key",), 1.0)
    assert store.load_entry(CACHE, ("key",)) == (True, 1.0)
    assert matrix._STRATEGIES.module == "dplens.core.mechanisms.matrix"  # versioned by the module owning it
    monkeypatch.setitem(strategy_store._VERSIONS, "dplens.core.mechanisms.matrix", "an edited optimiser")
    assert store.load_entry(CACHE, ("key",)) == (False, None)
    assert store.misses == 1


def test_a_job_listing_a_cache_that_no_longer_exists_is_a_miss(tmp_path):
    store = StrategyStore(tmp_path)
    mechanism, key = MECHANISMS["mm-opt"], workload_key(Prefix(4))
    assert store.save(mechanism, key, {CACHE: {("k",): 1.0}})
    assert store.load(mechanism, key) == {CACHE: {("k",): 1.0}}
    store._write(store._path("job", stable_hash(store._job_identity(mechanism, key))),
                 store._job_identity(mechanism, key), [("a renamed cache", ("k",))])
    assert store.load(mechanism, key) is None
    with pytest.raises(ValueError, match="'a renamed cache'"):
        store.save_entry("a renamed cache", ("k",), 1.0)


def test_a_corrupt_file_is_a_miss_and_is_removed(tmp_path):
    store = StrategyStore(tmp_path)
    store.save_entry(CACHE, ("key",), [1.0])
    (path,) = tmp_path.glob("entry-*.npz")
    path.write_bytes(b"\x80\x05not a pickle")
    assert store.load_entry(CACHE, ("key",)) == (False, None)
    assert store.corrupt == 1 and not path.exists()


def test_size_is_bounded(tmp_path):
    store = StrategyStore(tmp_path, max_entry_bytes=1000, max_files=3)
    assert not store.save_entry(CACHE, ("big",), b"x" * 2000)  # above the entry limit: not stored
    for k in range(5):
        assert store.save_entry(CACHE, (k,), k)
    assert len(list(tmp_path.glob("*.npz"))) == 3  # the oldest went
    assert store.load_entry(CACHE, (4,)) == (True, 4)


def test_a_second_grid_optimises_nothing(tmp_path, optimiser_calls):
    first = run_grid(TINY, tmp_path / "a.parquet")
    assert optimiser_calls == [51] and first.strategies_computed == 1
    matrix._STRATEGIES.clear()  # a new process
    second = run_grid(TINY, tmp_path / "b.parquet")
    assert optimiser_calls == [51]  # not again
    assert second.strategies_computed == 0 and second.strategies_loaded == 1
    assert load_grid(tmp_path / "a.parquet").drop(columns="seconds").equals(
        load_grid(tmp_path / "b.parquet").drop(columns="seconds"))


def test_a_corrupt_store_is_recomputed_by_the_grid(tmp_path, dplens_home, optimiser_calls):
    run_grid(TINY, tmp_path / "a.parquet")
    for path in (dplens_home / "strategies").glob("*.npz"):
        path.write_bytes(path.read_bytes()[:20])  # truncated
    matrix._STRATEGIES.clear()
    again = run_grid(TINY, tmp_path / "b.parquet")
    assert optimiser_calls == [51, 51] and again.strategies_computed == 1
    assert load_grid(tmp_path / "a.parquet").drop(columns="seconds").equals(
        load_grid(tmp_path / "b.parquet").drop(columns="seconds"))
    matrix._STRATEGIES.clear()
    assert run_grid(TINY, tmp_path / "c.parquet").strategies_loaded == 1  # rewritten whole


def test_a_sweep_can_load_and_save_its_strategies(optimiser_calls):
    from dplens.core.analysis.execution import load_strategies, save_strategies

    store, workload = StrategyStore(), Prefix(24)
    mechanisms = [MECHANISMS["identity"], MECHANISMS["mm-opt"], MECHANISMS["hb"]]
    missing = load_strategies(mechanisms, workload, store)
    assert [m.name for m in missing] == ["mm-opt", "hb"]
    expected = [m.expected_mse(workload, 1.0) for m in mechanisms]
    save_strategies(missing, workload, store)
    matrix._STRATEGIES.clear()
    assert load_strategies(mechanisms, workload, store) == []
    assert [m.expected_mse(workload, 1.0) for m in mechanisms] == expected
    assert optimiser_calls == [24]


def test_a_folder_others_may_write_to_is_not_read(tmp_path):
    store = StrategyStore(tmp_path / "strategies")
    assert store.save_entry(CACHE, ("key",), 1.0)
    store.folder.chmod(0o777)
    try:
        assert store.load_entry(CACHE, ("key",)) == (False, None)
        assert not store.save_entry(CACHE, ("other",), 2.0)
    finally:
        store.folder.chmod(0o700)
    assert store.load_entry(CACHE, ("key",)) == (True, 1.0)


class _Planted:
    """A pickle whose loading creates ``marker``: what a planted file would run if the store unpickled it."""

    def __init__(self, marker) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return open, (self.marker, "w")


def test_a_planted_pickle_is_ignored_and_never_runs(tmp_path):
    import pickle

    store = StrategyStore(tmp_path / "strategies")
    marker = tmp_path / "the planted code ran"
    entry = store._path("entry", stable_hash(store._entry_identity(CACHE, ("key",))))
    store.folder.mkdir(mode=0o700)
    payload = pickle.dumps({"format": 2, "cache": CACHE, "key": ("key",), "value": _Planted(marker)})
    for path in (entry, entry.with_suffix(".pkl")):  # today's file name and the pickle format's
        path.write_bytes(payload)
    assert store.load_entry(CACHE, ("key",)) == (False, None)
    assert not marker.exists() and store.corrupt == 1 and not entry.exists()
    assert store.save_entry(CACHE, ("other",), 1.0)
    assert not entry.with_suffix(".pkl").exists() and not marker.exists()  # deleted unread by the next write


def test_a_planted_device_or_oversized_file_is_refused_before_reading(tmp_path):
    store = StrategyStore(tmp_path, max_entry_bytes=1000)
    assert store.save_entry(CACHE, ("key",), 1.0)
    (path,) = tmp_path.glob("entry-*.npz")
    path.unlink()
    path.symlink_to("/dev/zero")  # endless: reading it whole would never stop
    assert store.load_entry(CACHE, ("key",)) == (False, None) and not path.is_symlink()
    with open(path, "wb") as file:
        file.truncate(2**40)  # sparse: a terabyte on paper, nothing on disk
    assert store.load_entry(CACHE, ("key",)) == (False, None) and not path.exists()
    assert store.corrupt == 2


@pytest.mark.parametrize("tamper", ["nan", "object", "foreign class"])
def test_a_file_of_the_right_format_with_wrong_content_is_a_miss(tmp_path, tamper):
    import numpy as np

    store = StrategyStore(tmp_path)
    assert store.save_entry(CACHE, ("key",), matrix.PIdentity(np.ones((2, 3)), 1.5))
    assert store.load_entry(CACHE, ("key",))[1].theta.shape == (2, 3)
    (path,) = tmp_path.glob("entry-*.npz")
    with np.load(path) as archive:
        members = dict(archive)
    if tamper == "nan":
        members["a0"] = np.full((2, 3), np.nan)
    elif tamper == "object":
        members["a0"] = np.array([{"x": 1}], dtype=object)
    else:
        tree = members["tree"].tobytes().replace(b"dplens.core.mechanisms.matrix:PIdentity", b"subprocess:Popen")
        members["tree"] = np.frombuffer(tree, dtype=np.uint8)
    with open(path, "wb") as file:
        np.savez(file, **members)
    assert store.load_entry(CACHE, ("key",)) == (False, None) and store.corrupt == 1


def test_every_stored_strategy_is_plain_data_and_comes_back_equal(tmp_path):
    from dplens.core.analysis.execution import load_strategies, save_strategies
    from dplens.core.mechanisms.cache import registered_caches

    store, workload = StrategyStore(tmp_path), random_range(16, 10, seed=3)
    mechanisms = [m for m in MECHANISMS.values() if getattr(m, "STRATEGY_CACHES", ()) and not m.data_dependent]
    assert len(mechanisms) >= 6
    missing = load_strategies(mechanisms, workload, store)
    expected = [m.expected_mse(workload, 1.0) for m in mechanisms]
    save_strategies(missing, workload, store)
    for cache in registered_caches():
        cache.clear()  # a new process
    assert load_strategies(mechanisms, workload, store) == []  # every strategy was stored and read back
    assert [m.expected_mse(workload, 1.0) for m in mechanisms] == expected
