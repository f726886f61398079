"""Session state: the keys every page relies on and the seeded random streams (the ledger: ui.ledger)."""

from __future__ import annotations

import numpy as np
import streamlit as st

from dplens.core.analysis.experiment import SweepCache
from dplens.core.data.datasets import DEFAULT_DATASET
from dplens.core.privacy.budget import Budget, Ledger
from dplens.core.privacy.ledger_store import DEFAULT_TOTAL_EPSILON

SIMULATION_STREAM = 7_777


def init_state() -> None:
    """Declare every session key with its default (idempotent; every page calls it)."""
    ss = st.session_state
    ss.setdefault("dataset_key", f"sample:{DEFAULT_DATASET}")
    ss.setdefault("uploads", {})                 # dataset_key -> Histogram (uploaded this session)
    ss.setdefault("seed", 0)
    ss.setdefault("ledger", Ledger(Budget(DEFAULT_TOTAL_EPSILON)))  # last value read from the store (ui.ledger)
    ss.setdefault("fingerprints", {})            # dataset_key -> fingerprint (the ledger's key)
    ss.setdefault("ledger_parents", {})          # derived dataset_key -> the source's fingerprint
    ss.setdefault("releases", [])                # history: dicts with mechanism, epsilon, loss, ...
    ss.setdefault("release_outputs", {})         # release number -> {"release", "settings", "seconds", "intervals"}
    ss.setdefault("release_counter", 0)
    ss.setdefault("workload_spec", None)         # None = default for the dataset's shape
    ss.setdefault("sweeps", {})                  # inputs key -> DataFrame (results survive page switches)
    ss.setdefault("sweep_cache", SweepCache())   # (data, workload, mechanism, ε, ...) -> runs: incremental Compare
    ss.setdefault("flash_error", None)
    ss.setdefault("custom_workloads", {})        # workload_spec "custom:…" -> Workload (stacks, uploads, drawn)
    ss.setdefault("custom_recipes", {})          # workload_spec "custom:…" -> recipe for the config, or why not
    ss.setdefault("workload_parts", [])          # workloads page: the stack being composed
    ss.setdefault("gradual_walk", None)          # gradual page: {"dataset_key", "epsilons", "values"}
    ss.setdefault("gradual_search", None)        # gradual page: last accuracy-first + doubling result
    ss.setdefault("epsilon_choices", {})         # choose-epsilon page: simulated choices by inputs


def release_rng() -> np.random.Generator:
    """An independent, reproducible stream per release: default_rng([seed, release_counter])."""
    return np.random.default_rng([int(st.session_state.seed), int(st.session_state.release_counter)])


def simulation_rng(*stream: int) -> np.random.Generator:
    """Seeded stream for what-if simulations (never charged): default_rng([seed, SIMULATION_STREAM, ...])."""
    return np.random.default_rng([int(st.session_state.seed), SIMULATION_STREAM, *stream])


def show_flash() -> None:
    err = st.session_state.get("flash_error")
    if err:
        st.error(err)
        st.session_state.flash_error = None
