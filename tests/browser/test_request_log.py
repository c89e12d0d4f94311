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
