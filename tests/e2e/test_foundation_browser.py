"""A user uploads a CSV on the Data page and runs a comparison, in a real browser (Chromium)."""

import pytest

from tests.e2e._actions import screenshot, wait_idle

pytestmark = pytest.mark.e2e


def test_upload_csv_then_compare(page, tmp_path):
    csv = tmp_path / "my_counts.csv"
    csv.write_text("label,count\n" + "".join(f"b{i},{(i * 7) % 23}\n" for i in range(64)))
    page.get_by_text("Upload a histogram").click()
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(str(csv))
    wait_idle(page)
    page.get_by_role("button", name="Use this file").click()
    wait_idle(page)
    page.get_by_text("Loaded my_counts: 64 cells").wait_for()
    screenshot(page, "data")

    page.get_by_role("link", name="Compare").click()
    wait_idle(page)
    page.get_by_text("my_counts").first.wait_for()
    page.get_by_role("button", name="Run comparison").click()
    wait_idle(page, timeout=120_000)
    page.locator('[data-testid="stPlotlyChart"]').first.wait_for()
    page.get_by_role("tab", name="Table").click()
    page.get_by_role("button", name="Download all results (CSV)").wait_for()
    screenshot(page, "compare")
