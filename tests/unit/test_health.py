"""GET /healthz: the database (with a short timeout), the rate-limit storage and the worker's heartbeat."""

from __future__ import annotations

import os
import socket
import threading
import time
from datetime import timedelta

import pytest

from console import create_app
from console.extensions import db
from console.health import services as health
from console.health.models import WorkerHeartbeat
from tests.conftest import Api, base_config
from tests.factories import LINK_TOKEN

pytestmark = [pytest.mark.committing, pytest.mark.both_backends]


def _beat(app, seconds_ago: float = 0.0) -> str:
    with app.app_context():
        worker_id = health.new_worker_id()
        health.beat(worker_id)
        db.session.get(WorkerHeartbeat, worker_id).last_seen -= timedelta(seconds=seconds_ago)
        db.session.commit()
        return worker_id


def test_healthz_needs_no_key_and_reports_each_part(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.headers["Cache-Control"] == "no-store"
    body = response.get_json()
    assert body["pid"] == os.getpid()
    assert body["database"]["ok"] is True and body["database"]["latency_ms"] >= 0
    assert body["rate_limits"] == {"ok": True, "storage": "memory", "shared": False, "fallback": False}
    # No worker has ever written a heartbeat: still serving (200), but not all well.
    assert body["worker"]["ok"] is False and body["worker"]["last_seen"] is None
    assert body["status"] == "degraded"


def test_a_fresh_heartbeat_is_a_live_worker_and_an_old_one_is_stale(app, client):
    _beat(app, seconds_ago=health.STALE_AFTER_SECONDS + 5)
    worker = client.get("/healthz").get_json()["worker"]
    assert worker["ok"] is False and worker["seconds_ago"] >= health.STALE_AFTER_SECONDS

    _beat(app, seconds_ago=1)
    body = client.get("/healthz").get_json()
    assert body["status"] == "ok"
    assert body["worker"]["ok"] is True and body["worker"]["pid"] == os.getpid()
    assert body["worker"]["seconds_ago"] < health.STALE_AFTER_SECONDS  # fresh by its own measure


def test_a_heartbeat_updates_its_own_row_and_forgets_long_gone_workers(app):
    gone = _beat(app, seconds_ago=2 * 86400)
    with app.app_context():
        worker_id = health.new_worker_id()
        health.beat(worker_id)
        db.session.commit()
        first = db.session.get(WorkerHeartbeat, worker_id).last_seen
        time.sleep(0.01)
        health.beat(worker_id)
        db.session.commit()
        rows = db.session.query(WorkerHeartbeat).all()
        assert [r.worker_id for r in rows] == [worker_id]
        assert rows[0].last_seen > first and rows[0].started_at == first
        assert gone not in {r.worker_id for r in rows}


def test_healthz_is_not_rate_limited(app, client):
    # The question is the rate limit, not the machine's speed: a database probe that takes longer than its
    # 2 s under load answered 503 here once. Its wait is a backstop now (the timeout has its own test below),
    # so only a database that does not answer at all could fail this, and a 429 or a Retry-After never may.
    app.extensions["database_probe"].timeout = 120
    responses = [client.get("/healthz") for _ in range(30)]
    assert [r.status_code for r in responses] == [200] * 30
    assert not any("Retry-After" in r.headers for r in responses)


def _listening_socket_that_never_answers():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    accepted = []
    stop = threading.Event()

    def accept():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except TimeoutError:
                continue
            except OSError:  # closed by the test
                return

    threading.Thread(target=accept, daemon=True).start()
    return server, stop, accepted


def test_a_database_that_never_answers_is_a_prompt_503():
    server, stop, accepted = _listening_socket_that_never_answers()
    port = server.getsockname()[1]
    # A connect timeout longer than the probe's, so the first probe still hangs when the second check comes.
    config = base_config(f"postgresql+psycopg://nobody:hunter2@127.0.0.1:{port}/console")
    app = create_app({**config, "DB_CONNECT_TIMEOUT": 60})
    try:
        started = time.monotonic()
        response = app.test_client().get("/healthz")
        elapsed = time.monotonic() - started
        assert response.status_code == 503
        body = response.get_json()
        assert body["status"] == "down" and body["database"]["ok"] is False
        assert "no answer within" in body["database"]["error"]
        # The probe's timeout answered, not the connection's (60 s): prompt however busy the machine.
        assert elapsed < 30
        # A second check while the first probe still hangs waits on it instead of starting another.
        threads = threading.active_count()
        assert app.test_client().get("/healthz").status_code == 503
        assert threading.active_count() <= threads  # none started (others may end meanwhile)
        assert "hunter2" not in response.get_data(as_text=True)
    finally:
        stop.set()
        for connection in accepted:
            connection.close()
        server.close()


def test_a_database_that_refuses_is_a_503_without_internals():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    app = create_app(base_config(f"postgresql+psycopg://nobody:hunter2@127.0.0.1:{port}/console"))
    response = app.test_client().get("/healthz")
    assert response.status_code == 503
    text = response.get_data(as_text=True)
    assert response.get_json()["database"] == {"ok": False, "error": "OperationalError"}
    assert "hunter2" not in text and str(port) not in text


def test_redis_unreachable_api_still_serves_and_healthz_says_so(database_url, workspace):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    app = create_app({**base_config(database_url), "RATELIMIT_STORAGE_URI": f"redis://127.0.0.1:{port}/0"})
    client = app.test_client()
    api = Api(client, workspace.secrets["sandbox"])
    primary = app.extensions["ratelimiter"].counters.primary
    tries = []
    real_hit = primary.hit
    primary.hit = lambda *args: (tries.append(1), real_hit(*args))[1]
    statuses = [api.post("/link_tokens", json=LINK_TOKEN).status_code for _ in range(12)]
    assert statuses[:10] == [200] * 10 and set(statuses[10:]) == {429}  # limited per process meanwhile
    assert len(tries) == 1  # Redis tried once, not per request (its retry is a minute away): no wait each
    body = client.get("/healthz").get_json()
    assert body["rate_limits"]["fallback"] is True and body["rate_limits"]["storage"] == "redis"
    assert body["status"] == "degraded"
    with app.app_context():
        db.engine.dispose()


@pytest.mark.skipif(not os.environ.get("TEST_REDIS_URL"), reason="TEST_REDIS_URL not set")
def test_healthz_with_redis_reachable(database_url):
    app = create_app({**base_config(database_url), "RATELIMIT_STORAGE_URI": os.environ["TEST_REDIS_URL"]})
    body = app.test_client().get("/healthz").get_json()
    assert body["rate_limits"] == {"ok": True, "storage": "redis", "shared": True, "fallback": False}
    with app.app_context():
        db.engine.dispose()


def test_a_database_without_the_schema_says_so(tmp_path):
    """A server started on a database `console db upgrade` never ran on: it answers, but every request fails.
    /healthz said `"error": "ProgrammingError"` and "the database did not answer"; it says what to run."""
    app = create_app(base_config(f"sqlite:///{tmp_path / 'empty.db'}"))
    response = app.test_client().get("/healthz")
    assert response.status_code == 503
    body = response.get_json()
    assert body["status"] == "down"
    assert body["database"] == {"ok": False, "error": health.NO_SCHEMA}
    assert "console db upgrade" in body["database"]["error"]
    assert "did not answer" not in response.get_data(as_text=True)


def test_a_heartbeat_from_a_clock_set_back_since_is_no_live_worker(app, client):
    """The machine's clock a year ahead, the worker killed outright (its row stays), the clock corrected: the
    row's `last_seen` is a year in the future. It was the newest, so /healthz said `ok` (seconds_ago 0) for a
    year whether a worker ran or not; a worker that starts forgets it."""
    future = _beat(app, seconds_ago=-365 * 86400)
    body = client.get("/healthz").get_json()
    assert body["worker"]["ok"] is False and body["status"] == "degraded"

    live = _beat(app, seconds_ago=1)
    body = client.get("/healthz").get_json()
    assert body["worker"]["ok"] is True and body["status"] == "ok"
    assert body["worker"]["last_seen"] < "2100"
    with app.app_context():
        assert {r.worker_id for r in db.session.query(WorkerHeartbeat).all()} == {live}
        assert db.session.get(WorkerHeartbeat, future) is None
