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
from tests.factories import LINK_TOKEN

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


def test_another_program_holding_sqlites_write_lock_is_a_busy_503_then_service_resumes(
    app, workspace, make_app, database_url, short_busy_timeout
):
    """A developer's SQLite GUI (or a script) in a write transaction on the instance's database: writes wait
    their busy timeout, then answer 503 saying the service is busy, not that it "cannot reach its database"
    (it answers; reads go on); once the lock is released, writes succeed again by themselves."""
    if not database_url.startswith("sqlite"):
        pytest.skip("SQLite's write lock")
    import sqlite3

    small = make_app()
    api = Api(small.test_client(), workspace.secrets["sandbox"])
    other = sqlite3.connect(database_url.removeprefix("sqlite:///"), isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        error = unavailable(api.post("/link_tokens", LINK_TOKEN))
        assert error["message"] == "The service is busy right now. Try again in a few seconds."
        assert api.get("/jobs").status_code == 200  # reads are not blocked by the write lock
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert api.post("/link_tokens", LINK_TOKEN).status_code == 200


def test_a_database_that_cannot_be_written_is_a_503_saying_changes_cannot_be_saved(
    app, workspace, make_app, database_url, caplog, monkeypatch
):
    """A full disk or a read-only database file: SQLite refuses every write (here its connections are made
    read-only: the tests run as root, whom file modes do not stop). Reads go on; a write answers 503 saying
    changes cannot be saved (not that the database cannot be reached), and the log says, as an error, what
    the operator must do."""
    if not database_url.startswith("sqlite"):
        pytest.skip("SQLite's own refusals")
    from console.db import sqlite as sqlite_db

    monkeypatch.setattr(sqlite_db, "PRAGMAS", (*sqlite_db.PRAGMAS, "PRAGMA query_only=ON"))
    read_only = make_app()
    api = Api(read_only.test_client(), workspace.secrets["sandbox"])
    assert api.get("/jobs").status_code == 200
    with caplog.at_level("ERROR", logger="console.api.errors"):
        error = unavailable(api.post("/link_tokens", LINK_TOKEN))
    assert error["message"] == "The service cannot save changes right now. Try again later."
    assert "readonly database; free space where the database is, or make it writable" in caplog.text
