"""Real-browser journeys (Chromium): design a workload by dragging and from the registry; run a comparison
and click a point on the frontier to inspect that release."""

import re

import pytest

from tests.e2e.conftest import screenshot, wait_idle

pytestmark = pytest.mark.e2e


def metric_value(page, label: str) -> str:
    box = page.locator('[data-testid="stMetric"]').filter(has_text=label).first
    return box.locator('[data-testid="stMetricValue"]').inner_text()


def drag_on_chart(page, panel_text: str, start: tuple[float, float], end: tuple[float, float]) -> None:
    """Drag with the mouse across the plot area of the chart in the tab panel showing ``panel_text``.

    ``start`` and ``end`` are fractions (x from the left, y from the top) of the plot area.
    """
    panel = page.get_by_role("tabpanel").filter(has_text=panel_text)
    drag_layer = panel.locator('[data-testid="stPlotlyChart"] .nsewdrag').first
    drag_layer.wait_for()
    drag_layer.scroll_into_view_if_needed()
    page.wait_for_timeout(1000)  # let plotly finish laying out before dragging (slower on a loaded machine)
    area = drag_layer.bounding_box()
    at = [(area["x"] + area["width"] * fx, area["y"] + area["height"] * fy) for fx, fy in (start, end)]
    page.mouse.move(*at[0])
    page.mouse.down()
    page.mouse.move((at[0][0] + at[1][0]) / 2, (at[0][1] + at[1][1]) / 2, steps=8)
    page.mouse.move(*at[1], steps=8)
    page.mouse.up()
    wait_idle(page)


def test_coarsen_on_the_data_page_then_design_a_workload(page):
    wait_idle(page, timeout=120_000)  # a click during the fresh server's first run may be lost
    page.get_by_text("Derive a dataset").click()
    page.get_by_role("button", name="Coarsen").wait_for(timeout=120_000)
    wait_idle(page, timeout=120_000)
    page.get_by_role("button", name="Coarsen").click()
    wait_idle(page, timeout=120_000)
    page.get_by_text("(coarsened 2)").first.wait_for(timeout=120_000)  # the first rerun of a fresh server is slow
    assert metric_value(page, "Bins") == "2,048"
    page.get_by_text("Derive a dataset").scroll_into_view_if_needed()
    screenshot(page, "data-derive")
    page.get_by_role("combobox").first.click()  # back to the 4,096-bin sample for the workload journey
    page.get_by_role("option", name=re.compile("^smooth — 1-D")).click()
    wait_idle(page)
    assert metric_value(page, "Bins") == "4,096"

    page.get_by_role("link", name="Workloads").click()
    wait_idle(page)
    assert metric_value(page, "Queries × cells") == "2,000 × 4,096"

    page.get_by_role("tab", name="Draw a range").click()
    drag_on_chart(page, "Drag across the bars", (0.25, 0.5), (0.5, 0.5))
    slider = page.locator('[data-testid="stSlider"]').filter(has_text="Range of cells")
    for _ in range(120):  # up to 30 s: the selection reruns the script; wait until the slider follows the drag
        low, high = (int(v.replace(",", "")) for v in re.findall(r"[\d,]+", slider.inner_text())[:2])
        if low > 0:
            break
        page.wait_for_timeout(250)
    wait_idle(page)
    assert 800 < low < 1250 and 1850 < high < 2250  # a quarter to a half of 4,096 bins
    page.get_by_role("button", name="Use this range").click()
    wait_idle(page)
    assert metric_value(page, "Queries × cells") == "1 × 4,096"

    page.get_by_role("tab", name="Build from a standard workload").click()
    page.get_by_label("m", exact=True).fill("500")
    page.get_by_label("m", exact=True).press("Enter")
    wait_idle(page)
    page.get_by_role("button", name="Use this workload").click()
    wait_idle(page)
    assert metric_value(page, "Queries × cells") == "500 × 4,096"
    page.get_by_text("random-range:m=500").first.wait_for()
    page.mouse.move(5, 5)  # no tooltip in the screenshot
    page.get_by_text("Current workload").scroll_into_view_if_needed()
    screenshot(page, "workloads")


def test_drag_a_rectangle_on_the_2d_heatmap(page):
    page.get_by_test_id("stSidebar").get_by_role("combobox").first.click()
    page.get_by_role("option", name=re.compile("^grid-2d — 2-D")).click()
    wait_idle(page)
    page.get_by_role("link", name="Workloads").click()
    wait_idle(page)
    page.get_by_role("tab", name="Draw a range").click()
    drag_on_chart(page, "Drag a rectangle on the heatmap", (0.25, 0.25), (0.5, 0.75))
    sliders = [page.locator('[data-testid="stSlider"]').filter(has_text=name) for name in ("Rows", "Columns")]
    for _ in range(120):  # up to 30 s: the selection reruns the script; wait until the sliders follow the drag
        (r0, r1), (c0, c1) = ([int(v) for v in re.findall(r"\d+", s.inner_text())[:2]] for s in sliders)
        if r0 > 0 and c0 > 0:
            break
        page.wait_for_timeout(250)
    # 64 × 64 cells, rows downwards: a quarter to three quarters of the rows, a quarter to a half of the columns
    assert abs(r0 - 16) <= 1 and abs(r1 - 47) <= 1 and abs(c0 - 16) <= 1 and abs(c1 - 31) <= 1, (r0, r1, c0, c1)
    screenshot(page, "workloads-2d-draw")
    page.get_by_role("button", name="Use this range").click()
    wait_idle(page)
    assert metric_value(page, "Queries × cells") == "1 × 4,096"
    page.get_by_text(f"rows [{r0}, {r1}]").first.wait_for()
    page.get_by_text(f"cols [{c0}, {c1}]").first.wait_for()


def test_compare_then_click_a_point_on_the_frontier(page):
    page.get_by_role("link", name="Compare").click()
    wait_idle(page)
    for slow in ("dawa", "mwem", "ahp", "laplace-on-answers"):  # keep the journey quick
        remove = page.get_by_role("button", name=f"Remove {slow}")
        if remove.count():
            remove.click()
    trials = page.locator('[data-testid="stSlider"]').filter(has_text="Trials per point").get_by_role("slider")
    trials.focus()
    trials.press("Home")
    for _ in range(4):
        trials.press("ArrowRight")
    page.get_by_role("button", name="Run comparison").click()
    wait_idle(page, timeout=120_000)
    page.get_by_text("reproduced exactly").wait_for()
    caption = page.get_by_text(re.compile(r"at ε = [\d.]+, trial 0")).inner_text()
    assert "at ε = 0.4642" in caption  # the default point: middle of the grid

    chart = page.locator('[data-testid="stPlotlyChart"]').first
    chart.scroll_into_view_if_needed()
    chart.locator(".scatterlayer .trace .points path").last.click(force=True)
    # the clicked point (the last of its line, ε = 10) is now the one inspected
    page.get_by_text(re.compile(r"at ε = 10, trial 0")).wait_for()
    wait_idle(page)
    assert page.get_by_text("Regret").count()
    screenshot(page, "compare-frontier")
