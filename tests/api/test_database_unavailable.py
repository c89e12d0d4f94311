"""A database that is saturated, silent or slow gets a prompt 503 with Retry-After, never a hang or a bare 500."""

from __future__ import annotations

import socket
import threading
import time

import pytest
from flask import request
from sqlalchemy import text

from console import create_app
from console.extensions import db
from tests.conftest import VERSION, Api, assert_error, base_config

pytestmark = [pytest.mark.committing, pytest.mark.both_backends]


def unavailable(response) -> dict:
    error = assert_error(response, 503, "SERVICE_UNAVAILABLE", "SERVICE_UNAVAILABLE")
    assert response.headers["Retry-After"] == "2"
    assert response.headers["x-service-request-id"]
    return error


def assert_unavailable_page(response) -> None:
    assert response.status_code == 503
    assert response.mimetype == "text/html"
    assert response.headers["Retry-After"] == "2"
    assert "Busy, try again" in response.get_data(as_text=True)


@pytest.fixture
def make_app(database_url):
    """`make_app(**settings)`: another app on the test database with its own settings (pool, timeouts)."""
    apps = []

    def make(url: str | None = None, **settings):
        built = create_app({**base_config(url or database_url), **settings})
        apps.append(built)
        return built

    yield make
    for built in apps:
        with built.app_context():
            db.session.remove()
            db.engine.dispose()


def test_no_free_connection_is_a_prompt_503_then_service_resumes(app, workspace, make_app):
    small = make_app(DB_POOL_SIZE=1, DB_POOL_TIMEOUT=0.5)
    api = Api(small.test_client(), workspace.secrets["sandbox"])
    with small.app_context():
        held = db.engine.connect()  # the pool's only connection, as a stuck request would hold it
        try:
            # Answered while the pool's only connection is still held: the pool's timeout answered.
            error = unavailable(api.get("/webhooks"))
            assert "busy" in error["message"]
            assert_unavailable_page(small.test_client().get("/"))
        finally:
            held.close()
    assert api.get("/webhooks").status_code == 200


@pytest.fixture
def silent_server():
    """A TCP port on 127.0.0.1 that accepts connections and never says a word."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    accepted: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            accepted.append(conn)

    threading.Thread(target=accept, daemon=True).start()
    yield listener.getsockname()[1]
    listener.close()
    for conn in accepted:
        conn.close()


def test_a_postgres_that_never_answers_is_a_prompt_503(silent_server):
    silent = create_app(base_config(f"postgresql+psycopg://postgres@127.0.0.1:{silent_server}/x"))
    client = silent.test_client()
    headers = {"x-api-secret": "sk_sandbox_" + "a" * 43, "Service-Version": VERSION}
    started = time.monotonic()
    error = unavailable(client.get("/sandbox/v1/webhooks", headers=headers))
    # The default connect timeout is 3 s: prompt, though not instant; the server would never answer.
    assert time.monotonic() - started < 30
    assert "cannot reach its database" in error["message"]
    # Nothing about the server leaks into the message.
    assert str(silent_server) not in error["message"] and "127.0.0.1" not in error["message"]


def test_a_console_page_on_a_silent_postgres_is_a_friendly_503(silent_server):
    silent = create_app(
        {**base_config(f"postgresql+psycopg://postgres@127.0.0.1:{silent_server}/x"), "DB_CONNECT_TIMEOUT": 2}
    )
    started = time.monotonic()
    assert_unavailable_page(silent.test_client().get("/"))
    assert time.monotonic() - started < 30  # its 2 s connect timeout; the server would never answer


def postgres_only(database_url: str) -> None:
    if not database_url.startswith("postgresql"):
        pytest.skip("PostgreSQL only: statement timeouts (the postgres variant runs with TEST_DATABASE_URL)")


def test_a_statement_beyond_the_statement_timeout_is_a_503(app, workspace, make_app, database_url):
    postgres_only(database_url)
    slow = make_app(DB_STATEMENT_TIMEOUT=300)

    @slow.before_request
    def _slow_query():
        if request.path.startswith("/sandbox/v1/"):
            db.session.execute(text("SELECT pg_sleep(60)"))

    api = Api(slow.test_client(), workspace.secrets["sandbox"])
    started = time.monotonic()
    unavailable(api.get("/webhooks"))
    assert time.monotonic() - started < 30  # the 300 ms statement timeout, not the 60 s sleep


def test_postgres_sessions_carry_the_statement_timeout(app, make_app, database_url):
    postgres_only(database_url)
    with make_app().app_context():
        assert db.session.execute(text("SHOW statement_timeout")).scalar() == "5s"
    with make_app(DB_STATEMENT_TIMEOUT=0).app_context():
        assert db.session.execute(text("SHOW statement_timeout")).scalar() == "0"
