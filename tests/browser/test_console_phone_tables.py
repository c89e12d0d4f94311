"""Tables on a phone (390 px): the clock's "Scheduled next", the Keys page's usage and the World tables read as
cards instead of scrolling sideways or squeezing a column; at 1280 px they stay tables."""

from __future__ import annotations

import re

from tests.browser.waits import poll

PHONE = {"width": 390, "height": 844}
PROJECTOR = {"width": 1280, "height": 720}
WIDE = {"width": 1440, "height": 900}
TABLET = {"width": 700, "height": 900}  # above 600 px: still a table, its "In" column narrow

# Each element's number of line boxes: an inline element split over lines has one client rect a line.
LINES = "els => els.map(e => e.getClientRects().length)"
# How far a box scrolls sideways in itself, and how far the page does.
SIDEWAYS = "e => e.scrollWidth - e.clientWidth"
PAGE_SIDEWAYS = "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"


def _schedule_something(page, live_server) -> None:
    """A headless pending run: its retry and its Link token's expiry wait on the workspace clock."""
    page.goto(live_server.url + "/scenarios")
    page.get_by_role("button", name="Run user_pending_success headless").click()
    page.goto(live_server.url + "/clock")
    page.locator("#clock-scheduled").get_by_text(re.compile(r"retries the switch \(attempt 1\)")).wait_for()


def test_the_scheduled_countdown_keeps_one_line_on_a_phone(page, console_live):
    """At 390 px the "In" column got a fifth of the table and "in 59 min 52 s" took four lines. Now each item is a
    card: the countdown on one line, the description across the card's whole width, nothing scrolling sideways."""
    page.set_viewport_size(PHONE)
    _schedule_something(page, console_live)
    # The countdowns still to run ("in 57 s", "in 59 min 57 s"); one already due says "due now (the worker runs
    # it within a second)", a sentence that may wrap like any other.
    countdowns = page.locator("#clock-scheduled .countdown", has_text=re.compile(r"^in "))
    texts = countdowns.all_inner_texts()
    assert any("min" in t for t in texts), texts  # the Link token's expiry, about an hour away
    assert countdowns.evaluate_all(LINES) == [1] * len(texts), texts
    table = page.locator("#clock-scheduled table")
    assert table.evaluate(SIDEWAYS) <= 0
    assert page.evaluate(PAGE_SIDEWAYS) <= 0
    width = table.bounding_box()["width"]
    for box in [d.bounding_box() for d in page.locator("#clock-scheduled td.wrap").all()]:
        assert box["width"] >= 0.9 * width, (box, width)
    # On a projector it is still a table with its header, the three cells of a row side by side, each countdown
    # on one line there too (the "In" column broke "in 59 min 57 / s" at 1280 and 1440 px).
    for size in (TABLET, PROJECTOR, WIDE):
        page.set_viewport_size(size)
        assert countdowns.evaluate_all(LINES) == [1] * len(texts), (
            size,
            texts,
            page.locator("#clock-scheduled").inner_text(),
        )
    assert page.locator("#clock-scheduled thead").is_visible()
    row = page.locator("#clock-scheduled tbody tr").first
    tops = {round(c.bounding_box()["y"]) for c in row.locator("td").all()}
    assert len(tops) == 1, tops


def test_the_keys_usage_table_fits_a_phone_with_every_count_named(page, live_server):
    """At 390 px the usage table scrolled sideways in its box, "Requests" cut at its edge and 2xx…Billable out of
    view. Now each day and key is a card, each count after its name, all inside the screen."""
    page.set_viewport_size(PHONE)
    page.goto(live_server.url + "/scenarios")
    page.get_by_role("button", name="Run user_pending_success headless").click()  # counts API calls on a key
    usage = page.locator("#usage")

    def usage_rows() -> int:  # the request log's writer counts the calls a moment after they answer
        page.goto(live_server.url + "/keys")
        return usage.locator("tbody tr").count()

    poll(usage_rows, what="a row in the usage table", interval=0.3)
    assert usage.evaluate(SIDEWAYS) <= 0
    assert page.evaluate(PAGE_SIDEWAYS) <= 0
    right = usage.bounding_box()["x"] + usage.bounding_box()["width"]
    row = usage.locator("tbody tr").first
    for label in ("Key", "Mode", "Requests", "2xx", "4xx", "5xx", "Billable"):
        cell = row.locator(f'td[data-label="{label}"]')
        box = cell.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= right + 0.5, (label, box, right)
        # The name shows before the value (the header row is out of sight on a phone).
        before = cell.evaluate("e => getComputedStyle(e, '::before').content")
        assert before == f'"{label}: "', (label, before)
    page.set_viewport_size(PROJECTOR)
    assert usage.locator("thead").is_visible()
    assert usage.locator("tbody tr").first.locator('td[data-label="Requests"]').evaluate(
        "e => getComputedStyle(e, '::before').content"
    ) in ("none", "normal")


def test_the_world_tables_fit_a_phone(page, live_server):
    """The World tabs' tables scrolled sideways at 390 px, Jobs cut mid-word and Amounts and MFA out of view."""
    page.set_viewport_size(PHONE)
    for tab, label in (("platforms", "MFA"), ("employers", "Where"), ("people", "Email")):
        page.goto(f"{live_server.url}/world?tab={tab}")
        table = page.locator("#world-rows table")
        assert table.evaluate(SIDEWAYS) <= 0, tab
        assert page.evaluate(PAGE_SIDEWAYS) <= 0, tab
        right = table.bounding_box()["x"] + table.bounding_box()["width"]
        box = table.locator(f'tbody tr td[data-label="{label}"]').first.bounding_box()
        assert box["x"] + box["width"] <= right + 0.5, (tab, box, right)


def test_the_timeline_attempts_and_reference_tables_fit_a_phone(page, console_live):
    """The same at 390 px for the Link tokens on /timeline, an endpoint page's attempts (Latency and Outcome were
    past the edge) and the reference's parameter and body-field tables (the description squeezed beside them)."""
    page.set_viewport_size(PHONE)
    page.goto(console_live.url + "/scenarios")
    page.get_by_role("button", name="Run user_pending_success headless").click()
    page.goto(console_live.url + "/webhooks")
    endpoint = page.get_by_role("link", name="Endpoint page").first.get_attribute("href")
    attempts = page.locator("#attempt-table tbody tr")

    def attempt_rows() -> int:  # the worker delivers the run's events to the inbox meanwhile
        page.goto(console_live.url + endpoint)
        return attempts.count()

    poll(attempt_rows, what="an attempt on the inbox's endpoint page", interval=0.3)
    for path, table, label in (
        ("/timeline", "#timelines table", "Jobs"),
        (endpoint, "#attempt-table", "Outcome"),
        ("/reference", "table.body-fields", "Type"),
    ):
        if page.url != console_live.url + path:
            page.goto(console_live.url + path)
        box = page.locator(table).first
        assert box.evaluate(SIDEWAYS) <= 0, path
        assert page.evaluate(PAGE_SIDEWAYS) <= 0, path
        right = box.bounding_box()["x"] + box.bounding_box()["width"]
        cell = box.locator(f'tbody td[data-label="{label}"]').first.bounding_box()
        assert cell["x"] + cell["width"] <= right + 0.5, (path, cell, right)
