"""Crash safety: SIGKILL a worker process in the middle of a burst of 1,000 events; nothing is lost.

Runs on every configured backend (SQLite always, PostgreSQL when TEST_DATABASE_URL is set).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid

import pytest
from sqlalchemy import func, select

from bench.webhooks import ROOT, Receiver
from console.clock.services import now
from console.events.services import record_event
from console.extensions import db
from console.keys.models import ApiKey
from console.webhooks import services
from console.webhooks.models import WebhookDelivery
from console.workspaces.models import Workspace
from tests.factories import webhook_body
from tests.waiting import wait_for

pytestmark = [pytest.mark.committing, pytest.mark.both_backends]

EVENTS = 1000
LEASE_SECONDS = 3  # longer than an attempt (WEBHOOK_TIMEOUT_SECONDS 2), as the worker requires


def start_worker(
    app, tmp_path, *, timeout: float = 2, lease: float | None = LEASE_SECONDS
) -> subprocess.Popen:
    """A worker process; `lease` None keeps the worker's own (longer than an attempt can last)."""
    env = {
        **os.environ,
        "DATABASE_URL": app.config["SQLALCHEMY_DATABASE_URI"],
        "SECRET_KEY": app.config["SECRET_KEY"],
        "CONSOLE_INSTANCE_DIR": str(tmp_path),
        "WEBHOOK_TIMEOUT_SECONDS": str(timeout),
    }
    if lease is not None:
        env["WEBHOOK_LEASE_SECONDS"] = str(lease)
    return subprocess.Popen([sys.executable, "-m", "console.webhooks.delivery_loop"], cwd=ROOT, env=env)


@pytest.mark.slow
def test_sigkill_mid_burst_loses_nothing(app, workspace, tmp_path):
    with app.app_context(), Receiver() as rx:
        ws = db.session.get(Workspace, uuid.UUID(workspace.id))
        key = db.session.get(ApiKey, uuid.UUID(workspace.key_ids["sandbox"]))
        body = webhook_body(rx.url)
        services.create_webhook(key, body)
        db.session.commit()
        worker = start_worker(app, tmp_path)
        try:
            written: list[str] = []
            killed = False
            for batch in range(EVENTS // 50):
                for _ in range(50):
                    event = record_event(
                        workspace_id=ws.id, mode="sandbox", type="account.added", payload={}, at=now(ws)
                    )
                    written.append(str(event.id))
                db.session.commit()
                time.sleep(0.05)  # a burst of ~1,000 events/s, so the worker is busy when killed
                # Mid-burst: after some deliveries, with half the events still to be written.
                if not killed and (len(rx.requests) >= 100 or batch == EVENTS // 100):
                    worker.send_signal(signal.SIGKILL)  # mid-burst: claims held, results unrecorded
                    worker.wait(60)
                    killed = True
                if not killed and batch == 0:
                    assert wait_for(lambda: rx.requests, 60), "the worker never delivered"
            received_before_restart = len(rx.requests)
            worker = start_worker(app, tmp_path)
            assert wait_for(lambda: set(written) <= set(rx.event_ids()), 120), (
                f"missing {len(set(written) - set(rx.event_ids()))} of {EVENTS}"
            )

            def settled():
                db.session.expire_all()
                return (
                    db.session.scalar(select(func.count()).where(WebhookDelivery.status != "delivered")) == 0
                )

            assert wait_for(settled, 60)
        finally:
            worker.send_signal(signal.SIGTERM)
            assert worker.wait(60) == 0
    assert len(set(rx.event_ids())) == EVENTS
    assert 0 < received_before_restart < EVENTS
