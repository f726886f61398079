"""The Release page's logic (callbacks, sections, figures); the page script calls it through ``ui``."""

from __future__ import annotations

import time

import numpy as np
import streamlit as st

import ui
from core.analysis.bounded import run_bounded
from core.analysis.cost import estimate_cost
from core.analysis.intervals import release_intervals
from core.data import limits
from core.mechanisms import MECHANISMS, configure
from core.mechanisms.gaussian import Matched, for_privacy
from core.privacy.definitions import ledger_charge, target
from core.privacy.ledger_store import new_export_id
from core.privacy.noise import noise_sampler, noise_source
from core.release.config import parse_config
from core.release.export import (
    SIMULATION_LABEL,
    privacy_metadata,
)
from core.release.publish import history_entry, simulated_intervals

SHOWN_QUERIES = 40      # workload answers drawn with error bars


SIMULATION_TRIALS = 20  # re-runs behind the simulated intervals (simulation stream, never charged)


EXPORT_INTERVAL_TRIALS = 100  # re-runs on the released output behind the exported intervals


AUTO_SIMULATION_SECONDS = 3.0  # simulate automatically when the re-runs should take at most this long


def spend_and_release() -> None:
    """Button callback: run, then charge, then log (a rerun never reaches this; style rule 7).

    Reads the widgets at click time (not render-time args), so an edit and a click in the same
    round trip charge what the user sees.
    """
    ss = st.session_state
    name, epsilon, noise_path = ss.release_mechanism, float(ss.release_epsilon), ss.release_noise_path
    settings = ui.mechanism_settings(name, key="release", render=False)
    number = len(st.session_state.releases) + 1
    label = f"release #{number}: {name}"
    definition, delta = ui.definition(), ui.delta()
    try:
        privacy = target(definition, epsilon, delta)
        charge_epsilon, charge_delta, rho = ledger_charge(privacy, delta)
        base = configure(MECHANISMS[name], settings)
        runner = base if definition == "pure" else Matched(base, definition, delta)
        mechanism = runner.resolve(epsilon)[0] if isinstance(runner, Matched) else for_privacy(base, privacy)[0]
    except ValueError as err:
        st.session_state.flash_error = f"{name} not released: {err}"
        return
    if ui.released_data() is None and not ui.fits_or_flash(label, charge_epsilon, delta=charge_delta, rho=rho,
                                                           what=ui.DEFINITION_LABELS[definition]):
        return  # refused before any work: the flash names the remaining budget in the ledger's unit
    _, refusal = ui.run_check(name, settings, ui.workload())
    if refusal:  # over the memory or time limit (core.analysis.cost): nothing run, nothing charged
        st.session_state.flash_error = f"{name} not run: {refusal}"
        return
    stream = int(st.session_state.release_counter)
    try:
        counts = ui.histogram().counts
        rng = ui.release_rng() if noise_path == "exploration" else noise_source("secure", mechanism=mechanism,
                                                                                  counts=counts)
        started = time.perf_counter()
        with st.spinner(f"Releasing with {name} at ε = {epsilon:g} (stopped after {limits.MAX_ACTION_SECONDS:g} s)…"):
            # the limit is read per click: an operator (or a test) may change it while the server runs
            release = run_bounded(runner.run, counts, ui.workload(), epsilon, rng, seconds=limits.MAX_ACTION_SECONDS,
                                  estimated_seconds=estimate_cost(mechanism, ui.workload()).seconds)
        seconds = time.perf_counter() - started
    except Exception as err:  # noqa: BLE001 - nothing published, nothing charged; never a raw traceback
        message = str(err).splitlines()[0] if str(err) else type(err).__name__
        st.session_state.flash_error = f"{name} cannot release this input: {message}"
        return
    exploring = noise_path == "exploration"
    export_id = None if exploring else new_export_id()  # a simulation is never exported
    if not ui.charge(label, charge_epsilon, mechanism=name, workload=ui.workload_spec(), export_id=export_id,
                     delta=charge_delta, rho=rho,
                     note=f"noise path: {noise_path}" + ("" if definition == "pure" else f"; {privacy}")
                     + (f" ({SIMULATION_LABEL})" if exploring else "")):
        return
    entry = history_entry(
        release, number=number, dataset=st.session_state.dataset_key, workload=ui.workload_spec(),
        seed=int(st.session_state.seed) if exploring else None, stream=stream if exploring else None,
        noise_path=noise_path, noise_sampler=noise_sampler(rng, mechanism))
    meta = privacy_metadata(release)
    entry.update(definition=definition, delta=meta["delta"], rho=meta["rho"], sigma=meta["sigma"])
    st.session_state.releases.append({**entry, "export_id": export_id})
    st.session_state.release_outputs[number] = {"release": release, "settings": settings, "seconds": seconds}
    st.session_state.release_show = number
    ui.save_workspace()  # the history survives a reload even if this run is cut short


def export_intervals(number: int, simultaneous: bool) -> None:
    """Intervals for release ``number`` from its released values only (never the true data); kept for export."""
    entry, output = st.session_state.releases[number - 1], st.session_state.release_outputs[number]
    rng = np.random.default_rng([int(st.session_state.seed), ui.SIMULATION_STREAM, 8, number])
    mechanism = configure(MECHANISMS[entry["mechanism"]], output["settings"])
    try:
        intervals = release_intervals(mechanism, output["release"], ui.workload(), simultaneous=simultaneous,
                                      trials=EXPORT_INTERVAL_TRIALS, rng=rng)
    except Exception as err:  # noqa: BLE001 - the export goes without intervals; never a raw traceback
        st.session_state.flash_error = f"No intervals for release #{number}: {str(err).splitlines()[0]}"
        return
    output.setdefault("export_intervals", {})[simultaneous] = intervals


def rerun_seconds(number: int) -> float:
    """Seconds for one re-run of release ``number`` on its own released output (sizes the interval work)."""
    entry, output = st.session_state.releases[number - 1], st.session_state.release_outputs[number]
    release = output["release"]
    stand_in = np.clip(release.estimate, 0, None) if release.estimate is not None else None
    if stand_in is None:
        return output["seconds"]
    started = time.perf_counter()
    try:
        configure(MECHANISMS[entry["mechanism"]], output["settings"]).run(
            stand_in, ui.workload(), entry["epsilon"], np.random.default_rng([int(st.session_state.seed), 9]))
    except Exception:  # noqa: BLE001 - only a timing probe; the interval step reports real errors
        return output["seconds"]
    return time.perf_counter() - started


def load_config() -> None:
    """Button callback: parse the uploaded or pasted config and apply it (the ledger is never refunded)."""
    upload = st.session_state.get("release_config_upload")
    text = upload.getvalue() if upload is not None else st.session_state.get("release_config_text", "")
    try:
        notes = ui.apply_config(parse_config(text))
    except ValueError as err:
        st.session_state.flash_error = f"Config not loaded: {err}"
        return
    st.session_state.release_notice = "Config loaded." + "".join(f" Note: {n}." for n in notes)


def simulate(number: int) -> None:
    """Intervals for release ``number`` from re-runs on a simulation stream (curator only; never charged)."""
    entry, output = st.session_state.releases[number - 1], st.session_state.release_outputs[number]
    rng = np.random.default_rng([int(st.session_state.seed), ui.SIMULATION_STREAM, 6, number])
    mechanism = configure(MECHANISMS[entry["mechanism"]], output["settings"])
    if entry.get("definition", "pure") != "pure":
        mechanism = Matched(mechanism, entry["definition"], entry["delta"])
    output["intervals"] = simulated_intervals(mechanism, ui.histogram().counts, ui.workload(), entry["epsilon"],
                                              SIMULATION_TRIALS, rng)

