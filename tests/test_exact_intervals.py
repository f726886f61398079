"""Exact intervals: plain Laplace and Gaussian noise, continuous and on the integer lattice
(dplens.core.release.publish), and the strategy mechanisms' noise L z (dplens.core.analysis.strategy_noise)."""

import numpy as np
import pytest
from scipy import stats

from dplens.core.analysis.intervals import (
    answer_halfwidths,
    bin_halfwidths,
    exact_halfwidth,
    release_intervals,
)
from dplens.core.mechanisms import MECHANISMS
from dplens.core.queries.workloads import Identity, Prefix

pytestmark = pytest.mark.statistical
DRAWS = 20_000


def _covered(errors: np.ndarray, half: float) -> float:
    return float(np.mean(np.abs(errors) <= half))


def _accepts(coverage: float, level: float = 0.95) -> bool:  # two-sided binomial test at 1e-4
    return stats.binomtest(round(coverage * DRAWS), DRAWS, level).pvalue > 1e-4


def _discrete(kind: str, scale: float, rng) -> np.ndarray:
    y = np.arange(-int(40 * scale + 40), int(40 * scale + 41))
    weight = np.exp(-np.abs(y) / scale) if kind == "laplace" else np.exp(-(y**2) / (2 * scale**2))
    return rng.choice(y, size=DRAWS, p=weight / weight.sum())


@pytest.mark.parametrize("kind, scale", [("laplace", 1.0), ("laplace", 7.3), ("gaussian", 0.5), ("gaussian", 3.7)])
def test_integer_halfwidths_cover_the_discrete_noise_and_the_continuous_ones_do_not_always(kind, scale):
    rng = np.random.default_rng([11, int(scale * 10)])
    noise = _discrete(kind, scale, rng)
    half = exact_halfwidth((kind, scale, True))
    assert _covered(noise, half) >= 0.95 - 0.005  # at least the level (a lattice cannot hit it exactly)
    assert _covered(noise, half - 1) < 0.95  # and the least such integer
    if (kind, scale) in {("laplace", 1.0), ("gaussian", 0.5)}:  # the continuous width undercovers here
        assert _covered(noise, exact_halfwidth((kind, scale, False))) < 0.94


@pytest.mark.parametrize("name, values", [("gaussian-identity", "bins"), ("gaussian-answers", "answers")])
def test_gaussian_releases_get_exact_intervals_with_power(name, values):
    n = DRAWS
    x, workload = np.full(n, 0.5), Identity(n)  # non-integer counts: the continuous Gaussian
    release = MECHANISMS[name].run(x, workload, 1.0, np.random.default_rng(5))
    half = (bin_halfwidths if values == "bins" else answer_halfwidths)(release)
    shown = release.estimate if values == "bins" else release.answers
    errors = shown - x
    assert half is not None and _accepts(_covered(errors, half[0]))
    assert not _accepts(_covered(errors, 0.8 * half[0]))  # a 20 % narrower interval is rejected


def test_simultaneous_gaussian_intervals_cover_every_answer_at_once():
    workload, x = Prefix(64), np.full(64, 0.5)
    rng = np.random.default_rng(8)
    misses = 0
    for _ in range(400):
        release = MECHANISMS["gaussian-answers"].run(x, workload, 1.0, rng)
        iv = release_intervals(MECHANISMS["gaussian-answers"], release, workload, simultaneous=True)
        truth = workload.matvec(x)
        misses += not np.all((iv.lower <= truth) & (truth <= iv.upper))
        assert iv.method.startswith("exact Gaussian")
    assert misses / 400 <= 0.05 + 0.03  # Bonferroni: at most β of the releases miss any answer


# ----------------------------------------------------------------------------- strategy mechanisms
STRATEGIES = ["hb", "privelet", "greedy-h", "mm-opt",
              "gaussian-hb", "gaussian-privelet", "gaussian-greedy-h", "gaussian-eigen"]


class _UnitNoise:
    """A noise source whose k-th drawn coordinate (over all calls) is ``scale`` and every other one 0."""

    def __init__(self, k: int) -> None:
        self.k, self.drawn = k, 0

    def _unit(self, scale, size):
        out = np.zeros(size)
        flat = out.reshape(-1)
        if 0 <= self.k - self.drawn < flat.size:
            flat[self.k - self.drawn] = float(np.max(scale))
        self.drawn += flat.size
        return out

    def laplace(self, loc=0.0, scale=1.0, size=None):
        return loc + self._unit(scale, size)

    def normal(self, loc=0.0, scale=1.0, size=None):
        return loc + self._unit(scale, size)


def _workload_and_release(name, n=16):
    from dplens.core.queries.workloads import AllRange

    workload = AllRange(n)
    return workload, MECHANISMS[name].run(np.zeros(n), workload, 1.0, np.random.default_rng(3))


@pytest.mark.parametrize("name", STRATEGIES)
def test_strategy_rows_are_the_mechanisms_own_reconstruction(name):
    """Lᵀ read by the adjoint equals L measured by running the mechanism on unit noise, column by column."""
    from dplens.core.analysis.strategy_noise import reconstruction

    workload, release = _workload_and_release(name)
    rec = reconstruction(MECHANISMS[name], release, workload)
    assert rec is not None and rec.kind == ("gaussian" if name.startswith("gaussian") else "laplace")
    n = workload.shape[1]
    columns = []
    for k in range(rec.coordinates):
        source = _UnitNoise(k)
        out = MECHANISMS[name].run(np.zeros(n), workload, 1.0, source)  # Gaussian twins draw through .normal
        columns.append(out.estimate / rec.scale)
    assert source.drawn == rec.coordinates  # the mechanism draws exactly these coordinates
    np.testing.assert_allclose(rec.adjoint(np.eye(n)), np.array(columns), atol=1e-9)


def _rows(name, values="bins"):
    from dplens.core.analysis.strategy_noise import reconstruction, strategy_halfwidths
    from dplens.core.mechanisms.gram import query_rows

    workload, release = _workload_and_release(name)
    rec = reconstruction(MECHANISMS[name], release, workload)
    target = np.eye(workload.shape[1]) if values == "bins" else query_rows(workload, 0, workload.shape[0])
    half = strategy_halfwidths(MECHANISMS[name], release, workload, values=values)
    return rec, rec.adjoint(target).T, half


@pytest.mark.parametrize("name, values", [("privelet", "bins"), ("hb", "bins"), ("greedy-h", "answers"),
                                          ("mm-opt", "answers")])
def test_laplace_strategy_halfwidths_cover_with_power(name, values):
    """Σ_j c_ij Lap(b) sampled: the exact half-width covers 95 % (binomial test), the Gaussian one does not."""
    rec, rows, half = _rows(name, values)
    draws = 200_000
    i = int(np.argmax(np.max(np.abs(rows), axis=1) / np.linalg.norm(rows, axis=1)))  # fewest effective terms
    rng = np.random.default_rng([17, len(name)])
    noise = rng.laplace(scale=rec.scale, size=(draws, rows.shape[1])) @ rows[i]
    inside = int(np.sum(np.abs(noise) <= half[i]))
    assert stats.binomtest(inside, draws, 0.95).pvalue > 1e-4
    gaussian = 1.959964 * rec.scale * np.sqrt(2) * np.linalg.norm(rows[i])  # right variance, wrong shape
    assert stats.binomtest(int(np.sum(np.abs(noise) <= gaussian)), draws, 0.95).pvalue < 1e-4
    assert abs(gaussian / half[i] - 1) > 0.01


@pytest.mark.parametrize("name", ["gaussian-hb", "gaussian-privelet", "gaussian-greedy-h", "gaussian-eigen"])
def test_gaussian_twin_halfwidths_are_exact_normal_quantiles(name):
    rec, rows, half = _rows(name, "answers")
    np.testing.assert_allclose(half, 1.959964 * rec.scale * np.linalg.norm(rows, axis=1), rtol=1e-6)
    rng = np.random.default_rng([19, len(name)])
    noise = rng.normal(scale=rec.scale, size=(DRAWS, rows.shape[1])) @ rows[0]
    assert _accepts(_covered(noise, half[0]))
    assert not _accepts(_covered(noise, 0.9 * half[0]))


def test_laplace_sum_halfwidths_match_closed_forms():
    from dplens.core.analysis.strategy_noise import laplace_sum_halfwidths

    rows = np.array([[1.0, 0, 0], [1.0, 1.0, 0], [0, 0, 0]])
    half = laplace_sum_halfwidths(rows, 1.0, 0.01)
    assert abs(half[0] - np.log(100)) < 2e-3 * half[0]  # one term: b ln(1/β)
    from scipy import optimize

    two = optimize.brentq(lambda x: (1 + x / 2) * np.exp(-x) - 0.01, 1, 20)  # two terms: P(|N| > x) = (1 + x/2)e^{−x}
    assert abs(half[1] / two - 1) < 1e-3  # the stated accuracy: 0.1 % on the half-width
    assert half[2] == 0


@pytest.mark.parametrize("name", ["hb", "privelet", "gaussian-greedy-h"])
def test_release_intervals_are_exact_for_strategy_mechanisms(name):
    workload, _ = _workload_and_release(name)
    truth = np.arange(16.0)
    rng = np.random.default_rng([23, len(name)])
    covered, all_at_once, runs = 0, 0, 300
    for _ in range(runs):
        release = MECHANISMS[name].run(truth, workload, 1.0, rng)
        each = release_intervals(MECHANISMS[name], release, workload)
        joint = release_intervals(MECHANISMS[name], release, workload, simultaneous=True)
        covered += np.sum((each.lower <= truth) & (truth <= each.upper))
        all_at_once += np.all((joint.lower <= truth) & (truth <= joint.upper))
    assert each.method.startswith("exact strategy-noise") and "Bonferroni" in joint.method
    assert abs(covered / (16 * runs) - 0.95) < 0.02  # 4,800 correlated bin draws
    assert all_at_once / runs >= 0.95 - 0.04  # Bonferroni: at least 95 % (3 sd of 300 runs below)
