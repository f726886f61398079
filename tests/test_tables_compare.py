"""Comparing table mechanisms across rho: seeded, cached, stoppable, scored against the independence baseline."""

import numpy as np
import pytest

from dplens.core.analysis.experiment import SweepCache
from dplens.core.data.domain import Domain
from dplens.core.queries.marginals import MarginalWorkload
from dplens.core.tables.compare import baseline_scores, compare_tables, summarise_tables

DOMAIN = Domain(("a", "b", "c"), (6, 5, 4))


def _records(n=2000, seed=0, correlated=True):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 6, n)
    b = np.minimum(a, 4) if correlated else rng.integers(0, 5, n)
    c = rng.integers(0, 4, n)
    return np.column_stack([a, b, c])


def test_measured_rmse_matches_closed_form_with_power():
    workload = MarginalWorkload.all_kway(DOMAIN, 2)  # 74 cells per run
    df = compare_tables(_records(), workload, ["gaussian-marginals", "residual-planner"], [0.2], trials=40, seed=3)
    for name, rows in df.groupby("mechanism"):
        expected = rows.expected_rmse.iloc[0]
        mse = np.mean(rows.rmse ** 2)  # mean of per-run MSE: an average of 40 × 74 squared Gaussian errors
        assert abs(mse / expected**2 - 1) < 0.07, name  # 3σ band of a χ² mean with ~2960 terms: ±0.078
        assert abs(mse / (1.1 * expected) ** 2 - 1) > 0.07, name  # a 10 % wrong σ is rejected


def test_cache_runs_only_new_pairs_and_is_seeded():
    workload, records, cache = MarginalWorkload.all_kway(DOMAIN, 1), _records(), SweepCache()
    first = compare_tables(records, workload, ["gaussian-marginals"], [0.5, 1.0], trials=2, cache=cache, data_key="x")
    calls = []
    both = compare_tables(records, workload, ["gaussian-marginals", "residual-planner"], [0.5, 1.0], trials=2,
                          cache=cache, data_key="x", progress=lambda f, text: calls.append(text))
    assert len(cache) == 4 and sum("residual-planner" in c for c in calls) == 4
    assert not any("gaussian-marginals" in c for c in calls)
    np.testing.assert_array_equal(both[both.mechanism == "gaussian-marginals"].rmse.to_numpy(), first.rmse.to_numpy())
    again = compare_tables(records, workload, ["gaussian-marginals"], [0.5, 1.0], trials=2)
    np.testing.assert_array_equal(again.rmse.to_numpy(), first.rmse.to_numpy())


def test_stop_returns_finished_rows():
    workload = MarginalWorkload.all_kway(DOMAIN, 1)
    polls = iter([False, False, True])
    df = compare_tables(_records(), workload, ["gaussian-marginals"], [1.0, 2.0], trials=2,
                        should_stop=lambda: next(polls))
    assert df.attrs["stopped"] and len(df) == 2


def test_evaluation_outside_the_workload_and_baseline():
    workload = MarginalWorkload.all_kway(DOMAIN, 1)
    evaluation = MarginalWorkload(DOMAIN, (("a", "b"),))
    df = compare_tables(_records(), workload, ["gaussian-marginals"], [1.0], trials=1, evaluation=evaluation)
    assert np.isnan(df.tvd[0])  # a 1-way release says nothing about the a×b marginal: not scored, not invented
    correlated = baseline_scores(workload, evaluation, _records())
    independent = baseline_scores(workload, evaluation, _records(correlated=False))
    assert correlated["rmse"] == pytest.approx(0) and independent["rmse"] == pytest.approx(0)
    assert correlated["tvd"] > 0.3 > 0.05 > independent["tvd"]


def test_summary_and_bad_arguments():
    workload = MarginalWorkload.all_kway(DOMAIN, 1)
    summary = summarise_tables(compare_tables(_records(), workload, ["gaussian-marginals"], [1.0], trials=3))
    assert summary.trials.tolist() == [3]
    with pytest.raises(ValueError, match="trials"):
        compare_tables(_records(), workload, ["gaussian-marginals"], [1.0], trials=0)
    with pytest.raises(ValueError, match="rho"):
        compare_tables(_records(), workload, ["gaussian-marginals"], [-1.0])
    with pytest.raises(ValueError, match="not a table mechanism"):
        compare_tables(_records(), workload, ["hb"], [1.0])


def test_cli_compare_on_a_table(tmp_path, capsys):
    import json

    import pandas as pd

    from dplens.cli import main

    records = _records(500)
    (tmp_path / "t.csv").write_text("a,b,c\n" + "\n".join(",".join(map(str, r)) for r in records) + "\n")
    (tmp_path / "d.json").write_text(json.dumps({"a": 6, "b": 5, "c": 4}))
    args = ["compare", "--input", str(tmp_path / "t.csv"), "--domain", str(tmp_path / "d.json"),
            "--workload", "marginals:k=2", "--mechanisms", "identity,residual-planner", "--rhos", "0.1,1",
            "--trials", "2", "--output", str(tmp_path / "out.csv")]
    assert main(args) == 0
    out = capsys.readouterr()
    assert "independence baseline" in out.out and "8/8 runs" in out.err
    df = pd.read_csv(tmp_path / "out.csv")
    assert len(df) == 8 and set(df.columns) >= {"mechanism", "rho", "trial", "rmse", "tvd", "expected_rmse"}
    assert main(args[:-4] + ["--rhos", "0.1", "--mechanisms", "hb", "--output", str(tmp_path / "x.csv")]) == 2
    assert "not a table mechanism" in capsys.readouterr().err
    assert main(args[:7] + ["--mechanisms", "gaussian-marginals", "--epsilons", "1", "--output",
                            str(tmp_path / "x.csv")]) == 2
    assert "--rhos" in capsys.readouterr().err


def test_marginal_releases_are_scored_on_every_evaluation_marginal_or_not_at_all():
    from dplens.core.tables.compare import _tvd, evaluation_tvd
    from dplens.core.tables.contract import marginal_release

    records = _records()
    pair = MarginalWorkload(DOMAIN, (("a", "b"),))
    estimate = pair.answer(records)[0] + 3.0
    release = marginal_release("gaussian-marginals", 1.0, 1.0, pair, [estimate])
    ones = MarginalWorkload(DOMAIN, (("a",), ("b",)))
    truth = ones.answer(records)
    by_hand = [_tvd(truth[0], estimate.sum(axis=1)), _tvd(truth[1], estimate.sum(axis=0))]
    assert evaluation_tvd(release, ones, truth) == pytest.approx(np.mean(by_hand))  # summed from the pair
    assert np.isnan(evaluation_tvd(release, MarginalWorkload.all_kway(DOMAIN, 1),
                                   MarginalWorkload.all_kway(DOMAIN, 1).answer(records)))  # c is not in it
    partial = MarginalWorkload(DOMAIN, (("a",),))
    mixed = MarginalWorkload(DOMAIN, (("a",), ("a", "b")))
    assert np.isnan(evaluation_tvd(marginal_release("gaussian-marginals", 1.0, 1.0, partial, [truth[0]]), mixed,
                                   mixed.answer(records)))  # covers one of two: not scored on the easier half


def test_a_synthesiser_past_the_deadline_is_stopped_in_its_worker():
    """With a deadline, synthesiser runs go to a worker killed at it: the comparison returns what finished."""
    import time

    workload = MarginalWorkload.all_kway(DOMAIN, 2)
    started = time.perf_counter()
    df = compare_tables(_records(), workload, ["gaussian-marginals", "mst"], [0.5], trials=1, seed=0, seconds=0.5)
    assert time.perf_counter() - started < 20
    assert df.attrs["stopped"] and set(df.mechanism) <= {"gaussian-marginals"}


def test_compare_of_a_table_runs_on_its_defaults(tmp_path, capsys):
    import json

    import pandas as pd

    from dplens.cli import TABLE_COMPARE_DEFAULTS, main

    (tmp_path / "t.csv").write_text("a,b\n" + "\n".join(f"{i % 3},{i % 2}" for i in range(60)) + "\n")
    (tmp_path / "d.json").write_text(json.dumps({"a": 3, "b": 2}))
    assert main(["compare", "--input", str(tmp_path / "t.csv"), "--domain", str(tmp_path / "d.json"),
                 "--output", str(tmp_path / "out.csv")]) == 0, capsys.readouterr().err
    df = pd.read_csv(tmp_path / "out.csv")
    assert set(df["mechanism"]) == set(TABLE_COMPARE_DEFAULTS["mechanisms"].split(","))
    assert sorted(set(df["rho"])) == [0.1, 1.0]
