"""The one excerpt of an answer that deliveries, relayed deliveries and conformance reports keep."""

from __future__ import annotations

import pytest

from console.webhooks.excerpt import EXCERPT_BYTES, MAX_HEADER_CHARS, answer_excerpt


def test_only_allowlisted_headers_are_kept_as_spelled():
    headers = [
        ("content-type", "application/json"),
        ("Content-Length", "12"),
        ("Retry-After", "30"),
        ("X-Request-ID", "abc"),
        ("Request-Id", "def"),
        ("Server", "nginx/1.25 (internal-build)"),
        ("Set-Cookie", "admin=1"),
        ("WWW-Authenticate", "Basic realm=internal"),
        ("Location", "http://10.0.0.5/"),
    ]
    excerpt = answer_excerpt(503, headers, b"busy")
    assert excerpt.status == 503 and excerpt.body == "busy"
    assert excerpt.headers == {
        "content-type": "application/json",
        "Content-Length": "12",
        "Retry-After": "30",
        "X-Request-ID": "abc",
        "Request-Id": "def",
    }


def test_header_repeats_are_joined_and_every_value_is_bounded():
    headers = [("X-Request-Id", "a" * 150), ("x-request-id", "b" * 150), ("Content-Type", "c" * 5000)]
    shown = answer_excerpt(200, headers, None).headers
    assert shown == {
        "X-Request-Id": ("a" * 150 + ", " + "b" * 150)[:MAX_HEADER_CHARS],
        "Content-Type": "c" * 200,
    }


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (None, None),
        (b"", None),
        (b"ok", "ok"),
        ("ok", "ok"),  # a listener reports text
        (b"n" * 5000, "n" * EXCERPT_BYTES),
        (("a" + "é" * 600).encode(), "a" + "é" * 511),  # the split "é" is left out
        ("a" + "é" * 600, "a" + "é" * 511),
    ],
)
def test_the_body_is_at_most_a_kilobyte_of_utf8(body, expected):
    assert answer_excerpt(200, (), body).body == expected


def test_undecodable_bytes_do_not_stretch_the_excerpt_past_a_kilobyte():
    text = answer_excerpt(200, (), b"\xff" * 5000).body
    assert text and set(text) == {"\ufffd"} and len(text.encode()) <= EXCERPT_BYTES
