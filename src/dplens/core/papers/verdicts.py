"""The verdict rule, stated once, and the claim rows every reproduction reports (page, CLI, HTML).

**The rule.** A claim is a statement about a difference ``d`` (dplens's number minus the number it is compared
with, e.g. WDA's error minus 0.6 × LM's for "40 % less"): that ``d`` is below a bound, above one, or between two.

- From trials, ``d`` gets a 95 % confidence interval (Student's t on the per-trial values; Welch's t for two
  independent groups; an OLS slope's t interval for a trend). The claim **holds** when the whole interval is
  on the claimed side of every bound, **fails** when the whole interval is on the wrong side of a bound, and
  is **inconclusive** otherwise — and also whenever there are fewer than ``MIN_TRIALS`` trials.
- An exact number (a closed form, no sampling) has no interval: the claim holds when the number satisfies
  the bounds strictly and fails otherwise.

A claim with several cases (e.g. "lower than LM, MM and LRM") holds when every case holds, "holds only …"
when some do, is inconclusive when none holds and some are inconclusive, and fails when every case fails.
A claim the data or code here cannot test is "not reproducible" (no rule applies).

>>> verdict(interval([-3.0, -2.5, -3.2, -2.8, -3.1, -2.9, -3.0, -2.7, -3.3, -2.6]), below=0.0)
'holds'
>>> verdict(interval([-3.0, -2.5]), below=0.0)  # too few trials
'inconclusive'
>>> verdict(exact(2.0), below=0.0)
'fails'
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

HOLDS, HOLDS_ONLY, FAILS, INCONCLUSIVE, NOT_REPRODUCIBLE = (
    "holds", "holds only", "fails", "inconclusive", "not reproducible")
VERDICTS = (HOLDS, HOLDS_ONLY, FAILS, INCONCLUSIVE, NOT_REPRODUCIBLE)
LEVEL = 0.95  # confidence of every interval
MIN_TRIALS = 10  # fewer trials than this: "inconclusive", whatever the interval says


@dataclass(frozen=True)
class Interval:
    """An estimate of a difference with its 95 % confidence interval (``low == high`` when ``exact``).

    >>> str(exact(-0.5))
    '-0.5 (exact)'
    >>> str(Interval(-0.5, -0.8, -0.2, 12))
    '-0.5 [-0.8, -0.2] (95 %, n = 12)'
    """

    estimate: float
    low: float
    high: float
    n: int = 0  # trials behind the interval (the smaller group for two groups)
    exact: bool = False

    def __str__(self) -> str:
        if self.exact:
            return f"{self.estimate:.4g} (exact)"
        if not math.isfinite(self.low):
            return f"{self.estimate:.4g} (no interval: n = {self.n})"
        return f"{self.estimate:.4g} [{self.low:.4g}, {self.high:.4g}] (95 %, n = {self.n})"


def exact(value: float) -> Interval:
    """A number with no sampling error (a closed form or a deterministic computation)."""
    return Interval(float(value), float(value), float(value), 0, exact=True)


def interval(samples: Iterable[float], baseline: Iterable[float] | None = None, *, level: float = LEVEL) -> Interval:
    """The t interval of the mean of ``samples`` (paired differences, or one group against an exact number);
    with ``baseline``, Welch's interval of mean(samples) − mean(baseline) for two independent groups.

    >>> iv = interval([1.0, 2.0, 3.0], [0.0, 0.0, 0.0])
    >>> iv.estimate, iv.n
    (2.0, 3)
    """
    a = np.asarray(list(samples), dtype=float)
    a = a[np.isfinite(a)]
    if baseline is None:
        n = a.size
        if n < 2:
            return Interval(float(a.mean()) if n else math.nan, -math.inf, math.inf, n)
        half = stats.t.ppf(0.5 + level / 2, n - 1) * a.std(ddof=1) / math.sqrt(n)
        return Interval(float(a.mean()), float(a.mean() - half), float(a.mean() + half), n)
    b = np.asarray(list(baseline), dtype=float)
    b = b[np.isfinite(b)]
    n = min(a.size, b.size)
    if n < 2:
        estimate = float(a.mean() - b.mean()) if a.size and b.size else math.nan
        return Interval(estimate, -math.inf, math.inf, n)
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    se = math.sqrt(va + vb)
    df = a.size + b.size - 2 if se == 0 else (va + vb) ** 2 / (va ** 2 / (a.size - 1) + vb ** 2 / (b.size - 1))
    half = stats.t.ppf(0.5 + level / 2, df) * se
    estimate = float(a.mean() - b.mean())
    return Interval(estimate, estimate - half, estimate + half, n)


def slope_interval(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray, *,
                   level: float = LEVEL) -> Interval:
    """The OLS slope of y on x with its t interval (n − 2 degrees of freedom): a trend across settings.

    >>> iv = slope_interval([1, 2, 3, 4], [2.0, 4.1, 5.9, 8.0])
    >>> round(iv.estimate, 2), iv.low > 0
    (1.98, True)
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    n = x.size
    if n < 3 or np.ptp(x) == 0:
        return Interval(math.nan, -math.inf, math.inf, n)
    result = stats.linregress(x, y)
    half = stats.t.ppf(0.5 + level / 2, n - 2) * result.stderr
    return Interval(float(result.slope), float(result.slope - half), float(result.slope + half), n)


def verdict(difference: Interval, *, below: float | None = None, above: float | None = None,
            min_trials: int = MIN_TRIALS) -> str:
    """THE rule: "holds" / "fails" / "inconclusive" for a claim that ``difference`` < ``below`` and/or
    > ``above`` (see the module docstring).

    >>> verdict(Interval(0.5, 0.2, 0.8, 20), above=0.0), verdict(Interval(0.5, -0.1, 1.1, 20), above=0.0)
    ('holds', 'inconclusive')
    >>> verdict(Interval(1.0, 0.9, 1.1, 30), above=0.5, below=2.0)
    'holds'
    """
    if below is None and above is None:
        raise ValueError("a claim needs a bound: below=…, above=… or both")
    if difference.exact:
        value = difference.estimate
        ok = (below is None or value < below) and (above is None or value > above)
        return HOLDS if ok else FAILS
    if difference.n < min_trials or not (math.isfinite(difference.low) and math.isfinite(difference.high)):
        return INCONCLUSIVE
    if (below is not None and difference.low >= below) or (above is not None and difference.high <= above):
        return FAILS
    if (below is None or difference.high < below) and (above is None or difference.low > above):
        return HOLDS
    return INCONCLUSIVE


@dataclass(frozen=True)
class Case:
    """One setting of a claim (a rival, an ε, a dataset), its interval and the rule's verdict there."""

    label: str
    difference: Interval
    verdict: str


def case(label: str, difference: Interval, *, below: float | None = None, above: float | None = None,
         min_trials: int = MIN_TRIALS) -> Case:
    """A case judged by ``verdict``."""
    return Case(label, difference, verdict(difference, below=below, above=above, min_trials=min_trials))


@dataclass(frozen=True)
class Verdict:
    """One claim row: the claim, the paper's number, the literal and corrected readings, the interval, the verdict.

    ``verdict`` is one of ``VERDICTS``; "holds only" needs a ``qualifier`` (against what, at which ε).
    ``dplens`` is the corrected reading (dplens's number); ``literal`` how the paper's text reads literally,
    when that differs; ``interval`` what the rule was applied to.

    >>> Verdict("OM lowest", "all settings", "OM 530.8 vs mm-opt 291.7", HOLDS_ONLY, "against LM_W").label
    'holds only against LM_W'
    """

    claim: str
    paper: str
    dplens: str
    verdict: str
    qualifier: str = ""
    literal: str = ""
    interval: str = ""

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {', '.join(VERDICTS)}, got {self.verdict!r}")
        if self.verdict == HOLDS_ONLY and not self.qualifier:
            raise ValueError("a 'holds only' verdict needs a qualifier (against what, or where)")

    @property
    def label(self) -> str:
        """The verdict with its qualifier, e.g. "holds only against LM_W"."""
        return f"{self.verdict} {self.qualifier}" if self.qualifier else self.verdict

    def row(self) -> dict[str, str]:
        """The claim row shown on the page, printed by the CLI and written to CSV and HTML."""
        return {"claim": self.claim, "paper": self.paper,
                "literal reading": self.literal or "same as corrected",
                "corrected (dplens)": self.dplens, "interval (95 %)": self.interval or "—",
                "verdict": self.label}

    def line(self) -> str:
        """The row on one line for the CLI."""
        row = self.row()
        head = self.verdict.upper() + self.label[len(self.verdict):]
        return (f"[{head}] {self.claim} — paper: {row['paper']}; literal: {row['literal reading']}; "
                f"corrected: {row['corrected (dplens)']}; interval: {row['interval (95 %)']}")


COLUMNS = ("claim", "paper", "literal reading", "corrected (dplens)", "interval (95 %)", "verdict")


def judge(claim: str, paper: str, cases: Sequence[Case], *, dplens: str, literal: str = "",
          scope: str = "against") -> Verdict:
    """A claim row from its cases (see the module docstring for how cases combine).

    >>> cases = [case("LM", exact(-1.0), below=0.0), case("MM", exact(1.0), below=0.0)]
    >>> judge("lower", "lower", cases, dplens="OM 1 vs LM 2, MM 0").label
    'holds only against LM'
    """
    cases = list(cases)
    if not cases:
        return Verdict(claim, paper, dplens or "nothing to compare on this data", NOT_REPRODUCIBLE, literal=literal)
    held = [c.label for c in cases if c.verdict == HOLDS]
    open_ = [c.label for c in cases if c.verdict == INCONCLUSIVE]
    shown = "; ".join(f"{c.label}: {c.difference}" for c in cases) if len(cases) > 1 else str(cases[0].difference)

    def names(labels: list[str]) -> str:
        return ", ".join(labels) if len(labels) <= 3 else f"{len(labels)} of {len(cases)} cases"

    if len(held) == len(cases):
        return Verdict(claim, paper, dplens, HOLDS, literal=literal, interval=shown)
    if held:
        qualifier = f"{scope} {names(held)}" + (f"; inconclusive {scope} {names(open_)}" if open_ else "")
        return Verdict(claim, paper, dplens, HOLDS_ONLY, qualifier, literal=literal, interval=shown)
    if open_:
        failed = [c.label for c in cases if c.verdict == FAILS]
        qualifier = "" if not failed else f"{scope} {names(open_)}; fails {scope} {names(failed)}"
        return Verdict(claim, paper, dplens, INCONCLUSIVE, qualifier, literal=literal, interval=shown)
    return Verdict(claim, paper, dplens, FAILS, literal=literal, interval=shown)


def difference(ours, theirs, margin: float = 1.0) -> Interval:
    """ours − margin·theirs: exact when both are exact, else the t interval (Welch's for two groups of trials)."""
    if np.ndim(ours) == 0 and np.ndim(theirs) == 0:
        return exact(float(ours) - margin * float(theirs))
    if np.ndim(theirs) == 0:
        return interval(np.asarray(ours) - margin * float(theirs))
    if np.ndim(ours) == 0:
        return interval(float(ours) - margin * np.asarray(theirs))
    return interval(ours, margin * np.asarray(theirs))
