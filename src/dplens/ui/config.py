"""The session config (dplens.core.release.config) from and into the session state."""

from __future__ import annotations

import numpy as np
import streamlit as st

from dplens.core.mechanisms import MECHANISMS
from dplens.core.release.config import ReleaseSettings, SessionConfig, build_recipe
from dplens.ui.datasets import dataset_choices, histogram
from dplens.ui.ledger import ledger, set_total
from dplens.ui.workloads import set_workload


def session_config(notes: list[str] | None = None) -> SessionConfig:
    """The session's settings as a config: dataset, workload, last comparison's grid, seed, budget, release.

    A custom workload travels as its recipe; when it has none (too large, unsupported), the config
    carries the default workload instead and ``notes`` (if given) says why.
    """
    ss = st.session_state
    spec, recipe = ss.workload_spec, None
    if spec is not None and spec.startswith("custom:"):
        recipe = ss.get("custom_recipes", {}).get(spec)
        if not isinstance(recipe, dict):
            if notes is not None:
                notes.append(f"the config cannot carry the custom workload `{spec}` "
                             f"({recipe or 'no recipe'}); it reloads with the dataset's default workload")
            spec, recipe = None, None
    mechanisms: tuple[str, ...] = tuple(m for m in ("identity", "hb", "privelet", "uniform") if m in MECHANISMS)
    epsilons: tuple[float, ...] = tuple(float(f"{e:.4g}") for e in np.geomspace(0.01, 10, 10))
    for key in reversed(list(ss.get("sweeps", {}))):  # the latest comparison: sweep() keys are
        if key[0] != "per-bin":                        # (dataset, workload, mechanisms, epsilons, ...)
            mechanisms, epsilons = key[2], key[3]
            break
    name = ss.get("release_mechanism", "identity")
    settings = ss.get("release_settings", {}).get(name, {})
    release = ReleaseSettings(name, tuple((k, str(v)) for k, v in settings.items()),
                              float(ss.get("release_epsilon", 1.0)), ss.get("release_noise_path", "secure"))
    return SessionConfig(ss.dataset_key, spec, tuple(mechanisms), tuple(epsilons), int(ss.seed),
                         ledger().total.epsilon, release, recipe)


def _apply_custom_workload(config: SessionConfig, spec: str, notes: list[str]) -> None:
    """Select the config's custom workload ``spec``: the same recipe already here, else rebuilt from the recipe."""
    ss, label = st.session_state, spec.split(":", 2)[-1]
    if config.custom_workload is None:
        if spec not in ss.custom_workloads:
            notes.append(f"workload {spec!r} has no recipe in this config; the dataset's default "
                         "workload is used")
            ss.workload_spec = None
        return
    cells = histogram().domain.size
    same = [key for key, recipe in ss.custom_recipes.items()
            if recipe == config.custom_workload and ss.custom_workloads[key].shape[1] == cells]
    if same:
        ss.workload_spec = same[-1]
        return
    try:
        w = build_recipe(config.custom_workload, histogram().domain.shape)
    except ValueError as err:
        notes.append(f"custom workload {label!r} was not rebuilt ({err}); the dataset's default workload is used")
        ss.workload_spec = None
        return
    set_workload(w, label, config.custom_workload)


def apply_config(config: SessionConfig) -> list[str]:
    """Load a config into the session (call from a callback). Never resets or refunds the ledger.

    Returns notes on what could not be applied (e.g. an upload that is not in this session).
    """
    ss, notes = st.session_state, []
    if config.dataset in dataset_choices():
        ss.dataset_key = config.dataset
    else:
        notes.append(f"dataset {config.dataset!r} is not available here (uploads live only in their "
                     "session): upload it again, then reload the config")
    ss.workload_spec = config.workload
    if config.workload is not None and config.workload.startswith("custom:"):
        _apply_custom_workload(config, config.workload, notes)
    ss.seed = config.seed
    led = ledger()
    if abs(led.total.epsilon - config.total_epsilon) <= 1e-12:
        pass
    elif led.spends:
        notes.append(f"the total budget stays ε = {led.total.epsilon:g}: it is fixed after the first release")
    elif not 0.01 <= config.total_epsilon <= 100:
        notes.append(f"total budget ε = {config.total_epsilon:g} is outside [0.01, 100]; "
                     f"kept ε = {led.total.epsilon:g}")
    else:
        set_total(config.total_epsilon)
    ss.compare_mechanisms = list(config.mechanisms)
    lo, hi = config.epsilons[0], config.epsilons[-1]
    if len(config.epsilons) >= 2 and {lo, hi} <= {0.001, 0.01, 0.1, 1.0, 10.0, 100.0} and lo < hi:
        ss.compare_range, ss.compare_points = (lo, hi), len(config.epsilons)
    ss.session_config = config  # the full grid, for pages that can use an arbitrary one
    rel = config.release
    ss.release_mechanism = rel.mechanism
    current = ss.get("release_noise_path", "secure")
    if rel.noise_path != current and rel.noise_path == "secure":
        ss.release_noise_path = "secure"
        notes.append("the noise path is now 'secure', as the config asks")
    elif rel.noise_path != current:  # never switch to seeded noise behind the curator's back
        notes.append(f"the config asks for the {rel.noise_path!r} noise path; it stays {current!r} "
                     "(choose it yourself on the Release page)")
    ss.release_epsilon = min(max(rel.epsilon, 0.001), 100.0)  # the widget's range
    for key, value in rel.params:
        is_flag = isinstance(getattr(MECHANISMS[rel.mechanism], key, None), bool)
        ss[f"release_{rel.mechanism}_{key}"] = value.lower() == "true" if is_flag else value
    return notes
