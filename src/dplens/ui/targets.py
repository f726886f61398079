"""Several accuracy targets at once (Choose epsilon): the cached plan per mechanism and the best split."""

from __future__ import annotations

from typing import cast

import streamlit as st

from dplens.core.analysis import selection
from dplens.core.mechanisms import MECHANISMS
from dplens.core.queries.workloads import parse_workload


@st.cache_data(max_entries=16, show_spinner=False)
def target_plans(mechanisms: tuple[str, ...], targets: tuple[tuple[str, str, float, str, float | None, bool], ...],
                 shape: tuple[int, ...]):
    """``selection.epsilon_for_targets`` for (label, workload spec, ±, metric, confidence, all at once) rows.

    Cached: some error formulas (hb, privelet on 4096-bin prefixes) take seconds, and they never change.
    """
    built = [selection.AccuracyTarget(label, parse_workload(spec, shape), size, metric, confidence, together)
             for label, spec, size, metric, confidence, together in targets]
    return selection.epsilon_for_targets([MECHANISMS[n] for n in mechanisms], built)


def plan_releases(plan: selection.TargetsPlan, labels: list[str]) -> list[dict[str, object]]:
    """The releases a plan makes: one row per separate release and one for the shared release (if any)."""
    names = plan.reason.split(", ")
    epsilons = cast(tuple[float, ...], plan.epsilons)  # the best plan: every group has an ε
    rows: list[dict[str, object]] = [
        {"release": f"own release #{i + 1}", "mechanism": names[g], "groups": labels[g], "ε": epsilons[g]}
        for i, g in enumerate(g for g in range(len(labels)) if g not in plan.shared)]
    if plan.shared:
        rows.append({"release": "one shared release", "mechanism": names[plan.shared[0]],
                     "groups": " · ".join(labels[g] for g in plan.shared),
                     "ε": max(epsilons[g] for g in plan.shared)})
    return rows
