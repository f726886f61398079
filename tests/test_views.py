"""Display reductions: sampled rows match dense(W), downsampling preserves sums, count buckets."""

import numpy as np
import pytest

from dplens.core.analysis.views import count_buckets, downsample, row_overview, sample_rows, workload_row
from dplens.core.queries.workloads import (
    AllRange,
    Identity,
    Kron,
    Prefix,
    Stack,
    Total,
    dense,
    hot_spot,
    parse_workload,
    random_range,
)

WORKLOADS = [AllRange(7), Prefix(5), Identity(4), Total(3), random_range(9, 5, 1), Kron((AllRange(3), Prefix(4))),
             Stack((Prefix(5), AllRange(5))), hot_spot(20, 10), parse_workload("marginals", (3, 4))]


@pytest.mark.parametrize("w", WORKLOADS, ids=lambda w: type(w).__name__)
def test_sampled_rows_are_rows_of_the_dense_matrix(w):
    index, rows = sample_rows(w, 1000)
    assert index.tolist() == list(range(w.shape[0]))
    np.testing.assert_array_equal(rows, dense(w))
    index, rows = sample_rows(w, 3)
    np.testing.assert_array_equal(rows, dense(w)[index])


def test_rows_of_huge_workloads_come_without_densifying():
    w = AllRange(4096)  # 8.4 M × 4096: dense() refuses it
    with pytest.raises(ValueError, match="refuses"):
        dense(w)
    assert workload_row(w, w.shape[0] - 1)[-1] == 1.0
    index, rows = sample_rows(w, 64)
    assert rows.shape == (64, 4096) and index[-1] == w.shape[0] - 1
    with pytest.raises(ValueError, match="row index"):
        workload_row(w, w.shape[0])


def test_downsample_sums_groups_and_keeps_the_total():
    values = np.arange(2**20, dtype=float)
    out, k = downsample(values, 4096)
    assert out.size == 4096 and k == 256 and out.sum() == values.sum()
    mean, _ = downsample(np.ones((2, 10)), 4, how="mean")
    np.testing.assert_array_equal(mean, np.ones((2, 4)))
    assert downsample(values[:10], 4096)[1] == 1


def test_count_buckets_split_small_bins_by_decade():
    bucket, labels = count_buckets(np.array([0, 0.5, 1, 9, 10, 99, 100, 12345.0]))
    assert bucket.tolist() == [0, 0, 1, 1, 2, 2, 3, 5]
    assert labels == ["0", "1–9", "10–99", "100–999", "1,000–9,999", "10,000–99,999"]


@pytest.mark.parametrize("w", [parse_workload("marginals", (3, 4)), AllRange(12), random_range(12, 9, 2),
                               hot_spot(12, 8, p=0.5, seed=3)], ids=["marginals", "all-range", "ranges", "sparse"])
def test_row_overview_matches_the_dense_rows_and_answers(w, rng):
    x = rng.integers(0, 9, size=12).astype(float)
    overview = row_overview(w, x, max_rows=100, max_columns=5)
    matrix = dense(w)
    support = matrix != 0
    np.testing.assert_allclose(overview["answer"], matrix @ x)
    assert overview["cells"].tolist() == support.sum(axis=1).tolist()
    assert overview["first"].tolist() == support.argmax(axis=1).tolist()
    assert overview["group"] == 3 and overview["rows"].shape == (w.shape[0], 4)
    np.testing.assert_allclose(overview["rows"], downsample(matrix, 5, how="mean")[0])
