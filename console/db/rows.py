"""The API's hot paths without the ORM's bookkeeping: `insert_now` writes new objects with plain Core
INSERTs; a `Snapshot` is a row read for its values only; `loaded` and `entity` give the session's ORM
instance of values already read, without a query."""

from __future__ import annotations

import functools
from typing import Any

from sqlalchemy import Table, insert, inspect
from sqlalchemy.orm import configure_mappers, make_transient, make_transient_to_detached
from sqlalchemy.orm.attributes import set_committed_value

from console.db.direct import Direct, prepare_writes, run_writes
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


def new(cls: type, **values: Any) -> Any:
    """A new (transient) instance of `cls` holding `values`, made without the ORM's attribute events.

    For objects the hot paths write with `insert_now` (or add to the session): the mapped constructor runs
    an event for each attribute it sets, ~4% of a Link token request for its 28 values. Like the
    constructor, it refuses a name that is not one of the class's mapped attributes.
    """
    mapper = inspect(cls)
    unknown = values.keys() - _attribute_keys(mapper)
    if unknown:
        raise TypeError(f"{sorted(unknown)[0]!r} is an invalid keyword argument for {cls.__name__}")
    if not mapper.configured:
        configure_mappers()
    obj = mapper.class_manager.new_instance()
    obj.__dict__.update(values)
    return obj


@functools.cache
def _attribute_keys(mapper: Any) -> frozenset[str]:
    return frozenset(mapper.attrs.keys())


def loaded(cls: type, values: dict[str, Any]) -> Any:
    """The session's instance of `cls` for these column values, as a query would return it.

    The session's own instance when it already has this identity (kept as it is, as a query keeps it);
    otherwise one built from `values` and attached as persistent and clean. For hot reads that fetch
    plain Core rows (cheap) but hand ORM objects to the code after them.
    """
    session = db.session()  # this request's Session itself: each use of the scoped proxy looks it up again
    mapper = inspect(cls)
    existing = session.identity_map.get(_identity(mapper, values))
    if existing is not None:
        return existing
    if not mapper.configured:
        configure_mappers()  # what a constructor or query would have done first
    obj = mapper.class_manager.new_instance()
    obj.__dict__.update(values)  # as the ORM's own loading fills an instance: no attribute events
    make_transient_to_detached(obj)
    session.add(obj)
    return obj


class Snapshot:
    """One row's column values as read-only attributes, named as on its model, plus snapshots of related rows.

    For a hot path that reads an entity and changes nothing (the API key and workspace of every API
    request): making the session's ORM instances of them, then expiring them at the commit, cost ~8% of
    the instructions of an API request. A caller that changes the row or follows a relationship the
    snapshot does not hold takes its `entity`. A snapshot does not follow later changes to its row.
    """

    __slots__ = ("_columns", "_related", "model")

    def __init__(
        self, model: type, columns: dict[str, Any], related: dict[str, Snapshot] | None = None
    ) -> None:
        object.__setattr__(self, "model", model)
        object.__setattr__(self, "_columns", columns)
        object.__setattr__(self, "_related", related or {})

    def __getattr__(self, name: str) -> Any:
        if name in self._columns:
            return self._columns[name]
        if name in self._related:
            return self._related[name]
        raise AttributeError(
            f"a {self.model.__name__} snapshot has no {name!r}: take its entity (console.db.rows.entity)"
        )

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(
            f"a {self.model.__name__} snapshot is read-only: change its entity (console.db.rows.entity)"
        )

    def __repr__(self) -> str:
        return f"<{self.model.__name__} snapshot {self._columns.get('id')}>"


def entity(snapshot: Snapshot) -> Any:
    """The session's ORM instance of a snapshot's row (and of its related rows), made without a query.

    The session's own instance when it already holds that row (so a change made through it is kept), as
    `loaded`; its relationships to the snapshot's related rows are set as a joined load would set them.
    """
    obj = loaded(snapshot.model, snapshot._columns)
    for name, related in snapshot._related.items():
        if name not in obj.__dict__:
            set_committed_value(obj, name, entity(related))
    return obj


def session_instance(snapshot: Snapshot) -> Any | None:
    """The session's instance of a snapshot's row if a caller has taken or loaded it, else None (no query)."""
    return db.session().identity_map.get(_identity(inspect(snapshot.model), snapshot._columns))


def _identity(mapper: Any, values: dict[str, Any]) -> Any:
    """The identity key of the row whose attribute values these are."""
    return mapper.identity_key_from_primary_key([values[name] for name in _primary_key_names(mapper)])


@functools.cache
def _primary_key_names(mapper: Any) -> tuple[str, ...]:
    return tuple(mapper.get_property_by_column(column).key for column in mapper.primary_key)
