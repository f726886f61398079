"""A curator's walk in a real browser: raw records with a column picked → a labelled 2-D file whose unknown level is
surfaced → tune on a DP proxy (the risk tab says "DP proxy count") → release → re-upload the export (no true
counts, no noisy preview, no budget) → the server log has no traceback. Screenshots: test-artifacts/walk-*.png."""

import json
import re

import pytest

from tests.e2e._actions import ARTIFACTS, act, check, click, download, expand, go, pick, screenshot, upload
from tests.e2e.conftest import open_app

pytestmark = pytest.mark.e2e
RECORDS = "region,age_band\n" + "".join(f"{'North' if i % 3 else 'South'},{('17-24', '25-34', '35-44')[i % 3]}\n"
                                        for i in range(60))
LABELLED = ("age_band,region,count\n17-24,North,30\n17-24,South,12\n25-34,North,25\n25-34,South,9\n35-44,North,14\n"
            "35-44,South,6\nunknown,North,2\n")
LEVELS = "17-24,25-34,35-44\nNorth,South"


def _upload_area(page, path, *, records: bool):
    """Open the Upload expander, choose ``path``, tick or untick raw records."""
    expand(page, "Upload a histogram")
    upload(page, path, page.get_by_role("button", name="Use this file"))
    check(page, "The file holds raw records", records)


def _use(page, outcome: str, levels: str | None = None) -> None:
    """Use the uploaded file, with ``levels`` declared first, until the page says ``outcome``."""
    area = page.get_by_role("textbox", name=re.compile("^Levels")).first

    def use() -> None:
        if levels is not None:
            area.fill(levels)  # the click below blurs the text area, which commits it first
        page.get_by_role("button", name="Use this file").click()

    act(page, use, page.get_by_text(outcome), what=f"use the file until the page says {outcome!r}")


def test_records_labels_proxy_release_and_the_export_back(browser, fresh_app_url, tmp_path):
    ARTIFACTS.mkdir(exist_ok=True)
    context, page = open_app(browser, fresh_app_url, width=1366, height=900, timeout=60_000)

    records = tmp_path / "people.csv"  # one row per person: bin the column picked from its header
    records.write_text(RECORDS)
    _upload_area(page, records, records=True)
    pick(page, "Column to bin", "age_band")
    _use(page, "Loaded people: 3 cells, total 60")

    labelled = tmp_path / "regions.csv"  # an A,B,count file with a level its declaration lacks
    labelled.write_text(LABELLED)
    _upload_area(page, labelled, records=False)
    _use(page, "age_band 'unknown' is not among the declared levels", LEVELS)  # surfaced, not kept silently
    _use(page, "Loaded regions: 8 cells, total 98", LEVELS.replace("35-44", "35-44,unknown"))

    go(page, "Choose epsilon")
    spend = page.get_by_role("button", name="Spend and make the proxy")
    click(page, page.get_by_text("Make a DP proxy").first, spend)
    click(page, spend, page.get_by_text("Tuned on DP proxy of this data"))
    click(page, page.get_by_role("tab", name="See the risk and the noise"), page.get_by_text("DP proxy count"))
    charts = page.locator('[data-testid="stPlotlyChart"]:visible').all_inner_texts()
    assert any("DP proxy count" in text for text in charts), charts  # the dot plot's marker line
    assert page.get_by_text(re.compile(r"true count \d")).count() == 0
    screenshot(page, "walk-proxy-risk")

    go(page, "Release")
    click(page, page.get_by_role("button", name="Spend and release"), page.get_by_text("ε charged"), timeout=300_000)
    exported = download(page, "Release with metadata (JSON)")
    doc = json.loads(exported)
    assert doc["dataset"] == "regions.csv" and len(doc["counts"]) == 8

    export = tmp_path / "dplens-release-1.json"
    export.write_bytes(exported)
    go(page, "Data")
    _upload_area(page, export, records=False)
    _use(page, "Already-private output")
    screenshot(page, "walk-export-back")
    charts = " ".join(page.locator('[data-testid="stPlotlyChart"]').all_inner_texts())
    assert "released values" in charts and "true counts" not in charts, charts
    assert page.get_by_text(re.compile("true counts", re.IGNORECASE)).count() == 0
    assert page.get_by_text("Epsilon of the noisy preview").count() == 0
    sidebar = page.get_by_test_id("stSidebar")
    assert sidebar.get_by_text("Budget remaining").count() == 0
    assert sidebar.get_by_text("it has no budget").count() == 1
    context.close()

    log = (ARTIFACTS / f"streamlit-{fresh_app_url.rsplit(':', 1)[1]}.log").read_text()
    assert "Traceback" not in log, log[log.find("Traceback"):][:3000]
