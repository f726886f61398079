"""A sweep's expected errors on worker processes: strategies the store lacks are computed in the workers
as jobs, beside the other cells, with the same figures as in this process; held ones are not recomputed."""

import numpy as np
import pytest

from dplens.core.analysis import experiment
from dplens.core.analysis.execution import StrategyJob
from dplens.core.analysis.strategy_store import StrategyStore
from dplens.core.data.domain import Histogram
from dplens.core.mechanisms.cache import registered_caches
from dplens.core.queries.workloads import parse_workload

pytestmark = pytest.mark.serial  # starts a pool of worker processes


def _clear_caches():
    for cache in registered_caches():
        cache.clear()


def _sweep(tmp_path, scheduler, **kwargs):
    hist = Histogram.from_counts(np.random.default_rng(2).poisson(9.0, 512).astype(float))
    workload = parse_workload("random-range:m=50,seed=1", hist.domain.shape, np.random.default_rng(0))
    return experiment.run_sweep(hist, workload, ["identity", "hb", "privelet", "uniform"], [0.1, 1.0], trials=3,
                                metrics=("mae", "rmse"), seed=7, scheduler=scheduler,
                                store=StrategyStore(tmp_path / "store"), **kwargs)


def test_strategy_jobs_run_in_the_workers_with_the_same_figures(tmp_path, monkeypatch):
    _clear_caches()
    serial = _sweep(tmp_path / "serial", "serial")
    _clear_caches()
    jobs: list[list[str]] = []
    real_run_cells = experiment._run_cells

    def spy(context, cells, scheduler, stop, progress, jobs_=(), *args):
        jobs.append([job.mechanism.name for job in jobs_])
        assert all(isinstance(job, StrategyJob) for job in jobs_)
        return real_run_cells(context, cells, scheduler, stop, progress, jobs_, *args)

    monkeypatch.setattr(experiment, "_run_cells", spy)
    parallel = _sweep(tmp_path / "parallel", "processes:2")
    assert jobs == [["hb", "privelet"]]  # the references and the trivial closed forms need none
    assert parallel[["mechanism", "epsilon", "trial", "metric", "value"]].equals(
        serial[["mechanism", "epsilon", "trial", "metric", "value"]])
    assert np.allclose(parallel.expected, serial.expected, rtol=1e-12, equal_nan=True)
    assert parallel[parallel.mechanism == "hb"].expected.notna().any()

    jobs.clear()  # held now (in this process and in the store): shipped, not recomputed
    again = _sweep(tmp_path / "parallel", "processes:2")
    assert jobs == [[]]
    assert np.allclose(again.expected, serial.expected, rtol=1e-12, equal_nan=True)
