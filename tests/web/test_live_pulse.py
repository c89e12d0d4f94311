"""The live pulse: it changes with every change a live page shows, and its cost does not grow with the workspace."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from sqlalchemy import insert, select, update

from bench import console_pages
from console.core.timeutil import utcnow
from console.events.models import Event
from console.extensions import db
from console.scheduler.models import ScheduledTask
from console.web.shared import live, workspace_session
from console.webhooks.models import WebhookDelivery
from console.workspaces.models import Workspace


def _seeded_workspace(app, events: int) -> uuid.UUID:
    """A visitor's workspace (key, inbox webhook) with `events` delivered events, as the page benchmark seeds it."""
    with app.test_request_context("/"):
        workspace_id = workspace_session.start_new_workspace().id
        db.session.commit()
    console_pages.seed(app, workspace_id, events)
    return workspace_id


def _pulse(workspace_id: uuid.UUID) -> str:
    db.session.expire_all()
    return live.pulse(db.session.get(Workspace, workspace_id))


def _task(workspace_id, **values) -> dict:
    now = utcnow()
    row = {"id": uuid.uuid4(), "workspace_id": workspace_id, "kind": "job.retry", "payload": {}, "due_at": now,
           "run_after": now, "status": "pending", "created_at": now}  # fmt: skip
    return {**row, **values}


def test_every_change_a_live_page_shows_moves_the_pulse_and_nothing_else_does(app):
    workspace_id = _seeded_workspace(app, 20)
    with app.app_context():
        seen = [_pulse(workspace_id)]

        def moved() -> bool:
            now = _pulse(workspace_id)
            changed = now != seen[-1]
            seen.append(now)
            return changed

        assert not moved()  # asked twice, nothing in between

        # A new event (with its delivery waiting).
        event = db.session.execute(
            select(Event).where(Event.workspace_id == workspace_id).limit(1)
        ).scalar_one()
        event_id = uuid.uuid4()
        values = {c.key: getattr(event, c.key) for c in Event.__table__.c}
        db.session.execute(insert(Event), [{**values, "id": event_id, "created_at": utcnow()}])
        db.session.commit()
        assert moved()

        # A delivery attempt that delivered a waiting delivery... and one more attempt, still delivered.
        delivery = db.session.execute(
            select(WebhookDelivery).where(WebhookDelivery.workspace_id == workspace_id).limit(1)
        ).scalar_one()
        db.session.execute(
            update(WebhookDelivery).where(WebhookDelivery.id == delivery.id).values(status="pending")
        )
        db.session.commit()
        assert moved()  # a resend: one more waits
        db.session.execute(
            update(WebhookDelivery)
            .where(WebhookDelivery.id == delivery.id)
            .values(status="failed", last_attempt_at=utcnow() + timedelta(seconds=1))
        )
        db.session.commit()
        assert moved()  # its attempt failed for good
        db.session.execute(
            update(WebhookDelivery)
            .where(WebhookDelivery.id == delivery.id)
            .values(status="delivered", last_attempt_at=utcnow() + timedelta(seconds=2))
        )
        db.session.commit()
        assert moved()  # a later attempt on a row that was not waiting

        # A task scheduled; then it runs and schedules the next one (as many wait as before).
        task = _task(workspace_id)
        db.session.execute(insert(ScheduledTask), [task])
        db.session.commit()
        assert moved()
        db.session.execute(
            update(ScheduledTask)
            .where(ScheduledTask.id == task["id"])
            .values(status="done", finished_at=utcnow())
        )
        db.session.execute(insert(ScheduledTask), [_task(workspace_id)])
        db.session.commit()
        assert moved()

        # The workspace clock moved.
        db.session.execute(
            update(Workspace).where(Workspace.id == workspace_id).values(clock_offset_seconds=3600)
        )
        db.session.commit()
        assert moved()

        # Another workspace's activity is not this one's.
        other = _seeded_workspace(app, 3)
        assert not moved()
        db.session.execute(insert(ScheduledTask), [_task(other)])
        db.session.commit()
        assert not moved()


def test_the_pulse_reads_as_much_with_2000_events_as_with_20(app):
    """Counted in SQLite VM steps (deterministic, unlike time): the old pulse's counts and sums read every row."""
    with app.app_context():
        if db.engine.dialect.name != "sqlite":
            pytest.skip("SQLite's VM step counter; the statement is the same on PostgreSQL")
    small, large = _seeded_workspace(app, 20), _seeded_workspace(app, 2000)

    def steps(workspace_id) -> int:
        counted = [0]

        def tick() -> int:
            counted[0] += 1
            return 0  # go on

        with app.app_context():
            raw = db.session.connection().connection.dbapi_connection
            statement = live.pulse_statement(workspace_id)
            db.session.execute(statement).one()  # compiled and cached before counting
            raw.set_progress_handler(tick, 1)
            try:
                db.session.execute(statement).one()
            finally:
                raw.set_progress_handler(None, 1)
            db.session.rollback()
        return counted[0]

    few, many = steps(small), steps(large)
    assert few > 0
    # 100 times the rows; the old pulse took ~60 times the steps.
    assert many < few * 1.5, (few, many)
