"""The console's safety and liveness in a real browser: isolation, CSRF, and the live event log."""

from __future__ import annotations

import pytest

from tests.browser.test_console_walkthrough import create_token, start, with_worker

EVIL = "http://localhost:8766"


@pytest.fixture
def console_live(live_server):
    yield from with_worker(live_server)


def test_two_browser_contexts_get_isolated_workspaces(browser, console_live):
    alice = browser.new_context().new_page()
    bob = browser.new_context().new_page()
    try:
        start(alice, console_live)
        start(bob, console_live)
        alice_token = create_token(alice, "Standard switch")
        bob_token = create_token(bob, "Direct platform routing")
        alice_ws = alice.locator(".workspace-bar code").inner_text()
        bob_ws = bob.locator(".workspace-bar code").inner_text()
        assert alice_ws != bob_ws

        seen_by_bob = ""
        for path in ("/", "/timeline", "/requests", "/events", "/keys", "/webhooks"):
            bob.goto(console_live.url + path)
            seen_by_bob += bob.content()
        assert bob_token in seen_by_bob and alice_token not in seen_by_bob
        response = bob.goto(f"{console_live.url}/timeline/link-tokens/{alice_token}")
        assert response.status == 404
        # Alice still sees her own token, and only hers.
        alice.goto(console_live.url + "/timeline")
        assert alice_token in alice.content() and bob_token not in alice.content()
    finally:
        alice.context.close()
        bob.context.close()


def test_a_cross_site_post_is_refused(page, console_live):
    start(page, console_live)
    page.goto(console_live.url + "/keys")
    keys_before = page.locator("#keys tbody tr").count()
    # Another site's page that posts a form at the console, as a forgery would.
    forgery = f"""<!doctype html><html><body>
      <form id="f" method="post" action="{console_live.url}/keys"><input name="mode" value="production"></form>
      <script>document.getElementById("f").submit()</script></body></html>"""
    page.route(f"{EVIL}/**", lambda route: route.fulfill(status=200, content_type="text/html", body=forgery))
    with page.expect_response(f"{console_live.url}/keys") as answer:
        page.goto(f"{EVIL}/attack.html")
    assert answer.value.status == 400
    page.get_by_text("Request refused").wait_for()
    page.goto(console_live.url + "/keys")
    assert page.locator("#keys tbody tr").count() == keys_before


def test_the_event_log_updates_live(context, console_live):
    log = context.new_page()
    log.goto(console_live.url + "/events")
    log.get_by_text("No events yet.").wait_for()
    log.evaluate("window.__sameDocument = true")  # gone if the page reloads

    other = context.new_page()  # same browser session, so the same workspace
    other.goto(console_live.url + "/scenarios")
    other.get_by_role("button", name="Run user_good headless").click()
    other.locator("#timeline").wait_for()

    # account.added, employment.added and the switch event, within 2 seconds, without a reload.
    rows = log.locator("#event-list .event-row")
    log.wait_for_function("document.querySelectorAll('#event-list .event-row').length >= 3", timeout=2_500)
    assert log.evaluate("window.__sameDocument") is True
    assert rows.first.locator(".event-type").inner_text() == "direct_deposit_switch.added"
    assert not log.get_by_text("No events yet.").is_visible()
    # Rows expand to their deliveries; the worker delivers to the inbox.
    rows.first.locator("summary").click()
    rows.first.locator(".delivery").wait_for()
    log.reload()
    log.locator("#event-list .badge-delivery-delivered").first.wait_for(timeout=10_000)
