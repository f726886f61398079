"""Synthetic records through OpenDP's ``opendp.extras.mbi`` (private-pgm): MST, not reimplemented here.

OpenDP 0.16 splits a zCDP budget in floats; on 14 attributes its MST can overshoot its own share by an ulp
("insufficient budget for query: 0.0499… > 0.0499…", spec tables.md). dplens replays that split and hands
OpenDP the largest float ρ′ ≤ ρ it accepts (:func:`mst_handed_rho`); the full ρ is charged.

>>> mst_budget_accepted(0.5, 0.5, 14)
True
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from core.queries.marginals import MarginalWorkload
from core.tables.contract import TableRelease, check_rho

MAX_RHO_STEPS = 4096  # float steps below ρ tried for a budget split OpenDP's rounding accepts


def _prior(x: float) -> float:
    return float(np.nextafter(x, -np.inf))


def _opendp():
    import opendp.prelude as dp

    dp.enable_features("contrib")
    return dp


def mst_budget_accepted(rho: float, measure_split: float, attributes: int) -> bool:
    """Whether OpenDP 0.16's MST accepts its own budget split at ``rho`` (data-independent).

    Replays ``make_contingency_table``'s split (one-way half, then ``prior(prior(·))``) and MST's
    (``measure_split``, then ``attributes − 1`` equal selection rounds) and asks OpenDP's own adaptive
    composition for the selection total, the sum that overshoots by an ulp in the known trap.

    >>> mst_budget_accepted(1.0, 0.9, 14), mst_budget_accepted(0.5, 0.5, 14)
    (False, True)
    """
    dp = _opendp()
    d_multiway = _prior(_prior(rho - rho * 0.5))
    d_measure = d_multiway * measure_split
    d_select = _prior(_prior(d_multiway - d_measure))
    rounds = max(attributes - 1, 1)
    each = _prior(d_select / rounds)
    composed = dp.c.make_adaptive_composition(
        dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.symmetric_distance(),
        dp.zero_concentrated_divergence(), d_in=1, d_mids=[each] * rounds).map(1)
    return composed <= d_select and d_select + d_measure <= d_multiway


def mst_handed_rho(rho: float, measure_split: float, attributes: int) -> float:
    """The largest float ρ' ≤ ρ (at most MAX_RHO_STEPS steps down) whose split OpenDP accepts; ρ is charged.

    >>> r = mst_handed_rho(1.0, 0.9, 14)
    >>> r < 1.0 and 1.0 - r < 1e-12
    True
    """
    handed = float(rho)
    for _ in range(MAX_RHO_STEPS):
        if mst_budget_accepted(handed, measure_split, attributes):
            return handed
        handed = _prior(handed)
    raise ValueError(f"OpenDP's MST refuses its own budget split at rho={rho:g}, measure_split={measure_split:g} "
                     f"for {attributes} attributes (float rounding); try another measure_split")


@dataclass(frozen=True)
class MST:
    """MST synthetic data (McKenna, Sheldon, Miklau 2021) through ``opendp.extras.mbi.MST``, ρ-zCDP.

    ``measure_split``: share of the multi-way budget spent measuring the selected 2-way marginals (OpenDP's
    default 0.9); ``iters``: mirror-descent iterations of private-pgm's estimator (1000 is OpenDP's default).
    Every attribute's keys are the declared codes 0..size−1, so no budget goes to discovering keys.
    """

    measure_split: float = 0.9
    iters: int = 1000
    name = "mst"
    data_dependent = True
    synthesizes = True

    def __post_init__(self) -> None:
        if isinstance(self.measure_split, bool) or not (isinstance(self.measure_split, float | int) and 0 < self.measure_split < 1):
            raise ValueError(f"measure_split must be in (0, 1), got {self.measure_split!r}")
        if isinstance(self.iters, bool) or not isinstance(self.iters, int) or not 1 <= self.iters <= 100_000:
            raise ValueError(f"iters must be an integer from 1 to 100000, got {self.iters!r}")

    def expected_rmse(self, workload: MarginalWorkload, rho: float) -> None:
        """Data-dependent: no closed form; measure it (core.tables.compare)."""
        return None

    def run(self, workload: MarginalWorkload, records: np.ndarray, rho: float, rng: np.random.Generator | None = None,
            *, rows: int | None = None) -> TableRelease:
        """Fit MST at ``rho`` and draw ``rows`` synthetic records (default: as many as OpenDP's estimate).

        OpenDP draws its own noise from a CSPRNG; ``rng`` is accepted for the common contract and unused.
        The workload's marginals are answered from the synthetic records (post-processing).
        """
        rho = check_rho(rho)
        domain = workload.domain
        if len(domain.names) < 2:
            raise ValueError(f"MST needs at least 2 attributes, got {len(domain.names)}")
        import polars as pl

        dp = _opendp()
        from mbi.estimation import mirror_descent

        iters = self.iters

        def estimator(mbi_domain, loss_fn, *, potentials=None):
            return mirror_descent(mbi_domain, loss_fn, potentials=potentials, iters=iters)

        handed = mst_handed_rho(float(rho), self.measure_split, len(domain.names))
        frame = pl.DataFrame({n: records[:, i].astype(np.int64) for i, n in enumerate(domain.names)})
        context = dp.Context.compositor(data=frame.lazy(), privacy_unit=dp.unit_of(contributions=1),
                                        privacy_loss=dp.loss_of(rho=handed), split_evenly_over=1)
        algorithm = dp.mbi.MST(measure_split=float(self.measure_split), estimator=estimator)
        query = context.query().contingency_table(
            keys={n: list(range(s)) for n, s in zip(domain.names, domain.sizes, strict=True)}, algorithm=algorithm)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # OpenDP's "rho is typically <= 0.25" advice is not an error
            try:
                table = query.release()
            except Exception as error:  # OpenDP raises OpenDPException/ValueError; one line for the user
                raise ValueError(f"OpenDP refused MST at rho={rho:g} (handed {handed!r}): "
                                 f"{' '.join(str(error).split())[:160]}") from None
            synth = table.synthesize(rows)
        # OpenDP adds a null key to every attribute (for values outside the keys); its true count is 0 here, so
        # synthetic rows that land on it are dropped (post-processing) and counted in the metadata.
        complete = synth.drop_nulls(subset=list(domain.names))
        coded = np.column_stack([complete[n].to_numpy().astype(np.int64) for n in domain.names])
        metadata = {"mechanism": "mst (opendp.extras.mbi.MST, OpenDP " + _opendp_version() + ")",
                    "privacy": "rho-zCDP, add/remove one record", "rho": float(rho), "rho_handed": handed,
                    "oneway_split": 0.5, "measure_split": float(self.measure_split), "iters": iters,
                    "rows": len(coded), "null_rows_dropped": synth.height - complete.height}
        return TableRelease("mst", rho, rho, workload, workload.answer(coded), None, coded, metadata)


def _opendp_version() -> str:
    from importlib.metadata import version

    return version("opendp")
