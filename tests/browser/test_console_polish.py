"""Small layout and wording points of the console, checked in the browser at 1280 px and at a phone's 390 px."""

from __future__ import annotations

from urllib.parse import urlsplit

SIZES = ({"width": 1280, "height": 720}, {"width": 390, "height": 844})
FIELDS = ("#f-type", "#f-link_token_id", "#f-account_id", "#f-end_user_id")


def test_a_filter_error_moves_no_field_and_the_address_names_only_the_typed_field(page, live_server):
    """The error under "Account id" widened that field (to the error's width) and pushed "End user id" to
    another row; the other fields sank to the error's bottom. Now the fields keep their boxes, and the
    address the filter leaves is `?account_id=abc`, not `?type=&link_token_id=&account_id=abc&end_user_id=`."""
    for size in SIZES:
        page.set_viewport_size(size)
        page.goto(live_server.url + "/events")
        before = [page.locator(field).bounding_box() for field in FIELDS]
        page.fill("#f-account_id", "abc")
        page.get_by_role("button", name="Filter").click()
        page.locator("#f-account_id-error").wait_for()
        after = [page.locator(field).bounding_box() for field in FIELDS]
        # At 1280 px the four share a row and none moves; at 390 px they are stacked, so the one under the error
        # moves down by it, and nothing else.
        kept = after if size["width"] == 1280 else after[:3]
        assert kept == before[: len(kept)], (size, before, after)
        assert [(b["x"], b["width"]) for b in after] == [(b["x"], b["width"]) for b in before], size
        error = page.locator("#f-account_id-error").bounding_box()
        assert error["width"] <= after[2]["width"] + 0.5, (size, error, after[2])
        address = urlsplit(page.url)
        assert (address.path, address.query) == ("/events", "account_id=abc"), page.url


def test_a_refused_secret_keeps_the_open_workspace_form_open_with_the_message_by_the_field(page, live_server):
    """A wrong secret closed the form and said "No workspace opened: No API key has this secret." at the top of
    the page. The form now stays open, the focus in the field, the message under it; nothing at the top."""
    for size in SIZES:
        page.set_viewport_size(size)
        page.goto(live_server.url + "/events")
        page.get_by_text("Open its workspace here").click()
        page.get_by_label("API secret").fill("sk_sandbox_" + "z" * 40)
        page.get_by_role("button", name="Open its workspace").click()
        message = page.locator("#open-error-main")
        message.wait_for()
        assert page.locator("details.open-workspace").evaluate("d => d.open")
        assert message.inner_text() == "No API key has this secret: check that you copied all of it."
        field = page.get_by_label("API secret")
        assert field.evaluate("f => f === document.activeElement") and field.input_value() == ""
        assert field.get_attribute("aria-invalid") == "true"
        # Beside the field: right under the field and its button, inside the form.
        field_box, message_box = field.bounding_box(), message.bounding_box()
        assert 0 <= message_box["y"] - (field_box["y"] + field_box["height"]) < 60, (
            size,
            field_box,
            message_box,
        )
        assert (
            page.locator("main .callout-error").count() == 0 and "No workspace opened" not in page.content()
        )


def test_the_inbox_times_line_up_on_the_right_whatever_the_event_names_length(page, live_server):
    # The arrival time followed the event id: beside a short name it sat mid-line, under a long one it wrapped to
    # the left edge; the inbox read as ragged. Now every time ends its item's first line at the same right edge.
    import requests

    page.goto(live_server.url + "/webhooks")
    page.get_by_role("button", name="Register the built-in inbox").click()
    inbox_url = page.locator("td.webhook-url code").first.inner_text().strip()
    for name in ("account.added", "direct_deposit_switch.added"):
        body = {"event": name, "event_id": f"evt-{name}", "payload": {}}
        assert requests.post(inbox_url, json=body, timeout=30).status_code == 400  # unsigned: kept, refused
    for width in (1280, 1440):
        page.set_viewport_size({"width": width, "height": 900})
        page.reload()
        times = page.locator("#inbox-list .inbox-line > time")
        times.nth(1).wait_for()
        rights = times.evaluate_all("ts => ts.map(t => Math.round(t.getBoundingClientRect().right))")
        assert len(set(rights)) == 1, f"the times end at {rights} at {width} px"


def test_the_event_log_filter_button_shares_the_fields_row_at_1280_and_1440(page, live_server):
    """At 1280x720 the four fields' default widths sent the Filter button (and Clear) to a row of its own."""
    for size in ({"width": 1280, "height": 720}, {"width": 1440, "height": 900}):
        page.set_viewport_size(size)
        # Filtered, so that Clear stands beside the button too (the widest the actions get).
        page.goto(live_server.url + "/events?type=account.added")
        button = page.get_by_role("button", name="Filter").bounding_box()
        clear = page.locator("form.filters .filter-actions a").bounding_box()
        for field in FIELDS:
            box = page.locator(field).bounding_box()
            assert abs((box["y"] + box["height"] / 2) - (button["y"] + button["height"] / 2)) <= 6, (
                size,
                field,
            )
        form = page.locator("form.filters").bounding_box()
        assert clear["x"] + clear["width"] <= form["x"] + form["width"], (size, clear, form)
