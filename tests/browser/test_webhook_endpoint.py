"""The webhook endpoint page and the inbox's 500 mode in a real browser, with the worker running.

The inbox answers 500, the workspace clock makes the retries due, and the endpoint page replays what
failed once the inbox answers again.
"""

from __future__ import annotations

from tests.browser.waits import poll


def until(page, url: str, locator: str, count: int) -> None:
    """Load `url` again until `locator` matches at least `count` elements (the worker works meanwhile)."""

    def found() -> int:
        page.goto(url)
        return page.locator(locator).count()

    poll(found, lambda n: n >= count, interval=0.3, what=f"{count} of {locator} on {url}")


def register_inbox(page, live) -> str:
    """Register the built-in inbox on the Webhooks page; the URL of its endpoint page."""
    page.goto(live.url + "/webhooks")
    page.get_by_role("button", name="Register the built-in inbox").click()
    link = page.get_by_role("link", name="Endpoint page").first
    link.wait_for()
    href = link.get_attribute("href")
    page.goto(live.url + "/webhooks")  # the inbox's controls come with the workspace the click made
    return live.url + href


def set_inbox(page, description: str) -> None:
    page.get_by_label(description).check()
    page.locator("#inbox-behaviour").get_by_role("button", name="Save").click()


def advance_an_hour(page, live) -> None:
    page.goto(live.url + "/clock")
    with page.expect_response(lambda r: r.url.endswith("/clock/advance") and r.request.method == "POST"):
        page.get_by_role("button", name="+1 hour").click()


def test_inbox_500_mode_shows_failed_attempts_and_retries(page, console_live):
    endpoint = register_inbox(page, console_live)
    set_inbox(page, "Answer 500 (every delivery fails and is retried)")
    page.locator("#inbox-behaviour .callout-warn").wait_for()  # the inbox says it is failing on purpose

    page.goto(console_live.url + "/scenarios")
    page.get_by_role("button", name="Run user_good headless").click()
    page.locator("#timeline").wait_for()

    # Every event the run made (committed with it, so counted once and for all on the event log) arrives once
    # and is answered 500; the endpoint page shows the retries scheduled. Waiting for "at least 3" and counting
    # what had arrived then raced the last delivery (a rerun in CI: 3 counted, then 4 retries shown).
    page.goto(console_live.url + "/events")
    first = page.locator("#event-list .event-row").count()
    assert first >= 3
    until(page, console_live.url + "/webhooks", "#inbox-list .inbox-item", first)
    answered = page.locator("#inbox-list .inbox-item").evaluate_all(
        "items => items.map(i => [...i.querySelectorAll('.badge')].some(b => b.textContent === 'answered 500'))"
    )
    assert len(answered) == first and all(answered), answered
    until(page, endpoint, "#attempt-table tr.attempt-retry", first)
    assert page.locator("#attempt-table tr.attempt-delivered").count() == 0
    assert page.locator("#attempts .bar-retry").count() == first

    # The clock makes every retry due: each event arrives a second time, answered 500 again, and the
    # retry falls outside the 15-minute window, so the deliveries fail for good.
    advance_an_hour(page, console_live)
    until(page, console_live.url + "/webhooks", "#inbox-list .inbox-item", 2 * first)
    until(page, endpoint, "#attempt-table tr.attempt-failed", first)
    assert "0%" in page.locator("#attempts .rates").inner_text()


def test_replay_every_failed_delivery_since(page, console_live):
    endpoint = register_inbox(page, console_live)
    set_inbox(page, "Answer 500 (every delivery fails and is retried)")
    page.goto(endpoint)
    for _ in range(2):
        page.get_by_role("button", name="Send a test event").click()
        page.locator("#endpoint-call").wait_for()
    until(page, endpoint, "#attempt-table tr.attempt-retry", 2)
    advance_an_hour(page, console_live)
    until(page, endpoint, "#attempt-table tr.attempt-failed", 2)
    assert "2 deliveries to this webhook failed" in page.locator("#replay").inner_text()

    # The inbox answers again; replay everything that failed since long ago.
    page.goto(endpoint)
    set_inbox(page, "Answer 200 OK at once")
    page.locator("#inbox-behaviour .callout-warn").wait_for(state="detached")
    page.get_by_label("Replay every failed delivery of events since (workspace clock)").fill(
        "2000-01-01T00:00"
    )
    page.get_by_role("button", name="Replay").click()
    call = page.locator("#endpoint-call")
    call.wait_for()
    assert "/replay → 200" in call.inner_text() and '"replayed": 2' in call.inner_text()

    until(page, endpoint, "#attempt-table tr.attempt-delivered", 2)
    assert "0 deliveries to this webhook failed" in page.locator("#replay").inner_text()
    assert page.locator("#attempts .bar-delivered").count() == 2
