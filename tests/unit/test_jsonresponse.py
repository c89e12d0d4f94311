"""JSON responses go through orjson (console.core.jsonresponse) and say what Flask's own encoder said."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from decimal import Decimal

import orjson
import pytest
from flask import Flask
from flask.json.provider import DefaultJSONProvider

from console.core.jsonresponse import JSONProvider


@pytest.fixture
def plain():
    """A bare Flask app with our provider, and Flask's own provider to compare with."""
    flask_app = Flask(__name__)
    flask_app.json = JSONProvider(flask_app)
    return flask_app, DefaultJSONProvider(flask_app)


def _body(flask_app: Flask, provider, value) -> bytes:
    with flask_app.app_context():
        return provider.response(value).get_data()


def test_the_app_answers_json_through_orjson(app, client, workspace, monkeypatch):
    assert isinstance(app.json, JSONProvider)
    calls = []
    real = orjson.dumps
    monkeypatch.setattr(orjson, "dumps", lambda *a, **k: calls.append(1) or real(*a, **k))
    answer = client.get(
        "/sandbox/v1/jobs",
        query_string={"link_token_id": str(uuid.uuid4())},
        headers={"x-api-secret": workspace.secrets["sandbox"], "Service-Version": "2023-11-22"},
    )
    assert answer.status_code == 200 and calls
    assert answer.get_json() == {"data": [], "meta": {"count": 0, "next_cursor": None}}


def test_the_same_bytes_as_flask_for_ascii_documents(plain):
    flask_app, flask_own = plain
    document = {
        "zeta": 1,
        "alpha": [True, None, 1.5, {"b": "x", "a": "y"}],
        "id": uuid.UUID("12345678-1234-5678-1234-567812345678"),
        "when": datetime(2026, 11, 26, 10, 0, tzinfo=UTC),  # Flask's own date format, not orjson's
        "amount": Decimal("10.25"),
    }
    ours = _body(flask_app, flask_app.json, document)
    assert ours == _body(flask_app, flask_own, document)
    assert ours.endswith(b"\n") and b'"when":"Thu, 26 Nov 2026 10:00:00 GMT"' in ours


def test_what_orjson_refuses_falls_back_to_flask(plain):
    flask_app, flask_own = plain
    document = {"big": 2**70}  # beyond 64 bits: orjson raises, the json module encodes it exactly
    assert json.loads(_body(flask_app, flask_app.json, document)) == document
    assert _body(flask_app, flask_app.json, document) == _body(flask_app, flask_own, document)
    with pytest.raises(TypeError):  # what neither can encode still fails as it did
        _body(flask_app, flask_app.json, {"x": object()})


def test_non_ascii_is_utf8_and_reads_back_the_same(plain):
    flask_app, _ = plain
    document = {"org_name": "Café Ünïcode ✓"}
    body = _body(flask_app, flask_app.json, document)
    assert "Café".encode() in body
    assert json.loads(body) == document


def test_debug_mode_keeps_flasks_indented_output(plain):
    flask_app, flask_own = plain
    flask_app.debug = True
    assert _body(flask_app, flask_app.json, {"b": 1, "a": 2}) == _body(flask_app, flask_own, {"b": 1, "a": 2})
    assert b"\n  " in _body(flask_app, flask_app.json, {"a": 1})
