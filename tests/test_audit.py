"""Empirical DP audit of every registered mechanism, with a power check on deliberately broken variants.

For each mechanism and each neighbouring pair (x, x') (add/remove one record in a small bin, a large
bin, a zero bin and the workload's hot item) we run the mechanism ``RUNS`` times on each side with
seeded generators. The runs are split in two halves (in the spirit of DP-Sniper and Google's
dp_auditorium):

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

Run ``pytest -m audit -rA tests/test_audit.py`` to see the bound of every mechanism.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass

import numpy as np
import pytest
from scipy import stats

from core.mechanisms import MECHANISMS, Release, check_inputs
from core.mechanisms.sreb_gca import ggs, groups_from_cuts
from core.mechanisms.wda import WDA, leaves_for
from core.mechanisms.xiao import literal_max_distribution_not_dp
from core.workloads import Explicit, Prefix, Workload, dense
from core.workloads import Identity as IdentityWorkload

pytestmark = pytest.mark.audit

RUNS = 4000            # per side of a pair; half to select the event, half to evaluate it
MIN_RUNS = 1000        # slow mechanisms get fewer runs (a weaker audit, reported), never fewer than this
SECONDS_PER_MECHANISM = 15.0
CONFIDENCE = 0.999     # for the whole family of pairs of one mechanism
SLACK = 1e-9           # float round-off only (see the module docstring)
QUANTILES = np.concatenate([[0.001, 0.002, 0.005, 0.01, 0.02, 0.05], np.linspace(0.1, 0.9, 9),
                            [0.95, 0.98, 0.99, 0.995, 0.998, 0.999]])


# ----------------------------------------------------------------------------- scenarios
def _split_workload() -> Explicit:
    """Spec §2(e)'s synthetic 12 × 13 workload: rows 0–5 = e_0 + e_{7+i}, rows 6–11 = e_{1+i}; hot column 0."""
    matrix = np.zeros((12, 13))
    for i in range(6):
        matrix[i, 0] = matrix[i, 7 + i] = 1
        matrix[6 + i, 1 + i] = 1
    return Explicit(matrix, label="wda-synthetic")


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
    Scenario("split", _split_workload(), (20, 0, 1, 20, 0, 2, 1, 0, 5, 3, 1, 0, 2), 1.0,
             (("small-", 2, -1), ("large+", 3, 1), ("zero+", 1, 1), ("hot-", 0, -1))),
    # One bin holds every record (spec §5.2(d)1's counterexample is (3,3,3) vs (1,3,3,3)).
    Scenario("sparse", Prefix(10), (0, 0, 3, 0, 0, 0, 0, 0, 0, 0), 1.0,
             (("zero+/hot+", 0, 1), ("large-", 2, -1))),
    # No records: grouping mechanisms put every bin in one group.
    # No records, 256 bins: grouping mechanisms put the bins whose stage-1 noise is negative (about half)
    # into one large group G whose membership is random but whose size is stable (~128). Its released
    # values sit together, so their median locates G's mean: per-bin SReB_GCA noise (spec §4(d)2, loss
    # |G|·ε2) shows as a shift of 1/|G| against noise of scale λ2/|G| per value: ~√|G|/λ2 SDs of the median.
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


# ----------------------------------------------------------------------------- the audit
def _features(release: Release) -> np.ndarray:
    parts = [np.ravel(release.answers)]
    if release.estimate is not None:
        parts.append(np.ravel(release.estimate))
    return np.concatenate(parts).astype(float)


def _outputs(mechanism, x: np.ndarray, workload: Workload, epsilon: float, seed: list[int], runs: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.array([_features(mechanism.run(x, workload, epsilon, rng)) for _ in range(runs)])


def _cp_bounds(k: np.ndarray, n: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """One-sided Clopper–Pearson (lower, upper) bounds on a proportion, each at level 1 − alpha."""
    k = np.asarray(k, dtype=float)
    lower = np.where(k > 0, stats.beta.ppf(alpha, np.maximum(k, 1), n - k + 1), 0.0)
    upper = np.where(k < n, stats.beta.ppf(1 - alpha, k + 1, np.maximum(n - k, 1)), 1.0)
    return lower, upper


def _loss_bound(count_a: np.ndarray, count_b: np.ndarray, n: int, alpha: float) -> np.ndarray:
    """Lower bound on |ln(P/P′)| from event counts on both sides (each proportion at alpha/2)."""
    lo_a, hi_a = _cp_bounds(count_a, n, alpha / 2)
    lo_b, hi_b = _cp_bounds(count_b, n, alpha / 2)
    with np.errstate(divide="ignore"):
        return np.maximum(np.log(lo_a) - np.log(hi_b), np.log(lo_b) - np.log(hi_a))


def _projections(sel_a: np.ndarray, sel_b: np.ndarray) -> np.ndarray:
    """Linear statistics besides the released values: their sum, and two contrasts estimated on this half."""
    diff = sel_b.mean(axis=0) - sel_a.mean(axis=0)
    spread = sel_a.var(axis=0) + sel_b.var(axis=0) + 1e-12
    return np.column_stack([np.ones(diff.size), np.sign(diff), diff / spread])


def _event_counts(values: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """#{values ≥ t} for each threshold t."""
    return values.size - np.searchsorted(np.sort(values), thresholds, side="left")


def audit_pair(out_a: np.ndarray, out_b: np.ndarray, alpha: float, m: int) -> tuple[float, str]:
    """Select an event on the first half, bound ln(P/P′) on the second; (bound, event description).

    Statistics: every released value and the linear ones of ``_projections``; per block (the m answers, the estimate) the
    spread Σ_k |z_k − median_k| (it sees a noise scale that depends on the data, as in fraction
    noise); and per block the median of the released values of one run (it locates the values that
    sit together, such as a large group of equal or nearly equal values whose membership is random).
    """
    half = out_a.shape[0] // 2
    sel_a, sel_b, ev_a, ev_b = out_a[:half], out_b[:half], out_a[half:], out_b[half:]
    proj = _projections(sel_a, sel_b)
    centre = np.median(np.concatenate([sel_a, sel_b]), axis=0)
    blocks = {"answer": slice(0, m)} | ({"estimate": slice(m, None)} if out_a.shape[1] > m else {})
    kinds = ["sum", "sign contrast", "mean contrast"] + [f"{block} spread" for block in blocks] + [
        f"{block} median" for block in blocks]

    def statistics(out: np.ndarray) -> np.ndarray:
        spreads = [np.abs(out[:, b] - centre[b]).sum(axis=1) for b in blocks.values()]
        medians = [np.median(out[:, b], axis=1) for b in blocks.values()]
        return np.column_stack([out, out @ proj, *spreads, *medians])

    za_sel, zb_sel, za_ev, zb_ev = (statistics(out) for out in (sel_a, sel_b, ev_a, ev_b))
    # every column's thresholds and event counts at once: (statistic, quantile) arrays
    thresholds = np.quantile(np.concatenate([za_sel, zb_sel]), QUANTILES, axis=0).T
    ge_a = np.array([_event_counts(za_sel[:, c], thresholds[c]) for c in range(thresholds.shape[0])])
    ge_b = np.array([_event_counts(zb_sel[:, c], thresholds[c]) for c in range(thresholds.shape[0])])
    scores = np.stack([_loss_bound(ge_a, ge_b, half, 0.05), _loss_bound(half - ge_a, half - ge_b, half, 0.05)],
                      axis=1)  # (statistic, upper/lower, quantile)
    col, direction, i = np.unravel_index(int(np.argmax(scores)), scores.shape)
    threshold, upper = float(thresholds[col, i]), direction == 0
    n_ev = ev_a.shape[0]
    ca = int(_event_counts(za_ev[:, col], np.array([threshold]))[0])
    cb = int(_event_counts(zb_ev[:, col], np.array([threshold]))[0])
    if not upper:
        ca, cb = n_ev - ca, n_ev - cb
    bound = float(_loss_bound(np.array([ca]), np.array([cb]), n_ev, alpha)[0])
    kind = "value" if col < out_a.shape[1] else kinds[col - out_a.shape[1]]
    event = f"{kind} #{col} {'≥' if upper else '<'} {threshold:.3g} ({ca} vs {cb} of {n_ev})"
    return bound, event


def audit(mechanism, runs: int = RUNS) -> list[tuple[float, str, float]]:
    """(lower bound on ln(P/P′), where, ε) for every scenario and neighbouring pair."""
    scenarios = scenarios_for(mechanism)
    pairs = sum(len(s.neighbours) for s in scenarios)
    alpha = (1 - CONFIDENCE) / pairs
    results = []
    for s_index, scenario in enumerate(scenarios):
        x = np.array(scenario.x, dtype=float)
        base = _outputs(mechanism, x, scenario.workload, scenario.epsilon, [2026, s_index, 0], runs)
        for p_index, (label, j, sign) in enumerate(scenario.neighbours):
            neighbour = x.copy()
            neighbour.flat[j] += sign
            other = _outputs(mechanism, neighbour, scenario.workload, scenario.epsilon,
                             [2026, s_index, p_index + 1], runs)
            bound, event = audit_pair(base, other, alpha, scenario.workload.shape[0])
            results.append((bound, f"{scenario.name}/{label}: {event}", scenario.epsilon))
    return results


def runs_within_budget(mechanism) -> int:
    """RUNS, or fewer (a multiple of 50, at least MIN_RUNS) so one mechanism's audit takes ~SECONDS_PER_MECHANISM.

    A correct mechanism passes at any run count (the bound holds with 99.9 % whatever R is); fewer
    runs only weaken the audit, and the count used is printed. The floor wins over the time budget:
    with 500 evaluation runs a side no bound can exceed ln(500/10) ≈ 3.9 (the Clopper–Pearson upper
    bound of a zero count is ~10/500 at this confidence), and with the old floor of 50 no event at all
    could reach ε = 1, so a slow mechanism (MWEM, ~5 ms a run) pays ~50 CPU-seconds instead of 15.
    """
    seconds = 0.0  # CPU time of one run on every dataset of the audit
    for scenario in scenarios_for(mechanism):
        x = np.array(scenario.x, dtype=float)
        _outputs(mechanism, x, scenario.workload, scenario.epsilon, [0], 2)  # warm caches
        start = time.process_time()  # CPU time: the count should not depend on how busy the machine is
        _outputs(mechanism, x, scenario.workload, scenario.epsilon, [1], 5)
        seconds += (time.process_time() - start) / 5 * (1 + len(scenario.neighbours))
    affordable = int(SECONDS_PER_MECHANISM / max(seconds, 1e-9)) // 50 * 50
    return min(RUNS, max(MIN_RUNS, affordable))


def _report(name: str, results, runs: int) -> tuple[float, str, float]:
    worst = max(results, key=lambda r: r[0] - r[2])
    print(f"\nAUDIT {name}: max lower bound on ln(P/P') = {worst[0]:.3f} at epsilon = {worst[2]:g} "
          f"with {runs} runs per side [{worst[1]}]")
    for bound, where, epsilon in results:
        print(f"  {bound:7.3f} (epsilon {epsilon:g})  {where}")
    return worst


@pytest.mark.parametrize("mechanism", MECHANISMS.values(), ids=MECHANISMS.keys())
def test_audit_finds_no_loss_above_epsilon(mechanism):
    runs = runs_within_budget(mechanism)
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
        return Release(self.name, epsilon, epsilon, workload.matvec(estimate), estimate)


@dataclass(frozen=True)
class FractionNoise:
    """Xiao et al. §4 literal: fractions c_i/|D| + Lap(1/(α|D|)) with the private |D| (spec §5.1(d)1: up to 2α)."""

    name: str = "literal-fraction-noise"
    data_dependent: bool = False

    def run(self, x, workload, epsilon, rng):
        x, epsilon = check_inputs(x, workload, epsilon)
        total = max(x.sum(), 1.0)
        estimate = x / total + rng.laplace(scale=1.0 / (epsilon * total), size=x.size)
        return Release(self.name, epsilon, epsilon, workload.matvec(estimate), estimate)


@dataclass(frozen=True)
class LiteralSrebGca:
    """SReB_GCA with the paper's literal steps (spec §4(d)1–2), one of them at a time."""

    per_bin_noise: bool = False      # erratum 2: a fresh Lap(λ2)/|C| for every bin (loss |C|·ε2)
    true_regrouping: bool = False    # erratum 1: cut the TRUE sorted order at the noisy cut positions
    ratio: float = 0.5
    name: str = "literal-sreb-gca"
    data_dependent: bool = True

    def run(self, x, workload, epsilon, rng):
        x, epsilon = check_inputs(x, workload, epsilon)
        scale1, scale2 = 1 / (self.ratio * epsilon), 1 / ((1 - self.ratio) * epsilon)
        noisy = x + rng.laplace(scale=scale1, size=x.size)
        order = np.argsort(noisy, kind="stable")
        cuts = ggs(np.maximum(noisy[order], 0.0), scale2)
        if self.true_regrouping:
            order = np.argsort(x, kind="stable")
        estimate = np.empty(x.size)
        for group in groups_from_cuts(order, cuts):
            if self.per_bin_noise:
                estimate[group] = x[group].mean() + rng.laplace(scale=scale2 / group.size, size=group.size)
            else:
                estimate[group] = (x[group].sum() + rng.laplace(scale=scale2)) / group.size
        return Release(self.name, epsilon, epsilon, workload.matvec(estimate), estimate)


@dataclass(frozen=True)
class WdaSplitOnData(WDA):
    """WDA whose first split is around the data's most frequent item (spec §2(d)2: not DP)."""

    hot_item: int = -1
    name: str = "literal-wda-split-on-data"

    def run(self, x, workload, epsilon, rng):
        hot = int(np.argmax(np.ravel(x)))  # Algorithm 1 line 3, literally
        return WDA.run(dataclasses.replace(self, hot_item=hot), x, workload, epsilon, rng)

    def division(self, workload):
        matrix = dense(workload)
        m, sensitivity = matrix.shape[0], float(np.abs(matrix).sum(axis=0).max())
        hot = np.flatnonzero(matrix[:, self.hot_item])
        k = min(max(math.floor((m + sensitivity) / 4 + 0.5), 1), hot.size, m - 1)
        whole = leaves_for(workload, [np.arange(m)], [1.0])
        if k < 1:
            return whole
        picked = hot[:k]
        split = leaves_for(workload, [picked, np.setdiff1d(np.arange(m), picked)], [0.5, 0.5])
        cost = 2 * sum(len(leaf.rows) * leaf.sensitivity for leaf in split)  # equal budgets (spec §2(a))
        return split if cost < m * sensitivity else whole


@dataclass(frozen=True)
class LiteralXiaoMax:
    """Xiao et al.'s max-query probability perturbation on the histogram's records (spec §5.2: not DP)."""

    width: int = 1
    name: str = "literal-xiao-max"
    data_dependent: bool = True

    def run(self, x, workload, epsilon, rng):
        x, epsilon = check_inputs(x, workload, epsilon)
        data = np.repeat(np.arange(1, x.size + 1), x.astype(int))  # records in sorted order
        p = (literal_max_distribution_not_dp(data, x.size, self.width, epsilon) if data.size
             else np.full(x.size, 1.0 / x.size))  # no records: the prior is left unperturbed
        sample = 1 + int(np.searchsorted(np.cumsum(p), rng.random() * p.sum(), side="right"))
        return Release(self.name, epsilon, epsilon, np.array([float(min(sample, x.size))]), None)


# Per-bin SReB_GCA noise leaves every single released value with the right marginal; its excess loss
# |C|·ε2 sits in joint events of a random group. The "empty" scenario makes one group large and stable in
# size, and the per-run median of the released values locates it (see SCENARIOS).
BROKEN = (UnderNoisedIdentity(), FractionNoise(),
          LiteralSrebGca(per_bin_noise=True, name="literal-sreb-gca-per-bin"),
          LiteralSrebGca(true_regrouping=True, name="literal-sreb-gca-true-regrouping"),
          WdaSplitOnData(), LiteralXiaoMax())


@pytest.mark.parametrize("mechanism", BROKEN, ids=[m.name for m in BROKEN])
def test_audit_flags_broken_variant(mechanism):
    bound, where, epsilon = _report(mechanism.name, audit(mechanism), RUNS)
    assert bound > epsilon, f"the audit missed {mechanism.name}: best lower bound {bound:.3f} at {where}"
