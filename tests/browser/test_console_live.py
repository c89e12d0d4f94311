"""Live pages and the workspace clock in the browser: a retry the real in-process worker runs appears on the
open timeline without a reload, its countdown counts down, and the clock page's next-item and jump work."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from tests.browser.test_console_walkthrough import timeline_outcomes
from tests.browser.waits import poll


def seconds_left(page) -> int:
    text = page.locator("#timeline-body .countdown").inner_text(timeout=2_000)
    found = re.search(r"in (?:(\d+) min )?(\d+) s", text)
    assert found, text
    return int(found.group(1) or 0) * 60 + int(found.group(2))


def test_a_retry_run_by_the_worker_appears_without_a_reload(page, console_live):
    page.goto(console_live.url + "/scenarios")
    page.get_by_role("button", name="Run user_pending_success headless").click()
    assert timeline_outcomes(page) == ["pending"]
    page.evaluate("window.__notReloaded = true")
    # The retry is due 60 s after the first attempt: move the clock 48 s so the worker runs it ~12 s from now.
    page.get_by_label("Advance by").fill("48")
    page.locator("#tl-unit").select_option("seconds")
    page.get_by_role("button", name="Advance", exact=True).click()
    page.locator("#timeline .fired", has_text="Clock advanced.").wait_for()
    first = seconds_left(page)
    # At most 12 s (the system's own bound); at least 3 unless the advance took over 9 s to come back.
    assert 3 <= first <= 12, first
    # It counts down (console.js ticks it every second, between the timeline's polls) until the retry runs.
    poll(lambda: seconds_left(page), lambda left: left <= first - 2, what=f"the countdown from {first} s")
    # The worker fires the retry in real time; the timeline's poll draws it.
    page.locator("#timeline-body .transition", has_text="retry succeeded").wait_for()
    assert timeline_outcomes(page) == ["pending", "success"]
    assert page.locator("#timeline-body .countdown").count() == 0
    assert page.evaluate("window.__notReloaded") is True
    # The event row's delivery badge on the event log goes live too: the inbox delivery lands.
    page.goto(console_live.url + "/events")
    page.locator(".event-row .badge-delivery-delivered").first.wait_for()


def test_the_clock_page_jumps_and_goes_to_the_next_item(page, console_live):
    page.goto(console_live.url + "/scenarios")
    page.get_by_role("button", name="Run user_pending_success headless").click()
    assert timeline_outcomes(page) == ["pending"]
    page.goto(console_live.url + "/clock")
    scheduled = page.locator("#clock-scheduled")
    scheduled.get_by_text(re.compile(r"retries the switch \(attempt 1\): pending → success")).wait_for()
    assert "ahead of real time" not in page.locator("#clock-bar").inner_text()

    page.get_by_role("button", name="To the next scheduled item").click()
    fired = page.locator("#clock .fired")
    fired.locator(
        "ol li", has_text=re.compile(r"retried the switch \(attempt 1\): pending → success")
    ).wait_for()
    assert "1 scheduled task ran" in fired.inner_text()
    assert "ahead of real time" in page.locator("#clock-bar").inner_text()  # the header followed
    # On a phone the header says it in short, whole: "(+1 min ahead)", not cut to "(+1 min ahe…".
    page.set_viewport_size({"width": 390, "height": 844})
    bar = page.locator("#clock-bar")
    assert re.search(r"\(\+[^)]* ahead\)$", bar.inner_text().strip()), bar.inner_text()
    assert bar.evaluate("el => el.scrollWidth <= el.clientWidth"), bar.inner_text()
    page.set_viewport_size({"width": 1280, "height": 720})

    now = datetime.fromisoformat(page.locator("#clock time[data-clock-now]").get_attribute("data-clock-now"))
    page.get_by_label("Jump to (UTC, workspace clock)").fill(
        (now - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M")
    )
    page.get_by_role("button", name="Jump").click()
    page.locator("#clk-to-error", has_text="must be later than the workspace clock").wait_for()
    assert page.locator("#clk-to").get_attribute("aria-invalid") == "true"

    page.get_by_label("Jump to (UTC, workspace clock)").fill(
        (now + timedelta(days=3)).strftime("%Y-%m-%dT%H:%M")
    )
    page.get_by_role("button", name="Jump").click()
    page.locator("#clock .fired", has_text="Clock advanced.").wait_for()
    assert (
        "+3 d" in page.locator("#clock-bar").inner_text() or "+2 d" in page.locator("#clock-bar").inner_text()
    )
    # The used token's expiry fired on the way, said as what it was.
    assert "expired; its flow had already ended (success)" in page.locator("#clock .fired").inner_text()


SET_VISIBILITY = """state => {
  Object.defineProperty(document, "visibilityState", {configurable: true, get: () => state});
  document.dispatchEvent(new Event("visibilitychange"));
}"""

# Counts what becomes of each htmx request the scheduled list's poll starts: sent, or held back by
# console.js while the tab is hidden (its own listener, registered first, cancels it), and what started the
# first request sent after a count (the "every 2s" timer, or the "live-refresh" a tab shown again fires).
COUNT_POLLS = """() => {
  window.__polls = {sent: 0, held: 0, firstTrigger: null};
  document.addEventListener("htmx:beforeRequest", e => {
    if (!e.detail.elt.closest("#clock-scheduled") || !e.detail.elt.hasAttribute("data-poll")) return;
    if (e.defaultPrevented) { window.__polls.held += 1; return; }
    window.__polls.sent += 1;
    if (window.__polls.firstTrigger === null) {
      const trigger = e.detail.requestConfig && e.detail.requestConfig.triggeringEvent;
      window.__polls.firstTrigger = trigger ? trigger.type : "every";
    }
  });
}"""
RESET_POLLS = "() => { window.__polls = {sent: 0, held: 0, firstTrigger: null}; }"


def test_polling_pauses_while_the_tab_is_hidden(page, live_server):
    polls: list[str] = []
    page.on("request", lambda r: polls.append(r.url) if "/clock/scheduled" in r.url else None)
    page.goto(live_server.url + "/clock")
    page.evaluate(COUNT_POLLS)
    with page.expect_request(lambda r: "/clock/scheduled" in r.url):
        pass  # the scheduled list polls while visible (every 2 s)
    page.evaluate(SET_VISIBILITY, "hidden")
    page.evaluate(RESET_POLLS)
    polls.clear()
    # Two of the list's 2-second ticks come and are held back: nothing is asked while hidden.
    counts = poll(lambda: page.evaluate("window.__polls"), lambda c: c["held"] >= 2, what="two held polls")
    assert counts["sent"] == 0, counts
    assert polls == []
    # Shown again: it catches up at once (the "live-refresh" that visibilitychange fires), not at its next tick.
    with page.expect_request(lambda r: "/clock/scheduled" in r.url):
        page.evaluate(SET_VISIBILITY, "visible")
    assert page.evaluate("window.__polls.firstTrigger") == "live-refresh"
