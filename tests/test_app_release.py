"""AppTest behaviour tests for the Release page: ledger, overspend, reruns, history, session config reload."""

import csv
import dataclasses
import io
import json
import re

import pytest
from streamlit.testing.v1 import AppTest

from dplens.core.data.datasets import load_histogram
from dplens.core.data.fingerprint import dataset_fingerprint
from dplens.core.privacy.budget import Budget, Ledger
from dplens.core.privacy.ledger_store import LedgerStore
from dplens.core.release.config import config_to_json, parse_config
from dplens.core.release.export import history_to_csv, release_to_csv, release_to_json
from tests.test_app import APP, open_page, record_ledger

RELEASE = "pages/release.py"


@pytest.fixture
def release_page():
    at = open_page(RELEASE)
    at.radio(key="release_noise_path").set_value("exploration").run()  # fast and seeded
    return at


def spend(at, epsilon: float, mechanism: str = "identity"):
    at.selectbox(key="release_mechanism").set_value(mechanism)
    at.number_input(key="release_epsilon").set_value(epsilon)
    return at.button(key="release_spend").click().run()


def test_spend_and_release_reduces_the_remaining_budget(release_page):
    at = spend(release_page, 1.5)
    assert not at.exception
    assert at.session_state.ledger.remaining.epsilon == pytest.approx(3.5)
    assert len(at.session_state.releases) == 1
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["ε charged"] == "1.5"
    assert "remaining ε = 3.5" in at.caption[0].value


def test_overspend_is_refused_naming_what_is_left_and_charges_nothing(release_page):
    at = spend(release_page, 4.0)
    at = spend(at, 2.0)
    assert at.session_state.ledger.spent.epsilon == pytest.approx(4.0)
    assert len(at.session_state.releases) == 1
    assert "remaining is epsilon=1" in at.error[0].value


def test_reruns_and_other_widgets_never_charge(release_page):
    at = spend(release_page, 1.0)
    for _ in range(3):
        at.run()
    at.number_input(key="release_epsilon").set_value(0.5).run()
    at.selectbox(key="release_show").set_value(1).run()
    assert at.session_state.ledger.spent.epsilon == pytest.approx(1.0)
    assert len(at.session_state.ledger.spends) == len(at.session_state.releases) == 1


def test_history_lists_every_charge(release_page):
    at = release_page
    for epsilon, mechanism in ((0.5, "identity"), (0.25, "uniform"), (1.0, "hb")):
        at = spend(at, epsilon, mechanism)
    assert not at.exception
    rows = list(csv.DictReader(io.StringIO(history_to_csv(at.session_state.releases).decode())))
    assert [(r["mechanism"], float(r["epsilon"])) for r in rows] == [("identity", 0.5), ("uniform", 0.25),
                                                                      ("hb", 1.0)]
    assert [float(r["epsilon"]) for r in rows] == [b.epsilon for _, b in at.session_state.ledger.spends]
    assert [e["stream"] for e in at.session_state.releases] == [0, 1, 2]  # each release had its own noise stream
    assert not {"seed", "stream"} & set(rows[0])  # and the export never says which


def test_session_config_reloads_to_the_same_state(release_page):
    at = release_page
    at.session_state["dataset_key"] = "sample:tips-bill"
    at.session_state["workload_spec"] = "prefix"
    at.selectbox(key="release_mechanism").set_value("hb").run()
    at.text_input(key="release_hb_branching").set_value("4")
    at.number_input(key="release_epsilon").set_value(0.25).run()
    config = parse_config(at.code[0].value)
    assert (config.dataset, config.workload) == ("sample:tips-bill", "prefix")
    assert config.release.params == (("branching", "4"),)
    # The seed lives in the app.py sidebar, which AppTest does not run around a switched page: set it here.
    config = dataclasses.replace(config, seed=42)
    exported = config_to_json(config)

    fresh = open_page(RELEASE)
    spend(fresh, 1.0)  # budget already spent must survive the reload
    fresh.text_area(key="release_config_text").set_value(exported)
    fresh.button(key="release_config_load").click().run()
    assert not fresh.exception
    state = fresh.session_state
    assert (state.dataset_key, state.workload_spec, state.seed) == ("sample:tips-bill", "prefix", 42)
    assert (state.release_mechanism, state.release_epsilon) == ("hb", 0.25)
    assert state.release_noise_path == "secure"  # a config never switches to seeded noise by itself
    assert "asks for the 'exploration' noise path; it stays 'secure'" in fresh.success[0].value
    assert fresh.text_input(key="release_hb_branching").value == "4"
    smooth = LedgerStore().ledger(dataset_fingerprint(load_histogram("smooth")))
    assert smooth.spent.epsilon == pytest.approx(1.0)  # never reset or refunded (the ledger is smooth's)
    assert parse_config(fresh.code[0].value) == dataclasses.replace(
        config, release=dataclasses.replace(config.release, noise_path="secure"))
    assert fresh.success[0].value.startswith("Config loaded.")


def test_a_broken_config_is_refused_with_a_message():
    at = open_page(RELEASE)
    at.text_area(key="release_config_text").set_value('{"format": "dplens-session", "dataset": "sample:smooth"}')
    at.button(key="release_config_load").click().run()
    assert not at.exception
    assert at.error[0].value.startswith("Config not loaded: config is missing 'mechanisms'")


def test_learn_page_shows_every_teaching_view():
    at = open_page("pages/learn.py")
    assert not at.exception
    assert len(at.get("plotly_chart")) == 8  # 5 Laplace views + PLD, composition by definition, crossover
    at.slider(key="learn_epsilon").set_value(0.5).run()
    assert {m.label: m.value for m in at.metric}["Scale b = Δ/ε"] == "2"


def test_total_budget_is_set_once_and_never_replaces_a_ledger_with_spends():
    # AppTest runs app.py (and so the sidebar) only on the first run; later runs execute the page alone.
    record_ledger(Ledger(Budget(2.0)).spend("release #1: identity", Budget(0.5)))
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert at.number_input(key="sidebar_total_epsilon").disabled
    assert {m.label: m.value for m in at.metric}["Budget remaining"] == "ε = 1.5"


def test_a_total_edit_racing_a_release_from_another_tab_is_refused():
    racing = AppTest.from_file(APP, default_timeout=60).run()  # no spend yet: the total is editable
    assert not racing.number_input(key="sidebar_total_epsilon").disabled
    fingerprint = record_ledger(Ledger(Budget(5.0)).spend("release #1: identity", Budget(0.5)))  # another tab
    racing.number_input(key="sidebar_total_epsilon").set_value(50.0).run()  # an edit racing that release
    assert racing.session_state.ledger.total.epsilon == 5.0
    assert racing.session_state.ledger.spent.epsilon == pytest.approx(0.5)
    assert "fixed at epsilon=5 after the first release" in racing.error[0].value
    assert LedgerStore().ledger(fingerprint).total.epsilon == 5.0


def test_total_budget_can_be_set_before_the_first_release():
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.number_input(key="sidebar_total_epsilon").set_value(2.0).run()
    assert at.session_state.ledger.total.epsilon == 2.0
    assert [e["kind"] for e in LedgerStore().history()] == ["total"]  # recorded


def test_a_config_outside_the_widget_ranges_is_applied_safely():
    config = dataclasses.replace(parse_config(open_page(RELEASE).code[0].value), total_epsilon=500.0)
    config = dataclasses.replace(config, release=dataclasses.replace(config.release, epsilon=1e6))
    at = open_page(RELEASE)
    at.text_area(key="release_config_text").set_value(config_to_json(config))
    at.button(key="release_config_load").click().run()
    assert not at.exception
    assert at.session_state.ledger.total.epsilon == 5.0
    assert at.session_state.release_epsilon == 100.0
    assert "outside [0.01, 100]" in at.success[0].value


def _workload_metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric
            if m.label in ("Queries × cells", "L1 sensitivity", "Sum of squared weights")}


def test_custom_workloads_survive_a_config_reload():
    at = open_page("pages/workloads.py")
    at.session_state["dataset_key"] = "sample:tips-bill"  # 51 bins, a reference dataset any session can load
    at.run()
    matrix = "\n".join(",".join(str(v) for v in row) for row in (
        [1] * 10 + [0] * 41, [0] * 20 + [0.5] * 11 + [0] * 20))
    at.file_uploader(key="workloads_upload").set_value(("queries.csv", matrix.encode(), "text/csv")).run()
    at.button(key="workloads_add_upload").click().run()
    at.selectbox(key="workloads_name").set_value("prefix").run()
    at.button(key="workloads_add").click().run()
    at.slider(key="workloads_range").set_value((5, 9)).run()
    at.button(key="workloads_add_range").click().run()
    at.button(key="workloads_use_stack").click().run()
    assert not at.exception
    built, answers = _workload_metrics(at), at.dataframe[-1].value
    assert built["Queries × cells"] == "54 × 51"  # 2 uploaded rows + 51 prefixes + 1 drawn range
    exported = at.switch_page(RELEASE).run().code[0].value
    recipe = parse_config(exported).custom_workload
    assert [next(iter(part)) for part in recipe["stack"]] == ["matrix", "spec", "ranges"]
    at.text_area(key="release_config_text").set_value(exported)
    at.button(key="release_config_load").click().run()  # the same session: reuse, no duplicate
    assert at.session_state.workload_spec == "custom:1:stack of uploaded matrix + prefix + drawn range"
    assert len(at.session_state.custom_workloads) == 1

    fresh = open_page(RELEASE)
    fresh.text_area(key="release_config_text").set_value(exported)
    fresh.button(key="release_config_load").click().run()
    assert not fresh.exception
    assert fresh.success[0].value == "Config loaded."
    fresh.switch_page("pages/workloads.py").run()
    assert fresh.session_state.workload_spec == "custom:1:stack of uploaded matrix + prefix + drawn range"
    assert _workload_metrics(fresh) == built
    assert fresh.dataframe[-1].value.equals(answers)


def test_a_custom_workload_too_large_for_the_config_is_named_and_left_out():
    at = open_page("pages/workloads.py")
    rows = "\n".join([",".join(["1"] * 4096)] * 3).encode()  # 12,288 nonzeros, 3 numbers each
    at.file_uploader(key="workloads_upload").set_value(("big.csv", rows, "text/csv")).run()
    at.button(key="workloads_use_upload").click().run()
    assert _workload_metrics(at)["Queries × cells"] == "3 × 4,096"
    at.switch_page(RELEASE).run()
    assert not at.exception
    assert "MAX_RECIPE_NUMBERS=30,000" in at.warning[0].value
    config = parse_config(at.code[0].value)
    assert config.workload is None and config.custom_workload is None


@pytest.mark.parametrize(("mechanism", "entries"), [("wda", ["division"]), ("dawa", ["bounds", "hierarchy"]),
                                                     ("sreb-gca", ["groups"]), ("ahp", ["cluster sizes"]),
                                                     ("lrm", ["factorisation", "strategy L"])])
def test_a_releases_structure_is_shown_and_never_exported(release_page, mechanism, entries):
    at = release_page
    at.session_state["dataset_key"] = "sample:tips-bill"
    at.session_state["workload_spec"] = "prefix"
    at = spend(at, 1.0, mechanism)
    assert not at.exception
    expander = next(e for e in at.expander if e.label == "Structure of this release")
    shown = [m.value.split("**")[1] for m in expander.markdown]
    assert shown == entries
    assert expander.dataframe  # the tables themselves
    release = at.session_state.release_outputs[1]["release"]
    assert release.details
    doc = json.loads(release_to_json(release, workload="prefix", noise_path="secure"))
    assert not set(release.details) & set(doc)
    assert not [v for v in doc["params"].values() if isinstance(v, list | dict)]  # knobs and counts only
    text = json.dumps(doc) + release_to_csv(release).decode() + history_to_csv(at.session_state.releases).decode()
    structure_words = {"division", "leaf", "bounds", "bucket", "hierarchy", "cluster_sizes", "members"}
    assert not structure_words & set(re.findall(r"[a-z_]+", text))


def test_a_release_without_structure_has_no_structure_expander(release_page):
    at = spend(release_page, 1.0, "identity")
    assert "Structure of this release" not in [e.label for e in at.expander]


@pytest.mark.parametrize("mechanism", ["hb", "privelet"])
def test_strategy_releases_show_exact_intervals_without_simulating(release_page, mechanism):
    """hb/privelet: the chart's intervals are the exact strategy-noise quantiles, computed once, no re-runs; the
    export's intervals (secure path) are computed at once, with their method stated."""
    release_page.radio(key="release_noise_path").set_value("secure").run()
    at = spend(release_page, 1.0, mechanism)
    assert not at.exception, at.exception
    output = at.session_state.release_outputs[1]
    bins, answers = output["exact"]
    assert bins is not None and answers is not None and "intervals" not in output  # nothing simulated
    metrics = {m.label: m.value for m in at.metric}
    covered = float(metrics["True counts inside their 95 % interval"].rstrip("%")) / 100
    assert 0.85 <= covered <= 1.0
    assert not any("Simulate 95 % intervals" in b.label or "Compute intervals" in b.label for b in at.button)
    assert any("exact strategy-noise quantiles" in c.value for c in at.caption)  # the export's method, computed


def test_the_form_says_before_the_click_what_the_kernel_would_refuse():
    """The Release form asks the kernel's preflight (plan, cost, ledger) on every rerun: an ε the ledger cannot pay is
    named before any click, and nothing is run or charged; a payable ε shows no refusal."""
    at = open_page(RELEASE)
    at.selectbox(key="release_mechanism").set_value("identity")
    at.number_input(key="release_epsilon").set_value(50.0).run()  # the default total is 5
    refusals = [w.value for w in at.warning if "cannot be released as set" in w.value]
    assert refusals and "remaining is epsilon=5" in refusals[0], [w.value for w in at.warning]
    assert not at.session_state.releases
    at.number_input(key="release_epsilon").set_value(0.5).run()
    assert not [w.value for w in at.warning if "cannot be released as set" in w.value]
