"""A row held for the rest of the transaction, on both databases: a quota's count, then the insert it allows,
run one transaction after the other."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import false, select, update

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
        db.session.execute(update(model.__table__).where(key == row_id, false()).values(id=key))
    else:
        db.session.execute(select(key).where(key == row_id).with_for_update())
