"""Metrics: known values, edge rules, and Hypothesis invariants (see docs/benchmarks.md, "Test conventions")."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dplens.core.analysis.metrics import (
    METRIC_LABELS,
    METRICS,
    kl_divergence,
    mae,
    max_abs,
    mean_relative_error,
    mse,
    per_element_error,
    rmse,
    scaled_error,
)

TRUE = np.array([10.0, 0.0, 5.0, 1.0])
NOISY = np.array([12.0, -1.0, 5.0, 0.5])


def test_known_values():
    assert mae(TRUE, NOISY) == pytest.approx(3.5 / 4)
    assert mse(TRUE, NOISY) == pytest.approx(5.25 / 4)
    assert rmse(TRUE, NOISY) == pytest.approx(math.sqrt(5.25 / 4))
    assert max_abs(TRUE, NOISY) == 2.0
    assert scaled_error(TRUE, NOISY, total=16.0) == pytest.approx(3.5 / 4 / 16)
    # |err| / max(|true|, 1): 2/10, 1/1, 0/5, 0.5/1
    assert mean_relative_error(TRUE, NOISY) == pytest.approx((0.2 + 1 + 0 + 0.5) / 4)
    assert mean_relative_error(TRUE, NOISY, floor=10) == pytest.approx((0.2 + 0.1 + 0 + 0.05) / 4)
    np.testing.assert_allclose(per_element_error(TRUE, NOISY), [2, 1, 0, 0.5])
    np.testing.assert_allclose(per_element_error(TRUE, NOISY, "squared"), [4, 1, 0, 0.25])
    np.testing.assert_allclose(per_element_error(TRUE, NOISY, "relative"), [0.2, 1, 0, 0.5])


def test_kl_divergence_floors_released_counts():
    # q = max(noisy, 1) = [12, 1, 5, 1] / 19; p = TRUE / 16; the zero bin of p contributes nothing
    p, q = TRUE / 16, np.array([12.0, 1, 5, 1]) / 19
    expected = sum(pi * math.log(pi / qi) for pi, qi in zip(p, q, strict=True) if pi > 0)
    assert kl_divergence(TRUE, NOISY) == pytest.approx(expected)
    ones_up = np.array([1.0, 4, 2])
    assert kl_divergence(ones_up, ones_up * 3) == pytest.approx(0.0, abs=1e-12)  # scale-free
    assert kl_divergence(TRUE, TRUE) > 0  # the floor gives the empty bin mass: KL(x, x) > 0 by design
    assert kl_divergence(TRUE, -np.ones(4)) > 0  # all floored to κ: uniform q, finite


@pytest.mark.parametrize("call, message", [
    (lambda: mae([1.0, 2.0], [1.0]), r"differ in shape: \(2,\) vs \(1,\)"),
    (lambda: mse([], []), "at least one value"),
    (lambda: scaled_error([1.0], [2.0]), "needs the histogram total > 0, got None"),
    (lambda: scaled_error([1.0], [2.0], total=0.0), "needs the histogram total > 0, got 0.0"),
    (lambda: mean_relative_error([1.0], [2.0], floor=0), "floor must be a finite number > 0"),
    (lambda: kl_divergence([1.0], [2.0], floor=-1), "KL floor"),
    (lambda: kl_divergence([0.0, 0.0], [2.0, 1.0]), "positive total"),
    (lambda: per_element_error([1.0], [2.0], "cubic"), "kind must be"),
])
def test_metric_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_registry_labels_and_total_keyword():
    assert set(METRIC_LABELS) == set(METRICS)
    for name, metric in METRICS.items():
        assert metric(TRUE, NOISY, total=16.0) >= 0, name


pairs = st.integers(1, 30).flatmap(lambda n: st.tuples(
    st.lists(st.floats(0, 1e6), min_size=n, max_size=n), st.lists(st.floats(-1e6, 1e6), min_size=n, max_size=n)))


@settings(max_examples=60, deadline=None)
@given(pairs)
def test_invariants(pair):
    true, noisy = np.array(pair[0]), np.array(pair[1])
    total = float(true.sum()) + 1.0
    for name, metric in METRICS.items():
        if name == "kld":  # Gibbs: KL >= 0; KL(x, x) = 0 only when no count is below the floor κ
            if true.sum() > 0:
                assert metric(true, noisy) >= -1e-12
                assert metric(true + 1, true + 1) == pytest.approx(0.0, abs=1e-9)
            continue
        assert metric(true, true, total=total) == 0.0, name
        assert metric(true, noisy, total=total) >= 0, name
    assert rmse(true, noisy) >= mae(true, noisy) - 1e-9 * (1 + mae(true, noisy))  # power-mean inequality
    assert max_abs(true, noisy) >= rmse(true, noisy) - 1e-9 * (1 + max_abs(true, noisy))
    assert mae(true, noisy) == pytest.approx(mae(noisy, true))
