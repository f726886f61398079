"""Acting on a Streamlit page in a real browser without losing the action to a rerun.

Streamlit reruns the script after every widget change. A click or a fill that lands while it runs can hit a widget
the rerun is about to replace, and is lost; and until the run ends the page can hold two copies of a widget, the
stale one and the new one, so a strict locator fails. So the browser tests act through `act`: wait until the app
is idle, act, wait until the idle page shows what the action should produce, and act again (a bounded number of
times) when it never does. Reads of the page happen on an idle page too (`wait_idle`, `wait_text`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path

from playwright.sync_api import Download, Locator, Page
from playwright.sync_api import Error as PlaywrightError

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"

# Idle, as Streamlit 1.67's frontend marks it on the app root: connected (widgets are disabled while it reconnects),
# the script not running nor asked to rerun, and no element left stale by the last run (a stale copy is removed
# only once the run that replaces it has finished).
_IDLE = """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    return app !== null && app.dataset.testScriptState === "notRunning"
        && app.dataset.testConnectionState === "CONNECTED"
        && document.querySelector('[data-stale="true"]') === null;
}"""
_POLL_MS = 100  # how often a wait looks at the page again; it bounds nothing
PATIENCE_MS = 20_000  # idle this long without the expected state after an action: the action was lost

Expected = Locator | Callable[[], bool]


def is_idle(page: Page) -> bool:
    """Whether the app is idle now (False while the page navigates)."""
    try:
        return bool(page.evaluate(_IDLE))
    except PlaywrightError:  # the execution context went away with a navigation (a sign-in, a reload)
        return False


def wait_idle(page: Page, timeout: float = 120_000) -> None:
    """Wait until the app is idle; on timeout fail with what the page shows."""
    try:
        page.wait_for_function(_IDLE, timeout=timeout, polling=_POLL_MS)
    except PlaywrightError as error:
        raise AssertionError(f"the app was busy for {timeout / 1000:.0f} s; {describe(page, 'busy')}") from error


def act(page: Page, action: Callable[[], object], expected: Expected, *, what: str, attempts: int = 3,
        tried: bool = False, timeout: float = 120_000, patience: float = PATIENCE_MS) -> None:
    """Do ``action`` until the idle page shows ``expected`` (a locator that is then visible, or a predicate).

    ``expected`` should be what the action brings about, not what the page shows already: act returns as soon as
    the idle page shows it. Each try starts on an idle page. After it the page must become idle and show
    ``expected``; idle for ``patience`` ms without showing it means the action was lost, and it is tried again, up
    to ``attempts`` tries.
    A later try first looks whether a late rerun of the one before did it after all, so an action is repeated only
    when its effect is missing (a toggle should still act only when the state is not already the wanted one).
    ``timeout`` bounds each wait for the app to become idle (a fresh server's first run and a sweep are slow).
    ``tried``: the first try was made already (e.g. one click in each of several sessions, so that they run at once);
    its effect is awaited before any other.

    Raises:
        AssertionError: ``expected`` was never shown; the message says ``what`` was tried and what the page shows.
    """
    holds = _holds(expected)
    outcome = "never tried"
    if tried:
        if _settled(page, holds, timeout=timeout, patience=patience):
            return
        outcome = f"try 1 was followed by {patience / 1000:.0f} s of idle page without it"
    for attempt in range(int(tried), attempts):
        wait_idle(page, timeout)
        if attempt and holds():
            return
        try:
            action()
        except PlaywrightError as error:  # e.g. the target was replaced by a rerun under the click
            outcome = f"try {attempt + 1} failed: {error.message.splitlines()[0]}"
            continue
        if _settled(page, holds, timeout=timeout, patience=patience):
            return
        outcome = f"try {attempt + 1} was followed by {patience / 1000:.0f} s of idle page without it"
    raise AssertionError(f"{what}: the expected state never showed after {attempts} tries ({outcome}); "
                         f"{describe(page, what)}")


def wait_for(page: Page, expected: Expected, *, what: str, timeout: float = 120_000) -> None:
    """Wait until the idle page shows ``expected`` (no action: the page gets there by itself, e.g. after a load)."""
    if not _settled(page, _holds(expected), timeout=timeout, patience=timeout):
        raise AssertionError(f"{what} did not show within {timeout / 1000:.0f} s; {describe(page, what)}")


def wait_text(page: Page, text: str | re.Pattern[str], timeout: float = 120_000) -> None:
    """Wait until the idle page shows ``text``; on timeout fail with what the page shows instead."""
    wait_for(page, page.get_by_text(text), what=repr(text), timeout=timeout)


def _holds(expected: Expected) -> Callable[[], bool]:
    if isinstance(expected, Locator):
        return lambda: expected.first.is_visible()

    def holds() -> bool:
        try:
            return bool(expected())
        except PlaywrightError:  # the element read went away with a rerun: not there yet
            return False

    return holds


def _settled(page: Page, holds: Callable[[], bool], *, timeout: float, patience: float) -> bool:
    """Whether the page becomes idle showing the expected state within ``timeout`` ms, before it has stayed idle
    without it for ``patience`` ms (only idle time counts: a long run is not a lost action)."""
    deadline = time.monotonic() + timeout / 1000
    idle_since = None
    while time.monotonic() < deadline:
        if not is_idle(page):
            idle_since = None
        elif holds():
            return True
        elif idle_since is None:
            idle_since = time.monotonic()
        elif time.monotonic() - idle_since >= patience / 1000:
            return False
        page.wait_for_timeout(_POLL_MS)
    return False


def describe(page: Page, what: str) -> str:
    """What the page shows, for a failure message: the app's state, its alerts, its main text and a screenshot."""
    try:
        state = page.evaluate("""() => {
            const app = document.querySelector('[data-testid="stApp"]');
            return app ? `script ${app.dataset.testScriptState}, connection ${app.dataset.testConnectionState}`
                       : "no Streamlit app on the page";
        }""")
    except PlaywrightError:  # mid-navigation: what is known is still worth the message
        state = "navigating"
    alerts = page.locator('[data-testid="stAlert"], [data-testid="stException"]').all_inner_texts()
    main = " | ".join(page.locator('[data-testid="stMain"]').all_inner_texts())
    shot = screenshot(page, "failed-" + re.sub(r"\W+", "-", what).strip("-")[:60])
    return f"the page ({state}) shows alerts {alerts} and the text {main[:2000]!r}; screenshot {shot}"


def screenshot(page: Page, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def metric_value(area: Page | Locator, label: str) -> str | None:
    """The value of the first metric whose text has ``label`` in ``area``, or None while there is none (no wait)."""
    values = area.get_by_test_id("stMetric").filter(has_text=label).get_by_test_id("stMetricValue").all_inner_texts()
    return values[0] if values else None


def shows_metric(area: Page | Locator, label: str, value: str) -> Callable[[], bool]:
    """An expectation: the metric labelled ``label`` shows ``value``."""
    return lambda: metric_value(area, label) == value


def go(page: Page, title: str, heading: str | None = None, *, timeout: float = 120_000) -> None:
    """Open the page ``title`` through the sidebar and wait until it shows its heading, idle."""
    act(page, lambda: page.get_by_role("link", name=title, exact=True).first.click(),
        page.get_by_role("heading", name=heading or title, exact=True), what=f"open the {title} page", timeout=timeout)


def click(page: Page, target: Locator, expected: Expected, *, what: str | None = None, force: bool = False,
          timeout: float = 120_000) -> None:
    """Click ``target`` (``force``: without Playwright's actionability checks, e.g. on a chart's SVG point) until the
    idle page shows ``expected``."""
    act(page, lambda: target.click(force=force), expected, what=what or f"click {target}", timeout=timeout)


def fill(page: Page, box: Locator, text: str, expected: Expected | None = None, *, commit: str = "Enter",
         timeout: float = 120_000) -> None:
    """Type ``text`` into ``box`` and commit it (Enter; a text area commits on Tab, i.e. on blur), until the idle
    page shows ``expected``, by default the box holding ``text`` (as a number, for a number input) with no widget
    asking for Enter any more (Streamlit's input instructions show until a typed value is committed)."""

    def type_and_commit() -> None:
        box.fill(text)
        box.press(commit)

    def committed() -> bool:
        held, number = box.input_value(), _as_number(text)
        same = held == text or (number is not None and _as_number(held) == number)
        return same and not any(page.get_by_test_id("InputInstructions").all_inner_texts())  # emptied on commit

    act(page, type_and_commit, expected or committed, what=f"fill {text!r} into {box}", timeout=timeout)


def _as_number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def upload(page: Page, path: Path, expected: Expected, *, uploader: Locator | None = None,
           timeout: float = 120_000) -> None:
    """Choose the file ``path`` in ``uploader`` (default the page's first file uploader), until the idle page shows
    ``expected``."""
    target = uploader or page.get_by_test_id("stFileUploaderDropzoneInput").first
    act(page, lambda: target.set_input_files(str(path)), expected, what=f"upload {path.name}", timeout=timeout)


def expand(page: Page, title: str) -> None:
    """Open the expander titled ``title``, unless it is open (a click on an open one would fold it)."""
    details = page.get_by_test_id("stExpander").filter(has_text=title).locator("details").first

    def is_open() -> bool:
        return bool(details.evaluate("e => e.open"))

    act(page, lambda: is_open() or details.get_by_text(title).first.click(), is_open, what=f"open {title!r}")


def check(page: Page, label: str, checked: bool = True) -> None:
    """Tick (or with ``checked`` False, untick) the checkbox whose label starts with ``label``, unless it already is."""
    box = page.get_by_role("checkbox", name=re.compile("^" + re.escape(label)))
    text = page.get_by_test_id("stCheckbox").filter(has=box).get_by_text(label)  # not a message quoting the label

    def done() -> bool:
        return box.is_checked() == checked

    act(page, lambda: done() or text.click(), done,
        what=f"{'tick' if checked else 'untick'} {label!r}")


def choose(page: Page, option: str, *, area: Page | Locator | None = None, expected: Expected | None = None) -> None:
    """Choose the radio button ``option`` (in ``area``, default the page), until the idle page shows ``expected``
    (by default: the button is chosen)."""
    where = area or page
    button = where.get_by_role("radio", name=option, exact=True)
    act(page, lambda: where.get_by_text(option, exact=True).first.click(),
        expected or (lambda: button.is_checked()), what=f"choose {option!r}")


def pick(page: Page, label: str, option: str | re.Pattern[str], *, area: Page | Locator | None = None,
         expected: Expected | None = None, timeout: float = 120_000) -> None:
    """Choose ``option`` (as Playwright matches an option's name: a substring, or a pattern) in the selectbox
    labelled ``label`` (in ``area``, default the page), until the idle page shows ``expected`` (by default: the
    selectbox holds the option)."""
    box = (area or page).get_by_test_id("stSelectbox").filter(has_text=label).first
    pattern = option if isinstance(option, re.Pattern) else re.compile(re.escape(option), re.IGNORECASE)

    def select() -> None:
        box.click()
        page.get_by_role("option", name=option).first.click()

    act(page, select, expected or (lambda: bool(pattern.search(box.get_by_role("combobox").input_value()))),
        what=f"pick {option!r} in {label!r}", timeout=timeout)


def slide(page: Page, label: str, steps: int) -> None:
    """Move the slider labelled ``label`` to ``steps`` steps above its minimum: Home, then one arrow key at a time,
    each pressed on an idle page and checked (a key pressed during a rerun can be lost)."""
    slider = page.get_by_test_id("stSlider").filter(has_text=label).get_by_role("slider").first
    minimum, step = float(slider.get_attribute("min") or 0), float(slider.get_attribute("step") or 1)

    def press(key: str) -> Callable[[], None]:
        def go_on() -> None:
            slider.focus()
            slider.press(key)
        return go_on

    def at(position: int) -> Callable[[], bool]:
        return lambda: abs(float(slider.input_value()) - (minimum + position * step)) < step / 2

    act(page, press("Home"), at(0), what=f"move the slider {label!r} to its start")
    for position in range(1, steps + 1):
        act(page, press("ArrowRight"), at(position), what=f"move the slider {label!r} to step {position}")


def download(page: Page, button: str | Callable[[], object], *, timeout: float = 120_000) -> bytes:
    """The bytes of the file a click on the button named ``button`` (or the click ``button`` does) downloads."""
    started: list[Download] = []

    def record(download: Download) -> None:  # a function of its own: the listener removed is the one added
        started.append(download)

    press = button if callable(button) else page.get_by_role("button", name=button).first.click
    page.on("download", record)
    try:
        act(page, press, lambda: bool(started), what=f"download from {button!r}", timeout=timeout)
    finally:
        page.remove_listener("download", record)
    return Path(started[0].path()).read_bytes()
