"""The console calls the API in-process: no socket, no URL from the visitor's Host, no connection held while
it waits, and still the API's own checks and the request log."""

from __future__ import annotations

import socket
import uuid

import pytest
from sqlalchemy import select

from console import create_app
from console.extensions import db
from console.requestlog.models import RequestLogEntry
from console.webhooks.models import Webhook
from tests.conftest import base_config
from tests.web.conftest import Visitor
from tests.web.test_walkthrough import link_token_form

FORGED = "http://10.0.0.5:8080"


@pytest.fixture
def connects(app, monkeypatch) -> list:
    """Every outgoing connection attempted from Python during the test; each one is refused.

    The app runs as in production (not TESTING), so nothing test-only can pick how the console calls."""
    app.testing = False
    attempts: list = []

    def refuse(_self, address, *args, **kwargs):
        attempts.append(address)
        raise OSError(f"test: no outgoing connection allowed (to {address!r})")

    def refuse_create(address, *args, **kwargs):
        attempts.append(address)
        raise OSError(f"test: no outgoing connection allowed (to {address!r})")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse_create)
    return attempts


def forged_workspace_id(visitor: Visitor) -> uuid.UUID:
    """The workspace of a visitor whose cookies belong to the forged host."""
    with visitor.client.session_transaction(base_url=FORGED) as session:
        return uuid.UUID(session["workspace_id"])


def exchanges(app, workspace_id) -> list[RequestLogEntry]:
    with app.app_context():
        return db.session.scalars(
            select(RequestLogEntry)
            .where(RequestLogEntry.workspace_id == workspace_id)
            .order_by(RequestLogEntry.created_at)
        ).all()


def test_the_walkthrough_works_without_any_outgoing_connection(app, client, connects):
    visitor = Visitor(client)
    visitor.get("/")  # the first visit registers the inbox through POST /v1/webhooks
    created = visitor.post("/walkthrough/link-token", link_token_form(), htmx=True)
    assert created.status_code == 200
    rows = exchanges(app, visitor.workspace_id)
    # The API call had its own request (own `g`): the console page keeps its own request id.
    assert created.headers["x-service-request-id"] != rows[-1].request_id
    assert [(r.step, r.method, r.path, r.status) for r in rows] == [
        ("webhook", "POST", "/sandbox/v1/webhooks", 200),
        ("link_token", "POST", "/sandbox/v1/link_tokens", 200),
    ]
    # The API's own conventions answered: request id, version, the rate limiter's headers.
    for row in rows:
        headers = {k.lower(): v for k, v in row.response_headers.items()}
        assert row.request_id and headers["x-service-request-id"] == row.request_id
        assert headers["service-version"] == "2023-11-22"
        assert headers["x-ratelimit-limit"] == "10"
    assert connects == []


def test_the_api_checks_still_apply_to_console_calls(app, client, connects):
    """Authentication runs for the in-process call: a revoked console key gets the API's 401."""
    from console.keys.models import ApiKey

    visitor = Visitor(client).start()
    with app.app_context():
        from console.core.timeutil import utcnow

        for key in db.session.scalars(select(ApiKey).where(ApiKey.workspace_id == visitor.workspace_id)):
            key.revoked_at = utcnow()
        db.session.commit()
    visitor.post("/walkthrough/link-token", link_token_form(), htmx=True)
    row = exchanges(app, visitor.workspace_id)[-1]
    assert (row.path, row.status) == ("/sandbox/v1/link_tokens", 401)
    assert '"code": "MISSING_API_SECRET"' in row.response_body.replace('":"', '": "')
    assert connects == []


def test_a_forged_host_header_steers_nothing(app, connects):
    visitor = Visitor(app.test_client())
    page = visitor.get("/", base_url=FORGED).get_data(as_text=True)
    created = visitor.post("/walkthrough/link-token", link_token_form(), htmx=True, base_url=FORGED)
    jobs = visitor.post("/walkthrough/jobs", {"link_token_id": "x"}, htmx=True, base_url=FORGED)
    html = page + created.get_data(as_text=True) + jobs.get_data(as_text=True)
    assert connects == []
    assert "10.0.0.5" not in html
    assert "curl -X POST http://127.0.0.1:5000/sandbox/v1/link_tokens" in html
    rows = exchanges(app, forged_workspace_id(visitor))
    assert len(rows) == 3
    assert all(r.url.startswith("http://127.0.0.1:5000/sandbox/v1/") for r in rows)
    with app.app_context():
        hook = db.session.scalars(
            select(Webhook).where(Webhook.workspace_id == forged_workspace_id(visitor))
        ).one()
        assert hook.url.startswith("http://127.0.0.1:5000/inbox/")


def test_public_url_is_what_the_console_shows(app, connects):
    # An IP literal: the sandbox accepts it as a webhook host without any DNS lookup.
    app.config.update(PUBLIC_URL="http://127.0.0.1:9443/", LISTEN_PORT=8123)
    visitor = Visitor(app.test_client())
    visitor.get("/", base_url=FORGED)
    html = visitor.post("/walkthrough/link-token", link_token_form(), htmx=True, base_url=FORGED).get_data(
        as_text=True
    )
    assert "curl -X POST http://127.0.0.1:9443/sandbox/v1/link_tokens" in html
    assert "10.0.0.5" not in html and ":8123" not in html
    with app.app_context():
        hook = db.session.scalars(
            select(Webhook).where(Webhook.workspace_id == forged_workspace_id(visitor))
        ).one()
        assert hook.url.startswith("http://127.0.0.1:9443/inbox/")
    # Only shown: the call itself never left the process.
    assert connects == []
    assert exchanges(app, forged_workspace_id(visitor))[-1].status == 200


def test_without_public_url_the_listen_address_is_shown(app):
    app.config.update(LISTEN_HOST="0.0.0.0", LISTEN_PORT=8123)
    visitor = Visitor(app.test_client()).start()
    html = visitor.get("/").get_data(as_text=True)
    # A wildcard listen address is reached, and so shown, as loopback.
    assert "http://127.0.0.1:8123/sandbox/v1" in html
    assert "0.0.0.0" not in html


@pytest.mark.committing
def test_the_console_holds_no_connection_while_the_api_runs(app, database_url):
    """With a pool of ONE connection, every console action still works: the console request gives its
    connection back before the in-process API call takes one (else the call would wait for itself)."""
    small = create_app({**base_config(database_url), "DB_POOL_SIZE": 1, "DB_POOL_TIMEOUT": 1})
    held_by_others: list[int] = []

    def probe():
        from flask import request

        if "/v1/" in request.path:
            held_by_others.append(db.engine.pool.checkedout())

    # First of all hooks, before the API itself takes a connection to authenticate.
    small.before_request_funcs.setdefault(None, []).insert(0, probe)
    try:
        with small.app_context():
            assert db.engine.pool.size() == 1
        visitor = Visitor(small.test_client())
        visitor.get("/")
        visitor.post("/walkthrough/link-token", link_token_form(), htmx=True)
        visitor.post("/walkthrough/jobs", {"link_token_id": "x"}, htmx=True)
        rows = exchanges(small, visitor.workspace_id)
        assert [r.status for r in rows] == [200, 200, 400]
        assert held_by_others == [0, 0, 0]
    finally:
        with small.app_context():
            db.session.remove()
            db.engine.dispose()
