"""Driving Link's screens from browser tests."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator

from tests.browser.waits import poll

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


# Link's own step endpoint, in any mode (/sandbox/link/step, /development/link/step, ...).
LINK_STEP = re.compile(r"/link/step$")


@contextlib.contextmanager
def matching_held(page) -> Iterator[Callable[[], None]]:
    """Link's platform matching stays on its loading screen ("Finding your payroll account") until the test
    calls the function this yields: the screen's own `matching_done` step (sent by htmx after its
    LINK_MATCHING_DELAY_MS) is held back at the network, so a test can look at the loading state for as long
    as it needs on any machine, instead of racing a delay. Other Link steps pass untouched.
    """
    held: list = []

    def hold(route) -> None:
        if route.request.method == "POST" and "matching_done" in (route.request.post_data or ""):
            held.append(route)
        else:
            route.fallback()

    def let_go() -> None:
        # (Playwright hands the route to `hold` on the page's next call: `evaluate` is one.)
        poll(lambda: page.evaluate("true") and held, what="Link's matching_done step")
        held.pop(0).continue_()

    page.route(LINK_STEP, hold)
    try:
        yield let_go
    finally:
        release(page, LINK_STEP, held, hold)


def release(page, url, held: list, handler=None) -> None:
    """Stop holding `url` (routing keeps the page's cache off; the rest of the test has it back) and let
    the held requests go on. One the page gave up on meanwhile (htmx replaced it by a newer one) is
    already over: there is nothing to let go."""
    from playwright.sync_api import Error as PlaywrightError

    page.unroute(url, handler)
    while held:
        try:
            held.pop(0).continue_()
        except PlaywrightError as error:
            if "already handled" not in str(error):
                raise
