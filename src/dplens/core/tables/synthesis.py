"""Synthetic records through OpenDP's ``opendp.extras.mbi`` (private-pgm): MST, AIM and PGM-estimated identity,
not reimplemented here.

OpenDP 0.16 splits a zCDP budget in floats; on 14 attributes its MST can overshoot its own share by an ulp
("insufficient budget for query: 0.0499… > 0.0499…"; seen with OpenDP 0.16.0 on Adult). dplens replays that split and
hands OpenDP the largest float ρ′ ≤ ρ it accepts (:func:`mst_handed_rho`); the full ρ is charged.

>>> mst_budget_accepted(0.5, 0.5, 14)
True
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dplens.core.extras import require
from dplens.core.mechanisms.contract import RATIO_RANGE, Range, Release, setting
from dplens.core.mechanisms.measurement import (
    GaussianMeasurement,
    LaplaceMeasurement,
    MeasurementRecord,
    NoisyAnswers,
    ZCDPStep,
    composed_loss,
)
from dplens.core.privacy.definitions import ZCDP
from dplens.core.queries.marginals import MarginalWorkload
from dplens.core.tables.contract import check_rho, marginal_release
from dplens.core.tables.progress import Reporter, RunPlan, Stage
from dplens.core.tables.sampler import synthesize_table
from dplens.core.validate import fraction, integer

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


QUIET_LOGGERS = ("opendp", "mbi", "jax")  # their records below ERROR are dropped while a synthesiser runs


@contextlib.contextmanager
def quiet_synthesis():
    """Nothing from a synthesiser run reaches the server log: Python warnings (OpenDP, JAX, private-pgm) are
    ignored, and OpenDP's, private-pgm's and JAX's loggers (their children too) drop records below ERROR while it
    runs: OpenDP logs "rho should be less than or equal to 0.5" at WARNING on every run above it, which the page
    says once instead (:func:`rho_advice`). Worker processes run this same code, so it holds there too."""
    loggers = [logging.getLogger(name) for name in QUIET_LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(max(logger.getEffectiveLevel(), logging.ERROR))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


def rho_advice(rhos) -> str | None:
    """OpenDP's advice on large ρ (it logs it on every run; the page shows it once), or None when no ρ is above
    0.25."""
    top = max((float(r) for r in rhos), default=0.0)
    if top > 0.5:
        return (f"OpenDP advises ρ ≤ 0.5 (typically ≤ 0.25); ρ = {top:g} is a weak guarantee, fine for comparing "
                "methods, rarely for a release.")
    if top > 0.25:
        return f"OpenDP notes that ρ is typically ≤ 0.25; ρ = {top:g} is above that."
    return None


SAMPLING = "sampling the synthetic records"  # every synthesiser's last step (dplens.core.tables.progress)
ESTIMATOR_ITERS = 1000  # private-pgm's mirror-descent iterations (OpenDP's default) for MST and identity-pgm
AIM_ROUND_ITERS = ESTIMATOR_ITERS  # per AIM round, warm-started (the authors' aim.py: max_iters = 1000 per round;
#                                    300 left the released model short of convergence: TVD rose with ρ)
AIM_MAX_SIZE = 20.0     # MB of the largest model AIM may select (OpenDP: 80); bounds its run time on Adult
AIM_ROUNDS = 50         # AIM's initial step is ρ/rounds (OpenDP: 16 × attributes); fewer rounds, fewer fits
ITERS_RANGE = Range(1, 100_000, integer=True)  # mirror-descent iterations a setting may ask for


def gaussian_rho(stddevs) -> float:
    """ρ-zCDP of OpenDP's Gaussian marginals from the σ each one drew: Σ Δ²/(2σ²), Δ = 1.

    With one record per unit (``contributions=1``) a record moves one cell of a marginal by 1, so each
    measurement's L2 sensitivity is 1; OpenDP's discrete Gaussian at scale σ is then Δ²/(2σ²)-zCDP (Canonne,
    Kamath, Steinke 2020, Thm. 14), and measurements compose by addition (Bun & Steinke 2016, Lemma 2.3).

    >>> gaussian_rho([1.0, 2.0])
    0.625
    """
    return math.fsum(0.5 / float(s) ** 2 for s in stddevs)


def _marginal_record(measurement) -> NoisyAnswers:
    """One of OpenDP's noisy marginals (an mbi ``LinearMeasurement``) as a record: its clique, σ and values."""
    clique = "+".join(map(str, getattr(measurement, "clique", ()))) or "a marginal"
    values = getattr(measurement, "noisy_measurement", None)
    return NoisyAnswers(f"the {clique} marginal", GaussianMeasurement(float(measurement.stddev)), 1.0,
                        None if values is None else np.asarray(values, dtype=float))


def laplace_epsilon(stddevs) -> float:
    """Pure ε of OpenDP's Laplace marginals from their standard deviations: Σ Δ/b, b = stddev/√2, Δ = 1.

    >>> round(laplace_epsilon([math.sqrt(2), math.sqrt(2)]), 12)
    2.0
    """
    return math.fsum(math.sqrt(2) / float(s) for s in stddevs)


def phases(table) -> tuple[list, list]:
    """OpenDP's measurements of a fitted ``ContingencyTable``: (the one-way phase, the rest), each a list of
    ``mbi.LinearMeasurement``.

    The one-way phase measures each attribute once before any selection, so it is the first measurement of each
    1-way clique; every later measurement (AIM may measure a 1-way clique again) belongs to a selection step.
    """
    groups = table.marginals.by_clique
    oneway = [group[0] for clique, group in groups.items() if len(clique) == 1]
    rest = [m for clique, group in groups.items() for i, m in enumerate(group) if len(clique) > 1 or i > 0]
    return oneway, rest


@dataclass(frozen=True)
class _OpenDPTable:
    """One path for every private-pgm algorithm run by ``opendp.extras.mbi`` (subclasses say which)."""

    data_dependent = True
    synthesizes = True

    def expected_mse(self, workload: MarginalWorkload, rho: ZCDP | float) -> None:
        """Data-dependent (the PGM fit): no closed form; measure it (dplens.core.tables.compare)."""
        return None

    def handed_rho(self, rho: float, attributes: int) -> float:
        return rho

    def privacy_loss_of(self, dp, rho: float):
        return dp.loss_of(rho=rho)

    def drawn_loss(self, table) -> float:
        """ρ spent by the noise OpenDP drew: every measurement it returns (σ read from each), plus the selections.

        OpenDP returns no scale for its noisy-max selections. Each selection step (MST's tree, one AIM round)
        is built by OpenDP at 1 − ``measure_split`` of the step and the step's measurement at ``measure_split``
        (``make_marginals`` of ``opendp.extras.mbi.MST``, ``_make_aim_marginal`` of AIM), and OpenDP's binary
        search sets each scale to spend its share; so a step spends its measured ρ / ``measure_split``.
        """
        oneway, steps = phases(table)
        return gaussian_rho(m.stddev for m in oneway) + gaussian_rho(m.stddev for m in steps) / self.measure_split  # type: ignore[attr-defined]  # set by each subclass

    def drawn_records(self, table) -> tuple:
        """What OpenDP measured, as records: each marginal's noisy counts at its σ (L2 sensitivity 1) and, when the
        algorithm selects, one step for its selections at the ρ ``drawn_loss`` assigns them."""
        oneway, steps = phases(table)
        records: list[MeasurementRecord] = [_marginal_record(m) for m in [*oneway, *steps]]
        split = getattr(self, "measure_split", 1.0)
        selections = gaussian_rho(m.stddev for m in steps) * (1.0 / split - 1.0)
        if selections > 0:
            records.append(ZCDPStep(f"the {self.name} selections (OpenDP's noisy max)", selections))  # type: ignore[attr-defined]  # set by each subclass
        return tuple(records)

    def extra_metadata(self, workload: MarginalWorkload) -> dict:
        return {}

    def fitted_table(self, workload: MarginalWorkload, records: np.ndarray, handed: float, estimator):
        """OpenDP's fitted ``ContingencyTable`` of ``records`` at the handed budget, fitted by ``estimator``.

        Every attribute's keys are the declared codes 0..size−1, so no budget goes to discovering keys.
        """
        import polars as pl

        dp = _opendp()
        with quiet_synthesis():
            return self.final_fit(self._release(dp, pl, workload, records, handed, estimator), estimator)

    def final_fit(self, table, estimator):
        """The released table: OpenDP's as it is (MST and identity-pgm fit every measurement last already)."""
        return table

    def _release(self, dp, pl, workload: MarginalWorkload, records: np.ndarray, handed: float, estimator):
        domain = workload.domain
        frame = pl.DataFrame({n: records[:, i].astype(np.int64) for i, n in enumerate(domain.names)})
        context = dp.Context.compositor(data=frame.lazy(), privacy_unit=dp.unit_of(contributions=1),
                                        privacy_loss=self.privacy_loss_of(dp, handed), split_evenly_over=1)
        query = context.query().contingency_table(
            keys={n: list(range(s)) for n, s in zip(domain.names, domain.sizes, strict=True)},
            algorithm=self.algorithm(dp, workload, estimator))  # type: ignore[attr-defined]  # set by each subclass
        return query.release()

    def run(self, records: np.ndarray, workload: MarginalWorkload, rho: ZCDP | float,
            rng: np.random.Generator | None = None, *, rows: int | None = None,
            progress: Callable[[float], None] | None = None) -> Release:
        """Fit the model at ``rho`` and draw ``rows`` synthetic records (default: as many as OpenDP's estimate).

        OpenDP draws its own noise from a CSPRNG; ``rng`` draws the synthetic records from the fitted model
        (:func:`dplens.core.tables.sampler.synthesize_table`; fresh OS entropy when ``None``).
        ``progress(fraction)`` says where the run is in :meth:`progress_plan` (each step as it starts, a fit's
        iterations, AIM's rounds; ``dplens.core.tables.progress``). The workload's marginals are answered from the
        synthetic records (post-processing).
        """
        rho = check_rho(rho)
        domain = workload.domain
        if len(domain.names) < 2:
            raise ValueError(f"{self.name} needs at least 2 attributes, got {len(domain.names)}")  # type: ignore[attr-defined]  # set by each subclass
        feature = self.name.upper() if self.name in ("mst", "aim") else self.name  # type: ignore[attr-defined]  # set by each subclass
        require("polars", "tables", feature)
        require("mbi", "tables", feature)  # OpenDP's own check would say "optional install mbi", not the extra
        # private-pgm's mirror descent in NumPy: mbi's own compiles its update for every fit's cliques
        mirror_descent = require("dplens.core.tables.mirror_descent", "tables", feature).mirror_descent
        compiled = require("dplens.core.tables.compiled_memory", "tables", feature)

        fits = [0]
        handed = self.handed_rho(rho, len(domain.names))
        first_fit: list = []
        plan = self.progress_plan(workload)  # type: ignore[attr-defined]  # set by each subclass
        jax = require("jax", "tables", feature)
        reporter = Reporter(plan, progress, jax.block_until_ready)
        reporter.stage(0)

        def estimator(mbi_domain, loss_fn, *, potentials=None, final=False):
            iters = self.fit_iters(potentials, final=final)  # type: ignore[attr-defined]  # set by each subclass
            # ρ measured so far: Σ 1/(2σ²) over the measurements to fit (sensitivity 1 each); after the first fit,
            # each round's measurement is ``measure_split`` of what the round spent (the rest selected).
            measured = gaussian_rho(m.stddev for m in loss_fn if getattr(m, "stddev", 0) > 0)
            if not first_fit:
                first_fit.append(measured)
            spent = first_fit[0] + (measured - first_fit[0]) / getattr(self, "measure_split", 1.0)
            rounds = (spent - first_fit[0]) / (handed - first_fit[0]) if fits[0] and handed > first_fit[0] else None
            if final:  # AIM's final fit: the last of its rounds' step, with all their ρ measured
                rounds = 1.0
            on_iteration = reporter.fit(iters, rounds)
            model = mirror_descent(mbi_domain, loss_fn, potentials=potentials, iters=iters,
                                   callback_fn=on_iteration)
            fits[0] += 1
            # The fit compiled nothing; drop any program JAX compiled since (same values, less memory). The returned
            # model scores the next selection's candidates in NumPy too (dplens.core.tables.compiled_memory).
            compiled.clear_compiled()
            following = plan.fit_stage(fits[0] - 1) + 1  # the step after this fit (AIM: its rounds go on)
            if not plan.stages[following - 1].rounds and following < len(plan.stages) - 1:
                reporter.stage(following)
            return compiled.bounded(model)

        try:
            table = self.fitted_table(workload, records, handed, estimator)
        except Exception as error:  # OpenDP raises OpenDPException/ValueError; one line for the user
            raise ValueError(f"OpenDP refused {self.name} at rho={rho:g} (handed {handed!r}): "  # type: ignore[attr-defined]  # set by each subclass
                             f"{' '.join(str(error).split())[:160]}") from None
        measured = self.drawn_records(table)
        loss = composed_loss(measured, ZCDP(rho))
        # Not table.synthesize(rows): mbi's default sampler makes siblings comonotone (dplens.core.tables.sampler).
        reporter.stage(len(plan.stages) - 1)
        synth = synthesize_table(table, rows, rng if rng is not None else np.random.default_rng())
        # OpenDP adds a null key to every attribute (for values outside the keys); its true count is 0 here, so
        # synthetic rows that land on it are dropped (post-processing) and counted in the metadata.
        complete = synth.drop_nulls(subset=list(domain.names))
        coded = np.column_stack([complete[n].to_numpy().astype(np.int64) for n in domain.names])
        metadata = {"mechanism": f"{self.name} (opendp.extras.mbi.{self.opendp_name}, OpenDP {_opendp_version()})",  # type: ignore[attr-defined]  # set by each subclass
                    "privacy": "rho-zCDP, add/remove one record", "rho": float(rho), "rho_handed": handed,
                    **self.settings(rho), **self.extra_metadata(workload), "model_fits": fits[0], "rows": len(coded),  # type: ignore[attr-defined]  # set by each subclass
                    "null_rows_dropped": synth.height - complete.height}
        return marginal_release(self.name, rho, loss, workload, workload.answer(coded), records=coded, params=metadata,  # type: ignore[attr-defined]  # set by each subclass
                                measurements=measured)


@dataclass(frozen=True)
class MST(_OpenDPTable):
    """MST synthetic data (McKenna, Sheldon, Miklau 2021) through ``opendp.extras.mbi.MST``, ρ-zCDP.

    ``measure_split``: share of the multi-way budget spent measuring the selected 2-way marginals (OpenDP's
    default 0.9); ``iters``: mirror-descent iterations of private-pgm's estimator (1000 is OpenDP's default).
    Every attribute's keys are the declared codes 0..size−1, so no budget goes to discovering keys.
    """

    measure_split: float = setting(0.9, RATIO_RANGE)
    iters: int = setting(ESTIMATOR_ITERS, ITERS_RANGE)
    summary: ClassVar[str] = "MST synthetic records (OpenDP): 1-way marginals and a tree of 2-way ones; slow."
    name = "mst"
    opendp_name = "MST"

    def __post_init__(self) -> None:
        fraction("measure_split", self.measure_split)
        integer("iters", self.iters, 1, 100_000)

    def handed_rho(self, rho: float, attributes: int) -> float:
        return mst_handed_rho(rho, self.measure_split, attributes)

    def progress_plan(self, workload: MarginalWorkload) -> RunPlan:
        """MST's steps (shares from runs on the built-in sample): the 1-way marginals, a fit, the tree of 2-way
        marginals selected and measured, the final fit, the records."""
        return RunPlan((Stage("measuring the 1-way marginals", 0.25),
                        Stage("fitting the model to the 1-way marginals", 0.1, iters=self.iters),
                        Stage("selecting the 2-way marginals of MST's tree and measuring them", 0.3),
                        Stage("fitting the model to every measured marginal", 0.3, iters=self.iters),
                        Stage(SAMPLING, 0.05)))


    def fit_iters(self, potentials, *, final: bool = False) -> int:
        return self.iters

    def settings(self, rho: float) -> dict:
        return {"oneway_split": 0.5, "measure_split": float(self.measure_split), "iters": self.iters}

    def algorithm(self, dp, workload: MarginalWorkload, estimator):
        return dp.mbi.MST(measure_split=float(self.measure_split), estimator=estimator)


@dataclass(frozen=True)
class AIM(_OpenDPTable):
    """AIM (McKenna, Mullins, Sheldon, Miklau, VLDB 2022) through ``opendp.extras.mbi.AIM``, ρ-zCDP.

    Half of ρ measures every 1-way marginal (OpenDP's split when all keys are declared); the rest runs AIM's
    rounds on the workload's marginals (their weights count): each round selects the worst-fitted marginal
    (exponential mechanism, 1 − ``measure_split`` of the round), measures it with Gaussian noise and refits.
    A round that does not move the model quadruples the next round's budget, so the rounds end when ρ is spent.
    Bounds (dplens's defaults, chosen to finish on Adult in minutes): ``rounds`` sets the first round's
    budget to ρ/rounds (OpenDP: 16 × attributes); ``max_size`` caps the model's size in MB (OpenDP: 80);
    ``round_iters`` mirror-descent steps per refit, warm-started, and ``iters`` for the first fit (1-way marginals)
    and the final fit: once the rounds end, the released model is fitted once more to every measurement, warm-started
    from the last round's model (post-processing; :meth:`final_fit`). Both default to 1000, the schedule of the
    authors' ``aim.py`` (private-pgm); private-pgm's mirror descent restarts its step size at every call, so each fit
    needs its iterations.
    """

    rounds: int = setting(AIM_ROUNDS, Range(1, 10_000, integer=True))
    max_size: float = setting(AIM_MAX_SIZE, Range(0, 4096, open=True))
    measure_split: float = setting(0.9, RATIO_RANGE)
    round_iters: int = setting(AIM_ROUND_ITERS, ITERS_RANGE)
    iters: int = setting(ESTIMATOR_ITERS, ITERS_RANGE)
    summary: ClassVar[str] = "AIM synthetic records (OpenDP): measures the worst-fitted marginals; the slowest."
    name = "aim"
    opendp_name = "AIM"

    def __post_init__(self) -> None:
        integer("rounds", self.rounds, 1, 10_000)
        fraction("measure_split", self.measure_split)
        integer("round_iters", self.round_iters, 1, 100_000)
        integer("iters", self.iters, 1, 100_000)
        if isinstance(self.max_size, bool) \
                or not (isinstance(self.max_size, float | int) and 0 < self.max_size <= 4096):
            raise ValueError(f"max_size must be a number of MB in (0, 4096], got {self.max_size!r}")


    def fit_iters(self, potentials, *, final: bool = False) -> int:
        """Mirror-descent iterations of a fit: ``iters`` for the first (cold) and the final fit, ``round_iters`` for
        a round's warm-started refit."""
        return self.round_iters if potentials is not None and not final else self.iters

    def final_fit(self, table, estimator):
        """OpenDP's AIM releases the last round's refit; as the authors' ``aim.py`` does, the model is fitted once
        more to every measurement (warm-started, ``iters`` iterations) before records are drawn. Post-processing:
        the measurements, and so the privacy loss, are unchanged."""
        model = estimator(table.model.domain, table.marginals.flatten(), potentials=table.model.potentials, final=True)
        return dataclasses.replace(table, model=model)

    def progress_plan(self, workload: MarginalWorkload) -> RunPlan:
        """AIM's steps: the 1-way marginals, a fit, its rounds until ρ is spent (how many depends on the data, so
        they are followed by the share of their ρ measured) and the final fit (at all their ρ), the records."""
        return RunPlan((Stage("measuring the 1-way marginals", 0.15),
                        Stage("fitting the model to the 1-way marginals", 0.05, iters=self.iters),
                        Stage("AIM's rounds (select the worst-fitted marginal, measure it, refit the model), then "
                              "the final fit", 0.72, rounds=True),
                        Stage(SAMPLING, 0.08)))

    def settings(self, rho: float) -> dict:
        return {"oneway_split": 0.5, "measure_split": float(self.measure_split), "rounds": self.rounds,
                "max_size_mb": float(self.max_size), "round_iters": self.round_iters, "iters": self.iters}

    def algorithm(self, dp, workload: MarginalWorkload, estimator):
        queries = [dp.mbi.Count(tuple(m), float(w)) for m, w in zip(workload.marginals, workload.weights, strict=True)]
        return dp.mbi.AIM(queries=queries, measure_split=float(self.measure_split), max_size=float(self.max_size),
                          rounds=self.rounds, estimator=estimator)


@dataclass(frozen=True)
class IdentityPGM(_OpenDPTable):
    """Gaussian (or, with ``noise="laplace"``, Laplace at ε = √(2ρ)) noise on every workload marginal, weighted,
    estimated by private-pgm: ``opendp.extras.mbi.Fixed``.

    The same measurements as ``identity`` (OpenDP finds the scale for the whole budget by its own search), but the
    estimate is the graphical model that best fits all of them: consistent marginals, non-negative, and synthetic
    records.
    """

    iters: int = setting(ESTIMATOR_ITERS, ITERS_RANGE)
    noise: str = setting("gaussian", Range(choices=("gaussian", "laplace")))
    summary: ClassVar[str] = "Noise on every marginal, fitted by a graphical model (private-pgm): synthetic records."
    name = "identity-pgm"
    opendp_name = "Fixed"

    def __post_init__(self) -> None:
        integer("iters", self.iters, 1, 100_000)
        if self.noise not in ("gaussian", "laplace"):
            raise ValueError(f"noise must be gaussian or laplace, got {self.noise!r}")

    def extra_metadata(self, workload: MarginalWorkload) -> dict:
        added = uncovered(workload)
        return {"oneway_added": added} if added else {}

    def progress_plan(self, workload: MarginalWorkload) -> RunPlan:
        """identity-pgm's steps: every workload marginal measured (OpenDP searches the scale), one fit, the
        records."""
        return RunPlan((Stage("measuring the workload's marginals", 0.55),
                        Stage("fitting the model to them", 0.35, iters=self.iters), Stage(SAMPLING, 0.1)))

    def privacy_loss_of(self, dp, rho: float):
        # Laplace: pure ε-DP at ε = √(2ρ), which implies ρ-zCDP (Bun & Steinke 2016, Prop. 1.4).
        return dp.loss_of(epsilon=math.sqrt(2 * rho)) if self.noise == "laplace" else dp.loss_of(rho=rho)

    def drawn_records(self, table) -> tuple:
        """Each marginal's noisy counts at its σ; Laplace marginals as one record of all of them at unit scale (every
        record is in every marginal: Δ₁ = Σ 1/b), whose ε = Σ 1/b implies ρ = ε²/2."""
        if self.noise != "laplace":
            return tuple(_marginal_record(m) for m in table.marginals.flatten())
        stddevs = [m.stddev for m in table.marginals.flatten()]
        return (NoisyAnswers(f"the {len(stddevs)} workload marginals", LaplaceMeasurement(1.0),
                             laplace_epsilon(stddevs)),)

    def drawn_loss(self, table) -> float:
        """ρ of the workload's measurements from the σ (or Laplace scale) of each: no selection, no one-way phase
        (every key is declared). Laplace: ε = Σ 1/b, reported as the ρ = ε²/2 it implies."""
        stddevs = [m.stddev for m in table.marginals.flatten()]
        return laplace_epsilon(stddevs) ** 2 / 2 if self.noise == "laplace" else gaussian_rho(stddevs)


    def fit_iters(self, potentials, *, final: bool = False) -> int:
        return self.iters

    def settings(self, rho: float) -> dict:
        out = {"oneway_split": 0.0, "iters": self.iters, "noise": self.noise}
        if self.noise == "laplace":
            out |= {"epsilon": math.sqrt(2 * rho), "privacy": "pure epsilon-DP (Laplace), epsilon = sqrt(2 rho), "
                                                               "which implies rho-zCDP; add/remove one record"}
        return out

    def algorithm(self, dp, workload: MarginalWorkload, estimator):
        queries = [dp.mbi.Count(tuple(m), float(w)) for m, w in zip(workload.marginals, workload.weights, strict=True)]
        # An attribute no workload marginal covers would have no measurement: the model would spread its records
        # uniformly, over OpenDP's null level too (a third of the rows lost on the survey sample). Its 1-way
        # marginal is measured with the workload (weight 1).
        queries += [dp.mbi.Count((name,), 1.0) for name in uncovered(workload)]
        return dp.mbi.Fixed(queries=queries, estimator=estimator)


def uncovered(workload: MarginalWorkload) -> list[str]:
    """Attributes of the workload's table that none of its marginals covers."""
    covered = {name for marginal in workload.marginals for name in marginal}
    return [name for name in workload.domain.names if name not in covered]


def _opendp_version() -> str:
    from importlib.metadata import version

    return version("opendp")
