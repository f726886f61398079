"""Tables in a real browser: upload Adult (5 of its attributes, all 48,842 records) with its domain →
all 2-way marginals → compare methods → release MST synthetic data → download. Screenshots: test-artifacts/tables-*.png.
Skips cleanly when the Adult data is absent (the ``shared_data`` fixture: $DPLENS_SHARED_DATA/adult, else
../shared/data/adult beside the repository)."""

import io
import json

import pandas as pd
import pytest

from dplens.ui.tables_view import table_method_label
from tests.e2e._actions import ARTIFACTS, act, choose, click, download, fill, go, pick, wait_text

pytestmark = pytest.mark.e2e
COLUMNS = ["age", "workclass", "race", "sex", "income>50K"]


@pytest.fixture
def adult(shared_data):
    if not (shared_data / "adult" / "adult.csv").is_file():
        pytest.skip(f"the Adult data ({shared_data / 'adult'}) is absent (set DPLENS_SHARED_DATA)")
    return shared_data / "adult"


def _open_tables(page) -> None:
    page.set_viewport_size({"width": 1366, "height": 900})
    go(page, "Tables", "Tables of records")
    wait_text(page, "built-in sample")


def _compare(page, screenshot: str) -> None:
    click(page, page.get_by_role("button", name="Run comparison"),
          page.get_by_text("The dashed line is the non-private independence baseline"))
    page.screenshot(path=str(ARTIFACTS / f"{screenshot}.png"), full_page=True)


def _release(page, method: str, screenshot: str) -> None:
    """Release with ``method`` on the Release tab, until the page says how many synthetic records it made."""
    click(page, page.get_by_role("tab", name="Release"), page.get_by_role("button", name="Spend ρ and release"))
    pick(page, "Method", table_method_label(method))
    click(page, page.get_by_role("button", name="Spend ρ and release"), page.get_by_text("synthetic records."),
          timeout=240_000)
    page.screenshot(path=str(ARTIFACTS / f"{screenshot}.png"), full_page=True)


def test_adult_marginals_compare_and_mst_synthetic_data(adult, page, tmp_path):
    frame = pd.read_csv(adult / "adult.csv", usecols=COLUMNS)[COLUMNS]
    domain = {k: v for k, v in json.loads((adult / "adult-domain.json").read_text()).items() if k in COLUMNS}
    frame.to_csv(tmp_path / "adult.csv", index=False)
    (tmp_path / "adult-domain.json").write_text(json.dumps(domain))
    _open_tables(page)
    inputs = page.get_by_test_id("stFileUploaderDropzoneInput")

    def upload_adult() -> None:  # the domain first: the records are read with it
        inputs.nth(1).set_input_files(str(tmp_path / "adult-domain.json"))
        inputs.nth(0).set_input_files(str(tmp_path / "adult.csv"))

    act(page, upload_adult, page.get_by_text("48,842 records"), what="upload Adult with its domain")
    wait_text(page, "10 marginals")  # all 2-way marginals of 5 attributes, the default workload
    page.screenshot(path=str(ARTIFACTS / "tables-loaded.png"), full_page=True)

    _compare(page, "tables-compare")
    _release(page, "mst", "tables-release")
    synthetic = pd.read_csv(io.BytesIO(download(page, "Synthetic records (CSV)")))
    assert list(synthetic.columns) == COLUMNS and len(synthetic) > 40_000
    meta = json.loads(download(page, "Privacy metadata (JSON)"))
    assert meta["mechanism"].startswith("mst (opendp.extras.mbi.MST")
    assert meta["rho"] == 0.1 and meta["measure_split"] == 0.9
    assert "rho-zCDP" in meta["privacy"]


def test_sample_ranges_and_identity_pgm(page):
    """The built-in sample: a ranges workload, compare the default methods, release identity-pgm with its progress,
    download the range answers and the synthetic records."""
    _open_tables(page)
    choose(page, "chosen marginals")
    box = page.get_by_label("Marginals", exact=True).and_(page.get_by_test_id("stTextInputField"))
    fill(page, box, "ranges:age|sex, education+income", page.get_by_text("2 marginals (1 asked as ranges)"))
    _compare(page, "tables-sample-compare")
    _release(page, "identity-pgm", "tables-sample-release")
    ranges = pd.read_csv(io.BytesIO(download(page, "Range answers (CSV)")))
    assert list(ranges.columns) == ["marginal", "low", "high", "cell", "answer"] and len(ranges) == 21 * 2
    synthetic = pd.read_csv(io.BytesIO(download(page, "Synthetic records (CSV)")))
    assert list(synthetic.columns) == ["age", "sex", "education", "hours", "region", "income"]
    assert len(synthetic) > 5_000  # hours and region, outside the workload, get their 1-way marginals measured
    meta = json.loads(download(page, "Privacy metadata (JSON)"))
    assert meta["mechanism"].startswith("identity-pgm (opendp.extras.mbi.Fixed") and meta["rho"] == 0.1
