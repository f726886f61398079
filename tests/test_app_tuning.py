"""AppTest: tuning the mechanism and ε without looking at the private data (public data or a DP proxy)."""

import json

import pytest
from streamlit.testing.v1 import AppTest

from dplens.core.privacy.ledger_store import LedgerStore
from tests.test_app import APP, open_page


def _run_compare(at):
    at.multiselect(key="compare_mechanisms").set_value(["hb"])
    at.select_slider(key="compare_range").set_value((0.1, 10.0))
    at.slider(key="compare_points").set_value(2)
    at.slider(key="compare_trials").set_value(1)
    at.button(key="compare_run").click().run()
    assert not at.exception, at.exception


def test_compare_says_it_is_tuned_on_the_private_data_until_a_public_dataset_is_chosen():
    at = open_page("pages/compare.py")
    assert any("Tuned on the private data" in w.value for w in at.warning)
    options = at.selectbox(key="compare_tuning").options  # labels; public data of the same shape only
    assert "the private data (your eyes only)" in options and "spiky (public)" in options
    assert not any(o.startswith("dense") for o in options)
    at.selectbox(key="compare_tuning").set_value("sample:spiky").run()
    assert not any("Tuned on the private data" in w.value for w in at.warning)
    assert any("Tuned on spiky (public)" in i.value for i in at.info)
    _run_compare(at)
    (key,) = at.session_state.sweeps
    assert key[0] == "sample:spiky → sample:smooth"  # the sweep ran on the public data
    at.switch_page("pages/choose_epsilon.py").run()  # the choice holds on every tuning page
    assert at.selectbox(key="choose_tuning").value == "sample:spiky"


def test_a_dp_proxy_is_charged_once_and_then_tunes_for_free():
    at = open_page("pages/choose_epsilon.py")
    store_before = at.session_state.ledger.spent.epsilon
    at.session_state["tuning_proxy_epsilon"] = 0.2
    at.button(key="choose_make_proxy").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.session_state.ledger.spent.epsilon == pytest.approx(store_before + 0.2)
    proxy = at.selectbox(key="choose_tuning").value
    assert proxy.startswith("proxy:") and any("DP proxy of this data" in i.value for i in at.info)
    spends = [e for e in LedgerStore().history() if e["kind"] == "spend"]
    assert spends[-1]["epsilon"] == pytest.approx(0.2)
    at.switch_page("pages/compare.py").run()
    _run_compare(at)
    assert at.session_state.ledger.spent.epsilon == pytest.approx(store_before + 0.2)  # tuning costs nothing more


def test_a_release_records_what_its_choice_was_tuned_on():
    at = open_page("pages/choose_epsilon.py")
    at.selectbox(key="choose_tuning").set_value("sample:spiky").run()
    at.button(key="choose_use").click().run()
    at.switch_page("pages/release.py").run()
    assert any("tuned on spiky (public)" in c.value for c in at.caption)
    at.number_input(key="release_epsilon").set_value(0.5)
    at.button(key="release_spend").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.session_state.releases[0]["tuned_on"] == "spiky (public)"
    output, entry = at.session_state.release_outputs[1], at.session_state.releases[0]
    from dplens.core.release.kernel import export_release

    doc = json.loads(export_release(output["published"], output["request"], fmt="json", dataset="smooth",
                                    tuned_on=entry["tuned_on"], compute_intervals=False))
    assert doc["tuned_on"] == "spiky (public)"  # as the page's JSON download writes it


REPRS = ("ZCDP(", "PureDP(", "ApproxDP(", "Budget(")


def _shown_text(at) -> list[str]:
    """Every text a person sees on the page: messages, captions, labels, options, metric values, markdown."""
    texts = [e.value for kind in ("info", "warning", "error", "success", "caption", "markdown") for e in at.get(kind)]
    texts += [str(getattr(e, "label", "")) for kind in ("selectbox", "number_input", "button", "metric")
              for e in at.get(kind)]
    texts += [str(o) for e in at.get("selectbox") for o in e.options]
    return texts


def test_under_zcdp_the_proxy_is_asked_and_shown_in_rho_never_as_a_repr():
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["privacy_definition"] = "zcdp"
    at.run()
    at.switch_page("pages/choose_epsilon.py").run()
    labels = [n.label for n in at.number_input]
    assert "ρ to spend on a noisy copy" in labels and "ε to spend on a noisy copy" not in labels
    at.number_input(key="tuning_proxy_rho").set_value(0.002)
    at.button(key="choose_make_proxy").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    spends = [e for e in LedgerStore().history() if e["kind"] == "spend"]
    assert spends[-1]["rho"] == pytest.approx(0.002)
    label = at.selectbox(key="choose_tuning").options[at.selectbox(key="choose_tuning").index]
    assert "ρ = 0.002 (ε " in label and "at δ 1e-06" in label, label
    for page in ("pages/choose_epsilon.py", "pages/compare.py", "pages/release.py", "pages/ledger.py"):
        at.switch_page(page).run()
        shown = [t for t in _shown_text(at) if any(r in t for r in REPRS)]
        assert not shown, f"{page} shows a Python repr of a privacy value: {shown}"
