"""The signature debugger: verify a pasted delivery the way a receiver would, and explain the result."""

from __future__ import annotations

from dataclasses import dataclass

from console.webhooks import WebhookVerificationError, sign, verify
from console.webhooks.signing import DEFAULT_TOLERANCE, SIGNATURE_HEADER, TIMESTAMP_HEADER, TIMESTAMP_PATTERN

# "Ignore the timestamp's age" still runs the real check, just with a window no replay test fails.
NO_TOLERANCE_LIMIT = 10**12


@dataclass(frozen=True)
class Verdict:
    ok: bool
    message: str
    signed_content: str  # what the MAC covers, as text (body shortened)
    computed: str | None  # the signature the pasted secret gives, to compare by eye
    received: str | None


def last4(secret: str) -> str:
    """How a pasted secret is named on the page: its last four characters, as keys are (never all of it)."""
    text = secret.strip()
    return text[-4:] if len(text) > 8 else "…"


def parse_headers(text: str) -> dict[str, str]:
    """`Name: value` lines (as copied from a request dump) into a dict; other lines are ignored."""
    headers: dict[str, str] = {}
    for line in text.splitlines():
        name, sep, value = line.partition(":")
        if sep and name.strip():
            headers[name.strip().lower()] = value.strip()
    return headers


def check(secret: str, headers_text: str, body: str, *, ignore_age: bool = False) -> Verdict:
    """Verify with `console.webhooks.verify`; also compute the expected signature for comparison."""
    headers = parse_headers(headers_text)
    raw = body.encode("utf-8")
    timestamp = headers.get(TIMESTAMP_HEADER, "")
    preview = body if len(body) <= 200 else body[:200] + "…"
    # Only a timestamp verify() itself would accept: str.isdigit() also passes "²" and 5,000-digit runs.
    usable = TIMESTAMP_PATTERN.fullmatch(timestamp) is not None
    computed = sign(secret, int(timestamp), raw) if secret and usable else None
    try:
        verify(secret, headers, raw, tolerance=NO_TOLERANCE_LIMIT if ignore_age else DEFAULT_TOLERANCE)
    except WebhookVerificationError as exc:
        ok, message = False, str(exc)
    else:
        ok, message = True, "Signature valid: this delivery was signed with that secret."
    return Verdict(ok, message, f"v2:{timestamp}:{preview}", computed, headers.get(SIGNATURE_HEADER))
