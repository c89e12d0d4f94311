"""The event log's cap per workspace: the worker keeps each workspace's newest `EVENTS_KEEP` events, and an
older event goes with its deliveries and their attempts, unless a delivery of it is still to be made."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from sqlalchemy import func, select

from console.core.timeutil import utcnow
from console.db import capping
from console.events import pruning
from console.events.models import Event
from console.extensions import db
from console.webhooks.models import DELIVERED, FAILED, PENDING, Webhook, WebhookAttempt, WebhookDelivery
from console.workspaces.services import create_workspace
from tests import caps

# The cascade from an event to its deliveries and attempts is the database's (ON DELETE CASCADE): both backends.
pytestmark = pytest.mark.both_backends


def _webhook(workspace) -> Webhook:
    now = utcnow()
    hook = Webhook(
        workspace_id=uuid.UUID(workspace.id),
        mode="sandbox",
        api_key_id=uuid.UUID(workspace.key_ids["sandbox"]),
        url="https://hooks.example.com/in",
        enabled_events=["account.added"],
        version="2023-11-22",
        created_at=now,
        updated_at=now,
    )
    db.session.add(hook)
    db.session.flush()
    return hook


def _add_events(
    app, workspace, count: int, *, status: str = DELIVERED, workspace_id=None, hours_ago: int = 1
) -> list[uuid.UUID]:
    """`count` events a second apart from `hours_ago` on, oldest first, each with one delivery in `status` and one attempt."""
    with app.app_context():
        owner = uuid.UUID(str(workspace_id or workspace.id))
        hook = _webhook(workspace) if workspace_id is None else None
        start = utcnow() - timedelta(hours=hours_ago)
        ids = []
        for i in range(count):
            at = start + timedelta(seconds=i)
            event = Event(workspace_id=owner, mode="sandbox", type="account.added", payload={}, created_at=at)
            db.session.add(event)
            db.session.flush()
            ids.append(event.id)
            if hook is None:
                continue
            delivery = WebhookDelivery(
                workspace_id=owner, mode="sandbox", event_id=event.id, webhook_id=hook.id, status=status,
                due_at=at, run_after=at, created_at=at, attempt_count=1,
            )  # fmt: skip
            db.session.add(delivery)
            db.session.flush()
            attempt = WebhookAttempt(
                delivery_id=delivery.id, webhook_id=hook.id, event_id=event.id, number=1, at=at,
                sent_timestamp=0, outcome="delivered" if status == DELIVERED else "retry", latency_ms=5,
            )  # fmt: skip
            db.session.add(attempt)
        db.session.commit()
        return ids


def _count(app, model, column, ids) -> int:
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(model).where(column.in_(ids)))


def _prune(app) -> int:
    return caps.prune(app, pruning.CAP)


def test_a_pass_keeps_each_workspace_its_newest_events_with_their_deliveries_and_attempts(app, workspace):
    app.config["EVENTS_KEEP"] = 4
    ids = _add_events(app, workspace, 10)
    with app.app_context():
        neighbour = create_workspace("Neighbour").id
        db.session.commit()
    theirs = _add_events(app, workspace, 3, workspace_id=neighbour)

    assert _prune(app) == 6
    assert _count(app, Event, Event.id, ids) == 4
    assert _count(app, Event, Event.id, ids[-4:]) == 4  # the newest stay
    # What went, went whole: no delivery or attempt of a deleted event is left behind.
    assert _count(app, WebhookDelivery, WebhookDelivery.event_id, ids[:6]) == 0
    assert _count(app, WebhookAttempt, WebhookAttempt.event_id, ids[:6]) == 0
    assert _count(app, WebhookDelivery, WebhookDelivery.event_id, ids[-4:]) == 4
    assert _count(app, Event, Event.id, theirs) == 3  # under the cap: untouched
    assert _prune(app) == 0  # a second pass finds nothing more to do


def test_an_event_with_a_delivery_still_to_make_is_spared_until_it_ends(app, workspace):
    app.config["EVENTS_KEEP"] = 2
    waiting = _add_events(
        app, workspace, 3, status=PENDING, hours_ago=2
    )  # the oldest: retries still scheduled
    done = _add_events(app, workspace, 3, status=FAILED)

    assert _prune(app) == 1  # only done[0]: the pending ones are older but spared
    assert _count(app, Event, Event.id, waiting) == 3
    assert _count(app, WebhookDelivery, WebhookDelivery.event_id, waiting) == 3
    assert _count(app, Event, Event.id, done) == 2

    with app.app_context():
        for delivery in db.session.scalars(
            select(WebhookDelivery).where(WebhookDelivery.event_id.in_(waiting))
        ):
            delivery.status = DELIVERED
        db.session.commit()
    assert _prune(app) == 3
    assert _count(app, Event, Event.id, waiting) == 0


def test_a_workspace_whose_cap_fails_is_logged_and_the_others_are_still_capped(
    app, workspace, monkeypatch, caplog
):
    app.config["EVENTS_KEEP"] = 1
    ids = _add_events(app, workspace, 3)
    with app.app_context():
        broken = create_workspace("Broken").id
        db.session.commit()
    _add_events(app, workspace, 3, workspace_id=broken)
    real = capping.Cap.cap_workspace

    def failing_for_one(cap, workspace_id, keep, **kwargs):
        if workspace_id == broken:
            raise RuntimeError("disk I/O error")
        return real(cap, workspace_id, keep, **kwargs)

    monkeypatch.setattr(capping.Cap, "cap_workspace", failing_for_one)
    assert _prune(app) == 2
    assert _count(app, Event, Event.id, ids) == 1
    assert f"Could not cap the events of workspace {broken}" in caplog.text


def test_a_workspace_under_its_cap_loses_nothing_when_asked_directly(app, workspace):
    ids = _add_events(app, workspace, 3)
    with app.app_context():
        assert pruning.CAP.cap_workspace(uuid.UUID(workspace.id), 10) == 0
    assert _count(app, Event, Event.id, ids) == 3


def test_the_loop_survives_a_failed_pass_and_stops_when_asked(app, monkeypatch, caplog):
    import threading

    passes = []
    stop = threading.Event()

    def broken_pass():
        passes.append(1)
        if len(passes) == 2:
            stop.set()  # asked to stop during its pass: the loop ends without waiting out its minute
        raise RuntimeError("database is locked")

    monkeypatch.setattr(pruning.EventPruneLoop, "prune", lambda _loop: broken_pass())
    loop = pruning.EventPruneLoop(app)
    assert loop.run_once() == 0  # logged, not raised: the loop goes on
    assert "Capping the events failed" in caplog.text

    loop.run_forever(stop)  # a pass at start, which fails and asks it to stop
    assert len(passes) == 2


def test_a_resend_between_two_batches_keeps_its_event(app, workspace, monkeypatch):
    """The check is made by each batch's DELETE, not once before the first: an old event resent while the
    cap is deleting (its delivery back to pending) is not deleted by a later batch."""
    ids = _add_events(app, workspace, 4)
    resent = ids[2]  # the third oldest: past the cap, deleted by the third batch of one

    def a_resend_comes_in(_seconds):  # between two batches (delete_older yields after each full one)
        delivery = db.session.scalars(select(WebhookDelivery).where(WebhookDelivery.event_id == resent)).one()
        delivery.status = PENDING
        db.session.commit()

    monkeypatch.setattr(capping.time, "sleep", a_resend_comes_in)
    with app.app_context():
        assert pruning.CAP.cap_workspace(uuid.UUID(workspace.id), 1, batch=1) == 2
    assert _count(app, Event, Event.id, ids) == 2
    assert _count(app, Event, Event.id, [resent, ids[-1]]) == 2
