"""A curator switches to zCDP, compares Laplace and Gaussian mechanisms at matched privacy, releases with a
Gaussian mechanism, and downloads the export, whose metadata states the definition, ε, δ, ρ and σ."""

import json
import re

import pytest

from dplens.core.privacy.definitions import ZCDP, zcdp_rho
from dplens.core.release.export import privacy_from_metadata
from tests.e2e._actions import screenshot, wait_idle
from tests.e2e.test_release_browser import download, open_page, release_once

pytestmark = pytest.mark.e2e


def _slider_to(page, label: str, steps: int) -> None:
    """Home, then ``steps`` to the right, one rerun at a time: a key pressed while the app reruns can be lost
    (CI once left "Total budget δ" at 1e-7 instead of 1e-5), so the position is read back and corrected."""
    slider = page.locator('[data-testid="stSlider"]').filter(has_text=label).get_by_role("slider").first
    slider.focus()
    slider.press("Home")
    wait_idle(page)
    start = float(slider.get_attribute("min") or 0)
    for _ in range(steps + 10):
        slider = page.locator('[data-testid="stSlider"]').filter(has_text=label).get_by_role("slider").first
        now = float(slider.input_value())
        if now == start + steps:
            return
        slider.focus()
        slider.press("ArrowRight" if now < start + steps else "ArrowLeft")
        wait_idle(page)
    raise AssertionError(f"slider {label!r} did not reach position {steps}")


def test_switch_to_zcdp_compare_release_export(fresh_page):
    page = fresh_page  # its own server: a zCDP release records a ρ total for the sample, which other tests spend
    page.get_by_text("ρ-zCDP").first.click()  # the sidebar's privacy definition
    wait_idle(page)
    page.get_by_text("Total budget ρ").first.wait_for()  # a new dataset under zCDP: a ρ total, no δ budget
    page.get_by_text("spent ρ = 0 of ρ = 0.4631").first.wait_for()

    page.get_by_role("link", name="Compare").click()
    wait_idle(page)
    page.get_by_text("ε at that δ").first.wait_for()
    for slow in ("dawa", "mwem", "ahp", "laplace-on-answers", "privelet"):  # keep the journey quick
        remove = page.get_by_role("button", name=f"Remove {slow}")
        if remove.count():
            remove.click()
    _slider_to(page, "Trials per point", 1)
    page.get_by_role("button", name="Run comparison").click()
    wait_idle(page, timeout=180_000)
    page.get_by_text("reproduced exactly").wait_for(timeout=60_000)
    legend = page.locator('[data-testid="stPlotlyChart"]').first.inner_text()
    assert "gaussian-hb" in legend and "hb" in legend  # both noise kinds on one chart
    screenshot(page, "compare-zcdp")

    open_page(page, "Release")
    mechanism = page.locator('[data-testid="stSelectbox"]').filter(has_text="Mechanism").first
    mechanism.click()
    page.get_by_role("option", name=re.compile("^gaussian-hb — ")).click()  # name — what it does
    wait_idle(page)
    release_once(page)
    meta = json.loads(download(page, "Release with metadata (JSON)"))
    assert meta["definition"] == "zcdp" and meta["noise"] == "gaussian" and meta["delta"] == 1e-6
    assert meta["sigma"] > 0 and meta["noise_sampler"] == "opendp-lattice-gaussian"
    stated = privacy_from_metadata(meta)
    assert isinstance(stated, ZCDP) and stated.rho == pytest.approx(zcdp_rho(1.0, 1e-6))
    page.get_by_text("ρ charged").first.wait_for()  # the release and the sidebar speak ρ
    page.get_by_text("spent ρ = 0.02436").first.wait_for()
    screenshot(page, "release-zcdp")
