"""A worker loop's database outage is a few lines (its start, once a minute, its end), not a traceback a pass."""

from __future__ import annotations

import logging

import pytest
from sqlalchemy import exc as sa_exc

from console.db import outages
from console.db.outages import Outage
from console.scheduler import loop as scheduler_loop


def _refused() -> sa_exc.OperationalError:
    return sa_exc.OperationalError(
        "SELECT scheduled_tasks.id FROM scheduled_tasks WHERE due_at <= ?",
        {"due": 1},
        Exception(
            'connection to server at "127.0.0.1", port 5433 failed: Connection refused\n\tIs the server running?'
        ),
    )


def test_an_outage_is_one_line_at_its_start_one_a_minute_and_one_at_its_end(caplog, monkeypatch):
    log = logging.getLogger("tests.outage")
    outage = Outage(log, "Scheduler batch")
    clock = [1000.0]
    monkeypatch.setattr(outages.time, "monotonic", lambda: clock[0])
    with caplog.at_level(logging.INFO, logger="tests.outage"):
        for _ in range(240):  # a minute of a loop polling every 0.25 s
            try:
                raise _refused()
            except sa_exc.OperationalError:
                outage.failed("at the next poll")
            clock[0] += 0.25
        try:
            raise _refused()
        except sa_exc.OperationalError:
            outage.failed("at the next poll")
        outage.answered()
        outage.answered()
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        "Scheduler batch failed: the database cannot be reached (Exception: connection to server at "
        '"127.0.0.1", port 5433 failed: Connection refused); retrying at the next poll',
        "Scheduler batch: the database still cannot be reached after 60 s (Exception: connection to server "
        'at "127.0.0.1", port 5433 failed: Connection refused)',
        "Scheduler batch: the database answers again after 60 s",
    ]
    assert all(r.levelno == logging.WARNING and r.exc_info is None for r in caplog.records)
    assert not any("SELECT" in line for line in lines)  # the statement stays out


def test_any_other_failure_keeps_its_traceback(caplog):
    outage = Outage(logging.getLogger("tests.outage"), "Scheduler batch")
    with caplog.at_level(logging.INFO, logger="tests.outage"):
        try:
            raise sa_exc.ProgrammingError("SELECT nope", {}, Exception("no such column: nope"))
        except sa_exc.ProgrammingError:
            outage.failed("at the next poll")
    (record,) = caplog.records
    assert record.levelno == logging.ERROR and record.exc_info is not None
    assert record.getMessage() == "Scheduler batch failed; retrying at the next poll"


def test_the_scheduler_loop_reports_an_unreachable_database_once(app, caplog, monkeypatch):
    def unreachable(**_kwargs):
        raise _refused()

    monkeypatch.setattr(scheduler_loop, "run_due", unreachable)
    loop = scheduler_loop.SchedulerLoop(app)
    with caplog.at_level(logging.INFO, logger=scheduler_loop.__name__):
        for _ in range(20):
            assert loop.run_once() == 0
        monkeypatch.setattr(scheduler_loop, "run_due", lambda **_kwargs: [])
        assert loop.run_once() == 0
    messages = [r.getMessage() for r in caplog.records if r.name == scheduler_loop.__name__]
    assert len(messages) == 2 and "cannot be reached" in messages[0] and "answers again" in messages[1]


@pytest.mark.parametrize(
    "error, outage",
    [
        (sa_exc.OperationalError("x", {}, Exception("server closed the connection unexpectedly")), True),
        (sa_exc.InterfaceError("x", {}, Exception("connection already closed")), True),
        (sa_exc.TimeoutError("QueuePool limit of size 5 overflow 0 reached"), True),
        (sa_exc.IntegrityError("x", {}, Exception("UNIQUE constraint failed")), False),
        (ValueError("a bug"), False),
    ],
)
def test_what_counts_as_an_outage(error, outage):
    assert outages.is_outage(error) is outage


def test_the_worker_heartbeat_reports_an_unreachable_database_once(app, caplog, monkeypatch):
    """It logged its whole traceback at every write, every 5 s, for as long as the database was away."""
    from console import worker as worker_module
    from console.health import services as health

    heartbeat = worker_module.Heartbeat(app)
    clock = [1000.0]
    monkeypatch.setattr(worker_module.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(outages.time, "monotonic", lambda: clock[0])

    def unreachable(_worker_id):
        raise _refused()

    monkeypatch.setattr(health, "beat", unreachable)
    with caplog.at_level(logging.INFO, logger=worker_module.__name__):
        for _ in range(24):  # two minutes of writes, one every HEARTBEAT_SECONDS
            heartbeat.maybe_beat()
            clock[0] += health.HEARTBEAT_SECONDS
        monkeypatch.setattr(health, "beat", lambda _worker_id: None)
        heartbeat.maybe_beat()
    records = [r for r in caplog.records if r.name == worker_module.__name__]
    messages = [r.getMessage() for r in records]
    assert len(messages) == 3, messages  # its start, a line at 60 s, its end (not 24 tracebacks)
    assert "cannot be reached" in messages[0] and "answers again after 120 s" in messages[-1]
    assert all(r.exc_info is None for r in records)


def test_a_heartbeat_failure_that_is_no_outage_keeps_its_traceback(app, caplog, monkeypatch):
    from console import worker as worker_module
    from console.health import services as health

    def broken(_worker_id):
        raise sa_exc.ProgrammingError("UPDATE worker_heartbeats", {}, Exception("no such column: pid"))

    monkeypatch.setattr(health, "beat", broken)
    with caplog.at_level(logging.INFO, logger=worker_module.__name__):
        worker_module.Heartbeat(app).maybe_beat()
    (record,) = [r for r in caplog.records if r.name == worker_module.__name__]
    assert record.levelno == logging.ERROR and record.exc_info is not None
