"""Xiao, Xiong & Yuan (TR-2010-003): cell release and the max query.

In this report α is the DP parameter; here it is the ``epsilon`` of ``run`` (the report's (ε, δ) are
usefulness parameters).

* ``CellRelease`` (Secs. 4.1.1 and 5, corrected): counts + Lap(Δ/α) with Δ = 1 (add/remove) or 2 (replace-one),
  optionally clipped at 0; fractions only by a *public* n (the paper's noise on
  fractions c_i/|D| with Lap(1/(α|D|)) costs up to 2α and leaks |D|). Usefulness bounds live in
  ``dplens.core.analysis.usefulness``.
* Max query (Sec. 4.1.2): ``max_query_distribution`` / ``max_query_em`` is the α-DP exponential mechanism on
  a top-order-statistic score (the default). ``literal_max_distribution_not_dp`` is the paper's
  "probability perturbation" — NOT DIFFERENTIALLY PRIVATE, kept only to reproduce the paper.

>>> p = max_query_distribution([5, 9, 9, 10], beta=10, alpha=1.0, k=1)
>>> round(float(p[8]), 6), round(float(p[9]), 6)
(0.251853, 0.152757)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dplens.core.mechanisms.contract import (
    FLAG_RANGE,
    Range,
    Release,
    check_epsilon,
    check_inputs,
    exponential_mechanism,
    laplace_epsilon,
    setting,
)
from dplens.core.mechanisms.measurement import LaplaceMeasurement, NoisyAnswers, pure_epsilon, pure_loss, stated_at
from dplens.core.privacy.definitions import Privacy, PureDP, cell_sensitivity
from dplens.core.queries.workloads import Workload, squared_frobenius
from dplens.core.validate import integer

NOT_DP_LABEL = "not differentially private (the paper's literal mechanism; reproduction only)"


def replace_one_loss(column_l1: np.ndarray, scale: float) -> float:
    """Worst-case loss of one Laplace block under replace-one neighbours: (two largest column norms)/b.

    An upper bound that is exact when the two columns have disjoint supports (cells).

    >>> replace_one_loss(np.ones(5), 2.0)
    1.0
    """
    top = np.sort(np.asarray(column_l1, dtype=float))[-2:]
    return float(top.sum()) / scale


@dataclass(frozen=True)
class CellRelease:
    """Xiao et al. cell release (Sec. 5.2, corrected): counts + Lap(Δ/α), clipped at 0 by default.

    With ``n_public`` the released fractions c̃/n are shown in ``details``; n must be public (bounded DP).

    >>> from dplens.core.queries.workloads import Identity
    >>> CellRelease(clip=False, neighbouring="replace_one").expected_mse(Identity(3), 1.0)
    8.0
    """

    summary: ClassVar[str] = "Xiao et al.'s cell release: noisy counts, clipped at zero."
    # every draw lands on an integer count with integer sensitivity: the secure path may use the integer sampler
    # (read on this exact class only, dplens.core.privacy.noise.adds_noise_to_counts: a subclass must declare it again)
    noise_on_counts: ClassVar[bool] = True

    neighbouring: str = setting("add_remove", Range(choices=("add_remove", "replace_one")))
    clip: bool = setting(True, FLAG_RANGE)
    n_public: float | None = setting(None, Range(1, 1e15, choices=(None,)))
    name: str = "cell-release"
    data_dependent: bool = False

    def __post_init__(self) -> None:
        cell_sensitivity(self.neighbouring)
        if self.n_public is not None:
            check_epsilon(self.n_public, "n_public")

    def run(self, x: np.ndarray, workload: Workload, privacy: Privacy | float, rng: np.random.Generator) -> Release:
        x, epsilon = check_inputs(x, workload, privacy)
        measurement = LaplaceMeasurement(cell_sensitivity(self.neighbouring) / epsilon)
        counts = measurement.noisy(x, rng)
        if self.clip:
            counts = np.maximum(counts, 0.0)  # post-processing
        ones = np.ones(x.size)  # the noise block is the identity on cells
        epsilon_spent = (pure_loss([(ones, measurement)]) if self.neighbouring == "add_remove"
                         else replace_one_loss(ones, measurement.scale))
        records = (NoisyAnswers(f"the cells ({self.neighbouring.replace('_', '/')} neighbours)", measurement,
                                epsilon_spent * measurement.scale, counts),)
        params = {"neighbouring": self.neighbouring, "clip": self.clip, "n_public": self.n_public,
                  **measurement.params}
        details = {} if self.n_public is None else {"fractions": counts / self.n_public}
        release = Release(self.name, PureDP(epsilon), pure_epsilon(records), workload.matvec(counts), counts, params,
                          details, workload=workload, measurements=records)
        return stated_at(release, privacy)

    def expected_mse(self, workload: Workload, privacy: Privacy | float) -> float | None:
        """Per-query MSE 2(Δ/α)²‖W‖_F²/m without clipping; None with clipping (its bias depends on x)."""
        epsilon = laplace_epsilon(privacy)
        if self.clip:
            return None
        scale = cell_sensitivity(self.neighbouring) / epsilon
        return 2.0 * scale**2 * squared_frobenius(workload) / workload.shape[0]


# ----------------------------------------------------------------------------- max query
def _check_max_inputs(data, beta: int) -> np.ndarray:
    integer("beta (domain size)", beta)
    data = np.asarray(data)
    if data.ndim != 1 or data.size == 0 or not np.issubdtype(data.dtype, np.integer):
        raise ValueError("data must be a non-empty 1-D array of integers in {1..beta}")
    if data.min() < 1 or data.max() > beta:
        raise ValueError(f"data values must lie in 1..{beta}, got range {data.min()}..{data.max()}")
    return data


def max_query_scores(data, beta: int, k: int = 1) -> np.ndarray:
    """u(r) = −|#{x ∈ data : x > r} − k| for r = 1..β (our DP replacement for Sec. 4.1.2); sensitivity 1 under
    add/remove.

    >>> max_query_scores([5, 9, 9, 10], 10).tolist()
    [-3, -3, -3, -3, -2, -2, -2, -2, 0, -1]
    """
    data = _check_max_inputs(data, beta)
    integer("k", k, low=0)
    above = data.size - np.searchsorted(np.sort(data), np.arange(1, beta + 1), side="right")
    return -np.abs(above - k)


def max_query_distribution(data, beta: int, alpha: float, k: int = 1) -> np.ndarray:
    """Output distribution P(r) ∝ exp(α u(r)/2) over r = 1..β of the α-DP max query (index r−1)."""
    alpha = check_epsilon(alpha, "alpha")
    logits = alpha * max_query_scores(data, beta, k) / 2.0
    weights = np.exp(logits - logits.max())
    return weights / weights.sum()


def max_query_em(data, beta: int, alpha: float, k: int, rng: np.random.Generator) -> tuple[int, np.ndarray, float]:
    """α-DP approximate max (the (k+1)-th largest value): (sample in 1..β, distribution, privacy loss α)."""
    scores = max_query_scores(data, beta, k)
    sample = exponential_mechanism(scores.astype(float), alpha, 1.0, rng) + 1
    return sample, max_query_distribution(data, beta, alpha, k), check_epsilon(alpha, "alpha")


def literal_max_distribution_not_dp(data, beta: int, width: int, alpha: float,
                                    lower: str = "min_data") -> np.ndarray:
    """The paper's max-query "probability perturbation" (§4.1.2) — NOT DIFFERENTIALLY PRIVATE.

    Kept only to reproduce the paper (its loss reaches 3α when r⁻ starts at min(data), and exceeds α
    even from a public lower bound when the extra record is not processed last). Records are processed in
    the given order; r⁺ = [x−w, x+w], r⁻ = [L, x−w) with L = min(data) (``"min_data"``) or 1 (``"one"``).

    >>> p = literal_max_distribution_not_dp([1, 3, 3, 3], 10, 1, 0.5)
    >>> round(float(np.log(0.1 / p[0])), 6)
    1.5
    """
    data = _check_max_inputs(data, beta)
    alpha = check_epsilon(alpha, "alpha")
    if lower not in ("min_data", "one"):
        raise ValueError(f"lower must be 'min_data' or 'one', got {lower!r}")
    values = np.arange(1, beta + 1)
    bottom = int(data.min()) if lower == "min_data" else 1
    p = np.full(beta, 1.0 / beta)
    for x in data:
        plus = (values >= x - width) & (values <= x + width)
        minus = (values >= bottom) & (values < x - width)
        mass_plus, mass_minus = p[plus].sum(), p[minus].sum()
        shift = min(mass_plus * math.expm1(alpha), mass_minus * -math.expm1(-alpha))
        if shift > 0:  # a side with zero mass leaves p unchanged
            p[plus] += shift * p[plus] / mass_plus
            p[minus] -= shift * p[minus] / mass_minus
    return p


def max_log_ratio(p: np.ndarray, q: np.ndarray) -> float:
    """max_r |log p(r)/q(r)|: the privacy loss between two output distributions on neighbours."""
    return float(np.max(np.abs(np.log(np.asarray(p)) - np.log(np.asarray(q)))))
