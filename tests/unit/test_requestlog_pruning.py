"""The request log's cap per workspace: the worker keeps each workspace's newest `REQUEST_LOG_KEEP` rows."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from sqlalchemy import event

from console.core.timeutil import utcnow
from console.extensions import db
from console.requestlog import pruning
from console.requestlog.models import RequestLogEntry
from console.web.requests import queries as requestlog
from console.workspaces.services import create_workspace
from tests import caps

# The batch deletes (a LIMITed subquery, row values compared by time then id) and UUID keys, on both databases.
pytestmark = pytest.mark.both_backends


def _add_rows(app, workspace_id, count: int, *, start, step: str = "", status: int = 200) -> list[uuid.UUID]:
    """`count` rows a second apart from `start` on, oldest first; their ids."""
    with app.app_context():
        rows = [
            RequestLogEntry(
                workspace_id=uuid.UUID(str(workspace_id)),
                mode="sandbox",
                step=step,
                method="GET",
                url="http://127.0.0.1/v1/jobs",
                path="/v1/jobs",
                status=status,
                created_at=start + timedelta(seconds=i),
            )
            for i in range(count)
        ]
        db.session.add_all(rows)
        db.session.commit()
        return [row.id for row in rows]


def _ids(app, workspace_id) -> set[uuid.UUID]:
    return caps.row_ids(app, RequestLogEntry, workspace_id)


def _other_workspace(app) -> uuid.UUID:
    with app.app_context():
        ws = create_workspace("Neighbour")
        db.session.commit()
        return ws.id


def _prune(app, **kwargs) -> int:
    return caps.prune(app, pruning.CAP, **kwargs)


def test_a_pass_keeps_each_workspace_its_newest_rows_and_leaves_the_others_alone(app, workspace):
    app.config["REQUEST_LOG_KEEP"] = 5
    start = utcnow() - timedelta(hours=1)
    noisy = _add_rows(app, workspace.id, 5 + 7, start=start)
    neighbour = _other_workspace(app)
    quiet = _add_rows(app, neighbour, 3, start=start)

    assert _prune(app) == 7
    assert _ids(app, workspace.id) == set(noisy[-5:])
    assert _ids(app, neighbour) == set(quiet)
    assert _prune(app) == 0  # at the cap: nothing more to do


def test_the_newest_are_kept_by_time_then_id_even_when_rows_share_a_moment(app, workspace):
    app.config["REQUEST_LOG_KEEP"] = 3
    moment = utcnow() - timedelta(minutes=5)
    same = []
    for _ in range(5):
        same += _add_rows(app, workspace.id, 1, start=moment)
    newest = sorted(same)[-3:]  # the log's order at one moment: by id, as its keyset pagination reads it

    assert _prune(app) == 2
    assert _ids(app, workspace.id) == set(newest)


def test_rows_go_in_bounded_batches_one_transaction_each(app, workspace):
    app.config["REQUEST_LOG_KEEP"] = 4
    _add_rows(app, workspace.id, 4 + 11, start=utcnow() - timedelta(hours=1))
    deletes: list[int] = []

    def _count(conn, cursor, statement, parameters, context, executemany):
        if statement.lstrip().upper().startswith("DELETE FROM REQUEST_LOG_ENTRIES"):
            deletes.append(cursor.rowcount)

    with app.app_context():
        engine = db.engine
    event.listen(engine, "after_cursor_execute", _count)
    try:
        assert _prune(app, batch=3) == 11
    finally:
        event.remove(engine, "after_cursor_execute", _count)
    assert deletes == [3, 3, 3, 2]
    assert len(_ids(app, workspace.id)) == 4


def test_each_console_steps_last_exchanges_outlive_the_cap(app, workspace):
    """The walkthrough's tick ("jobs" succeeded once) and a step's last exchange stay after a flood of calls."""
    app.config["REQUEST_LOG_KEEP"] = 5
    start = utcnow() - timedelta(hours=2)
    [jobs_ok] = _add_rows(app, workspace.id, 1, start=start, step="jobs", status=200)
    [jobs_last] = _add_rows(app, workspace.id, 1, start=start + timedelta(minutes=1), step="jobs", status=400)
    [old_webhook, webhook_last] = _add_rows(
        app, workspace.id, 2, start=start + timedelta(minutes=2), step="webhook"
    )
    flood = _add_rows(app, workspace.id, 20, start=start + timedelta(minutes=10))

    assert _prune(app) == 16
    assert _ids(app, workspace.id) == {jobs_ok, jobs_last, webhook_last, *flood[-5:]}
    assert old_webhook not in _ids(app, workspace.id)
    with app.app_context():
        ws = uuid.UUID(workspace.id)
        assert requestlog.succeeded(ws, "jobs")
        assert requestlog.latest(ws, "jobs").id == jobs_last
        assert requestlog.latest(ws, "webhook").id == webhook_last
