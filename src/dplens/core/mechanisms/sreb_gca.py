"""SReB_GCA, small-bin-first grouping of Chen et al. 2024 (Sec. 5, Algorithms 1–2), in its corrected form.

Stage 1 (ε1 = ratio·ε) adds Lap(1/ε1) to every bin and sorts by the NOISY values; GGS cuts the sorted
order into groups using only those noisy values. Stage 2 (ε2 = ε − ε1) adds ONE Laplace draw to each
group SUM and spreads it evenly (the paper's Algorithm 1 draws per bin, which would cost |C|·ε2). Groups
are segments of the noisy permutation, never of the true order (the paper's Grouping(H, S), read
literally, cuts the true sorted order, which is not DP).

>>> ggs(np.array([1.0, 1, 2, 3, 8, 9, 10, 100, 120, 1000]), 10.0)
[3, 6, 7, 8]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dplens.core.mechanisms.contract import (
    RATIO_RANGE,
    Range,
    Release,
    check_epsilon,
    check_inputs,
    check_ratio,
    setting,
)
from dplens.core.mechanisms.cost_model import Cost, sorting_cost
from dplens.core.mechanisms.measurement import LaplaceMeasurement, NoisyAnswers, pure_epsilon, stated_at
from dplens.core.privacy.definitions import Privacy, PureDP
from dplens.core.queries.workloads import Workload
from dplens.core.validate import positive

SHOWN_GROUPS = 1000  # groups listed in a release's display-only details (params["groups"] counts them all)


def _check_floor(error_floor: float) -> float:
    return positive("error_floor (the relative-error floor δ of Chen et al. §5.1)", error_floor)


def group_mre(values: np.ndarray, scale: float, error_floor: float = 1.0) -> float:
    """MRE(C) = (1/|C|) Σ_h (|h − mean(C)| + λ/|C|) / max(h, δ) (Chen et al., Sec. 5.1, with the floor δ).

    >>> round(group_mre(np.array([1.0, 1, 2]), 2.0), 4)
    0.8889
    """
    k = values.size
    return float(np.mean((np.abs(values - values.mean()) + scale / k) / np.maximum(values, error_floor)))


def ggs(sorted_noisy: np.ndarray, scale: float, error_floor: float = 1.0) -> list[int]:
    """Greedy group search (Definition 5 / Algorithm 2, corrected).

    Corrections: the body uses λ2 (the header says λ1); a group is closed at r − 1 (the paper's `d` is
    undefined when the first merge fails); noisy values are clamped at 0 and denominators use max(·, δ).

    Args:
        sorted_noisy: noisy bin values, sorted ascending and clamped at 0 (post-processing only).
        scale: λ2 = 1/ε2, the Laplace scale of the stage-2 group sums.
        error_floor: relative-error floor δ.

    Returns:
        The (0-based, inclusive) end positions of every group but the last.
    """
    values = np.asarray(sorted_noisy, dtype=float)
    error_floor = _check_floor(error_floor)
    if np.any(np.diff(values) < 0):
        raise ValueError("ggs needs values sorted ascending")
    # Prefix sums make MRE of a contiguous sorted segment O(log n): Σ|h − μ|/max(h, δ) splits at μ. The
    # loop is sequential: compiled (dplens.core.mechanisms.kernels.sreb_ggs), the same arithmetic as written out
    # in Python before, so the cuts are identical
    from dplens.core.mechanisms.kernels import sreb_ggs

    weight = 1.0 / np.maximum(values, error_floor)
    cum_v = np.concatenate(([0.0], np.cumsum(values)))
    cum_w = np.concatenate(([0.0], np.cumsum(weight)))
    cum_vw = np.concatenate(([0.0], np.cumsum(values * weight)))
    return sreb_ggs(values, np.maximum(values, error_floor), cum_v, cum_w, cum_vw, float(scale)).tolist()


def groups_from_cuts(order: np.ndarray, cuts: list[int]) -> list[np.ndarray]:
    """Bins of each group: segments of the noisy permutation ``order`` cut after positions ``cuts``.

    >>> [g.tolist() for g in groups_from_cuts(np.array([2, 0, 1]), [0])]
    [[2], [0, 1]]
    """
    return np.split(np.asarray(order), np.asarray(cuts, dtype=int) + 1)


def group_membership_l1(groups: list[np.ndarray], n: int) -> np.ndarray:
    """Column L1 norms of the group-sum matrix: how many released group sums each bin enters (1 each)."""
    return np.bincount(np.concatenate(groups), minlength=n).astype(float)


def expected_bin_error(counts: np.ndarray, groups: list[np.ndarray], scale: float) -> np.ndarray:
    """Exact E|H̃_j − H_j| = |a| + (λ2/k)·e^{−|a|k/λ2} for a fixed grouping (Chen et al., Eq. 15).

    >>> expected_bin_error(np.array([0.0, 6.0]), [np.array([0, 1])], 4.0).round(6).tolist()
    [3.44626, 3.44626]
    """
    counts = np.asarray(counts, dtype=float)
    out = np.empty(counts.size)
    for group in groups:
        k = group.size
        bias = np.abs(counts[group].mean() - counts[group])
        out[group] = bias + scale / k * np.exp(-bias * k / scale)
    return out


@dataclass(frozen=True)
class SrebGca:
    """SReB_GCA (Chen et al. 2024, Algorithm 1, corrected): noisy sort, GGS grouping, one draw per group.

    The grouping is random through stage 1, so ``expected_mse`` is None.

    >>> from dplens.core.queries.workloads import Identity
    >>> r = SrebGca().run(np.array([0.0, 0, 50, 60]), Identity(4), 1.0, np.random.default_rng(0))
    >>> r.privacy_loss <= 1.0
    True
    """

    summary: ClassVar[str] = "SReB_GCA (Chen et al.): sorts and groups similar bins, one noisy value per group."

    ratio: float = setting(0.5, RATIO_RANGE)
    error_floor: float = setting(1.0, Range(1e-9, 1e9))
    name: str = "sreb-gca"
    data_dependent: bool = True

    def __post_init__(self) -> None:
        check_ratio(self.ratio)
        _check_floor(self.error_floor)

    def cost(self, workload: Workload) -> Cost:
        """Linear work plus the grouping pass (a sort of the cells)."""
        return sorting_cost(workload, 60)

    def run(self, x: np.ndarray, workload: Workload, privacy: Privacy | float, rng: np.random.Generator) -> Release:
        x, epsilon = check_inputs(x, workload, privacy)
        epsilon1 = self.ratio * epsilon
        epsilon2 = check_epsilon(epsilon - epsilon1, "epsilon2")
        stage1, stage2 = LaplaceMeasurement(1.0 / epsilon1), LaplaceMeasurement(1.0 / epsilon2)
        noisy = stage1.noisy(x, rng)                                         # stage 1, ε1-DP
        order = np.argsort(noisy, kind="stable")                            # by NOISY values
        cuts = ggs(np.maximum(noisy[order], 0.0), stage2.scale, self.error_floor)  # post-processing
        starts = np.concatenate(([0], np.asarray(cuts, dtype=np.int64) + 1))
        sizes = np.diff(np.append(starts, x.size))
        sums = np.add.reduceat(x[order], starts)
        noisy_sums = stage2.noisy(sums, rng)            # stage 2, one draw per group
        estimate = np.empty(x.size)
        estimate[order] = np.repeat(noisy_sums / sizes, sizes)
        # every bin is in exactly one group: each enters one released group sum
        records = (NoisyAnswers("the cells, to order and group them (stage 1)", stage1, 1.0, noisy),
                   NoisyAnswers(f"the {sizes.size} group sums (stage 2)", stage2, 1.0, noisy_sums))
        params = {"ratio": self.ratio, "error_floor": self.error_floor, "epsilon1": epsilon1, "epsilon2": epsilon2,
                  "groups": int(starts.size)}
        shown = groups_from_cuts(order, cuts[:SHOWN_GROUPS])[:SHOWN_GROUPS]  # the first groups only: display
        details = {"groups": [{"group": i, "bins": len(g), "members": ", ".join(map(str, g[:20]))
                               + (" …" if len(g) > 20 else "")} for i, g in enumerate(shown)]}
        release = Release(self.name, PureDP(epsilon), pure_epsilon(records), workload.matvec(estimate), estimate,
                          params, details, workload=workload, measurements=records)
        return stated_at(release, privacy)

    def expected_mse(self, workload: Workload, privacy: Privacy | float) -> None:
        return None
