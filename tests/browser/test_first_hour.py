"""The first hour in a real browser: the README's curl seen in the console, the header at 1280 and 390 px,
and the event log's empty polls without console errors."""

from __future__ import annotations

import contextlib
import re
import subprocess
from pathlib import Path

import pytest

from console.bootstrap import demo_sandbox_secret

README = Path(__file__).resolve().parents[2] / "README.md"
SHOTS = Path(__file__).resolve().parents[2] / ".pytest_cache" / "first-hour"


def readme_first_curl() -> str:
    """The README's first shell block under "A first API call", as a reader copies it."""
    text = README.read_text()
    section = text.split("## A first API call", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    assert "curl" in block and "$SECRET" in block
    # The `export` line holds a placeholder secret: the reader puts theirs there; the test sets it itself.
    return "\n".join(line for line in block.splitlines() if not line.startswith("export "))


def shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"))


def test_the_readme_curl_shows_in_the_browser_after_opening_its_workspace(page, live_server):
    with live_server.app.app_context():
        secret = demo_sandbox_secret()  # what `make run`'s banner prints
    ran = subprocess.run(
        ["bash", "-c", readme_first_curl()],
        env={"SECRET": secret, "BASE": live_server.url + "/sandbox", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode == 0, ran.stderr
    token_id = re.search(r'"id":\s*"([0-9a-f-]{36})"', ran.stdout).group(1)

    page.goto(live_server.url + "/requests")
    page.get_by_text("No API call yet").wait_for()
    page.get_by_text("Open its workspace here").click()
    page.get_by_label("API secret").fill(secret)
    page.get_by_role("button", name="Open its workspace").click()
    page.get_by_text(f"ending in {secret[-4:]}").wait_for()
    assert secret not in page.url and secret not in page.content()

    # The request log's writer stores the call within about a second; the page polls for new rows.
    page.locator(".request-row", has_text="/sandbox/v1/link_tokens").first.wait_for()
    shot(page, "requests-after-open")
    page.goto(live_server.url + "/timeline")
    page.locator(f"a[href*='{token_id}']").first.wait_for()
    errors = [m for m in page.console_messages if m.startswith(("error", "pageerror"))]
    assert errors == []


def _open_demo_workspace(page, live_server, secret: str) -> None:
    page.goto(live_server.url + "/requests")
    page.get_by_text("Open its workspace here").first.click()
    page.get_by_label("API secret").fill(secret)
    page.get_by_role("button", name="Open its workspace").click()
    page.get_by_text(f"ending in {secret[-4:]}").wait_for()


def _advance(live_server, secret: str, days: int) -> None:
    import requests

    response = requests.post(
        live_server.api_url("sandbox", "/sandbox/clock/advance"),
        json={"days": days},
        headers={"x-api-secret": secret, "Service-Version": "2023-11-22"},
        timeout=30,
    )
    assert response.status_code == 200, response.text


def _rows_of(page, selector: str) -> int:
    """How many text lines high the element is, in lines of its own font."""
    return page.eval_on_selector(
        selector,
        "el => Math.round(el.getBoundingClientRect().height / parseFloat(getComputedStyle(el).lineHeight || 20))",
    )


def test_the_header_is_one_row_at_1280_with_the_clock_ahead_and_a_named_workspace(browser, live_server):
    with live_server.app.app_context():
        secret = demo_sandbox_secret()
    _advance(live_server, secret, 3)
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    try:
        page = context.new_page()
        _open_demo_workspace(page, live_server, secret)
        bar = page.locator("#clock-bar")
        assert "ahead of real time" in bar.inner_text()
        boxes = [
            page.locator(sel).bounding_box()
            for sel in (".brand", "#clock-bar", ".workspace-bar", ".workspace-bar button")
        ]
        tops = {round(b["y"] + b["height"] / 2) for b in boxes}
        assert max(tops) - min(tops) <= 4, boxes  # every part of the header on one line
        header = page.locator(".topbar").bounding_box()
        assert header["height"] <= 56, header
        assert "Demo workspace" in page.locator(".workspace-bar").inner_text()
        shot(page, "header-1280")
    finally:
        context.close()


# Elements of the header that cut their text ("…"): their text is wider than their box.
HEADER_CUTS = """() => [...document.querySelectorAll(".topbar *")]
  .filter(e => e.offsetParent && getComputedStyle(e).overflowX === "hidden" && e.scrollWidth > e.clientWidth + 1)
  .map(e => e.textContent.trim().replace(/\\s+/g, " "))"""


def test_the_header_cuts_nothing_at_laptop_and_projector_widths_with_the_clock_ahead(page, live_server):
    # At 1440 px "developer console" beside the clock cut it to "(+1 h ahead of real ti…" and the id to
    # "Workspace 33aaf…"; from 1600 px the real time in brackets did the same (the docs' screenshots showed both).
    page.goto(live_server.url + "/clock")
    page.get_by_role("button", name="+1 hour").click()
    page.locator("#clock-bar", has_text="ahead").wait_for()
    for width in (1024, 1280, 1366, 1440, 1600, 1920):
        page.set_viewport_size({"width": width, "height": 800})
        page.reload()
        assert "ahead" in page.locator("#clock-bar").inner_text()
        assert page.evaluate(HEADER_CUTS) == [], f"the header cuts text at {width} px"


@contextlib.contextmanager
def _demo_workspace_on_a_phone(browser, live_server):
    """A 390-px page holding the demo workspace (as if its secret were pasted into *Open its workspace*)."""
    with live_server.app.app_context():
        secret = demo_sandbox_secret()
    context = browser.new_context(viewport={"width": 390, "height": 844})
    try:
        page = context.new_page()
        _open_demo_workspace(page, live_server, secret)
        yield page
    finally:
        context.close()


def test_the_header_and_navigation_are_compact_at_390(browser, live_server):
    with _demo_workspace_on_a_phone(browser, live_server) as page:
        nav = page.locator(".sidenav").bounding_box()
        chrome = nav["y"] + nav["height"]
        assert chrome <= 150 and nav["height"] <= 50, f"header and navigation take {chrome} of 844 px ({nav})"
        # Every section stays reachable: the row scrolls sideways in its own box, the page does not.
        page.get_by_role("link", name="Training").scroll_into_view_if_needed()
        assert page.get_by_role("link", name="Training").is_visible()
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        page.evaluate("window.scrollTo(0, 0)")
        shot(page, "header-390")


def test_the_keys_page_at_390_shows_each_key_whole_with_its_actions_in_view(browser, live_server):
    """One card a key: the table scrolled sideways in its box, with State, Roll and Revoke out of view."""
    with _demo_workspace_on_a_phone(browser, live_server) as page:
        page.goto(live_server.url + "/keys")
        row = page.locator("table.keys-table tbody tr").first
        for part in (row.locator("td[data-label=State]"), row.get_by_role("button", name="Revoke")):
            box = part.bounding_box()
            assert box["x"] >= 0 and box["x"] + box["width"] <= 390, box
        secret_box = row.locator("td[data-label=Secret] code").first.bounding_box()
        assert secret_box["height"] < 30, secret_box  # one line: not broken mid-token
        assert page.evaluate("document.documentElement.scrollWidth") <= 390


@pytest.mark.parametrize("query", ["", "?type=direct_deposit_switch.added&end_user_id=nobody"])
def test_the_empty_event_log_polls_without_console_errors(page, live_server, query):
    page.goto(live_server.url + "/events" + query)
    page.get_by_text("No events").first.wait_for()
    for _ in range(2):  # two polls of the live list, each answered
        with page.expect_response(lambda r: "/events/rows" in r.url and r.status in (200, 204)):
            pass
    errors = [m for m in page.console_messages if m.startswith(("error", "pageerror"))]
    assert errors == []


def test_request_rows_keep_one_height_and_the_webhook_url_stays_readable(browser, live_server):
    with live_server.app.app_context():
        secret = demo_sandbox_secret()
    for width, height in ((1280, 720), (390, 844)):
        context = browser.new_context(viewport={"width": width, "height": height})
        try:
            page = context.new_page()
            _open_demo_workspace(page, live_server, secret)
            page.goto(live_server.url + "/webhooks")
            register = page.get_by_role("button", name="Register the built-in inbox")
            if register.count():  # once per workspace: the second width finds it registered
                register.click()
            url = page.locator("td.webhook-url code").first
            url.wait_for()
            box = url.bounding_box()
            assert box["width"] >= 200, box  # not one character a line
            version_lines = page.eval_on_selector(".webhook-version", "el => el.getClientRects().length")
            assert version_lines == 1, "the version date wraps onto two lines"
            shot(page, f"webhooks-{width}")
            page.goto(live_server.url + "/requests")
            rows = page.locator(".request-row summary")
            rows.first.wait_for()
            heights = {round(b["height"]) for b in (rows.nth(i).bounding_box() for i in range(rows.count()))}
            assert len(heights) == 1, heights
            shot(page, f"requests-{width}")
        finally:
            context.close()


def test_event_rows_at_390_put_the_time_on_its_own_line_so_event_names_line_up(browser, live_server):
    """At phone width a short event name sat beside the time and a long one under it: rows of two shapes."""
    import requests

    with live_server.app.app_context():
        secret = demo_sandbox_secret()
    headers = {"x-api-secret": secret, "Service-Version": "2023-11-22"}
    token = requests.post(
        live_server.api_url("sandbox", "/link_tokens"),
        json={"org_name": "Acme", "end_user_id": "user-1", "required_jobs": ["direct_deposit_switch"],
              "allocation": {"targets": [{"type": "checking", "routing_number": "011000015",
                                          "account_number": "1234567890"}]}},
        headers=headers, timeout=30,
    ).json()["data"]  # fmt: skip
    done = requests.post(
        live_server.api_url("sandbox", f"/sandbox/link_tokens/{token['id']}/complete"),
        json={"platform_id": "8e8483e0-5235-5127-93ca-2efa4d35d6dc",
              "credentials": {"username": "user_good", "password": "pass_good"}},
        headers=headers, timeout=30,
    )  # fmt: skip
    assert done.status_code == 200, done.text
    context = browser.new_context(viewport={"width": 390, "height": 844})
    try:
        page = context.new_page()
        _open_demo_workspace(page, live_server, secret)
        page.goto(live_server.url + "/events")
        rows = page.locator(".event-row summary")
        rows.nth(3).wait_for()  # account, employment, income and the switch
        for i in range(rows.count()):
            when = rows.nth(i).locator("time").bounding_box()
            name = rows.nth(i).locator(".event-type").bounding_box()
            assert name["y"] >= when["y"] + when["height"] - 1, (i, rows.nth(i).inner_text())
        shot(page, "events-390")
    finally:
        context.close()


def test_a_button_shows_it_is_busy_while_its_request_is_in_flight(page, live_server):
    from playwright.sync_api import expect

    held = []
    page.route("**/clock/advance", lambda route: held.append(route))
    page.goto(live_server.url + "/clock")
    button = page.get_by_role("button", name="+1 hour")
    button.click()
    expect(button).to_have_attribute("aria-busy", "true")  # while the answer is held back
    spinner = page.evaluate(
        "b => getComputedStyle(b, '::after').animationName",
        button.element_handle(),
    )
    assert spinner == "busy-spin"
    held[0].continue_()
    page.get_by_text("Clock advanced.").wait_for()
    expect(page.get_by_role("button", name="+1 hour")).not_to_have_attribute("aria-busy", "true")


def _line_boxes(page, selector: str) -> int:
    """How many lines the element's own text (its first text node) is laid out on."""
    return page.eval_on_selector(
        selector,
        """el => { const r = document.createRange(); r.selectNodeContents(el.firstChild);
                   return new Set([...r.getClientRects()].map(b => Math.round(b.top))).size; }""",
    )


def test_the_webhooks_actions_and_the_request_filters_keep_one_row_at_1280(browser, live_server):
    """At 1280x720 "Run conformance check" wrapped onto three lines in the webhooks table, and the request
    log's filter bar onto two rows once the workspace had a key."""
    with live_server.app.app_context():
        secret = demo_sandbox_secret()
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    try:
        page = context.new_page()
        _open_demo_workspace(page, live_server, secret)
        page.goto(live_server.url + "/webhooks")
        register = page.get_by_role("button", name="Register the built-in inbox")
        if register.count():
            register.click()
        button = page.locator("td.row-actions button").first
        button.wait_for()
        shot(page, "webhooks-actions-1280")
        assert _line_boxes(page, "td.row-actions button") == 1, button.bounding_box()
        # ... and the table, its buttons on one line, still inside its card (no sideways overflow).
        table, card = page.locator("#webhooks table").bounding_box(), page.locator("#webhooks").bounding_box()
        assert table["x"] + table["width"] <= card["x"] + card["width"] + 1, (table, card)
        page.goto(live_server.url + "/requests")
        form = page.locator("form.filters")
        form.wait_for()
        assert page.locator("#f-key option").count() > 1  # the workspace has a key: the select is in the row
        middles = page.eval_on_selector_all(
            "form.filters > *:not([type=hidden])",
            "els => els.filter(e => e.getClientRects().length)"
            ".map(e => { const b = e.getBoundingClientRect(); return Math.round(b.top + b.height / 2); })",
        )
        shot(page, "requests-filters-1280")
        assert max(middles) - min(middles) <= 6, middles  # one row
    finally:
        context.close()
