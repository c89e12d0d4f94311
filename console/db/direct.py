"""`Direct`: a Core statement compiled once per dialect and run straight on the DBAPI cursor.

Why: on the API's hottest paths (the key lookup of every request, the job list's page, the Link token's
INSERTs) SQLAlchemy's execution layer (execution context, parameter and result processing set up per call)
cost more than the database: about 60 µs of a 75 µs key lookup on SQLite. `Direct` keeps what matters
from that layer and skips the rest:

- the SQL, the bind order and every bind and result type conversion are SQLAlchemy's own, compiled once
  per dialect, so values go in and come out exactly as `Connection.execute` would give them (on SQLite,
  UUIDs and UTC datetimes are read by quicker processors that give the same values: `_quicker_processor`);
- the engine's `before_cursor_execute` / `after_cursor_execute` listeners still run (the SQLite write
  gate and query counters in tests depend on them);
- a DBAPI error is raised as SQLAlchemy's wrapped exception (the error handlers see what they always
  saw), and a lost connection is invalidated as `Connection.execute` would.

It runs on the session's connection, inside its transaction: nothing about commits changes. Not for
statements with expanding (`IN`) parameters, or INSERTs whose missing columns need a SQL-side default.
"""

from __future__ import annotations

import functools
import re
import uuid
from collections import namedtuple
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, NamedTuple

from sqlalchemy import Uuid, exc
from sqlalchemy.engine import Connection
from sqlalchemy.sql import ClauseElement

from console.db.base import UTCDateTime


class _Compiled:
    """One statement compiled for one dialect, with its conversions worked out."""

    def __init__(self, statement: ClauseElement, dialect: Any, column_keys: Sequence[str] | None) -> None:
        compiled = statement.compile(dialect=dialect, column_keys=column_keys)
        if any(getattr(b, "expanding", False) for b in compiled.binds.values()):
            raise ValueError("Direct does not run statements with expanding parameters")
        self.sql = compiled.string
        self.positional = compiled.positional
        self.names = list(compiled.positiontup) if compiled.positional else list(compiled.bind_names.values())
        self.binds = {
            name: _quicker_bind(compiled.binds[name].type, dialect, process)
            for name, process in compiled._bind_processors.items()
        }
        # Values written into the statement (not parameters at call time), by bind name; a parameter
        # missing at call time is a KeyError, never a silent NULL.
        self.defaults = {
            name: value
            for name, value in compiled.construct_params(_check=False).items()
            if not compiled.binds[name].required
        }
        # Python-side column defaults of an INSERT, filled in here as the execution context would.
        self.prefetch: list[tuple[str, Callable[[], Any]]] = []
        for column in getattr(compiled, "insert_prefetch", ()):
            default = column.default
            if default is None or not (default.is_scalar or default.is_callable):
                raise ValueError(f"Direct cannot compute the default of {column}")
            arg = default.arg
            self.prefetch.append(
                (column.key, (lambda v=arg: v) if default.is_scalar else (lambda f=arg: f(None)))
            )
        self.result_types = [entry[3] for entry in compiled._result_columns]
        self.result_keys = [entry[0] for entry in compiled._result_columns]
        self.processors: list[Callable | None] | None = None  # from the first cursor.description
        self.row_class = None

    def parameters(self, params: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
        """The DBAPI parameters for `params`, and the defaults computed for it (INSERT prefetch)."""
        computed = {key: make() for key, make in self.prefetch if key not in params}
        merged = {**self.defaults, **params, **computed} if (self.defaults or computed) else params
        binds = self.binds
        if self.positional:
            args: Any = tuple(
                binds[name](merged[name]) if name in binds else merged[name] for name in self.names
            )
        else:
            args = {name: binds[name](merged[name]) if name in binds else merged[name] for name in self.names}
        return args, computed

    def set_processors(
        self, dialect: Any, description: Sequence[Any], *, uuids_as_text: bool = False
    ) -> None:
        self.processors = [
            _uuid_text_processor(dialect, standard)
            if uuids_as_text and isinstance(type_, Uuid) and type_.as_uuid
            else _quicker_processor(type_, dialect, standard)
            for type_, column in zip(self.result_types, description, strict=True)
            for standard in (type_._cached_result_processor(dialect, column[1]),)
        ]
        # Attribute access by column key, as a Core row offers (duplicate keys keep their first place).
        keys = [key if key.isidentifier() else f"c{i}" for i, key in enumerate(self.result_keys)]
        self.row_class = namedtuple("DirectRow", keys, rename=True)


def _quicker_processor(type_: Any, dialect: Any, standard: Callable | None) -> Callable | None:
    """SQLAlchemy's result processor for `type_`, or a quicker one giving the same values where there is one.

    Why: on SQLite, UUIDs and datetimes come back as text and are converted one by one, and a page of ten
    jobs has ~30 UUIDs and ~20 datetimes: `uuid.UUID(text)` and SQLAlchemy's regular-expression date
    parsing (then our UTC tagging) were a tenth of an API GET. The quicker ones read the same text with
    `int(text, 16)` and `datetime.fromisoformat`, and hand anything they do not expect to `standard`
    (per value: UUID 2.4 → 1.1 µs, datetime 1.6 → ~0.3 µs).
    """
    if dialect.name != "sqlite" or standard is None:
        return standard
    if isinstance(type_, Uuid) and type_.as_uuid:
        return functools.partial(_uuid_from_hex, standard)
    if isinstance(type_, UTCDateTime):
        return functools.partial(_utc_datetime_from_text, standard)
    return standard


_LOWER_HEX_32 = re.compile(r"[0-9a-f]{32}").fullmatch
_new_object = object.__new__
_set_slot = object.__setattr__


def _uuid_from_hex(standard: Callable, value: Any) -> Any:
    """`uuid.UUID(value)` for the 32 hex digits SQLAlchemy stores a UUID as on SQLite."""
    if value.__class__ is not str or len(value) != 32:
        return standard(value)  # None, or a form only uuid.UUID's full parsing reads
    made = _new_object(uuid.UUID)
    _set_slot(made, "int", int(value, 16))  # as uuid.UUID.__init__ sets its slots
    _set_slot(made, "is_safe", uuid.SafeUUID.unknown)
    return made


def _uuid_text_processor(dialect: Any, standard: Callable | None) -> Callable:
    """A result processor giving a UUID column's canonical text (`str()` of the UUID it holds), or None."""
    if dialect.name == "sqlite":
        return functools.partial(_uuid_text_from_hex, standard)
    return functools.partial(_uuid_text, standard)


def _uuid_text(standard: Callable | None, value: Any) -> str | None:
    if standard is not None:
        value = standard(value)
    return None if value is None else str(value)


def _uuid_text_from_hex(standard: Callable | None, value: Any) -> str | None:
    """`str(uuid.UUID(value))` for the 32 lowercase hex digits SQLite holds, without making the UUID
    (~0.5 µs, not ~2.5)."""
    if value.__class__ is str and _LOWER_HEX_32(value):
        return f"{value[:8]}-{value[8:12]}-{value[12:16]}-{value[16:20]}-{value[20:]}"
    return _uuid_text(standard, value)  # None, or any other form, read by uuid.UUID's full parsing


def _utc_datetime_from_text(standard: Callable, value: Any) -> Any:
    """The aware UTC datetime `UTCDateTime` makes of SQLite's text (`2026-11-26 13:40:00.123456`, in UTC)."""
    if value.__class__ is str:
        try:
            # Parsed with its offset, not tagged after: `replace(tzinfo=...)` costs ten times the parse.
            parsed = datetime.fromisoformat(value + "+00:00")
        except ValueError:
            parsed = None
        if parsed is not None and parsed.tzinfo is UTC:
            return parsed
    return standard(value)  # None, or text of another shape


def _quicker_bind(type_: Any, dialect: Any, standard: Callable) -> Callable:
    """SQLAlchemy's bind processor for `type_`, or a quicker one storing the same text where there is one.

    Why: on SQLite a UTC datetime is stored as text, made by `UTCDateTime` (to UTC, then naive) and the
    dialect's `%`-formatting of seven fields, ~3 µs a value; a Link token's INSERTs and each request-log row
    bind several.
    """
    if dialect.name == "sqlite" and isinstance(type_, UTCDateTime):
        return functools.partial(_utc_datetime_to_text, standard)
    return standard


def _utc_datetime_to_text(standard: Callable, value: Any) -> Any:
    """SQLite's stored text of an aware UTC datetime (`2026-11-26 13:40:00.123456`), as `standard` makes it."""
    if value.__class__ is datetime and value.tzinfo is UTC:
        text = value.isoformat(" ")[:-6]  # without its "+00:00"
        return text if value.microsecond else text + ".000000"  # isoformat leaves zero microseconds out
    return standard(value)  # None, another zone (converted to UTC there), or a naive one (refused there)


class Direct:
    """A statement run with `rows`, `first` or `write` on a SQLAlchemy `Connection`."""

    def __init__(
        self,
        statement: ClauseElement,
        column_keys: Sequence[str] | None = None,
        *,
        uuids_as_text: bool = False,
    ) -> None:
        """`uuids_as_text`: `rows` and `first` give UUID columns as their canonical text (what `str()` of the
        UUID gives), for callers that only write them out: a page of ten jobs read ~30 UUIDs only to turn
        each back into text, a twentieth of an API GET."""
        self.statement = statement
        self.column_keys = list(column_keys) if column_keys is not None else None
        self.uuids_as_text = uuids_as_text
        self._by_dialect: dict[int, _Compiled] = {}

    def _compiled(self, dialect: Any) -> _Compiled:
        compiled = self._by_dialect.get(id(dialect))
        if compiled is None:
            compiled = self._by_dialect[id(dialect)] = _Compiled(self.statement, dialect, self.column_keys)
        return compiled

    def _execute(self, connection: Connection, params: Mapping[str, Any]) -> tuple[Any, _Compiled, dict]:
        compiled = self._compiled(connection.dialect)
        args, computed = compiled.parameters(params)
        return self._run(connection, compiled, args), compiled, computed

    def _run(self, connection: Connection, compiled: _Compiled, args: Any, *, many: bool = False) -> Any:
        """Execute (`executemany` with `many`) on the connection's DBAPI cursor, with the engine's cursor
        listeners; returns the cursor."""
        sql = compiled.sql
        if not connection.in_transaction():
            connection.begin()  # as `execute` would (autobegin); a session's connection is in one already
        fairy = connection.connection
        for listener in connection.dispatch.before_cursor_execute:
            listener(connection, None, sql, args, None, many)
        cursor = fairy.dbapi_connection.cursor()
        try:
            (cursor.executemany if many else cursor.execute)(sql, args)
        except Exception as error:
            cursor.close()
            self._raise(connection, fairy, error, sql, args)
        for listener in connection.dispatch.after_cursor_execute:
            listener(connection, cursor, sql, args, None, many)
        return cursor

    @staticmethod
    def _raise(connection: Connection, fairy: Any, error: Exception, sql: str, args: Any) -> None:
        dialect = connection.dialect
        dbapi_error = dialect.loaded_dbapi.Error
        if not isinstance(error, dbapi_error):
            raise error
        lost = dialect.is_disconnect(error, fairy.dbapi_connection, None)
        if lost:
            # As `Connection.execute` does: a connection lost means the server restarted (or cut every
            # connection), so every pooled connection made before now is dead too. Invalidating only this
            # one left each of the others to fail a request of its own: one 503 per pooled connection
            # (up to DB_POOL_SIZE per process) instead of one per process (docs/operations.md).
            connection.engine.pool._invalidate(fairy, error)
            connection.invalidate(error)
        raise exc.DBAPIError.instance(
            sql, args, error, dbapi_error, connection_invalidated=lost, dialect=dialect
        ) from error

    def rows(self, connection: Connection, params: Mapping[str, Any] | None = None) -> list[Any]:
        """Every row, converted as `Connection.execute` would, with attribute access by column key."""
        cursor, compiled, _ = self._execute(connection, params or {})
        try:
            raw = cursor.fetchall()
            if compiled.processors is None:
                compiled.set_processors(
                    connection.dialect, cursor.description, uuids_as_text=self.uuids_as_text
                )
        finally:
            cursor.close()
        processors, make = compiled.processors, compiled.row_class._make
        if not any(processors):
            return [make(row) for row in raw]
        pairs = list(enumerate(processors))
        return [make([p(row[i]) if p else row[i] for i, p in pairs]) for row in raw]

    def first(self, connection: Connection, params: Mapping[str, Any] | None = None) -> Any | None:
        rows = self.rows(connection, params)
        return rows[0] if rows else None

    def write_many(self, connection: Connection, rows: Sequence[Mapping[str, Any]]) -> None:
        """One INSERT (or UPDATE) run for every row with the DBAPI's `executemany`; rows share their keys."""
        if not rows:
            return
        compiled = self._compiled(connection.dialect)
        many = [compiled.parameters(row)[0] for row in rows]
        self._run(connection, compiled, many, many=True).close()

    def write(self, connection: Connection, params: Mapping[str, Any]) -> dict[str, Any]:
        """Run an INSERT, UPDATE or DELETE; returns the column defaults it filled in (INSERT)."""
        cursor, _, computed = self._execute(connection, params)
        cursor.close()
        return computed


class PreparedWrite(NamedTuple):
    """One write of `prepare_writes`: its statement, DBAPI parameters, and the defaults it fills in."""

    direct: Direct
    compiled: _Compiled
    args: Any
    computed: dict[str, Any]


def prepare_writes(
    connection: Connection, writes: Sequence[tuple[Direct, Mapping[str, Any]]]
) -> list[PreparedWrite]:
    """Every parameter of these writes worked out (column defaults computed), nothing run yet."""
    prepared = []
    for direct, params in writes:
        compiled = direct._compiled(connection.dialect)
        prepared.append(PreparedWrite(direct, compiled, *compiled.parameters(params)))
    return prepared


def run_writes(connection: Connection, prepared: Sequence[PreparedWrite]) -> None:
    """Run prepared writes back to back, in order.

    Their parameters were all worked out beforehand (`prepare_writes`): on SQLite the first write takes the
    write gate, which every other writer then waits for, so nothing but the statements runs inside it.
    """
    for write in prepared:
        write.direct._run(connection, write.compiled, write.args).close()
