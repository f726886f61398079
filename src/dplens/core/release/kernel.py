"""The release kernel: the one door through which every release leaves dplens.

The Release and Tables pages, the command line (histograms and tables) and recipe scripts all call
``release_histogram`` or ``release_table``; nothing else runs a mechanism to produce an export
(``tests/test_release_kernel.py`` checks the code base for it). The steps, in order:

1. the privacy target is validated and turned into the ledger's charge (one unit per ledger);
2. refusals before any work: the dataset's ledger must fit the charge, and the run's estimated cost must be
   within the limits (``dplens.core.analysis.cost``);
3. the mechanism runs on the secure path (OpenDP's measurements, ``dplens.core.privacy.noise``) in a worker process
   stopped at the time limit whenever its estimate — which counts OpenDP's sampler per noisy value — is above
   the in-process threshold (``dplens.core.analysis.bounded``);
4. the privacy loss computed from the noise actually drawn must be within what is charged;
5. one transaction charges the ledger and records the export: its id and the hash of its values
   (``dplens.core.release.provenance``), so a file comes back as already private only when this installation knows it.

A refusal or a failure at any step charges nothing and publishes nothing.

Two further modes go through the same steps. *Exploration* (``rng`` given: seeded NumPy noise, a simulation)
checks the same ledger and the same loss and charges the same amount when the data are private, but records no
export and can never be exported (``export_id`` is None). Data that are already private (``private=False``: a
re-release of a released file is post-processing) are released with secure noise, and neither checked against
nor charged to any ledger.

>>> import tempfile, pathlib
>>> from dplens.core.privacy.ledger_store import LedgerStore
>>> from dplens.core.privacy.definitions import PureDP
>>> from dplens.core.queries.workloads import Prefix
>>> store = LedgerStore(pathlib.Path(tempfile.mkdtemp()) / "s.sqlite3")
>>> out = release_histogram(HistogramRequest("hb", {}, PureDP(0.5), Prefix(4), "prefix"),
...                         np.array([3.0, 0, 2, 5]), store=store, fingerprint="a" * 64, name="toy")
>>> out.ledger.remaining.epsilon, out.release.estimate.shape
(4.5, (4,))
"""

from __future__ import annotations

import dataclasses
import io
import json
import math
import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, BinaryIO, cast

import numpy as np

from dplens.core.analysis.bounded import run_bounded
from dplens.core.analysis.cost import check_cost, estimate_cost
from dplens.core.analysis.intervals import Intervals, exact_halfwidth, release_intervals
from dplens.core.data import limits
from dplens.core.data.limits import MAX_EPSILON
from dplens.core.data.signing import sign_document
from dplens.core.mechanisms import MECHANISMS, Mechanism, Release, configure
from dplens.core.mechanisms.contract import check_budget_epsilon
from dplens.core.mechanisms.gaussian import stating_definition
from dplens.core.mechanisms.measurement import (
    LaplaceMeasurement,
    MeasuredPlan,
    NoisyAnswers,
    PrivateChoice,
    ZCDPStep,
    composed_loss,
    supported_privacy,
)
from dplens.core.privacy.budget import Budget, Ledger, ledger_charge
from dplens.core.privacy.definitions import ZCDP, ApproxDP, Privacy, PureDP, amount, privacy_words, zcdp_epsilon
from dplens.core.privacy.ledger_store import DEFAULT_TOTAL, LedgerStore, new_export_id
from dplens.core.privacy.noise import (
    CapturedPlan,
    ReplayedStep,
    adds_noise_to_counts,
    gaussian_walk_loss,
    noise_kind,
    noise_sampler,
    noise_source,
    secure_above_threshold,
    secure_gaussian_noise_reduction,
    secure_lattice_noise_reduction,
    secure_noise_reduction,
)
from dplens.core.queries.marginals import MarginalWorkload
from dplens.core.queries.workloads import Identity, Workload, parse_workload
from dplens.core.release.export import (
    SIMULATION_LABEL,
    ExportKeys,
    neutralise,
    release_to_csv,
    release_to_json,
    write_release_csv,
    write_release_json,
)
from dplens.core.release.gradual import (
    above_threshold_params,
    check_schedule,
    geometric_grid,
    histogram_error,
    step_charge,
)
from dplens.core.release.provenance import values_hash
from dplens.core.release.walk_store import Walk, WalkStore
from dplens.core.tables.contract import SECURE_NOISE

# OpenDP's measurement costs about 7-10 µs of CPU per noisy value (1e5 values: 0.65-1.0 s); a release's time
# estimate adds this per value, so large secure releases run in a worker under the time limit.
SECURE_SECONDS_PER_VALUE = 2e-5
LOSS_SLACK = 1e-9  # float round-off in the loss computed from the noise drawn
DEFINITION_OF = {PureDP: "pure", ApproxDP: "approx", ZCDP: "zcdp"}
TABLE_DISPLAY_DELTA = 1e-6  # a table's ρ is also shown (and charged to an (ε, δ) ledger) as ε at this δ
DEFAULT_TABLE_TOTAL = Budget.zcdp(1.0, TABLE_DISPLAY_DELTA)  # a table's total until the curator records one


@dataclass(frozen=True)
class HistogramRequest:
    """What to release from a histogram: a registered mechanism, its settings, the privacy target and the workload.

    ``delta`` is the δ at which a ρ-zCDP target is read as (ε, δ) for Laplace mechanisms and for an (ε, δ) ledger.
    """

    mechanism: str
    settings: Mapping[str, object]
    privacy: Privacy
    workload: Workload
    workload_spec: str
    delta: float = 0.0


@dataclass(frozen=True, eq=False)
class Published:
    """A release that left through the kernel: what was released, its export id, the charge and the ledger after."""

    release: Release
    export_id: str | None  # None for an exploration release: a simulation is never exported
    charge: Budget
    ledger: Ledger | None  # None when the data were already private: no ledger was read or charged
    noise_sampler: str
    seconds: float
    metadata: dict = field(default_factory=dict)


def plan_histogram(request: HistogramRequest) -> tuple[Mechanism, Privacy, Budget]:
    """(mechanism, the privacy value it runs at, charge) for a histogram request, or ValueError naming what is wrong.

    >>> mechanism, privacy, charge = plan_histogram(HistogramRequest("hb", {}, ZCDP(0.5), None, "", 1e-6))
    >>> mechanism.name, privacy, charge.rho  # hb runs at ε = √(2ρ) = 1 and states ρ
    ('hb', ZCDP(rho=0.5), 0.5)
    """
    if request.mechanism not in MECHANISMS:
        raise ValueError(f"mechanism must be one of {', '.join(MECHANISMS)}, got {request.mechanism!r}")
    if DEFINITION_OF.get(type(request.privacy)) is None:
        raise ValueError(f"privacy target must be PureDP, ApproxDP or ZCDP, got {request.privacy!r}")
    # refused before any arithmetic on it: ε beyond MAX_EPSILON protects nothing and overflows ε²/2
    if isinstance(request.privacy, ZCDP):
        if not request.privacy.rho <= MAX_EPSILON:  # its ε at δ exceeds ρ: refused without converting it
            raise ValueError(f"rho must be at most {MAX_EPSILON:g} (dplens.core.data.limits MAX_EPSILON; its epsilon "
                             f"at delta is larger still), got {request.privacy.rho!r}")
        check_budget_epsilon(request.privacy.to_approx(request.delta).epsilon, "epsilon at delta")
    else:
        check_budget_epsilon(request.privacy.epsilon)
    mechanism = configure(MECHANISMS[request.mechanism], request.settings)
    return mechanism, supported_privacy(mechanism, request.privacy), ledger_charge(request.privacy, request.delta)


def secure_seconds(estimate_seconds: float, values: int) -> float:
    """A run's time estimate with OpenDP's sampler counted per noisy value.

    >>> secure_seconds(0.01, 2**22) > 60
    True
    """
    return float(estimate_seconds) + SECURE_SECONDS_PER_VALUE * values


@dataclass(frozen=True)
class Preflight:
    """What a release would do, found without running anything: ``refusal`` ('' when it can run: else a bad request or
    a run over the limits, in one line), ``unpayable`` ('' or why the dataset's ledger cannot pay the charge now),
    ``warning`` ('' or a slow run's estimate) and the ``charge`` it would make (None when the request is refused)."""

    refusal: str
    warning: str
    charge: Budget | None
    unpayable: str = ""


def preflight(request: HistogramRequest, *, store: LedgerStore | None = None, fingerprint: str | None = None,
              default_total: Budget = DEFAULT_TOTAL, private: bool = True) -> Preflight:
    """The checks ``release_histogram`` makes before any work, for a page to show before the click: the request is
    planned, the run's cost estimated and, for private data with a ``store``, the ledger asked whether it can pay.
    Nothing is run, drawn or charged.

    >>> preflight(HistogramRequest("hb", {}, ZCDP(0.5), Identity(8), "identity", 1e-6)).charge.rho
    0.5
    >>> preflight(HistogramRequest("gaussian-hb", {}, PureDP(1.0), Identity(8), "identity", 0.0)).refusal[:46]
    'gaussian-hb adds Gaussian noise, which is neve'
    """
    try:
        mechanism, _, charge = plan_histogram(request)
        warning = check_cost(estimate_cost(mechanism, request.workload), what=f"{request.mechanism} on this input")
    except ValueError as err:  # a bad request or setting, or a run over the limits (RunTooLargeError)
        return Preflight(str(err).splitlines()[0], "", None)
    if private and store is not None and fingerprint is not None:
        try:
            _check_fits(store, fingerprint, f"release: {request.mechanism}", charge, default_total)
        except ValueError as err:  # BudgetExceededError: the ledger cannot pay
            return Preflight("", warning, charge, unpayable=str(err).splitlines()[0])
    return Preflight("", warning, charge)


def _check_fits(store: LedgerStore, fingerprint: str, label: str, charge: Budget, default_total: Budget) -> None:
    """Refuse before any work (BudgetExceededError naming what remains); the charge re-checks atomically."""
    ledger = store.ledger(fingerprint, default_total=default_total)
    ledger.spend(label, charge)


def _check_loss(release: Release, privacy: Privacy) -> None:
    """The loss of what the release measured fits the charge: its measurement records' privacy maps composed in the
    charge's unit, which must also be the loss the mechanism states (a release that reads the data without records
    of it, or states less than they cost, is refused)."""
    loss = composed_loss(release.measurements, privacy)
    stated = release.privacy_loss
    if type(release.budget) is not type(privacy) or not loss <= amount(privacy) * (1 + LOSS_SLACK):
        raise ValueError(f"internal check: privacy loss {release.loss_unit}={loss!r} of the noise drawn "
                         f"({privacy_words(release.budget)}) exceeds the charge {privacy_words(privacy)}; "
                         "nothing was released or charged")
    if not math.isclose(loss, stated, rel_tol=LOSS_SLACK, abs_tol=1e-12):
        raise ValueError(f"internal check: the {release.mechanism} release states a loss of {stated!r} but its "
                         f"{len(release.measurements)} measurement records compose to {loss!r}; nothing was released "
                         "or charged")


def release_histogram(request: HistogramRequest, counts: np.ndarray, *, store: LedgerStore, fingerprint: str,
                      name: str, time_limit: float | None = None, workspace: str | None = None,
                      where: str = "app", default_total: Budget = DEFAULT_TOTAL, label: str | None = None,
                      rng: np.random.Generator | None = None, private: bool = True) -> Published:
    """Release ``counts`` through ``request`` on the secure path, charging the dataset's ledger (module doc).

    ``rng`` (a seeded generator) makes it an exploration release: the same checks and charge, no export.
    ``private=False``: the counts are already a DP release (post-processing), so no ledger is read or charged.
    ``label`` names the ledger's row (default ``release: <mechanism>``).

    Raises:
        ValueError: a bad request, a run over the limits, or a run that failed (nothing charged);
        BudgetExceededError: the ledger cannot pay (nothing run);
        RunTimeLimitError: stopped at ``time_limit`` (nothing charged).
    """
    mechanism, privacy, charge = plan_histogram(request)
    label = label or f"release: {request.mechanism}"
    if private:
        _check_fits(store, fingerprint, label, charge, default_total)
    cost = estimate_cost(mechanism, request.workload)
    check_cost(cost, what=f"{request.mechanism} on this input")  # raises over the memory or time limit
    counts = np.asarray(counts, dtype=float)
    exploring = rng is not None
    noise = rng if rng is not None else noise_source("secure", mechanism=mechanism, counts=counts)
    started = time.perf_counter()
    values = counts.size + request.workload.shape[0]
    release = run_bounded(mechanism.run, counts, request.workload, privacy, noise,
                          seconds=limits.MAX_ACTION_SECONDS if time_limit is None else time_limit,
                          estimated_seconds=cost.seconds if exploring else secure_seconds(cost.seconds, values))
    seconds = time.perf_counter() - started
    definition = DEFINITION_OF[type(request.privacy)]
    if definition != "pure":  # the δ it was asked at, and under zCDP the ε at δ its ρ is shown as
        release = stating_definition(release, definition, request.delta)
    _check_loss(release, request.privacy)
    sampler = noise_sampler(noise, mechanism)
    export_id = None if exploring else new_export_id()
    if not private:
        return Published(release, export_id, charge, None, sampler, seconds)
    kind, released = ("counts", release.estimate) if release.estimate is not None else ("answers", release.answers)
    path = f"exploration ({SIMULATION_LABEL})" if exploring else f"secure ({sampler})"
    ledger = store.spend(fingerprint, label, charge, mechanism=request.mechanism, workload=request.workload_spec,
                         export_id=export_id, rho=charge.rho, workspace=workspace, name=name,
                         values_hash=None if exploring else values_hash(released, kind), default_total=default_total,
                         note=f"noise path: {path}; {privacy_words(request.privacy, request.delta or None)}; {where}")
    return Published(release, export_id, charge, ledger, sampler, seconds)


@dataclass(frozen=True)
class TableRequest:
    """What to release from a table of records: a table mechanism (with settings) at ρ-zCDP on a marginal workload.

    The ledger charges ρ under a ρ total, or the CKS (ε, δ) at ``delta`` under an (ε, δ) total.
    ``domain_declared`` is False when any attribute's levels were read from the private records: such a table
    may be explored but not released (its shape would disclose them).
    """

    mechanism: Any  # a dplens.core.tables.mechanisms.TABLE_MECHANISMS entry (they share no base class)
    rho: float
    workload: MarginalWorkload
    delta: float
    domain_declared: bool = True


UNDECLARED_DOMAIN = ("a release needs a declared domain: this table's levels (or sizes) were read from the private "
                     "records, so the released shape would disclose them; upload a domain file naming every "
                     "attribute's levels (exploring and comparing need none)")


def table_charge(rho: float, delta: float) -> Budget:
    """What a ρ-zCDP table release charges: ρ, with its CKS ε at ``delta`` for an (ε, δ) ledger.

    >>> table_charge(0.5, 1e-6).rho
    0.5
    """
    if not (isinstance(rho, int | float) and math.isfinite(rho) and 0 < rho <= 1000):
        raise ValueError(f"rho must be a number in (0, 1000], got {rho!r}")
    return ledger_charge(ZCDP(float(rho)), delta)


def release_table(request: TableRequest, records: np.ndarray, *, store: LedgerStore, fingerprint: str, name: str,
                  time_limit: float | None = None, workspace: str | None = None, where: str = "app",
                  default_total: Budget = DEFAULT_TABLE_TOTAL, progress: Callable[[float], None] | None = None,
                  estimated_seconds: float | None = None) -> Published:
    """Release a table of records through ``request`` on the secure path, charging its ledger (module doc).

    Raises: as ``release_histogram``.
    """
    mechanism = request.mechanism
    if not request.domain_declared:
        raise ValueError(UNDECLARED_DOMAIN)
    charge = table_charge(request.rho, request.delta)
    label = f"release: {mechanism.name}"
    _check_fits(store, fingerprint, label, charge, default_total)
    synthesizes = bool(getattr(mechanism, "synthesizes", False))
    limit = time_limit if time_limit is not None else (
        limits.MAX_SYNTHESIS_SECONDS if synthesizes else limits.MAX_ACTION_SECONDS)
    if estimated_seconds is None:
        estimated_seconds = secure_seconds(0.01, int(request.workload.cells)) + (60.0 if synthesizes else 0.0)
    started = time.perf_counter()
    privacy = ZCDP(float(request.rho))  # table mechanisms run at a ρ-zCDP value, as the histogram ones at theirs
    release = run_bounded(mechanism.run, records, request.workload, privacy, noise_source("secure"),
                          seconds=limit, estimated_seconds=estimated_seconds,
                          progress=progress if synthesizes else None)
    seconds = time.perf_counter() - started
    _check_loss(release, privacy)
    export_id = new_export_id()
    ledger = store.spend(fingerprint, label, charge, mechanism=mechanism.name, rho=charge.rho,
                         workload=request.workload.describe(), export_id=export_id, name=name, workspace=workspace,
                         default_total=default_total,
                         note=f"table release; rho={request.rho:g} charged as (epsilon={charge.epsilon:.6g}, "
                              f"delta={charge.delta:g}); {where}")
    return Published(release, export_id, charge, ledger, "opendp", seconds)


def release(request: HistogramRequest | TableRequest, data: np.ndarray, *, store: LedgerStore, fingerprint: str,
            name: str, **options: Any) -> Published:
    """The one door for every release: a histogram's counts through ``release_histogram``, a table's records through
    ``release_table`` (the request says which); ``options`` are theirs (time limit, workspace, exploration noise,
    progress, ...). Both plan once, check the ledger before any work, run the mechanism at its privacy value, check
    the loss of its measurement records and charge in one transaction.

    >>> import tempfile, pathlib
    >>> store = LedgerStore(pathlib.Path(tempfile.mkdtemp()) / "l.sqlite3")
    >>> request = HistogramRequest("identity", {}, PureDP(0.5), Identity(4), "identity", 0.0)
    >>> published = release(request, np.ones(4), store=store, fingerprint="f" * 64, name="doc",
    ...                     rng=np.random.default_rng(0))
    >>> published.charge.epsilon, published.release.measurements[0].query
    (0.5, 'the cells')
    """
    if isinstance(request, TableRequest):
        return release_table(request, data, store=store, fingerprint=fingerprint, name=name, **options)
    return release_histogram(request, data, store=store, fingerprint=fingerprint, name=name, **options)


EXPORT_INTERVAL_TRIALS = 100  # re-runs on the released output behind simulated intervals (post-processing only)


def export_intervals(release: Release, request: HistogramRequest, *, simultaneous: bool = False,
                     rng: np.random.Generator | None = None) -> Intervals:
    """95 % intervals for ``release`` (made for ``request``), from its released values only (never the true data):
    what every export carries, from the command line and the Release page alike."""
    mechanism = plan_histogram(request)[0]
    return release_intervals(mechanism, release, request.workload, simultaneous=simultaneous,
                             trials=EXPORT_INTERVAL_TRIALS, rng=rng if rng is not None else np.random.default_rng())


def export_release(published: Published, request: HistogramRequest, *, fmt: str, dataset: str,
                   keys: ExportKeys | None = None, intervals: Intervals | None = None,
                   rng: np.random.Generator | None = None,
                   compute_intervals: bool = True, tuned_on: str | None = None) -> bytes:
    """The export file of a published histogram release: ``fmt`` "csv" (values with ``lower, upper, level``) or
    "json" (the same plus the metadata and export id). Intervals are computed when not given (unless
    ``compute_intervals`` is False: the app computes slow ones on request). ``keys`` (``ExportKeys.for_release``)
    name the cells as the upload did and, for workload answers, each answer's query; ``tuned_on`` says what the
    choice of mechanism and ε was tuned on (the JSON's ``tuned_on``)."""
    buffer = io.BytesIO()
    write_export(buffer, published, request, fmt=fmt, dataset=dataset, keys=keys, intervals=intervals, rng=rng,
                 compute_intervals=compute_intervals, tuned_on=tuned_on)
    return buffer.getvalue()


def write_export(out: BinaryIO, published: Published, request: HistogramRequest, *, fmt: str, dataset: str,
                 keys: ExportKeys | None = None, intervals: Intervals | None = None,
                 rng: np.random.Generator | None = None, compute_intervals: bool = True,
                 tuned_on: str | None = None) -> None:
    """Write ``export_release``'s bytes to ``out`` a chunk of values at a time (``write_release_csv``,
    ``write_release_json``): a release of 10^6 cells is written without its whole text in memory."""
    if fmt not in ("csv", "json"):
        raise ValueError(f"export format must be 'csv' or 'json', got {fmt!r}")
    if published.export_id is None:
        raise ValueError(f"an exploration release is a {SIMULATION_LABEL}: its seeded noise can be regenerated and "
                         "subtracted, so it is never exported")
    release = published.release
    if intervals is None and compute_intervals:
        intervals = export_intervals(release, request, rng=rng)
    if fmt == "csv":
        text = io.TextIOWrapper(out, encoding="utf-8", newline="")
        try:
            write_release_csv(text, release, keys, intervals)
        finally:
            text.detach()  # flushed, and ``out`` left open for the caller
        return
    write_release_json(out, release, workload=request.workload_spec, noise_path="secure", dataset=dataset,
                       keys=keys, noise_sampler=published.noise_sampler, export_id=published.export_id,
                       intervals=intervals, tuned_on=tuned_on)


def export_restored(release: Release, *, fmt: str, metadata: Mapping[str, Any], keys: ExportKeys | None = None,
                    intervals: Intervals | None = None) -> bytes:
    """The export file of a release restored from a saved workspace (no request or ``Published`` survives a reload):
    its stored values and the metadata recorded when it was published (export id, noise path, sampler, tuned on)."""
    if fmt not in ("csv", "json"):
        raise ValueError(f"export format must be 'csv' or 'json', got {fmt!r}")
    if metadata.get("noise_path") != "secure" or not metadata.get("export_id"):
        raise ValueError(f"only a secure release with an export id is exported; this one is a {SIMULATION_LABEL}")
    if fmt == "csv":
        return release_to_csv(release, keys, intervals)
    return release_to_json(release, keys=keys, intervals=intervals, **metadata).encode()


def table_metadata(published: Published, request: TableRequest, *, dataset: str) -> dict:
    """The metadata every table export carries (app and command line alike), with its export id."""
    release, charge = published.release, published.charge
    return {"dataset": neutralise(dataset), "mechanism": request.mechanism.name, "rho": float(request.rho),
            "privacy_loss_rho": release.privacy_loss, "epsilon_charged": charge.epsilon,
            "delta_for_ledger": charge.delta, "privacy": "rho-zCDP, add/remove one record",
            "workload": request.workload.describe(), "domain": json.loads(request.workload.domain.to_json()),
            "noise": SECURE_NOISE, "export_id": published.export_id} | dict(release.params)


# ----------------------------------------------------------------------------- gradual release, for real
# A walk needs noise i.i.d. on one strategy: every data-independent plan with one Laplace block walks its strategy's
# answers (exactly: on the integers for identity's counts, on OpenDP's lattice otherwise), and gaussian-identity
# walks discrete Gaussians on the counts, charged a proved bound.
def walkable(name: str) -> bool:
    """Whether registered mechanism ``name`` can be released as a walk (one Laplace block on a fixed strategy)."""
    mechanism = MECHANISMS.get(name)
    return name == "gaussian-identity" or (isinstance(mechanism, MeasuredPlan) and noise_kind(mechanism) == "laplace")


WALK_MECHANISMS = tuple(name for name in MECHANISMS if walkable(name))


@dataclass(frozen=True, eq=False)
class WalkStep:
    """One released step of a walk: the release (through the kernel, charged), its request and the walk after it."""

    walk: Walk
    step: int
    published: Published
    request: HistogramRequest

    @property
    def cumulative(self) -> Privacy:
        """What the steps released so far cost together: the last step's privacy value (not their sum)."""
        return self.request.privacy


def _walk_schedule(schedule: Sequence[Privacy], mechanism: str) -> tuple[str, tuple[float, ...]]:
    """(definition, the schedule's amounts) for all-PureDP or all-ZCDP values, strictly increasing."""
    kinds = {type(p) for p in schedule}
    if not schedule or kinds not in ({PureDP}, {ZCDP}):
        raise ValueError("a walk's schedule is a non-empty list of pure ε values or of zCDP ρ values (not mixed, "
                         f"not (ε, δ)), got {[privacy_words(p) for p in schedule]}")
    if mechanism == "gaussian-identity" and kinds != {ZCDP}:
        raise ValueError("a Gaussian walk's schedule is in ρ (zCDP): Gaussian noise has no pure ε")
    amounts = tuple(float(amount(p)) for p in schedule)
    check_schedule(amounts)  # finite, > 0, strictly increasing: never silently sorted
    return ("pure" if kinds == {PureDP} else "zcdp"), amounts


def walk_costs(walk: Walk) -> tuple[Privacy, ...]:
    """What releasing steps 1..t costs in all, for each t: the Laplace walk's own ε_t (or ρ_t), exactly; the
    Gaussian walk's proved bound ``gaussian_walk_loss`` (≥ the schedule's ρ_t, equal at the last step)."""
    if walk.mechanism == "gaussian-identity":
        return tuple(ZCDP(r) for r in gaussian_walk_loss(walk.schedule))
    return tuple(PureDP(v) if walk.definition == "pure" else ZCDP(v) for v in walk.schedule)


def _prefix_charge(walk: Walk, step: int, delta: float) -> Budget:
    """The ledger charge of releasing steps 1..``step`` together (0 steps: nothing). A Laplace walk is pure
    ε_t-DP whatever the unit of its schedule; a Gaussian walk's prefix is charged as its ρ bound (ε at ``delta``)."""
    if step == 0:
        return Budget(0.0, 0.0, 0.0)
    if walk.mechanism != "gaussian-identity":
        return step_charge(0.0, walk.epsilons[step - 1])
    return ledger_charge(walk_costs(walk)[step - 1], delta)


def walk_step_charge(walk: Walk, step: int, delta: float) -> Budget:
    """What step ``step`` is charged: its prefix's charge minus the previous prefix's (ε, δ and ρ alike), so the
    ledger has spent exactly the prefix's cost after every step."""
    now, before = _prefix_charge(walk, step, delta), _prefix_charge(walk, step - 1, delta)
    return Budget(now.epsilon - before.epsilon, now.delta - before.delta, (now.rho or 0.0) - (before.rho or 0.0))


def _strategy_walk(base: Mechanism, counts: np.ndarray, workload: Workload,
                   epsilons: tuple[float, ...]) -> np.ndarray:
    """The walk of a one-block Laplace plan: its strategy answers A x and scales read off the plan itself (a noise
    source that records instead of drawing), then the whole walk drawn on the secure path."""
    plan = cast(MeasuredPlan, base)
    capture = CapturedPlan()
    # a noise source with the Generator methods plans call (it refuses every draw but the one block it records)
    plan.measure(counts, workload, plan.measurement(workload, epsilons[-1]), cast(np.random.Generator, capture))
    if capture.values is None:
        raise ValueError(f"{base.name} measured nothing on this workload: there is nothing to walk")
    scales = [plan.measurement(workload, e).scale for e in epsilons]
    if adds_noise_to_counts(base) and np.all(capture.values == np.round(capture.values)):
        return secure_noise_reduction(capture.values, scales)  # integer counts, integer sensitivity: exact
    return secure_lattice_noise_reduction(capture.values, scales)


def start_walk(counts: np.ndarray, schedule: Sequence[Privacy], *, store: LedgerStore, fingerprint: str, name: str,
               mechanism: str = "identity", settings: Mapping[str, object] | None = None,
               workload: Workload | None = None, workload_spec: str = "identity",
               default_total: Budget = DEFAULT_TOTAL, delta: float = 1e-6, output_dir: str | None = None) -> Walk:
    """Draw a whole noise-reduction walk on the secure path and keep it for its curator; nothing is charged yet.

    The walk's last (least private) step must fit the dataset's ledger now (the ex-ante cap); each step is charged
    when it is released (``release_walk_step``). ``WALK_MECHANISMS`` only; a Laplace plan walks its strategy's
    answers for ``workload`` (default: the cells; ``workload_spec`` rebuilds it at each step).

    Raises:
        ValueError: another mechanism, a bad schedule, non-integer counts (Gaussian walks);
        BudgetExceededError: the schedule's last step does not fit what remains.
    """
    if mechanism not in WALK_MECHANISMS:
        raise ValueError(f"a gradual release walks only mechanisms with one Laplace block on a fixed strategy "
                         f"({', '.join(WALK_MECHANISMS)}), not {mechanism!r}: its noise is not one walkable block; "
                         "use the Release page for it")
    definition, amounts = _walk_schedule(schedule, mechanism)
    counts = np.asarray(counts, dtype=float)
    plan: dict[str, Any] | None = None
    if mechanism == "gaussian-identity" and not np.all(counts == np.round(counts)):
        raise ValueError("a Gaussian walk needs integer counts (its discrete Gaussians are drawn on the integers)")
    if mechanism != "gaussian-identity":
        workload = workload if workload is not None else Identity(counts.size)
        plan = {"workload": workload_spec, "shape": list(counts.shape), "settings": dict(settings or {})}
    walk = Walk("", "", fingerprint, 0, name, mechanism, definition, amounts, counts.size, 0, "active", None)
    if not store.recorded(fingerprint):
        store.set_total(fingerprint, default_total, name=name)
    store.ledger(fingerprint).spend(f"walk cap: {privacy_words(walk_costs(walk)[-1])}",
                                    _prefix_charge(walk, walk.steps, delta))
    if plan is None:
        values = secure_gaussian_noise_reduction(counts.ravel(), amounts)  # Δ₂ = 1
    else:
        base = configure(MECHANISMS[mechanism], plan["settings"])
        values = _strategy_walk(base, counts.ravel(), cast(Workload, workload), walk.epsilons)
    return WalkStore(store.path, store.owner).create(values, fingerprint=fingerprint, epoch=int(
        store.epoch(fingerprint) or 0), name=name, mechanism=mechanism, definition=definition, schedule=amounts,
        output_dir=output_dir, plan=plan)


def _walk_release(walk: Walk, step: int, values: np.ndarray, privacy: Privacy,
                  delta: float) -> tuple[Release, HistogramRequest]:
    """The release of one step (post-processing of its stored values) and the request that describes it."""
    params: dict[str, Any] = {"walk": walk.id, "step": step, "steps": walk.steps, "schedule": list(walk.schedule)}
    if walk.definition == "zcdp":
        params |= {"definition": "zcdp", "delta": delta, "epsilon_at_delta": zcdp_epsilon(amount(privacy), delta)}
    request_delta = 0.0 if walk.definition == "pure" else delta
    if walk.mechanism == "gaussian-identity":  # a sum of discrete Gaussians of variance 1/(2ρ_t): the proved bound
        request = HistogramRequest(walk.mechanism, {}, privacy, Identity(walk.cells), "identity", request_delta)
        params |= {"sigma": math.sqrt(1.0 / (2.0 * walk.schedule[step - 1])), "noise": "gaussian",
                   "schedule_rho": walk.schedule[step - 1]}
        bound = ZCDPStep(f"step {step} of a gradual walk on the cells (its proved bound)", amount(privacy))
        return Release(walk.mechanism, privacy, amount(privacy), values, values, params,
                       workload=request.workload, measurements=(bound,)), request
    plan = walk.plan or {"workload": "identity", "shape": [walk.cells], "settings": {}}
    shape = tuple(int(s) for s in plan["shape"])
    workload = Identity(walk.cells) if plan["workload"] == "identity" else parse_workload(plan["workload"], shape)
    request = HistogramRequest(walk.mechanism, plan["settings"], privacy, workload, plan["workload"], request_delta)
    base = cast(MeasuredPlan, configure(MECHANISMS[walk.mechanism], plan["settings"]))
    epsilon = walk.epsilons[step - 1]
    measurement = base.measurement(workload, epsilon)
    # the plan reconstructs from the step's stored noisy answers: its input is never read (zeros of its shape)
    replay = cast(np.random.Generator, ReplayedStep(values, measurement.scale))  # hands back the stored step
    measured = base.measure(np.zeros(math.prod(shape)), workload, measurement, replay)
    # the step's noise is Lap(b_t) marginally (Koufogiannis et al. 2016): the plan's own record, ε_t-DP
    release = dataclasses.replace(measured, budget=privacy, privacy_loss=composed_loss(measured.measurements, privacy),
                                  params={**measured.params, **params})
    return release, request


def release_walk_step(walk_id: str, *, store: LedgerStore, delta: float = 1e-6, where: str = "app") -> WalkStep:
    """Release the next step of this curator's walk, charging only its increment (``walk_step_charge``), so the ledger
    has spent exactly what the steps released so far cost. One transaction charges, records the export and marks
    the step released.

    Raises:
        ValueError: no such walk for this curator, a step past the schedule, an abandoned walk, or a budget reset
            since the walk started (nothing charged);
        BudgetExceededError: the step does not fit what remains.
    """
    walks = WalkStore(store.path, store.owner)
    walk = walks.get(walk_id)
    if walk.status != "active":
        raise ValueError(f"walk {walk.id} was {walk.status} ({walk.note}); start a new walk")
    step = walk.released + 1
    if step > walk.steps:
        raise ValueError(f"walk {walk.id} has released all {walk.steps} steps of its schedule; start a new walk")
    if store.epoch(walk.fingerprint) != walk.epoch:
        raise ValueError(f"the budget of {walk.name or 'this dataset'} was reset after walk {walk.id} started; its "
                         "steps are refused (start a new walk on the fresh budget)")
    values, privacy = walks.step_values(walk, step), walk_costs(walk)[step - 1]
    release, request = _walk_release(walk, step, values, privacy, delta)
    released = ((release.estimate, "counts") if release.estimate is not None else (release.answers, "answers"))
    _check_loss(release, privacy)
    export_id = new_export_id()
    charge = walk_step_charge(walk, step, delta)

    def mark(conn: sqlite3.Connection, epoch: int) -> None:
        if epoch != walk.epoch:
            raise ValueError(f"the budget was reset after walk {walk.id} started; nothing was charged")
        walks.mark_released(conn, walk, step)

    ledger = store.spend(walk.fingerprint, f"walk {walk.id}: step {step} of {walk.steps}", charge,
                         mechanism=walk.mechanism, workload="identity", export_id=export_id, rho=charge.rho,
                         name=walk.name, values_hash=values_hash(*released), within=mark,
                         note=f"gradual release: step {step} of {walk.steps}, "
                              f"{privacy_words(privacy, request.delta or None)} in all (this step charged the "
                              f"increment); {where}")
    integer = adds_noise_to_counts(MECHANISMS[walk.mechanism]) and bool(np.all(values == np.round(values)))
    sampler = ("opendp-integer-gaussian" if walk.mechanism == "gaussian-identity" else
               "opendp-integer-laplace" if integer else "opendp-lattice-laplace")
    published = Published(release, export_id, charge, ledger, sampler, 0.0)
    return WalkStep(walks.get(walk.id), step, published, request)


def _symmetric_intervals(release: Release, noise: tuple[str, float, bool], method: str) -> Intervals:
    """95 % intervals ± the half-width of ``noise`` (kind, scale, integer) around each value of the estimate."""
    values = np.asarray(release.estimate, dtype=float)
    half = exact_halfwidth(noise)
    return Intervals(values - half, values + half, 0.95, False, method)


def export_walk_step(step: WalkStep, *, fmt: str, dataset: str) -> bytes:
    """A released step's export, as ``export_release`` writes a release, plus (JSON) the walk, the step and the
    cumulative loss of the steps released so far (the last step's, not their sum). A Gaussian step's intervals use
    the normal quantile at the noise's total σ (a sum of discrete Gaussians: its variance is at most σ²). The JSON is
    signed by this installation over all of it (``dplens.core.data.signing``), as ``release_to_json`` signs."""
    intervals = None
    release = step.published.release
    if step.walk.mechanism == "gaussian-identity":
        intervals = _symmetric_intervals(release, ("gaussian", float(release.params["sigma"]), False),
                                         "normal quantile at the walk's total sigma (sum of discrete Gaussians)")
    data = export_release(step.published, step.request, fmt=fmt, dataset=dataset, intervals=intervals)
    if fmt == "csv":
        return data
    doc = json.loads(data)
    doc |= {"walk": step.walk.id, "step": step.step, "steps": step.walk.steps,
            "cumulative_loss": amount(step.cumulative),
            "cumulative_loss_unit": "rho" if isinstance(step.cumulative, ZCDP) else "epsilon"}
    return sign_document(doc, indent=2).encode()  # signed again: the signature covers the walk's fields too


@dataclass(frozen=True, eq=False)
class AccuracyFirstRelease:
    """Accuracy-first on the secure path: the step released (None on failure), its ex-post charge and the cap."""

    grid: tuple[float, ...]          # the walk's ε_1 < … < ε_T (geometric, ends at the cap)
    stopped_at: int | None           # 1-based step released, None when no step passed
    published: Published | None      # the release of that step, charged; None on failure
    epsilon_above_threshold: float   # ε_A
    charged: Budget                  # the ex-post charge recorded in the ledger

    @property
    def ex_ante_cap(self) -> float:
        """ε_A + ε_T: the most this search can cost, checked against the ledger before any work."""
        return self.epsilon_above_threshold + self.grid[-1]


def accuracy_first_release(counts: np.ndarray, workload: Workload, target: float, *, store: LedgerStore,
                           fingerprint: str, name: str, epsilon_max: float, epsilon_min: float = 0.01,
                           steps: int = 10, gamma: float = 0.1, metric: str = "rmse",
                           default_total: Budget = DEFAULT_TOTAL, where: str = "app") -> AccuracyFirstRelease:
    """Ligett et al.'s accuracy-first search (NIPS 2017) for real: a secure noise-reduction walk over a geometric grid
    up to ``epsilon_max``, AboveThreshold with secure noise on each step's error against ``target`` (``metric`` on
    ``workload``), and the first step that passes released and charged its ex-post loss ε_A + ε_{t*}.

    On failure nothing is released and the charge is ε_A + ε_T: the "none passed" outcome depends on every step of
    the walk (ε_T-DP as a whole) and on AboveThreshold (ε_A-DP given the walk), and no smaller bound is claimed.
    Both charges are recorded as ex-post losses (the note says so); the ex-ante cap ε_A + ε_T must fit first.
    """
    counts = np.asarray(counts, dtype=float).ravel()
    grid = tuple(float(e) for e in geometric_grid(epsilon_min, epsilon_max, steps))
    error, query_sensitivity = histogram_error(counts, workload, metric)
    threshold, _, epsilon_a = above_threshold_params(target, gamma, query_sensitivity, steps)
    if not store.recorded(fingerprint):
        store.set_total(fingerprint, default_total, name=name)
    cap = epsilon_a + grid[-1]
    store.ledger(fingerprint).spend(f"accuracy-first cap: ε = {cap:.4g}", Budget(cap, rho=cap**2 / 2))
    walk = secure_noise_reduction(counts, [1.0 / e for e in grid])
    stopped = secure_above_threshold([error(theta) for theta in walk], threshold, epsilon_a, query_sensitivity)
    loss = epsilon_a + (grid[stopped] if stopped is not None else grid[-1])
    charge = Budget(loss, rho=loss**2 / 2)
    words = (f"ex-post loss (Ligett et al.): ε_A {epsilon_a:.4g} + ε_t* {grid[stopped]:.4g}" if stopped is not None
             else f"ex-post loss (Ligett et al.): no step met the target; ε_A {epsilon_a:.4g} + ε_T {grid[-1]:.4g}")
    note = f"accuracy-first, {metric} target {target:g} on {workload.describe()}: {words}; {where}"
    if stopped is None:
        store.spend(fingerprint, "accuracy-first: no step released", charge, mechanism="identity", rho=charge.rho,
                    name=name, note=note)
        return AccuracyFirstRelease(grid, None, None, epsilon_a, charge)
    values, privacy = walk[stopped], PureDP(loss)
    release = Release("identity", privacy, loss, workload.matvec(values), values,
                      {"noise_scale": 1.0 / grid[stopped], "accuracy_first": {
                          "target": target, "metric": metric, "step": stopped + 1, "grid": list(grid),
                          "epsilon_above_threshold": epsilon_a, "ex_ante_cap": cap}}, workload=workload,
                      # steps before t* are post-processing of step t* (Ligett et al., Alg. 1): its noise and the
                      # stopping rule are all the data were measured by
                      measurements=(NoisyAnswers(f"the counts at step {stopped + 1} of the noise-reduction walk",
                                                 LaplaceMeasurement(1.0 / grid[stopped]), 1.0, values),
                                    PrivateChoice("AboveThreshold on the walk's errors", epsilon_a)))
    _check_loss(release, privacy)
    export_id = new_export_id()
    ledger = store.spend(fingerprint, f"accuracy-first: step {stopped + 1} of {steps}", charge, mechanism="identity",
                         export_id=export_id, rho=charge.rho, name=name,
                         values_hash=values_hash(values, "counts"), note=note)
    published = Published(release, export_id, charge, ledger, "opendp-integer-laplace", 0.0)
    return AccuracyFirstRelease(grid, stopped + 1, published, epsilon_a, charge)


def export_accuracy_first(result: AccuracyFirstRelease, workload_spec: str, *, fmt: str, dataset: str) -> bytes:
    """The released step of an accuracy-first search, as ``export_release`` writes a release: its intervals are the
    exact discrete Laplace ones of the step's own scale 1/ε_{t*} (the ex-post ε names the charge, not the noise), and
    the JSON adds the search (target, metric, grid, ε_A, the ex-post loss and the ex-ante cap) and is signed by this
    installation over all of it (``dplens.core.data.signing``)."""
    if result.published is None:
        raise ValueError("no step met the target: nothing was released, so there is nothing to export")
    release = result.published.release
    intervals = _symmetric_intervals(release, ("laplace", float(release.params["noise_scale"]), True),
                                     "exact discrete Laplace quantiles at the released step's scale (per value)")
    request = HistogramRequest("identity", {}, release.budget, cast(Workload, release.workload), workload_spec)
    data = export_release(result.published, request, fmt=fmt, dataset=dataset, intervals=intervals)
    if fmt == "csv":
        return data
    doc = json.loads(data) | {"accuracy_first": dict(release.params["accuracy_first"]),
                              "ex_post_loss": result.charged.epsilon, "ex_ante_cap": result.ex_ante_cap}
    return sign_document(doc, indent=2).encode()  # signed again: the signature covers the search's fields too
