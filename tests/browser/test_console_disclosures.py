"""The disclosures inside an open row of the event log and the request log look like disclosures.

The rows' own summaries are laid out as a flex line or a grid (which drops the browser's ▸ marker, on purpose:
the whole row is the control). That layout once reached every summary inside the open row too, so "curl",
"Python (requests)" and "Delivery headers and body" showed as plain bold text with nothing saying they open.
"""

from __future__ import annotations

DISPLAY = "e => getComputedStyle(e).display"


def test_nested_summaries_keep_their_marker_in_the_event_and_request_logs(page, console_live):
    page.goto(console_live.url + "/scenarios")
    page.get_by_role("button", name="Run user_good headless").click()
    page.locator("#timeline").wait_for()

    page.goto(console_live.url + "/events")
    row = page.locator("#event-list .event-row").first
    row.locator("summary").first.click()
    nested = row.locator(".event-detail details > summary", has_text="Delivery headers and body").first
    nested.wait_for()
    assert row.locator("summary").first.evaluate(DISPLAY) == "flex"  # the row's own line, as laid out
    assert nested.evaluate(DISPLAY) == "list-item"

    page.goto(console_live.url + "/requests")
    row = page.locator(".request-row").first
    row.locator("summary").first.click()
    curl = row.locator(".request-detail details > summary", has_text="curl").first
    curl.wait_for()
    assert row.locator("summary").first.evaluate(DISPLAY) == "grid"
    assert curl.evaluate(DISPLAY) == "list-item"
