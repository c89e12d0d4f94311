"""Payload shaping per webhook version, and the exact body bytes."""

from __future__ import annotations

import json

from console.webhooks.shaping import body_bytes, shape

SWITCH = "direct_deposit_switch.added"
FULL = {
    "id": "j1",
    "outcome": "success",
    "params": {"action": "partial_switch", "allocation": {"type": "amount", "value": 5000, "target": {}}},
}
PARTNER = {
    "id": "j2",
    "outcome": "success",
    "params": {"allocation": {"target": {"account_type": "checking"}}},
}


def test_latest_version_sends_the_payload_as_stored():
    shaped = shape(SWITCH, FULL, "2023-11-22")
    assert shaped.payload == FULL and shaped.warning is None
    partner = shape(SWITCH, PARTNER, "2023-11-22", via_platform_matching=True)
    assert partner.payload == PARTNER and "action" not in partner.payload["params"]
    assert partner.warning is None


def test_allocation_type_and_value_never_go_out_without_action():
    stored = {
        "params": {"allocation": {"type": "amount", "value": 1, "target": {"account_type": "checking"}}}
    }
    shaped = shape(SWITCH, stored, "2023-11-22")
    assert shaped.payload["params"]["allocation"] == {"target": {"account_type": "checking"}}
    assert "type" in stored["params"]["allocation"]  # the stored event is not modified


def test_old_version_flags_prime_events_and_missing_action():
    prime = shape(SWITCH, FULL, "2023-04-18", via_platform_matching=True)
    assert prime.payload == FULL
    assert prime.warning.startswith("Not valid for version 2023-04-18") and "2023-11-22" in prime.warning
    partner = shape(SWITCH, PARTNER, "2023-04-18")
    assert "params.action is absent" in partner.warning
    assert shape("account.added", {"account_id": "a"}, "2023-04-18", via_platform_matching=True).warning
    assert shape(SWITCH, FULL, "2023-04-18").warning is None
    assert shape("account.added", {"account_id": "a"}, "2023-04-18").warning is None


def test_body_is_compact_json_with_event_event_id_payload():
    body = body_bytes("account.added", "e1", {"name": "Zoë"})
    assert body == '{"event":"account.added","event_id":"e1","payload":{"name":"Zoë"}}'.encode()
    assert json.loads(body) == {"event": "account.added", "event_id": "e1", "payload": {"name": "Zoë"}}
