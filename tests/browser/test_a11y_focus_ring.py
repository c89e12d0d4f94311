"""Focus is always visible: Tab through a page at 1280 and 390 px, and every stop wears an outline (or the
page's own focus style) that no scrolling box cuts off. Chromium draws the outline outside the border box
by outline-offset + outline-width; an ancestor with overflow other than visible clips what passes its edge.
"""

from __future__ import annotations

import pytest

from tests.browser.test_accessibility import DESKTOP, PHONE, resize

# For the focused element: why its focus ring is not (wholly) visible, or "" when it is.
RING_PROBLEM = """() => {
  const el = document.activeElement;
  const style = getComputedStyle(el);
  const width = parseFloat(style.outlineWidth) || 0;
  if (style.outlineStyle === "none" || width < 2) return "no outline";
  const grow = width + (parseFloat(style.outlineOffset) || 0);
  const r = el.getBoundingClientRect();
  const ring = {left: r.left - grow, right: r.right + grow, top: r.top - grow, bottom: r.bottom + grow};
  for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
    const s = getComputedStyle(a);
    if (s.overflowX === "visible" && s.overflowY === "visible") continue;
    const box = a.getBoundingClientRect();
    // the part of the box inside its borders (where a child is clipped)
    const inner = {left: box.left + a.clientLeft, top: box.top + a.clientTop,
                   right: box.left + a.clientLeft + a.clientWidth, bottom: box.top + a.clientTop + a.clientHeight};
    if (ring.left < inner.left - 0.5 || ring.right > inner.right + 0.5 ||
        ring.top < inner.top - 0.5 || ring.bottom > inner.bottom + 0.5)
      return "ring clipped by " + a.tagName.toLowerCase() + "." + a.className;
  }
  return "";
}"""


def describe(page) -> str:
    return page.evaluate(
        "() => { const e = document.activeElement; return e.tagName.toLowerCase() + '.' + e.className + ' "
        "\"' + (e.getAttribute('aria-label') || e.textContent).trim().replace(/\\s+/g, ' ').slice(0, 40) + '\"'; }"
    )


def tab_through(page, stops: int) -> list[str]:
    problems = []
    for _ in range(stops):
        page.keyboard.press("Tab")
        # An iframe draws its own ring (Link: test_accessibility); <body> is the browser's own controls, where
        # the tab order wraps round.
        if page.evaluate("() => document.activeElement.tagName") in ("IFRAME", "BODY"):
            continue
        problem = page.evaluate(RING_PROBLEM)
        if problem:
            problems.append(f"{describe(page)}: {problem}")
    return problems


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["1280", "390"])
@pytest.mark.parametrize("path", ["/", "/keys", "/webhooks", "/events", "/clock", "/training"])
def test_every_tab_stop_shows_a_whole_focus_ring(page, console_live, path, size):
    page.goto(console_live.url + path)
    resize(page, size)
    problems = tab_through(page, 30)
    assert not problems, "\n".join(sorted(set(problems)))
