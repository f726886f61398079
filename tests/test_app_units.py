"""AppTest: the dataset's ledger sets the unit on every page (a ρ ledger is read and asked in ρ)."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from dplens.core.privacy.budget import Budget, Ledger
from dplens.core.privacy.definitions import zcdp_rho
from tests.test_app import APP, record_ledger


def _arrive_on_a_rho_ledger() -> AppTest:
    """A session that starts under pure ε-DP (the default) on a dataset whose recorded ledger is in ρ."""
    record_ledger(Ledger(Budget.zcdp(0.5, 1e-6)).spend("release #1: identity", Budget(0.5)))
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    return at


def test_a_rho_ledger_sets_zcdp_and_every_page_speaks_rho():
    at = _arrive_on_a_rho_ledger()
    assert at.radio(key="privacy_definition").value == "zcdp"  # it was pure: the ledger decided
    at.switch_page("pages/release.py").run()
    assert not at.exception
    assert [n for n in at.number_input if n.key == "release_rho"]  # the form asks for ρ, not ε
    at.switch_page("pages/choose_epsilon.py").run()
    assert not at.exception
    use = [b.label for b in at.button if b.key == "choose_use"]
    assert use and use[0].startswith("Use this ρ (ρ = ") and "at δ 1e-06" in use[0], use
    at.switch_page("pages/compare.py").run()
    at.multiselect(key="compare_mechanisms").set_value(["hb"])
    at.select_slider(key="compare_range").set_value((0.1, 10.0))
    at.slider(key="compare_points").set_value(2)
    at.slider(key="compare_trials").set_value(1)
    at.button(key="compare_run").click().run()
    assert not at.exception
    (chart,) = [json.loads(c.proto.spec) for c in at.get("plotly_chart") if "compare_chart" in c.proto.id]
    axis = chart["layout"]["xaxis"]
    expected = [f"{zcdp_rho(e, 1e-6):.3g}" for e in (0.1, 10.0)]  # the sweep's two points, read as ρ
    assert axis["title"]["text"].startswith("ρ (zCDP") and axis["ticktext"] == expected, axis
    pick = at.selectbox(key="compare_pick_epsilon")
    assert pick.label == "ρ" and all(o.startswith("ρ = ") for o in pick.options)


def test_the_curator_may_still_change_the_definition_after_arriving():
    at = _arrive_on_a_rho_ledger()
    at.radio(key="privacy_definition").set_value("pure").run()  # a later choice, on the same dataset, is kept
    at.switch_page("pages/release.py").run()
    assert not at.exception
    keys = {n.key for n in at.number_input}
    assert "release_epsilon" in keys and "release_rho" not in keys


def test_the_gradual_simulation_speaks_rho_and_draws_at_the_laplace_epsilon():
    """Under a ρ ledger the simulated walk is scheduled, charged and plotted in ρ; each step's Laplace ε = √(2ρ)."""
    at = _arrive_on_a_rho_ledger()
    at.switch_page("pages/gradual.py").run()
    assert not at.exception
    schedule = at.text_input(key="gradual_schedule")
    assert schedule.label.startswith("ρ schedule") and "√(2ρ)" in schedule.help
    schedule.set_value("0.02, 0.08, 0.5").run()
    label = at.button(key="gradual_release").label
    assert label.startswith("Simulate step 1 (ρ 0.02") and "ε" not in label, label
    for _ in range(3):
        at.button(key="gradual_release").click().run()
    assert not at.exception and not at.error
    walk = at.session_state.gradual_walk
    assert walk["unit"] == "ρ" and walk["points"] == [0.02, 0.08, 0.5]
    assert walk["epsilons"] == pytest.approx([0.2, 0.4, 1.0])  # √(2ρ)
    shown = {m.label: m.value for m in at.metric}
    assert shown["A real walk's loss so far (largest ρ)"] == "ρ = 0.5"
    assert shown["Independent releases would cost (Σ ρ)"] == "ρ = 0.6"
    charts = {c.proto.id: json.loads(c.proto.spec) for c in at.get("plotly_chart")}
    (loss,) = [c for k, c in charts.items() if "gradual_loss" in k]
    assert loss["layout"]["xaxis"]["title"]["text"] == "ρ of the latest step"
    assert [t["name"] for t in loss["data"]] == ["noise reduction: ρ_t", "independent releases: Σ ρ"]
    (error,) = [c for k, c in charts.items() if "gradual_error_chart" in k]
    (expected,) = [t for t in error["data"] if t["name"] == "one-shot expected 1/√ρ"]
    y = expected["y"]  # Plotly may send the array as base64 bytes
    y = np.frombuffer(base64.b64decode(y["bdata"]), dtype=y["dtype"]) if isinstance(y, dict) else y
    assert list(y) == pytest.approx([0.02 ** -0.5, 0.08 ** -0.5, 0.5 ** -0.5])
    assert any("charged only its last ρ" in c.value for c in at.caption)
    assert not at.session_state.ledger.spends[1:]  # a simulation: nothing beyond the recorded release is charged


def test_use_this_rho_hands_the_gradual_simulation_a_schedule_in_rho():
    at = _arrive_on_a_rho_ledger()
    at.switch_page("pages/choose_epsilon.py").run()
    choice = list(at.session_state.epsilon_choices.values())[-1]
    at.button(key="choose_use").click().run()
    at.switch_page("pages/gradual.py").run()
    assert not at.exception
    rho = zcdp_rho(choice.epsilon, 1e-6)  # the hand-off carries ε at δ; the schedule ends at its ρ
    assert at.text_input(key="gradual_schedule").value.endswith(f"{rho:.4g}")
