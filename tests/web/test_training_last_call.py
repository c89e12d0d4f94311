"""The grid's "Last API call" and "stuck": a trainee's own calls, not their listener's polls."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from sqlalchemy import event, insert, update

from console.core.ids import uuid7
from console.core.timeutil import utcnow
from console.extensions import db
from console.requestlog.models import RequestLogEntry
from console.training import cohorts
from console.training.models import CohortMember
from tests.web.conftest import Visitor
from tests.web.test_training import create_cohort, join

pytestmark = pytest.mark.both_backends


def logged(app, workspace_id, path: str, ago: timedelta, *, status=200, step="", count=1) -> None:
    """Request-log rows as the API writes them, `ago` before now (the newest of `count`, one a second)."""
    now = utcnow()
    rows = [
        {
            "id": uuid7(),
            "workspace_id": workspace_id,
            "mode": "sandbox",
            "step": step,
            "method": "POST",
            "url": "http://localhost" + path,
            "path": path,
            "request_headers": {},
            "response_headers": {},
            "status": status,
            "created_at": now - ago - timedelta(seconds=count - 1 - n),
        }
        for n in range(count)
    ]
    with app.app_context():
        db.session.execute(insert(RequestLogEntry), rows)
        db.session.commit()


def row_of(trainer: Visitor, cohort: dict, name: str) -> str:
    page = trainer.get(f"/training/{cohort['id']}").get_data(as_text=True)
    start = page.index(f'<tr data-trainee="{name}"')
    return page[start : page.index("</tr>", start)]


def test_a_trainee_whose_listener_polls_is_still_stuck(app):
    """`console listen` / `pcc.py listen` polls once a second: each poll was the trainee's "last call", so a
    trainee whose listener ran was never highlighted, however long they had been stuck."""
    trainer = Visitor(app.test_client())
    cohort = create_cohort(trainer)
    ada = join(app, cohort, "Ada")
    with app.app_context():  # joined 40 minutes ago: the join no longer counts as being at work
        db.session.execute(update(CohortMember).values(joined_at=utcnow() - timedelta(minutes=40)))
        db.session.commit()
    hook = uuid.uuid4()
    logged(app, ada.workspace_id, "/sandbox/v1/link_tokens", timedelta(minutes=30))
    # Started the listener 15 minutes ago (their own call), which has polled since, and reported a delivery.
    logged(app, ada.workspace_id, "/sandbox/v1/sandbox/listen", timedelta(minutes=15))
    logged(app, ada.workspace_id, f"/sandbox/v1/sandbox/listen/{hook}/poll", timedelta(0), count=50)
    logged(
        app,
        ada.workspace_id,
        f"/sandbox/v1/sandbox/listen/{hook}/deliveries/{uuid.uuid4()}/result",
        timedelta(0),
    )
    # The console's own calls never counted.
    logged(app, ada.workspace_id, "/sandbox/v1/webhooks", timedelta(0), step="training")
    row = row_of(trainer, cohort, "Ada")
    assert 'data-stuck="yes"' in row and "15 min ago" in row

    # A call of their own (not the listener's loop) is the trainee at work again; so is a poll that failed,
    # which is not routine (`listener_requests.clause`: only 2xx).
    logged(app, ada.workspace_id, f"/sandbox/v1/sandbox/listen/{hook}/poll", timedelta(minutes=2), status=401)
    row = row_of(trainer, cohort, "Ada")
    assert 'data-stuck="no"' in row and "2 min ago" in row
    logged(app, ada.workspace_id, "/sandbox/v1/jobs", timedelta(0))
    assert "just now" in row_of(trainer, cohort, "Ada")


def test_the_last_call_is_one_index_probe_per_trainee(app, database_url):
    """The grid asks every few seconds; a trainee's log holds up to REQUEST_LOG_KEEP rows, nearly all polls
    while their listener runs. The query reads the partial index over own calls (SQLite's plan names it):
    any other index walked every poll."""
    if not database_url.startswith("sqlite"):
        pytest.skip("the plan is read with SQLite's EXPLAIN QUERY PLAN")
    trainer = Visitor(app.test_client())
    cohort = create_cohort(trainer)
    ada = join(app, cohort, "Ada")
    sent: list[tuple[str, object]] = []
    with app.app_context():
        engine = db.engine

        def keep(conn, cursor, statement, parameters, context, executemany):
            sent.append((statement, parameters))

        event.listen(engine, "before_cursor_execute", keep)
        try:
            cohorts.last_calls([ada.workspace_id])
        finally:
            event.remove(engine, "before_cursor_execute", keep)
        [(statement, parameters)] = [(s, p) for s, p in sent if "request_log_entries" in s]
        plan = db.session.connection().exec_driver_sql("EXPLAIN QUERY PLAN " + statement, parameters).all()
        assert any("USING COVERING INDEX ix_request_log_entries_own_calls" in row[-1] for row in plan), plan
