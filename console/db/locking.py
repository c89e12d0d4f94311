"""Held for the rest of the transaction, on both databases: a quota's count, then the insert it allows, run one
transaction after the other. `lock_row` holds a row that exists (the key a quota belongs to); `lock_owner` holds
a quota whose owner has no row of its own (a browser's id, the whole server)."""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

from sqlalchemy import false, func, select, update

from console.extensions import db


def lock_row(model: Any, row_id: uuid.UUID) -> None:
    """Hold `model`'s row `row_id` until the transaction ends: another transaction locking it waits, so what
    this one reads after the lock (a count against a quota) stays true until it commits.

    PostgreSQL: `SELECT … FOR UPDATE`. SQLite has no row locks and ignores `FOR UPDATE`, and pysqlite runs the
    reads before a transaction's first write outside any transaction (console/db/sqlite.py), so two requests
    both counted 8 of 10 webhooks and both inserted: six at once made 14. There, an `UPDATE` is the lock: a
    write, it takes the write gate and SQLite's write lock and begins the transaction, so no other writer runs
    until this one ends and the reads after it see every commit before it. It matches no row: SQLite locks the
    whole database anyway, and rewriting the row's id, even to itself, makes SQLite look for rows referencing
    it in every child table (20 ms over 300,000 unindexed ones).
    """
    key = model.__table__.c.id
    if db.session.get_bind().dialect.name == "sqlite":
        _lock_database(model)
    else:
        db.session.execute(select(key).where(key == row_id).with_for_update())


def lock_owner(model: Any, owner: str) -> None:
    """Hold the `model` rows counted against `owner` (a hashed browser id, or a name such as "server" for a
    server-wide cap) until the transaction ends: another transaction locking the same owner waits, so a
    count read after the lock stays true until this one commits.

    For the caps whose owner is no row (`lock_row` needs one): cohorts per trainer's browser, presenter
    profiles. PostgreSQL: a transaction-level advisory lock on a 64-bit key made of the table's name and
    `owner` (console/db/postgres.py begins the transaction before it, as before `FOR UPDATE`). SQLite: the
    write that matches no row, as in `lock_row` (it locks the whole database).
    """
    if db.session.get_bind().dialect.name == "sqlite":
        _lock_database(model)
        return
    digest = hashlib.sha256(f"{model.__table__.name}:{owner}".encode()).digest()
    db.session.execute(select(func.pg_advisory_xact_lock(int.from_bytes(digest[:8], "big", signed=True))))


def _lock_database(model: Any) -> None:
    """SQLite's lock for both: an UPDATE of `model`'s table that matches no row (why: `lock_row`)."""
    key = model.__table__.c.id
    db.session.execute(update(model.__table__).where(false()).values(id=key))
