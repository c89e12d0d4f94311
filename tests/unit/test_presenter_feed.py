"""The stage's words: one row per webhook event with its delivery state, the backend's calls apart from the
stage's set-up and sandbox-only ones (console.presenter.feed; no app, no database)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from types import SimpleNamespace

from console.presenter import feed

AT = datetime(2026, 11, 30, 9, 14, 5, tzinfo=UTC)


def message(event_id: str, event_type: str, outcome: str = "", behaviour=None, verified=True, n=0):
    payload = {"timestamp": "2026-11-30T09:14:05Z", **({"outcome": outcome} if outcome else {})}
    body = json.dumps({"event": event_type, "event_id": event_id, "payload": payload})
    return SimpleNamespace(
        id=f"m{event_id}{n}",
        event_id=event_id,
        event_type=event_type,
        body=body,
        verified=verified,
        behaviour=behaviour,
        received_at=AT,
        conformance=False,
    )


def test_two_events_of_one_type_say_processing_and_sent_in_words_with_the_api_name_beside():
    rows = feed.event_rows(
        [
            message("e2", "direct_deposit_switch.added", "sent"),
            message("e1", "direct_deposit_switch.added", "processing"),
        ]
    )
    assert [r.words for r in rows] == [
        "Direct deposit switch sent to the agency",
        "Direct deposit switch processing",
    ]
    assert [r.api_name for r in rows] == [
        "direct_deposit_switch.added · sent",
        "direct_deposit_switch.added · processing",
    ]
    assert [r.state_words for r in rows] == ["delivered, answered 200"] * 2
    assert feed.short_time(rows[0].at) == "Mon 30 Nov 09:14:05"


def test_a_refused_event_will_retry_until_it_is_delivered_then_says_so_in_one_row():
    refused = message("e1", "direct_deposit_switch.added", "success", behaviour="fail")
    (row,) = feed.event_rows([refused])
    assert (row.state, row.state_words, row.state_tone) == ("refused", "answered 500: will retry", "bad")
    assert feed.still_refused([row])
    delivered = message("e1", "direct_deposit_switch.added", "success", n=1)
    (row,) = feed.event_rows([delivered, refused])  # newest first, as the inbox lists them
    assert (row.state, row.state_words, row.state_tone) == (
        "redelivered",
        "answered 500, then delivered on the retry",
        "ok",
    )
    assert row.deliveries == 2 and not feed.still_refused([row])


def test_a_delivery_answered_past_the_senders_timeout_is_refused_until_delivered():
    late = message("e1", "direct_deposit_switch.added", "success", behaviour="timeout")
    (row,) = feed.event_rows([late])
    assert (row.state, row.state_words, row.state_tone) == (
        "refused",
        "answered too late (timed out): will retry",
        "bad",
    )
    assert feed.still_refused([row])
    (row,) = feed.event_rows([message("e1", "direct_deposit_switch.added", "success", n=1), late])
    assert (row.state, row.state_words) == ("redelivered", "timed out, then delivered on the retry")


def test_an_unverified_delivery_and_a_repeat_delivery_are_named():
    (row,) = feed.event_rows([message("e1", "account.added", verified=False)])
    assert row.state_words == "signature not verified" and row.words == "Account connected"
    (row,) = feed.event_rows([message("e2", "account.added", n=1), message("e2", "account.added")])
    assert row.state_words == "delivered, answered 200 (2 copies: at least once)"


def call(method: str, path: str, status=200, step="presenter"):
    return SimpleNamespace(method=method, path=path, status=status, step=step)


def test_the_backends_calls_are_apart_from_the_stages_set_up_and_sandbox_only_calls():
    yours, setup = feed.split_calls(
        [
            call("POST", "/sandbox/v1/sandbox/clock/advance"),
            call("POST", "/sandbox/v1/sandbox/link_tokens/abc/complete"),
            call("POST", "/sandbox/v1/link_tokens"),
            call("GET", "/sandbox/v1/jobs"),
            call("POST", "/sandbox/v1/webhooks", step="webhook"),  # the stage's own inbox registration
        ]
    )
    assert [c.words for c in yours] == ["Create a Link token", "Read the job"]
    assert [c.words for c in setup] == [
        "Move the sandbox clock",
        "Finish Link without a person (sandbox only)",
        "Register the webhook receiver",
    ]
    assert all(c.setup for c in setup) and not any(c.setup for c in yours)


def test_the_phone_says_paycheck_for_a_switch_and_benefit_payments_for_a_federal_one():
    assert feed.phone_words(None).startswith("Get paid up to two days early")
    assert feed.phone_words("success") == "✓ Your paycheck now comes here."
    assert "benefit payments" in feed.phone_words("sent") and "paycheck" not in feed.phone_words("sent")
    assert feed.phone_words("processing") == feed.phone_words("pending") == "Switch in progress…"
    assert feed.phone_words("error") == "The switch did not go through. You can try again."
