"""Scheduled tasks: schedule them, register their handlers, run the due ones exactly once.

A task is due when its `run_after` (the real moment its workspace-clock `due_at` arrives) has
passed. Each task runs in its own transaction together with a guarded claim
(`UPDATE ... SET status='done' WHERE id=:id AND status='pending'`), so the handler's changes and
the claim commit or roll back together: a task runs once even with several workers, and a crash
mid-handler leaves it pending for a later run. On PostgreSQL, `FOR UPDATE SKIP LOCKED` lets
workers pass over rows another worker holds instead of queueing behind them.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from flask import Flask, current_app
from sqlalchemy import Select, exists, select, tuple_, update
from sqlalchemy.orm import aliased

from console.clock.services import real_time_of
from console.core.timeutil import isoformat, utcnow
from console.db.rows import new
from console.extensions import db
from console.scheduler.models import PENDING, ScheduledTask
from console.workspaces.models import Workspace

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 5
BACKOFF_SECONDS = 5  # doubled after each failed attempt: 5, 10, 20, 40 s

Handler = Callable[[ScheduledTask, Workspace], "dict[str, Any] | str | None"]
# What a pending task of a kind will do, in the reader's words ("Link token … will expire unused").
Describer = Callable[[ScheduledTask], str]


@dataclass(frozen=True)
class TaskKind:
    """A kind of scheduled task: the function that runs it (given `(task, workspace)`) and what a pending
    one will do, said for a reader. Each domain declares its kinds (`TASKS`); `create_app` registers them."""

    kind: str
    handler: Handler
    describer: Describer | None = None


def register_tasks(app: Flask, kinds: Iterable[TaskKind]) -> None:
    """Make tasks of these kinds runnable (and describable) in `app`."""
    app.extensions.setdefault("scheduler_tasks", {}).update({k.kind: k for k in kinds})


def _kinds() -> dict[str, TaskKind]:
    return current_app.extensions.get("scheduler_tasks", {})


def describe(task: ScheduledTask) -> str:
    """What the pending task will do when it runs, in the reader's words."""
    kind = _kinds().get(task.kind)
    describer = kind.describer if kind is not None else None
    return describer(task) if describer is not None else f"Scheduled task {task.kind}"


def handler_for(kind: str) -> Handler:
    """The registered handler of `kind` (LookupError when none)."""
    try:
        return _kinds()[kind].handler
    except KeyError:
        raise LookupError(f"no handler registered for task kind {kind!r}") from None


def new_task(workspace: Workspace, kind: str, due_at: datetime, payload: dict[str, Any]) -> ScheduledTask:
    """A pending task due at `due_at` on the workspace clock, not yet in any session (see `schedule`)."""
    return new(
        ScheduledTask,
        id=uuid.uuid4(),
        workspace_id=workspace.id,
        kind=kind,
        payload=payload,
        due_at=due_at,
        run_after=real_time_of(workspace, due_at),
        status=PENDING,
        attempts=0,
        created_at=utcnow(),
    )


def schedule(workspace: Workspace, kind: str, due_at: datetime, payload: dict[str, Any]) -> ScheduledTask:
    """Add a task due at `due_at` on the workspace clock to the current transaction (flushed with it)."""
    task = new_task(workspace, kind, due_at, payload)
    db.session.add(task)
    # While run_due runs a task, it reads this to know whether the task scheduled one that must run before
    # the next it holds (only then: elsewhere nothing would ever empty the list).
    scheduled_here = db.session.info.get(_SCHEDULED_HERE)
    if scheduled_here is not None:
        scheduled_here.append(_order_key(task.run_after, task.due_at, task.created_at))
    return task


def fired_dict(task: ScheduledTask) -> dict[str, Any]:
    """How a run task is reported (clock advance, worker logs)."""
    summary = (task.result or {}).get("summary") or task.kind
    return {"task_id": str(task.id), "kind": task.kind, "due_at": isoformat(task.due_at), "summary": summary}


# Session info key: the order keys of the tasks scheduled in the current transaction (see `schedule`).
_SCHEDULED_HERE = "scheduler.scheduled_here"
# What _run_one answers when it could not claim the task (None: claimed, but it failed).
_NOT_CLAIMED: dict[str, Any] = {"claimed": False}
# How many due tasks SQLite's run_due reads in one query (PostgreSQL locks and reads them one by one).
_SQLITE_BATCH = 200


def _order_key(run_after: datetime, due_at: datetime, created_at: datetime) -> tuple:
    """The order due tasks run in: by run_after, then due_at, then creation (naive UTC, as stored)."""
    return tuple(m.replace(tzinfo=None) if m.tzinfo else m for m in (run_after, due_at, created_at))


def _due_query(workspace_id: uuid.UUID | None, *, skip_locked: bool, limit: int = 1) -> Select:
    query = select(
        ScheduledTask.id, ScheduledTask.run_after, ScheduledTask.due_at, ScheduledTask.created_at
    ).where(ScheduledTask.status == PENDING, ScheduledTask.run_after <= utcnow())
    if workspace_id is not None:
        query = query.where(ScheduledTask.workspace_id == workspace_id)
    query = query.order_by(ScheduledTask.run_after, ScheduledTask.due_at, ScheduledTask.created_at)
    if db.session.get_bind().dialect.name == "postgresql":
        # Waiting (no SKIP LOCKED) lets a clock advance see every task another worker holds finish.
        return query.limit(1).with_for_update(skip_locked=skip_locked)
    return query.limit(limit)


# One alias for every claim, so SQLAlchemy's statement cache compiles the claim once, not at every task.
_EARLIER = aliased(ScheduledTask, name="earlier")


def _claim(task_id: uuid.UUID, *, first_due: bool = False) -> ScheduledTask | None:
    """Mark the task done in the current transaction and return it as claimed (one statement: UPDATE ...
    RETURNING); None when another worker got it first or, with `first_due`, while a due task of its
    workspace sorts before it (a batch read earlier cannot know what another run scheduled since)."""
    conditions = [ScheduledTask.id == task_id, ScheduledTask.status == PENDING]
    if first_due:
        earlier = _EARLIER
        conditions.append(
            ~exists().where(
                earlier.status == PENDING,
                # The runnable index's range: only pending tasks up to this one's run_after are looked at.
                earlier.run_after <= ScheduledTask.run_after,
                earlier.workspace_id == ScheduledTask.workspace_id,
                tuple_(earlier.run_after, earlier.due_at, earlier.created_at)
                < tuple_(ScheduledTask.run_after, ScheduledTask.due_at, ScheduledTask.created_at),
            )
        )
    claim = (
        update(ScheduledTask)
        .where(*conditions)
        .values(status="done", attempts=ScheduledTask.attempts + 1, finished_at=utcnow(), last_error=None)
        .execution_options(synchronize_session=False, populate_existing=True)
    )
    if not db.session.get_bind().dialect.update_returning:  # SQLite before 3.35
        if db.session.execute(claim).rowcount != 1:
            return None
        return db.session.get(ScheduledTask, task_id, populate_existing=True)
    return db.session.scalars(claim.returning(ScheduledTask)).first()


def _execute(task: ScheduledTask) -> ScheduledTask:
    """Run the claimed task's handler and store what it reported (no commit)."""
    workspace = db.session.get(Workspace, task.workspace_id, populate_existing=True)
    result = handler_for(task.kind)(task, workspace)
    if not isinstance(result, dict):
        result = {"summary": result or task.kind}
    task.result = result
    db.session.flush()
    return task


def _record_failure(task_id: uuid.UUID, error: Exception) -> None:
    """Keep a failed task: retry it later with backoff, or mark it failed after MAX_ATTEMPTS."""
    task = db.session.get(ScheduledTask, task_id, populate_existing=True)
    if task is None or task.status != PENDING:
        db.session.rollback()
        return
    task.attempts += 1
    task.last_error = f"{type(error).__name__}: {error}"[:500]
    task.finished_at = utcnow()
    if task.attempts >= MAX_ATTEMPTS:
        task.status = "failed"
        log.error(
            "Task %s (%s) failed for good after %d attempts: %s",
            task.id,
            task.kind,
            task.attempts,
            task.last_error,
        )
    else:
        task.run_after = utcnow() + timedelta(seconds=BACKOFF_SECONDS * 2 ** (task.attempts - 1))
    db.session.commit()


def _run_one(task_id: uuid.UUID, *, first_due: bool = False) -> dict[str, Any] | None:
    """Claim (see `_claim`) and run one selected task in the current transaction, then commit; what ran
    (fired_dict), or None if it did not run (`_NOT_CLAIMED` when it was not claimed). What it scheduled is
    left in the session's info (_SCHEDULED_HERE)."""
    db.session.info[_SCHEDULED_HERE] = []
    claimed = _claim(task_id, first_due=first_due)
    if claimed is None:
        db.session.rollback()
        return _NOT_CLAIMED
    try:
        task = _execute(claimed)
        fired = fired_dict(task)  # before the commit, which would expire the task and cost a reload
        db.session.commit()
    except Exception as exc:
        db.session.rollback()
        log.warning("Task %s failed; it will be retried", task_id, exc_info=True)
        try:
            _record_failure(task_id, exc)
        except Exception:
            # The task is still pending in the database, so a later run picks it up again.
            db.session.rollback()
            log.exception("Could not record the failure of task %s", task_id)
        return None
    log.info(
        "Ran task %s (%s, due %s): %s", fired["task_id"], fired["kind"], fired["due_at"], fired["summary"]
    )
    return fired


def run_due(
    limit: int = 100,
    workspace_id: uuid.UUID | None = None,
    *,
    wait_for_locked: bool = False,
    stop: threading.Event | None = None,
) -> list[dict[str, Any]]:
    """Run up to `limit` due tasks, each in its own transaction, and report those that ran, in order.

    On SQLite the due tasks are read in batches (one query per task was a good part of an advance's time
    with thousands due); when a task schedules one that sorts before some of the batch, those go back to the
    database, which orders them with the new one, so the order stays run_after, due_at, creation. What the
    batch cannot know (a task another run scheduled or ran meanwhile) the claim checks: it takes a task only
    while no due task of its workspace sorts before it, and a refused claim reads the batch again."""
    fired: list[dict[str, Any]] = []
    batch: list[tuple] = []
    batched = db.session.get_bind().dialect.name != "postgresql"  # PostgreSQL reads and locks one at a time
    for _ in range(limit):
        if stop is not None and stop.is_set():
            break
        if not batch:
            query = _due_query(workspace_id, skip_locked=not wait_for_locked, limit=min(limit, _SQLITE_BATCH))
            batch = [tuple(row) for row in db.session.execute(query)]
            batch.reverse()  # popped from the end
        if not batch:
            db.session.rollback()
            # PostgreSQL may return no row after waiting on one another worker finished; look again.
            if wait_for_locked and _any_due(workspace_id):
                continue
            break
        task_id = batch.pop()[0]
        ran = _run_one(task_id, first_due=batched)
        scheduled = db.session.info.pop(_SCHEDULED_HERE, [])
        if ran is _NOT_CLAIMED:
            # Another run took it, or scheduled one that sorts before it: the batch may be stale.
            batch = []
            continue
        if ran is not None:
            fired.append(ran)
        if batch and scheduled:
            # A new task runs before every task of the batch that sorts after it, not only before the next
            # one: keep what sorts before it, and the database gives the order of the rest once that is run.
            earliest = min(scheduled)
            batch = [row for row in batch if _order_key(*row[1:]) < earliest]
    return fired


def _any_due(workspace_id: uuid.UUID | None) -> bool:
    query = select(ScheduledTask.id).where(
        ScheduledTask.status == PENDING, ScheduledTask.run_after <= utcnow()
    )
    if workspace_id is not None:
        query = query.where(ScheduledTask.workspace_id == workspace_id)
    found = db.session.scalar(select(exists(query)))
    db.session.rollback()
    return bool(found)


def fired_since(workspace_id: uuid.UUID, since: datetime) -> list[dict[str, Any]]:
    """Tasks of a workspace that ran at or after the real moment `since`, in due order."""
    tasks = db.session.scalars(
        select(ScheduledTask)
        .where(
            ScheduledTask.workspace_id == workspace_id,
            ScheduledTask.status == "done",
            ScheduledTask.finished_at >= since,
        )
        .order_by(ScheduledTask.due_at, ScheduledTask.finished_at, ScheduledTask.id)
    )
    return [fired_dict(task) for task in tasks]
