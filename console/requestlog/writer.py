"""The per-process background writer of request-log rows, key usage counts and keys' last use.

A request shapes and redacts its row (`capture.prepared`, in the after-request hook) and pays for a lock, a
few dict updates and a list append (`submit`); the writer thread inserts the rows in chunks, upserts the usage
counts and updates `last_used_at` every `REQUEST_LOG_FLUSH_SECONDS`. The list is bounded (`REQUEST_LOG_QUEUE_SIZE`): a row that does not fit
is counted in its key's usage as `unlogged`, which the request log shows, instead of growing memory.
The thread starts on the first request (so after a fork: serving processes each get their own), stops
after a while with nothing to write, and a clean shutdown flushes what is left (`close`, at exit).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import logging
import multiprocessing.util
import os
import threading
import time
import uuid
import weakref
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from flask import Flask
from sqlalchemy import bindparam, insert, or_, select, update
from sqlalchemy.exc import IntegrityError

from console.db.direct import Direct
from console.db.outages import Outage, is_outage
from console.db.pinning import pinned
from console.extensions import db
from console.keys.models import ApiKey
from console.requestlog.models import KeyUsageDay, RequestLogEntry
from console.workspaces.models import Workspace

log = logging.getLogger(__name__)

# `last_used_at` is written at most this often per key: "last used" is coarse, requests are many.
LAST_USED_RESOLUTION = timedelta(minutes=1)
# The thread exits after this many flush intervals with nothing to write; the next request restarts it.
IDLE_INTERVALS = 30
# Rows per insert transaction.
INSERT_CHUNK = 100
COUNTERS = ("requests", "status_2xx", "status_4xx", "status_5xx", "billable", "unlogged")
STATUS_COUNTERS = {2: "status_2xx", 4: "status_4xx", 5: "status_5xx"}

_writers: weakref.WeakSet[Writer] = weakref.WeakSet()
_inherited: list[Any] = []  # connections a forked child got from its parent (see `Writer._reset`)


def _foreign_key_refused(exc: IntegrityError) -> bool:
    """True when the database refused a row for a reference to a row that is gone (PostgreSQL's SQLSTATE
    23503, SQLite's "FOREIGN KEY constraint failed"), not for another constraint."""
    return getattr(exc.orig, "sqlstate", None) == "23503" or "FOREIGN KEY constraint failed" in str(exc.orig)


class Writer:
    def __init__(self, app: Flask, *, interval: float, capacity: int) -> None:
        self.app = app
        self.interval = interval
        self.capacity = capacity
        self._reset()
        _writers.add(self)

    def _reset(self) -> None:
        """Fresh state (also in a forked child: the parent's lock, rows and thread are not ours)."""
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._rows: list[dict[str, Any]] = []
        # (workspace_id, api_key_id, mode, day) -> counters to add
        self._usage: dict[tuple, dict[str, int]] = {}
        self._last_used: dict[Any, datetime] = {}  # key id -> newest use not yet written
        self._last_written: dict[Any, datetime] = {}  # key id -> last use written by this process
        self._thread: threading.Thread | None = None
        self._closed = False
        # One connection of its own, kept between flushes (opening a SQLite connection and closing it
        # again cost more than the inserts: ~15 ms a flush), out of the pool (sized to request threads).
        if getattr(self, "_conn", None) is not None:
            self._closer.detach()
            _inherited.append(self._conn)  # a parent's connection: never used nor closed in a child
        self._conn = None
        self._closer: weakref.finalize | None = None
        # The thread and a test's or shutdown's flush share the connection.
        self._write_lock = threading.Lock()
        self.outage = Outage(log, "Writing the request log")

    # The request path -------------------------------------------------------------------------

    def submit(self, row: dict[str, Any], *, log_row: bool = True, unlogged: bool = False) -> None:
        """Count one request (usage, last use) and queue its log row (unless the caller writes it).

        `unlogged`: the row could not be made; the request is counted, and as not logged.
        """
        status = row["status"] or 0
        now = row["created_at"]
        key_id = row["api_key_id"]
        usage_key = (row["workspace_id"], key_id, row["mode"], now.date())
        with self._lock:
            counts = self._usage.get(usage_key)
            if counts is None:
                counts = self._usage[usage_key] = dict.fromkeys(COUNTERS, 0)
            counts["requests"] += 1
            status_counter = STATUS_COUNTERS.get(status // 100)
            if status_counter:
                counts[status_counter] += 1
            if row["mode"] == "production":
                counts["billable"] += 1
            written = self._last_written.get(key_id)
            if written is None or now - written >= LAST_USED_RESOLUTION:
                self._last_used[key_id] = now
            if unlogged:
                counts["unlogged"] += 1
            elif log_row:
                if len(self._rows) < self.capacity:
                    self._rows.append(row)
                else:
                    counts["unlogged"] += 1
            # With a pinned connection (tests, console/db/pinning.py) no thread may use it: the rows wait
            # for `flush`, which the test calls, and are written on the pinned connection.
            if self._thread is None and not self._closed and pinned(self.app) is None:
                self._thread = threading.Thread(target=self._run, name="request-log-writer", daemon=True)
                self._thread.start()

    # The writer thread ------------------------------------------------------------------------

    def _run(self) -> None:
        idle = 0
        while True:
            self._wake.wait(self.interval)
            self._wake.clear()
            wrote = self.flush()
            idle = 0 if wrote else idle + 1
            with self._lock:
                if self._closed or (idle >= IDLE_INTERVALS and not self._pending()):
                    self._thread = None
                    return

    def _pending(self) -> bool:
        return bool(self._rows or self._usage or self._last_used)

    def _take(self) -> tuple[list, dict, dict]:
        with self._lock:
            rows, usage, last_used = self._rows, self._usage, self._last_used
            self._rows, self._usage, self._last_used = [], {}, {}
            self._last_written.update(last_used)
        return rows, usage, last_used

    def flush(self) -> bool:
        """Write everything collected so far (from the thread, at shutdown, or a test); True if any."""
        rows, usage, last_used = self._take()
        if not (rows or usage or last_used):
            return False
        try:
            with self._write_lock:
                self._write(rows, usage, last_used)
        except Exception as error:  # the thread must outlive a bad batch; what it held is lost, and said so
            if is_outage(error):
                # The database away (a restart, an outage): a line at its start, one a minute and one at
                # its end, as the worker's loops do; it logged a traceback at every flush with rows.
                self.outage.failed(
                    f"at the next flush (this batch's {len(rows)} rows and usage counts are lost)"
                )
            else:
                log.warning("Request log: %d rows not written", len(rows), exc_info=True)
            return True
        self.outage.answered()
        return True

    def _write(self, rows: list, usage: dict, last_used: dict) -> None:
        with self.app.app_context():
            engine = db.engine
            unwritten = self._insert_rows(engine, rows)
            for row in unwritten:
                counts = usage.setdefault(
                    (row["workspace_id"], row["api_key_id"], row["mode"], row["created_at"].date()),
                    dict.fromkeys(COUNTERS, 0),
                )
                counts["unlogged"] += 1
            try:
                with self._transaction(engine) as conn:
                    _upsert_usage(conn, usage)
                    _mark_last_used(conn, last_used)
            except IntegrityError:
                # A workspace (or key) deleted meanwhile: its counts cannot be written, and must not take
                # the other workspaces' counts of the same batch with them (a room of trainees, one resets).
                self._write_usage_one_by_one(engine, usage, last_used)
            except Exception as error:  # counts are lost, and said so
                if is_outage(error):
                    raise  # the database away: one line for the whole outage (`flush`)
                log.warning("Request usage not written (%d keys)", len(usage), exc_info=True)

    def _write_usage_one_by_one(self, engine, usage: dict, last_used: dict) -> None:
        lost = 0
        for key, counts in usage.items():
            try:
                with self._transaction(engine) as conn:
                    _upsert_usage(conn, {key: counts})
            except IntegrityError:
                lost += 1
        with self._transaction(engine) as conn:
            _mark_last_used(conn, last_used)  # an UPDATE: a deleted key matches no row
        if lost:
            log.info("Request usage of %d keys not written: their workspace or key is gone", lost)

    def _insert_rows(self, engine, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Insert the batch in chunks; a chunk that fails (a workspace deleted meanwhile) goes row by row.

        Returns the unwritten rows. Chunks keep each transaction short (the SQLite write gate is held for
        one chunk, not a second's worth of rows), and the pause between them lets the request threads of
        this process have the GIL back during a large batch.
        """
        unwritten: list[dict[str, Any]] = []
        for start in range(0, len(rows), INSERT_CHUNK):
            if start:
                time.sleep(0)  # yield the GIL to the request threads
            chunk = rows[start : start + INSERT_CHUNK]
            _fill_clock(lambda: self._transaction(engine), chunk)
            try:
                with self._transaction(engine) as conn:
                    _direct_insert(tuple(chunk[0])).write_many(conn, chunk)
                continue
            except IntegrityError as exc:
                if not _foreign_key_refused(exc):
                    # Any other constraint is a bug: its rows then fail one by one without a word, so the
                    # database's own account is logged here.
                    log.info(
                        "Request log chunk of %d failed; writing rows one by one", len(chunk), exc_info=True
                    )
                else:
                    # Expected: a workspace or class deleted while its rows waited here. One line, not a
                    # traceback in the log of every deletion.
                    log.info(
                        "Request log chunk of %d refused (a workspace deleted meanwhile); writing rows one by one",
                        len(chunk),
                    )
            except Exception as error:
                if is_outage(error):
                    raise  # the database away: each row would fail the same way (`flush` says so once)
                log.info("Request log chunk of %d failed; writing rows one by one", len(chunk), exc_info=True)
            for row in chunk:
                try:
                    with self._transaction(engine) as conn:
                        conn.execute(insert(RequestLogEntry.__table__), [row])
                except Exception:
                    unwritten.append(row)
        return unwritten

    def close(self) -> None:
        """Stop the thread and write what is left (a clean shutdown loses nothing)."""
        with self._lock:
            self._closed = True
            thread = self._thread
        self._wake.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=10)
        self.flush()
        with self._write_lock:
            self._drop_connection()

    @contextlib.contextmanager
    def _transaction(self, engine):
        """A transaction on the writer's own connection (opened on first use, reopened after a failure).

        With a pinned connection (tests), a SAVEPOINT on that one instead."""
        held = pinned(self.app)
        if held is not None:
            with held.begin_nested():
                yield held
            return
        if self._conn is None:
            conn = engine.connect()
            conn.detach()  # not the pool's: a disposed engine never reopens it behind a test's back
            self._conn = conn
            # Closed with the writer if nobody closes it first (an app dropped without `close`).
            self._closer = weakref.finalize(self, _close_quietly, conn)
        conn = self._conn
        try:
            with conn.begin():
                yield conn
        except Exception:
            self._drop_connection()
            raise

    def _drop_connection(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            self._closer.detach()
            _close_quietly(conn)


def _close_quietly(conn) -> None:
    with contextlib.suppress(Exception):
        conn.close()


def _fill_clock(
    transaction: Callable[[], contextlib.AbstractContextManager], rows: list[dict[str, Any]]
) -> None:
    """Workspace clock times the hook could not know (the view's commit had expired the workspace).

    Read up to a flush interval after the request: a clock advanced in between shows its new time.
    """
    missing = {row["workspace_id"] for row in rows if row.get("clock_at") is None}
    if not missing:
        return
    with transaction() as conn:
        found = conn.execute(
            select(Workspace.id, Workspace.clock_offset_seconds).where(Workspace.id.in_(missing))
        )
        offsets = dict(found.all())
    for row in rows:
        if row.get("clock_at") is None:
            row["clock_at"] = row["created_at"] + timedelta(seconds=offsets.get(row["workspace_id"]) or 0.0)


def _mark_last_used(conn, last_used: dict) -> None:
    if not last_used:
        return
    keys = ApiKey.__table__
    conn.execute(
        update(keys)
        .where(
            keys.c.id == bindparam("key_id"),
            or_(keys.c.last_used_at.is_(None), keys.c.last_used_at < bindparam("used_at")),
        )
        .values(last_used_at=bindparam("used_at")),
        [{"key_id": k, "used_at": t} for k, t in last_used.items()],
    )


def _upsert_usage(conn, usage: dict[tuple, dict[str, int]]) -> None:
    if not usage:
        return
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as dialect_insert
    else:
        from sqlalchemy.dialects.sqlite import insert as dialect_insert

    table = KeyUsageDay.__table__
    statement = dialect_insert(table)
    statement = statement.on_conflict_do_update(
        index_elements=[table.c.api_key_id, table.c.day],
        set_={name: table.c[name] + statement.excluded[name] for name in COUNTERS},
    )
    conn.execute(
        statement,
        [
            {"id": uuid.uuid4(), "workspace_id": ws, "api_key_id": key, "mode": mode, "day": day, **counts}
            for (ws, key, mode, day), counts in usage.items()
        ],
    )


@functools.lru_cache(maxsize=8)
def _direct_insert(column_keys: tuple[str, ...]) -> Direct:
    """The log's INSERT, run with the DBAPI's executemany: SQLAlchemy's per-row parameter handling cost
    more than SQLite's inserting (every `capture.prepared` row has the same keys)."""
    return Direct(insert(RequestLogEntry.__table__), column_keys=column_keys)


def writer_for(app: Flask) -> Writer:
    return app.extensions["requestlog_writer"]


def init_app(app: Flask) -> None:
    app.extensions["requestlog_writer"] = Writer(
        app,
        interval=float(app.config["REQUEST_LOG_FLUSH_SECONDS"]),
        capacity=int(app.config["REQUEST_LOG_QUEUE_SIZE"]),
    )


def _close_all() -> None:
    for writer in list(_writers):
        try:
            writer.close()
        except Exception:  # at exit, one failing writer must not keep the others from flushing
            log.warning("Request log writer did not flush at exit", exc_info=True)


def close_at_process_exit() -> None:
    """Flush too when this process ends as a `multiprocessing` child (Granian's serving processes are).

    Such a process leaves with `os._exit` once its target returns, so `atexit` hooks never run there: the
    rows of a serving process's last second were lost at every stop of `console run`. `multiprocessing`
    runs its own finalizers on that way out; registered after the fork (a child starts with none).
    """
    multiprocessing.util.Finalize(None, _close_all, exitpriority=10)


def _after_fork() -> None:
    for writer in list(_writers):
        writer._reset()


atexit.register(_close_all)
os.register_at_fork(after_in_child=_after_fork)
