"""The presenter's start page as a sales engineer sees it while preparing a demo."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("size", [(1280, 720), (390, 844)])
def test_the_brand_forms_two_buttons_are_one_size_one_primary(page, live_server, size):
    page.set_viewport_size({"width": size[0], "height": size[1]})
    page.goto(live_server.url + "/present")
    use = page.get_by_role("button", name="Use this brand")
    save = page.get_by_role("button", name="Save as a profile (short link)")
    # Two filled buttons of two heights side by side looked unfinished: one size, the profile the primary.
    assert abs(use.bounding_box()["height"] - save.bounding_box()["height"]) < 1
    background = "getComputedStyle(el).backgroundColor"
    assert use.evaluate(f"el => {background}") == "rgba(0, 0, 0, 0)"
    assert save.evaluate(f"el => {background}") != "rgba(0, 0, 0, 0)"


def test_the_summary_s_tables_fit_a_phone_with_every_column_in_view(page, live_server):
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{live_server.url}/present/50-failure-and-recovery?speed=20")
    for number in (1, 2):  # a Link token, then Link completed headlessly: a path holding the token's id
        page.keyboard.press("ArrowRight")
        page.locator(f'#stage[data-step="{number}"]').wait_for()
    page.goto(f"{live_server.url}/present/50-failure-and-recovery/summary?step=2")
    tables = page.locator(".summary-table")
    tables.first.wait_for()
    assert "/complete" in tables.last.inner_text()
    # Scrolled sideways inside the table, a phone showed "delive… answe…" and no Signature or Status column.
    for box in tables.evaluate_all(
        "ts => ts.map(t => [t.scrollWidth, t.clientWidth, t.getBoundingClientRect().right])"
    ):
        scroll_width, client_width, right = box
        assert scroll_width <= client_width + 1 and right <= 390, box
    # Only the long code words wrap: a header stays one line.
    heights = tables.last.locator("th").evaluate_all(
        "ths => ths.map(th => th.getBoundingClientRect().height)"
    )
    assert max(heights) - min(heights) < 1


def test_a_long_company_name_leaves_the_apps_logo_round(page, live_server):
    # "Northwind Lending International Holdings" wraps in the app bar; the initials' badge beside it was squeezed
    # to an oval 27 px wide, "NL" cut at both sides, on a 1280x720 projector.
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(f"{live_server.url}/present/10-standard-switch?brand=Northwind+Lending+International+Holdings")
    logo = page.locator(".app-logo").first
    logo.wait_for()
    box = logo.bounding_box()
    assert abs(box["width"] - box["height"]) < 1, box
    assert logo.evaluate("e => e.scrollWidth <= e.clientWidth"), logo.inner_text()
