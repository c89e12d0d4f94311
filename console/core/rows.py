"""`insert_now`: new ORM objects written with plain Core INSERTs, for the API's hot write paths."""

from __future__ import annotations

import functools
from typing import Any

from sqlalchemy import Table, insert, inspect
from sqlalchemy.orm import configure_mappers, make_transient, make_transient_to_detached

from console.core.direct import Direct, prepare_writes, run_writes
from console.extensions import db


def insert_now(*objects: Any) -> None:
    """INSERT each new (transient) object at once, in order; the objects end detached, as written.

    Why: at commit, the unit of work spent ~0.3 ms of Python on a Link token and its expiry task, and on
    SQLite all of it inside the write lock, which every other writer waits for; a Core INSERT of the same
    values costs a fraction of that. Column defaults an object did not set are computed for the INSERT (as
    SQLAlchemy would) and set on the object.

    The objects are left out of the session (detached: they have their identity and values, and no session
    holds them): attaching them cost ~7% of a Link token request (adding them, then expiring them at
    commit), and the API's only caller reads their values and nothing else. A caller that goes on to change
    one adds it to the session (`db.session.add`), which makes it persistent without another INSERT.
    Nothing of the ORM runs between the INSERTs and the commit: on SQLite the first INSERT takes the write
    gate until the commit. If an INSERT fails, the objects are transient again (never written).
    """
    connection = db.session.connection()  # straight on the session's connection: no ORM execution layer
    writes = []
    for obj in objects:
        mapper = inspect(obj).mapper
        values = {
            prop.columns[0].key: obj.__dict__[prop.key]
            for prop in mapper.column_attrs
            if prop.key in obj.__dict__
        }
        writes.append((_direct_insert(mapper.local_table, tuple(values)), values))
    prepared = prepare_writes(connection, writes)
    for obj, write in zip(objects, prepared, strict=True):
        mapper = inspect(obj).mapper
        for column_key, value in write.computed.items():  # defaults the INSERT applies: not reloaded
            prop = mapper.get_property_by_column(mapper.local_table.c[column_key])
            obj.__dict__[prop.key] = value
        make_transient_to_detached(obj)
    try:
        run_writes(connection, prepared)  # back to back: on SQLite, all that runs inside the write gate
    except BaseException:
        for obj in objects:
            make_transient(obj)
        raise


@functools.lru_cache(maxsize=64)
def _direct_insert(table: Table, column_keys: tuple[str, ...]) -> Direct:
    return Direct(insert(table), column_keys=column_keys)


def loaded(cls: type, values: dict[str, Any]) -> Any:
    """The session's instance of `cls` for these column values, as a query would return it.

    The session's own instance when it already has this identity (kept as it is, as a query keeps it);
    otherwise one built from `values` and attached as persistent and clean. For hot reads that fetch
    plain Core rows (cheap) but hand ORM objects to the code after them.
    """
    session = db.session()  # this request's Session itself: each use of the scoped proxy looks it up again
    mapper = inspect(cls)
    identity = mapper.identity_key_from_primary_key([values[c.key] for c in mapper.primary_key])
    existing = session.identity_map.get(identity)
    if existing is not None:
        return existing
    if not mapper.configured:
        configure_mappers()  # what a constructor or query would have done first
    obj = mapper.class_manager.new_instance()
    obj.__dict__.update(values)  # as the ORM's own loading fills an instance: no attribute events
    make_transient_to_detached(obj)
    session.add(obj)
    return obj
