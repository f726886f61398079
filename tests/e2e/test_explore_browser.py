"""Real-browser journeys (Chromium): design a workload by dragging and from the registry; run a comparison
and click a point on the frontier to inspect that release."""

import re

import pytest

from tests.e2e._actions import act, click, go, metric_value, pick, screenshot, shows_metric, slide

pytestmark = pytest.mark.e2e


def drag_on_chart(page, panel_text: str, start: tuple[float, float], end: tuple[float, float]) -> None:
    """Drag with the mouse across the plot area of the chart in the tab panel showing ``panel_text``.

    ``start`` and ``end`` are fractions (x from the left, y from the top) of the plot area.
    """
    panel = page.get_by_role("tabpanel").filter(has_text=panel_text)
    drag_layer = panel.locator('[data-testid="stPlotlyChart"] .nsewdrag').first
    drag_layer.scroll_into_view_if_needed()
    area = drag_layer.bounding_box()
    at = [(area["x"] + area["width"] * fx, area["y"] + area["height"] * fy) for fx, fy in (start, end)]
    page.mouse.move(*at[0])
    page.mouse.down()
    page.mouse.move((at[0][0] + at[1][0]) / 2, (at[0][1] + at[1][1]) / 2, steps=8)
    page.mouse.move(*at[1], steps=8)
    page.mouse.up()


def slider_numbers(page, label: str) -> list[int]:
    """The numbers the slider labelled ``label`` shows (its two ends), none while it is not drawn."""
    texts = page.get_by_test_id("stSlider").filter(has_text=label).all_inner_texts()
    return [int(v.replace(",", "")) for v in re.findall(r"\d[\d,]*", texts[0])[:2]] if texts else []


def remove_mechanisms(page, names) -> None:
    """Remove the mechanisms ``names`` that Compare lists (keeps a journey quick)."""
    for name in names:
        remove = page.get_by_role("button", name=f"Remove {name}")
        if remove.count():
            click(page, remove, lambda remove=remove: remove.count() == 0)


def test_coarsen_on_the_data_page_then_design_a_workload(page):
    click(page, page.get_by_text("Derive a dataset"), page.get_by_role("button", name="Coarsen"))
    # the first rerun of a fresh server is slow: act's timeout bounds it
    click(page, page.get_by_role("button", name="Coarsen"), page.get_by_text("(coarsened 2)"))
    assert metric_value(page, "Bins") == "2,048"
    page.get_by_text("Derive a dataset").scroll_into_view_if_needed()
    screenshot(page, "data-derive")
    # back to the 4,096-bin sample for the workload journey
    pick(page, "Dataset", re.compile("^smooth — 1-D"), area=page.get_by_test_id("stSidebar"),
         expected=shows_metric(page, "Bins", "4,096"))

    go(page, "Workloads")
    assert metric_value(page, "Queries × cells") == "2,000 × 4,096"

    click(page, page.get_by_role("tab", name="Draw a range"), page.get_by_text("Drag across the bars"))

    def followed() -> bool:  # a quarter to a half of 4,096 bins
        ends = slider_numbers(page, "Range of cells")
        return len(ends) == 2 and 800 < ends[0] < 1250 and 1850 < ends[1] < 2250

    # a drag before plotly has laid the chart out lands elsewhere: act drags again until the slider follows
    act(page, lambda: drag_on_chart(page, "Drag across the bars", (0.25, 0.5), (0.5, 0.5)), followed,
        what="drag a quarter to a half of the histogram")
    click(page, page.get_by_role("button", name="Use this range"), shows_metric(page, "Queries × cells", "1 × 4,096"))

    click(page, page.get_by_role("tab", name="Build from a standard workload"), page.get_by_label("m", exact=True))

    def use_m_500() -> None:
        page.get_by_label("m", exact=True).fill("500")
        page.get_by_role("button", name="Use this workload").click()  # the click blurs m, which commits it first

    act(page, use_m_500, shows_metric(page, "Queries × cells", "500 × 4,096"), what="use random-range with m=500")
    page.get_by_text("random-range:m=500").first.wait_for()
    page.mouse.move(5, 5)  # no tooltip in the screenshot
    page.get_by_text("Current workload").scroll_into_view_if_needed()
    screenshot(page, "workloads")


def test_drag_a_rectangle_on_the_2d_heatmap(page):
    pick(page, "Dataset", re.compile("^grid-2d — 2-D"), area=page.get_by_test_id("stSidebar"))
    go(page, "Workloads")
    click(page, page.get_by_role("tab", name="Draw a range"), page.get_by_text("Drag a rectangle on the heatmap"))

    # 64 × 64 cells, rows downwards: a quarter to three quarters of the rows, a quarter to a half of the columns
    def followed() -> bool:
        ends = slider_numbers(page, "Rows") + slider_numbers(page, "Columns")
        return len(ends) == 4 and all(abs(end - want) <= 1 for end, want in zip(ends, (16, 47, 16, 31), strict=True))

    act(page, lambda: drag_on_chart(page, "Drag a rectangle on the heatmap", (0.25, 0.25), (0.5, 0.75)), followed,
        what="drag a quarter to three quarters of the rows, a quarter to a half of the columns")
    (r0, r1), (c0, c1) = slider_numbers(page, "Rows"), slider_numbers(page, "Columns")
    screenshot(page, "workloads-2d-draw")
    click(page, page.get_by_role("button", name="Use this range"), shows_metric(page, "Queries × cells", "1 × 4,096"))
    page.get_by_text(f"rows [{r0}, {r1}]").first.wait_for()
    page.get_by_text(f"cols [{c0}, {c1}]").first.wait_for()


def test_compare_then_click_a_point_on_the_frontier(page):
    go(page, "Compare", "Compare mechanisms")
    remove_mechanisms(page, ("dawa", "mwem", "ahp", "laplace-on-answers"))
    slide(page, "Trials per point", 4)
    click(page, page.get_by_role("button", name="Run comparison"), page.get_by_text("reproduced exactly"))
    caption = page.get_by_text(re.compile(r"at ε = [\d.]+, trial 0")).inner_text()
    assert "at ε = 0.4642" in caption  # the default point: middle of the grid

    chart = page.locator('[data-testid="stPlotlyChart"]').first
    chart.scroll_into_view_if_needed()
    # the clicked point (the last of its line, ε = 10) is then the one inspected
    click(page, chart.locator(".scatterlayer .trace .points path").last, page.get_by_text("at ε = 10, trial 0"),
          force=True)
    assert page.get_by_text("Regret").count()
    screenshot(page, "compare-frontier")
