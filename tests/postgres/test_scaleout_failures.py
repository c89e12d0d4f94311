"""The scale-out form's failure promises (docs/operations.md#beyond-one-machine), on a real PostgreSQL.

A PostgreSQL restart is simulated by terminating this test database's server-side connections
(`pg_terminate_backend`): the connections the app holds die the way a restart kills them, and nothing else on
the server is touched.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid

import psycopg
import pytest
from sqlalchemy import func, select

from bench.webhooks import ROOT, Receiver
from console.clock.services import now
from console.db import postgres
from console.events.services import record_event
from console.extensions import db
from console.keys.models import ApiKey
from console.webhooks import services
from console.webhooks.models import WebhookDelivery
from console.workspaces.models import Workspace
from tests.factories import webhook_body
from tests.waiting import wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.committing]


def terminate_connections(app, *, application_name: str | None = None) -> int:
    """Kill the server side of this database's connections but the one asking (all, or one program's)."""
    with app.app_context():
        url = db.engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(url, autocommit=True) as admin:
        return admin.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            " AND (%s::text IS NULL OR application_name = %s::text)",
            (application_name, application_name),
        ).fetchone()[0]


def console_worker(app, tmp_path) -> subprocess.Popen:
    """`console worker`, as the scale-out commands start it: this database, this app's secret key."""
    env = {
        **os.environ,
        "DATABASE_URL": app.config["SQLALCHEMY_DATABASE_URI"],
        "SECRET_KEY": app.config["SECRET_KEY"],
        "CONSOLE_INSTANCE_DIR": str(tmp_path),
    }
    return subprocess.Popen(
        [sys.executable, "-c", "from console.cli import main; main()", "worker"], cwd=ROOT, env=env
    )


def test_a_dead_connection_used_within_the_idle_ping_is_one_503_then_the_pool_reconnects(
    pg_app, api, monkeypatch
):
    # However slow this machine is, the pooled connection counts as just used, so it is handed out unpinged.
    monkeypatch.setattr(postgres, "IDLE_PING_SECONDS", 3600.0)
    assert api.get("/accounts").status_code == 200
    assert terminate_connections(pg_app) >= 1
    response = api.get("/accounts")
    assert response.status_code == 503, response.get_data(as_text=True)
    assert response.headers["Retry-After"]
    assert response.get_json()["error"]["code"] == "SERVICE_UNAVAILABLE"
    assert "psycopg" not in response.get_data(as_text=True)  # no internals in the answer
    assert api.get("/accounts").status_code == 200  # the pool threw the dead connections away


def test_a_restart_under_a_pool_of_several_connections_is_still_one_503(pg_app, api, monkeypatch):
    """A serving process holds as many pooled connections as its requests ran at once: the first request
    to meet a dead one must throw them all away (the docs promise one 503 per process), not one each."""
    monkeypatch.setattr(postgres, "IDLE_PING_SECONDS", 3600.0)
    assert api.get("/accounts").status_code == 200
    with pg_app.app_context():
        held = [db.engine.connect() for _ in range(4)]  # four at once, as four requests in flight would
        for connection in held:
            connection.exec_driver_sql("SELECT 1")
        for connection in held:
            connection.close()
        assert db.engine.pool.checkedin() >= 4
    assert terminate_connections(pg_app) >= 4
    codes = [api.get("/accounts").status_code for _ in range(5)]
    assert codes == [503, 200, 200, 200, 200], codes


@pytest.mark.slow
def test_a_worker_whose_connections_die_carries_on_delivering(pg_app, workspace, tmp_path):
    with pg_app.app_context(), Receiver(lambda _record: (200, b"ok")) as rx:
        key = db.session.get(ApiKey, uuid.UUID(workspace.key_ids["sandbox"]))
        services.create_webhook(key, webhook_body(rx.url))
        db.session.commit()

        def delivered() -> int:
            db.session.expire_all()
            return db.session.scalar(select(func.count()).where(WebhookDelivery.status == "delivered"))

        def send_one() -> None:
            ws = db.session.get(Workspace, uuid.UUID(workspace.id))
            record_event(workspace_id=ws.id, mode="sandbox", type="account.added", payload={}, at=now(ws))
            db.session.commit()

        worker = console_worker(pg_app, tmp_path)
        try:
            send_one()
            assert wait_for(lambda: delivered() == 1, 60)
            db.session.remove()
            assert terminate_connections(pg_app) >= 1  # the worker's loops held connections: all dead now
            db.engine.dispose()  # this process's own pooled connections died too; the worker is under test
            send_one()
            assert wait_for(lambda: delivered() == 2, 60), (
                "the worker stopped delivering after its connections died"
            )
            assert worker.poll() is None  # still running: a lost connection is one failed round, not the end
        finally:
            worker.send_signal(signal.SIGTERM)
            assert worker.wait(60) == 0
