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
