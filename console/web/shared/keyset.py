"""Keyset pagination for console lists: newest first on (created_at, id), one index range scan a page."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

from sqlalchemy import ColumnElement, Select

from console.api.pagination import decode_cursor, encode_cursor
from console.extensions import db

T = TypeVar("T")


@dataclass(frozen=True)
class Page(Generic[T]):
    rows: list[T]
    next_cursor: str | None


def _beyond(columns: Sequence[Any], values: Sequence[Any], older: bool) -> ColumnElement[bool]:
    """Rows strictly older (or newer) than `values` in (time, id) order.

    The leading plain bound on the time column is redundant logically but not for planners:
    SQLite cannot turn `t < x OR (t = x AND id < y)` alone into an index range, and scans.
    """
    time_col, id_col = columns
    time_value, id_value = values
    if older:
        return (time_col <= time_value) & ((time_col < time_value) | (id_col < id_value))
    return (time_col >= time_value) & ((time_col > time_value) | (id_col > id_value))


def cursor_values(cursor: str | None, columns: Sequence[Any], name: str) -> list[Any] | None:
    """Decode a cursor this module made for `columns`; a damaged one is a `ValidationFailed` naming
    the query parameter `name` (the console shows it as a message on the page)."""
    if not cursor:
        return None
    return decode_cursor(cursor, columns, name=name)


def cursor_of(row: Any, time_attr: str = "created_at") -> str:
    model = type(row)
    return encode_cursor([getattr(row, time_attr), row.id], (getattr(model, time_attr), model.id))


def encode_start(columns: Sequence[Any]) -> str:
    """A cursor before every row of the list sorted by `columns`: live polling of an empty list starts from it."""
    return encode_cursor([datetime(1970, 1, 1, tzinfo=UTC), uuid.UUID(int=0)], columns)


def newest_first(
    query: Select,
    columns: Sequence[Any],
    *,
    cursor: str | None = None,
    limit: int = 25,
    key: Callable[[Any], str] | None = None,
) -> Page:
    """One page of `query` older than `cursor`, newest first."""
    values = cursor_values(cursor, columns, "cursor")
    if values is not None:
        query = query.where(_beyond(columns, values, older=True))
    ordered = query.order_by(*(c.desc() for c in columns)).limit(limit + 1)
    rows = list(db.session.scalars(ordered))
    more = len(rows) > limit
    rows = rows[:limit]
    next_cursor = (key or cursor_of)(rows[-1]) if more and rows else None
    return Page(rows, next_cursor)


def newer_than(query: Select, columns: Sequence[Any], cursor: str | None, *, limit: int = 100) -> list[Any]:
    """Rows newer than `cursor` (for live polling), newest first; none when there is no cursor."""
    values = cursor_values(cursor, columns, "after")
    if values is None:
        return []
    query = query.where(_beyond(columns, values, older=False))
    # Oldest-first limit then reversed: a burst larger than `limit` keeps the rows adjacent to the cursor.
    rows = list(db.session.scalars(query.order_by(*(c.asc() for c in columns)).limit(limit)))
    return rows[::-1]
