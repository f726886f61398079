"""Empirical differential-privacy audit: a lower bound on a mechanism's privacy loss from samples.

Given many seeded runs of a mechanism on two neighbouring histograms x and x', the runs are split in
two halves (in the spirit of DP-Sniper and Google's dp_auditorium):

1. *select*: over a family of output events — thresholds "z ≥ t" and "z < t" at quantiles of every
   released value and of a few statistics (the sum, the sign/mean-difference contrast between the two
   sides estimated on this half, and per block of answers/estimate the spread Σ|z − median| and the
   per-run median) — pick the event with the largest lower bound on the loss;
2. *evaluate*: on the fresh half, one-sided Clopper–Pearson bounds give
   ln(P̂_lo / P̂'_hi) ≤ ln(P/P′) ≤ privacy loss, with probability ≥ 1 − ``alpha``.

A bound above ε is therefore evidence (at that confidence) that the mechanism is not ε-DP; a bound
below ε is no proof of privacy (finite samples, a finite event family, hand-picked pairs).
``tests/test_audit.py`` audits the whole registry with it; the Papers page runs it on the papers'
literal variants (``dplens.core.papers.literal``).

>>> rng = np.random.default_rng(0)
>>> a, b = rng.laplace(0, 1, (2000, 1)), rng.laplace(3, 1, (2000, 1))  # loss 3 at ε = 1 scale
>>> bound, event = audit_pair(a, b, 0.001, 1)
>>> 1.0 < bound <= 3.0
True
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from dplens.core.mechanisms import Release
from dplens.core.queries.workloads import Workload
from dplens.core.validate import fraction

QUANTILES = np.concatenate([[0.001, 0.002, 0.005, 0.01, 0.02, 0.05], np.linspace(0.1, 0.9, 9),
                            [0.95, 0.98, 0.99, 0.995, 0.998, 0.999]])


def features(release: Release) -> np.ndarray:
    """The released values of one run as one flat vector: answers, then the estimate (if any)."""
    parts = [np.ravel(release.answers)]
    if release.estimate is not None:
        parts.append(np.ravel(release.estimate))
    return np.concatenate(parts).astype(float)


def outputs(mechanism, x: np.ndarray, workload: Workload, epsilon: float, seed: Sequence[int], runs: int,
            statistic: Callable[[Release], np.ndarray] | None = None) -> np.ndarray:
    """``runs`` seeded runs of ``mechanism`` on x: one row of ``features`` per run.

    ``statistic`` (optional) appends what an attacker computes from one release (post-processing, e.g. "two
    bins were released with equal values"), for leaks that no single released value shows.
    """
    rng = np.random.default_rng(list(seed))

    def row(release: Release) -> np.ndarray:
        extra = () if statistic is None else (np.ravel(statistic(release)).astype(float),)
        return np.concatenate([features(release), *extra])

    return np.array([row(mechanism.run(x, workload, epsilon, rng)) for _ in range(runs)])


def cp_bounds(k: np.ndarray, n: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """One-sided Clopper–Pearson (lower, upper) bounds on a proportion, each at level 1 − alpha."""
    k = np.asarray(k, dtype=float)
    lower = np.where(k > 0, stats.beta.ppf(alpha, np.maximum(k, 1), n - k + 1), 0.0)
    upper = np.where(k < n, stats.beta.ppf(1 - alpha, k + 1, np.maximum(n - k, 1)), 1.0)
    return lower, upper


def loss_bound(count_a: np.ndarray, count_b: np.ndarray, n: int, alpha: float, delta: float = 0.0) -> np.ndarray:
    """Lower bound on |ln(P/P′)| from event counts on both sides (each proportion at alpha/2).

    With ``delta`` > 0, a lower bound on ln((P − δ)/P′) (either way round): above ε it refutes (ε, δ)-DP, since
    (ε, δ)-DP means P ≤ e^ε P′ + δ for every event. ``delta = 0`` is the pure bound.

    >>> round(float(loss_bound(np.array([500]), np.array([100]), 1000, 0.001, delta=0.1)[0]), 3)
    0.948
    """
    lo_a, hi_a = cp_bounds(count_a, n, alpha / 2)
    lo_b, hi_b = cp_bounds(count_b, n, alpha / 2)
    if delta:
        lo_a, lo_b = np.maximum(lo_a - delta, 0.0), np.maximum(lo_b - delta, 0.0)
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


def audit_pair(out_a: np.ndarray, out_b: np.ndarray, alpha: float, m: int, *,
               delta: float = 0.0) -> tuple[float, str]:
    """Select an event on the first half, bound ln(P/P′) on the second; (bound, event description).

    ``delta``: bound ln((P − δ)/P′) instead (see :func:`loss_bound`), to audit an (ε, δ) claim such as a
    ρ-zCDP mechanism's at one point of its curve. ``m`` is the number of answers at the start of each row (the
    rest is the estimate). Statistics:
    every released value and the linear ones of ``_projections``; per block (answers, estimate) the
    spread Σ_k |z_k − median_k| (it sees a noise scale that depends on the data, as in fraction noise);
    and per block the median of the released values of one run (it locates values that sit together,
    such as a large group of equal or nearly equal values whose membership is random).
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
    # (statistic, upper/lower, quantile)
    scores = np.stack([loss_bound(ge_a, ge_b, half, 0.05, delta),
                       loss_bound(half - ge_a, half - ge_b, half, 0.05, delta)], axis=1)
    col, direction, i = np.unravel_index(int(np.argmax(scores)), scores.shape)
    threshold, upper = float(thresholds[col, i]), direction == 0
    n_ev = ev_a.shape[0]
    ca = int(_event_counts(za_ev[:, col], np.array([threshold]))[0])
    cb = int(_event_counts(zb_ev[:, col], np.array([threshold]))[0])
    if not upper:
        ca, cb = n_ev - ca, n_ev - cb
    bound = float(loss_bound(np.array([ca]), np.array([cb]), n_ev, alpha, delta)[0])
    kind = "value" if col < out_a.shape[1] else kinds[col - out_a.shape[1]]
    event = f"{kind} #{col} {'≥' if upper else '<'} {threshold:.3g} ({ca} vs {cb} of {n_ev})"
    return bound, event


@dataclass(frozen=True)
class PairAudit:
    """The audit of one neighbouring pair: the lower bound on the loss, the event that shows it, ε."""

    bound: float
    event: str
    epsilon: float
    runs: int

    @property
    def exceeds(self) -> bool:
        """True when the measured lower bound on the loss is above the claimed ε."""
        return self.bound > self.epsilon


def audit_neighbours(mechanism, x, workload: Workload, epsilon: float, bin_index: int, sign: int, *,
                     runs: int = 4000, confidence: float = 0.999, seed: Sequence[int] = (2026,),
                     statistic: Callable[[Release], np.ndarray] | None = None) -> PairAudit:
    """Audit ``mechanism`` on x and x' = x + sign·e_{bin_index} (add/remove one record), seeded.

    ``statistic``: an attacker's extra statistic of each release, audited beside the released values.

    >>> from dplens.core.mechanisms import MECHANISMS
    >>> from dplens.core.queries.workloads import Identity
    >>> result = audit_neighbours(MECHANISMS["identity"], np.zeros(4), Identity(4), 1.0, 0, 1, runs=1000)
    >>> result.exceeds
    False
    """
    if sign not in (1, -1):
        raise ValueError(f"sign must be +1 (add a record) or -1 (remove one), got {sign!r}")
    fraction("confidence", confidence)
    x = np.asarray(x, dtype=float)
    neighbour = x.copy()
    neighbour.flat[bin_index] += sign
    if neighbour.min() < 0:
        raise ValueError(f"bin_index {bin_index} holds no record to remove (sign = -1 needs a count ≥ 1)")
    base = outputs(mechanism, x, workload, epsilon, [*seed, 0], runs, statistic)
    other = outputs(mechanism, neighbour, workload, epsilon, [*seed, 1], runs, statistic)
    bound, event = audit_pair(base, other, 1 - confidence, workload.shape[0])
    return PairAudit(bound, event, float(epsilon), runs)
