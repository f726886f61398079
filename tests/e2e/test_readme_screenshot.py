"""The README's screenshot, made by the app itself: the Compare page after its first comparison, in Chromium.

Each run rewrites ``docs/screenshots/readme-compare.png`` (the README and the docs' home page show it), so the
picture is of the app as it is; commit the file when it changes.
"""

from pathlib import Path

import pytest

from tests.e2e._actions import click, go, wait_idle

pytestmark = pytest.mark.e2e

README_SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "screenshots" / "readme-compare.png"


def test_the_readme_screenshot_shows_a_comparison(page):
    page.set_viewport_size({"width": 1280, "height": 900})  # before any chart is drawn: no resize transition to wait
    go(page, "Compare", "Compare mechanisms")
    click(page, page.get_by_role("button", name="Run comparison"), page.get_by_text("Inspect one release"))
    chart = page.locator('[data-testid="stPlotlyChart"]').first
    chart.evaluate("element => element.scrollIntoView({block: 'center'})")  # the sidebar beside the result
    wait_idle(page)
    page.screenshot(path=str(README_SCREENSHOT))
    assert README_SCREENSHOT.stat().st_size > 20_000
