"""The one monotone search (dplens.core.search): the boundary it finds, its safe side, its tolerances."""

from __future__ import annotations

import math

import pytest

from dplens.core.search import bisect_monotone


@pytest.mark.parametrize("switch", [1e-9, 0.3, 1.0, 7.25, 1e6])
def test_the_bracket_holds_the_switch_within_the_tolerance(switch):
    low, high = bisect_monotone(lambda x: x >= switch, 0.0, 2 * switch, true_side="high", rtol=1e-12)
    assert low < switch <= high and high - low <= 1e-12 * high
    low, high = bisect_monotone(lambda x: x <= switch, 0.0, 2 * switch, true_side="low", rtol=1e-12)
    assert low <= switch < high and high - low <= 1e-12 * high


def test_an_absolute_tolerance_stops_early_and_a_wrong_side_is_refused():
    low, high = bisect_monotone(lambda x: x >= math.pi, 0.0, 4.0, true_side="high", atol=0.1)
    assert 0.05 < high - low <= 0.1 and low < math.pi <= high
    with pytest.raises(ValueError, match="true_side must be 'high' or 'low', got 'up'"):
        bisect_monotone(lambda x: True, 0.0, 1.0, true_side="up")


def test_the_true_side_decides_which_end_moves():
    # a predicate read the wrong way round converges to an end, not to the switch: the side is not cosmetic
    low, high = bisect_monotone(lambda x: x >= 0.5, 0.0, 1.0, true_side="low", rtol=1e-12)
    assert not low < 0.5 <= high
