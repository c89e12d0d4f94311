"""What to type in Link stays in view while Link is open, on a phone as on a laptop.

At 390 px Link used to take the whole screen and cover the walkthrough's "In Link" instructions (the test
user, password and codes): now they are a strip along the top and the SDK opens Link below it
(`--link-inset-top`). At 1280 px they stay docked to Link's left, as before.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.linkui import search_and_choose
from tests.browser.test_console_walkthrough import LINK_FRAME, create_token, open_link, start

# Whether the element's centre is in the viewport and the element (or a child) is what is drawn there.
ON_TOP_AT_CENTRE = """el => {
  const r = el.getBoundingClientRect();
  const x = r.x + r.width / 2, y = r.y + r.height / 2;
  if (x < 0 || y < 0 || x > innerWidth || y > innerHeight) return false;
  return el.contains(document.elementFromPoint(x, y));
}"""


def _visible_and_on_top(locator) -> bool:
    return locator.evaluate(ON_TOP_AT_CENTRE)


def _overlap(a, b) -> bool:
    return not (
        a["x"] + a["width"] <= b["x"]
        or b["x"] + b["width"] <= a["x"]
        or a["y"] + a["height"] <= b["y"]
        or b["y"] + b["height"] <= a["y"]
    )


@pytest.mark.parametrize("size", [(390, 844), (1280, 720)], ids=["390", "1280"])
def test_the_in_link_instructions_stay_in_view_while_link_is_open(page, live_server, size):
    width, height = size
    page.set_viewport_size({"width": width, "height": height})
    start(page, live_server)
    create_token(page, "Standard switch")
    frame = open_link(page)
    guide = page.locator("#step-link [data-link-guide]")
    expect(guide).to_have_class(re.compile(r"\bdocked\b"))
    credentials = guide.locator("li", has_text="Username user_good, password pass_good")

    # On Link's first screen and on its login screen, where they are typed: the instructions and the line
    # naming the test user are what is drawn at their centres, and Link (its close button included) is
    # beside or below them, not over them.
    for screen in ("intro", "login"):
        if screen == "login":
            frame.get_by_role("button", name="Continue").click()
            search_and_choose(frame, "Paycrest", "Paycrest")
            frame.get_by_label("Password").wait_for()
        assert _visible_and_on_top(guide), screen
        assert _visible_and_on_top(credentials), screen
        guide_box, link_box = guide.bounding_box(), page.locator(LINK_FRAME).bounding_box()
        assert not _overlap(guide_box, link_box), (screen, guide_box, link_box)
        assert link_box["y"] >= 0 and link_box["y"] + link_box["height"] <= height + 0.5, link_box
        expect(frame.get_by_role("button", name="Close Link")).to_be_in_viewport()

    # Closed: the instructions go back into the page, and nothing is left for the next Link.
    frame.get_by_role("button", name="Close Link").click()
    expect(page.locator("[data-link-overlay]")).to_have_count(0)
    expect(page.locator("#step-link [data-link-guide].docked")).to_have_count(0)
    assert page.evaluate("document.documentElement.style.getPropertyValue('--link-guide-height')") == ""


def test_the_sdk_opens_link_below_the_pages_link_inset_top(page, live_server):
    """A customer page that keeps its own bar above Link (a phone's app bar) sets --link-inset-top."""
    html = (
        b"<!doctype html><meta charset=utf-8><style>:root { --link-inset-top: 56px; } body { margin: 0; }</style>"
        b'<div style="height: 56px">App bar</div><script src="/static/link.js"></script>'
    )
    url = live_server.serve_test_file("/__test__/inset.html", html, "text/html; charset=utf-8")
    for width, height in ((390, 844), (1280, 720)):
        page.set_viewport_size({"width": width, "height": height})
        page.goto(url)
        page.evaluate("Link.open({ linkToken: 'any' })")
        overlay = page.locator("[data-link-overlay]").bounding_box()
        assert (overlay["y"], overlay["height"]) == (56, height - 56), overlay
        link = page.locator(LINK_FRAME).bounding_box()
        assert link["y"] >= 56 and link["y"] + link["height"] <= height, link
        if width == 390:  # a phone: Link fills all of the screen below the bar
            assert (link["width"], link["height"]) == (390, height - 56), link
