"""One snapshot for a response that reads several statements.

Reads outside a transaction (pysqlite runs SELECTs outside one; on PostgreSQL a connection stays in
autocommit until its first write, see console/db/postgres.py) each see the database at their own moment:
an event's delivery row read before a delivery's commit and its attempts read after it showed
`status: delivering, attempt_count: 0` beside `attempts: [[1, 200]]`. `read_snapshot()` makes every
read of the session's transaction from here on see one state:

- SQLite: `BEGIN` (deferred): WAL gives the transaction one snapshot from its first read. No lock is
  taken that a writer waits for, and the write gate is not entered (console/db/sqlite.py).
- PostgreSQL: `SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY` as the transaction's first
  statement (the deferred-BEGIN hook sends BEGIN before it): one snapshot, and a write is refused.

The transaction ends with the session's (the request's teardown rolls it back). Call it before the first
read the response is built from: ORM objects already loaded keep the values they were read with. A
transaction already under way is committed first on PostgreSQL (its isolation can no longer be set);
on SQLite it is left as it is, since a transaction that has written holds the database's one write lock,
so nothing commits between its reads.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from console.db.pinning import is_pinned

_POSTGRES_IDLE = 0  # psycopg.pq.TransactionStatus.IDLE


def read_snapshot(session: Session) -> None:
    """Every read of `session` from here to the end of its transaction sees one state of the database."""
    connection = session.connection()
    if is_pinned(connection):
        return  # a test's rolled-back transaction (console/db/pinning.py): one snapshot already, no other writer
    dbapi_connection = connection.connection.dbapi_connection
    name = connection.dialect.name
    if name == "sqlite":
        if not dbapi_connection.in_transaction:
            connection.exec_driver_sql("BEGIN")
    elif name == "postgresql":
        if dbapi_connection.info.transaction_status != _POSTGRES_IDLE:
            session.commit()
            connection = session.connection()
        connection.exec_driver_sql("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
