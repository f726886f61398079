"""A user reads Lee & Clifton's epsilons and simulates two gradual steps, in a real browser (Chromium)."""

import pytest

from tests.e2e._actions import click, go, screenshot, wait_text

pytestmark = pytest.mark.e2e


def test_choose_epsilon_then_gradual_release(page):
    # exact names (go's): the first paint may still show Streamlit's automatic page list ("choose epsilon")
    go(page, "Choose epsilon")
    # ε tight for the absence-days example (Lee & Clifton's Table 1 data)
    click(page, page.get_by_role("tab", name="From re-identification risk"), page.get_by_text("0.4317201"))
    wait_text(page, "0.3829393")
    screenshot(page, "choose_epsilon")

    go(page, "Gradual release")
    step_2 = page.get_by_role("button", name="Simulate step 2 (ε 0.1; a release would charge 0.05)")
    click(page, page.get_by_role("button", name="Simulate step 1 (ε 0.05; a release would charge 0.05)"), step_2)
    click(page, step_2, page.get_by_text("2 of 5"))
    wait_text(page, "ε = 0.1")  # loss so far = the last epsilon, not the sum
    screenshot(page, "gradual")
