"""Sweep runner: tidy output, order-independent seeds, progress and stop hooks, errors, summaries."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest

from dplens.core.analysis.experiment import MAX_SWEEP_RUNS, regret, run_sweep, summarise, trial_rng
from dplens.core.data.domain import Histogram
from dplens.core.mechanisms import MECHANISMS
from dplens.core.queries.workloads import Kron, Prefix, Total, random_range

COLUMNS = ["mechanism", "epsilon", "trial", "metric", "value", "seconds", "expected"]
BASELINES = ["identity", "laplace-on-answers", "uniform"]


@dataclass(frozen=True)
class OnlyTwoD:
    """A stand-in mechanism that rejects 1-D data, as 2-D-only mechanisms do."""

    name: str = "only-2d"
    data_dependent: bool = False

    def run(self, x, workload, epsilon, rng):
        raise ValueError("only-2d needs a 2-D histogram")

    def expected_mse(self, workload, epsilon):
        return None


def test_tidy_columns_and_one_row_per_run_and_metric(tiny_1d):
    df = run_sweep(tiny_1d, Prefix(6), BASELINES, [0.5, 1.0], trials=3, metrics=["mae", "mse", "rmse"])
    assert list(df.columns) == COLUMNS
    assert len(df) == 3 * 2 * 3 * 3
    assert set(df["mechanism"]) == set(BASELINES)
    assert (df["value"] >= 0).all() and (df["seconds"] >= 0).all()
    identity = df[(df["mechanism"] == "identity") & (df["epsilon"] == 1.0)]
    expected = MECHANISMS["identity"].expected_mse(Prefix(6), 1.0)
    assert (identity[identity["metric"] == "mse"]["expected"] == expected).all()
    assert (identity[identity["metric"] == "rmse"]["expected"] == math.sqrt(expected)).all()
    assert identity[identity["metric"] == "mae"]["expected"].isna().all()
    assert df[df["mechanism"] == "uniform"]["expected"].isna().all()
    assert df.attrs == {"errors": {}, "left_out": {}, "stopped": False, "stop_reason": "", "computed": 18}


def test_results_do_not_depend_on_order(tiny_1d):
    workload = random_range(6, 10, seed=1)
    a = run_sweep(tiny_1d, workload, BASELINES, [0.1, 1.0], trials=4, seed=7)
    b = run_sweep(tiny_1d, workload, BASELINES[::-1], [1.0, 0.1], trials=4, seed=7)
    key = ["mechanism", "epsilon", "trial", "metric"]
    a, b = (d.drop(columns="seconds").sort_values(key).reset_index(drop=True) for d in (a, b))
    pd.testing.assert_frame_equal(a, b)
    c = run_sweep(tiny_1d, workload, BASELINES, [0.1, 1.0], trials=4, seed=8)
    assert not np.array_equal(a["value"], c.drop(columns="seconds").sort_values(key)["value"])


def test_trial_rng_is_keyed_by_every_component():
    draws = {trial_rng(*k).random() for k in [(1, "identity", 1.0, 0), (2, "identity", 1.0, 0),
                                               (1, "uniform", 1.0, 0), (1, "identity", 0.5, 0),
                                               (1, "identity", 1.0, 1)]}
    assert len(draws) == 5
    assert trial_rng(1, "identity", 1.0, 0).random() == trial_rng(1, "identity", 1.0, 0).random()


def test_progress_callback_counts_every_run(tiny_1d):
    calls = []
    run_sweep(tiny_1d, Total(6), ["identity", "uniform"], [1.0, 2.0, 4.0], trials=2,
              progress=lambda done, total, label: calls.append((done, total, label)))
    assert [c[0] for c in calls] == list(range(1, 13))
    assert {c[1] for c in calls} == {12}
    assert [c[2] for c in calls] == ["identity"] * 6 + ["uniform"] * 6


def test_should_stop_ends_the_sweep_early(tiny_1d):
    calls = iter(range(100))
    df = run_sweep(tiny_1d, Total(6), BASELINES, [1.0, 2.0], trials=5, metrics=["mae"],
                   should_stop=lambda: next(calls) >= 3)
    assert len(df) == 3 and df.attrs["stopped"] is True


def test_mechanisms_that_reject_the_input_are_skipped_with_their_message(tiny_1d):
    calls = []
    df = run_sweep(tiny_1d, Total(6), [OnlyTwoD(), "identity"], [1.0, 2.0], trials=2, metrics=["mae"],
                   progress=lambda done, total, label: calls.append(done))
    assert set(df["mechanism"]) == {"identity"}
    assert df.attrs["errors"] == {"only-2d": "only-2d needs a 2-D histogram"}
    assert calls[-1] == 8  # the skipped runs count too, so progress reaches 100 %


def test_2d_histograms_pass_their_counts_grid(tiny_2d):
    df = run_sweep(tiny_2d, Kron((Prefix(3), Prefix(4))), ["identity"], [1.0], trials=2, metrics=["kld", "mae"])
    assert len(df) == 4 and np.isfinite(df["value"]).all()


def test_histogram_metric_is_nan_without_an_estimate(tiny_1d):
    df = run_sweep(tiny_1d, Total(6), ["laplace-on-answers"], [1.0], trials=1, metrics=["kld", "scaled"])
    values = dict(zip(df["metric"], df["value"], strict=True))
    assert math.isnan(values["kld"]) and values["scaled"] > 0


@pytest.mark.parametrize("kwargs, message", [
    ({"mechanisms": ["nope"]}, "unknown mechanism 'nope'; choose from identity"),
    ({"mechanisms": []}, "choose at least one mechanism"),
    ({"epsilons": [0.0]}, "epsilon must be a finite number > 0, got 0.0"),
    ({"epsilons": []}, "choose at least one epsilon"),
    ({"trials": 0}, "trials must be an integer >= 1, got 0"),
    ({"trials": 2.5}, "trials must be an integer >= 1"),
    ({"metrics": ["accuracy"]}, r"unknown metrics \['accuracy'\]"),
    ({"trials": MAX_SWEEP_RUNS + 1}, "the limit is"),
    ({"workload": Total(7)}, "workload has 7 columns but the histogram has 6 cells"),
])
def test_sweep_validates_its_arguments(tiny_1d, kwargs, message):
    args = {"workload": Total(6), "mechanisms": ["identity"], "epsilons": [1.0], "trials": 1} | kwargs
    with pytest.raises(ValueError, match=message):
        run_sweep(tiny_1d, args.pop("workload"), **args)


def test_summarise_and_regret(tiny_1d):
    df = run_sweep(tiny_1d, Prefix(6), BASELINES, [0.5, 1.0], trials=10, metrics=["mae", "mse"])
    table = summarise(df)
    assert list(table.columns) == ["mechanism", "epsilon", "metric", "mean", "low", "high", "trials",
                                   "expected", "seconds"]
    assert len(table) == 3 * 2 * 2 and (table["trials"] == 10).all()
    assert (table["low"] <= table["mean"]).all() and (table["mean"] <= table["high"]).all()
    one = table[(table["mechanism"] == "identity") & (table["epsilon"] == 1.0) & (table["metric"] == "mae")]
    raw = df[(df["mechanism"] == "identity") & (df["epsilon"] == 1.0) & (df["metric"] == "mae")]["value"]
    assert one["mean"].item() == pytest.approx(raw.mean())
    ranking = regret(df, "mae")
    assert list(ranking.columns) == ["mechanism", "regret"]
    assert ranking["regret"].min() >= 1.0 and ranking["regret"].is_monotonic_increasing
    assert set(ranking["mechanism"]) == set(BASELINES)
    assert summarise(df.iloc[0:0]).empty


def test_fewer_trials_rerun_nothing_and_more_trials_or_new_metrics_run_only_what_is_missing():
    """Only the metrics asked for are computed, so the cache holds those; a later sweep asking another metric
    re-runs the trials that lack it (the same releases: the numbers equal a fresh sweep's)."""
    from dplens.core.analysis.experiment import SweepCache
    from dplens.core.data.domain import Histogram

    cache, h = SweepCache(), Histogram.from_counts(np.arange(16.0))
    pairs = (Prefix(16), ["identity", "hb"], [0.5, 1.0])
    first = run_sweep(h, *pairs, trials=3, metrics=("mae",), cache=cache)
    assert first.attrs["computed"] == 2 * 2 * 3
    fewer = run_sweep(h, *pairs, trials=2, metrics=("mae",), cache=cache)
    assert fewer.attrs["computed"] == 0 and set(fewer.metric) == {"mae"} and fewer.trial.max() == 1
    other = run_sweep(h, *pairs, trials=2, metrics=("rmse", "max"), cache=cache)
    assert other.attrs["computed"] == 2 * 2 * 2 and set(other.metric) == {"rmse", "max"} and other.trial.max() == 1
    more = run_sweep(h, *pairs, trials=5, metrics=("mae",), cache=cache)
    assert more.attrs["computed"] == 2 * 2 * 2  # trials 3 and 4 only
    both = run_sweep(h, *pairs, trials=5, metrics=("rmse", "mae"), cache=cache)
    assert both.attrs["computed"] == 2 * 2 * 3  # rmse is held for trials 0 and 1 only
    assert run_sweep(h, *pairs, trials=5, metrics=("mae", "rmse", "max"), cache=cache).attrs["computed"] == 2 * 2 * 3
    for cached in (more, both):
        fresh = run_sweep(h, *pairs, trials=5, metrics=tuple(dict.fromkeys(cached.metric)))
        pd.testing.assert_frame_equal(cached.drop(columns="seconds").reset_index(drop=True),
                                      fresh.drop(columns="seconds").reset_index(drop=True))  # the same numbers


def test_a_metric_not_asked_for_is_never_computed(tiny_1d, monkeypatch):
    """The issue's case: an all-zero histogram with --metrics rmse ran the scaled error too, which refused it."""
    from dplens.core.analysis import metrics

    called = []
    for name in metrics.METRICS:
        if name != "rmse":
            monkeypatch.setitem(metrics.METRICS, name, lambda *a, name=name, **k: called.append(name) or 0.0)
    zeros = Histogram.from_counts(np.zeros(256))
    df = run_sweep(zeros, Prefix(256), ["identity", "hb"], [0.5], trials=2, seed=4, metrics=["rmse"])
    assert called == [] and set(df.metric) == {"rmse"} and len(df) == 2 * 2
    assert (df.value > 0).all()  # noise on zeros: a real error, not a placeholder
    run_sweep(tiny_1d, Prefix(6), ["identity"], [0.5], trials=1, metrics=["rmse", "max"])
    assert called == ["max"]  # the probe sees a metric that is asked for: it could have failed


@pytest.mark.parametrize("metric", ["scaled", "kld"])
def test_a_metric_undefined_on_an_all_zero_histogram_is_refused_naming_it_and_why(metric):
    zeros = Histogram.from_counts(np.zeros(8))
    with pytest.raises(ValueError, match=rf"^metric '{metric}' \(.*\) needs a histogram total > 0, got 0: it "
                                         r".*; choose another metric \(mae, mse, rmse, max, mre\)$"):
        run_sweep(zeros, Prefix(8), ["identity"], [1.0], trials=1, metrics=["mae", metric])


def test_warm_up_fills_the_analytic_caches_for_the_default_workload_so_the_first_sweep_finds_them():
    """A server warms its workers on the sample and its default workload: afterwards hb's analytic error for
    that workload (the parent's share of the first Compare click) is a cache hit, for a re-parsed copy too."""
    from dplens.core.analysis.experiment import DEFAULT_COMPARE_MECHANISMS, warm_up_workers
    from dplens.core.mechanisms import hierarchical
    from dplens.core.mechanisms.greedy_h import workload_key

    hist = Histogram.from_counts(np.random.default_rng(3).poisson(20.0, size=256).astype(float))
    workload = random_range(256, 300, seed=7)
    assert not any(workload_key(workload) in key for key in hierarchical._ENERGIES.entries())
    warm_up_workers(["hb"], hist, workload, scheduler="serial").join(timeout=60)
    assert any(workload_key(random_range(256, 300, seed=7)) in key for key in hierarchical._ENERGIES.entries())
    assert set(DEFAULT_COMPARE_MECHANISMS) <= set(MECHANISMS)  # the page's defaults all exist


def test_warm_up_never_raises_and_reports_nothing_on_bad_input():
    from dplens.core.analysis.experiment import warm_up_workers

    warm_up_workers(["no-such-mechanism"], scheduler="serial").join(timeout=60)  # swallowed: best effort


def test_a_sweep_keeps_mm_opt_strategy_in_the_store_and_a_new_process_would_not_optimise_it_again(tmp_path,
                                                                                                  monkeypatch):
    """Compare and `compare` on the command line pass a StrategyStore: the first sweep saves mm-opt's optimised
    strategy, a sweep in a fresh process (caches emptied here) loads it instead of optimising, same numbers."""
    from dplens.core.analysis.strategy_store import StrategyStore
    from dplens.core.mechanisms import matrix

    hist = Histogram.from_counts(np.random.default_rng(1).poisson(30.0, size=32).astype(float))
    store = StrategyStore(tmp_path / "strategies")
    first = run_sweep(hist, Prefix(32), ["mm-opt"], [1.0], 2, store=store)
    assert store.saved >= 1
    calls = []
    original = matrix.optimise_p_identity
    monkeypatch.setattr(matrix, "optimise_p_identity", lambda *a, **k: calls.append(1) or original(*a, **k))
    matrix._STRATEGIES.clear()  # as in a new server process
    second = run_sweep(hist, Prefix(32), ["mm-opt"], [1.0], 2, store=store)
    assert calls == [] and store.hits >= 1
    pd.testing.assert_frame_equal(first.drop(columns="seconds"), second.drop(columns="seconds"))
