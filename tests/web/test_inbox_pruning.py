"""The built-in inbox's cap per workspace: the worker keeps each workspace's newest `INBOX_KEEP` messages."""

from __future__ import annotations

import uuid
from datetime import timedelta

from console.core.timeutil import utcnow
from console.extensions import db
from console.web.webhooks import inbox
from console.web.webhooks import inbox_pruning as pruning
from console.web.webhooks.models import InboxMessage
from console.workspaces.services import create_workspace
from tests import caps


def _add(app, workspace_id, count: int, *, start, **fields) -> list[uuid.UUID]:
    """`count` messages a second apart from `start` on, oldest first; their ids."""
    with app.app_context():
        rows = [
            InboxMessage(
                workspace_id=uuid.UUID(str(workspace_id)),
                received_at=start + timedelta(seconds=i),
                body="x" * 100,
                **fields,
            )
            for i in range(count)
        ]
        db.session.add_all(rows)
        db.session.commit()
        return [row.id for row in rows]


def _ids(app, workspace_id) -> set[uuid.UUID]:
    return caps.row_ids(app, InboxMessage, workspace_id)


def _prune(app, **kwargs) -> int:
    return caps.prune(app, pruning.CAP, **kwargs)


def test_a_flood_of_unsigned_posts_leaves_each_workspace_its_newest_messages(app, workspace):
    app.config["INBOX_KEEP"] = 4
    start = utcnow() - timedelta(hours=1)
    flood = _add(app, workspace.id, 4 + 9, start=start, verify_error="bad signature")
    with app.app_context():
        neighbour = create_workspace("Neighbour").id
        db.session.commit()
    quiet = _add(app, neighbour, 2, start=start)

    assert _prune(app, batch=4) == 9
    assert _ids(app, workspace.id) == set(flood[-4:])
    assert _ids(app, neighbour) == set(quiet)
    assert _prune(app) == 0


def test_the_newest_verified_event_and_each_webhooks_last_delivery_outlive_the_cap(app, workspace):
    app.config["INBOX_KEEP"] = 3
    start = utcnow() - timedelta(hours=2)
    hook = str(uuid.uuid4())
    [event] = _add(app, workspace.id, 1, start=start, verified=True, event_id="e1", webhook_id=hook)
    [check] = _add(
        app,
        workspace.id,
        1,
        start=start + timedelta(minutes=1),
        verified=True,
        conformance=True,
        webhook_id=hook,
    )
    # A forged webhook id on unsigned posts earns nothing.
    _add(app, workspace.id, 5, start=start + timedelta(minutes=2), webhook_id=str(uuid.uuid4()))
    flood = _add(app, workspace.id, 10, start=start + timedelta(minutes=10))

    assert _prune(app) == 17 - 3 - 2  # all but the newest 3 and the two spared
    assert _ids(app, workspace.id) == {event, check, *flood[-3:]}
    with app.app_context():
        ws = uuid.UUID(workspace.id)
        assert inbox.has_verified(ws)
        assert inbox.latest_for_webhook(ws, uuid.UUID(hook)).id == check
