"""A curator's walk in a real browser: raw records with a column picked → a labelled 2-D file whose unknown level is
surfaced → tune on a DP proxy (the risk tab says "DP proxy count") → release → re-upload the export (no true
counts, no noisy preview, no budget) → the server log has no traceback. Screenshots: test-artifacts/walk-*.png."""

import json
import re

import pytest

from tests.e2e._actions import ARTIFACTS, click, download, go, pick, screenshot
from tests.e2e.conftest import open_app
from tests.e2e.test_curator_browser import choose_histogram, reupload_export, use_histogram

pytestmark = pytest.mark.e2e
RECORDS = "region,age_band\n" + "".join(f"{'North' if i % 3 else 'South'},{('17-24', '25-34', '35-44')[i % 3]}\n"
                                        for i in range(60))
LABELLED = ("age_band,region,count\n17-24,North,30\n17-24,South,12\n25-34,North,25\n25-34,South,9\n35-44,North,14\n"
            "35-44,South,6\nunknown,North,2\n")
LEVELS = "17-24,25-34,35-44\nNorth,South"


def test_records_labels_proxy_release_and_the_export_back(browser, fresh_app_url, tmp_path):
    ARTIFACTS.mkdir(exist_ok=True)
    context, page = open_app(browser, fresh_app_url, width=1366, height=900, timeout=60_000)

    records = tmp_path / "people.csv"  # one row per person: bin the column picked from its header
    records.write_text(RECORDS)
    choose_histogram(page, records, records=True)
    pick(page, "Column to bin", "age_band")
    use_histogram(page, "Loaded people: 3 cells, total 60")

    labelled = tmp_path / "regions.csv"  # an A,B,count file with a level its declaration lacks
    labelled.write_text(LABELLED)
    choose_histogram(page, labelled)
    use_histogram(page, "age_band 'unknown' is not among the declared levels", LEVELS)  # surfaced, not kept silently
    use_histogram(page, "Loaded regions: 8 cells, total 98", LEVELS.replace("35-44", "35-44,unknown"))

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

    reupload_export(page, exported, tmp_path)
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
