"""Empirical DP audit of every registered mechanism on workloads whose parameters are drawn at random.

The other audits (``tests/test_audit.py``, ``tests/test_audit_tables.py``) use fixed workloads with unit weights,
and so missed a table mechanism that calibrated its noise to the *weighted* sensitivity √Σw² while releasing
unweighted cells (weights 0.1 charged ρ 0.5 for noise worth ρ 50). Here every mechanism, histogram and table, is
audited on workloads drawn from a seeded generator: weights (log-uniform over [``LOW_WEIGHT``, ``HIGH_WEIGHT``]),
range sets, marginal sets and stacks. Neighbours add a record where the workload is most sensitive (the column
of largest L1 norm, or the largest cell) and remove one elsewhere, so a calibration that ignores a weight shows.

Machinery, confidence and what a pass means are those of ``dplens.core.papers.audit`` (events selected on one
half of the runs, one-sided Clopper–Pearson bounds on the other; α = 0.001 over all the bounds of one mechanism,
Bonferroni); ρ-zCDP claims are audited at points of their (ε, δ) curve as in ``tests/test_audit_tables.py``.

Power (the audit must fail a wrong scale, at the counts used here):
- histograms: ``PatternSensitivityAnswers`` (Laplace on the answers, its Δ₁ read off W's 0/1 pattern instead of
  its weights) is flagged on every drawn workload whose weights lift Δ₁ to twice the pattern's or more;
- tables: ``WeightedSigmaMarginals`` (the former calibration, σ = √Σw² / √(2ρ)) is flagged on every drawn workload
  whose weights shrink σ to half the correct one or less.

Run counts are the smallest round counts at which both power checks pass on every such draw (see the asserts);
the draws are fixed by ``SEED``, so the outcome is deterministic. Run ``pytest -m audit -rA`` on this file to see
every bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest

from dplens.core.data.domain import Domain
from dplens.core.mechanisms import MECHANISMS, Release, check_inputs
from dplens.core.papers.audit import audit_pair, outputs
from dplens.core.privacy.definitions import PureDP, zcdp_epsilon
from dplens.core.queries.marginals import MarginalWorkload
from dplens.core.queries.workloads import Explicit, Identity, Kron, Prefix, Ranges, Stack, Workload, dense
from dplens.core.tables.contract import marginal_release
from dplens.core.tables.mechanisms import TABLE_MECHANISMS, identity_marginals
from tests.test_audit import memoised_gaussian_accounting  # noqa: F401  (autouse: σ → ε inversions cached)
from tests.test_audit_tables import WIDE_DOMAIN, audit_synthesiser, report_bounds

pytestmark = pytest.mark.audit

SEED = 2031
CONFIDENCE = 0.999
SLACK = 1e-9
LOW_WEIGHT, HIGH_WEIGHT = 0.05, 20.0  # the range of a draw's common weight scale (see _weights)
DRAWS = 2                        # random workloads per mechanism
EPSILON = 1.0                    # histogram mechanisms
RUNS = 600                       # per side: 300 select the event, 300 evaluate it
RUNS_SLOW = {"mwem": 100, "dawa": 300, "ahp": 400, "hdmm-marginals": 300, "histograms": 300}
N = 16                           # 1-D histograms; 2-D ones are 4 × 4
RHO = 0.5                        # table mechanisms
DELTAS = (0.3, 0.1)              # points of the ρ-zCDP curve audited for tables
DOMAIN = Domain(("a", "b", "c"), (2, 3, 4))


def _weights(rng: np.random.Generator, size: int) -> np.ndarray:
    """A common scale, log-uniform over [LOW_WEIGHT, HIGH_WEIGHT], times a factor in [1/2, 2] per query or marginal,
    so that all-small and all-large weight sets are both frequent (an independent draw per weight rarely makes
    every weight small, and a calibration error shows most when they all are)."""
    scale = math.exp(rng.uniform(math.log(LOW_WEIGHT), math.log(HIGH_WEIGHT)))
    return scale * np.exp(rng.uniform(-math.log(2), math.log(2), size))


# ----------------------------------------------------------------------------- histogram workloads
def _weighted_ranges(rng: np.random.Generator, n: int) -> Workload:
    lo = rng.integers(0, n, 8)
    hi = np.minimum(lo + rng.integers(0, n // 2, 8), n - 1)
    matrix = np.zeros((8, n))
    for row, (a, b, w) in enumerate(zip(lo, hi, _weights(rng, 8), strict=True)):
        matrix[row, a:b + 1] = w
    return Explicit(matrix, label="weighted-ranges")


def _ranges(rng: np.random.Generator, n: int) -> Workload:
    lo = rng.integers(0, n, 10)
    return Ranges(n, lo, np.minimum(lo + rng.integers(0, n, 10), n - 1), label="random-ranges")


def _weighted_stack(rng: np.random.Generator, n: int) -> Workload:
    return Stack((Prefix(n), Explicit(np.diag(_weights(rng, n)), label="weighted-cells")))


def _signed_sparse(rng: np.random.Generator, n: int) -> Workload:
    matrix = rng.choice([-1.0, 0.0, 1.0], size=(6, n), p=[0.2, 0.6, 0.2]) * _weights(rng, 6)[:, None]
    matrix[0, 0] = matrix[0, 0] or 1.0  # never an all-zero workload
    return Explicit(matrix, label="weighted-linear")


def _grid_kron(rng: np.random.Generator, n: int) -> Workload:
    side = math.isqrt(n)
    return Kron((Prefix(side), Explicit(np.diag(_weights(rng, side)), label="weighted-cells")))


FAMILIES_1D = (_weighted_ranges, _ranges, _weighted_stack, _signed_sparse)
FAMILIES_2D = (_weighted_ranges, _grid_kron, _weighted_stack, _signed_sparse)


def _histogram(rng: np.random.Generator, two_d: bool) -> np.ndarray:
    counts = rng.poisson(2.0, N).astype(float) * (rng.random(N) < 0.7)
    return counts.reshape(4, 4) if two_d else counts


def _needs_2d(mechanism) -> bool:
    try:
        mechanism.run(np.ones(N), Identity(N), EPSILON, np.random.default_rng(0))
    except ValueError as err:
        if "2-D" in str(err):
            return True
        raise
    return False


def histogram_draws(mechanism, index: int) -> list[tuple[Workload, np.ndarray]]:
    """``DRAWS`` (workload, histogram) pairs the mechanism accepts, drawn from its own seeded stream."""
    two_d = _needs_2d(mechanism)
    rng = np.random.default_rng([SEED, index])
    families = FAMILIES_2D if two_d else FAMILIES_1D
    draws: list[tuple[Workload, np.ndarray]] = []
    for family in rng.permutation(len(families)):
        workload, x = families[family](rng, N), _histogram(rng, two_d)
        try:
            mechanism.run(x, workload, EPSILON, np.random.default_rng(0))
        except ValueError:
            continue  # this mechanism does not take that family (it says why); another draw will
        draws.append((workload, x))
        if len(draws) == DRAWS:
            break
    return draws


def histogram_pairs(workload: Workload, x: np.ndarray) -> dict[str, np.ndarray]:
    """Add one record where W's column L1 norm is largest; remove one from the first non-empty bin."""
    hot = int(np.argmax(workload.column_norms(1)))
    added, removed = x.copy(), x.copy()
    added.flat[hot] += 1
    removed.flat[int(np.flatnonzero(x.ravel())[0])] -= 1
    return {f"add@{hot}": added, "remove": removed}


def audit_histogram(mechanism, draws, runs: int) -> list[tuple[float, float, str]]:
    pairs = sum(len(histogram_pairs(w, x)) for w, x in draws)
    alpha = (1 - CONFIDENCE) / pairs
    results = []
    for d, (workload, x) in enumerate(draws):
        base = outputs(mechanism, x, workload, EPSILON, [SEED, d, 0], runs)
        for p, (label, neighbour) in enumerate(histogram_pairs(workload, x).items()):
            other = outputs(mechanism, neighbour, workload, EPSILON, [SEED, d, p + 1], runs)
            bound, event = audit_pair(base, other, alpha, workload.shape[0])
            results.append((bound, EPSILON, f"#{d} {workload.describe()} {label}: {event}"))
    return results


HISTOGRAM = list(MECHANISMS.items())


@pytest.mark.parametrize("index", range(len(HISTOGRAM)), ids=[name for name, _ in HISTOGRAM])
def test_histogram_mechanism_on_random_workloads(index):
    name, mechanism = HISTOGRAM[index]
    draws = histogram_draws(mechanism, index)
    assert draws, f"{name} took none of the random workload families"
    runs = RUNS_SLOW.get(name, RUNS)
    results = audit_histogram(mechanism, draws, runs)
    bound, epsilon, where = report_bounds(name, results, f"random workloads, {runs} runs per side")
    assert bound <= epsilon + SLACK, f"{name}: lower bound {bound:.3f} > epsilon {epsilon} on {where}"


@dataclass(frozen=True)
class PatternSensitivityAnswers:
    """Laplace on the answers with Δ₁ read off W's 0/1 pattern, ignoring the weights (test-only, broken)."""

    name: str = "broken-answers-pattern-sensitivity"
    data_dependent: bool = False

    def run(self, x, workload, epsilon, rng) -> Release:
        x, epsilon = check_inputs(x, workload, epsilon)
        pattern = float((dense(workload) != 0).sum(axis=0).max())
        answers = workload.matvec(x) + rng.laplace(scale=pattern / epsilon, size=workload.shape[0])
        return Release(self.name, PureDP(epsilon), epsilon, answers, None, {}, workload=workload)


def _understatement(workload: Workload) -> float:
    """True Δ₁ over the Δ₁ the broken variant assumes."""
    matrix = dense(workload)
    return float(np.abs(matrix).sum(axis=0).max() / (matrix != 0).sum(axis=0).max())


def test_random_workload_audit_flags_a_calibration_that_ignores_the_weights():
    broken = PatternSensitivityAnswers()
    rng = np.random.default_rng([SEED, 9001])
    draws = [(family(rng, N), _histogram(rng, False))
             for family in (_weighted_ranges, _weighted_stack, _signed_sparse) * 2]
    results = audit_histogram(broken, draws, RUNS)
    report_bounds(broken.name, results, f"random workloads, {RUNS} runs per side")
    under = [(f"#{d} {w.describe()}", _understatement(w)) for d, (w, _) in enumerate(draws)]
    assert any(factor >= 2 for _, factor in under), f"no draw lifts Δ₁ enough to test power: {under}"
    for described, factor in under:
        if factor >= 2:  # true loss ≥ 2ε on this workload: the audit must see it on one of its pairs
            assert max(b for b, _, where in results if where.startswith(described)) > EPSILON, (
                f"the audit missed {broken.name} on {described} (true loss {factor:.2f} epsilon)")


# ----------------------------------------------------------------------------- table workloads
def table_draw(rng: np.random.Generator, wide: bool) -> MarginalWorkload:
    """1–3 distinct marginals of 1 to (2, or 3 when ``wide``) attributes, random weights, ranges over c at random."""
    candidates = [m for k in range(1, 4 if wide else 3) for m in _subsets(DOMAIN.names, k)]
    chosen = [candidates[i] for i in rng.choice(len(candidates), size=int(rng.integers(1, 4)), replace=False)]
    ranges = tuple("c" if "c" in m and rng.random() < 0.5 else None for m in chosen)
    return MarginalWorkload(DOMAIN, tuple(chosen), weights=tuple(_weights(rng, len(chosen))), ranges=ranges)


def _subsets(names: tuple[str, ...], k: int) -> list[tuple[str, ...]]:
    import itertools

    return list(itertools.combinations(names, k))


def _table() -> np.ndarray:
    rng = np.random.default_rng(5)
    cells = rng.choice(DOMAIN.size, size=200, p=rng.dirichlet(np.full(DOMAIN.size, 0.5)))
    return np.column_stack(np.unravel_index(cells, DOMAIN.sizes))


def table_pairs(records: np.ndarray) -> dict[str, np.ndarray]:
    """Remove the record of a cell holding one; add a record to the largest cell."""
    codes = np.ravel_multi_index(records.T, DOMAIN.sizes)
    counts = np.bincount(codes, minlength=DOMAIN.size)
    single, largest = int(np.flatnonzero(counts == 1)[0]), int(np.argmax(counts))
    return {"small-": np.delete(records, int(np.flatnonzero(codes == single)[0]), axis=0),
            "large+": np.vstack([records, np.unravel_index(largest, DOMAIN.sizes)])}


def _table_outputs(mechanism, records, workload, seed, runs) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.array([np.concatenate([np.ravel(e)
                                     for e in mechanism.run(records, workload, RHO, rng).marginal_estimates])
                     for _ in range(runs)])


def audit_table(mechanism, workloads, runs: int) -> list[tuple[float, float, str]]:
    records = _table()
    pairs = table_pairs(records)
    alpha = (1 - CONFIDENCE) / (len(workloads) * len(pairs) * len(DELTAS))
    results = []
    for d, workload in enumerate(workloads):
        base = _table_outputs(mechanism, records, workload, [SEED, d, 0], runs)
        for p, (label, other_records) in enumerate(pairs.items()):
            other = _table_outputs(mechanism, other_records, workload, [SEED, d, p + 1], runs)
            for delta in DELTAS:
                bound, event = audit_pair(base, other, alpha, base.shape[1], delta=delta)
                weights = ",".join(f"{w:.3g}" for w in workload.weights)
                results.append((bound, zcdp_epsilon(RHO, delta),
                                f"{workload.describe()} w=({weights}) {label} at delta {delta:g}: {event}"))
    return results


def table_draws(mechanism, index: int) -> list[MarginalWorkload]:
    rng = np.random.default_rng([SEED, 1000 + index])
    draws = []
    while len(draws) < DRAWS:
        workload = table_draw(rng, wide=mechanism.name != "histograms")
        try:
            mechanism.run(_table(), workload, RHO, np.random.default_rng(0))
        except ValueError:
            continue  # e.g. histograms' laplace-on-answers refuses ranges; draw again
        draws.append(workload)
    return draws


TABLE = [(name, m) for name, m in TABLE_MECHANISMS.items() if not m.synthesizes]


@pytest.mark.parametrize("index", range(len(TABLE)), ids=[name for name, _ in TABLE])
def test_table_mechanism_on_random_workloads(index):
    name, mechanism = TABLE[index]
    runs = RUNS_SLOW.get(name, RUNS)
    bound, epsilon, where = report_bounds(name, audit_table(mechanism, table_draws(mechanism, index), runs),
                                          f"random workloads, {runs} runs per side")
    assert bound <= epsilon + SLACK, f"{name}: lower bound {bound:.3f} > epsilon {epsilon:.3f} on {where}"


@dataclass(frozen=True)
class WeightedSigmaMarginals:
    """The former gaussian-marginals calibration, σ = √Σw² / √(2ρ) on unweighted cells (test-only, broken)."""

    name: str = "broken-gaussian-marginals-weighted-sigma"
    synthesizes: bool = False

    def run(self, records, workload, rho, rng) -> Release:
        # identity_marginals at ρ' gives σ = √K/√(2ρ'); ρ' = ρ K / Σw² gives σ = √Σw²/√(2ρ)
        scaled = rho * len(workload.marginals) / sum(w * w for w in workload.weights)
        estimates, sigma = identity_marginals(workload, records, scaled, rng)
        return marginal_release(self.name, rho, rho, workload, estimates, stds=[sigma] * len(estimates))


def test_random_table_audit_flags_the_weighted_sigma_calibration():
    broken = WeightedSigmaMarginals()
    rng = np.random.default_rng([SEED, 9002])
    workloads = [table_draw(rng, wide=True) for _ in range(4)]
    results = audit_table(broken, workloads, RUNS)
    report_bounds(broken.name, results, f"random workloads, {RUNS} runs per side")
    ratios = [math.sqrt(sum(w * w for w in wl.weights) / len(wl.marginals)) for wl in workloads]
    assert any(r <= 0.5 for r in ratios), f"no draw shrinks σ enough to test power: {ratios}"
    for workload, ratio in zip(workloads, ratios, strict=True):
        if ratio <= 0.5:  # σ at most half the correct one: true ρ at least 4 × the claim
            mine = [b - e for b, e, where in results if where.startswith(workload.describe())
                    and f"w=({','.join(f'{w:.3g}' for w in workload.weights)})" in where]
            assert max(mine) > 0, f"the audit missed σ × {ratio:.2f} on {workload.describe()}"


SYNTHESISERS = [(name, m) for name, m in TABLE_MECHANISMS.items() if m.synthesizes]


@pytest.mark.parametrize("index", range(len(SYNTHESISERS)), ids=[name for name, _ in SYNTHESISERS])
def test_synthesiser_on_randomly_weighted_marginals(index):
    """The synthesisers' per-cell audit (``tests/test_audit_tables.py``) on a wide table's a×b and b marginals
    with random weights: OpenDP scales each marginal's noise by its weight, and every measurement must be as
    wide as the σ that dplens's accounting reads."""
    name, mechanism = SYNTHESISERS[index]
    weights = tuple(_weights(np.random.default_rng([SEED, 2000 + index]), 2))
    workload = MarginalWorkload(WIDE_DOMAIN, (("a", "b"), ("b",)), weights=weights)
    bound, epsilon, where = report_bounds(name, audit_synthesiser(mechanism, workload), "random weights, per cell")
    assert bound <= epsilon + SLACK, f"{name}: lower bound {bound:.3f} > epsilon {epsilon:.3f} on {where} (w={weights})"
