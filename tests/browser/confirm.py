"""Answering the console's confirmation dialog (console.js: a modal <dialog>, not window.confirm)."""

from __future__ import annotations

from playwright.sync_api import Page, expect


def answer_confirmation(page: Page, *, accept: bool = True) -> str:
    """Wait for the open confirmation, answer it, and return the question it asked."""
    dialog = page.locator("dialog.confirm-dialog[open]")
    expect(dialog).to_be_visible()
    question = dialog.locator("#confirm-dialog-message").inner_text()
    if accept:
        dialog.locator(".confirm-ok").click()
    else:
        dialog.get_by_role("button", name="Cancel").click()
    expect(page.locator("dialog.confirm-dialog[open]")).to_have_count(0)
    return question
