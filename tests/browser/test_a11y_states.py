"""States reached by interacting, by keyboard, at desktop and phone widths: a form refused with its errors
(focus on the error summary, never on <body>; axe-clean), and Link open over the walkthrough (axe-clean
behind its modal). tests/browser/test_accessibility.py scans pages as they first load."""

from __future__ import annotations

import pytest

from tests.browser.test_accessibility import DESKTOP, PHONE, axe_violations, open_from_step_4, resize
from tests.browser.waits import poll

expect = pytest.importorskip("playwright.sync_api").expect


@pytest.fixture
def scanned(page, console_live):
    from tests.browser.test_accessibility import AXE, AXE_PATH

    console_live.serve_test_file(AXE_PATH, AXE.read_bytes(), "text/javascript")
    return page


def scan_both_widths(page, base: str) -> list[str]:
    problems = []
    for size in (DESKTOP, PHONE):
        resize(page, size)
        problems += [f"{size['width']} px: {v}" for v in axe_violations(page, base)]
    resize(page, DESKTOP)
    return problems


@pytest.mark.parametrize("width", [DESKTOP, PHONE], ids=["1280", "390"])
def test_a_refused_webhook_form_puts_focus_on_its_errors(scanned, console_live, width):
    page = scanned
    page.set_viewport_size(width)
    page.goto(console_live.url + "/webhooks")
    own = page.locator("summary", has_text="Register your own URL")
    own.focus()
    page.keyboard.press("Enter")  # opens the <details>
    page.locator("#wh2-url").focus()
    page.keyboard.type("http://example.com/hooks")  # plain http outside loopback: the API refuses it
    page.keyboard.press("Enter")
    errors = page.locator("#wh2-errors")
    expect(errors).to_be_focused()
    expect(errors).to_have_attribute("role", "alert")
    expect(page.locator("#wh2-url")).to_have_attribute("aria-invalid", "true")
    assert not scan_both_widths(page, console_live.url)


def test_walkthrough_webhook_errors_take_the_focus(page, console_live):
    from tests.browser.test_console_walkthrough import start

    start(page, console_live)
    page.locator("#step-webhook summary").focus()
    page.keyboard.press("Enter")
    page.locator("#wh-url").focus()
    page.keyboard.type("http://example.com/hooks")
    page.keyboard.press("Enter")
    expect(page.locator("#webhook-errors")).to_be_focused()


def test_a_table_that_scrolls_on_a_phone_takes_the_keyboard(scanned, console_live):
    """At 390 px the training grid scrolls sideways in its own box: focusable, so arrows scroll it; at 1280 px it
    fits and is no extra tab stop. The keys' usage table, one card a row on a phone, fits and never is one."""
    from tests.browser.classroom import join, open_new_class

    page = scanned
    page.goto(console_live.url + "/scenarios")  # a workspace whose key has made calls: usage rows
    page.get_by_role("button", name="Run user_good headless").click()
    page.locator("#timeline").wait_for()
    usage = page.locator("#usage")

    def usage_shown() -> int:  # the request log's writer records the calls a moment after they are made
        page.goto(console_live.url + "/keys")
        return usage.count()

    poll(usage_shown, what="the keys' usage table")
    resize(page, PHONE)
    assert usage.evaluate("t => t.scrollWidth <= t.clientWidth")
    expect(usage).not_to_have_attribute("tabindex", "0")
    assert not axe_violations(page, console_live.url)

    resize(page, DESKTOP)
    join(open_new_class(page, console_live.url, "Keyboard class"), "Ada Lovelace")
    grid = page.locator("table.room-grid")
    page.locator('tr[data-trainee="Ada Lovelace"]').wait_for()
    expect(grid).not_to_have_attribute("tabindex", "0")
    resize(page, PHONE)
    expect(grid).to_have_attribute("tabindex", "0")
    grid.focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_function("() => document.querySelector('table.room-grid').scrollLeft > 0")
    resize(page, DESKTOP)
    expect(grid).not_to_have_attribute("tabindex", "0")


def test_link_open_over_the_walkthrough_passes_axe(scanned, console_live):
    open_from_step_4(scanned, console_live)
    assert not scan_both_widths(scanned, console_live.url)


def test_a_confirmation_is_a_modal_dialog_that_passes_axe_at_both_widths(scanned, console_live):
    """data-confirm asks in the page's own <dialog> (not window.confirm): named by its question, modal (the page
    behind it inert), focus on Cancel, and its confirming button fits a phone's width."""
    from tests.browser.test_console_walkthrough import start

    page = scanned
    start(page, console_live)
    page.goto(console_live.url + "/keys")
    page.get_by_label("Label").first.fill("CI")
    page.get_by_label("Label").first.press("Enter")
    page.get_by_role("button", name="Revoke").first.click()
    dialog = page.get_by_role("dialog", name="Revoke this key? Requests with it will get 401.")
    expect(dialog).to_be_visible()
    expect(dialog.get_by_role("button", name="Cancel")).to_be_focused()
    assert page.evaluate("() => document.querySelector('dialog.confirm-dialog').matches(':modal')")
    assert not scan_both_widths(page, console_live.url)
    resize(page, PHONE)
    box = dialog.get_by_role("button", name="Revoke").bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
