"""Empirical DP audit of every registered mechanism, with a power check on deliberately broken variants.

The machinery is ``dplens.core.papers.audit``; the papers' literal (broken) variants are ``dplens.core.papers.literal``.

For each mechanism and each neighbouring pair (x, x') (add/remove one record in a small bin, a large
bin, a zero bin and the workload's hot item) we run the mechanism a FIXED number of times on each side
with seeded generators (see "Run counts" below; nothing depends on the clock or the machine). The runs are split in two
halves (in the spirit of DP-Sniper and Google's dp_auditorium):

1. *select*: over a family of output events, thresholds "z ≥ t" and "z < t" at quantiles of every
   released value and of a few statistics (the sum, the sign/mean-difference contrast between the two
   sides estimated on this half, and per block of answers/estimate the spread Σ|z − median| and the
   per-run median), pick the event with the largest lower bound on the loss;
2. *evaluate*: on the fresh half, a one-sided Clopper–Pearson bound gives
   ln(P̂_lo / P̂'_hi) ≤ ln(P/P′) ≤ privacy loss.

Confidence: each of the two proportions gets α/2 and α = 0.001 / (number of pairs of the mechanism)
(Bonferroni), so with probability ≥ 99.9 % no reported bound of a mechanism exceeds its true loss.
The slack in ``assert bound <= epsilon + SLACK`` is therefore only float round-off: the statistics are
already in the bound. Seeds are fixed, so the outcome is deterministic.

What it cannot show: a pass is evidence, not proof (finite samples; a finite event family; a few
hand-picked pairs; the exploration path's floating-point Laplace, whose low-bit leak (Mironov 2012)
no threshold event can see; joint-event leaks that none of the statistics summarise).

Run counts (per side; half select, half evaluate). Every count is fixed, so the audit's power is the
same on every machine:

* Correct mechanisms: ``RUNS_CHECK = 1000``. A pass is valid at any count (the bound holds with 99.9 %
  whatever the count); fewer runs only weaken it. 1000 is the smallest round count at which the audit
  still flags a mechanism whose true loss is 2ε: ``broken-identity-half-scale`` (Laplace at half the
  scale) is audited at exactly this count over every scenario below and must exceed ε (it reaches
  1.45; 1.28–1.52 over six seeds; at 500 runs it is at the edge, 1.01). So a pass at 1000 runs rules out,
  at this confidence, a doubled loss visible in one released value or one of the statistics.
* ``RUNS_SLOW``: MWEM (~12 CPU-s per 1000 runs over the 10 datasets) and DAWA (~5) get 300 and 600, a
  weaker audit (with 150 evaluation runs a side no bound can exceed ln(150/9.5) ≈ 2.8, so only a gross
  excess, ≳ 3ε, would show) that keeps each test under ~4 s; the count is printed with the bound.
* Broken variants (the power check): each is audited on the scenario (or pair) where it leaks, with α
  still split over ALL the mechanism's pairs and the pair's own seeds, so its bound is exactly the one
  the full audit computes there (the full audit's maximum can only be larger). Counts: 4000 where the
  leak needs them (fraction noise 1.86, Xiao's max 1.59, WDA's split 1.70: the same bounds as the former
  4000-run full audit), 1000 for the SReB_GCA readings (per-bin 1.93, 1.72–2.10 over six seeds;
  true regrouping 3.31, ≥ 3.2), where 1000 runs already clear ε by a wide margin.

Speed without losing power: the Gaussian releases' ε-from-σ inversions (pure functions of σ and δ) are
memoised across runs (``memoised_gaussian_accounting``), and the literal WDA's division (deterministic
given the hot item) is computed once per dataset (``MemoisedWdaSplitOnData``); the released values are
bit-identical.

Run ``pytest -m audit -rA tests/test_audit.py`` to see the bound of every mechanism.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pytest

from dplens.core.mechanisms import MECHANISMS, Release, check_inputs
from dplens.core.papers.audit import QUANTILES, audit_pair  # noqa: F401  (re-exported: other audit tests import them)
from dplens.core.papers.audit import cp_bounds as _cp_bounds  # noqa: F401
from dplens.core.papers.audit import features as _features  # noqa: F401
from dplens.core.papers.audit import loss_bound as _loss_bound  # noqa: F401
from dplens.core.papers.audit import outputs as _outputs
from dplens.core.papers.literal import (
    FractionNoise,
    LiteralSrebGca,
    LiteralXiaoMax,
    WdaSplitOnData,
    wda_synthetic_workload,
)
from dplens.core.privacy.definitions import PureDP
from dplens.core.queries.workloads import Identity as IdentityWorkload
from dplens.core.queries.workloads import Prefix, Workload

pytestmark = pytest.mark.audit

RUNS_CHECK = 1000      # per side of a pair for a correct mechanism; half to select the event, half to evaluate it
RUNS_SLOW = {"mwem": 300, "dawa": 600}  # the two slowest (~12 and ~5 CPU-s per 1000 runs): fewer, fixed
CONFIDENCE = 0.999     # for the whole family of pairs of one mechanism
SLACK = 1e-9           # float round-off only (see the module docstring)


# ----------------------------------------------------------------------------- scenarios
@dataclass(frozen=True)
class Scenario:
    """A workload, a histogram, ε, and the neighbours as (label, bin, +1 add / −1 remove)."""

    name: str
    workload: Workload
    x: tuple[float, ...]
    epsilon: float
    neighbours: tuple[tuple[str, int, int], ...]


SCENARIOS = (
    # Bins 0 and 3 tie for the largest count: a data-dependent choice of the "hot item" flips on them.
    Scenario("split", wda_synthetic_workload(), (20, 0, 1, 20, 0, 2, 1, 0, 5, 3, 1, 0, 2), 1.0,
             (("small-", 2, -1), ("large+", 3, 1), ("zero+", 1, 1), ("hot-", 0, -1))),
    # One bin holds every record (like the max query's counterexample (3,3,3) vs (1,3,3,3) for Xiao et al.'s
    # literal mechanism).
    Scenario("sparse", Prefix(10), (0, 0, 3, 0, 0, 0, 0, 0, 0, 0), 1.0,
             (("zero+/hot+", 0, 1), ("large-", 2, -1))),
    # No records: grouping mechanisms put every bin in one group.
    # No records, 256 bins: grouping mechanisms put the bins whose stage-1 noise is negative (about half)
    # into one large group G whose membership is random but whose size is stable (~128). Its released
    # values sit together, so their median locates G's mean: per-bin SReB_GCA noise (the paper's literal
    # Algorithm 1, loss |G|·ε2) shows as a shift of 1/|G| against noise of scale λ2/|G| per value: ~√|G|/λ2 SDs of
    # the median.
    Scenario("empty", IdentityWorkload(256), (0,) * 256, 1.0, (("zero+", 0, 1),)),
)
# The same situations on a 4 × 4 grid, for mechanisms that only take 2-D histograms (bins are row-major).
GRID_SCENARIOS = (
    Scenario("grid", IdentityWorkload(16), ((20, 0, 1, 20), (0, 2, 1, 0), (5, 3, 1, 0), (2, 0, 0, 1)), 1.0,
             (("small-", 2, -1), ("large+", 3, 1), ("zero+", 1, 1), ("hot-", 0, -1))),
    Scenario("grid-sparse", IdentityWorkload(16), ((0, 0, 3, 0),) + ((0,) * 4,) * 3, 1.0,
             (("zero+", 0, 1), ("large-", 2, -1))),
    Scenario("grid-empty", IdentityWorkload(256), ((0,) * 16,) * 16, 1.0, (("zero+", 0, 1),)),
)


def scenarios_for(mechanism) -> tuple[Scenario, ...]:
    """SCENARIOS, or GRID_SCENARIOS for a mechanism that refuses 1-D data (it says "2-D" in its error)."""
    first = SCENARIOS[0]
    try:
        mechanism.run(np.array(first.x, dtype=float), first.workload, first.epsilon, np.random.default_rng(0))
    except ValueError as err:
        if "2-D" in str(err):
            return GRID_SCENARIOS
        raise
    return SCENARIOS


# ----------------------------------------------------------------------------- the audit (dplens.core.papers.audit)
def audit(mechanism, runs: int, only: str | None = None, seed: int = 2026) -> list[tuple[float, str, float]]:
    """(lower bound on ln(P/P′), where, ε) for every scenario and neighbouring pair, or only those of one
    scenario (``only="sparse"``) or one pair (``only="split/hot-"``).

    α is always split over ALL the mechanism's pairs and each pair keeps its own seeds, so the bound of a
    pair audited with ``only`` is exactly the one the full audit computes for it.
    """
    scenarios = scenarios_for(mechanism)
    pairs = sum(len(s.neighbours) for s in scenarios)
    alpha = (1 - CONFIDENCE) / pairs
    results = []
    for s_index, scenario in enumerate(scenarios):
        if only is not None and only.split("/")[0] != scenario.name:
            continue
        x = np.array(scenario.x, dtype=float)
        base = _outputs(mechanism, x, scenario.workload, scenario.epsilon, [seed, s_index, 0], runs)
        for p_index, (label, j, sign) in enumerate(scenario.neighbours):
            if only is not None and "/" in only and only != f"{scenario.name}/{label}":
                continue
            neighbour = x.copy()
            neighbour.flat[j] += sign
            other = _outputs(mechanism, neighbour, scenario.workload, scenario.epsilon,
                             [seed, s_index, p_index + 1], runs)
            bound, event = audit_pair(base, other, alpha, scenario.workload.shape[0])
            results.append((bound, f"{scenario.name}/{label}: {event}", scenario.epsilon))
    return results


def runs_for(mechanism) -> int:
    """The fixed number of runs per side for a correct mechanism: RUNS_CHECK, or its entry in RUNS_SLOW."""
    return RUNS_SLOW.get(mechanism.name, RUNS_CHECK)


@pytest.fixture(autouse=True)
def memoised_gaussian_accounting(monkeypatch):
    """Cache the Gaussian releases' ε-from-σ inversions (pure functions of σ and δ) across the audit's runs.

    ``gaussian-identity`` inverts the discrete Gaussian's (ε, δ) curve on every release (~8 ms) to label it
    with its privacy loss; the audit reads only the released values, and σ is the same in every run.
    """
    from dplens.core.mechanisms import measurement  # the records' privacy maps

    for name in ("discrete_gaussian_epsilon", "gaussian_epsilon"):
        monkeypatch.setattr(measurement, name, functools.lru_cache(maxsize=64)(getattr(measurement, name)))


def _report(name: str, results, runs: int) -> tuple[float, str, float]:
    worst = max(results, key=lambda r: r[0] - r[2])
    print(f"\nAUDIT {name}: max lower bound on ln(P/P') = {worst[0]:.3f} at epsilon = {worst[2]:g} "
          f"with {runs} runs per side [{worst[1]}]")
    for bound, where, epsilon in results:
        print(f"  {bound:7.3f} (epsilon {epsilon:g})  {where}")
    return worst


@pytest.mark.parametrize("mechanism", MECHANISMS.values(), ids=MECHANISMS.keys())
def test_audit_finds_no_loss_above_epsilon(mechanism):
    runs = runs_for(mechanism)
    bound, where, epsilon = _report(mechanism.name, audit(mechanism, runs), runs)
    assert bound <= epsilon + SLACK, f"{mechanism.name}: lower bound {bound:.3f} > epsilon {epsilon} at {where}"


# ----------------------------------------------------------------------------- broken variants (test-only)
@dataclass(frozen=True)
class UnderNoisedIdentity:
    """Identity with half the noise it needs: true loss 2ε."""

    name: str = "broken-identity-half-scale"
    data_dependent: bool = False

    def run(self, x, workload, epsilon, rng):
        x, epsilon = check_inputs(x, workload, epsilon)
        estimate = x + rng.laplace(scale=0.5 / epsilon, size=x.size)
        return Release(self.name, PureDP(epsilon), epsilon, workload.matvec(estimate), estimate)


_DIVISIONS: dict[tuple[int, int], tuple[Workload, object]] = {}


@dataclass(frozen=True)
class MemoisedWdaSplitOnData(WdaSplitOnData):
    """The literal WDA, its division (deterministic given the hot item and the workload) computed once per pair.

    The division (dense W, block sensitivities) is ~80 % of a run; only the Laplace draws differ between runs.
    """

    def division(self, workload):
        key = (self.hot_item, id(workload))
        if key not in _DIVISIONS or _DIVISIONS[key][0] is not workload:
            _DIVISIONS[key] = (workload, WdaSplitOnData.division(self, workload))
        return _DIVISIONS[key][1]


# Per-bin SReB_GCA noise leaves every single released value with the right marginal; its excess loss
# |C|·ε2 sits in joint events of a random group. The "empty" scenario makes one group large and stable in
# size, and the per-run median of the released values locates it (see SCENARIOS).
BROKEN = (UnderNoisedIdentity(), FractionNoise(name="literal-fraction-noise"),
          LiteralSrebGca(per_bin_noise=True, name="literal-sreb-gca-per-bin"),
          LiteralSrebGca(true_regrouping=True, name="literal-sreb-gca-true-regrouping"),
          MemoisedWdaSplitOnData(name="literal-wda-split-on-data"), LiteralXiaoMax(name="literal-xiao-max"))


# Where each broken variant leaks, and the runs per side that show it: (scenario, runs).
BROKEN_AUDIT = {
    "broken-identity-half-scale": (None, RUNS_CHECK),  # every scenario, at the correct mechanisms' count
    "literal-fraction-noise": ("sparse", 4000),
    "literal-sreb-gca-per-bin": ("empty", 1000),
    "literal-sreb-gca-true-regrouping": ("empty", 1000),
    "literal-wda-split-on-data": ("split/hot-", 4000),
    "literal-xiao-max": ("sparse", 4000),
}


@pytest.mark.parametrize("mechanism", BROKEN, ids=[m.name for m in BROKEN])
def test_audit_flags_broken_variant(mechanism):
    only, runs = BROKEN_AUDIT[mechanism.name]
    bound, where, epsilon = _report(mechanism.name, audit(mechanism, runs, only), runs)
    assert bound > epsilon, f"the audit missed {mechanism.name}: best lower bound {bound:.3f} at {where}"
