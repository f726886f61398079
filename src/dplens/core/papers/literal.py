"""The papers' literal readings that break differential privacy, and audits that show it.

Every class here is NOT DIFFERENTIALLY PRIVATE. They exist only to demonstrate the errata: they are
never registered in ``dplens.core.mechanisms.MECHANISMS``, never offered on the Release or Compare pages and
never exported; their names and labels say so. ``DEMOS`` pairs each literal variant with its corrected
twin on a small neighbouring pair, and ``run_demo`` audits both with ``dplens.core.papers.audit``: the literal one
shows a measured privacy loss above the claimed ε, the corrected one stays below it.

>>> sorted(DEMOS)  # doctest: +NORMALIZE_WHITESPACE
['om-normalisation', 'sreb-gca-per-bin', 'sreb-gca-true-order', 'wda-split-on-data', 'xiao-fraction-noise',
 'xiao-max', 'zhao-present-names']
>>> all(NOT_DP in demo.literal.name for demo in DEMOS.values())
True
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dplens.core.mechanisms import (
    MECHANISMS,
    Release,
    check_inputs,
    exponential_mechanism,
    laplace_privacy_loss,
)
from dplens.core.mechanisms.om import OM, om_decompose
from dplens.core.mechanisms.sreb_gca import ggs, groups_from_cuts
from dplens.core.mechanisms.wda import WDA, leaves_for
from dplens.core.mechanisms.xiao import (
    CellRelease,
    literal_max_distribution_not_dp,
    max_log_ratio,
    max_query_distribution,
    max_query_scores,
)
from dplens.core.papers.audit import PairAudit, audit_neighbours
from dplens.core.privacy.definitions import PureDP
from dplens.core.queries.workloads import Explicit, Prefix, Workload, dense
from dplens.core.queries.workloads import Identity as IdentityWorkload

NOT_DP = "NOT DIFFERENTIALLY PRIVATE"


def labelled(text: str) -> str:
    """``text`` with the NOT DIFFERENTIALLY PRIVATE label, for every literal reading shown or written.

    >>> labelled("literal 0.137")
    'literal 0.137 [NOT DIFFERENTIALLY PRIVATE]'
    """
    return text if NOT_DP in text else f"{text} [{NOT_DP}]"


# ----------------------------------------------------------------------------- literal variants (NOT DP)
@dataclass(frozen=True)
class WdaSplitOnData(WDA):
    """WDA whose first split is around the data's most frequent item (Li et al., Algorithm 1 line 3): NOT DP."""

    hot_item: int = -1
    name: str = f"wda literal: split on the data's hot item — {NOT_DP}"

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
        cost = 2 * sum(len(leaf.rows) * leaf.sensitivity for leaf in split)  # ε/2 to each half, as in Li et al.
        return split if cost < m * sensitivity else whole


@dataclass(frozen=True)
class LiteralSrebGca:
    """SReB_GCA with the paper's literal steps (Chen et al., Algorithm 1 lines 5 and 10), one at a time: NOT DP."""

    per_bin_noise: bool = False      # line 10: a fresh Lap(λ2)/|C| for every bin (loss |C|·ε2)
    true_regrouping: bool = False    # line 5: cut the TRUE sorted order at the noisy cut positions
    ratio: float = 0.5
    name: str = f"sreb-gca literal — {NOT_DP}"
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
        return Release(self.name, PureDP(epsilon), math.nan, workload.matvec(estimate), estimate, workload=workload)


@dataclass(frozen=True)
class FractionNoise:
    """Xiao et al. §5.2 literal: fractions c_i/|D| + Lap(1/(α|D|)) with the private |D|.

    One record changes |D|, so every fraction moves: the loss is up to 2α, not α.
    """

    name: str = f"xiao literal: noise on fractions c/|D| — {NOT_DP}"
    data_dependent: bool = False

    def run(self, x, workload, epsilon, rng):
        x, epsilon = check_inputs(x, workload, epsilon)
        total = max(x.sum(), 1.0)
        estimate = x / total + rng.laplace(scale=1.0 / (epsilon * total), size=x.size)
        return Release(self.name, PureDP(epsilon), math.nan, workload.matvec(estimate), estimate, workload=workload)


@dataclass(frozen=True)
class PresentNamesOnly:
    """Zhao's printed counting code, literally: Laplace noise on the counts of the names present in the data only.

    The code counts names with a ``Counter``, so a name with no record is never released: which names appear is
    the data's support, released without noise (Zhao's listing; Dwork & Roth's noisy counts iterate over the
    public domain, zeros included). A name that is not released is written as ``ABSENT`` so that an audit sees it.

    >>> release = PresentNamesOnly().run(np.array([0.0, 2.0]), IdentityWorkload(2), 1.0, np.random.default_rng(0))
    >>> release.estimate[0] == PresentNamesOnly.ABSENT
    np.True_
    """

    ABSENT = -1e6
    name: str = f"zhao literal: noise only on the names present in the data — {NOT_DP}"
    data_dependent: bool = True

    def run(self, x, workload, epsilon, rng):
        x, epsilon = check_inputs(x, workload, epsilon)
        estimate = np.where(x > 0, x + rng.laplace(scale=1.0 / epsilon, size=x.size), self.ABSENT)
        return Release(self.name, PureDP(epsilon), math.inf, estimate.copy(), estimate, workload=workload)


def _records(x: np.ndarray) -> np.ndarray:
    """A histogram's records as values 1..n, in sorted order."""
    return np.repeat(np.arange(1, x.size + 1), np.ravel(x).astype(int))


@dataclass(frozen=True)
class LiteralXiaoMax:
    """Xiao et al.'s max-query probability perturbation (§4.1.2, §7) on the histogram's records: NOT DP."""

    width: int = 1
    name: str = f"xiao literal max query — {NOT_DP}"
    data_dependent: bool = True

    def run(self, x, workload, epsilon, rng):
        x, epsilon = check_inputs(x, workload, epsilon)
        data = _records(x)
        p = (literal_max_distribution_not_dp(data, x.size, self.width, epsilon) if data.size
             else np.full(x.size, 1.0 / x.size))  # no records: the prior is left unperturbed
        sample = 1 + int(np.searchsorted(np.cumsum(p), rng.random() * p.sum(), side="right"))
        return Release(self.name, PureDP(epsilon), math.nan, np.array([float(min(sample, x.size))]), None,
                       workload=workload)


@dataclass(frozen=True)
class EmMax:
    """The corrected max query: the α-DP exponential mechanism on the records' top order statistic.

    It replaces Xiao et al.'s probability perturbation (§4.1.2); its score needs neither n nor min(D).
    """

    k: int = 1
    name: str = "xiao max query (exponential mechanism, α-DP)"
    data_dependent: bool = True

    def run(self, x, workload, epsilon, rng):
        x, epsilon = check_inputs(x, workload, epsilon)
        data = _records(x)
        scores = (max_query_scores(data, x.size, self.k) if data.size else np.full(x.size, -float(self.k)))
        sample = exponential_mechanism(scores.astype(float), epsilon, 1.0, rng) + 1
        return Release(self.name, PureDP(epsilon), epsilon, np.array([float(sample)]), None, workload=workload)


@dataclass(frozen=True)
class LiteralOm:
    """OM with per-query normalisation (max |entry| = 1) and S̃ assumed to be 1: NOT DP.

    Huang et al.'s Algorithm 2 line 17 does not say how the queries are normalised; their Example 1 takes
    S(Q̃) = 1, which holds only for groups of one query or with normalisation per group.

    On W = [[1,1],[1,−1],[2,0]] the group {[1,1],[1,−1]} has column sums 2, so the real loss is 2ε.

    >>> w = Explicit(np.array([[1.0, 1], [1, -1], [2, 0]]))
    >>> LiteralOm().run(np.zeros(2), w, 1.0, np.random.default_rng(0)).privacy_loss
    2.0
    """

    name: str = f"om literal: per-query normalisation, S̃ assumed 1 — {NOT_DP}"
    data_dependent: bool = False

    def run(self, x, workload, epsilon, rng):
        x, epsilon = check_inputs(x, workload, epsilon)
        f = om_decompose(workload)
        reduced = f.reduced.toarray()
        scale_rows = np.abs(reduced).max(axis=1)          # each query normalised on its own
        reduced, mixing = reduced / scale_rows[:, None], np.asarray(f.mixing) * scale_rows[None, :]
        noisy = reduced @ x + rng.laplace(scale=1.0 / epsilon, size=reduced.shape[0])  # "S(Q̃) = 1"
        loss = laplace_privacy_loss([(np.abs(reduced).sum(axis=0), 1.0 / epsilon)])  # what it really costs
        return Release(self.name, PureDP(epsilon), loss, mixing @ noisy, None, workload=workload)


# ----------------------------------------------------------------------------- demos
def wda_synthetic_workload() -> Explicit:
    """A synthetic 12 × 13 workload that WDA splits once: rows 0–5 = e_0 + e_{7+i}, rows 6–11 = e_{1+i}; hot column 0.

    >>> wda_synthetic_workload().shape
    (12, 13)
    """
    matrix = np.zeros((12, 13))
    for i in range(6):
        matrix[i, 0] = matrix[i, 7 + i] = 1
        matrix[6 + i, 1 + i] = 1
    return Explicit(matrix, label="WDA 12×13 synthetic (the paper's example shape)")


@dataclass(frozen=True)
class Demo:
    """A literal variant, its corrected twin, and the small neighbouring pair that exposes the literal one."""

    paper: str                   # reproduction name: wda, om, sreb-gca, xiao
    erratum: str
    literal: Any  # a mechanism or a literal variant (which has no expected_mse)
    corrected: Any
    workload: Workload
    x: tuple
    bin_index: int
    sign: int                    # +1: the neighbour has one more record in bin_index; −1: one fewer
    epsilon: float = 1.0
    exact: Callable[[], list[tuple[str, float, float]]] | None = None  # (what, exact loss, claimed ε)
    statistic: Callable[[Release], np.ndarray] | None = None  # an attacker's extra statistic of each release
    watched: str = ""            # that statistic in words

    @property
    def pair(self) -> str:
        action = "adds" if self.sign > 0 else "removes"
        return f"x = {_short(self.x)}; x′ {action} one record in bin {self.bin_index}"


def _hadamard(order: int) -> np.ndarray:
    """The 2^order × 2^order Sylvester–Hadamard matrix: one atom whose rows are all independent."""
    matrix = np.ones((1, 1))
    for _ in range(order):
        matrix = np.block([[matrix, matrix], [matrix, -matrix]])
    return matrix


def _short(x: tuple) -> str:
    return f"{len(x)} empty bins" if not any(x) else f"({', '.join(f'{v:g}' for v in x)})"


def _xiao_max_exact() -> list[tuple[str, float, float]]:
    """Xiao et al.'s max query (§4.1.2) read literally: its exact loss on two counterexamples (β = 10, w = 1, α = 0.5).

    In the first the extra record is the new minimum min(D); in the second it is not processed last.
    """
    first = max_log_ratio(literal_max_distribution_not_dp([3, 3, 3], 10, 1, 0.5),
                          literal_max_distribution_not_dp([1, 3, 3, 3], 10, 1, 0.5))
    second = max_log_ratio(literal_max_distribution_not_dp([6, 6, 9], 10, 1, 0.5, lower="one"),
                           literal_max_distribution_not_dp([7, 6, 6, 9], 10, 1, 0.5, lower="one"))
    em = max_log_ratio(max_query_distribution([3, 3, 3], 10, 0.5), max_query_distribution([1, 3, 3, 3], 10, 0.5))
    return [("literal, D = (3,3,3) vs (1,3,3,3), lower end min(D), β = 10, w = 1 (loss 3α)", first, 0.5),
            ("literal, D = (6,6,9) vs (7,6,6,9), lower end 1, β = 10, w = 1", second, 0.5),
            ("exponential mechanism, D = (3,3,3) vs (1,3,3,3), β = 10", em, 0.5)]


def _om_exact() -> list[tuple[str, float, float]]:
    w = Explicit(np.array([[1.0, 1], [1, -1], [2, 0]]))
    rng = np.random.default_rng(0)
    return [("literal, W = [[1,1],[1,−1],[2,0]], ε = 1 (computed from W̃)",
             LiteralOm().run(np.zeros(2), w, 1.0, rng).privacy_loss, 1.0),
            ("corrected OM, same W (computed from W̃)", OM().run(np.zeros(2), w, 1.0, rng).privacy_loss, 1.0)]


def _same_group(first: int, last: int) -> Callable[[Release], np.ndarray]:
    """The attacker's statistic "bins ``first`` and ``last`` were released with one value" (one group)."""
    def statistic(release: Release) -> np.ndarray:
        return np.array([float(release.estimate[first] == release.estimate[last])])  # type: ignore[index]  # histogram mechanisms: an estimate
    return statistic


def _present_names_exact() -> list[tuple[str, float, float]]:
    """Without the record name 0 is never released, with it always: the probability ratio is unbounded."""
    return [("literal: P[name 0 released] is 0 without its one record and 1 with it", math.inf, 1.0),
            ("noisy counts over the public domain (zeros included): Lap(1/ε) on one count of sensitivity 1",
             laplace_privacy_loss([(np.ones(1), 1.0)]), 1.0)]


def _sreb_exact() -> list[tuple[str, float, float]]:
    """Chen et al.'s stage 2 (Algorithm 1 line 10) for one group of 10 bins at ε2 = 0.5: its exact loss.

    The loss of independent Laplace blocks y = A x + Lap(b) is max over bins j of Σ ||A e_j||_1 / b.
    """
    size, scale = 10, 1 / 0.5
    # literal: |C| released means, each column of A (|C| entries 1/|C|) has L1 norm 1, noise λ2/|C| each
    literal = laplace_privacy_loss([(np.ones(size), scale / size)])
    corrected = laplace_privacy_loss([(np.ones(size), scale)])  # one draw Lap(λ2) on the group sum
    return [("literal stage 2, one group of 10 bins: a fresh Lap(λ2/|C|) per bin (loss |C|·ε2)", literal, 0.5),
            ("corrected stage 2: one draw Lap(λ2) on the group sum", corrected, 0.5)]


DEMOS: dict[str, Demo] = {
    "wda-split-on-data": Demo(
        "wda", "Li et al., Algorithm 1 line 3: the workload is split around the most frequent item of the data x, "
        "so the division itself depends on the data.",
        WdaSplitOnData(), WDA(budget="equal"), wda_synthetic_workload(),
        (20, 0, 1, 20, 0, 2, 1, 0, 5, 3, 1, 0, 2), 0, -1),
    "om-normalisation": Demo(
        "om", "Huang et al., Algorithm 2 line 17 and Example 1: each new query is normalised on its own and their "
        "sensitivity is assumed to be 1; a group of several queries can have a column sum above 1, so the noise "
        "is too small.",
        LiteralOm(), OM(), Explicit(_hadamard(3), label="8 × 8 Hadamard rows (one atom, τ = 8)"),
        (3, 2, 0, 1, 0, 0, 4, 1), 0, 1, exact=_om_exact),
    "sreb-gca-per-bin": Demo(
        "sreb-gca", "Chen et al., Algorithm 1 line 10: every bin of a group gets its own fresh noise Lap(λ2)/|C|; one "
        "record moves all |C| values of its group, so it costs |C|·ε2 instead of ε2.",
        LiteralSrebGca(per_bin_noise=True, name=f"sreb-gca literal: per-bin noise — {NOT_DP}"),
        MECHANISMS["sreb-gca"], IdentityWorkload(256), (0,) * 256, 0, 1, exact=_sreb_exact),
    "sreb-gca-true-order": Demo(
        "sreb-gca", "Chen et al., Algorithm 1 line 5: the TRUE counts are sorted and that order is cut at the "
        "positions found on the noisy counts, so the groups reveal the true order.",
        LiteralSrebGca(true_regrouping=True, name=f"sreb-gca literal: groups cut from the true order — {NOT_DP}"),
        MECHANISMS["sreb-gca"], IdentityWorkload(8), (2, 1, 1, 1, 1, 1, 1, 1), 0, -1,
        statistic=_same_group(0, 7), watched="bins 0 and 7 released with one value (in one group)"),
    "xiao-fraction-noise": Demo(
        "xiao", "Xiao et al., §5.2: noise Lap(1/(α|D|)) on the fractions c/|D|, with the private total |D|; one record "
        "changes |D| and so every fraction, a loss of up to 2α.",
        FractionNoise(), CellRelease(clip=False), Prefix(10), (0, 0, 3, 0, 0, 0, 0, 0, 0, 0), 2, -1),
    "xiao-max": Demo(
        "xiao", "Xiao et al., §4.1.2 and §7: the max query's probability perturbation depends on the data's "
        "minimum min(D) and on the order in which the records are processed.",
        LiteralXiaoMax(), EmMax(), Prefix(10), (0, 0, 3, 0, 0, 0, 0, 0, 0, 0), 0, 1, exact=_xiao_max_exact),
    "zhao-present-names": Demo(
        "zhao", "printed code: noise only on the names a Counter finds in the data (zero counts never released).",
        PresentNamesOnly(), MECHANISMS["identity"], IdentityWorkload(10), (0,) * 10, 0, 1,
        exact=_present_names_exact),
}


def run_demo(key: str, *, runs: int = 4000, seed: int = 2026, confidence: float = 0.999) -> list[dict[str, object]]:
    """Audit the literal variant and its corrected twin on the demo's neighbouring pair; rows for a table.

    Each row: variant, claimed ε, measured lower bound on the loss (clipped at 0, with the raw bound in the
    evidence when it was negative), the event, and the verdict. Then the exact counterexamples, for the demos that have
    them.

    >>> rows = run_demo("xiao-max", runs=400)
    >>> [(row["kind"], row["measured loss ≥"]) for row in rows[2:4]]
    [('literal', 1.5), ('literal', 0.9119)]
    """
    if key not in DEMOS:
        raise ValueError(f"demo must be one of {', '.join(DEMOS)}, got {key!r}")
    demo = DEMOS[key]
    x = np.array(demo.x, dtype=float)
    rows = []
    for kind, mechanism in (("literal", demo.literal), ("corrected", demo.corrected)):
        result: PairAudit = audit_neighbours(mechanism, x, demo.workload, demo.epsilon, demo.bin_index, demo.sign,
                                             runs=runs, confidence=confidence, seed=(seed,),
                                             statistic=demo.statistic)
        # a privacy loss is never negative: a bound below 0 (sampling noise) says nothing and is shown as 0
        note = f"; raw bound {result.bound:.3f} < 0, shown as 0" if result.bound < 0 else ""
        watched = f" (the last value is the attacker's statistic: {demo.watched})" if demo.statistic else ""
        rows.append({"variant": labelled(mechanism.name) if kind == "literal" else mechanism.name,
                     "kind": kind, "claimed ε": demo.epsilon, "measured loss ≥": round(max(result.bound, 0.0), 3),
                     "how": "audit", "evidence": f"{demo.pair}; {result.event}{watched}; {runs} runs a side, "
                                                 f"{confidence:.1%} confidence{note}",
                     "verdict": (f"loss above ε — {NOT_DP}" if result.exceeds else "within ε (no violation found)")})
    for what, loss, claimed in (demo.exact() if demo.exact else []):
        literal = what.startswith("literal")
        rows.append({"variant": labelled(what) if literal else what, "kind": "literal" if literal else "corrected",
                     "claimed ε": claimed, "measured loss ≥": round(loss, 4), "how": "exact (counterexample)",
                     "evidence": what,
                     "verdict": f"loss above ε — {NOT_DP}" if loss > claimed + 1e-9 else "within ε"})
    return rows
