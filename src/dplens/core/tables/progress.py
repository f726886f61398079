"""What a synthesiser's run is doing, and about how much is left: its steps, laid out as one fraction of the run.

A run of MST, AIM or identity-pgm is a fixed sequence of steps (measure marginals, fit the model, ..., sample the
records). Progress travels from the worker process as a single number (``dplens.core.analysis.bounded``), so each
step owns a slice of [0, 1) sized by its rough share of the time, and the number a run reports is where it is in
that layout: within a model fit, by mirror-descent iteration; within AIM's rounds, by the share of their ρ
measured. The page lays out the same plan for the same mechanism and workload and reads the number back as words
(:meth:`RunPlan.describe`); Compare's clock reads it as the fraction of the run done.

>>> plan = RunPlan((Stage("measuring the 1-way marginals", 0.3), Stage("fitting the model", 0.6, iters=100),
...                 Stage("sampling the synthetic records", 0.1)))
>>> plan.describe(plan.at(1, fit_position(40, 100)))
'fitting the model: iteration 40 of 100'
>>> plan.describe(plan.at(2))
'sampling the synthetic records'
>>> progress_text(plan, plan.at(2), 45.0)
'sampling the synthetic records · 45 s elapsed, about 5 s left'
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

# Share of a model fit spent before its first iteration ends: the junction tree, the einsum plans and the step size
# (the NumPy fit compiles nothing: 0.3 of 3.9 s CPU for 200 iterations of a 50-clique Adult model,
# bench/bench_fit_memory.py; a fit runs 1000).
PREPARE_SHARE = 0.02
REPORT_EVERY = 0.5  # seconds between reports within a step (a step's start is always reported)


@dataclass(frozen=True)
class Stage:
    """One step of a run, named for people.

    ``share``: its rough share of the run's time; ``iters``: mirror-descent iterations when it is a model fit;
    ``rounds``: AIM's rounds (select, measure, refit), whose progress is the share of their ρ measured.
    """

    text: str
    share: float
    iters: int = 0
    rounds: bool = False

    @property
    def fits(self) -> bool:
        return self.iters > 0 or self.rounds


def fit_position(done: int, iters: int) -> float:
    """Where a fit is, in [0, 1), after ``done`` of ``iters`` iterations (its preparation first, then the iterations).

    >>> fit_position(0, 10), round(fit_position(5, 10), 12)
    (0.0, 0.51)
    """
    if done <= 0:
        return 0.0
    return PREPARE_SHARE + (1 - PREPARE_SHARE) * min(done, iters) / max(iters, 1)


@dataclass(frozen=True)
class RunPlan:
    """A run's steps in order; a fraction of the run is a position in this layout."""

    stages: tuple[Stage, ...]

    def _bounds(self, k: int) -> tuple[float, float]:
        total = math.fsum(s.share for s in self.stages)
        start = math.fsum(s.share for s in self.stages[:k]) / total
        return start, start + self.stages[k].share / total

    def at(self, k: int, within: float = 0.0) -> float:
        """The fraction of the run at ``within`` (0..1) of step ``k``: always below 1 (the run ends, not reports)."""
        start, end = self._bounds(k)
        return min(start + (end - start) * min(max(within, 0.0), 1.0), math.nextafter(1.0, 0.0))

    def fit_stage(self, fit: int) -> int:
        """The step of the ``fit``-th model fit (0-based): the fits in order, AIM's later fits all in its rounds."""
        fits = [k for k, s in enumerate(self.stages) if s.fits]
        return fits[min(fit, len(fits) - 1)]

    def describe(self, fraction: float) -> str:
        """What the run is doing at ``fraction`` (as :meth:`at` laid it out), in words."""
        k = next((i for i in range(len(self.stages)) if fraction < self._bounds(i)[1]), len(self.stages) - 1)
        stage = self.stages[k]
        start, end = self._bounds(k)
        within = (fraction - start) / (end - start) if end > start else 0.0
        if stage.iters:
            if within < PREPARE_SHARE * (1 - 1e-9):
                return f"{stage.text}: preparing the fit (junction tree and step size)"
            done = round((within - PREPARE_SHARE) / (1 - PREPARE_SHARE) * stage.iters)
            return f"{stage.text}: iteration {done:,} of {stage.iters:,}"
        if stage.rounds:
            return f"{stage.text}: about {within:.0%} of their ρ measured"
        return stage.text


def duration(seconds: float) -> str:
    """``45 s`` or ``2.5 min``.

    >>> duration(12.3), duration(150)
    ('12 s', '2.5 min')
    """
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.1f} min"


def progress_text(plan: RunPlan, fraction: float, elapsed: float) -> str:
    """The step at ``fraction``, the time so far and a rough estimate of what is left (the time so far scaled by
    the share of the run still to do; none until a tenth of the run or 5 s has passed)."""
    text = f"{plan.describe(fraction)} · {duration(elapsed)} elapsed"
    if fraction < 0.1 and elapsed < 5:
        return f"{text}, estimating what is left…"
    left = elapsed * (1 - fraction) / max(fraction, 1e-3)
    return f"{text}, about {duration(left)} left"


class Reporter:
    """The run's side: turns "step k started", "iteration i of a fit", "round's ρ measured" into fractions of the
    plan for ``progress(fraction)``, at most every REPORT_EVERY seconds within a step. ``wait(value)`` blocks until
    a fit's value is computed (``jax.block_until_ready``)."""

    def __init__(self, plan: RunPlan, progress: Callable[[float], None] | None,
                 wait: Callable[[object], object] = lambda value: value) -> None:
        self.plan, self.progress, self.wait = plan, progress, wait
        self.last = -math.inf
        self.shown = 0.0
        self.fits = 0
        self.rounds = (0.0, 0.0)  # AIM: the share of the rounds' ρ measured before and after the round being fitted

    def stage(self, k: int, within: float = 0.0, *, force: bool = True) -> bool:
        """Report step ``k`` at ``within``; False when skipped (too soon after the last report)."""
        now = time.monotonic()
        if self.progress is None or (not force and now - self.last < REPORT_EVERY):
            return False
        fraction = max(self.plan.at(k, within), self.shown)  # never backwards
        self.last, self.shown = now, fraction
        self.progress(fraction)
        return True

    def fit(self, iters: int, rounds_share: float | None = None) -> Callable[[object], None]:
        """A fit starts (``rounds_share``: AIM's rounds' ρ measured once this round is fitted): reported, and the
        per-iteration callback for mirror descent returned (it waits for the iteration only when it reports)."""
        k = self.plan.fit_stage(self.fits)
        self.fits += 1
        stage = self.plan.stages[k]
        if stage.rounds and rounds_share is not None:
            self.rounds = (self.rounds[1], max(rounds_share, self.rounds[1]))
        done = [0]

        def position(count: int) -> float:
            if not stage.rounds:
                return fit_position(count, iters)
            before, after = self.rounds
            return before + (after - before) * fit_position(count, iters)

        self.stage(k, position(0))

        def on_iteration(marginals) -> None:
            done[0] += 1
            if done[0] < iters and self.progress is not None and time.monotonic() - self.last >= REPORT_EVERY:
                self.wait(marginals)  # JAX dispatches ahead: report an iteration only once it is computed
                self.stage(k, position(done[0]), force=False)

        return on_iteration

