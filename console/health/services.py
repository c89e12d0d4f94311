"""Heartbeats of worker processes and the checks behind `GET /healthz`.

A worker writes its heartbeat every `HEARTBEAT_SECONDS` while all its loops are alive; a heartbeat
older than `STALE_AFTER_SECONDS` means no worker is running (or it is stuck).
"""

from __future__ import annotations

import os
import secrets
import socket
import threading
import time
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from flask import Flask
from sqlalchemy import delete, inspect, select, text
from sqlalchemy.exc import DBAPIError

from console.core.timeutil import isoformat, utcnow
from console.extensions import db
from console.health.models import WorkerHeartbeat

HEARTBEAT_SECONDS = 5.0
STALE_AFTER_SECONDS = 30.0
# Rows of workers gone for this long are deleted when a worker starts.
FORGET_AFTER = timedelta(days=1)
# A heartbeat further ahead than this was written under another clock (one set back since, or another host's
# far off): never a live worker, and forgotten when a worker starts. Clocks of hosts a few seconds apart pass.
FUTURE_SLACK = timedelta(seconds=STALE_AFTER_SECONDS)
DATABASE_TIMEOUT_SECONDS = 2.0
NO_SCHEMA = "the database answers but has no schema: run `console db upgrade`"


def new_worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


def beat(worker_id: str) -> None:
    """Record that worker `worker_id` (this process) is alive now; the caller commits."""
    now = utcnow()
    row = db.session.get(WorkerHeartbeat, worker_id)
    if row is None:
        db.session.execute(
            delete(WorkerHeartbeat).where(
                (WorkerHeartbeat.last_seen < now - FORGET_AFTER)
                | (WorkerHeartbeat.last_seen > now + FUTURE_SLACK)
            )
        )
        host, _, _ = worker_id.partition(":")
        db.session.add(
            WorkerHeartbeat(worker_id=worker_id, host=host, pid=os.getpid(), started_at=now, last_seen=now)
        )
    else:
        row.last_seen = now


def forget(worker_id: str) -> None:
    """Remove a worker's heartbeat when it stops cleanly, so `/healthz` does not report it alive for another
    `STALE_AFTER_SECONDS`; the caller commits."""
    db.session.execute(delete(WorkerHeartbeat).where(WorkerHeartbeat.worker_id == worker_id))


def worker_state() -> dict[str, Any]:
    """The newest heartbeat: whether a worker is alive, when it was last seen and its pid."""
    # A heartbeat written under a clock since set back (a year ahead, then corrected, and the worker killed
    # outright so it never removed its row) is no live worker: taken as the newest, it said "ok", seconds_ago
    # 0, for as long as the clock took to catch up, whether a worker ran or not.
    latest = db.session.scalars(
        select(WorkerHeartbeat)
        .where(WorkerHeartbeat.last_seen <= utcnow() + FUTURE_SLACK)
        .order_by(WorkerHeartbeat.last_seen.desc())
        .limit(1)
    ).first()
    if latest is None:
        return {
            "ok": False,
            "last_seen": None,
            "note": "no worker is running (none has reported, or each stopped cleanly)",
        }
    age = (utcnow() - latest.last_seen).total_seconds()
    return {
        "ok": age <= STALE_AFTER_SECONDS,
        "last_seen": isoformat(latest.last_seen),
        "seconds_ago": round(max(age, 0.0), 1),
        "pid": latest.pid,
        "stale_after_seconds": STALE_AFTER_SECONDS,
    }


@dataclass
class _Probe:
    done: threading.Event = field(default_factory=threading.Event)
    result: dict[str, Any] | None = None


class DatabaseProbe:
    """Asks the database `SELECT 1` (and the newest heartbeat) on a side thread, waiting a short time.

    A database that never answers leaves at most one probe thread waiting per process: a check that
    finds the previous probe still in flight waits on that one instead of starting another.
    """

    def __init__(self, app: Flask, timeout: float = DATABASE_TIMEOUT_SECONDS) -> None:
        self.app = app
        self.timeout = timeout
        self._lock = threading.Lock()
        self._probe: _Probe | None = None

    def check(self) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """(database state, worker state or None when the database did not answer)."""
        with self._lock:
            probe = self._probe
            if probe is None or probe.done.is_set():
                probe = self._probe = _Probe()
                threading.Thread(target=self._run, args=(probe,), name="healthz-db", daemon=True).start()
        if not probe.done.wait(self.timeout):
            return {"ok": False, "error": f"no answer within {self.timeout:g} s"}, None
        assert probe.result is not None
        return probe.result["database"], probe.result.get("worker")

    def _run(self, probe: _Probe) -> None:
        started = time.perf_counter()
        try:
            with self.app.app_context():
                try:
                    db.session.execute(text("SELECT 1"))
                    latency = (time.perf_counter() - started) * 1000
                    try:
                        worker = worker_state()
                    except DBAPIError:
                        # It answers, but without this service's tables: never upgraded (every request fails).
                        db.session.rollback()
                        if inspect(db.engine).has_table("api_keys"):
                            raise
                        probe.result = {"database": {"ok": False, "error": NO_SCHEMA}}
                        return
                    probe.result = {
                        "database": {"ok": True, "latency_ms": round(latency, 1)},
                        "worker": worker,
                    }
                finally:
                    db.session.remove()
        except Exception as exc:
            # The class name only: a driver's message can carry the host or user.
            probe.result = {"database": {"ok": False, "error": type(exc).__name__}}
        finally:
            probe.done.set()
