"""A reader audits a literal (NOT DP) variant and reruns Zhao's claims with verdicts, in a real browser."""

import pytest

from tests.e2e._actions import screenshot, wait_idle

pytestmark = pytest.mark.e2e


def test_audit_a_literal_variant_then_read_the_verdicts(page):
    page.get_by_role("link", name="Papers", exact=True).click()
    wait_idle(page)
    page.get_by_role("tab", name="Xiao et al.").click()
    panel = page.get_by_role("tabpanel", name="Xiao et al.")
    panel.get_by_role("button", name="Audit the literal and the corrected variant").last.click()  # the max query
    wait_idle(page, timeout=60_000)
    panel.get_by_text("NOT DIFFERENTIALLY PRIVATE: the audit measured").first.wait_for()
    screenshot(page, "papers-audit")

    page.get_by_role("tab", name="Zhao (Lee & Clifton, Koufogiannis, Ligett)").click()
    zhao = page.get_by_role("tabpanel", name="Zhao (Lee & Clifton, Koufogiannis, Ligett)")
    zhao.get_by_text("Not reproducible here: Zhao's Twitter regression").wait_for()
    zhao.get_by_role("button", name="Run the paper's experiment").click()
    wait_idle(page, timeout=120_000)
    zhao.get_by_text("Verdicts").first.wait_for()
    zhao.get_by_text("keep probability 0.1 → 0.3").first.wait_for()
    assert not page.get_by_text("Something went wrong").count()
    screenshot(page, "papers-verdicts")
