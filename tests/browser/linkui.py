"""Driving Link's screens from browser tests."""

from __future__ import annotations

import re

SEARCH_LABEL = re.compile("Employer, payroll provider")

# Marks the results list before typing; htmx:afterSettle on the list (the swapped-in results, processed by
# htmx: their forms post with htmx) sets the mark again.
_ARM = """list => {
  list.setAttribute("data-test-settled", "no");
  if (list.dataset.testListening) return;
  list.dataset.testListening = "1";
  list.addEventListener("htmx:afterSettle", () => list.setAttribute("data-test-settled", "yes"));
}"""


def search_and_choose(frame, text: str, choice: str) -> None:
    """Type into Link's search and click a result from the answer to what was typed.

    Two races are waited out, both a test's speed and not a person's:
    - htmx attaches the search box's listener while settling the swapped-in screen; a `fill` that lands
      before that sends no request, so the test types again if no answer comes.
    - the list shown before the answer may hold the same name (the screen opens with suggestions); a click
      on it while the answer replaces the list lands on two different elements (mousedown on the old one,
      mouseup on the new) and does nothing. So the click waits for the answer to be swapped in and settled.
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    box = frame.get_by_label(SEARCH_LABEL)
    results = frame.locator("#search-results")
    settled = frame.locator('#search-results[data-test-settled="yes"]')
    for attempt in range(3):
        box.fill("")
        results.evaluate(_ARM)
        box.fill(text)
        try:
            # Typing again after 3 s is only a nudge; the last try waits the backstop (a slow answer is no failure).
            settled.wait_for(state="attached", timeout=3_000 if attempt < 2 else None)
            break
        except PlaywrightTimeout:
            if attempt == 2:
                raise
    frame.locator("button.choice", has_text=choice).first.click()
