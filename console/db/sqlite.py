"""SQLite connections tuned for a threaded server: pragmas, and writers that queue instead of polling.

SQLite allows one writing transaction at a time. A second writer gets SQLITE_BUSY and SQLite's busy
handler retries it after sleeping 1, 2, 5, 10 ... then 100 ms at a time, while every other writer that
arrives meanwhile may take the lock first. Under a steady stream of writes, a writer can lose that race
for a second or more (the API's POST p99 was 1.2 s), and a process whose writer sleeps there serves
nothing meanwhile. So writers queue at a write gate instead, whose waiters wake the moment it is free:
a lock per process, then a file lock (`<database>-writelock`) shared by every process on the database
(serving processes, the worker). SQLite's busy handler only matters if the gate times out.

The gate is taken just before a transaction's first write (an INSERT, UPDATE or DELETE; reads before it
run outside any transaction, as the pysqlite driver does) and released as soon as the transaction ends
(the dialect's commit or rollback), or, failing that, when the connection goes back to the pool or runs
a read after its transaction ended.

Checkpoints (copying the WAL back into the database file, with an fsync) are the worker's job
(`CheckpointLoop`, every second, PASSIVE: it blocks no reader and no writer). Left to SQLite, the commit
that crosses `wal_autocheckpoint` pages does it while its connection holds the write gate, and every
writer waits behind the fsync (measured under load: POSTs waiting up to 150 ms). Serving connections keep
a large `wal_autocheckpoint` only as a safety net for a server running without its worker.

A PASSIVE checkpoint never shrinks the WAL file, and SQLite starts writing the WAL from its beginning again
only when a checkpoint has copied all of it and no reader still reads from it: under a steady stream of
reads and writes (a room loading pages while a tenant's deliveries are recorded) that moment may not come,
and the file grew by ~35 MB in 20 s (`python -m bench.neighbours`), without bound for as long as the load
lasted. So once the WAL holds more than `WAL_TRUNCATE_FRAMES` pages, the loop takes the write gate (writers
queue there, as behind any writer) and runs a TRUNCATE checkpoint, waiting at most `TRUNCATE_WAIT_MS` for
the readers of older snapshots (a few ms: no new frames come meanwhile); if they take longer it gives up
and tries again a second later.
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading
import time
from contextvars import ContextVar
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine

log = logging.getLogger(__name__)

# How long a statement waits for the database lock before failing ("database is locked"); the same
# bound applies to waiting for the gate, after which the write goes ahead and SQLite decides.
BUSY_TIMEOUT_MS = 5000
_WRITES = ("INSERT", "UPDATE", "DELETE", "REPLAC")
PRAGMAS = (
    "PRAGMA foreign_keys=ON",
    # Readers never block the writer, nor the writer readers.
    "PRAGMA journal_mode=WAL",
    # In WAL mode: a commit survives a crash of the app (not of the machine) without an fsync each time;
    # the WAL is synced at checkpoints.
    "PRAGMA synchronous=NORMAL",
    f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}",
    # Pages (~40 MB): checkpoints normally come from the worker's CheckpointLoop, see above.
    "PRAGMA wal_autocheckpoint=10000",
)
CHECKPOINT_SECONDS = 1.0
# Past this many pages in the WAL (4 KB each: 16 MB), the checkpoint loop truncates it (see above).
WAL_TRUNCATE_FRAMES = 4096
TRUNCATE_WAIT_MS = 200


class FileLock:
    """An exclusive `flock` on a file, shared by every process that opens it, taken with a timeout.

    A waiting process sleeps in the kernel and gets the lock the moment it is released (no polling,
    so no process loses every race to one that keeps writing). `flock` has no timeout, so a helper
    thread does the blocking call; a caller that gives up leaves it to hand the lock back. The file is
    opened once per process (after a fork, a shared open file would share the lock too).
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._pid = -1

    def _open(self) -> None:
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        self._mutex = threading.Lock()
        self._wanted = threading.Event()
        self._granted = threading.Event()
        self._waiter_busy = False
        self._pid = os.getpid()
        threading.Thread(target=self._wait_forever, name="sqlite-write-lock", daemon=True).start()

    def acquire(self, timeout: float) -> bool:
        if self._pid != os.getpid():
            self._open()
        with self._mutex:
            if not self._waiter_busy:
                try:
                    fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    return True
                except BlockingIOError:
                    pass
            self._waiter_busy = True
            self._granted.clear()
            self._wanted.set()
        if self._granted.wait(timeout):
            return True
        with self._mutex:
            self._wanted.clear()  # the waiter hands the lock back when it gets it
            return self._granted.is_set()

    def try_acquire(self) -> bool:
        """The lock if it is free now (and nobody of this process waits for it), without waiting."""
        if self._pid != os.getpid():
            self._open()
        with self._mutex:
            if self._waiter_busy:
                return False
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                return False

    def release(self) -> None:
        fcntl.flock(self.fd, fcntl.LOCK_UN)

    def _wait_forever(self) -> None:
        while True:
            self._wanted.wait()
            fcntl.flock(self.fd, fcntl.LOCK_EX)
            with self._mutex:
                self._waiter_busy = False
                if self._wanted.is_set():
                    self._wanted.clear()
                    self._granted.set()
                else:
                    fcntl.flock(self.fd, fcntl.LOCK_UN)  # its caller gave up meanwhile


# Set for the API requests of outside callers (`prefer_writes`): at the gate, their writes go before the
# console's. A room using the console (a visitor's first action creates a workspace: a few dozen INSERTs)
# otherwise queues a customer's one INSERT behind all of theirs.
_preferred: ContextVar[bool] = ContextVar("sqlite_preferred_writes", default=False)


def prefer_writes(preferred: bool) -> None:
    """Whether this thread's writes (this request's, until set again) go first at the gate."""
    _preferred.set(preferred)


class PriorityLock:
    """A lock that preferred waiters take before the others (among the threads of one process).

    A release wakes one waiter (a preferred one if any waits), not all of them: with every thread of a
    busy process queued for the write gate, waking all of them at each release had each one take the
    GIL only to find it was not its turn (a tenth of a serving process's time under a stream of POSTs).
    """

    def __init__(self) -> None:
        mutex = threading.Lock()
        self._turns = {True: threading.Condition(mutex), False: threading.Condition(mutex)}
        self._mutex = mutex
        self._held = False
        self._waiting = {True: 0, False: 0}

    def try_acquire(self, preferred: bool = False) -> bool:
        """The lock if it is free now and no one it would have to let ahead waits; never waits."""
        with self._mutex:
            if not self._held and (preferred or not self._waiting[True]):
                self._held = True
                return True
            return False

    def acquire(self, timeout: float, preferred: bool = False) -> bool:
        deadline = time.monotonic() + timeout
        with self._mutex:
            if not self._held and (preferred or not self._waiting[True]):
                self._held = True  # the usual case: free, nobody to let ahead
                return True
            self._waiting[preferred] += 1
            try:
                while self._held or (not preferred and self._waiting[True]):
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return False
                    self._turns[preferred].wait(remaining)
                self._held = True
                return True
            finally:
                self._waiting[preferred] -= 1
                # A waiter that gives up may have been the one woken: the turn passes on.
                self._wake_next()

    def release(self) -> None:
        with self._mutex:
            self._held = False
            self._wake_next()

    def _wake_next(self) -> None:
        if self._held:
            return
        if self._waiting[True]:
            self._turns[True].notify()
        elif self._waiting[False]:
            self._turns[False].notify()

    def locked(self) -> bool:
        return self._held


class WriteGate:
    """One writing connection at a time: a lock per process, and a file lock across processes.

    `holders` are the DBAPI connections (by id) holding it, with whether they hold the file lock too.
    Within a process, preferred writers (`prefer_writes`) go first; across processes, whoever asks first.
    """

    def __init__(self, timeout: float, lock_path: str | None) -> None:
        self.lock = PriorityLock()
        self.timeout = timeout
        self.file_lock = FileLock(lock_path) if lock_path else None
        self.holders: dict[int, bool] = {}
        # The run slots its holders gave back to wait for it, taken back once they leave (`enter`).
        self.owed: dict[int, Any] = {}

    def enter(self, dbapi_connection: Any) -> None:
        """Take the gate; an API call that has to wait for it gives its run slot back meanwhile.

        Waiting at the gate is waiting on another writer, not running: holding a run slot meanwhile, two
        API writers queued behind a long write (a trainee's workspace, a burst of a tenant's events) left a
        serving process no slot for anyone's reads. A page keeps its slot (see `released_by_api_call`).

        Having got the gate, the call does not queue for its slot again until it leaves the gate (`leave`):
        the holder of the gate (and of the file lock, which every process's writers wait for) must never wait
        behind the requests queued for a run slot (see `runslots.give_back`).
        """
        from console import runslots

        deadline = time.monotonic() + self.timeout
        preferred = _preferred.get()
        owed = None
        if not self.lock.try_acquire(preferred):
            owed = runslots.give_back()
            got = self.lock.acquire(self.timeout, preferred)
            if not got:
                runslots.take_back(owed)
                return  # proceed without it; SQLite's own lock and busy timeout still protect the data
        across = False
        if self.file_lock is not None:
            across = self.file_lock.try_acquire()
            if not across:
                owed = owed or runslots.give_back()
                across = self.file_lock.acquire(max(0.0, deadline - time.monotonic()))
        self.holders[id(dbapi_connection)] = across
        if owed is not None:
            self.owed[id(dbapi_connection)] = owed

    def leave(self, dbapi_connection: Any) -> None:
        across = self.holders.pop(id(dbapi_connection), None)
        if across is None:
            return
        owed = self.owed.pop(id(dbapi_connection), None)
        if across:
            self.file_lock.release()  # type: ignore[union-attr]
        self.lock.release()
        if owed is not None:
            from console import runslots

            runslots.take_back(owed)  # its run slot, now that it holds nothing another writer waits for


def configure(engine: Engine) -> WriteGate:
    """Install the pragmas and the write gate on a SQLite engine; returns the gate."""
    database = engine.url.database
    gate = WriteGate(BUSY_TIMEOUT_MS / 1000, f"{database}-writelock" if is_file_database(engine) else None)

    @event.listens_for(engine, "connect")
    def _pragmas(dbapi_connection, _record):
        cursor = dbapi_connection.cursor()
        for pragma in PRAGMAS:
            cursor.execute(pragma)
        cursor.close()

    @event.listens_for(engine, "before_cursor_execute")
    def _gate(conn, _cursor, statement, _parameters, _context, _executemany):
        dbapi_connection = conn.connection.dbapi_connection
        held = id(dbapi_connection) in gate.holders
        if statement.lstrip()[:6].upper() in _WRITES:
            if not held:
                gate.enter(dbapi_connection)
        elif held and not dbapi_connection.in_transaction:
            gate.leave(dbapi_connection)  # its writing transaction has ended (committed or rolled back)

    def _leave(dbapi_connection, *_args):
        if dbapi_connection is not None:
            gate.leave(dbapi_connection)

    # The gate is handed back the moment the database's transaction ends, not when the connection is
    # back in the pool: what a Session does after its commit (expiring objects, hooks, the pool's reset)
    # took a fifth of the gate's hold under load, with every other writer waiting.
    dialect = engine.dialect
    for name in ("do_commit", "do_rollback"):
        setattr(dialect, name, _then_leave(getattr(dialect, name), gate))

    # close_detached: a connection taken out of the pool (the request log's writer) closes outside it.
    for name in ("checkin", "invalidate", "soft_invalidate", "close", "close_detached"):
        event.listen(engine.pool, name, _leave)
    return gate


def _then_leave(end_transaction, gate: WriteGate):
    """The dialect's commit (or rollback), then the gate handed back, even if it failed."""

    def wrapped(connection) -> None:
        try:
            end_transaction(connection)
        finally:
            # Called with the pool's proxy of the connection (or the DBAPI connection itself).
            gate.leave(getattr(connection, "dbapi_connection", connection))

    return wrapped


def is_file_database(engine: Engine) -> bool:
    database = engine.url.database
    return (
        engine.dialect.name == "sqlite"
        and bool(database)
        and database != ":memory:"
        and not database.startswith("file::memory:")
    )


class CheckpointLoop:
    """A worker loop: `PRAGMA wal_checkpoint(PASSIVE)` every `CHECKPOINT_SECONDS` on a SQLite file.

    On any other database it only waits for the stop (a worker loop that returns early reads as dead).
    """

    def __init__(self, app) -> None:
        from console.extensions import db

        with app.app_context():
            self.engine = db.engine
        self.gate: WriteGate | None = app.extensions.get("sqlite_write_gate")

    def checkpoint(self) -> None:
        with self.engine.connect() as conn:
            _busy, frames, _copied = conn.exec_driver_sql("PRAGMA wal_checkpoint(PASSIVE)").one()
            if frames >= WAL_TRUNCATE_FRAMES:
                self.truncate(conn.connection.dbapi_connection)

    def truncate(self, dbapi_connection: Any) -> bool:
        """Copy the whole WAL into the database and empty the file (under the write gate); whether it did.

        Runs on the DBAPI cursor, past the gate's statement hook, which would hand the gate back at once.
        """
        if self.gate is not None:
            self.gate.enter(dbapi_connection)
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout={TRUNCATE_WAIT_MS}")
            busy, _frames, _copied = cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            return not busy
        finally:
            cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            cursor.close()
            if self.gate is not None:
                self.gate.leave(dbapi_connection)

    def run_forever(self, stop: threading.Event) -> None:
        if not is_file_database(self.engine):
            stop.wait()
            return
        while not stop.wait(CHECKPOINT_SECONDS):
            try:
                self.checkpoint()
            except Exception:  # a locked or missing file: the next second tries again
                log.warning("SQLite checkpoint failed; retrying in %s s", CHECKPOINT_SECONDS, exc_info=True)
