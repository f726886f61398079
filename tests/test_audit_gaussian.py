"""Auditing the Gaussian mechanisms: the exact privacy curve, and an empirical audit that catches σ 10 % too small.

1. *Exact*: every Gaussian release states σ; the strategy's L2 sensitivity Δ₂ is recomputed here from a
   dense strategy matrix built independently of the mechanism's own norm code, and the exact curve of
   N(0, σ²) at Δ₂ (Balle & Wang 2018, Thm. 8) must give δ(ε) ≤ δ at the claimed ε (and ρ ≥ Δ₂²/2σ²).
   A σ 10 % smaller must break the claim (power).
2. *Empirical*: the auditor's threshold events "z ≥ t" (as in ``src/dplens/core/papers/audit.py``), selected on one
   half and evaluated on the other with one-sided Clopper–Pearson bounds, must satisfy
   P[M(x) ∈ E] − e^ε′ P[M(x′) ∈ E] ≤ δ_claimed(ε′) on a grid of ε′, where δ_claimed is the exact
   curve of the σ and Δ₂ the release states. (ε, δ) itself cannot be refuted at δ = 1e-6 with
   feasible samples, but the claimed curve can at small ε′, where the hockey-stick divergence is large.
   Gaussian identity releases each cell independently, so one run on N cells gives N samples of the
   one-cell mechanism for neighbours 0 vs 1: two million samples per side cost well under a second.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from dplens.core.mechanisms import MECHANISMS
from dplens.core.mechanisms.greedy_h import cell_strategy
from dplens.core.mechanisms.hierarchical import build_tree, workload_grid
from dplens.core.mechanisms.privelet import haar_forward, padded_length
from dplens.core.papers.audit import cp_bounds as _cp_bounds
from dplens.core.privacy.definitions import gaussian_delta, target
from dplens.core.privacy.noise import noise_kind
from dplens.core.queries.workloads import AllRange, dense
from dplens.core.queries.workloads import Identity as IdentityWorkload

pytestmark = pytest.mark.audit

GAUSSIAN = {name: m for name, m in MECHANISMS.items() if noise_kind(m) == "gaussian"}
N = 16
ALPHA = 1e-3
EPSILON_GRID = np.array([0.0, 0.1, 0.25, 0.5, 0.75, 1.0])
QUANTILES = np.linspace(0.02, 0.98, 49)


# ----------------------------------------------------------------------------- independent dense strategies
def _dense_strategy(mechanism, workload) -> np.ndarray:
    """The measured strategy A as a dense matrix, built from the mechanism's structure, not its norm code."""
    n = workload.shape[1]
    if mechanism.name == "gaussian-identity":
        return np.eye(n)
    if mechanism.name == "gaussian-answers":
        return dense(workload)
    if mechanism.name == "gaussian-hb":
        tree = build_tree(*mechanism._tree_args(workload_grid(workload)))
        rows = []
        for level, measured in zip(tree.levels, tree.measured, strict=True):
            if measured:
                for c0, c1 in zip(level.c0, level.c1, strict=True):
                    row = np.zeros(n)
                    row[c0:c1] = 1.0
                    rows.append(row)
        return np.array(rows)
    if mechanism.name == "gaussian-privelet":
        return haar_forward(np.eye(padded_length(n))[:, :n])
    if mechanism.name == "gaussian-greedy-h":
        tree, _ = cell_strategy(workload, mechanism.branching, mechanism.granularity, mechanism.weights_norm)
        matrix = np.zeros((tree.query_weight.size, n))
        for i, (s, z, w) in enumerate(zip(tree.query_start, tree.query_size, tree.query_weight, strict=True)):
            matrix[i, s:s + z] = w
        return matrix
    if mechanism.name == "gaussian-eigen":  # A = G^{1/4} S rebuilt from a dense WᵀW
        gram = dense(workload).T @ dense(workload)
        values, vectors = np.linalg.eigh(gram)
        values = np.maximum(values, 0) + 1e-10 * values.max()
        root4 = (vectors * values**0.25) @ vectors.T
        return root4 / np.linalg.norm(root4, axis=0)
    raise AssertionError(f"no dense strategy for {mechanism.name}")


@pytest.mark.parametrize("mechanism", GAUSSIAN.values(), ids=GAUSSIAN.keys())
@pytest.mark.parametrize("definition", ["approx", "zcdp"])
def test_exact_privacy_curve_of_the_stated_sigma_meets_the_claim(mechanism, definition):
    # (1, 1e-6)-DP, or the ρ whose CKS conversion is (1, 1e-6)-DP: the exact curve at the σ drawn meets (1, 1e-6)
    epsilon, delta = 1.0, 1e-6
    workload = AllRange(N)
    release = mechanism.run(np.arange(float(N)), workload, target(definition, epsilon, delta),
                            np.random.default_rng(0))
    sensitivity = float(np.linalg.norm(_dense_strategy(mechanism, workload), axis=0).max())
    sigma = release.params["sigma"]
    assert release.params["l2_sensitivity"] == pytest.approx(sensitivity, rel=1e-9)
    assert gaussian_delta(epsilon, sigma, sensitivity) <= delta * (1 + 1e-9)
    assert release.params["rho"] >= sensitivity**2 / (2 * sigma**2) * (1 - 1e-12)
    assert gaussian_delta(epsilon, 0.9 * sigma, sensitivity) > 2 * delta  # σ 10 % small: refuted


# ----------------------------------------------------------------------------- the empirical audit
@dataclasses.dataclass(frozen=True)
class UnderNoised:
    """A Gaussian mechanism that adds ``shrink`` × the σ it states (test-only, the broken variant)."""

    inner: object
    shrink: float = 0.9

    @property
    def name(self) -> str:
        return f"{self.inner.name}-sigma-x{self.shrink:g}"

    def run(self, x, workload, privacy, rng):
        return self.inner.run(x, workload, privacy, _Shrunk(rng, self.shrink))


class _Shrunk:
    def __init__(self, source, shrink: float) -> None:
        self._source, self._shrink = source, shrink

    def normal(self, loc=0.0, scale=1.0, size=None):
        return self._source.normal(loc=loc, scale=np.asarray(scale) * self._shrink, size=size)


def empirical_excess(mechanism, privacy, samples: int, seed: int) -> tuple[float, str]:
    """Largest lower bound on P[E] − e^ε′ P′[E] − δ_claimed(ε′) over the auditor's events and the ε′ grid."""
    rng = np.random.default_rng(seed)
    workload = IdentityWorkload(samples)
    zero = mechanism.run(np.zeros(samples), workload, privacy, rng)
    one = mechanism.run(np.ones(samples), workload, privacy, rng)
    claimed = np.array([gaussian_delta(e, zero.params["sigma"], zero.params["l2_sensitivity"])
                        for e in EPSILON_GRID])
    half = samples // 2
    select = (zero.answers[:half], one.answers[:half])
    evaluate = (zero.answers[half:], one.answers[half:])

    def events(pair):
        thresholds = np.quantile(np.concatenate(pair), QUANTILES)
        # P[z ≥ t] under x′ = 1 vs x = 0, and P[z < t] under x = 0 vs x′ = 1 (both orders of the pair)
        upper = [(pair[1][:, None] >= thresholds).mean(0), (pair[0][:, None] >= thresholds).mean(0)]
        lower = [(pair[0][:, None] < thresholds).mean(0), (pair[1][:, None] < thresholds).mean(0)]
        return thresholds, (upper, lower)

    thresholds, (upper, lower) = events(select)
    best = (-math.inf, 0, 0, 0)
    for kind, (p, q) in enumerate((upper, lower)):
        excess = p[None, :] - np.exp(EPSILON_GRID)[:, None] * q[None, :] - claimed[:, None]
        e, t = np.unravel_index(np.argmax(excess), excess.shape)
        if excess[e, t] > best[0]:
            best = (excess[e, t], kind, e, t)
    _, kind, e, t = best
    a, b = evaluate
    t_value = thresholds[t]
    hits_p = int(np.sum(b >= t_value) if kind == 0 else np.sum(a < t_value))
    hits_q = int(np.sum(a >= t_value) if kind == 0 else np.sum(b < t_value))
    p_low, _ = _cp_bounds(np.array([hits_p]), a.size, ALPHA / 2)
    _, q_high = _cp_bounds(np.array([hits_q]), a.size, ALPHA / 2)
    bound = float(p_low[0] - math.exp(EPSILON_GRID[e]) * q_high[0] - claimed[e])
    return bound, f"{'z >= ' if kind == 0 else 'z < '}{t_value:.3f} at epsilon'={EPSILON_GRID[e]:g}"


@pytest.mark.statistical
@pytest.mark.parametrize("definition", ["approx", "zcdp"])
def test_empirical_audit_passes_the_right_sigma_and_fails_a_sigma_ten_percent_small(definition):
    mechanism, privacy = GAUSSIAN["gaussian-identity"], target(definition, 1.0, 1e-6)
    right, where_right = empirical_excess(mechanism, privacy, 2_000_000, seed=11)
    wrong, where_wrong = empirical_excess(UnderNoised(mechanism), privacy, 2_000_000, seed=11)
    print(f"\nAUDIT {mechanism.name} ({definition}): right σ excess {right:.4f} [{where_right}]; "
          f"0.9σ excess {wrong:.4f} [{where_wrong}]")
    assert right <= 0.0
    assert wrong > 0.0
