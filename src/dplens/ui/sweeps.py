"""Simulations for the current dataset and workload (never charged): sweeps kept in the session, previews."""

from __future__ import annotations

import multiprocessing
import os

import numpy as np
import streamlit as st

from dplens.core.analysis.bounded import warm_up
from dplens.core.analysis.cost import Deadline, RunLimits, sweep_seconds
from dplens.core.analysis.execution import parse_scheduler, resolve_auto
from dplens.core.analysis.experiment import (
    DEFAULT_COMPARE_MECHANISMS,
    SweepCache,
    per_bin_errors,
    run_sweep,
    warm_up_workers,
)
from dplens.core.analysis.strategy_store import StrategyStore
from dplens.core.data.datasets import DEFAULT_DATASET, load_histogram
from dplens.core.mechanisms import MECHANISMS
from dplens.ui.definition import definition
from dplens.ui.guard import is_script_control
from dplens.ui.ledger import delta
from dplens.ui.privacy import matched
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
    runs = len(mechanisms) * epsilons * trials
    plan = parse_scheduler(resolve_auto(scheduler, runs, workload.shape[1]))
    workers = plan.workers if plan.kind in ("processes", "local") else 1
    return sweep_seconds(mechanisms, workload, epsilons, trials) / max(1, workers)


def sweep_cache() -> SweepCache:
    """The session's per-(data, workload, mechanism, ε, trials, seed) results: only new cells run."""
    cache = st.session_state.get("sweep_cache")
    if cache is None:
        cache = st.session_state.sweep_cache = SweepCache()
    return cache


def sweep(mechanisms: tuple[str, ...], epsilons: tuple[float, ...], trials: int, metrics: tuple[str, ...],
          progress=None, *, scheduler: str = "auto"):
    """Run (or fetch from the session) a sweep for the current dataset, workload and seed.

    Pairs (mechanism, ε) computed by an earlier sweep with the same data, workload, trials and seed
    are reused from ``sweep_cache()``: adding a mechanism or an epsilon runs only the new cells.
    """
    key = (tuning_key(), workload_spec(), mechanisms, epsilons, trials, metrics,
           int(st.session_state.seed), definition(), delta())
    cache = st.session_state.sweeps
    if key not in cache or cache[key].attrs.get("stopped"):
        interrupted: list[BaseException] = []

        def tick(done: int, total: int, name: str) -> None:
            # A click (e.g. Stop) during the run surfaces as a rerun exception inside the next
            # Streamlit call; hold it, let run_sweep return the partial results, then re-raise.
            if progress is not None and not interrupted:
                try:
                    progress(done, total, name)
                except BaseException as err:
                    if not is_script_control(err):
                        raise
                    interrupted.append(err)

        # every mechanism at matched privacy: ε means "ε at δ" under the session's definition
        cache[key] = run_sweep(tuning_histogram(), workload(), [matched(m) for m in mechanisms], list(epsilons), trials,
                               seed=int(st.session_state.seed), metrics=list(metrics), progress=tick,
                               should_stop=lambda: bool(interrupted), limits=RunLimits(),
                               deadline=Deadline(),  # one click never holds the server past the action limit
                               scheduler=scheduler, cache=sweep_cache(), store=StrategyStore())
        while len(cache) > 8:
            cache.pop(next(iter(cache)))
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
        errors = {name: per_bin_errors(hist, w, matched(name), epsilon, trials, seed=seed) for name in mechanisms}
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
