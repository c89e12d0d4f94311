"""SQLite connections tuned for a threaded server: pragmas, and writers that queue instead of polling.

SQLite allows one writing transaction at a time. A second writer gets SQLITE_BUSY and SQLite's busy
handler retries it after sleeping 1, 2, 5, 10 ... then 100 ms at a time, while every other writer that
arrives meanwhile may take the lock first. Under a steady stream of writes, a writer can lose that race
for a second or more (the API's POST p99 was 1.2 s). So each process lets one connection at a time
write: a writing transaction first takes the process's write gate, a lock whose waiters wake as soon
as it is released; SQLite's busy handler is left to arbitrate only between processes.

The gate is taken just before a transaction's first write (an INSERT, UPDATE or DELETE; reads before it
run outside any transaction, as the pysqlite driver does) and released when the connection goes back
to the pool (a Session commit or rollback returns it) or runs a read after its transaction ended.
"""

from __future__ import annotations

import threading
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine

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
)


class WriteGate:
    """One writing connection at a time in this process; `holders` are the DBAPI connections (by id)."""

    def __init__(self, timeout: float) -> None:
        self.lock = threading.Lock()
        self.timeout = timeout
        self.holders: set[int] = set()

    def enter(self, dbapi_connection: Any) -> None:
        if self.lock.acquire(timeout=self.timeout):
            self.holders.add(id(dbapi_connection))
        # else: proceed without it; SQLite's own lock and busy timeout still protect the data.

    def leave(self, dbapi_connection: Any) -> None:
        ident = id(dbapi_connection)
        if ident in self.holders:
            self.holders.discard(ident)
            self.lock.release()


def configure(engine: Engine) -> WriteGate:
    """Install the pragmas and the write gate on a SQLite engine; returns the gate."""
    gate = WriteGate(BUSY_TIMEOUT_MS / 1000)

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

    for name in ("checkin", "invalidate", "soft_invalidate", "close", "detach"):
        event.listen(engine.pool, name, _leave)
    return gate
