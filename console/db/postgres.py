"""PostgreSQL connections that make only the round trips a request needs.

Every round trip wakes a database backend on the same few cores as the app. Two of them were spent on
nothing by a request that only reads (every API GET: the key lookup and the page, two statements):

- **BEGIN, deferred to the first statement that needs a transaction.** psycopg sends BEGIN as a command
  of its own before a connection's first statement, and the pool sends ROLLBACK when the connection comes
  back. Under READ COMMITTED (PostgreSQL's default, which this app keeps) every statement sees what was
  committed before it started, in a transaction or not, so a plain SELECT gains nothing from one. A
  connection leaves the pool in autocommit; the first statement that is not a plain SELECT (a write,
  DDL, a SAVEPOINT, a locking `SELECT ... FOR UPDATE`, a `pg_advisory_xact_lock`) turns transactions back
  on just before it runs, the driver sends BEGIN, and from there on the connection commits and rolls back
  exactly as before. This is what the sqlite3 driver does on SQLite (reads before a request's first write
  run outside any transaction), so both databases now behave alike. Code that asks SQLAlchemy for an
  isolation level of its own (e.g. AUTOCOMMIT for `CREATE DATABASE`) gets exactly that: the connection
  leaves this mode.
- **The pool's ping (`SELECT 1`), only for a connection that sat idle.** `pool_pre_ping` pings at every
  checkout. A connection used in the last `IDLE_PING_SECONDS` is handed out as it is; if the server went
  away meanwhile, that request fails with a lost connection (a 503 with Retry-After, see
  console.api.errors), SQLAlchemy invalidates the whole pool, and the next checkouts reconnect.
"""

from __future__ import annotations

import functools
import re
import time
import weakref
from typing import Any

from sqlalchemy import event, exc
from sqlalchemy.engine import Engine

# A connection idle longer than this is pinged before use (a server restart, a firewall's idle cut).
IDLE_PING_SECONDS = 5.0
_IDLE_SINCE = "console_idle_since"
# Only a statement that starts with SELECT and takes no locks may run outside a transaction: a row lock, or a
# transaction-level advisory lock (console/db/locking.lock_owner), which autocommit would release at once.
_PLAIN_SELECT = re.compile(r"\s*SELECT\b", re.IGNORECASE)
_LOCKING = re.compile(
    r"\bFOR\s+(?:NO\s+KEY\s+)?(?:UPDATE|SHARE|KEY\s+SHARE)\b|\bpg_advisory_xact_lock\b", re.IGNORECASE
)


@functools.lru_cache(maxsize=512)
def needs_transaction(statement: str) -> bool:
    """Whether `statement` must run in a transaction (anything but a plain, non-locking SELECT).

    Cached: the app's statements are compiled once and run many times (the regex scan over a long
    SELECT was 1.5% of a serving process under load)."""
    return not _PLAIN_SELECT.match(statement) or _LOCKING.search(statement) is not None


def configure(engine: Engine) -> None:
    """Install deferred BEGIN and the idle-only ping on a PostgreSQL (psycopg) engine."""
    # The connections in deferred mode: autocommit set here, not asked for by SQLAlchemy.
    deferred: weakref.WeakSet[Any] = weakref.WeakSet()

    @event.listens_for(engine.pool, "checkout")
    def _checkout(dbapi_connection, record, _proxy):
        if not dbapi_connection.autocommit and dbapi_connection.info.transaction_status == 0:  # IDLE
            dbapi_connection.autocommit = True
            deferred.add(dbapi_connection)
        idle_since = record.info.get(_IDLE_SINCE)
        if idle_since is not None and time.monotonic() - idle_since > IDLE_PING_SECONDS:
            _ping(dbapi_connection)

    @event.listens_for(engine.pool, "checkin")
    def _checkin(dbapi_connection, record):
        if dbapi_connection is None:
            return
        record.info[_IDLE_SINCE] = time.monotonic()
        if dbapi_connection in deferred:
            # Back to the driver's default while pooled; the next checkout starts deferred again.
            deferred.discard(dbapi_connection)
            if dbapi_connection.info.transaction_status == 0:
                dbapi_connection.autocommit = False

    @event.listens_for(engine, "before_cursor_execute")
    def _begin_before_writes(conn, _cursor, statement, _parameters, _context, _executemany):
        dbapi_connection = conn.connection.dbapi_connection
        if dbapi_connection in deferred and needs_transaction(statement):
            deferred.discard(dbapi_connection)
            dbapi_connection.autocommit = False  # the driver sends BEGIN before this statement

    dialect = engine.dialect
    set_isolation_level = dialect.set_isolation_level

    def _asked_for_a_level(dbapi_connection, level):
        deferred.discard(dbapi_connection)  # SQLAlchemy's explicit choice wins from here on
        return set_isolation_level(dbapi_connection, level)

    dialect.set_isolation_level = _asked_for_a_level


def _ping(dbapi_connection) -> None:
    """`SELECT 1`; a connection that fails it is replaced by the pool (DisconnectionError: up to 3 tries)."""
    try:
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute("SELECT 1")
        finally:
            cursor.close()
    except Exception as error:
        raise exc.DisconnectionError(f"pooled connection failed its ping: {type(error).__name__}") from error
