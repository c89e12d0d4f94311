"""The presenter's start page as a sales engineer sees it while preparing a demo."""

from __future__ import annotations

import pytest

# Each line break inside each element, as "<text before the break>|<text after>", for those that fall mid-word
# (not after a ".", "_", "/", "-" or at a space): each character's line found from its own box.
MID_WORD_BREAKS = """els => els.flatMap(el => {
  const chars = [], walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    for (let i = 0; i < node.length; i++) {
      const r = document.createRange(); r.setStart(node, i); r.setEnd(node, i + 1);
      const box = r.getClientRects()[0];
      if (box) chars.push([node.data[i], Math.round(box.top)]);
    }
  }
  const found = [];
  for (let i = 1; i < chars.length; i++) {
    if (chars[i][1] !== chars[i - 1][1] && !"._/- ".includes(chars[i - 1][0]) && chars[i][0] !== " ") {
      const text = chars.map(c => c[0]).join("");
      found.push(text.slice(0, i) + "|" + text.slice(i));
    }
  }
  return found;
})"""


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


def test_the_summary_s_tables_fit_a_phone_with_every_column_in_view(page, console_live):
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{console_live.url}/present/50-failure-and-recovery?speed=20")
    # A Link token, then Link completed headlessly (a path holding the token's id), then the retry that sends
    # the switch's webhook (the worker delivers it: long event names in the Event column).
    for number in (1, 2, 3, 4):
        page.locator("html[data-stage-ready]").wait_for(state="attached")
        page.keyboard.press("ArrowRight")
        page.locator(f'#stage[data-step="{number}"]').wait_for()
    page.get_by_text("Direct deposit switch succeeded").first.wait_for()
    page.goto(f"{console_live.url}/present/50-failure-and-recovery/summary?step=4")
    tables = page.locator(".summary-table")
    tables.first.wait_for()
    assert page.locator("[data-summary-event='direct_deposit_switch.added']").count()
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
    # ... and they wrap only after a ".", "_", "/" or "-" (or at a space), never mid-word: "anywhere" let the
    # table squeeze the Event column until "direct_deposit_switch" read "direct_depo / sit_switch".
    assert page.locator(".summary-table code").count() >= 2
    mid_word = page.locator(".summary-table code").evaluate_all(MID_WORD_BREAKS)
    assert mid_word == [], mid_word


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
