"""One connection for every database use of an app, held in a transaction the app never ends (tests).

The test suite runs most tests on one app per backend, inside a transaction rolled back after each test:
the connection is *pinned* to the app (`pin`), the session joins it with a SAVEPOINT
(`join_transaction_mode="create_savepoint"`, so the app's own commits release savepoints and its rollbacks
roll back to them), and the code that takes connections of its own (the request log's writer) asks
`pinned(app)` first and writes on it in a SAVEPOINT of its own.

A pinned connection belongs to the thread that pinned it: the session used from another thread, or a
connection checked out of the engine's pool while pinned, is a mistake of the test (its writes would never
be seen by the other thread, or two threads would share one connection), so it raises `PinnedConnectionError`
and is recorded in `violations` for the test's teardown to report. Outside the tests nothing is ever pinned
and none of this runs.
"""

from __future__ import annotations

import threading
from typing import Any

from flask import Flask, current_app, has_app_context
from flask_sqlalchemy.session import Session
from sqlalchemy import event
from sqlalchemy.engine import Connection

_KEY = "console_db_pinned"


class PinnedConnectionError(RuntimeError):
    """The app's database was used from another thread, or around its pinned connection."""


class Pin:
    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.thread = threading.get_ident()
        self.violations: list[str] = []

    def violated(self, what: str) -> PinnedConnectionError:
        message = (
            f"{what} while the test's connection is pinned (rolled back after the test): another thread or "
            "connection never sees the test's writes. Mark the test `committing`."
        )
        self.violations.append(message)
        return PinnedConnectionError(message)

    def refuse_connect(self, _connection: Any) -> None:
        """Engine listener while pinned: any other connection goes around the pinned one."""
        raise self.violated("A connection of its own was taken from the engine")


def pin(app: Flask, connection: Connection) -> Pin:
    """Make `connection` the app's only connection until `unpin`; it must be in a transaction."""
    if not connection.in_transaction():
        raise ValueError("pin a connection in a transaction (the one rolled back afterwards)")
    held = app.extensions[_KEY] = Pin(connection)
    # On the engine, not its pool: a test that disposes the engine gets a new pool.
    event.listen(connection.engine, "engine_connect", held.refuse_connect)
    return held


def unpin(app: Flask) -> Pin | None:
    held = app.extensions.pop(_KEY, None)
    if held is not None:
        event.remove(held.connection.engine, "engine_connect", held.refuse_connect)
    return held


def pinned(app: Flask | None = None) -> Connection | None:
    """The app's pinned connection (from the thread that pinned it), or None when nothing is pinned."""
    held = (app or current_app).extensions.get(_KEY)
    if held is None:
        return None
    if threading.get_ident() != held.thread:
        raise held.violated(f"The database was used from the thread {threading.current_thread().name!r}")
    return held.connection


class PinnableSession(Session):
    """Flask-SQLAlchemy's session, bound to the app's pinned connection when there is one.

    With `join_transaction_mode="create_savepoint"` (set in console/extensions.py; it changes nothing for a
    session on an engine) the session joins the pinned connection's transaction with a SAVEPOINT.
    """

    def get_bind(self, mapper: Any = None, clause: Any = None, bind: Any = None, **kwargs: Any) -> Any:
        if bind is None and has_app_context():
            connection = pinned()
            if connection is not None:
                return connection
        return super().get_bind(mapper=mapper, clause=clause, bind=bind, **kwargs)


def is_pinned(connection: Connection) -> bool:
    """Whether `connection` is the app's pinned one (a test's transaction, which nothing else writes to)."""
    if not has_app_context():
        return False
    held = current_app.extensions.get(_KEY)
    return held is not None and held.connection is connection


def pin_of(app: Flask) -> Pin | None:
    """The app's pin (its connection, owning thread and the violations seen so far), or None."""
    return app.extensions.get(_KEY)
