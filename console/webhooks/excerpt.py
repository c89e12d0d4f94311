"""What the service keeps of an endpoint's answer: a bounded excerpt, the same for every kind of traffic.

Deliveries (sent by the worker or relayed by `console listen`) and conformance reports show what a
webhook URL answered. A URL can point at something that is not a webhook receiver (another service
on a machine the sandbox may reach), so only an excerpt is ever kept or shown: the status, the
headers named in `SHOWN_HEADERS` (each value cut short) and at most `EXCERPT_BYTES` of the body,
as UTF-8. `answer_excerpt` is the one function that makes it; nothing else cuts an answer.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterable
from dataclasses import dataclass, field

EXCERPT_BYTES = 1024
# Enough to understand an answer (what it is, how long, when to retry, which request in the receiver's
# logs), nothing that describes or authenticates the service behind it (Server, Set-Cookie, Location, ...).
SHOWN_HEADERS = ("content-type", "content-length", "retry-after", "x-request-id", "request-id")
MAX_HEADER_CHARS = 200


@dataclass(frozen=True)
class Excerpt:
    """The part of an answer that is kept: status, allowlisted headers, the first kilobyte of the body."""

    status: int | None
    headers: dict[str, str] = field(default_factory=dict)
    body: str | None = None


def answer_excerpt(
    status: int | None, headers: Iterable[tuple[str, str]], body: bytes | str | None
) -> Excerpt:
    """The excerpt of an answer: `headers` as received (name, value) pairs, `body` raw bytes or text.

    The body is cut to at most EXCERPT_BYTES bytes of UTF-8 (undecodable bytes replaced, a character cut
    in two dropped); only the headers in SHOWN_HEADERS are kept, under the name as received, repeats
    joined with ", ", each value at most MAX_HEADER_CHARS characters.
    """
    return Excerpt(status, _shown_headers(headers), _body_excerpt(body))


def _shown_headers(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    shown: dict[str, str] = {}
    names: dict[str, str] = {}  # lower-case name -> the spelling first received
    for name, value in headers:
        key = name.lower()
        if key not in SHOWN_HEADERS:
            continue
        spelled = names.setdefault(key, name)
        joined = f"{shown[spelled]}, {value}" if spelled in shown else str(value)
        shown[spelled] = joined[:MAX_HEADER_CHARS]
    return shown


def _body_excerpt(body: bytes | str | None) -> str | None:
    if not body:
        return None
    raw = body.encode("utf-8", errors="replace") if isinstance(body, str) else body
    # Not final: a character the cut splits in two is dropped, not shown as a replacement character.
    text = codecs.getincrementaldecoder("utf-8")(errors="replace").decode(raw[:EXCERPT_BYTES], final=False)
    encoded = text.encode("utf-8")
    if len(encoded) > EXCERPT_BYTES:  # a replacement character is 3 bytes: cut again, whole characters only
        text = encoded[:EXCERPT_BYTES].decode("utf-8", errors="ignore")
    return text or None
