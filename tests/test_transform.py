"""Derived histograms: rescale (DPBench scale) and coarsen (domain size)."""

import numpy as np
import pytest
from scipy.stats import chisquare

from dplens.core.data.domain import Histogram
from dplens.core.data.transform import coarsen, rescale


def test_rescale_hits_the_total_keeps_zeros_and_shape_metadata(tiny_1d, rng):
    out = rescale(tiny_1d, 12_345, rng)
    assert out.total == 12_345
    assert np.all(out.vector[tiny_1d.vector == 0] == 0)
    assert np.all(out.vector == np.round(out.vector))
    assert out.labels == tiny_1d.labels
    assert "scaled to 12,345" in out.name
    assert tiny_1d.total == 19  # input untouched


def test_rescale_2d_keeps_the_grid(tiny_2d, rng):
    out = rescale(tiny_2d, 500, rng)
    assert out.domain == tiny_2d.domain
    assert out.total == 500
    assert np.all(out.counts[tiny_2d.counts == 0] == 0)


def test_rescale_is_reproducible_per_seed(tiny_1d):
    a = rescale(tiny_1d, 1000, np.random.default_rng(3)).vector
    b = rescale(tiny_1d, 1000, np.random.default_rng(3)).vector
    c = rescale(tiny_1d, 1000, np.random.default_rng(4)).vector
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


@pytest.mark.statistical
def test_rescale_samples_the_histograms_shape_with_power(rng):
    shape = np.array([5.0, 1, 0, 10, 4])
    out = rescale(Histogram.from_counts(shape), 200_000, rng).vector
    keep = shape > 0
    expected = shape[keep] / shape.sum() * out.sum()
    assert chisquare(out[keep], expected).pvalue > 1e-6
    wrong = shape.copy()
    wrong[0] *= 1.05  # a 5 % distortion of one bin must be detected at this scale
    wrong_expected = wrong[keep] / wrong.sum() * out.sum()
    assert chisquare(out[keep], wrong_expected).pvalue < 1e-6


@pytest.mark.parametrize("total", [0, -5, 2.5, True, 10**13])
def test_rescale_rejects_bad_totals(tiny_1d, rng, total):
    with pytest.raises(ValueError, match="total must be an integer"):
        rescale(tiny_1d, total, rng)


def test_rescale_refuses_an_empty_histogram(rng):
    with pytest.raises(ValueError, match="total is 0"):
        rescale(Histogram.from_counts([0.0, 0.0]), 10, rng)


def test_coarsen_1d_sums_adjacent_bins_and_keeps_the_remainder(tiny_1d):
    out = coarsen(tiny_1d, 4)
    assert out.vector.tolist() == [10.0, 9.0]
    assert out.labels == (("a–d", "e–f"),)
    assert out.total == tiny_1d.total
    assert coarsen(tiny_1d, 1).vector.tolist() == tiny_1d.vector.tolist()
    assert coarsen(tiny_1d, 100).vector.tolist() == [19.0]


def test_coarsen_2d_per_axis_matches_a_reshape_sum(rng):
    counts = rng.integers(0, 9, size=(8, 6)).astype(float)
    out = coarsen(Histogram.from_counts(counts), (2, 3))
    np.testing.assert_array_equal(out.counts, counts.reshape(4, 2, 2, 3).sum(axis=(1, 3)))
    assert coarsen(Histogram.from_counts(counts), 2).domain.shape == (4, 3)
    assert out.domain.names == ("row", "col")


@pytest.mark.parametrize(("factor", "match"), [(0, "integer >= 1"), (1.5, "integer >= 1"),
                                                ((2, 2), "one value per axis")])
def test_coarsen_rejects_bad_factors(tiny_1d, factor, match):
    with pytest.raises(ValueError, match=match):
        coarsen(tiny_1d, factor)
