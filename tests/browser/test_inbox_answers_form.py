"""The Webhooks page's "How the inbox answers" form, after the click that registers the built-in inbox."""

from __future__ import annotations

from playwright.sync_api import expect


def test_registering_the_inbox_as_the_first_action_shows_its_url_and_answer_form_without_a_reload(
    page, live_server
):
    """On a blank workspace "Register the built-in inbox" made the workspace and swapped in the webhooks table, but
    the inbox section below kept its blank-workspace text: no URL and no "How the inbox answers" form (slow,
    timeout, error modes) until the page was loaded again. The click now brings both."""
    page.goto(live_server.url + "/webhooks")
    inbox = page.locator("#inbox")
    expect(inbox.locator("#inbox-behaviour")).to_have_count(0)  # no workspace yet: nothing to set
    url_before = page.url
    page.get_by_role("button", name="Register the built-in inbox").click()
    page.get_by_role("link", name="Endpoint page").first.wait_for()
    assert page.url == url_before  # swapped in by htmx, not a navigation
    form = inbox.get_by_role("group", name="How the inbox answers")
    expect(form).to_be_visible()
    expect(inbox.locator("code.wrap")).to_contain_text("/inbox/")
    # The form works where it appeared: choosing 500 says so and keeps the choice.
    form.get_by_label("Answer 500", exact=False).check()
    inbox.get_by_role("button", name="Save").click()
    expect(inbox.locator(".callout-warn")).to_be_visible()
    page.reload()
    expect(
        page.locator("#inbox")
        .get_by_role("group", name="How the inbox answers")
        .get_by_label("Answer 500", exact=False)
    ).to_be_checked()
