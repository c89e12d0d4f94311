"""On PostgreSQL: what goes over the wire per API call (console.db.postgres).

Read from libpq's own trace of the connection, so the test sees the messages the server gets: a GET is its
two SELECTs (no BEGIN, no ROLLBACK, no ping), a write still runs in one transaction that commits or rolls
back as a whole, and a connection that sat idle is pinged (and replaced if its server side is gone).
"""

from __future__ import annotations

import tempfile
import threading
import uuid

import psycopg
import pytest
from sqlalchemy import event, select, text

from console.core.timeutil import utcnow
from console.db import postgres
from console.extensions import db
from console.link_tokens.models import LinkToken
from tests.factories import LINK_TOKEN

pytestmark = [pytest.mark.postgres, pytest.mark.committing]


@pytest.fixture
def wire(pg_app):
    with pg_app.app_context():
        traced = Wire(db.engine)
    yield traced
    traced.close()


class Wire:
    """The frontend messages (client -> server) libpq traces, on the connections this thread checks out.

    Only this thread's (the test client's requests): the request log's writer thread writes on its own
    schedule, on its own connection.
    """

    def __init__(self, engine) -> None:
        self.engine = engine
        self.file = tempfile.TemporaryFile("w+")  # noqa: SIM115 (closed by close(), at teardown)
        self.thread = threading.current_thread()
        self.traced: set = set()
        event.listen(engine.pool, "checkout", self._trace)
        event.listen(engine.pool, "checkin", self._untrace)

    def _trace(self, dbapi_connection, _record, _proxy) -> None:
        if threading.current_thread() is self.thread:
            dbapi_connection.pgconn.trace(self.file.fileno())
            self.traced.add(id(dbapi_connection))

    def _untrace(self, dbapi_connection, _record) -> None:
        if dbapi_connection is not None and id(dbapi_connection) in self.traced:
            self.traced.discard(id(dbapi_connection))
            dbapi_connection.pgconn.untrace()

    def close(self) -> None:
        event.remove(self.engine.pool, "checkout", self._trace)
        event.remove(self.engine.pool, "checkin", self._untrace)
        self.file.close()

    def take(self) -> list[str]:
        """The statements sent since the last call: `Query "BEGIN"`-style commands and parsed SQL."""
        self.file.flush()
        self.file.seek(0)
        lines = self.file.read().splitlines()
        self.file.seek(0)
        self.file.truncate()
        sent = []
        for line in lines:
            fields = line.split("\t")
            if len(fields) > 4 and fields[1] == "F" and fields[3] in ("Query", "Parse"):
                sent.append(" ".join(fields[4:]).strip())
        return sent


def test_needs_transaction_lets_only_plain_selects_run_outside_one():
    assert not postgres.needs_transaction("SELECT 1")
    assert not postgres.needs_transaction("  select jobs.id FROM jobs WHERE jobs.id = %(id)s")
    for statement in (
        "INSERT INTO t VALUES (1)",
        "UPDATE t SET a = 1",
        "DELETE FROM t",
        "WITH x AS (DELETE FROM t RETURNING *) SELECT * FROM x",
        "SAVEPOINT sa_1",
        "CREATE TABLE t (a int)",
        "SELECT t.id FROM t WHERE t.id = 1 FOR UPDATE SKIP LOCKED",
        "SELECT t.id FROM t FOR NO KEY UPDATE",
        "SELECT t.id FROM t FOR SHARE",
        "SELECT t.id FROM t\nFOR KEY SHARE",
        # console/db/locking.lock_owner: in autocommit the lock would end with the statement.
        "SELECT pg_advisory_xact_lock(%(pg_advisory_xact_lock_1)s) AS pg_advisory_xact_lock_1",
    ):
        assert postgres.needs_transaction(statement), statement


def test_a_get_is_its_selects_and_nothing_else(wire, api):
    created = api.post("/link_tokens", json=LINK_TOKEN)
    assert created.status_code == 200, created.get_data(as_text=True)
    token_id = created.get_json()["data"]["id"]
    for _ in range(2):  # the second time on a pooled connection, used a moment ago
        wire.take()
        response = api.get(f"/jobs?link_token_id={token_id}")
        assert response.status_code == 200
        sent = wire.take()
        assert len(sent) == 2, sent
        assert all(s.startswith('"" "SELECT') for s in sent), sent


def test_a_post_is_one_transaction_begun_at_its_first_write(wire, api):
    wire.take()
    response = api.post("/link_tokens", json=LINK_TOKEN)
    assert response.status_code == 200
    sent = wire.take()
    assert '"BEGIN"' in sent and sent[-1] == '"COMMIT"', sent
    begin = sent.index('"BEGIN"')
    assert all(s.startswith('"" "SELECT') for s in sent[:begin]), sent
    assert sent[begin + 1].startswith('"" "INSERT'), sent
    assert sent.count('"BEGIN"') == 1


def test_writes_after_a_read_still_roll_back_together(pg_app, workspace):
    with pg_app.app_context():
        ws_id = uuid.UUID(workspace.id)
        assert db.session.scalar(text("SELECT count(*) FROM link_tokens")) == 0  # read: no transaction
        for n in range(2):
            db.session.add(
                LinkToken(
                    workspace_id=ws_id,
                    mode="sandbox",
                    token_hash=f"{n:064x}",
                    org_name="Acme",
                    end_user_id=f"u{n}",
                    required_jobs=["direct_deposit_switch"],
                    targets=[],
                    expires_at=utcnow(),
                )
            )
            db.session.flush()
        assert db.session.scalar(select(db.func.count()).select_from(LinkToken)) == 2
        db.session.rollback()
        assert db.session.scalar(select(db.func.count()).select_from(LinkToken)) == 0


def test_a_locking_select_holds_its_lock_until_commit(pg_app, workspace):
    with pg_app.app_context():
        db.session.execute(text("SELECT id FROM workspaces WHERE id = :id FOR UPDATE"), {"id": workspace.id})
        in_transaction = db.session.connection().connection.dbapi_connection.info.transaction_status
        assert in_transaction != 0  # not IDLE: the row stays locked until the session ends
        db.session.rollback()


def test_an_explicit_autocommit_stays_autocommit(pg_app):
    with pg_app.app_context(), db.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("CREATE TEMPORARY TABLE scratch (a int)"))
        conn.execute(text("INSERT INTO scratch VALUES (1)"))
        assert conn.connection.dbapi_connection.autocommit is True
        assert conn.connection.dbapi_connection.info.transaction_status == 0  # IDLE: committed


def test_an_idle_connection_whose_server_side_died_is_replaced_before_use(pg_app, api, monkeypatch):
    with pg_app.app_context():
        first = db.session.scalar(text("SELECT pg_backend_pid()"))
        db.session.remove()  # back to the pool
        url = db.engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(url, autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", (first,))
    monkeypatch.setattr(postgres, "IDLE_PING_SECONDS", 0.0)  # every pooled connection counts as idle
    response = api.get("/accounts")
    assert response.status_code == 200, response.get_data(as_text=True)


def test_a_recently_used_connection_is_not_pinged(wire, api):
    api.get("/accounts")
    wire.take()
    api.get("/accounts")
    assert not any("SELECT 1" in s for s in wire.take())
