"""The verdict rule (src/dplens/core/papers/verdicts.py): each case flips when its inputs cross the rule."""

import numpy as np
import pytest

from dplens.core.papers.verdicts import (
    FAILS,
    HOLDS,
    HOLDS_ONLY,
    INCONCLUSIVE,
    MIN_TRIALS,
    NOT_REPRODUCIBLE,
    Interval,
    Verdict,
    case,
    exact,
    interval,
    judge,
    slope_interval,
    verdict,
)

NOISE = np.random.default_rng(0).normal(0.0, 1.0, 40)  # one fixed sample; the tests shift it


def half_width(samples) -> float:
    iv = interval(samples)
    return (iv.high - iv.low) / 2


@pytest.mark.parametrize("claim", ["below", "above"])
def test_same_data_shifted_across_the_bound_goes_holds_inconclusive_fails(claim):
    noise = NOISE - NOISE.mean()  # mean exactly 0
    h = half_width(noise)
    sign = -1 if claim == "below" else 1  # the side the claim says the difference is on
    outcomes = [verdict(interval(noise + sign * shift), **{claim: 0.0})
                for shift in (1.5 * h, 0.5 * h, 0.0, -0.5 * h, -1.5 * h)]
    assert outcomes == [HOLDS, INCONCLUSIVE, INCONCLUSIVE, INCONCLUSIVE, FAILS]


def test_just_inside_and_just_outside_the_interval():
    noise = NOISE - NOISE.mean()
    h = half_width(noise)
    assert verdict(interval(noise - 1.001 * h), below=0.0) == HOLDS
    assert verdict(interval(noise - 0.999 * h), below=0.0) == INCONCLUSIVE
    assert verdict(interval(noise + 0.999 * h), below=0.0) == INCONCLUSIVE
    assert verdict(interval(noise + 1.001 * h), below=0.0) == FAILS


def test_too_few_trials_is_inconclusive_however_clear():
    clear = NOISE * 0.01 - 100  # far below 0
    assert verdict(interval(clear[:MIN_TRIALS]), below=0.0) == HOLDS
    assert verdict(interval(clear[:MIN_TRIALS - 1]), below=0.0) == INCONCLUSIVE
    assert verdict(interval(clear[:1]), below=0.0) == INCONCLUSIVE  # no interval at all
    assert verdict(interval(-clear[:MIN_TRIALS - 1]), below=0.0) == INCONCLUSIVE  # nor can it fail


def test_within_two_bounds():
    noise = NOISE * 0.01  # narrow
    assert verdict(interval(noise + 1.0), above=0.5, below=2.0) == HOLDS
    assert verdict(interval(noise + 2.5), above=0.5, below=2.0) == FAILS
    assert verdict(interval(noise + 0.2), above=0.5, below=2.0) == FAILS
    assert verdict(interval(NOISE + 2.0), above=0.5, below=2.0) == INCONCLUSIVE  # straddles 2


def test_exact_numbers_have_no_interval_and_a_tie_fails_a_strict_claim():
    assert verdict(exact(-1e-9), below=0.0) == HOLDS
    assert verdict(exact(0.0), below=0.0) == FAILS
    assert verdict(exact(1e-9), below=0.0) == FAILS
    assert verdict(exact(3.0), above=2.0) == HOLDS and verdict(exact(2.0), above=2.0) == FAILS
    with pytest.raises(ValueError, match="bound"):
        verdict(exact(1.0))


def test_two_groups_use_welch_and_cross_the_bound():
    rng = np.random.default_rng(1)
    a, b = rng.normal(0, 1, 200), rng.normal(0, 3, 50)
    iv = interval(a, b)
    assert iv.n == 50 and iv.low < iv.estimate < iv.high
    h = (iv.high - iv.low) / 2
    base = a - iv.estimate  # mean difference 0
    assert verdict(interval(base - 1.5 * h, b), below=0.0) == HOLDS
    assert verdict(interval(base, b), below=0.0) == INCONCLUSIVE
    assert verdict(interval(base + 1.5 * h, b), below=0.0) == FAILS


def test_slope_interval_detects_a_trend_and_not_noise():
    x = np.repeat(np.arange(6), 2).astype(float)
    flat = NOISE[:12]
    assert verdict(slope_interval(x, flat), above=0.0) == INCONCLUSIVE
    assert verdict(slope_interval(x, flat + 2.0 * x), above=0.0) == HOLDS
    assert verdict(slope_interval(x, flat - 2.0 * x), above=0.0) == FAILS


def test_cases_combine_into_one_claim_row():
    held, failed = case("LM", exact(-1.0), below=0.0), case("MM", exact(1.0), below=0.0)
    open_ = case("LRM", Interval(0.0, -1.0, 1.0, 20), below=0.0)
    assert judge("c", "p", [held, held], dplens="d").verdict == HOLDS
    assert judge("c", "p", [held, failed], dplens="d").label == "holds only against LM"
    row = judge("c", "p", [held, open_], dplens="d")
    assert row.verdict == HOLDS_ONLY and "inconclusive against LRM" in row.label
    mixed = judge("c", "p", [open_, failed], dplens="d")
    assert mixed.verdict == INCONCLUSIVE and mixed.label == "inconclusive against LRM; fails against MM"
    assert judge("c", "p", [open_], dplens="d").label == INCONCLUSIVE
    assert judge("c", "p", [failed], dplens="d").verdict == FAILS
    assert judge("c", "p", [], dplens="").verdict == NOT_REPRODUCIBLE


def test_a_claim_row_holds_claim_literal_corrected_interval_and_verdict():
    row = judge("lower", "≈ 5 vs ≈ 20", [case("α = 1", Interval(-2.0, -3.0, -1.0, 50), below=0.0)],
                dplens="4.1 vs 6.1", literal="the literal").row()
    assert list(row) == ["claim", "paper", "literal reading", "corrected (dplens)", "interval (95 %)", "verdict"]
    assert row["interval (95 %)"] == "-2 [-3, -1] (95 %, n = 50)" and row["verdict"] == HOLDS
    with pytest.raises(ValueError, match="verdict must be one of"):
        Verdict("c", "p", "d", "maybe")
    with pytest.raises(ValueError, match="qualifier"):
        Verdict("c", "p", "d", HOLDS_ONLY)
