"""AppTest behaviour tests for the Choose-epsilon and Gradual-release pages (see docs/benchmarks.md, "Test
conventions")."""

from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from dplens.core.data.domain import Histogram
from dplens.core.queries.workloads import l1_sensitivity, parse_workload

APP = str(Path(__file__).resolve().parent.parent / "app.py")


def open_page(path: str, **state) -> AppTest:
    """Run app.py (shell + state), then switch to the page; both .run() calls are required."""
    at = AppTest.from_file(APP, default_timeout=60)
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    return at.switch_page(path).run()


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def test_lee_clifton_tab_reproduces_table_3_and_both_epsilons():
    at = open_page("pages/choose_epsilon.py")
    assert not at.exception
    shown = metrics(at)
    assert shown["Largest ε, bound (Eq. 7)"] == "0.3829393"
    assert shown["Largest ε, tight (Eq. 3)"] == "0.4317201"
    table = next(d.value for d in at.dataframe if "ε = 2" in d.value.columns)  # after the targets editor
    assert table["ε = 2"].tolist() == [0.6825, 0.1315, 0.1039, 0.0821]
    assert table["ε = 0.5"].tolist() == [0.3477, 0.2303, 0.2172, 0.2048]
    at.selectbox(key="lc_example").set_value("School year {1, 2, 3, 4} (paper)").run()
    shown = metrics(at)
    assert (shown["Largest ε, bound (Eq. 7)"], shown["Largest ε, tight (Eq. 3)"]) == ("0.3378876", "0.5251497")
    at.selectbox(key="lc_example").set_value("Absence days {1, 2, 3, 10} (paper)")
    at.selectbox(key="lc_query").set_value("median").run()
    shown = metrics(at)
    assert (shown["Largest ε, bound (Eq. 7)"], shown["Largest ε, tight (Eq. 3)"]) == ("1.6218604", "2.7725887")


def test_lee_clifton_rejects_a_target_below_the_prior():
    at = open_page("pages/choose_epsilon.py")
    at.number_input(key="lc_rho").set_value(0.2).run()
    assert any("rho must be in (1/n, 1)" in e.value for e in at.error)


def test_accuracy_tab_gives_the_closed_form_epsilon():
    at = open_page("pages/choose_epsilon.py")
    at.selectbox(key="choose_mechanism").set_value("laplace-on-answers")
    at.number_input(key="choose_target").set_value(25.0).run()
    assert not at.exception
    assert at.session_state.workload_spec is None  # the default: random-range:m=2000,seed=0 on 4096 bins
    expected = np.sqrt(2) * l1_sensitivity(parse_workload("random-range:m=2000,seed=0", (4096,))) / 25.0
    assert metrics(at)["Smallest epsilon meeting the target"] == f"ε = {expected:.4g}"


def test_accuracy_tab_simulates_when_no_formula_exists():
    at = open_page("pages/choose_epsilon.py")
    at.selectbox(key="choose_mechanism").set_value("uniform")
    at.number_input(key="choose_target").set_value(20000.0).run()  # uniform is biased: ~1.2e4
    assert any("Estimate it by simulating" in i.value for i in at.info)
    at.slider(key="choose_trials").set_value(2)
    at.button(key="choose_simulate").click().run()
    assert not at.exception and not at.error
    assert "Smallest epsilon meeting the target" in metrics(at)
    assert [c.method for c in at.session_state.epsilon_choices.values()].count("simulation") == 1
    at.run()  # a rerun reuses the stored simulation instead of asking again
    assert "Smallest epsilon meeting the target" in metrics(at)
    assert not any("Estimate it by simulating" in i.value for i in at.info)


def test_five_simulated_gradual_steps_report_the_last_epsilon_and_charge_nothing():
    at = open_page("pages/gradual.py")
    for _ in range(5):
        at.button(key="gradual_release").click().run()
    assert not at.exception
    assert not at.session_state.ledger.spends  # a simulation (seeded, never exported): nothing charged
    assert metrics(at)["A real walk's loss so far (largest ε)"] == "ε = 1"  # Σε would be 1.85
    assert at.button(key="gradual_release").disabled
    walk = at.session_state.gradual_walk
    assert walk["epsilons"] == [0.05, 0.1, 0.2, 0.5, 1.0] and len(walk["values"]) == 5
    at.button(key="gradual_reset").click().run()
    at.button(key="gradual_release").click().run()
    assert at.session_state.gradual_walk["epsilons"] == [0.05] and not at.session_state.ledger.spends


def test_accuracy_first_search_reports_its_losses():
    at = open_page("pages/gradual.py")
    at.number_input(key="search_target").set_value(200.0)
    at.button[-1].click().run()  # the form's submit button
    assert not at.exception
    shown = metrics(at)
    result, doubling, _ = at.session_state.gradual_search
    assert result.succeeded
    stopped_loss = result.epsilon_above_threshold + result.epsilons[result.stopped_at]
    assert shown["Privacy loss where it stopped"] == f"{stopped_loss:.4g}"
    assert shown["Doubling baseline loss"] == f"{doubling.privacy_loss:.4g}"
    assert at.session_state.ledger.spent.epsilon == 0  # a what-if: nothing is charged
    table = at.dataframe[-1].value  # the theory line Ligett et al. compare against: √(2‖W‖²_F/m)/α
    theory = table[table.method.str.startswith("theory")]
    assert len(theory) == 1 and theory.total.iloc[0] > 0


@pytest.mark.parametrize("path", ["pages/choose_epsilon.py", "pages/gradual.py"])
def test_pages_work_on_an_uploaded_histogram(path):
    uploads = {"upload:t": Histogram.from_counts(np.arange(30.0), name="tiny")}
    at = open_page(path, uploads=uploads, dataset_key="upload:t")
    assert not at.exception
    assert not [e.value for e in at.error if e.value.startswith("Something went wrong")]
    if path.endswith("gradual.py"):
        at.button(key="gradual_release").click().run()
        assert not at.exception and at.session_state.gradual_walk["dataset_key"] == "upload:t"

