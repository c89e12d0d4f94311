"""Unit tests for console.webhooks.signing."""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import UTC, datetime

import pytest
from werkzeug.datastructures import Headers

from console.webhooks import WebhookVerificationError, sign, verify

SECRET = "sk_test_super_secret_value_123"
NOW = 1_780_000_000
BODY = json.dumps({"event": "payroll.completed", "id": "evt_1"}).encode()


def expected_hex(secret: str, timestamp: int, body: bytes) -> str:
    """Compute the signature independently of the module under test."""
    return hmac.new(
        secret.encode(), b"v2:" + str(timestamp).encode() + b":" + body, hashlib.sha256
    ).hexdigest()


def headers_for(body: bytes = BODY, timestamp: int = NOW, secret: str = SECRET) -> dict[str, str]:
    return {
        "x-service-signature": f"v2={expected_hex(secret, timestamp, body)}",
        "x-timestamp": str(timestamp),
    }


def test_sign_matches_independent_hmac() -> None:
    assert sign(SECRET, NOW, BODY) == f"v2={expected_hex(SECRET, NOW, BODY)}"


def test_sign_requires_secret() -> None:
    with pytest.raises(ValueError):
        sign("", NOW, BODY)


def test_verify_returns_parsed_body() -> None:
    assert verify(SECRET, headers_for(), BODY, now=NOW) == {"event": "payroll.completed", "id": "evt_1"}


def test_verify_round_trips_with_sign() -> None:
    headers = {"x-service-signature": sign(SECRET, NOW, BODY), "x-timestamp": str(NOW)}
    assert verify(SECRET, headers, BODY, now=NOW)["id"] == "evt_1"


def test_verify_accepts_str_body() -> None:
    body = '{"name": "Zoë"}'
    assert verify(SECRET, headers_for(body.encode()), body, now=NOW) == {"name": "Zoë"}


def test_verify_accepts_datetime_now() -> None:
    assert verify(SECRET, headers_for(), BODY, now=datetime.fromtimestamp(NOW, UTC))["id"] == "evt_1"


def test_verify_uses_wall_clock_by_default() -> None:
    import time

    ts = int(time.time())
    assert verify(SECRET, headers_for(timestamp=ts), BODY)["id"] == "evt_1"


def test_wrong_secret() -> None:
    with pytest.raises(WebhookVerificationError, match="no matching signature"):
        verify("another-secret", headers_for(), BODY, now=NOW)


def test_empty_secret_is_refused() -> None:
    with pytest.raises(WebhookVerificationError, match="secret"):
        verify("", headers_for(secret=""), BODY, now=NOW)


def test_tampered_body() -> None:
    tampered = BODY.replace(b"evt_1", b"evt_2")
    with pytest.raises(WebhookVerificationError, match="no matching signature"):
        verify(SECRET, headers_for(), tampered, now=NOW)


def test_tampered_timestamp() -> None:
    headers = headers_for()
    headers["x-timestamp"] = str(NOW + 1)
    with pytest.raises(WebhookVerificationError, match="no matching signature"):
        verify(SECRET, headers, BODY, now=NOW)


@pytest.mark.parametrize("missing", ["x-service-signature", "x-timestamp"])
def test_missing_header(missing: str) -> None:
    headers = headers_for()
    del headers[missing]
    with pytest.raises(WebhookVerificationError, match=f"missing {missing} header"):
        verify(SECRET, headers, BODY, now=NOW)


def test_empty_signature_header() -> None:
    headers = headers_for()
    headers["x-service-signature"] = ""
    with pytest.raises(WebhookVerificationError, match="missing x-service-signature"):
        verify(SECRET, headers, BODY, now=NOW)


@pytest.mark.parametrize("value", ["abc", "1.5e9", "-1780000000", "+1780000000", "1_780_000_000", "9" * 40])
def test_non_integer_timestamp(value: str) -> None:
    headers = headers_for()
    headers["x-timestamp"] = value
    with pytest.raises(WebhookVerificationError, match="not an integer"):
        verify(SECRET, headers, BODY, now=NOW)


def test_timestamp_too_old() -> None:
    with pytest.raises(WebhookVerificationError, match="too old"):
        verify(SECRET, headers_for(timestamp=NOW - 301), BODY, now=NOW)


def test_timestamp_in_future() -> None:
    with pytest.raises(WebhookVerificationError, match="in the future"):
        verify(SECRET, headers_for(timestamp=NOW + 301), BODY, now=NOW)


def test_timestamp_at_tolerance_edge_is_accepted() -> None:
    assert verify(SECRET, headers_for(timestamp=NOW - 300), BODY, now=NOW)
    assert verify(SECRET, headers_for(timestamp=NOW + 300), BODY, now=NOW)


def test_custom_tolerance() -> None:
    with pytest.raises(WebhookVerificationError, match="too old"):
        verify(SECRET, headers_for(timestamp=NOW - 11), BODY, tolerance=10, now=NOW)
    assert verify(SECRET, headers_for(timestamp=NOW - 1000), BODY, tolerance=1000, now=NOW)


def test_multiple_signatures_any_v2_match() -> None:
    good = expected_hex(SECRET, NOW, BODY)
    bad = expected_hex("rotated-out-secret", NOW, BODY)
    headers = {"x-service-signature": f"v2={bad} v3=zzzz v2={good}", "x-timestamp": str(NOW)}
    assert verify(SECRET, headers, BODY, now=NOW)["id"] == "evt_1"


def test_multiple_signatures_none_match() -> None:
    bad1 = expected_hex("old-1", NOW, BODY)
    bad2 = expected_hex("old-2", NOW, BODY)
    headers = {"x-service-signature": f"v2={bad1}  v2={bad2}", "x-timestamp": str(NOW)}
    with pytest.raises(WebhookVerificationError, match="no matching signature"):
        verify(SECRET, headers, BODY, now=NOW)


def test_unknown_versions_only() -> None:
    good = expected_hex(SECRET, NOW, BODY)
    headers = {"x-service-signature": f"v1={good} v3={good} {good}", "x-timestamp": str(NOW)}
    with pytest.raises(WebhookVerificationError, match="no v2 signature"):
        verify(SECRET, headers, BODY, now=NOW)


def test_uppercase_hex_is_accepted() -> None:
    headers = headers_for()
    headers["x-service-signature"] = headers["x-service-signature"].upper().replace("V2=", "v2=")
    assert verify(SECRET, headers, BODY, now=NOW)


def test_non_ascii_signature_does_not_crash() -> None:
    headers = headers_for()
    headers["x-service-signature"] = "v2=ééé"
    with pytest.raises(WebhookVerificationError, match="no matching signature"):
        verify(SECRET, headers, BODY, now=NOW)


def test_case_insensitive_plain_dict() -> None:
    sig = headers_for()
    headers = {"X-Service-Signature": sig["x-service-signature"], "X-TIMESTAMP": sig["x-timestamp"]}
    assert verify(SECRET, headers, BODY, now=NOW)["id"] == "evt_1"


def test_werkzeug_headers() -> None:
    sig = headers_for()
    headers = Headers(
        [("X-Service-Signature", sig["x-service-signature"]), ("X-Timestamp", sig["x-timestamp"])]
    )
    assert verify(SECRET, headers, BODY, now=NOW)["id"] == "evt_1"


@pytest.mark.parametrize("body", [b"not json", b"\xff\xfe", b"[1, 2]", b'"text"'])
def test_signed_body_must_be_json_object(body: bytes) -> None:
    with pytest.raises(WebhookVerificationError, match="JSON"):
        verify(SECRET, headers_for(body), body, now=NOW)


def test_error_messages_never_leak_secret_or_expected_signature() -> None:
    good = expected_hex(SECRET, NOW, BODY)
    cases = [
        ({"x-timestamp": str(NOW)}, BODY),
        ({"x-service-signature": f"v2={good}"}, BODY),
        ({"x-service-signature": f"v2={good}", "x-timestamp": "nope"}, BODY),
        (headers_for(timestamp=NOW - 10_000), BODY),
        (headers_for(timestamp=NOW + 10_000), BODY),
        ({"x-service-signature": "v2=deadbeef", "x-timestamp": str(NOW)}, BODY),
        ({"x-service-signature": "v9=deadbeef", "x-timestamp": str(NOW)}, BODY),
        (headers_for(), BODY + b" "),
    ]
    for headers, body in cases:
        with pytest.raises(WebhookVerificationError) as info:
            verify(SECRET, headers, body, now=NOW)
        message = str(info.value)
        assert message
        assert SECRET not in message
        assert good not in message
        assert expected_hex(SECRET, NOW, body) not in message
