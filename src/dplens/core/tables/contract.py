"""What every mechanism on a table of records returns, and how its error is measured.

Budgets on tables are ρ-zCDP with add/remove-one-record neighbours. A mechanism releases noisy answers to
a :class:`~dplens.core.queries.marginals.MarginalWorkload` (its marginals), and synthesisers also release records.
Laplace mechanisms spend ε = √(2ρ): pure ε-DP implies (ε²/2)-zCDP (Bun & Steinke 2016, Prop. 1.4).

>>> from dplens.core.data.domain import Domain
>>> from dplens.core.queries.marginals import MarginalWorkload
>>> w = MarginalWorkload(Domain(("a",), (2,)), (("a",),))
>>> workload_rmse(w, [np.array([3.0, 1.0])], [np.array([4.0, 1.0])])
0.7071067811865476
"""

from __future__ import annotations

import math

import numpy as np

from dplens.core.mechanisms.contract import Release
from dplens.core.privacy.definitions import ZCDP, ApproxDP, PureDP
from dplens.core.privacy.noise import LATTICE_RULE
from dplens.core.queries.marginals import MarginalWorkload
from dplens.core.validate import positive

SECURE_NOISE = (f"OpenDP's samplers (CSPRNG, never seeded): the discrete Gaussian or Laplace on {LATTICE_RULE}; "
                "synthesisers draw inside OpenDP")


INTERVAL_LEVEL = 0.95  # the level of Release.marginal_halfwidths


def check_rho(rho: ZCDP | float) -> float:
    """ρ of the privacy value a table mechanism runs at: ``ZCDP(ρ)`` or a bare ρ, a finite float > 0; an ε-DP or
    (ε, δ) value is refused by name (every table mechanism is stated in ρ-zCDP). Callers bound it further for
    releases.

    >>> check_rho(ZCDP(0.5)), check_rho(0.25)
    (0.5, 0.25)
    >>> check_rho(PureDP(1.0))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: table mechanisms run at a rho-zCDP value, ZCDP(rho) or a number rho > 0; got PureDP(epsilon=1.0) ...
    """
    if isinstance(rho, ZCDP):
        return rho.rho
    if isinstance(rho, PureDP | ApproxDP):
        raise ValueError(f"table mechanisms run at a rho-zCDP value, ZCDP(rho) or a number rho > 0; got {rho!r} "
                         "(convert it: epsilon-DP implies (epsilon^2/2)-zCDP)")
    return positive("rho", rho)


def marginal_release(mechanism: str, rho: float, privacy_loss: float, workload: MarginalWorkload,
                     marginals: list[np.ndarray], *, stds: list[float] | None = None, records: np.ndarray | None = None,
                     params: dict | None = None, halfwidths: list[np.ndarray] | None = None,
                     measurements: tuple = ()) -> Release:
    """The release of a mechanism on a table: a ``Release`` at ρ-zCDP whose answers are the workload's queries
    answered from the estimated ``marginals`` (in ``MarginalWorkload.matvec``'s order), with the per-marginal
    estimates, their per-cell ``stds`` or exact ``halfwidths`` at ``INTERVAL_LEVEL``, and synthetic ``records``.

    ``privacy_loss`` is the ρ of the noise actually drawn (≤ ``rho``), the composition of ``measurements`` (the
    records of what was measured); ``params`` says what was measured and how (never the data).

    >>> from dplens.core.data.domain import Domain
    >>> w = MarginalWorkload(Domain(("a",), (2,)), (("a",),))
    >>> r = marginal_release("gaussian-marginals", 0.5, 0.5, w, [np.array([3.0, 1.0])], stds=[1.0])
    >>> r.budget, r.answers.tolist(), r.marginal_stds
    (ZCDP(rho=0.5), [3.0, 1.0], [1.0])
    """
    marginals = [np.asarray(m, dtype=float) for m in marginals]
    answers = (np.concatenate([np.ravel(workload.answer_queries(i, m)) for i, m in enumerate(marginals)])
               if marginals else np.zeros(0))
    return Release(mechanism, ZCDP(float(rho)), float(privacy_loss), answers, None, dict(params or {}),
                   workload=workload, marginal_estimates=marginals, marginal_stds=stds, marginal_halfwidths=halfwidths,
                   records=records, measurements=tuple(measurements))


class PlannedError:
    """The error of a data-independent plan from the variance of one query of each marginal (``query_variance``):
    the unweighted mean squared error per query (a marginal cell, or a range) and its root."""

    workload: MarginalWorkload

    def query_variance(self, index: int) -> float:
        raise NotImplementedError

    @property
    def expected_mse(self) -> float:
        """Unweighted mean squared error per query (a marginal cell, or a range)."""
        return sum(self.query_variance(i) for i in range(len(self.workload.marginals))) / self.workload.queries

    @property
    def expected_rmse(self) -> float:
        return math.sqrt(self.expected_mse)


def workload_rmse(workload: MarginalWorkload, truth: list[np.ndarray], estimates: list[np.ndarray]) -> float:
    """Root mean squared error per query over the whole workload (unweighted; the RMSE of the papers).

    A query is a marginal cell, or a range of a range marginal (answered from the estimated cells).
    """
    squared = sum(float(np.sum((workload.answer_queries(i, e) - workload.answer_queries(i, t)) ** 2))
                  for i, (t, e) in enumerate(zip(truth, estimates, strict=True)))
    return math.sqrt(squared / workload.queries)
