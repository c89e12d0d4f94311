"""On PostgreSQL, several workers share the scheduled tasks: each due task runs exactly once."""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from datetime import timedelta

import pytest
from sqlalchemy import func, select

from console import create_app
from console.clock import moves
from console.clock import services as clock
from console.extensions import db
from console.scheduler import services as scheduler
from console.scheduler.models import ScheduledTask
from console.workspaces.models import Workspace
from tests.conftest import base_config
from tests.waiting import wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.committing]
TASKS = 60
RUNS: Counter = Counter()
RUNNERS: dict[str, set[str]] = {}
LOCK = threading.Lock()


def _count(task, workspace):
    with LOCK:
        RUNS[task.payload["n"]] += 1
        RUNNERS.setdefault(threading.current_thread().name, set()).add(task.payload["n"])
    # Each task holds its row until two workers have run one (a 60 s backstop): the others must take tasks
    # beside it (SKIP LOCKED) rather than wait for it, however the threads are scheduled.
    wait_for(lambda: len(RUNNERS) >= 2, 60, 0.005)
    return "counted"


@pytest.fixture(autouse=True)
def _test_task_kinds(app):
    """This module's task kinds, registered on the app as create_app registers the domains' kinds."""
    scheduler.register_tasks(app, (scheduler.TaskKind("test.count", _count),))


@pytest.fixture
def pg_app(pg_app):
    """tests/postgres/conftest.py's, with this module's records of task runs cleared."""
    app = pg_app
    RUNS.clear()
    RUNNERS.clear()
    return app


def _schedule_many(app, workspace_id, count: int) -> None:
    with app.app_context():
        ws = db.session.get(Workspace, uuid.UUID(workspace_id))
        for n in range(count):
            scheduler.schedule(ws, "test.count", clock.now(ws) - timedelta(seconds=1), {"n": n})
        db.session.commit()


def _run_in_threads(database_url, target, count: int) -> None:
    """Run `target()` in `count` threads, each with its own app (its own engine and connections)."""
    apps = [create_app(base_config(database_url)) for _ in range(count)]
    for worker_app in apps:  # each worker's app knows this module's task kind, as the test's app does
        scheduler.register_tasks(worker_app, (scheduler.TaskKind("test.count", _count),))
    barrier = threading.Barrier(count)

    def work(worker_app):
        with worker_app.app_context():
            barrier.wait()
            target()
            db.session.remove()
            db.engine.dispose()

    threads = [threading.Thread(target=work, args=(a,), name=f"worker-{i}") for i, a in enumerate(apps)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(180)


def test_two_workers_never_run_the_same_task(pg_app, workspace, database_url):
    _schedule_many(pg_app, workspace.id, TASKS)
    _run_in_threads(database_url, lambda: scheduler.run_due(limit=TASKS), 2)
    assert sorted(RUNS) == list(range(TASKS))
    assert set(RUNS.values()) == {1}
    assert len(RUNNERS) == 2, "SKIP LOCKED should let both workers take tasks"
    with pg_app.app_context():
        assert db.session.scalar(select(func.count()).where(ScheduledTask.status == "done")) == TASKS


def test_an_advance_beside_workers_runs_each_task_once_and_reports_all(pg_app, workspace, database_url):
    with pg_app.app_context():
        ws = db.session.get(Workspace, uuid.UUID(workspace.id))
        for n in range(TASKS):
            scheduler.schedule(ws, "test.count", clock.now(ws) + timedelta(minutes=n + 1), {"n": n})
        db.session.commit()
    reports: list[list[dict]] = []
    advanced = threading.Event()

    def advance_or_poll():
        if threading.current_thread().name == "worker-0":
            try:
                reports.append(
                    moves.advance(db.session.get(Workspace, uuid.UUID(workspace.id)), seconds=7200)
                )
            finally:
                advanced.set()
        else:
            deadline = time.monotonic() + 120  # a backstop: they poll while the advance runs
            while not advanced.is_set() and time.monotonic() < deadline:
                scheduler.run_due(limit=5)

    _run_in_threads(database_url, advance_or_poll, 3)
    assert sorted(RUNS) == list(range(TASKS)) and set(RUNS.values()) == {1}
    assert len(RUNNERS) > 1, "the polling workers should have taken some of the tasks"
    [fired] = reports
    assert [f["task_id"] for f in fired] == list(dict.fromkeys(f["task_id"] for f in fired))
    assert len(fired) == TASKS
    assert [f["due_at"] for f in fired] == sorted(f["due_at"] for f in fired)
