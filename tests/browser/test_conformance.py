"""The conformance check in a real browser: the htmx form (with its CSRF header) starts a run, the section
polls it while the worker runs it, and the report shows."""

from __future__ import annotations


def test_run_the_check_on_the_built_in_inbox(page, console_live):
    live_server = console_live
    page.goto(live_server.url + "/webhooks")
    # A fresh visitor has no workspace until a first action: this one registers the inbox.
    page.get_by_role("button", name="Register the built-in inbox").click()
    row = page.locator("#webhooks tbody tr").filter(has_text="Built-in inbox")
    row.get_by_text("not checked").wait_for()
    row.get_by_role("button", name="Run conformance check").click()
    report = page.locator("#conformance")
    report.locator(".conformance-summary").get_by_text("✓ passed").wait_for()
    assert "11 of 11 checks passed" in report.inner_text()
    # The table's badge was updated by the same answer (out-of-band swap).
    row.get_by_text("✓ conformant").wait_for()
    # An exchange expands: the forged request, and the inbox's refusal.
    forged = report.locator("li.conformance-check").filter(has_text="forged_signature")
    forged.locator("summary").first.click()
    assert "x-service-conformance" in forged.inner_text() and "no matching signature" in forged.inner_text()
    # Re-runnable from the report itself.
    is_run = lambda r: r.request.method == "POST" and r.url.endswith("/conformance")  # noqa: E731
    with page.expect_response(is_run) as answer:
        report.get_by_role("button", name="Run again").click()
    assert answer.value.status == 200
    page.locator("#conformance .conformance-progress").wait_for(state="detached")
    page.locator("#conformance .conformance-summary").get_by_text("✓ passed").wait_for()
    assert not [m for m in page.console_messages if m.startswith(("error", "pageerror"))], (
        page.console_messages
    )
