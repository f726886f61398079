"""A user reads Lee & Clifton's epsilons and simulates two gradual steps, in a real browser (Chromium)."""

import pytest

from tests.e2e._actions import screenshot, wait_idle

pytestmark = pytest.mark.e2e


def test_choose_epsilon_then_gradual_release(page):
    # exact names: the first paint may still show Streamlit's automatic page list ("choose epsilon")
    page.get_by_role("link", name="Choose epsilon", exact=True).click()
    wait_idle(page)
    page.get_by_role("tab", name="From re-identification risk").click()
    # ε tight for the absence-days example (Lee & Clifton's Table 1 data)
    page.get_by_text("0.4317201").first.wait_for()
    page.get_by_text("0.3829393").first.wait_for()
    screenshot(page, "choose_epsilon")

    page.get_by_role("link", name="Gradual release", exact=True).click()
    wait_idle(page)
    page.get_by_role("button", name="Simulate step 1 (ε 0.05; a release would charge 0.05)").click()
    wait_idle(page)
    page.get_by_role("button", name="Simulate step 2 (ε 0.1; a release would charge 0.05)").click()
    wait_idle(page)
    page.get_by_text("2 of 5").wait_for()
    page.get_by_text("ε = 0.1").first.wait_for()  # loss so far = the last epsilon, not the sum
    screenshot(page, "gradual")
