"""dplens.core.papers.teaching and dplens.core.release.publish: the Learn page's computations and the Release page's
intervals."""

import json
import math

import numpy as np
import pytest
from scipy.stats import kstest

from dplens.core.analysis.intervals import (
    answer_halfwidths,
    bin_halfwidths,
    laplace_halfwidth,
    simulated_intervals,
)
from dplens.core.mechanisms import MECHANISMS, Release
from dplens.core.papers.teaching import (
    composition,
    laplace_density,
    laplace_scale,
    neighbouring_outputs,
    output_ratio,
    range_error_by_length,
    range_lengths,
    ranges_of_length,
)
from dplens.core.privacy.definitions import PureDP
from dplens.core.queries.workloads import Identity, Prefix
from dplens.core.release.publish import history_entry


def test_laplace_scale_and_density():
    assert laplace_scale(3.0, 0.5) == 6.0
    grid = np.linspace(-60, 60, 120_001)
    assert np.trapezoid(laplace_density(grid, 2.0), grid) == pytest.approx(1.0, abs=1e-6)
    with pytest.raises(ValueError, match="epsilon must be a finite number > 0, got 0"):
        laplace_scale(1.0, 0)
    with pytest.raises(ValueError, match="sensitivity must be a finite number > 0"):
        laplace_scale(-1.0, 1.0)


@pytest.mark.statistical
def test_halfwidth_covers_its_level_and_a_wrong_level_is_rejected(rng):
    draws = np.abs(rng.laplace(scale=2.0, size=40_000))
    standard_error = math.sqrt(0.95 * 0.05 / draws.size)
    assert abs(np.mean(draws <= laplace_halfwidth(2.0)) - 0.95) < 4 * standard_error
    assert abs(np.mean(draws <= laplace_halfwidth(2.0, 0.9)) - 0.95) > 4 * standard_error


@pytest.mark.statistical
def test_neighbouring_outputs_are_laplace_around_x_and_x_plus_one(rng):
    x, y = neighbouring_outputs(10, 0.5, 20_000, rng)
    assert kstest(x - 10, "laplace", args=(0, 2.0)).pvalue > 1e-6
    assert kstest(y - 11, "laplace", args=(0, 2.0)).pvalue > 1e-6
    assert all(kstest(x - 10, "laplace", args=(0, s)).pvalue < 1e-6 for s in (1.6, 2.4))


@pytest.mark.statistical
def test_output_ratio_reaches_but_does_not_exceed_e_to_the_epsilon(rng):
    epsilon = 0.5
    x, y = neighbouring_outputs(10, epsilon, 200_000, rng)
    edges = np.linspace(10 - 6 / epsilon, 11 + 6 / epsilon, 41)
    _, _, ratio = output_ratio(x, y, edges, min_count=2_000)
    centres = (edges[:-1] + edges[1:]) / 2
    left = ratio[(centres < 9.5) & ~np.isnan(ratio)]
    assert np.nanmax(np.maximum(ratio, 1 / ratio)) < math.exp(epsilon) * 1.1  # the DP bound, up to sampling
    assert np.median(left) == pytest.approx(math.exp(epsilon), rel=0.05)     # and it is tight left of x


def test_composition_sequential_divides_the_budget_parallel_does_not():
    comp = composition(2.0, 5)
    assert comp["sequential"]["per_query_epsilon"] == pytest.approx(0.4)
    assert comp["sequential"]["scale"] == pytest.approx(2.5)
    assert comp["parallel"]["scale"] == pytest.approx(0.5)
    assert comp["sequential"]["total_loss"] == comp["parallel"]["total_loss"] == 2.0
    with pytest.raises(ValueError, match="queries must be an integer >= 1"):
        composition(1.0, 0)


def test_ranges_of_length_have_that_length_and_fit_the_domain():
    for length in range_lengths(100, 8):
        w = ranges_of_length(100, int(length), count=10)
        assert np.all(w.hi - w.lo + 1 == length) and w.hi.max() <= 99
    with pytest.raises(ValueError, match="length must be an integer from 1 to"):
        ranges_of_length(10, 11)


def test_range_error_identity_grows_like_root_length_and_hierarchies_win_long_ranges():
    errors = range_error_by_length(256, 1.0, [1, 16, 256])
    np.testing.assert_allclose(errors["identity"], np.sqrt(2 * np.array([1, 16, 256])))
    for name in ("hb", "privelet"):
        if name in errors:
            assert errors[name][0] > errors["identity"][0]    # worse on single bins
            assert errors[name][-1] < errors["identity"][-1]  # far better on the whole domain
    assert "uniform" not in range_error_by_length(16, 1.0, [1], ["uniform", "not-registered"])


def test_exact_intervals_only_for_plain_laplace_noise():
    x = np.array([3.0, 0, 5])
    identity = MECHANISMS["identity"].run(x, Prefix(3), 0.5, np.random.default_rng(0))
    np.testing.assert_allclose(bin_halfwidths(identity), 2.0 * math.log(20))
    assert answer_halfwidths(identity) is None
    direct = MECHANISMS["laplace-on-answers"].run(x, Prefix(3), 0.5, np.random.default_rng(0))
    np.testing.assert_allclose(answer_halfwidths(direct), 3 / 0.5 * math.log(20))  # Δ₁(Prefix(3)) = 3
    assert bin_halfwidths(direct) is None


@pytest.mark.statistical
def test_simulated_intervals_match_the_exact_laplace_interval(rng):
    out = simulated_intervals(MECHANISMS["identity"], np.full(500, 7.0), Identity(500), 1.0, 400, rng)
    exact = math.log(20)
    assert np.median(out["bins_high"]) == pytest.approx(exact, rel=0.1)
    assert np.median(-out["bins_low"]) == pytest.approx(exact, rel=0.1)
    assert np.median(out["bins_high"]) != pytest.approx(exact * 1.25, rel=0.1)
    with pytest.raises(ValueError, match="trials must be an integer >= 2"):
        simulated_intervals(MECHANISMS["identity"], np.ones(2), Identity(2), 1.0, 1, rng)


def test_history_entry_is_flat_and_json_ready():
    release = Release("hb", PureDP(1.0), 0.99, np.zeros(2), np.zeros(2), {"branching": np.int64(4), "levels": (1, 2)})
    entry = history_entry(release, number=3, dataset="sample:smooth", workload="prefix", seed=1, stream=2,
                          noise_path="exploration")
    assert json.loads(entry["params"]) == {"branching": 4, "levels": [1, 2]}
    assert all(isinstance(v, int | float | str | type(None)) for v in entry.values())
    assert (entry["number"], entry["privacy_loss"], entry["stream"]) == (3, 0.99, 2)
