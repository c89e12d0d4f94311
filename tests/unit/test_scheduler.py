"""Scheduled tasks: due times on the workspace clock, exactly-once runs, failures, and clock advances."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from console.clock import moves
from console.clock import services as clock
from console.core.timeutil import isoformat, utcnow
from console.extensions import db
from console.scheduler import services as scheduler
from console.scheduler.models import ScheduledTask
from console.workspaces.models import Workspace
from console.workspaces.services import create_workspace

pytestmark = pytest.mark.both_backends

RAN: list[str] = []


def _record(task, workspace):
    RAN.append(task.payload["name"])
    return {"summary": f"ran {task.payload['name']}"}


def _chain(task, workspace):
    """Schedule the next link 10 minutes (workspace clock) after this one was due."""
    RAN.append(task.payload["name"])
    left = task.payload["left"]
    if left:
        payload = {"name": f"{task.payload['name']}+", "left": left - 1}
        scheduler.schedule(workspace, "test.chain", task.due_at + timedelta(minutes=10), payload)
    return f"chain {task.payload['name']}"


def _crash(task, workspace):
    workspace.name = "changed by a handler that then crashed"
    db.session.flush()
    raise RuntimeError("boom")


@pytest.fixture(autouse=True)
def _test_task_kinds(app):
    """This module's task kinds, registered on the app as create_app registers the domains' kinds."""
    scheduler.register_tasks(
        app,
        (
            scheduler.TaskKind("test.record", _record),
            scheduler.TaskKind("test.chain", _chain),
            scheduler.TaskKind("test.crash", _crash),
        ),
    )


@pytest.fixture(autouse=True)
def _reset_ran():
    RAN.clear()


def _ws(workspace) -> Workspace:
    return db.session.get(Workspace, uuid.UUID(workspace.id))


def _add(ws, kind, delay, name, **payload) -> ScheduledTask:
    task = scheduler.schedule(ws, kind, clock.now(ws) + delay, {"name": name, **payload})
    db.session.commit()
    return task


def _make_due(task_id) -> None:
    task = db.session.get(ScheduledTask, task_id)
    task.run_after = utcnow() - timedelta(seconds=1)
    db.session.commit()


def test_schedule_converts_the_due_time_to_real_time(app, workspace):
    with app.app_context():
        ws = _ws(workspace)
        ws.clock_offset_seconds = 3600.0
        due = clock.now(ws) + timedelta(minutes=5)
        task = scheduler.schedule(ws, "test.record", due, {"name": "a"})
        assert task.run_after == due - timedelta(hours=1)
        assert ScheduledTask in moves.SCHEDULE_TABLES


def test_run_due_runs_due_tasks_in_due_order_exactly_once(app, workspace):
    with app.app_context():
        ws = _ws(workspace)
        for name, seconds in (("second", -5), ("later", 3600), ("first", -10), ("third", -1)):
            _add(ws, "test.record", timedelta(seconds=seconds), name)
        fired = scheduler.run_due()
        assert RAN == ["first", "second", "third"]
        assert [f["summary"] for f in fired] == ["ran first", "ran second", "ran third"]
        assert scheduler.run_due() == [] and len(RAN) == 3
        statuses = {
            t.payload["name"]: (t.status, t.attempts) for t in db.session.scalars(select(ScheduledTask))
        }
        assert statuses["later"] == ("pending", 0) and statuses["first"] == ("done", 1)


def test_a_crashing_handler_rolls_back_and_the_task_is_retried_with_backoff(app, workspace):
    with app.app_context():
        ws = _ws(workspace)
        task = _add(ws, "test.crash", timedelta(seconds=-1), "x")
        assert scheduler.run_due() == []
        db.session.expire_all()
        assert _ws(workspace).name == "Test workspace"  # the handler's change did not commit
        task = db.session.get(ScheduledTask, task.id)
        assert (task.status, task.attempts) == ("pending", 1)
        assert task.last_error == "RuntimeError: boom"
        assert task.run_after > utcnow() + timedelta(seconds=scheduler.BACKOFF_SECONDS - 2)
        for _ in range(scheduler.MAX_ATTEMPTS - 1):
            _make_due(task.id)
            scheduler.run_due()
        db.session.expire_all()
        task = db.session.get(ScheduledTask, task.id)
        assert (task.status, task.attempts) == ("failed", scheduler.MAX_ATTEMPTS)
        _make_due(task.id)
        assert scheduler.run_due() == []  # a failed task is kept, not run again


def test_a_task_without_handler_is_kept_with_its_error(app, workspace):
    with app.app_context():
        task = _add(_ws(workspace), "test.nobody", timedelta(seconds=-1), "x")
        scheduler.run_due()
        db.session.expire_all()
        task = db.session.get(ScheduledTask, task.id)
        assert task.status == "pending" and "no handler" in task.last_error


def test_advance_rewrites_run_after_and_fires_in_due_order(app, workspace):
    with app.app_context():
        ws = _ws(workspace)
        for name, minutes in (("c", 50), ("a", 10), ("too-late", 90), ("b", 30)):
            _add(ws, "test.record", timedelta(minutes=minutes), name)
        before = clock.now(ws)
        fired = moves.advance(ws, seconds=3600)
        assert RAN == ["a", "b", "c"]
        assert [f["summary"] for f in fired] == ["ran a", "ran b", "ran c"]
        assert [f["due_at"] for f in fired] == sorted(f["due_at"] for f in fired)
        assert set(fired[0]) == {"task_id", "kind", "due_at", "summary"}
        assert clock.now(ws) - before >= timedelta(hours=1)
        late = db.session.scalars(select(ScheduledTask).where(ScheduledTask.status == "pending")).one()
        assert late.run_after == late.due_at - timedelta(seconds=ws.clock_offset_seconds)


def test_advance_runs_chains_that_become_due_and_interleaves_them(app, workspace):
    with app.app_context():
        ws = _ws(workspace)
        _add(ws, "test.chain", timedelta(minutes=5), "chain", left=3)  # due at 5, 15, 25, 35 minutes
        _add(ws, "test.record", timedelta(minutes=20), "single")
        fired = moves.advance(ws, seconds=30 * 60)
        assert RAN == ["chain", "chain+", "single", "chain++"]
        assert [f["kind"] for f in fired] == ["test.chain", "test.chain", "test.record", "test.chain"]
        assert moves.advance(ws, seconds=10 * 60)[0]["summary"] == "chain chain+++"


def test_advance_leaves_other_workspaces_alone(app, workspace):
    with app.app_context():
        other = create_workspace("Other")
        db.session.commit()
        _add(other, "test.record", timedelta(minutes=5), "other")
        _add(_ws(workspace), "test.record", timedelta(minutes=5), "mine")
        assert [f["summary"] for f in moves.advance(_ws(workspace), seconds=600)] == ["ran mine"]
        assert RAN == ["mine"]
        assert other.clock_offset_seconds == 0


def test_advance_refuses_nonsense(app, workspace):
    with app.app_context():
        for seconds in (0, -5, 401 * 86400):
            with pytest.raises(ValueError):
                moves.advance(_ws(workspace), seconds=seconds)


def test_fired_since_reports_tasks_another_worker_ran(app, workspace):
    with app.app_context():
        ws = _ws(workspace)
        since = utcnow()
        _add(ws, "test.record", timedelta(seconds=-1), "by-the-worker")
        scheduler.run_due()  # as the background loop would, while an advance is in progress
        assert [f["summary"] for f in scheduler.fired_since(ws.id, since)] == ["ran by-the-worker"]


@pytest.mark.parametrize(
    ("start", "expected"),
    [
        # Labor Day weekend 2024: Friday -> Tuesday (Saturday, Sunday and Monday the holiday are skipped).
        (datetime(2024, 8, 30, 15, 0, tzinfo=UTC), datetime(2024, 9, 3, 15, 0, tzinfo=UTC)),
        # July 4th 2026 is a Saturday, observed Friday July 3: Thursday -> Monday.
        (datetime(2026, 7, 2, 9, 30, tzinfo=UTC), datetime(2026, 7, 6, 9, 30, tzinfo=UTC)),
    ],
)
def test_business_day_advance_skips_a_holiday_weekend(app, workspace, start, expected):
    with app.app_context():
        ws = _ws(workspace)
        ws.clock_offset_seconds = (start - utcnow()).total_seconds()
        db.session.commit()
        _add(ws, "test.record", expected - start - timedelta(minutes=1), "before")
        _add(ws, "test.record", expected - start + timedelta(minutes=1), "after")
        fired = moves.advance_business_days(ws, 1)
        assert abs(clock.now(ws) - expected) < timedelta(seconds=5)
        assert [f["summary"] for f in fired] == ["ran before"]
        assert isoformat(expected - timedelta(minutes=1))[:16] == fired[0]["due_at"][:16]


def test_an_advance_over_many_due_tasks_spends_few_statements_on_each(app, workspace):
    """Thousands of due tasks (a day of hourly retries for many jobs) made an advance take half a minute:
    each task cost a SELECT of the next due id, and its report re-read the task after the commit."""
    from sqlalchemy import event

    with app.app_context():
        ws = _ws(workspace)
        for n in range(100):
            scheduler.schedule(ws, "test.record", clock.now(ws) + timedelta(minutes=1 + n / 100), {"name": n})
        db.session.commit()
        statements: list[str] = []

        def count(conn, cursor, statement, *args):
            statements.append(statement)

        engine = db.engine
        event.listen(engine, "before_cursor_execute", count)
        try:
            fired = moves.advance(ws, seconds=3600)
        finally:
            event.remove(engine, "before_cursor_execute", count)
        assert [f["summary"] for f in fired] == [f"ran {n}" for n in range(100)]
        if engine.dialect.name == "sqlite":  # PostgreSQL still locks each next due row with its own SELECT
            # Per task: the claim (UPDATE ... RETURNING the task), its workspace read, the result written,
            # the commit (a SAVEPOINT and its release in tests); no SELECT of the next due id, no separate
            # read of the claimed task, no re-read after the commit.
            assert len(statements) / 100 < 6, f"{len(statements) / 100} statements a task"


def test_scheduling_outside_a_run_keeps_nothing_in_the_session(app, workspace):
    """run_due notes what a running task schedules; a request or the delivery loop scheduling a task (a
    long-lived session) must not collect notes nobody reads."""
    with app.app_context():
        ws = _ws(workspace)
        for n in range(3):
            scheduler.schedule(ws, "test.record", clock.now(ws) + timedelta(hours=1), {"name": n})
        db.session.commit()
        assert not db.session.info.get(scheduler._SCHEDULED_HERE)
        _add(ws, "test.chain", timedelta(seconds=-1), "chain", left=1)  # schedules its next link when run
        scheduler.run_due()
        assert scheduler._SCHEDULED_HERE not in db.session.info


def test_the_claim_works_without_update_returning(app, workspace, monkeypatch):
    """SQLite before 3.35 has no UPDATE ... RETURNING: the claim reads the task back instead."""
    with app.app_context():
        ws = _ws(workspace)
        monkeypatch.setattr(db.session.get_bind().dialect, "update_returning", False)
        _add(ws, "test.record", timedelta(seconds=-1), "old-sqlite")
        assert [f["summary"] for f in scheduler.run_due()] == ["ran old-sqlite"]
        assert scheduler.run_due() == []


def test_a_task_scheduled_between_later_tasks_of_the_batch_runs_in_its_place(app, workspace):
    """SQLite reads due tasks in batches. A task that schedules one due after the next task it holds but
    before a later one (here due at 11 minutes, between 5 and 15) must still run in due order: the batch was
    compared with its next task only, so the new one ran after everything the batch held."""
    with app.app_context():
        ws = _ws(workspace)
        _add(ws, "test.chain", timedelta(minutes=1), "chain", left=1)  # schedules "chain+" due at 11 minutes
        _add(ws, "test.record", timedelta(minutes=5), "five")
        _add(ws, "test.record", timedelta(minutes=15), "fifteen")
        fired = moves.advance(ws, seconds=30 * 60)
        assert RAN == ["chain", "five", "chain+", "fifteen"]
        assert [f["due_at"] for f in fired] == sorted(f["due_at"] for f in fired)


def test_a_task_another_run_schedules_meanwhile_runs_in_its_place(app, workspace, monkeypatch):
    """SQLite reads due tasks in batches; a task scheduled by another run meanwhile (the worker's, during an
    advance: not this run's own note) and due between two tasks of the batch ran only after the whole batch.
    The claim now refuses a task while one of its workspace sorts before it, and the batch is read again."""
    with app.app_context():
        ws = _ws(workspace)
        _add(ws, "test.record", timedelta(minutes=1), "one")
        _add(ws, "test.record", timedelta(minutes=5), "five")
        _add(ws, "test.record", timedelta(minutes=15), "fifteen")
        real_run_one, calls = scheduler._run_one, []

        def another_run_schedules_meanwhile(task_id, **kwargs):
            ran = real_run_one(task_id, **kwargs)
            calls.append(task_id)
            if len(calls) == 1:  # committed by another session: not in this run's note
                due = clock.now(ws) + timedelta(minutes=10 - 60)  # 10 minutes, once the clock moved an hour
                db.session.add(scheduler.new_task(ws, "test.record", due, {"name": "other"}))
                db.session.commit()
            return ran

        monkeypatch.setattr(scheduler, "_run_one", another_run_schedules_meanwhile)
        moves.advance(ws, seconds=3600)
        assert RAN == ["one", "five", "other", "fifteen"]
