"""A curator releases (secure), downloads and checks the files, simulates (exploration: nothing to download),
reloads a config; then visits Learn."""

import csv
import json

import numpy as np
import pytest

from dplens.core.data.datasets import load_histogram
from tests.e2e._actions import (
    ARTIFACTS,
    act,
    choose,
    click,
    download,
    expand,
    fill,
    go,
    screenshot,
    wait_idle,
    wait_text,
)
from tests.e2e.conftest import open_app

pytestmark = pytest.mark.e2e


def released_counts(data: bytes) -> np.ndarray:
    rows = list(csv.DictReader(data.decode().splitlines()))
    assert list(rows[0]) == ["bin", "count", "lower", "upper", "level"]  # intervals ride along
    return np.array([float(r["count"]) for r in rows])


def view_shot(page, text: str, name: str) -> None:
    """A viewport screenshot scrolled to ``text`` (full-page shots show only the top of a Streamlit page)."""
    page.mouse.move(5, 5)  # no tooltip over the picture
    page.get_by_text(text, exact=True).evaluate("e => e.scrollIntoView({block: 'start'})")
    wait_idle(page)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"))


def shows_release(page, number: int):
    """An expectation: the Release page shows release #``number`` (its "Show release" choice)."""
    shown = page.get_by_role("combobox", name="Show release")
    return lambda: shown.count() == 1 and shown.input_value().startswith(f"#{number}:")


def release_once(page, number: int = 1) -> None:
    """Spend and release, until the page shows this session's release #``number``."""
    click(page, page.get_by_role("button", name="Spend and release"), shows_release(page, number), timeout=300_000)


def test_release_download_reseed_and_reload_config(page, browser, app_url, tmp_path):
    truth = load_histogram("smooth").vector
    go(page, "Release")
    release_once(page)  # the secure path (the default): the only one that can leave the app
    wait_text(page, "Released histogram over the true counts")
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
    assert download(page, "Chart (PNG)").startswith(b"\x89PNG")  # kaleido + Debian Chromium

    # Exploration: seeded noise on the true data is a simulation for the curator, never a download.
    fill(page, page.get_by_role("spinbutton", name="Seed"), "1")
    choose(page, "exploration", area=page.get_by_test_id("stRadio"))
    release_once(page, 2)
    wait_text(page, "Simulation, not a private release")
    assert page.get_by_role("button", name="Released histogram (CSV)").count() == 0
    assert page.get_by_role("button", name="Release with metadata (JSON)").count() == 0
    assert page.get_by_role("button", name="Chart (HTML)").count() == 0
    history = list(csv.DictReader(download(page, "Release history (CSV)").decode().splitlines()))
    assert [(r["number"], r["noise_path"], r["epsilon"]) for r in history] == [("1", "secure", "1.0"),
                                                                             ("2", "exploration", "1.0")]
    assert "seed" not in history[0] and "stream" not in history[0]

    expand(page, "Session config (save or reload)")
    config = tmp_path / "session.json"
    config.write_bytes(download(page, "Session config (JSON)"))
    assert json.loads(config.read_text())["seed"] == 1

    context, fresh = open_app(browser, app_url)
    go(fresh, "Release")
    expand(fresh, "Session config (save or reload)")

    def load_config() -> None:  # a click before the upload has finished loads nothing: act loads it again
        fresh.get_by_test_id("stFileUploaderDropzoneInput").set_input_files(str(config))
        fresh.get_by_role("button", name="Load config").click()

    act(fresh, load_config, fresh.get_by_text("Config loaded."), what="load the session config")
    assert fresh.get_by_role("spinbutton", name="Seed").input_value() == "1"

    go(fresh, "Learn")
    wait_text(fresh, "Why range queries favour hierarchical strategies")
    wait_text(fresh, "6. The papers")  # the last section: every chart above it is drawn
    # §1–§4 draw five charts, §5 three (privacy-loss distributions, composition, Laplace/Gaussian crossover)
    assert fresh.locator('[data-testid="stPlotlyChart"]').count() == 8
    screenshot(fresh, "learn")
    view_shot(fresh, "2. One count, released many times", "learn-neighbours")
    view_shot(fresh, "4. Why range queries favour hierarchical strategies", "learn-ranges")

    go(fresh, "Papers")  # the last page without a browser journey: at least seen at 1280×800
    assert not fresh.get_by_text("Something went wrong").count()
    screenshot(fresh, "papers")
    context.close()
