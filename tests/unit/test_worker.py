"""The worker: loops in threads, clean stops that finish in-flight work, and the foreground process."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta

import pytest

from console.clock import services as clock
from console.extensions import db
from console.scheduler import services as scheduler
from console.scheduler.models import ScheduledTask
from console.worker import load_loop, start_in_process
from console.workspaces.models import Workspace
from tests.conftest import base_config
from tests.waiting import wait_for

pytestmark = pytest.mark.committing

SCHEDULER_ONLY = ("console.scheduler.loop.SchedulerLoop",)
SLOW_STARTED = threading.Event()


def _slow(task, workspace):
    SLOW_STARTED.set()
    time.sleep(0.5)
    return "slow done"


@pytest.fixture(autouse=True)
def _test_task_kinds(app):
    """This module's task kinds, registered on the app as create_app registers the domains' kinds."""
    scheduler.register_tasks(app, (scheduler.TaskKind("test.slow", _slow),))


def _schedule_due(app, workspace_id, kind) -> uuid.UUID:
    with app.app_context():
        ws = db.session.get(Workspace, uuid.UUID(workspace_id))
        task = scheduler.schedule(ws, kind, clock.now(ws) - timedelta(seconds=1), {})
        db.session.commit()
        return task.id


def _status(app, task_id) -> str:
    with app.app_context():
        return db.session.get(ScheduledTask, task_id).status


def test_the_scheduler_loop_runs_due_tasks_in_the_background(app, workspace):
    worker = start_in_process(app, SCHEDULER_ONLY)
    try:
        task_id = _schedule_due(app, workspace.id, "test.slow")
        assert wait_for(lambda: _status(app, task_id) == "done", 60)
    finally:
        worker.stop()
    assert not any(t.is_alive() for t in worker.threads)
    assert all(t.daemon for t in worker.threads)


def test_stopping_lets_the_task_in_flight_finish(app, workspace):
    SLOW_STARTED.clear()
    task_id = _schedule_due(app, workspace.id, "test.slow")
    worker = start_in_process(app, SCHEDULER_ONLY)
    assert SLOW_STARTED.wait(60)
    worker.stop()
    assert _status(app, task_id) == "done"
    with app.app_context():
        assert db.session.get(ScheduledTask, task_id).result == {"summary": "slow done"}


def test_a_loop_whose_module_does_not_exist_yet_is_a_clear_error(app):
    with pytest.raises(RuntimeError, match=r"console\.nowhere\.worker does not exist"):
        start_in_process(app, (*SCHEDULER_ONLY, "console.nowhere.worker.Loop"))
    with pytest.raises(RuntimeError, match="has no NoSuchLoop"):
        load_loop("console.scheduler.loop.NoSuchLoop")
    assert load_loop(SCHEDULER_ONLY[0]).__name__ == "SchedulerLoop"


SCRIPT = """
from console import create_app
from console.worker import run_forever
run_forever(create_app({config!r}), loops={loops!r})
"""


@contextlib.contextmanager
def _running_worker(script: str) -> Iterator[subprocess.Popen]:
    """`script` in a child process, handed over once it logged "Worker running"; killed if still alive after."""
    command = [sys.executable, "-c", script]
    with subprocess.Popen(command, stderr=subprocess.PIPE, text=True, cwd=str(_root())) as process:
        try:
            lines = []
            for line in process.stderr:
                lines.append(line)
                if "Worker running" in line:
                    break
            assert any("Worker running" in line for line in lines), "".join(lines)
            yield process
        finally:
            if process.poll() is None:
                process.kill()


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_the_foreground_worker_stops_cleanly_on_a_signal(database_url, signum):
    with _running_worker(SCRIPT.format(config=base_config(database_url), loops=SCHEDULER_ONLY)) as process:
        process.send_signal(signum)
        process.send_signal(signum)  # as a quick double Ctrl-C: still one clean stop, said once
        assert process.wait(timeout=60) == 0
        rest = process.stderr.read()
        assert rest.count(f"Received {signal.Signals(signum).name}") == 1, rest
        assert "Worker stopped" in rest


NESTED_SIGNAL_SCRIPT = """
import os, signal, threading
import console.worker as worker_module
from console import create_app

class SignalInsideSet(threading.Event):
    # A second signal arriving while `set` holds the event's lock: the moment that deadlocked.
    def set(self):
        with self._cond:
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(10_000):
                pass  # bytecodes at which Python runs the SIGTERM handler, the lock still held
            self._flag = True
            self._cond.notify_all()

original = worker_module.Worker
worker_module.Worker = lambda: original(stop_event=SignalInsideSet())
worker_module.run_forever(create_app({config!r}), loops={loops!r})
"""


@pytest.mark.slow
def test_a_second_signal_during_the_stop_does_not_hang_the_worker(database_url):
    """`console run`'s Ctrl-C reaches the worker as SIGINT, and the master's SIGTERM follows a moment later.
    With handlers that set the stop event themselves, the second ran inside the first's `Event.set` and
    waited for its lock forever (CI: the Ctrl-C test timed out; py-spy showed the nested handlers)."""
    script = NESTED_SIGNAL_SCRIPT.format(config=base_config(database_url), loops=SCHEDULER_ONLY)
    with _running_worker(script) as process:
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=60) == 0
        rest = process.stderr.read()
        assert "Received SIGINT" in rest and "Worker stopped" in rest


def _root():
    from pathlib import Path

    return Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_a_clean_stop_removes_the_workers_heartbeat(app, database_url):
    """/healthz went on reporting a worker stopped with SIGTERM as running ("ok") for another 30 s."""
    from sqlalchemy import select

    from console.health.models import WorkerHeartbeat

    def heartbeats(pid: int) -> list:
        with app.app_context():
            rows = db.session.scalars(select(WorkerHeartbeat).where(WorkerHeartbeat.pid == pid)).all()
            db.session.remove()
            return rows

    with _running_worker(SCRIPT.format(config=base_config(database_url), loops=SCHEDULER_ONLY)) as process:
        assert wait_for(lambda: heartbeats(process.pid), seconds=30)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
    assert heartbeats(process.pid) == []
