"""A curator's decision end to end at 1366×768: upload → tune on a public sample → choose ε from a target →
release under zCDP → download → reload the page → upload the export → it is recognised as released.
Screenshots go to test-artifacts/decision-*.png."""

import json
import shutil

import pytest

from dplens.core.data.datasets import DATA_DIR
from tests.e2e._actions import ARTIFACTS, choose, click, download, go, pick, wait_text
from tests.e2e.conftest import open_app
from tests.e2e.test_curator_browser import file_levels, reupload_export, upload_histogram

pytestmark = pytest.mark.e2e


def test_tune_on_public_data_choose_release_under_zcdp_and_recognise_the_export(browser, fresh_app_url, tmp_path):
    app_url = fresh_app_url  # its own server: the curator flow spends on the same bills under pure ε
    ARTIFACTS.mkdir(exist_ok=True)
    context, page = open_app(browser, app_url, width=1366, height=768, timeout=60_000)

    mine = tmp_path / "bills.csv"  # the private data: a copy of the tips sample under another name
    shutil.copy(DATA_DIR / "tips_bill.csv", mine)
    upload_histogram(page, mine, "Loaded bills", file_levels(mine))  # a labelled upload is released over its levels
    choose(page, "ρ-zCDP", area=page.get_by_test_id("stSidebar"))  # the sidebar's privacy definition

    go(page, "Choose epsilon")
    wait_text(page, "Tuned on the private data")  # the default says what it is
    pick(page, "Tune on", "tips-bill (public)", expected=page.get_by_text("Tuned on tips-bill (public)"))
    page.screenshot(path=str(ARTIFACTS / "decision-tuned-on-public.png"))
    # under zCDP the hand-off is written in ρ
    click(page, page.get_by_role("button", name="Use this ρ").first, page.get_by_role("link", name="Go to Release"))
    click(page, page.get_by_role("link", name="Go to Release").first, page.get_by_text("tuned on tips-bill (public)"))
    wait_text(page, "ρ for this release (zCDP)")  # the native unit of the definition

    click(page, page.get_by_role("button", name="Spend and release"), page.get_by_text("ρ charged"), timeout=300_000)
    page.screenshot(path=str(ARTIFACTS / "decision-released.png"))
    exported = download(page, "Release with metadata (JSON)")
    doc = json.loads(exported)
    assert doc["definition"] == "zcdp" and doc["tuned_on"] == "tips-bill (public)" and doc["dataset"] == "bills.csv"

    page.reload()  # the workspace in the URL brings the session back; the store knows the export
    wait_text(page, "Budget remaining")
    reupload_export(page, exported, tmp_path)
    wait_text(page, "as a released dataset")
    page.screenshot(path=str(ARTIFACTS / "decision-recognised.png"))
    context.close()
