"""Sign and verify webhook deliveries (`x-service-signature: v2=<hex>`), modeled on svix's webhooks.py.

The signed content is `b"v2:" + timestamp + b":" + raw_body`; binding the timestamp into the MAC is what
makes the tolerance window a replay defence rather than a formality.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import time
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from console.core import jsontext

SIGNATURE_HEADER = "x-service-signature"
TIMESTAMP_HEADER = "x-timestamp"
VERSION = "v2"
DEFAULT_TOLERANCE = 300

# Digits only, bounded: int() alone would accept "+5", " 5 ", "1_000" and unbounded lengths.
TIMESTAMP_PATTERN = re.compile(r"[0-9]{1,12}")


class WebhookVerificationError(Exception):
    """Any reason a delivery is refused; the message never contains the secret or expected signature."""


def _mac(secret: str, timestamp: int, raw_body: bytes) -> str:
    """Hex HMAC-SHA256 of the versioned signed content."""
    content = f"{VERSION}:{timestamp}:".encode() + raw_body
    return hmac.new(secret.encode("utf-8"), content, hashlib.sha256).hexdigest()


def sign(secret: str, timestamp: int, raw_body: bytes) -> str:
    """Return the `x-service-signature` value (`v2=<hex>`) for a body sent at `timestamp`."""
    if not secret:
        raise ValueError("a non-empty secret is required to sign")
    return f"{VERSION}={_mac(secret, int(timestamp), raw_body)}"


def _header(headers: Mapping[str, Any] | Any, name: str) -> str | None:
    """Case-insensitive lookup that works for plain dicts as well as werkzeug Headers."""
    for key, value in headers.items():
        if isinstance(key, str) and key.lower() == name:
            return value if isinstance(value, str) else None
    return None


def verify(
    secret: str,
    headers: Mapping[str, Any] | Any,
    raw_body: bytes | str,
    tolerance: int = DEFAULT_TOLERANCE,
    now: float | datetime | None = None,
) -> dict[str, Any]:
    """Check signature and timestamp of a delivery and return its parsed JSON object body."""
    # An empty key is publicly computable, so accepting it would accept forgeries.
    if not secret:
        raise WebhookVerificationError("no signing secret configured")
    if isinstance(raw_body, str):
        raw_body = raw_body.encode("utf-8")

    signature_header = _header(headers, SIGNATURE_HEADER)
    timestamp_header = _header(headers, TIMESTAMP_HEADER)
    if not signature_header:
        raise WebhookVerificationError(f"missing {SIGNATURE_HEADER} header")
    if not timestamp_header:
        raise WebhookVerificationError(f"missing {TIMESTAMP_HEADER} header")

    if not TIMESTAMP_PATTERN.fullmatch(timestamp_header.strip()):
        raise WebhookVerificationError(f"invalid {TIMESTAMP_HEADER} header: not an integer")
    timestamp = int(timestamp_header.strip())
    if now is None:
        now = time.time()
    elif isinstance(now, datetime):
        now = now.timestamp()
    if now - timestamp > tolerance:
        raise WebhookVerificationError("message timestamp too old")
    if timestamp - now > tolerance:
        raise WebhookVerificationError("message timestamp is in the future")

    expected = _mac(secret, timestamp, raw_body).encode()
    candidates = []
    for item in signature_header.split():
        version, sep, value = item.partition("=")
        # Unknown versions are skipped so a sender can roll out v3 alongside v2.
        if sep and version == VERSION:
            candidates.append(value.lower().encode("utf-8"))
    if not candidates:
        raise WebhookVerificationError(f"no {VERSION} signature in {SIGNATURE_HEADER} header")
    # Check every candidate so timing does not reveal which one matched.
    matched = False
    for candidate in candidates:
        matched |= hmac.compare_digest(expected, candidate)
    if not matched:
        raise WebhookVerificationError("no matching signature")

    try:
        payload = jsontext.loads(raw_body)
    except jsontext.TooDeep as exc:  # json.loads alone raises RecursionError on 10,000 nested brackets
        raise WebhookVerificationError(f"body is not a delivery: {exc}") from exc
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError are both ValueErrors
        raise WebhookVerificationError("body is not valid JSON") from exc
    if not isinstance(payload, dict):
        raise WebhookVerificationError("body is not a JSON object")
    return payload
