"""On PostgreSQL, several worker processes share deliveries (FOR UPDATE SKIP LOCKED): each sent once, never twice at once."""

from __future__ import annotations

import json
import signal
import threading
import time
import uuid
from collections import Counter

import pytest
from sqlalchemy import func, select

from bench.webhooks import Receiver
from console.clock.services import now
from console.events.services import record_event
from console.extensions import db
from console.keys.models import ApiKey
from console.webhooks import services
from console.webhooks.models import WebhookAttempt, WebhookDelivery
from console.workspaces.models import Workspace
from tests.factories import webhook_body
from tests.unit.test_delivery_crash import start_worker, wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.committing]
EVENTS = 400


@pytest.mark.slow
def test_three_workers_send_each_delivery_once(app, workspace, database_url, tmp_path):
    if not database_url.startswith("postgresql"):
        pytest.skip(
            "PostgreSQL only: this is the SQLite variant (the postgres one runs when TEST_DATABASE_URL is set)"
        )
    active: Counter = Counter()
    overlaps: list[str] = []
    lock = threading.Lock()

    def respond(record):
        delivery = (record["headers"]["x-service-webhook-id"], json.loads(record["body"])["event_id"])
        with lock:
            active[delivery] += 1
            if active[delivery] > 1:
                overlaps.append(delivery)
        time.sleep(0.005)  # long enough for concurrent sends of one delivery to overlap
        with lock:
            active[delivery] -= 1
        return 200, b"ok"

    with app.app_context(), Receiver(respond) as rx:
        ws = db.session.get(Workspace, uuid.UUID(workspace.id))
        key = db.session.get(ApiKey, uuid.UUID(workspace.key_ids["sandbox"]))
        body = webhook_body(rx.url)
        services.create_webhook(key, body)
        services.create_webhook(key, body)  # two webhooks: 2 deliveries per event
        db.session.commit()

        def delivered() -> int:
            db.session.expire_all()
            return db.session.scalar(select(func.count()).where(WebhookDelivery.status == "delivered"))

        # Live workers never lose a claim: the worker's own lease (2 x timeout + 30 s), not the crash test's
        # 2 s, which on a loaded machine expired under attempts still queued or in flight; and a timeout long
        # enough that a slow answer from this process's receiver is not a failed attempt (then retried).
        workers = [start_worker(app, tmp_path, timeout=60, lease=None) for _ in range(3)]
        try:
            for _ in range(EVENTS // 50):
                for _ in range(50):
                    record_event(
                        workspace_id=ws.id, mode="sandbox", type="account.added", payload={}, at=now(ws)
                    )
                db.session.commit()
            assert wait_for(lambda: delivered() == 2 * EVENTS, 120)
            time.sleep(0.5)  # anything sent twice would arrive now
        finally:
            for worker in workers:
                worker.send_signal(signal.SIGTERM)
            assert [worker.wait(60) for worker in workers] == [0, 0, 0]
        attempts = db.session.execute(select(WebhookAttempt.webhook_id, WebhookAttempt.event_id)).all()
    pairs = Counter(
        (r["headers"]["x-service-webhook-id"], json.loads(r["body"])["event_id"]) for r in rx.requests
    )
    tried = Counter((str(webhook_id), str(event_id)) for webhook_id, event_id in attempts)
    assert len(pairs) == 2 * EVENTS and overlaps == []  # every delivery sent, never twice at once
    # Each sent once per attempt it made, and with one attempt each (a failed attempt is retried: at least
    # once; with these settings none fails).
    assert tried == pairs and set(pairs.values()) == {1}, {p: n for p, n in pairs.items() if n > 1}
