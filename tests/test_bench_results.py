"""bench/results.py writes a bench's figures with the run's context; docs/gen_ref.py renders them as tables."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _module(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


results = _module("bench_results", ROOT / "bench" / "results.py")
gen_ref = _module("gen_ref", ROOT / "docs" / "gen_ref.py")


def test_recorder_writes_the_required_keys(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["bench_fake.py", "--runs", "1"])
    with results.Recorder("bench_fake", {"runs": 1}, directory=tmp_path) as rec:
        rec.row(name="tiny", wall_s=0.5, cpu_s=0.25, ratio=float("nan"))
    data = json.loads((tmp_path / "bench_fake.json").read_text(encoding="utf-8"))
    assert set(results.REQUIRED_KEYS) <= set(data)
    assert data["bench"] == "bench_fake" and data["args"] == ["--runs", "1"] and data["options"] == {"runs": 1}
    assert data["date"].endswith("Z") and data["commit"]
    assert data["machine"]["cpu_count"] >= 1 and data["machine"]["platform"]
    assert len(data["load_start"]) == 3 and len(data["load_end"]) == 3
    assert data["wall_s"] >= 0 and data["cpu_s"] >= 0
    assert data["rows"] == [{"name": "tiny", "wall_s": 0.5, "cpu_s": 0.25, "ratio": None}]


def _burn(loops: int) -> float:
    """CPU seconds of a fixed loop where it runs (a worker's own measure)."""
    import time

    start = time.process_time()
    sum(i * i for i in range(loops))
    return time.process_time() - start


def test_recorder_counts_the_cpu_and_memory_of_forkserver_workers(tmp_path, bare_main):
    """A forkserver's workers are not this process's children: os.times misses their CPU; the tree meter does not."""
    import concurrent.futures
    import multiprocessing
    import os

    def children() -> float:
        times = os.times()
        return times.children_user + times.children_system

    loops = 5_000_000
    with results.Recorder("bench_fake", directory=tmp_path) as rec:
        before = children()
        with concurrent.futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("forkserver")) as pool:
            in_worker = pool.submit(_burn, loops).result()
        seen_by_os_times = children() - before  # the worker is the fork server's child, never waited for here
        rec.row(name="worker", cpu_s=in_worker)
    data = json.loads((tmp_path / "bench_fake.json").read_text(encoding="utf-8"))
    assert in_worker > 0.05 and seen_by_os_times < 0.5 * in_worker  # the old measure misses the worker
    assert data["cpu_s"] >= 0.8 * in_worker
    assert data["peak_rss_mb"] > 10 and data["peak_pss_mb"] > 0


def test_recorder_keeps_the_previous_file_when_the_bench_fails_or_skips(tmp_path):
    with pytest.raises(RuntimeError), results.Recorder("bench_fake", directory=tmp_path) as rec:
        rec.row(name="half")
        raise RuntimeError("bench failed")
    with pytest.raises(SystemExit), results.Recorder("bench_fake", directory=tmp_path):
        results.require(tmp_path / "absent")
    assert not (tmp_path / "bench_fake.json").exists()


def test_shared_data_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("DPLENS_SHARED_DATA", str(tmp_path))
    assert results.shared_data("adult") == tmp_path / "adult"
    monkeypatch.delenv("DPLENS_SHARED_DATA")
    assert results.shared_data() == ROOT.parent / "shared" / "data"


def test_gen_ref_renders_a_table_from_a_results_file(tmp_path):
    sample = {"bench": "bench_fake", "date": "2026-11-25T20:00:00Z", "commit": "abc1234+dirty",
              "machine": {"platform": "Linux-x86_64", "cpu_count": 2}, "load_start": [1.5, 1.0, 0.5],
              "load_end": [2.0, 1.2, 0.6], "wall_s": 3.25, "cpu_s": 2.5, "args": ["--quick"], "options": {},
              "rows": [{"name": "identity", "wall_s": 0.125, "cpu_s": 0.1},
                       {"name": "a|b", "rmse": 12345.678, "met": True}]}
    (tmp_path / "bench_fake.json").write_text(json.dumps(sample), encoding="utf-8")
    page = gen_ref.benchmarks_reference(tmp_path)
    assert "## `bench_fake`" in page
    assert "2026-11-25T20:00:00Z" in page and "`abc1234+dirty`" in page and "(2 CPUs)" in page
    assert "load average 1.5 → 2 (1 min)" in page and "3.25 s wall, 2.5 s CPU" in page
    assert "`python bench/bench_fake.py --quick`" in page
    assert "| name | wall_s | cpu_s | rmse | met |" in page
    assert "| identity | 0.125 | 0.1 | — | — |" in page
    assert "| a\\|b | — | — | 12,346 | yes |" in page
    filled = gen_ref.fill_placeholders("before\n\n<!-- bench-results: bench_fake -->\n\nafter", tmp_path)
    assert "| identity | 0.125 | 0.1 | — | — |" in filled and "bench-results" not in filled
    assert "No results file yet" in gen_ref.fill_placeholders("<!-- bench-results: bench_other -->", tmp_path)


def test_the_shared_data_fixture_follows_the_bench_rule(shared_data):
    assert shared_data == results.shared_data()
