"""The console as a new user meets it: the walkthrough for each flow, through the real Link and SDK.

The whole app runs on a free 127.0.0.1 port with its worker in-process (`console_live`, one server for the
module, each test in a fresh browser context and so a workspace of its own), so the inbox receives real,
signed deliveries and the clock controls fire real scheduled work.
"""

from __future__ import annotations

import re

from tests.browser.linkui import search_and_choose

LINK_FRAME = "iframe[title^='Link']"


def start(page, live) -> None:
    page.goto(live.url + "/")
    page.get_by_role("heading", name="Integrate payroll connectivity in six steps").wait_for()


def checklist_done(page) -> list[str]:
    return page.locator("#checklist li.done").evaluate_all("items => items.map(i => i.dataset.step)")


def wait_until_done(page, step: str) -> None:
    page.locator(f'#checklist li.done[data-step="{step}"]').wait_for()


def create_token(page, preset: str) -> str:
    """Pick a preset, send the form, and return the new Link token id shown in step 4."""
    # Wait for the preset's own swap: the default preset is already marked selected, so waiting for the
    # mark alone lets the next click race the in-flight swap, which then detaches the form it posted from.
    with page.expect_response(lambda r: "/walkthrough/link-token-form" in r.url):
        page.get_by_role("link", name=preset, exact=True).click()
    page.locator("#step-link_token a.preset.selected", has_text=preset).wait_for()
    opener = page.locator("#step-link [data-link-open]")
    previous = opener.get_attribute("data-link-token-id") if opener.count() else None
    page.get_by_role("button", name="Create Link token").click()
    if previous:  # a second token: wait for step 4 to offer it, not the one already shown
        page.locator(f'#step-link [data-link-open]:not([data-link-token-id="{previous}"])').wait_for()
    exchange = page.locator("#step-link_token .exchange")
    exchange.wait_for()
    assert exchange.locator(".status").inner_text() == "200"
    assert re.search(r"x-service-request-id [0-9a-f-]{36}", exchange.inner_text())
    button = page.locator("#step-link [data-link-open]")
    return button.get_attribute("data-link-token-id")


def open_link(page):
    page.locator("#step-link").get_by_role("button", name="Open Link").click()
    frame = page.frame_locator(LINK_FRAME)
    frame.locator("#screen-title").wait_for()
    return frame


def login(frame, username: str = "user_good", password: str = "pass_good") -> None:
    frame.get_by_label(re.compile("Username|Employee ID|Work email")).fill(username)
    frame.get_by_label("Password").fill(password)
    frame.get_by_role("button", name="Log in").click()


def confirm_and_close(frame, page) -> None:
    frame.get_by_role("button", name="Continue").click()
    frame.get_by_role("button", name="Confirm").click()
    frame.get_by_role("button", name="Done").click()
    wait_link_closed(page)


def wait_link_closed(page) -> None:
    """Wait for the SDK to remove Link; if it does not, say which screen Link was left on (and its alert)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.locator(LINK_FRAME).wait_for(state="detached")
    except PlaywrightTimeout:
        screen = page.frame_locator(LINK_FRAME).locator("#link-screen")
        where = screen.evaluate("s => [s.dataset.screen, s.innerText.slice(0, 400)]", timeout=2_000)
        raise AssertionError(f"Link did not close; it shows {where!r}") from None


def client_events(page) -> list[str]:
    return page.locator("#step-link [data-client-events] li").evaluate_all(
        "items => items.map(i => i.dataset.name)"
    )


def timeline_outcomes(page) -> list[str]:
    """The outcomes on the timeline; waits for it first (reading all texts does not auto-wait)."""
    moves = page.locator("#timeline .transition:not(.next) .transition-move .badge:last-child")
    moves.first.wait_for()
    return moves.all_inner_texts()


def test_walkthrough_standard_switch(page, console_live):
    start(page, console_live)
    # Reading the page created nothing; the first action creates the workspace, its key and inbox webhook.
    assert checklist_done(page) == []
    assert "Create my workspace" in page.locator("#step-key").inner_text()
    link_token_id = create_token(page, "Standard switch")
    wait_until_done(page, "link_token")
    assert checklist_done(page) == ["key", "webhook", "link_token"]
    assert "••••" in page.locator("#step-key").inner_text()  # the secret is masked
    assert page.locator(".workspace-bar code").inner_text()  # the header shows the new workspace

    frame = open_link(page)
    frame.get_by_role("button", name="Continue").click()
    search_and_choose(frame, "Lumen", "Lumen Labs")
    login(frame)
    confirm_and_close(frame, page)
    events = client_events(page)
    for name in ("open", "login_attempt", "onLogin", "login", "onSuccess", "success", "onExit", "exit"):
        assert name in events
    assert events.index("login") < events.index("success") < events.index("exit")
    wait_until_done(page, "link")

    # The worker delivers the events to the inbox, which verifies their signatures.
    inbox = page.locator("#step-inbox")
    inbox.locator(".inbox-item", has_text="direct_deposit_switch.added").wait_for()
    assert inbox.locator(".badge-error").count() == 0
    assert "✓ signature verified" in inbox.inner_text()
    wait_until_done(page, "inbox")

    assert page.locator("#jobs-link-token-id").input_value() == link_token_id
    page.get_by_role("button", name="Query jobs").click()
    jobs = page.locator("#step-jobs")
    jobs.locator("table .badge", has_text="success").wait_for()
    assert f"/sandbox/v1/jobs?link_token_id={link_token_id}" in jobs.inner_text()
    wait_until_done(page, "jobs")
    assert checklist_done(page) == ["key", "webhook", "link_token", "link", "inbox", "jobs"]
    assert not [m for m in page.console_messages if m.startswith(("error", "pageerror"))]


def test_walkthrough_prime_with_several_matches(page, console_live):
    start(page, console_live)
    create_token(page, "Prime: several matches")
    frame = open_link(page)
    frame.get_by_role("button", name="Continue").click()
    frame.get_by_text("We found 3 payroll accounts").wait_for()
    frame.locator("button.choice", has_text="WorkNest").click()
    frame.get_by_label("Email").check()
    frame.get_by_role("button", name="Send code").click()
    frame.get_by_role("textbox", name="Verification code").fill("123456")
    frame.get_by_role("button", name="Verify").click()
    confirm_and_close(frame, page)
    assert "select_platform" in client_events(page)
    page.locator("#step-link").get_by_role("link", name="Timeline for this token").click()
    assert timeline_outcomes(page) == ["success"]
    assert "WorkNest" in page.locator("#timeline").inner_text()


def test_walkthrough_federal_benefits_sent_after_one_business_day(page, console_live):
    start(page, console_live)
    create_token(page, "Federal benefits")
    guide = page.locator("#step-link [data-link-guide]")
    assert (
        "SSN 900000001 (accepted: processing, then sent one business day later), 900000002"
        in guide.inner_text()
    )
    assert "user_good" not in guide.inner_text()
    frame = open_link(page)
    frame.get_by_role("button", name="Continue").click()  # the preset routes straight to the program
    frame.get_by_label("Legal first name").fill("Ada")
    frame.get_by_label("Legal last name").fill("Lovelace")
    frame.get_by_label("Social Security number").fill("900000001")
    frame.get_by_role("button", name="Continue").click()
    frame.get_by_role("button", name="Confirm").click()
    frame.get_by_text("was submitted").wait_for()
    frame.get_by_role("button", name="Done").click()
    page.locator("#step-link").get_by_role("link", name="Timeline for this token").click()
    assert timeline_outcomes(page) == ["processing"]
    assert "Agency review due" in page.locator("#timeline").inner_text()
    page.get_by_role("button", name="+1 business day").click()
    page.get_by_text("Clock advanced.").wait_for()
    assert timeline_outcomes(page) == ["processing", "sent"]
    assert "Agency review due" not in page.locator("#timeline").inner_text()


def test_walkthrough_on_demand_update(page, console_live):
    # A first connection, run headlessly from the gallery.
    page.goto(console_live.url + "/scenarios")
    page.get_by_role("button", name="Run user_good headless").click()
    assert timeline_outcomes(page) == ["success"]
    account_id = page.locator("#tl-accounts + ul a code").first.inner_text()

    start(page, console_live)
    create_token(page, "On-demand update")
    assert page.locator("#lt-account_id").input_value() == account_id
    frame = open_link(page)
    frame.get_by_role("button", name="Continue").click()
    frame.get_by_text("How much should go to").wait_for()  # straight to the account's platform, no login
    confirm_and_close(frame, page)
    events = client_events(page)
    assert "login_attempt" not in events and "success" in events

    page.goto(f"{console_live.url}/timeline/accounts/{account_id}")
    assert timeline_outcomes(page) == ["success", "success"]  # the first switch and the update


def test_step_4_offers_the_newest_token_after_a_reload_and_another_page(page, console_live):
    start(page, console_live)
    first = create_token(page, "Standard switch")
    newest = create_token(page, "Direct platform routing")
    assert newest != first

    def offered() -> str:
        return page.locator("#step-link [data-link-open]").get_attribute("data-link-token-id")

    assert offered() == newest
    page.reload()
    assert offered() == newest
    page.goto(console_live.url + "/events")
    page.goto(console_live.url + "/")
    assert offered() == newest
    assert "link_tokens" not in str(page.context.cookies())
