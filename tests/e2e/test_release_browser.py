"""A curator releases (secure), downloads and checks the files, simulates (exploration: nothing to download),
reloads a config; then visits Learn."""

import csv
import json

import numpy as np
import pytest

from dplens.core.data.datasets import load_histogram
from tests.e2e._actions import ARTIFACTS, screenshot, wait_idle, wait_text

pytestmark = pytest.mark.e2e


def download(page, button: str, timeout: float = 30_000):
    with page.expect_download(timeout=timeout) as info:
        page.get_by_role("button", name=button).first.click()
    data = info.value.path().read_bytes()
    wait_idle(page)
    return data


def released_counts(data: bytes) -> np.ndarray:
    rows = list(csv.DictReader(data.decode().splitlines()))
    assert list(rows[0]) == ["bin", "count", "lower", "upper", "level"]  # intervals ride along
    return np.array([float(r["count"]) for r in rows])


def open_page(page, title: str) -> None:
    """Wait for the shell (the first run can take seconds), then navigate through the sidebar."""
    page.get_by_text("Budget remaining").wait_for(timeout=120_000)
    page.get_by_role("link", name=title, exact=True).click()
    wait_idle(page)
    page.get_by_role("heading", name=title, exact=True).wait_for(timeout=60_000)


def view_shot(page, text: str, name: str) -> None:
    """A viewport screenshot scrolled to ``text`` (full-page shots show only the top of a Streamlit page)."""
    page.mouse.move(5, 5)  # no tooltip over the picture
    page.get_by_text(text, exact=True).evaluate("e => e.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(800)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"))


def release_once(page) -> None:
    page.get_by_role("button", name="Spend and release").click()
    wait_idle(page, timeout=60_000)
    wait_text(page, "Released histogram over the true counts")


def test_release_download_reseed_and_reload_config(page, browser, app_url, tmp_path):
    truth = load_histogram("smooth").vector
    open_page(page, "Release")
    release_once(page)  # the secure path (the default): the only one that can leave the app
    screenshot(page, "release")
    view_shot(page, "Released histogram over the true counts", "release-chart")

    first = released_counts(download(page, "Released histogram (CSV)"))
    assert first.size == truth.size
    # Released values only: OpenDP's integer Laplace at ε = 1 leaves a bin unchanged with probability
    # (1 − e⁻¹)/(1 + e⁻¹) ≈ 0.46, so about half the bins differ from the truth.
    assert np.all(first == np.round(first)) and 0.4 < np.mean(first != truth) < 0.7
    meta = json.loads(download(page, "Release with metadata (JSON)"))
    assert (meta["mechanism"], meta["noise_path"], meta["epsilon"]) == ("identity", "secure", 1.0)
    assert {"privacy_loss", "neighbouring", "workload", "version", "created", "export_id"} <= set(meta)
    assert not {"seed", "stream"} & set(meta)  # no export records a seed

    assert download(page, "Chart (HTML)").lstrip().lower().startswith(b"<html")
    assert download(page, "Chart (PNG)", timeout=90_000).startswith(b"\x89PNG")  # kaleido + Debian Chromium

    # Exploration: seeded noise on the true data is a simulation for the curator, never a download.
    seed = page.get_by_role("spinbutton", name="Seed")
    seed.fill("1")
    seed.press("Enter")
    wait_idle(page)
    page.locator('[data-testid="stRadio"]').get_by_text("exploration").click()
    wait_idle(page)
    release_once(page)
    page.get_by_text("Simulation, not a private release").first.wait_for()
    # the rerun that shows release #2 may still be on its way: wait until the secure release's download is gone
    page.get_by_role("button", name="Released histogram (CSV)").wait_for(state="detached", timeout=60_000)
    assert page.get_by_role("button", name="Released histogram (CSV)").count() == 0
    assert page.get_by_role("button", name="Release with metadata (JSON)").count() == 0
    assert page.get_by_role("button", name="Chart (HTML)").count() == 0
    history = list(csv.DictReader(download(page, "Release history (CSV)").decode().splitlines()))
    assert [(r["number"], r["noise_path"], r["epsilon"]) for r in history] == [("1", "secure", "1.0"),
                                                                             ("2", "exploration", "1.0")]
    assert "seed" not in history[0] and "stream" not in history[0]

    page.get_by_text("Session config (save or reload)").click()
    config = tmp_path / "session.json"
    config.write_bytes(download(page, "Session config (JSON)"))
    assert json.loads(config.read_text())["seed"] == 1

    context = browser.new_context(viewport={"width": 1280, "height": 800})
    fresh = context.new_page()
    fresh.set_default_timeout(30_000)
    fresh.goto(app_url)
    wait_idle(fresh)
    open_page(fresh, "Release")
    fresh.get_by_text("Session config (save or reload)").click()
    fresh.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(str(config))
    wait_idle(fresh)
    fresh.get_by_role("button", name="Load config").click()
    wait_idle(fresh)
    fresh.get_by_text("Config loaded.").wait_for()
    assert fresh.get_by_role("spinbutton", name="Seed").input_value() == "1"

    open_page(fresh, "Learn")
    fresh.get_by_text("Why range queries favour hierarchical strategies").wait_for()
    fresh.get_by_text("6. The papers").wait_for()  # the last section: every chart above it is drawn
    # §1–§4 draw five charts, §5 three (privacy-loss distributions, composition, Laplace/Gaussian crossover)
    assert fresh.locator('[data-testid="stPlotlyChart"]').count() == 8
    screenshot(fresh, "learn")
    view_shot(fresh, "2. One count, released many times", "learn-neighbours")
    view_shot(fresh, "4. Why range queries favour hierarchical strategies", "learn-ranges")

    open_page(fresh, "Papers")  # the last page without a browser journey: at least seen at 1280×800
    fresh.get_by_role("heading", name="Papers").first.wait_for()
    assert not fresh.get_by_text("Something went wrong").count()
    screenshot(fresh, "papers")
    context.close()
