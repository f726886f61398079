"""AppTest: the privacy definition in the sidebar, Compare at matched privacy, a zCDP release, its export."""

import json

import pytest
from streamlit.testing.v1 import AppTest

from dplens.core.privacy.budget import Budget, Ledger
from dplens.core.privacy.definitions import ZCDP, zcdp_rho
from dplens.core.release.export import privacy_from_metadata, release_to_json
from tests.test_app import APP, open_page, record_ledger


def test_sidebar_offers_the_definitions_and_delta_and_shows_rho():
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert at.radio(key="privacy_definition").value == "pure"
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["privacy_definition"] = "zcdp"
    at.run()  # (a second run of app.py in AppTest drops the sidebar: preset the state instead)
    assert not at.exception
    assert at.select_slider(key="privacy_delta").value == 1e-6  # the one δ: ρ is shown as ε at it
    assert "sidebar_total_delta" not in [s.key for s in at.select_slider]  # a ρ total has no δ budget
    assert at.radio(key="sidebar_total_unit").value == "ρ"  # a new dataset under zCDP: a ρ total (ε = 5 at δ)
    assert at.number_input(key="sidebar_total_rho").value == pytest.approx(0.4631, abs=1e-4)
    assert any("spent ρ = 0 of ρ = 0.4631" in c.value for c in at.sidebar.caption)


def test_compare_under_zcdp_puts_laplace_and_gaussian_on_one_axis():
    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state["privacy_definition"] = "zcdp"
    at.run()
    at.switch_page("pages/compare.py").run()
    assert not at.exception
    assert "gaussian-hb" in at.multiselect(key="compare_mechanisms").options
    at.multiselect(key="compare_mechanisms").set_value(["hb", "gaussian-hb", "gaussian-answers"])
    at.select_slider(key="compare_range").set_value((0.1, 10.0))
    at.slider(key="compare_points").set_value(3)
    at.slider(key="compare_trials").set_value(2)
    at.button(key="compare_run").click().run()
    assert not at.exception
    results = next(iter(at.session_state.sweeps.values()))
    assert {"hb", "gaussian-hb", "gaussian-answers"} <= set(results["mechanism"])
    assert any("ε at that δ" in i.value for i in at.info)


def test_pure_definition_hides_gaussian_mechanisms():
    at = open_page("pages/release.py")
    assert "gaussian-hb" not in at.selectbox(key="release_mechanism").options


@pytest.mark.parametrize("mechanism", ["gaussian-identity", "hb"])
def test_zcdp_release_charges_rho_and_its_export_round_trips(mechanism):
    fingerprint = record_ledger(Ledger(Budget(5.0, 1e-5)))
    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state["privacy_definition"] = "zcdp"
    at.run()
    at.switch_page("pages/release.py").run()
    at.selectbox(key="release_mechanism").set_value(mechanism)
    at.number_input(key="release_rho").set_value(zcdp_rho(1.0, 1e-6))  # the form asks for ρ under zCDP
    at.button(key="release_spend").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert {m.label: m.value for m in at.metric}["ρ charged"] == f"{zcdp_rho(1.0, 1e-6):.4g}"
    assert "#1: " in at.selectbox(key="release_show").options[0] and "ρ=0.02436" in at.selectbox(
        key="release_show").options[0]
    entry = at.session_state.releases[0]
    assert entry["definition"] == "zcdp" and entry["delta"] == 1e-6
    assert entry["rho"] == pytest.approx(zcdp_rho(1.0, 1e-6))
    assert at.session_state.ledger.spent.delta == pytest.approx(1e-6)
    from dplens.core.privacy.ledger_store import LedgerStore

    spends = [e for e in LedgerStore().history(fingerprint) if e["kind"] == "spend"]
    assert spends[-1]["rho"] == pytest.approx(zcdp_rho(1.0, 1e-6))
    release = at.session_state.release_outputs[1]["release"]
    doc = json.loads(release_to_json(release, workload="identity", noise_path="secure"))
    assert doc["definition"] == "zcdp" and doc["delta"] == 1e-6
    stated = privacy_from_metadata(doc)
    assert isinstance(stated, ZCDP) and stated.rho == pytest.approx(zcdp_rho(1.0, 1e-6))
    if mechanism.startswith("gaussian"):
        assert doc["sigma"] > 0 and doc["noise"] == "gaussian"


def test_gaussian_release_without_a_delta_total_says_what_to_do():
    record_ledger(Ledger(Budget(5.0)))
    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state["privacy_definition"] = "approx"
    at.run()
    at.switch_page("pages/release.py").run()
    at.selectbox(key="release_mechanism").set_value("gaussian-hb")
    at.button(key="release_spend").click().run()
    assert not at.exception
    assert "Total budget δ" in at.error[0].value and not at.session_state.releases


def test_delta_above_one_over_n_is_warned():
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["privacy_definition"] = "approx"
    at.session_state["privacy_delta"] = 1e-4  # the smooth sample has 100,000 records
    at.run()
    assert any("above 1/n" in w.value for w in at.sidebar.warning)


def test_choose_epsilon_from_an_accuracy_target_for_a_gaussian_mechanism():
    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state["privacy_definition"] = "zcdp"
    at.run()
    at.switch_page("pages/choose_epsilon.py").run()
    at.selectbox(key="choose_mechanism").set_value("gaussian-hb").run()
    assert not at.exception, at.exception
    value = {m.label: m.value for m in at.metric}["Smallest ρ meeting the target"]  # zCDP's own unit
    assert value.startswith("ρ = ")
    assert any(c.value.startswith("That is ε = ") and "at δ = 1e-06" in c.value for c in at.caption)


def test_ledger_page_shows_the_spend_in_rho_under_zcdp():
    record_ledger(Ledger(Budget(5.0, 1e-5), (("release #1: identity", Budget(1.0)),)))
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["privacy_definition"] = "zcdp"
    at.run()
    at.switch_page("pages/ledger.py").run()
    assert not at.exception
    (info,) = [i.value for i in at.info if "ρ spent" in i.value]
    assert "ρ spent = 0.5 of ρ = 0.4631" in info and "equivalent ε = 5.222" in info


def test_a_rho_total_is_set_in_the_sidebar_and_zcdp_releases_spend_it_until_refused():
    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state["privacy_definition"] = "zcdp"
    at.session_state["sidebar_total_rho"] = 0.05  # (a second run of app.py in AppTest drops the sidebar)
    at.run()
    assert at.radio(key="sidebar_total_unit").options == ["ε", "ρ"]
    at.number_input(key="sidebar_total_rho").set_value(0.05)
    at.switch_page("pages/release.py").run()  # the input's callback records the ρ total
    assert not at.exception and not at.error, [e.value for e in at.error]
    led = at.session_state.ledger
    assert led.unit == "rho" and led.total.rho == 0.05 and led.total.delta == 1e-6
    assert "remaining ρ = 0.05 (ε = " in at.caption[0].value
    at.selectbox(key="release_mechanism").set_value("gaussian-identity")
    at.number_input(key="release_rho").set_value(zcdp_rho(1.0, 1e-6))  # ε = 1 at δ = 1e-6: ρ = 0.024356
    for _ in range(2):
        at.button(key="release_spend").click().run()
        assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.session_state.ledger.spent.rho == pytest.approx(2 * zcdp_rho(1.0, 1e-6))
    at.button(key="release_spend").click().run()
    assert "needs rho=0.024356; remaining is rho=0.00128806 of 0.05" in at.error[0].value
    assert len(at.session_state.releases) == 2
    at.session_state["privacy_definition"] = "approx"  # an (ε, δ) release cannot be charged to a ρ total
    at.session_state["release_epsilon"] = 0.01  # read at the click, as the (ε, δ) form would set it
    at.button(key="release_spend").click().run()
    assert "implies no rho" in at.error[0].value and len(at.session_state.releases) == 2


def test_the_ledger_page_shows_a_rho_total_in_rho():
    record_ledger(Ledger(Budget.zcdp(0.5, 1e-6), (("release #1: hb", Budget(0.5)),)))
    at = open_page("pages/ledger.py")
    assert not at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert (metrics["Total ρ"], metrics["Spent ρ"], metrics["Remaining ρ"]) == ("0.5", "0.125", "0.375")
    assert at.session_state.ledger.remaining.rho == 0.375
    shown = next(df.value for df in at.dataframe if "Event" in df.value.columns)  # the history, in ρ only
    assert "ρ" in shown.columns and "ε" not in shown.columns and "δ" not in shown.columns
    from dplens.core.privacy.ledger_store import LedgerStore
    from dplens.core.release.export import history_to_csv

    history = LedgerStore().history(at.session_state.ledger_dataset)
    csv = history_to_csv(history).decode()
    assert "total ρ=0.5 (ε=5.222 at δ=1e-06)" in csv and ",0.5," in csv  # the CSV carries the unit and ρ


@pytest.mark.parametrize("definition", ["zcdp", "approx"])
def test_a_pure_total_with_releases_is_offered_the_compatible_total_not_a_dead_end(definition):
    from dplens.core.privacy.ledger_store import LedgerStore

    fingerprint = record_ledger(Ledger(Budget(2.0), (("release #1: identity", Budget(1.0)),)))
    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state["privacy_definition"] = definition
    at.session_state["sidebar_convert_reason"] = "Gaussian releases from now on"  # (AppTest drops the sidebar on
    at.run()                                                                     # a second run: preset it)
    assert not at.exception and any("cannot pay for" in c.value for c in at.sidebar.caption)
    at.button(key="sidebar_convert").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    led = LedgerStore().ledger(fingerprint)
    if definition == "zcdp":  # ρ = ε²/2 = 2; the pure release of ε = 1 counts 0.5
        assert led.unit == "rho" and led.total.rho == pytest.approx(2.0) and led.spent.rho == pytest.approx(0.5)
    else:
        assert led.total == Budget(2.0, 1e-5) and led.spent.epsilon == 1.0
    assert "converted from ε=2: Gaussian releases from now on" in LedgerStore().history(fingerprint)[-1]["note"]
    at.switch_page("pages/release.py").run()
    at.selectbox(key="release_mechanism").set_value("gaussian-identity")
    at.button(key="release_spend").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert len(at.session_state.releases) == 1


def test_one_delta_under_approx_dp_the_totals_each_release_gets_a_tenth():
    from dplens.core.privacy.ledger_store import LedgerStore

    fingerprint = record_ledger(Ledger(Budget(5.0, 1e-5)))
    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state["privacy_definition"] = "approx"
    at.run()
    assert not at.exception
    assert "privacy_delta" not in [s.key for s in at.select_slider]  # one δ control: the total's
    assert at.select_slider(key="sidebar_total_delta").value == 1e-5
    assert any("Each (ε, δ) release: δ = 1e-06" in c.value for c in at.sidebar.caption)
    at.switch_page("pages/release.py").run()
    at.selectbox(key="release_mechanism").set_value("gaussian-identity")
    at.number_input(key="release_epsilon").set_value(0.5)
    at.button(key="release_spend").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    spend = [e for e in LedgerStore().history(fingerprint) if e["kind"] == "spend"][-1]
    assert spend["delta"] == pytest.approx(1e-6) and spend["epsilon"] == pytest.approx(0.5)
