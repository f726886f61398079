"""The curator's flow at 1366×768: upload → workload → compare → choose ε → use it → release with
intervals → export → re-upload the export → download the recipe. Screenshots go to test-artifacts/curator-*.png."""

import json
import re
import shutil
from pathlib import Path

import pytest

from dplens.core.data.datasets import DATA_DIR
from tests.e2e._actions import ARTIFACTS, wait_idle
from tests.e2e.conftest import open_app

pytestmark = pytest.mark.e2e


def shot(page, name: str, scroll_to: str | None = None) -> None:
    page.mouse.move(5, 5)
    if scroll_to:
        page.get_by_text(scroll_to).first.evaluate("e => e.scrollIntoView({block: 'center'})")
    page.wait_for_timeout(500)
    page.screenshot(path=str(ARTIFACTS / f"curator-{name}.png"))


def go(page, title: str, heading: str | None = None) -> None:
    page.get_by_role("link", name=title, exact=True).first.click()
    wait_idle(page, timeout=120_000)
    page.get_by_role("heading", name=heading or title, exact=True).wait_for(timeout=120_000)


def download(page, button: str, timeout: float = 120_000) -> bytes:
    with page.expect_download(timeout=timeout) as info:
        page.get_by_role("button", name=button).first.click()
    data = info.value.path().read_bytes()
    wait_idle(page)
    return data


def upload(page, path, levels: str | None = None) -> None:
    """Upload ``path`` on the Data page; ``levels`` declares a labelled file's levels (needed to release it)."""
    page.get_by_text("Upload a histogram").click()
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').first.set_input_files(str(path))
    wait_idle(page)
    if levels is not None:
        area = page.get_by_role("textbox", name=re.compile("^Levels")).first
        area.fill(levels)
        area.press("Tab")  # a text area commits on blur
        wait_idle(page)
    page.get_by_role("button", name="Use this file").click()
    wait_idle(page, timeout=120_000)


def file_levels(path) -> str:
    """A label,count file's labels as the Data page's Levels line: the file is its curator's declaration here."""
    return ", ".join(line.split(",")[0] for line in Path(path).read_text().splitlines()[1:] if line.strip())


def test_curator_flow_at_1366x768(browser, app_url, tmp_path):
    ARTIFACTS.mkdir(exist_ok=True)
    context, page = open_app(browser, app_url, width=1366, height=768, timeout=60_000)

    # First screen: the start-here line, the histogram and its noisy release, without scrolling.
    page.get_by_text("Start here:").wait_for()
    chart = page.locator('[data-testid="stPlotlyChart"]').first
    chart.wait_for()
    box = chart.bounding_box()
    assert box is not None and box["y"] + box["height"] <= 768, box
    shot(page, "first-screen")

    # Upload (a copy of a sample under a new name), then a workload.
    mine = tmp_path / "bills.csv"
    shutil.copy(DATA_DIR / "tips_bill.csv", mine)
    upload(page, mine, file_levels(mine))  # a labelled upload is released over declared levels
    page.get_by_text("Loaded bills").first.wait_for()
    go(page, "Workloads")
    shot(page, "workloads")

    # Compare: analytic curves before Run, then a run.
    go(page, "Compare", "Compare mechanisms")
    page.get_by_text("Meanwhile, the analytic expectation").wait_for()
    shot(page, "compare-before-run")
    page.get_by_role("button", name="Run comparison").click()
    page.get_by_text("Inspect one release").wait_for(timeout=600_000)
    wait_idle(page, timeout=120_000)
    assert page.get_by_role("button", name="Stop").count() == 0  # gone once the sweep ends
    shot(page, "compare")

    # Choose epsilon, then hand it on.
    go(page, "Choose epsilon")
    use = page.get_by_role("button", name="Use this ε").first
    use.click()
    wait_idle(page)
    shot(page, "choose-epsilon", "Go to Release")
    page.get_by_role("link", name="Go to Release").first.click()
    wait_idle(page, timeout=120_000)
    page.get_by_text("From Choose epsilon").first.wait_for()

    # Release with intervals, export.
    page.get_by_role("button", name="Spend and release").click()
    wait_idle(page, timeout=300_000)
    page.get_by_text("Exports carry").first.wait_for(timeout=300_000)
    shot(page, "release", "Exports carry")
    exported = download(page, "Release with metadata (JSON)")
    doc = json.loads(exported)
    assert doc["dataset"] == "bills.csv" and "No seed is kept" in doc["noise_policy"]
    assert len(doc["lower"]) == len(doc["upper"]) == len(doc["counts"]) and doc["level"] == 0.95
    script = download(page, "Recipe (Python script)").decode()
    assert f"MECHANISM = {doc['mechanism']!r}" in script and "EPSILON = " in script

    # Re-upload the export: an already-private dataset with its metadata.
    export = tmp_path / "dplens-release-1.json"
    export.write_bytes(exported)
    go(page, "Data")
    upload(page, export)
    page.get_by_text("Already-private output").first.wait_for()
    shot(page, "reupload", "Already-private output")
    context.close()
