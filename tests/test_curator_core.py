"""Core pieces of the curator flow: long-form grids, multi-target epsilon, intervals, recipes."""

import pytest

from dplens.core.data.datasets import DataError, load_histogram

LONG_FORM = b"row,col,count\n0,0,5\n1,2,3\n"


def test_long_form_grid_inferred_from_the_largest_index_says_so():
    notes: list[str] = []
    hist = load_histogram(LONG_FORM, notes=notes)
    assert hist.domain.shape == (2, 3)
    assert len(notes) == 1 and "inferred from the largest row and col index" in notes[0]


def test_long_form_grid_uses_the_declared_size():
    notes: list[str] = []
    hist = load_histogram(LONG_FORM, grid_shape=(256, 256), notes=notes)
    assert hist.domain.shape == (256, 256)
    assert hist.total == 8
    assert "256 × 256 as declared" in notes[0]


def test_long_form_declared_size_too_small_names_the_index():
    with pytest.raises(DataError, match="col index 2 but the declared grid has 2 cols"):
        load_histogram(LONG_FORM, grid_shape=(4, 2))


def test_full_long_form_grid_needs_no_note():
    notes: list[str] = []
    load_histogram(b"row,col,count\n0,0,1\n0,1,1\n1,0,1\n1,1,0\n", notes=notes)
    assert notes == []


def test_several_targets_least_epsilon_meets_each_target_and_best_split_is_no_worse():
    import math

    from dplens.core.analysis.selection import AccuracyTarget, epsilon_for_accuracy, epsilon_for_targets
    from dplens.core.mechanisms import MECHANISMS
    from dplens.core.queries.workloads import Identity, Prefix, Total

    targets = [AccuracyTarget("total", Total(32), 30.0, "max_abs", 0.95, False),
               AccuracyTarget("bins", Identity(32), 5.0, "max_abs", 0.9, True),
               AccuracyTarget("prefixes", Prefix(32), 10.0, "rmse", None)]
    names = ["identity", "laplace-on-answers", "hb", "dawa"]
    plans, best = epsilon_for_targets([MECHANISMS[n] for n in names], targets)
    by_name = {p.mechanism: p for p in plans}
    for plan in plans:
        for target, epsilon in zip(targets, plan.epsilons, strict=True):
            if epsilon is not None:  # the least ε: the single-target search agrees
                single = epsilon_for_accuracy(MECHANISMS[plan.mechanism], target.workload, target.target,
                                              target.metric, target.confidence, simultaneous=target.simultaneous)
                assert math.isclose(epsilon, single.epsilon)
    assert by_name["dawa"].total is None and "data-dependent" in by_name["dawa"].reason
    assert best.total <= min(p.total for p in plans if p.total is not None) + 1e-12
    assert best.epsilons[0] == min(p.epsilons[0] for p in plans if p.epsilons[0] is not None)


def test_several_targets_need_at_least_one():
    from dplens.core.analysis.selection import epsilon_for_targets
    from dplens.core.mechanisms import MECHANISMS

    with pytest.raises(ValueError, match="at least one accuracy target"):
        epsilon_for_targets([MECHANISMS["identity"]], [])


def test_export_round_trip_gives_identical_values_and_metadata():
    import numpy as np

    from dplens.core.data.released import load_release
    from dplens.core.mechanisms import MECHANISMS
    from dplens.core.privacy.noise import noise_sampler, noise_source
    from dplens.core.queries.workloads import Prefix
    from dplens.core.release.export import ExportKeys, release_to_csv, release_to_json

    counts = np.array([5.0, 0, 3, 9])
    rng = noise_source("secure")
    release = MECHANISMS["hb"].run(counts, Prefix(4), 0.7, rng)
    text = release_to_json(release, workload="prefix", noise_path="secure", dataset="ages.csv",
                           keys=ExportKeys(("bin",), (("a", "b", "c", "d"),)), noise_sampler=noise_sampler(rng),
                           export_id="x1")
    back = load_release(text.encode(), "dplens-release-1.json")
    np.testing.assert_array_equal(back.values, release.estimate)
    assert back.labels == ("a", "b", "c", "d")
    original = __import__("json").loads(text)
    assert back.metadata == {k: v for k, v in original.items()
                             if k not in ("counts", "labels", "axis_names", "axis_labels", "workload_answers",
                                          "query_descriptions", "query_specs")}
    assert back.metadata["dataset"] == "ages.csv" and "No seed is kept" in back.metadata["noise_policy"]
    assert "seed" not in back.metadata
    csv_back = load_release(release_to_csv(release, ExportKeys(("bin",), (("a", "b", "c", "d"),))), "r.csv")
    np.testing.assert_allclose(csv_back.values, release.estimate, rtol=1e-9)
    assert (csv_back.as_histogram().vector >= 0).all()


def test_a_plain_histogram_is_not_taken_for_a_release():
    from dplens.core.data.released import is_release_export, load_release

    assert not is_release_export(b"bin,count\n0,3\n1,0\n")
    with pytest.raises(ValueError, match="not a dplens export"):
        load_release(b"label,count\na,3\n")


@pytest.mark.statistical
def test_intervals_from_the_released_output_cover_the_truth():
    import numpy as np

    from dplens.core.analysis.intervals import release_intervals
    from dplens.core.mechanisms import MECHANISMS
    from dplens.core.queries.workloads import Prefix

    rng = np.random.default_rng(17)
    truth = rng.integers(0, 50, size=256).astype(float)
    release = MECHANISMS["hb"].run(truth, Prefix(256), 1.0, rng)
    each = release_intervals(MECHANISMS["hb"], release, Prefix(256), trials=100, rng=rng)
    covered = np.mean((each.lower <= truth) & (truth <= each.upper))
    assert 0.88 <= covered <= 0.99 and "data-independent" in each.method
    joint = release_intervals(MECHANISMS["hb"], release, Prefix(256), simultaneous=True, trials=100, rng=rng)
    assert np.mean(joint.upper - joint.lower) > np.mean(each.upper - each.lower)
    all_covered = []
    for _ in range(10):  # all bins at once hold with probability 0.95: at least 8 of 10 releases
        again = MECHANISMS["hb"].run(truth, Prefix(256), 1.0, rng)
        joint = release_intervals(MECHANISMS["hb"], again, Prefix(256), simultaneous=True, trials=100, rng=rng)
        all_covered.append(bool(np.all((joint.lower <= truth) & (truth <= joint.upper))))
    assert sum(all_covered) >= 8
    lap = release_intervals(MECHANISMS["laplace-on-answers"], MECHANISMS["laplace-on-answers"].run(
        truth, Prefix(256), 1.0, rng), Prefix(256), simultaneous=True)
    assert lap.method == "exact Laplace quantiles (Bonferroni over all values)"


def test_exports_carry_lower_upper_level():
    import json

    import numpy as np

    from dplens.core.analysis.intervals import release_intervals
    from dplens.core.mechanisms import MECHANISMS
    from dplens.core.queries.workloads import Identity
    from dplens.core.release.export import release_to_csv, release_to_json

    release = MECHANISMS["identity"].run(np.array([3.0, 1.0]), Identity(2), 1.0, np.random.default_rng(0))
    iv = release_intervals(MECHANISMS["identity"], release, Identity(2))
    assert release_to_csv(release, None, iv).decode().splitlines()[0] == "bin,count,lower,upper,level"
    doc = json.loads(release_to_json(release, workload="identity", noise_path="secure", intervals=iv))
    assert len(doc["lower"]) == len(doc["upper"]) == 2 and doc["level"] == 0.95
