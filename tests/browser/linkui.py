"""Driving Link's screens from browser tests."""

from __future__ import annotations

import re

SEARCH_LABEL = re.compile("Employer, payroll provider")


def search_and_choose(frame, text: str, choice: str) -> None:
    """Type into Link's search and click a result.

    htmx attaches the search box's listener while settling the swapped-in screen; a `fill` that lands
    before that sends no request. A person types later than that, so the test types again if no
    result shows up, instead of waiting for a request that will never come.
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    box = frame.get_by_label(SEARCH_LABEL)
    result = frame.locator("button.choice", has_text=choice).first
    for attempt in range(3):
        box.fill("")
        box.fill(text)
        try:
            result.wait_for(timeout=3_000)
            break
        except PlaywrightTimeout:
            if attempt == 2:
                raise
    result.click()
