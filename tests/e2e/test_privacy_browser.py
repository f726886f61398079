"""A curator switches to zCDP, compares Laplace and Gaussian mechanisms at matched privacy, releases with a
Gaussian mechanism, and downloads the export, whose metadata states the definition, ε, δ, ρ and σ."""

import json
import re

import pytest

from dplens.core.privacy.definitions import ZCDP, zcdp_rho
from dplens.core.release.export import privacy_from_metadata
from tests.e2e._actions import choose, click, download, go, pick, screenshot, slide, wait_text
from tests.e2e.test_explore_browser import remove_mechanisms
from tests.e2e.test_release_browser import release_once

pytestmark = pytest.mark.e2e


def test_switch_to_zcdp_compare_release_export(fresh_page):
    page = fresh_page  # its own server: a zCDP release records a ρ total for the sample, which other tests spend
    # the sidebar's privacy definition; a new dataset under zCDP: a ρ total, no δ budget
    choose(page, "ρ-zCDP", area=page.get_by_test_id("stSidebar"), expected=page.get_by_text("Total budget ρ"))
    wait_text(page, "spent ρ = 0 of ρ = 0.4631")

    go(page, "Compare", "Compare mechanisms")
    wait_text(page, "ε at that δ")
    remove_mechanisms(page, ("dawa", "mwem", "ahp", "laplace-on-answers", "privelet"))  # keep the journey quick
    slide(page, "Trials per point", 1)
    click(page, page.get_by_role("button", name="Run comparison"), page.get_by_text("reproduced exactly"),
          timeout=180_000)
    legend = page.locator('[data-testid="stPlotlyChart"]').first.inner_text()
    assert "gaussian-hb" in legend and "hb" in legend  # both noise kinds on one chart
    screenshot(page, "compare-zcdp")

    go(page, "Release")
    pick(page, "Mechanism", re.compile("^gaussian-hb — "))  # name — what it does
    release_once(page)
    meta = json.loads(download(page, "Release with metadata (JSON)"))
    assert meta["definition"] == "zcdp" and meta["noise"] == "gaussian" and meta["delta"] == 1e-6
    assert meta["sigma"] > 0 and meta["noise_sampler"] == "opendp-lattice-gaussian"
    stated = privacy_from_metadata(meta)
    assert isinstance(stated, ZCDP) and stated.rho == pytest.approx(zcdp_rho(1.0, 1e-6))
    wait_text(page, "ρ charged")  # the release and the sidebar speak ρ
    wait_text(page, "spent ρ = 0.02436")
    screenshot(page, "release-zcdp")
