"""docs/webhooks.md's standard-library `verify` (for a backend without this package) agrees with the service's
signatures: it accepts what a delivery carries and refuses what the conformance check sends to catch receivers."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from werkzeug.datastructures import Headers

from console.webhooks import sign
from console.webhooks.shaping import body_bytes

DOC = Path(__file__).resolve().parents[2] / "docs" / "webhooks.md"
SECRET = "sk_sandbox_example"


@pytest.fixture(scope="module")
def verify():
    section = DOC.read_text().split("### The signature", 1)[1].split("\n## ", 1)[0]
    (source,) = re.findall(r"```python\n(.*?)```", section, re.S)
    namespace: dict = {}
    exec(compile(source, str(DOC), "exec"), namespace)
    return namespace["verify"]


def delivery(secret=SECRET, sent_at=None, body=None):
    body = body or body_bytes("account.added", "evt-1", {"account_id": "a1", "end_user_id": "u1"})
    sent_at = int(time.time()) if sent_at is None else sent_at
    # As a framework hands them over: case-insensitive, in the case the service sends.
    headers = Headers(
        {
            "Content-Type": "application/json",
            "x-timestamp": str(sent_at),
            "x-service-signature": sign(secret, sent_at, body),
        }
    )
    return headers, body


def test_a_genuine_delivery_verifies_and_is_parsed(verify):
    headers, body = delivery()
    assert verify(SECRET, headers, body)["event_id"] == "evt-1"


def test_several_signatures_one_of_them_ours(verify):
    headers, body = delivery()
    headers["x-service-signature"] = f"v3=abcdef {headers['x-service-signature']}"
    assert verify(SECRET, headers, body)["event"] == "account.added"


@pytest.mark.parametrize(
    "case",
    [
        "forged_signature",
        "altered_body",
        "stale_timestamp",
        "future_timestamp",
        "no_signature",
        "bad_timestamp",
    ],
)
def test_what_the_conformance_check_sends_to_catch_receivers_is_refused(verify, case):
    now = int(time.time())
    headers, body = delivery(
        secret="someone-else" if case == "forged_signature" else SECRET,
        sent_at={"stale_timestamp": now - 600, "future_timestamp": now + 600}.get(case, now),
    )
    if case == "altered_body":
        body = body.replace(b'"u1"', b'"u2"')
    elif case == "no_signature":
        del headers["x-service-signature"]
    elif case == "bad_timestamp":
        headers["x-timestamp"] = "soon"
    with pytest.raises(ValueError):
        verify(SECRET, headers, body)
