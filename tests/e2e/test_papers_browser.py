"""A reader audits a literal (NOT DP) variant and reruns Zhao's claims with verdicts, in a real browser."""

import pytest

from tests.e2e._actions import click, go, screenshot, wait_for

pytestmark = pytest.mark.e2e


def test_audit_a_literal_variant_then_read_the_verdicts(page):
    go(page, "Papers")
    panel = page.get_by_role("tabpanel", name="Xiao et al.")
    audit = panel.get_by_role("button", name="Audit the literal and the corrected variant").last  # the max query
    click(page, page.get_by_role("tab", name="Xiao et al."), audit)
    click(page, audit, panel.get_by_text("NOT DIFFERENTIALLY PRIVATE: the audit measured"))
    screenshot(page, "papers-audit")

    zhao = page.get_by_role("tabpanel", name="Zhao (Lee & Clifton, Koufogiannis, Ligett)")
    click(page, page.get_by_role("tab", name="Zhao (Lee & Clifton, Koufogiannis, Ligett)"),
          zhao.get_by_text("Not reproducible here: Zhao's Twitter regression"))
    click(page, zhao.get_by_role("button", name="Run the paper's experiment"), zhao.get_by_text("Verdicts"))
    wait_for(page, zhao.get_by_text("keep probability 0.1 → 0.3"), what="Zhao's verdicts")
    assert not page.get_by_text("Something went wrong").count()
    screenshot(page, "papers-verdicts")
