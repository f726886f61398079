"""Simulations for the current dataset and workload (never charged): sweeps kept in the session, previews."""

from __future__ import annotations

import multiprocessing
import os

import numpy as np
import streamlit as st

from dplens.core.analysis.bounded import warm_up
from dplens.core.analysis.cost import Deadline, RunLimits, affordable_trials, sweep_seconds
from dplens.core.analysis.execution import parse_scheduler, resolve_auto
from dplens.core.analysis.experiment import (
    DEFAULT_COMPARE_MECHANISMS,
    SweepCache,
    per_bin_errors,
    run_sweep,
    summarise,
    warm_up_workers,
)
from dplens.core.analysis.strategy_store import StrategyStore
from dplens.core.data.datasets import DEFAULT_DATASET, load_histogram
from dplens.core.data.limits import MAX_ACTION_SECONDS
from dplens.core.mechanisms import MECHANISMS
from dplens.ui.analytic import sweep_axis
from dplens.ui.charts import error_figure
from dplens.ui.definition import definition
from dplens.ui.guard import is_script_control
from dplens.ui.ledger import delta
from dplens.ui.privacy import session_axis
from dplens.ui.state import SIMULATION_STREAM
from dplens.ui.tuning import tuning_histogram, tuning_key
from dplens.ui.workloads import default_workload_spec, parsed_workload, workload, workload_spec

_WARM_SWEEPS_ENV = "DPLENS_WARM_SWEEPS"  # "0": do not start the Compare workers with the server (test suites)


@st.cache_resource(show_spinner=False)
def warm_workers() -> bool:
    """Once per server: start, in the background, the worker server for bounded actions (dplens.core.analysis.bounded)
    and the Compare sweep workers with the default mechanisms loaded, so the first click does not wait for them."""
    if multiprocessing.parent_process() is not None:  # a worker that re-ran app.py starts nothing of its own
        return False
    fork_server = warm_up()
    if os.environ.get(_WARM_SWEEPS_ENV, "1") != "0":
        sample = load_histogram(DEFAULT_DATASET)  # what a new session opens on
        warm_up_workers(DEFAULT_COMPARE_MECHANISMS, sample,
                        parsed_workload(default_workload_spec(sample), sample.domain.shape), after=fork_server)
    return True


SCHEDULER_ENV = "DPLENS_SCHEDULER"  # operator setting: e.g. tcp://HOST:8786 sends Compare sweeps to a Dask cluster


def scheduler_choices() -> list[str]:
    """Where Compare sweeps may run: auto, local processes, this process, and the operator's Dask cluster.

    A Dask address comes only from the server's ``DPLENS_SCHEDULER`` environment variable: a visitor
    cannot make the server connect elsewhere.
    """
    choices = ["auto", "processes", "serial"]
    configured = os.environ.get(SCHEDULER_ENV, "").strip()
    if configured and configured not in choices:
        parse_scheduler(configured)  # a bad operator setting fails loudly, naming the rule
        choices.insert(0, configured)
    return choices


def sweep_estimate(mechanisms, workload, epsilons: int, trials: int, scheduler: str) -> float:
    """Estimated wall seconds of a Compare sweep: the runs' serial estimate (dplens.core.analysis.cost) shared by the
    workers ``scheduler`` resolves to (a Dask cluster given by address counts as one: its size is unknown)."""
    serial = sweep_seconds(mechanisms, workload, epsilons, trials)
    plan = parse_scheduler(resolve_auto(scheduler, serial))
    workers = plan.workers if plan.kind in ("processes", "local") else 1
    return serial / max(1, workers)


def sweep_cache() -> SweepCache:
    """The session's per-(data, workload, mechanism, ε, trials, seed) results: only new cells run."""
    cache = st.session_state.get("sweep_cache")
    if cache is None:
        cache = st.session_state.sweep_cache = SweepCache()
    return cache


# The Compare page's default selection (Gaussian twins join it under (ε, δ) and zCDP) at its default trials always
# finishes: it is held to this, not to the action limit (MAX_ACTION_SECONDS), and its Stop button still ends it.
DEFAULT_SWEEP_SECONDS = 3600.0
GAUSSIAN_DEFAULTS = ("gaussian-hb", "gaussian-answers")


def is_default_sweep(mechanisms, epsilons: int, trials: int) -> bool:
    """True for the Compare page's defaults: its default mechanisms (or some of them) at no more trials than
    ``affordable_trials`` gives them on this workload (the page's default trials)."""
    defaults = set(DEFAULT_COMPARE_MECHANISMS) | set(GAUSSIAN_DEFAULTS)
    if not set(mechanisms) <= defaults or any(m not in MECHANISMS for m in mechanisms):
        return False
    return trials <= affordable_trials([MECHANISMS[m] for m in mechanisms], workload(), epsilons=epsilons)


def live_chart(slot, part, epsilons: tuple[float, ...], metrics: tuple[str, ...]) -> None:
    """Draw in ``slot`` the frontier of the mechanisms a running sweep has finished (``part``, from run_sweep's
    ``on_partial``), and name those still running. The chart has no key: each draw updates the one in the slot."""
    running = list(part.attrs.get("running", []))
    finished = list(dict.fromkeys(part["mechanism"]))
    with slot.container():
        if finished:
            x_title, labels, ticks = sweep_axis(epsilons)
            st.plotly_chart(error_figure(summarise(part), metrics[0], envelope=False, x_title=x_title,
                                         point_labels=labels, tick_labels=ticks))
        st.caption(f"Drawn so far: {', '.join(finished) or 'none yet'}"
                   + (f"; still running: {', '.join(running)}." if running else "; all finished."))


def sweep(mechanisms: tuple[str, ...], epsilons: tuple[float, ...], trials: int, metrics: tuple[str, ...],
          progress=None, *, scheduler: str = "auto", live: bool = True):
    """Run (or fetch from the session) a sweep for the current dataset, workload and seed.

    Pairs (mechanism, ε) computed by an earlier sweep with the same data, workload, trials and seed
    are reused from ``sweep_cache()``: adding a mechanism or an epsilon runs only the new cells.
    With ``live``, a chart placed where this is called draws each mechanism as it finishes (the references and the
    data-independent ones first: ``run_order``) and names those still running; it is emptied when the sweep ends.
    The page's defaults (``is_default_sweep``) are not cut at the action limit: they always finish.
    """
    key = (tuning_key(), workload_spec(), mechanisms, epsilons, trials, metrics,
           int(st.session_state.seed), definition(), delta())
    cache = st.session_state.sweeps
    if key not in cache or cache[key].attrs.get("stopped"):
        interrupted: list[BaseException] = []

        def held(call) -> None:
            # A click (e.g. Stop) during the run surfaces as a rerun exception inside the next
            # Streamlit call; hold it, let run_sweep return the partial results, then re-raise.
            if not interrupted:
                try:
                    call()
                except BaseException as err:
                    if not is_script_control(err):
                        raise
                    interrupted.append(err)

        def tick(done: int, total: int, name: str) -> None:
            if progress is not None:
                held(lambda: progress(done, total, name))

        slot = st.empty() if live else None

        def draw(part) -> None:
            if slot is not None:
                held(lambda: live_chart(slot, part, epsilons, metrics))

        # one click never holds the server past the action limit, unless it is the page's defaults
        seconds = DEFAULT_SWEEP_SECONDS if is_default_sweep(mechanisms, len(epsilons), trials) else MAX_ACTION_SECONDS
        # every mechanism at one privacy value per point: ε means "ε at δ" under the session's definition
        cache[key] = run_sweep(tuning_histogram(), workload(), list(mechanisms), list(epsilons), trials,
                               axis=session_axis(), seed=int(st.session_state.seed), metrics=list(metrics),
                               progress=tick, should_stop=lambda: bool(interrupted), limits=RunLimits(),
                               deadline=Deadline(seconds), scheduler=scheduler, cache=sweep_cache(),
                               store=StrategyStore(), on_partial=draw)
        while len(cache) > 8:
            cache.pop(next(iter(cache)))
        if slot is not None and not interrupted:
            slot.empty()  # the page draws the whole results below
        if interrupted:
            raise interrupted[0]
    return cache[key]


def cached_sweep(mechanisms, epsilons, trials, metrics):
    key = (tuning_key(), workload_spec(), tuple(mechanisms), tuple(epsilons), trials,
           tuple(metrics), int(st.session_state.seed), definition(), delta())
    return st.session_state.sweeps.get(key)


def per_bin(mechanisms: tuple[str, ...], epsilon: float, trials: int, *,
            compute: bool = True) -> dict[str, np.ndarray] | None:
    """Mean |error| per bin for each mechanism (replaying the sweep's trials), kept in the session.

    With ``compute=False`` only a stored result is returned (None when there is none).
    """
    key = ("per-bin", tuning_key(), workload_spec(), mechanisms, epsilon, trials,
           int(st.session_state.seed), definition(), delta())
    cache = st.session_state.sweeps
    if key not in cache:
        if not compute:
            return None
        hist, w, seed = tuning_histogram(), workload(), int(st.session_state.seed)
        errors = {name: per_bin_errors(hist, w, name, epsilon, trials, seed=seed, axis=session_axis())
                  for name in mechanisms}
        cache[key] = {name: e for name, e in errors.items() if e is not None}
    return cache[key]


def preview_release(epsilon: float, hist=None) -> np.ndarray:
    """Identity release of ``hist`` (default: the data tuned on) for display only (simulation stream; never
    charged, never exported)."""
    rng = np.random.default_rng([int(st.session_state.seed), SIMULATION_STREAM])
    hist = tuning_histogram() if hist is None else hist
    release = MECHANISMS["identity"].run(hist.counts, parsed_workload("total", hist.domain.shape), epsilon, rng)
    if release.estimate is None:  # identity always estimates the bins; a release may in general hold none
        raise ValueError("the identity release holds no bin estimates")
    return release.estimate
