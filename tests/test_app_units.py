"""AppTest: the dataset's ledger sets the unit on every page (a ρ ledger is read and asked in ρ)."""

from __future__ import annotations

import json

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
