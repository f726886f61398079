"""The browser tests' one way to act on the page (_actions.act), in a real browser: an action lost to a rerun is
made again, and a state that never shows fails with what the page shows."""

import pytest

from tests.e2e._actions import act

pytestmark = pytest.mark.e2e


def test_a_lost_action_is_made_again(page):
    tries = []

    def lost_once() -> None:  # the first click goes nowhere, as one landing on a widget a rerun replaces
        tries.append(len(tries))
        if len(tries) > 1:
            page.get_by_text("Derive a dataset").click()

    act(page, lost_once, page.get_by_role("button", name="Coarsen"), what="open Derive a dataset", patience=2_000)
    assert tries == [0, 1]


def test_a_state_that_never_shows_says_what_the_page_shows(page):
    with pytest.raises(AssertionError, match=r"^wait for nothing: .* after 2 tries .*Start here:"):
        act(page, lambda: None, page.get_by_text("no page says this"), what="wait for nothing", attempts=2,
            patience=1_000)
