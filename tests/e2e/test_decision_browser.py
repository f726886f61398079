"""A curator's decision end to end at 1366×768: upload → tune on a public sample → choose ε from a target →
release under zCDP → download → reload the page → upload the export → it is recognised as released.
Screenshots go to test-artifacts/decision-*.png."""

import json
import shutil

import pytest

from dplens.core.data.datasets import DATA_DIR
from tests.e2e._actions import ARTIFACTS, wait_idle
from tests.e2e.conftest import open_app
from tests.e2e.test_curator_browser import download, file_levels, go, upload

pytestmark = pytest.mark.e2e


def pick(page, label: str, option: str) -> None:
    """Choose ``option`` in the Streamlit selectbox labelled ``label``."""
    page.get_by_test_id("stSelectbox").filter(has_text=label).first.click()
    page.get_by_role("option", name=option).first.click()
    wait_idle(page, timeout=120_000)


def test_tune_on_public_data_choose_release_under_zcdp_and_recognise_the_export(browser, fresh_app_url, tmp_path):
    app_url = fresh_app_url  # its own server: the curator flow spends on the same bills under pure ε
    ARTIFACTS.mkdir(exist_ok=True)
    context, page = open_app(browser, app_url, width=1366, height=768, timeout=60_000)

    mine = tmp_path / "bills.csv"  # the private data: a copy of the tips sample under another name
    shutil.copy(DATA_DIR / "tips_bill.csv", mine)
    upload(page, mine, file_levels(mine))  # a labelled upload is released over declared levels
    page.get_by_text("Loaded bills").first.wait_for()
    page.get_by_text("ρ-zCDP").first.click()  # the sidebar's privacy definition
    wait_idle(page, timeout=120_000)

    go(page, "Choose epsilon")
    page.get_by_text("Tuned on the private data").first.wait_for()  # the default says what it is
    pick(page, "Tune on", "tips-bill (public)")
    page.get_by_text("Tuned on tips-bill (public)").first.wait_for()
    page.screenshot(path=str(ARTIFACTS / "decision-tuned-on-public.png"))
    page.get_by_role("button", name="Use this ρ").first.click()  # under zCDP the hand-off is written in ρ
    wait_idle(page)
    page.get_by_role("link", name="Go to Release").first.click()
    wait_idle(page, timeout=120_000)
    page.get_by_text("tuned on tips-bill (public)").first.wait_for()
    page.get_by_text("ρ for this release (zCDP)").first.wait_for()  # the native unit of the definition

    page.get_by_role("button", name="Spend and release").click()
    wait_idle(page, timeout=300_000)
    page.get_by_text("ρ charged").first.wait_for(timeout=300_000)
    page.screenshot(path=str(ARTIFACTS / "decision-released.png"))
    exported = download(page, "Release with metadata (JSON)")
    doc = json.loads(exported)
    assert doc["definition"] == "zcdp" and doc["tuned_on"] == "tips-bill (public)" and doc["dataset"] == "bills.csv"

    page.reload()  # the workspace in the URL brings the session back; the store knows the export
    page.get_by_text("Budget remaining").first.wait_for(timeout=120_000)
    wait_idle(page)
    export = tmp_path / "dplens-release-1.json"
    export.write_bytes(exported)
    go(page, "Data")
    upload(page, export)
    page.get_by_text("Already-private output").first.wait_for()
    page.get_by_text("as a released dataset").first.wait_for()
    page.screenshot(path=str(ARTIFACTS / "decision-recognised.png"))
    context.close()
