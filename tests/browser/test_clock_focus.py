"""The clock's question before a move that expires open Link tokens, by keyboard: the focus goes to the question,
then to its answer, then to what the move did, never to a heading past them."""

from __future__ import annotations

from tests.browser.test_console_walkthrough import create_token, start
from tests.browser.waits import poll


def focus_goes_into(page, selector: str) -> None:
    """Wait for the focus to settle inside `selector` (console.js moves it once htmx has settled the swap)."""
    poll(
        lambda: page.evaluate(f"!!document.activeElement.closest({selector!r})"), what=f"focus in {selector}"
    )


def test_the_confirmation_and_its_result_take_the_focus(page, console_live):
    start(page, console_live)
    create_token(page, "Standard switch")  # unused: a move past its expiry asks first
    page.goto(console_live.url + "/clock")
    page.get_by_role("button", name="+24 hours").focus()
    page.keyboard.press("Enter")
    question = page.locator(".fired.callout-warn")
    question.get_by_text("This move would expire 1 open Link token").wait_for()
    focus_goes_into(page, ".fired.callout-warn")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent.trim()") == "Move the clock anyway"
    page.keyboard.press("Enter")
    page.get_by_text("Clock advanced.").wait_for()
    focus_goes_into(page, ".fired[role=status]")
