"""One response, one moment: a GET that reads several statements reads them in one snapshot.

No timing decides anything here: a delivery worker's steps (claim a delivery; record its attempt) are
committed from another session exactly between the statements the GET runs (an engine hook on the
request's connection), which is the worst a real worker running beside it could do. Each answer must
then show a state the database was in: a delivery's counters agree with its attempts.
"""

from __future__ import annotations

import threading
import uuid

import pytest
from sqlalchemy import event

from console.events.services import record_event
from console.extensions import db
from console.keys.models import ApiKey
from console.webhooks import delivery, services
from console.webhooks.delivery_loop import Claimer
from console.workspaces.models import Workspace

pytestmark = [pytest.mark.committing, pytest.mark.both_backends]

SUBSCRIBERS = 3


class Worker:
    """The delivery worker, one committed step at a time, in sessions of its own."""

    def __init__(self, app) -> None:
        self.app = app
        self.claimer = Claimer(60, lease_check_seconds=0)
        self.claimed: list = []
        self.steps = 0

    def step(self) -> bool:
        with self.app.app_context():  # a session (and connection) of its own
            if self.claimed:
                job = self.claimed.pop(0)
                signed = delivery.sign_request(job)
                delivery.record([delivery.classify(job, signed, 200, "ok", None, 5)])
            else:
                self.claimed = self.claimer.claim(1)  # one delivery at a time: more moments
                if not self.claimed:
                    db.session.rollback()
                    return False
            db.session.commit()
        self.steps += 1
        return True


@pytest.fixture
def interleaved(app):
    """`worker`: a step of it runs before each statement of the test thread's request that reads deliveries
    or attempts (and before the first of the GET's statements); nothing else of the request's is touched."""
    worker = Worker(app)
    request_thread = threading.get_ident()
    inside = threading.local()

    def before(_conn, _cursor, statement, *_args):
        if threading.get_ident() != request_thread or getattr(inside, "busy", False):
            return
        if "webhook_deliveries" in statement or "webhook_attempts" in statement:
            inside.busy = True
            try:
                worker.step()
            finally:
                inside.busy = False

    with app.app_context():
        engine = db.engine
    event.listen(engine, "before_cursor_execute", before)
    try:
        yield worker
    finally:
        event.remove(engine, "before_cursor_execute", before)


@pytest.fixture
def event_id(app, workspace) -> str:
    """An event with a pending delivery to each of SUBSCRIBERS webhooks (never contacted: the worker
    records each attempt's answer itself)."""
    with app.app_context():
        key = db.session.get(ApiKey, uuid.UUID(workspace.key_ids["sandbox"]))
        for n in range(SUBSCRIBERS):
            services.create_webhook(
                key,
                {
                    "url": f"http://127.0.0.1:9/hook-{n}",
                    "status": "active",
                    "enabled_events": ["account.added"],
                    "version": "2023-11-22",
                },
            )
        ws = db.session.get(Workspace, uuid.UUID(workspace.id))
        recorded = record_event(
            workspace_id=ws.id, mode="sandbox", type="account.added", payload={}, at=ws.created_at
        )
        db.session.commit()
        return str(recorded.id)


def consistent(delivery_json: dict) -> None:
    attempts = delivery_json["attempts"]
    assert delivery_json["attempt_count"] == len(attempts), delivery_json
    if attempts:
        assert delivery_json["last_status_code"] == attempts[-1]["status_code"], delivery_json
        assert delivery_json["status"] == "delivered", delivery_json
    else:
        assert delivery_json["last_status_code"] is None, delivery_json
        assert delivery_json["status"] in ("pending", "delivering"), delivery_json


def test_an_event_read_during_its_deliveries_never_shows_attempts_its_counters_deny(
    api, interleaved, event_id
):
    seen = []
    for _ in range(4 * SUBSCRIBERS):
        response = api.get(f"/events/{event_id}")
        assert response.status_code == 200, response.get_json()
        deliveries = response.get_json()["data"]["deliveries"]
        assert len(deliveries) == SUBSCRIBERS
        for one in deliveries:
            consistent(one)
        seen.append(sorted((d["status"], d["attempt_count"]) for d in deliveries))
        if all(d["status"] == "delivered" for d in deliveries):
            break
    # The worker did run between the reads: every delivery was claimed and recorded meanwhile, and a poll
    # saw some delivered and some not.
    assert interleaved.steps == 2 * SUBSCRIBERS and seen[-1] == [("delivered", 1)] * SUBSCRIBERS, seen
    assert any(len(set(poll)) > 1 for poll in seen), seen


def test_the_event_list_reads_its_page_and_deliveries_in_one_moment(api, interleaved, event_id):
    listed = api.get("/events").get_json()["data"]
    [one] = [e for e in listed if e["id"] == event_id]
    # The worker claimed the deliveries just before the list read them: they were pending when the page was
    # read, and the snapshot shows them so.
    assert interleaved.steps == 1
    assert {d["status"] for d in one["deliveries"]} == {"pending"}
    after = api.get("/events").get_json()["data"]
    [again] = [e for e in after if e["id"] == event_id]
    # Read after the page, the first delivery's attempt (recorded between the two statements) is not shown.
    assert interleaved.steps == 2
    assert sorted(d["status"] for d in again["deliveries"]) == ["delivering", "pending", "pending"]
