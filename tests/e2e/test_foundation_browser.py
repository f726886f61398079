"""A user uploads a CSV on the Data page and runs a comparison, in a real browser (Chromium)."""

import pytest

from tests.e2e._actions import click, go, screenshot, wait_text
from tests.e2e.test_curator_browser import upload_histogram

pytestmark = pytest.mark.e2e


def test_upload_csv_then_compare(page, tmp_path):
    csv = tmp_path / "my_counts.csv"
    csv.write_text("label,count\n" + "".join(f"b{i},{(i * 7) % 23}\n" for i in range(64)))
    upload_histogram(page, csv, "Loaded my_counts: 64 cells")
    screenshot(page, "data")

    go(page, "Compare", "Compare mechanisms")
    wait_text(page, "my_counts")
    click(page, page.get_by_role("button", name="Run comparison"), page.get_by_text("Inspect one release"))
    page.locator('[data-testid="stPlotlyChart"]').first.wait_for()
    click(page, page.get_by_role("tab", name="Table"), page.get_by_role("button", name="Download all results (CSV)"))
    screenshot(page, "compare")
