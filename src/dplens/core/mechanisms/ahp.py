"""AHP: accurate histogram publication by noisy-sorted clustering (Zhang et al., SDM 2014).

1. A noisy histogram x̃ = x + Lap(1/ε₁), ε₁ = ratio·ε; values ≤ η·ln(n)/ε₁ are set to 0.
2. The cells are sorted by their NOISY value (sorting by the true counts would leak the true rank
   order; the same correction as for SReB_GCA) and cut greedily into contiguous clusters of the sorted order: a cell
   joins the current cluster unless that raises the cluster's estimated error (squared deviation plus the noise variance
   2/(ε₂²·size) of its mean) by at least err*(j), the best error the cell could have at the start of a
   new cluster (the paper's look-ahead with its early stop, looking at most ``LOOKAHEAD`` cells ahead).
3. Each cluster's true sum gets Lap(1/ε₂), ε₂ = ε − ε₁, and is spread evenly over its cells.

Every cell is in one cluster, so both Laplace blocks have sensitivity 1: the loss is ε₁ + ε₂.

>>> import numpy as np
>>> from dplens.core.queries.workloads import Identity
>>> release = AHP().run(np.array([0.0, 0, 50, 52, 0, 51]), Identity(6), 1.0, np.random.default_rng(0))
>>> release.privacy_loss <= 1.0, release.estimate.shape
(True, (6,))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dplens.core.mechanisms.contract import (
    RATIO_RANGE,
    Range,
    Release,
    check_inputs,
    check_ratio,
    setting,
)
from dplens.core.mechanisms.cost_model import Cost, sorting_cost
from dplens.core.mechanisms.measurement import LaplaceMeasurement, NoisyAnswers, pure_epsilon, stated_at
from dplens.core.privacy.definitions import Privacy, PureDP
from dplens.core.queries.workloads import Workload
from dplens.core.validate import non_negative

LOOKAHEAD = 64  # cells err*(j) may look ahead (128 gave identical DPBench errors at twice the cost)


def best_new_cluster_error(values: np.ndarray, noise_variance: float) -> np.ndarray:
    """err*(j): min over lengths L of (v_j − mean(v_j … v_{j+L−1}))² + noise_variance/L², for sorted v.

    The scan over L stops at the first L where the squared-deviation term grows by at least what the
    noise term could still shrink (the paper's early termination), and after ``LOOKAHEAD`` cells.

    >>> best_new_cluster_error(np.array([1.0, 1.0, 1.0]), 2.0).tolist()
    [0.2222222222222222, 0.5, 2.0]
    """
    from dplens.core.mechanisms.kernels import ahp_best_new_cluster_error  # compiled; same steps, same floats

    return ahp_best_new_cluster_error(np.asarray(values, dtype=float), float(noise_variance), LOOKAHEAD)


def greedy_clusters(values: np.ndarray, noise_variance: float) -> np.ndarray:
    """Start index of every cluster of the sorted `values` (AHP's greedy pass; starts with 0).

    Cell j starts a new cluster when error(i, j) ≥ error(i, j − 1) + err*(j) for the current cluster
    start i (a compiled scalar loop).

    >>> greedy_clusters(np.array([0.0, 0, 0, 100, 101, 100]), 2.0).tolist()
    [0, 3]
    """
    from dplens.core.mechanisms.kernels import ahp_greedy_clusters  # compiled; same steps, same floats

    values = np.asarray(values, dtype=float)
    return ahp_greedy_clusters(values, best_new_cluster_error(values, noise_variance), float(noise_variance), 2.0)


@dataclass(frozen=True)
class AHP:
    """AHP (Zhang et al. SDM 2014): noisy histogram at ratio·ε, threshold η, noisy-sorted clusters.

    Data-dependent, so ``expected_mse`` is None. ``params`` reports the number of clusters.
    """

    summary: ClassVar[str] = "AHP: noisy counts, small ones set to zero, then similar bins averaged."

    ratio: float = setting(0.85, RATIO_RANGE)
    eta: float = setting(0.35, Range(0, 100))
    name: str = "ahp"
    data_dependent: bool = True

    def __post_init__(self) -> None:
        check_ratio(self.ratio)
        non_negative("eta", self.eta)

    def cost(self, workload: Workload) -> Cost:
        """Linear work plus the sort of the noisy counts for the clustering."""
        return sorting_cost(workload, 10)

    def run(self, x: np.ndarray, workload: Workload, privacy: Privacy | float, rng: np.random.Generator) -> Release:
        x, epsilon = check_inputs(x, workload, privacy)
        n = x.size
        epsilon_sort = self.ratio * epsilon
        epsilon_clusters = epsilon - epsilon_sort
        sort, clusters = LaplaceMeasurement(1.0 / epsilon_sort), LaplaceMeasurement(1.0 / epsilon_clusters)
        noisy = sort.noisy(x, rng)
        noisy[noisy <= self.eta * np.log(n) / epsilon_sort] = 0.0
        order = np.argsort(noisy, kind="stable")
        starts = greedy_clusters(noisy[order], 2.0 / epsilon_clusters**2)
        sizes = np.diff(np.append(starts, n))
        sums = clusters.noisy(np.add.reduceat(x[order], starts), rng)
        estimate = np.empty(n)
        estimate[order] = np.repeat(sums / sizes, sizes)
        records = (NoisyAnswers("the cells, to order and cluster them (AHP step 1)", sort, 1.0, noisy),
                   NoisyAnswers(f"the {sizes.size} cluster sums (AHP step 2)", clusters, 1.0, sums))
        release = Release(self.name, PureDP(epsilon), pure_epsilon(records), workload.matvec(estimate), estimate,
                          {"ratio": self.ratio, "eta": self.eta, "clusters": int(starts.size)},
                          {"cluster_sizes": sizes}, workload=workload, measurements=records)
        return stated_at(release, privacy)

    def expected_mse(self, workload: Workload, privacy: Privacy | float) -> None:
        return None
