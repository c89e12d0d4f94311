"""A body over the 1 MiB cap is a 413 `BODY_TOO_LARGE` however it is framed, chunked included.

A chunked body has no Content-Length: the server (Granian, werkzeug's) dechunks it and sets
`wsgi.input_terminated`. Here the test client gets the same: a stream handed out in 64 KiB pieces, no
Content-Length, `wsgi.input_terminated` set, `Transfer-Encoding: chunked`. werkzeug alone read such a
body up to the cap and gave the view the prefix (console/core/wholebody.py); against `console run`
itself, see tests/unit/test_serving_edges.py.
"""

from __future__ import annotations

import io
import json
import uuid

import pytest
from sqlalchemy import func, select
from werkzeug.test import EnvironBuilder
from werkzeug.wrappers import Request

from console.extensions import db
from console.idempotency.models import IdempotencyKey
from console.link_tokens.models import LinkToken
from tests.conftest import assert_error
from tests.factories import LINK_TOKEN

CAP = 1024 * 1024
VALID = json.dumps(LINK_TOKEN).encode()  # the valid body, as bytes on the wire


class Pieces(io.RawIOBase):
    """A request body arriving in pieces, as a dechunked stream does (no length known up front)."""

    def __init__(self, data: bytes, piece: int = 64 * 1024) -> None:
        self.data, self.position, self.piece = data, 0, piece

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        size = min(len(buffer), self.piece, len(self.data) - self.position)
        buffer[:size] = self.data[self.position : self.position + size]
        self.position += size
        return size


def chunked(api, path: str, body: bytes, headers: dict | None = None):
    """POST `body` as a server hands a chunked request to the app: streamed, without a Content-Length."""
    builder = EnvironBuilder(
        path=api.url(path),
        method="POST",
        headers=api.headers(
            {"Content-Type": "application/json", "Transfer-Encoding": "chunked", **(headers or {})}
        ),
    )
    try:
        environ = builder.get_environ()
    finally:
        builder.close()
    environ.pop("CONTENT_LENGTH", None)
    environ["wsgi.input"] = Pieces(body)
    environ["wsgi.input_terminated"] = True
    return api.client.open(Request(environ))  # a request object: its environ is sent as it is


def link_tokens(app) -> int:
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(LinkToken))


def test_the_streamed_request_has_no_content_length_and_a_small_body_works(app, api):
    response = chunked(api, "/link_tokens", VALID)
    assert response.status_code == 200, response.get_json()
    assert response.request.content_length is None  # streamed: the cap cannot be checked up front
    assert link_tokens(app) == 1


@pytest.mark.parametrize(
    "body",
    [
        VALID + b" " * (2 * CAP),  # a valid body, then 2 MiB of spaces: made a Link token before
        b'"' + b"x" * (2 * CAP) + b'"',  # one 2 MiB string: was "not valid JSON" (its cut prefix)
        VALID + b" " * (CAP - len(VALID) + 1),  # one byte over
    ],
    ids=["valid-then-2MiB-of-spaces", "2MiB-string", "one-byte-over"],
)
def test_a_chunked_body_over_the_cap_is_413_and_nothing_is_made(app, api, body):
    response = chunked(api, "/link_tokens", body)
    error = assert_error(response, 413, "INVALID_REQUEST_PARAMETERS", "BODY_TOO_LARGE")
    # The limit is named (werkzeug's "exceeds the capacity limit" named none).
    assert error["message"] == "The request body is larger than this API accepts (1,048,576 bytes, 1 MiB)."
    assert not error["fields"]
    assert uuid.UUID(response.headers["x-service-request-id"])
    assert link_tokens(app) == 0


def test_a_chunked_body_of_exactly_the_cap_is_read_whole(app, api):
    response = chunked(api, "/link_tokens", VALID + b" " * (CAP - len(VALID)))
    assert response.status_code == 200, response.get_json()
    assert link_tokens(app) == 1


def test_a_chunked_body_over_the_cap_does_not_use_its_idempotency_key(app, api):
    key = {"Idempotency-Key": str(uuid.uuid4())}
    too_large = chunked(api, "/link_tokens", VALID + b" " * (2 * CAP), key)
    assert_error(too_large, 413, "INVALID_REQUEST_PARAMETERS", "BODY_TOO_LARGE")
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(IdempotencyKey)) == 0
    retried = chunked(api, "/link_tokens", VALID, key)
    assert retried.status_code == 200 and "Idempotent-Replayed" not in retried.headers


def test_a_chunked_headless_completion_over_the_cap_is_413_and_link_is_not_driven(api):
    token = api.post("/link_tokens", json=json.loads(VALID)).get_json()["data"]
    body = json.dumps({"platform_id": "p", "credentials": {"username": "user_good", "password": "pass_good"}})
    response = chunked(api, f"/sandbox/link_tokens/{token['id']}/complete", body.encode() + b" " * (2 * CAP))
    assert_error(response, 413, "INVALID_REQUEST_PARAMETERS", "BODY_TOO_LARGE")
