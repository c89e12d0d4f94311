"""An API error's fields placed on the console form inputs that hold them."""

from __future__ import annotations

from console.web.shared.fielderrors import place, webhook_inputs


def test_webhook_fields_land_on_each_forms_own_inputs():
    page, walkthrough = webhook_inputs("wh2"), webhook_inputs("wh", status=False)
    assert [page(n) for n in ("url", "status", "version", "enabled_events[2]")] == [
        "wh2-url",
        "wh2-status",
        "wh2-version",
        "wh2-events",
    ]
    assert walkthrough("url") == "wh-url" and walkthrough("enabled_events") == "wh-events"
    # The walkthrough's form has no status input: its error is listed above the form, not lost.
    errors = place([{"name": "status", "message": "must be active or paused"}], walkthrough)
    assert errors.placed == {} and errors.unplaced == [("status", "must be active or paused")]
    assert page("secret") is None
