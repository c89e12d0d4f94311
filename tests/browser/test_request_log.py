"""The request log in a real browser: a call made with `requests` from outside the console shows up."""

from __future__ import annotations

import re

import requests

from tests.browser.test_console_walkthrough import start
from tests.factories import LINK_TOKEN, TARGET


def test_a_call_from_outside_the_console_appears_in_the_request_log(page, live_server):
    start(page, live_server)
    page.get_by_role("button", name="Create my workspace").click()
    page.goto(live_server.url + "/keys")
    sandbox = page.locator("section", has=page.get_by_role("heading", name="Sandbox", exact=True))
    sandbox.get_by_role("button", name="Reveal").first.click()
    secret = sandbox.locator("code", has_text=re.compile(r"^sk_sandbox_[A-Za-z0-9_-]{20,}$")).inner_text()

    # The developer's own backend: plain HTTP to the live server, nothing to do with the console.
    response = requests.post(
        live_server.api_url("sandbox", "/link_tokens"),
        json={**LINK_TOKEN, "end_user_id": "backend-user"},
        headers={"x-api-secret": secret, "Service-Version": "2023-11-22", "User-Agent": "my-backend/2.0"},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    request_id = response.headers["x-service-request-id"]

    # Written by the background writer within about a second: the open log shows it without a reload (its
    # live poll), and so does the page loaded again.
    page.goto(live_server.url + "/requests")
    row = page.locator(".request-row", has_text=request_id)
    row.wait_for()
    page.reload()
    assert row.count() == 1
    summary = row.locator("summary").inner_text()
    assert (
        "POST" in summary and "/sandbox/v1/link_tokens" in summary and "200" in summary and "API" in summary
    )

    row.locator("summary").click()
    detail = row.locator(".request-detail")
    detail.get_by_text("my-backend/2.0").first.wait_for()
    text = detail.inner_text()
    assert (
        secret not in text
        and TARGET["account_number"] not in text
        and "••••" + TARGET["account_number"][-4:] in text
    )

    # The request id filter finds it, and only it.
    page.get_by_label("Request id").fill(request_id)
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url(re.compile(r"request_id="))
    assert page.locator(".request-row").count() == 1


def test_each_filter_label_stays_beside_its_field_on_a_phone(page, live_server):
    """At 390 px the filters wrap; a label must wrap with its field, not end one line while its field starts the
    next (as "Path contains" and "Key" did)."""
    page.set_viewport_size({"width": 390, "height": 844})
    start(page, live_server)
    page.get_by_role("button", name="Create my workspace").click()
    page.goto(live_server.url + "/requests")
    for name in ("Status", "Path contains", "Key", "Request id"):
        label = page.locator("form.request-filters label", has_text=name).bounding_box()
        field = page.get_by_label(name, exact=True).bounding_box()
        middle = label["y"] + label["height"] / 2
        assert field["y"] <= middle <= field["y"] + field["height"], f"{name!r}: label and field on two lines"
        assert label["x"] < field["x"], name
    assert page.evaluate("document.scrollingElement.scrollWidth <= document.scrollingElement.clientWidth")


# The request row's cells that end in "…" when they do not fit (their title has it all).
ROW_CUTS = """summary => [...summary.children]
  .filter(c => getComputedStyle(c).display !== "none" && c.scrollWidth > c.clientWidth + 1)
  .map(c => c.className.replace("muted", "").trim())"""


def test_each_request_row_reads_whole_on_a_laptop_after_the_clock_moved(page, live_server):
    # With the clock moved, at 1440 px a row read "Sun 29 Nov 2026 04:33:13 (real ti…", "clock Sun 29 Nov 2026 …",
    # "console · scena…", its request id pushed to a second line under the time; at 1920 px the path was 6rem
    # ("/sandb…"). Now both times share a first line and the call its second, in the same columns on every row.
    start(page, live_server)
    page.get_by_role("button", name="Create my workspace").click()
    page.goto(live_server.url + "/clock")
    page.get_by_role("button", name="+1 hour").click()
    page.locator("#clock-bar", has_text="ahead").wait_for()
    for width in (1024, 1280, 1440, 1920):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(live_server.url + "/requests")
        rows = page.locator(".request-row > details > summary")
        rows.first.wait_for()
        for index in range(rows.count()):
            row = rows.nth(index)
            cut = [c for c in row.evaluate(ROW_CUTS) if c not in ("rq-path", "rq-id")]
            assert cut == [], f"row {index} at {width} px cuts {cut}: {row.inner_text()}"
            middles = {}
            for name in ("time", "method", "path", "status", "ms", "source"):
                box = row.locator(f".rq-{name}").bounding_box()
                middles[name] = box["y"] + box["height"] / 2
            call = [middles[name] for name in ("method", "path", "status", "ms", "source")]
            assert middles["time"] < min(call) and max(call) - min(call) <= 3, middles
        paths = page.locator(".rq-path", has_text="/sandbox/v1/webhooks")
        assert paths.evaluate("c => c.scrollWidth <= c.clientWidth"), f"the path is cut at {width} px"
        moved = page.locator(".request-row", has_text="/sandbox/clock/advance").locator(".rq-clock")
        assert moved.inner_text().startswith("clock ") and moved.is_visible()
