"""The curator's flow at 1366×768: upload → workload → compare → choose ε → use it → release with
intervals → export → re-upload the export → download the recipe. Screenshots go to test-artifacts/curator-*.png."""

import json
import re
import shutil
from pathlib import Path

import pytest

from dplens.core.data.datasets import DATA_DIR
from tests.e2e._actions import ARTIFACTS, act, check, click, download, expand, go, upload, wait_idle, wait_text
from tests.e2e.conftest import open_app

pytestmark = pytest.mark.e2e


def shot(page, name: str, scroll_to: str | None = None) -> None:
    page.mouse.move(5, 5)
    if scroll_to:
        page.get_by_text(scroll_to).first.evaluate("e => e.scrollIntoView({block: 'center'})")
    wait_idle(page)
    page.screenshot(path=str(ARTIFACTS / f"curator-{name}.png"))


def choose_histogram(page, path, *, records: bool = False) -> None:
    """On the Data page: open the Upload expander, choose ``path``, tick or untick raw records."""
    expand(page, "Upload a histogram")
    use = page.get_by_role("button", name="Use this file")
    loaded = page.get_by_test_id("stMain").get_by_test_id("stAlert").filter(has_text=re.compile("^Loaded "))
    # a file used before keeps "Use this file" shown; the new file's run is over once that file's "Loaded"
    # notice is gone (a notice shows on one run only)
    upload(page, path, lambda: use.is_visible() and loaded.count() == 0)
    check(page, "The file holds raw records", records)


def use_histogram(page, outcome: str, levels: str | None = None) -> None:
    """Use the chosen file, with ``levels`` declared first, until the page says ``outcome``."""
    area = page.get_by_role("textbox", name=re.compile("^Levels")).first

    def use() -> None:
        if levels is not None:
            area.fill(levels)  # the click below blurs the text area, which commits it first
        page.get_by_role("button", name="Use this file").click()

    act(page, use, page.get_by_text(outcome), what=f"use the file until the page says {outcome!r}")


def upload_histogram(page, path, outcome: str, levels: str | None = None) -> None:
    """Upload ``path`` on the Data page and use it until the page says ``outcome``; ``levels`` declares a labelled
    file's levels (needed to release it)."""
    choose_histogram(page, path)
    use_histogram(page, outcome, levels)


def reupload_export(page, exported: bytes, folder: Path) -> None:
    """Upload a downloaded release export on the Data page, until the page says it is already-private output."""
    export = folder / "dplens-release-1.json"
    export.write_bytes(exported)
    go(page, "Data")
    upload_histogram(page, export, "Already-private output")


def file_levels(path) -> str:
    """A label,count file's labels as the Data page's Levels line: the file is its curator's declaration here."""
    return ", ".join(line.split(",")[0] for line in Path(path).read_text().splitlines()[1:] if line.strip())


def test_curator_flow_at_1366x768(browser, app_url, tmp_path):
    ARTIFACTS.mkdir(exist_ok=True)
    context, page = open_app(browser, app_url, width=1366, height=768, timeout=60_000)

    # First screen: the start-here line, the histogram and its noisy release, without scrolling.
    wait_text(page, "Start here:")
    chart = page.locator('[data-testid="stPlotlyChart"]').first
    chart.wait_for()
    box = chart.bounding_box()
    assert box is not None and box["y"] + box["height"] <= 768, box
    shot(page, "first-screen")

    # Upload (a copy of a sample under a new name), then a workload.
    mine = tmp_path / "bills.csv"
    shutil.copy(DATA_DIR / "tips_bill.csv", mine)
    upload_histogram(page, mine, "Loaded bills", file_levels(mine))  # a labelled upload is released over its levels
    go(page, "Workloads")
    shot(page, "workloads")

    # Compare: analytic curves before Run, then a run.
    go(page, "Compare", "Compare mechanisms")
    wait_text(page, "Meanwhile, the analytic expectation")
    shot(page, "compare-before-run")
    click(page, page.get_by_role("button", name="Run comparison"), page.get_by_text("Inspect one release"),
          timeout=600_000)
    assert page.get_by_role("button", name="Stop").count() == 0  # gone once the sweep ends
    shot(page, "compare")

    # Choose epsilon, then hand it on.
    go(page, "Choose epsilon")
    click(page, page.get_by_role("button", name="Use this ε").first, page.get_by_role("link", name="Go to Release"))
    shot(page, "choose-epsilon", "Go to Release")
    click(page, page.get_by_role("link", name="Go to Release").first, page.get_by_text("From Choose epsilon"))

    # Release with intervals, export.
    click(page, page.get_by_role("button", name="Spend and release"), page.get_by_text("Exports carry"),
          timeout=300_000)
    shot(page, "release", "Exports carry")
    exported = download(page, "Release with metadata (JSON)")
    doc = json.loads(exported)
    assert doc["dataset"] == "bills.csv" and "No seed is kept" in doc["noise_policy"]
    assert len(doc["lower"]) == len(doc["upper"]) == len(doc["counts"]) and doc["level"] == 0.95
    script = download(page, "Recipe (Python script)").decode()
    assert f"MECHANISM = {doc['mechanism']!r}" in script and "EPSILON = " in script

    # Re-upload the export: an already-private dataset with its metadata.
    reupload_export(page, exported, tmp_path)
    shot(page, "reupload", "Already-private output")
    context.close()
