"""Tables in a real browser: upload Adult (5 of its attributes, all 48,842 records) with its domain →
all 2-way marginals → compare methods → release MST synthetic data → download. Screenshots: test-artifacts/tables-*.png.
Skips cleanly when the Adult data is absent (the ``shared_data`` fixture: $DPLENS_SHARED_DATA/adult, else
../shared/data/adult beside the repository)."""

import io
import json

import pandas as pd
import pytest

from dplens.ui.tables_view import table_method_label
from tests.e2e._actions import ARTIFACTS, wait_idle, wait_text

pytestmark = pytest.mark.e2e
COLUMNS = ["age", "workclass", "race", "sex", "income>50K"]


def _download(page, label: str) -> bytes:
    wait_idle(page, timeout=120_000)  # a download click reruns the page: let the previous rerun settle first
    with page.expect_download(timeout=120_000) as info:
        page.get_by_role("button", name=label).first.click()
    data = info.value.path().read_bytes()
    wait_idle(page, timeout=120_000)
    return data


@pytest.fixture
def adult(shared_data):
    if not (shared_data / "adult" / "adult.csv").is_file():
        pytest.skip(f"the Adult data ({shared_data / 'adult'}) is absent (set DPLENS_SHARED_DATA)")
    return shared_data / "adult"


def test_adult_marginals_compare_and_mst_synthetic_data(adult, page, tmp_path):
    frame = pd.read_csv(adult / "adult.csv", usecols=COLUMNS)[COLUMNS]
    domain = {k: v for k, v in json.loads((adult / "adult-domain.json").read_text()).items() if k in COLUMNS}
    frame.to_csv(tmp_path / "adult.csv", index=False)
    (tmp_path / "adult-domain.json").write_text(json.dumps(domain))
    page.set_viewport_size({"width": 1366, "height": 900})
    page.get_by_role("link", name="Tables", exact=True).first.click()
    wait_text(page, "built-in sample")
    inputs = page.locator('[data-testid="stFileUploaderDropzoneInput"]')
    inputs.nth(1).set_input_files(str(tmp_path / "adult-domain.json"))
    wait_idle(page)
    inputs.nth(0).set_input_files(str(tmp_path / "adult.csv"))
    wait_text(page, "48,842 records")
    wait_text(page, "10 marginals")  # all 2-way marginals of 5 attributes, the default workload
    page.screenshot(path=str(ARTIFACTS / "tables-loaded.png"), full_page=True)

    page.get_by_role("button", name="Run comparison").click()
    wait_text(page, "The dashed line is the non-private independence baseline")
    wait_idle(page, timeout=120_000)
    page.screenshot(path=str(ARTIFACTS / "tables-compare.png"), full_page=True)

    page.get_by_role("tab", name="Release").click()
    method = page.locator('[data-testid="stSelectbox"]').filter(has_text="Method").first
    method.click()
    page.get_by_role("option", name=table_method_label("mst")).click()
    wait_idle(page)
    page.get_by_role("button", name="Spend ρ and release").click()
    wait_text(page, "synthetic records.", timeout=240_000)
    wait_idle(page, timeout=120_000)
    page.screenshot(path=str(ARTIFACTS / "tables-release.png"), full_page=True)
    synthetic = pd.read_csv(io.BytesIO(_download(page, "Synthetic records (CSV)")))
    assert list(synthetic.columns) == COLUMNS and len(synthetic) > 40_000
    meta = json.loads(_download(page, "Privacy metadata (JSON)"))
    assert meta["mechanism"].startswith("mst (opendp.extras.mbi.MST")
    assert meta["rho"] == 0.1 and meta["measure_split"] == 0.9
    assert "rho-zCDP" in meta["privacy"]


def test_sample_ranges_and_identity_pgm(page):
    """The built-in sample: a ranges workload, compare the default methods, release identity-pgm with its progress,
    download the range answers and the synthetic records."""
    page.set_viewport_size({"width": 1366, "height": 900})
    page.get_by_role("link", name="Tables", exact=True).first.click()
    wait_text(page, "built-in sample")
    page.get_by_text("chosen marginals", exact=True).click()
    wait_idle(page)
    box = page.get_by_label("Marginals", exact=True).and_(page.get_by_test_id("stTextInputField"))
    box.fill("ranges:age|sex, education+income")
    box.press("Enter")
    wait_text(page, "2 marginals (1 asked as ranges)")
    page.get_by_role("button", name="Run comparison").click()
    wait_text(page, "The dashed line is the non-private independence baseline")
    wait_idle(page, timeout=120_000)
    page.screenshot(path=str(ARTIFACTS / "tables-sample-compare.png"), full_page=True)
    page.get_by_role("tab", name="Release").click()
    method = page.locator('[data-testid="stSelectbox"]').filter(has_text="Method").first
    method.click()
    page.get_by_role("option", name=table_method_label("identity-pgm")).click()
    wait_idle(page)
    page.get_by_role("button", name="Spend ρ and release").click()
    wait_text(page, "synthetic records.", timeout=240_000)
    wait_idle(page, timeout=120_000)
    page.screenshot(path=str(ARTIFACTS / "tables-sample-release.png"), full_page=True)
    ranges = pd.read_csv(io.BytesIO(_download(page, "Range answers (CSV)")))
    assert list(ranges.columns) == ["marginal", "low", "high", "cell", "answer"] and len(ranges) == 21 * 2
    synthetic = pd.read_csv(io.BytesIO(_download(page, "Synthetic records (CSV)")))
    assert list(synthetic.columns) == ["age", "sex", "education", "hours", "region", "income"]
    assert len(synthetic) > 5_000  # hours and region, outside the workload, get their 1-way marginals measured
    meta = json.loads(_download(page, "Privacy metadata (JSON)"))
    assert meta["mechanism"].startswith("identity-pgm (opendp.extras.mbi.Fixed") and meta["rho"] == 0.1
