"""AppTest: the persistent ledger across sessions, the Ledger page, and secure-only exports on the Release page."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from dplens.core.data.domain import Histogram
from dplens.core.privacy.budget import Budget, Ledger
from dplens.core.privacy.ledger_store import LedgerStore
from tests.test_app import APP, open_page, record_ledger

RELEASE, LEDGER = "pages/release.py", "pages/ledger.py"


def _release(at, epsilon: float, noise: str = "exploration"):
    at.radio(key="release_noise_path").set_value(noise)
    at.selectbox(key="release_mechanism").set_value("identity")
    at.number_input(key="release_epsilon").set_value(epsilon)
    return at.button(key="release_spend").click().run()


def _downloads(at) -> list[str]:
    return [b.proto.label for b in at.get("download_button")]


def test_a_second_session_sees_the_spent_budget_and_cannot_overspend():
    first = _release(open_page(RELEASE), 3.0)
    second = open_page(RELEASE)  # another tab: a new session, the same data
    assert second.session_state.ledger.remaining.epsilon == pytest.approx(2.0)
    second = _release(second, 2.5)
    assert "remaining is epsilon=2" in second.error[0].value and not second.session_state.releases
    first = _release(first, 2.0)  # the first tab's view was stale: the store decides
    assert first.session_state.ledger.remaining.epsilon == pytest.approx(0.0, abs=1e-9)
    assert len(LedgerStore().history()) == 3  # the default total, recorded at the first spend, and two spends


def test_exploration_results_are_simulations_without_any_download():
    at = _release(open_page(RELEASE), 1.0, "exploration")
    assert not at.exception
    assert any("Simulation, not a private release" in w.value for w in at.warning)
    # No release, JSON or chart download; the recipe re-runs the configuration on the secure path
    # (no seed, no data, no released values), so it may be offered here too.
    assert _downloads(at) == ["Release history (CSV)", "Recipe (Python script)", "Recipe (Jupyter notebook)",
                              "Session config (JSON)"]
    recipes = [str(b.proto) for b in at.get("download_button") if b.proto.label.startswith("Recipe")]
    assert recipes and all("exploration" not in text and "default_rng" not in text for text in recipes)
    spend = LedgerStore().history()[-1]
    assert spend["kind"] == "spend" and spend["export_id"] is None  # charged, never exported
    assert spend["note"].startswith("noise path: exploration (simulation, not a private release); ε = 1")


def test_secure_releases_export_with_the_id_of_their_spend():
    at = _release(open_page(RELEASE), 1.0, "secure")
    assert not at.exception
    assert {"Released histogram (CSV)", "Release with metadata (JSON)"} <= set(_downloads(at))
    entry = at.session_state.releases[-1]
    assert entry["export_id"] and entry["export_id"] == LedgerStore().history()[-1]["export_id"]
    assert entry["seed"] is None and entry["stream"] is None


def test_ledger_page_shows_history_and_a_reset_needs_confirmation():
    record_ledger(Ledger(Budget(2.0)).spend("release #1: identity", Budget(1.5)))
    at = open_page(LEDGER)
    assert not at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert (metrics["Total ε"], metrics["Remaining ε"]) == ("2", "0.5")
    history = next(d.value for d in at.dataframe if "Event" in d.value.columns)  # the Ledger page's history table
    assert list(history["Event"]) == ["total", "spend"]
    at.number_input(key="ledger_reset_total").set_value(3.0)
    at.text_input(key="ledger_reset_reason").set_value("new study")
    at.button[-1].click().run()  # not confirmed: refused
    assert "tick the box" in at.error[0].value
    assert at.session_state.ledger.remaining.epsilon == pytest.approx(0.5)
    at.checkbox(key="ledger_reset_confirm").check()
    at.button[-1].click().run()
    assert not at.exception
    assert at.session_state.ledger.remaining.epsilon == 3.0
    assert "earlier releases still count" in at.success[0].value
    assert list(next(d.value for d in at.dataframe if "Event" in d.value.columns)["Event"]) == ["total", "spend",
                                                                                               "reset"]


def test_the_workspace_id_in_the_url_restores_the_working_set():
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["uploads"] = {"upload:t": Histogram.from_counts([5.0, 1, 0, 7], name="tiny-upload")}
    at.run()
    workspace = at.session_state.workspace_id
    assert at.query_params["ws"] == workspace
    at = at.switch_page(RELEASE)
    at.session_state["workload_spec"] = "prefix"
    at.session_state["compare_mechanisms"] = ["identity", "hb"]
    at = _release(at.run(), 1.5)  # on the default dataset (smooth); the click saves the workspace

    reloaded = AppTest.from_file(APP, default_timeout=60)
    reloaded.query_params["ws"] = workspace
    reloaded.run()
    assert not reloaded.exception
    state = reloaded.session_state
    assert state.workspace_id == workspace
    assert state.uploads["upload:t"].vector.tolist() == [5.0, 1, 0, 7]
    assert len(state.releases) == 1 and state.releases[0]["epsilon"] == 1.5
    assert state.release_noise_path == "exploration"
    assert (state.workload_spec, state.compare_mechanisms) == ("prefix", ["identity", "hb"])
    reloaded = reloaded.switch_page(RELEASE).run()
    assert not reloaded.exception
    assert {m.label: m.value for m in reloaded.metric}["ε charged"] == "1.5"
    assert reloaded.session_state.ledger.remaining.epsilon == pytest.approx(3.5)

    fresh = AppTest.from_file(APP, default_timeout=60).run()  # a new tab: a new workspace, the same ledger
    assert fresh.session_state.workspace_id != workspace and not fresh.session_state.releases
    assert "upload:t" not in fresh.session_state.uploads
    assert {m.label: m.value for m in fresh.metric}["Budget remaining"] == "ε = 3.5"


def test_a_forged_workspace_id_starts_a_new_workspace():
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["ws"] = "../../etc/passwd"
    at.run()
    assert not at.exception and at.session_state.workspace_id != "../../etc/passwd"


def test_every_binning_of_one_records_file_charges_one_ledger():
    records = b"age\n" + b"\n".join(str(20 + i % 50).encode() for i in range(200)) + b"\n"
    at = open_page("pages/data.py")
    remaining = []
    for bins in (5, 7):  # widget state does not survive leaving the page: set it each time
        at.file_uploader(key="data_upload").set_value(("people.csv", records, "text/csv")).run()
        at.checkbox(key="data_as_records").check().run()
        at.selectbox(key="data_column").set_value("age")
        at.radio(key="data_binning").set_value("number of bins").run()
        at.number_input(key="data_bins").set_value(bins)
        at.button(key="data_use").click().run()
        assert not at.exception and at.session_state.ledger_parents[at.session_state.dataset_key]
        at = _release(at.switch_page(RELEASE).run(), 2.0)
        remaining.append(at.session_state.ledger.remaining.epsilon)
        at = at.switch_page("pages/data.py").run()
    assert len(at.session_state.uploads) == 2  # two histograms (5 and 7 bins) ...
    assert remaining == pytest.approx([3.0, 1.0])  # ... one ledger: the people are the same


def test_a_pasted_config_naming_a_server_file_is_refused_in_one_line(tmp_path):
    secret = tmp_path / "passwd"
    secret.write_text("root:x:0:0:root:/root:/bin/bash\n")
    at = open_page(RELEASE)
    config = json.loads(at.code[0].value)
    config["workload"] = f"file:{secret}"
    at.text_area(key="release_config_text").set_value(json.dumps(config))
    at.button(key="release_config_load").click().run()
    assert not at.exception and not at.success
    message = at.error[0].value
    assert message.startswith("Config not loaded: config 'workload' names a server file")
    assert "\n" not in message and "root:x" not in message
    assert at.session_state.workload_spec is None  # nothing applied


def test_a_workspace_saved_before_the_renames_opens_with_todays_names_and_units():
    from dplens.core.privacy.definitions import ZCDP, zcdp_rho
    from dplens.core.release.workspace_store import WorkspaceStore

    store = WorkspaceStore()  # the local curator's, in the test's DPLENS_HOME
    workspace = store.create()
    older_release = {"mechanism": "gaussian-mm-opt", "epsilon": 1.0, "privacy_loss": 0.9, "answers": [1.0, 2.0],
                     "estimate": None, "params": {"definition": "zcdp", "delta": 1e-6}}  # loss then in ε at δ
    store.save(workspace, {"compare_mechanisms": ["gaussian-mm-opt", "hb", "no-longer-offered"],
                           "release_mechanism": "gaussian-mm-opt", "releases": [],
                           "release_outputs": {"1": {"release": older_release, "settings": {}, "seconds": 0.1}}})
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["ws"] = workspace
    at.run()
    assert not at.exception
    state = at.session_state
    assert state.compare_mechanisms == ["gaussian-eigen", "hb"] and state.release_mechanism == "gaussian-eigen"
    release = state.release_outputs[1]["release"]
    assert release.budget == ZCDP(zcdp_rho(1.0, 1e-6)) and release.loss_unit == "rho"
    assert release.privacy_loss == pytest.approx(zcdp_rho(0.9, 1e-6))


def test_all_datasets_rows_are_in_each_ledgers_unit_and_sum():
    """A zCDP ledger's row shows ρ figures under unit ρ (it showed ε numbers under "rho"), and sums."""
    record_ledger(Ledger(Budget.zcdp(0.5, 1e-6)).spend("release #1: identity", Budget(0.5))
                  .spend("release #2: gaussian-identity", Budget(2.0, 1e-6, 0.1)))
    at = open_page(LEDGER)
    assert not at.exception
    (table,) = [d.value for d in at.dataframe if "Unit" in d.value.columns]
    assert list(table.columns)[:7] == ["Dataset", "Fingerprint", "Unit", "Total", "Spent", "Remaining", "δ"]
    (row,) = table.to_dict("records")
    assert row["Unit"] == "ρ" and row["Total"] == 0.5 and row["Spent"] == pytest.approx(0.225)
    assert row["Spent"] + row["Remaining"] == pytest.approx(row["Total"])
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Spent ρ"] == "0.225" and metrics["Remaining ρ"] == "0.275"


def test_a_secure_release_restored_from_the_workspace_still_exports():
    """After a reload the release has no request or kernel record in the session; its downloads come from the stored
    release through the kernel (this once raised KeyError: 'request')."""
    at = _release(open_page(RELEASE), 1.0, "secure")
    workspace, export_id = at.session_state.workspace_id, at.session_state.releases[-1]["export_id"]
    reloaded = AppTest.from_file(APP, default_timeout=60)
    reloaded.query_params["ws"] = workspace
    reloaded.run()
    reloaded = reloaded.switch_page(RELEASE).run()
    assert not reloaded.exception, reloaded.exception
    assert {"Released histogram (CSV)", "Release with metadata (JSON)"} <= set(_downloads(reloaded))
    assert not reloaded.error and reloaded.session_state.releases[-1]["export_id"] == export_id
