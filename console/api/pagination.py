"""Keyset pagination for collections: `{"meta": {"count", "next_cursor"}, "data": [...]}`.

The cursor is an opaque, URL-safe encoding of the last row's sort key, so a page
costs one indexed range scan however deep it is (no OFFSET). It names the list it was made for (the sort
columns' table) and carries a MAC keyed by the app's `SECRET_KEY`: a cursor another list returned, or one
written by hand, is refused with a 400 naming it, as the API reference promises, before any of it is read.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import hmac
import json
import re
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from flask import current_app, request
from sqlalchemy import DateTime, Integer, Select, String, TypeDecorator, Uuid, and_, bindparam, or_

from console.core.errors import FieldError, ValidationFailed
from console.core.timeutil import parse_datetime
from console.db.direct import Direct
from console.extensions import db

DEFAULT_LIMIT = 25
MAX_LIMIT = 100
_LIMIT_DIGITS = re.compile(r"[0-9]{1,4}")


# The tag each column type is encoded with; a cursor whose tags differ from its list's columns is refused.
DATETIME_TAG, UUID_TAG, TEXT_TAG = "dt", "uuid", "v"
# A cursor holds its list's name and two or three short values; anything longer was not made here.
MAX_CURSOR_LENGTH = 600
MAC_BYTES = 12  # a cursor's MAC, after its JSON
MAX_VALUE_LENGTH = 255
_CURSOR_ALPHABET = re.compile(r"[A-Za-z0-9_-]+={0,2}")


class BadCursor(ValueError):
    """A cursor this service did not make (or made for another list)."""


class OtherFilters(BadCursor):
    """A cursor of this list made under other filters (its 400 says to keep the first page's filters)."""


def _encode_value(value: Any) -> list:
    if isinstance(value, datetime):
        return [DATETIME_TAG, value.isoformat()]
    if isinstance(value, uuid.UUID):
        return [UUID_TAG, str(value)]
    return [TEXT_TAG, value]


def column_tag(column: Any) -> str:
    """The tag of a sort column's values in a cursor, from its SQL type."""
    type_ = column.type
    impl = type_.impl if isinstance(type_, TypeDecorator) else type_
    if isinstance(impl, DateTime):
        return DATETIME_TAG
    if isinstance(impl, Uuid):
        return UUID_TAG
    if isinstance(impl, String):
        return TEXT_TAG
    raise TypeError(f"no cursor encoding for column {column} of type {type_}")


def _decode_value(tagged: Any, expected_tag: str) -> Any:
    if not (isinstance(tagged, list) and len(tagged) == 2):
        raise BadCursor("an item is not a [tag, value] pair")
    tag, value = tagged
    if tag != expected_tag:
        raise BadCursor("an item has the wrong tag for its column")
    if not isinstance(value, str) or len(value) > MAX_VALUE_LENGTH or "\x00" in value:
        raise BadCursor("an item is not a short string")
    if tag == DATETIME_TAG:
        return parse_datetime(value)  # ValueError, out-of-range ones included
    if tag == UUID_TAG:
        return uuid.UUID(value)
    return value


def list_name(columns: Sequence[Any]) -> str:
    """The list a cursor is made for: the table of its sort columns."""
    return columns[0].table.name


# Query parameters that move through a list rather than choose it: every other one is a filter.
PAGING_PARAMETERS = frozenset({"cursor", "limit"})


def filtered_list_name(list_: str) -> str:
    """`list_` as this API request filters it: the list name plus a digest of its filters (every query
    parameter but `cursor` and `limit`), so a cursor continues only the list it came from. Another filter's
    cursor would otherwise be taken silently and skip what that list holds before its position."""
    filters = sorted(
        (k, v) for k, values in request.args.lists() if k not in PAGING_PARAMETERS for v in values
    )
    if not filters:
        return list_
    digest = hashlib.sha256(json.dumps(filters, separators=(",", ":")).encode()).hexdigest()[:16]
    return f"{list_}?{digest}"


def _mac(raw: bytes) -> bytes:
    key = hmac.new(str(current_app.secret_key).encode(), b"pagination cursor", hashlib.sha256).digest()
    return hmac.new(key, raw, hashlib.sha256).digest()[:MAC_BYTES]


def encode_cursor(values: Sequence[Any], columns: Sequence[Any]) -> str:
    """The cursor after `values` in the list sorted by `columns`."""
    return encode_list_cursor(list_name(columns), values)


def encode_list_cursor(list_: str, values: Sequence[Any]) -> str:
    """The cursor after `values` in the list named `list_` (a list not read from one table: the search)."""
    raw = json.dumps([list_, *(_encode_value(v) for v in values)], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw + _mac(raw)).decode().rstrip("=")


def decode_cursor(cursor: str, columns: Sequence[Any], *, name: str = "cursor") -> list[Any]:
    """The sort-key values of a cursor made for `columns`, or a 400 naming the parameter `name`."""
    return decode_list_cursor(cursor, list_name(columns), [column_tag(c) for c in columns], name=name)


def decode_list_cursor(cursor: str, list_: str, tags: Sequence[str], *, name: str = "cursor") -> list[Any]:
    """The values of a cursor made for the list `list_`, tagged `tags`, or a 400 naming the parameter `name`.

    The one place cursors are read (API lists and console lists alike): everything about a cursor
    is checked (alphabet, length, JSON shape, one tagged short string per column, each value
    parseable as its column's type) before any of it reaches a query. An empty one (`?cursor=`) is
    refused too: no list returns one, and the first page is asked for by leaving the parameter out.
    """
    if cursor == "":
        raise ValidationFailed(
            [
                FieldError(
                    name, "is empty: leave it out for the first page, or give the next_cursor a page returned"
                )
            ]
        )
    try:
        if len(cursor) > MAX_CURSOR_LENGTH or not _CURSOR_ALPHABET.fullmatch(cursor):
            raise BadCursor("not a short base64url string")
        bare = cursor.rstrip("=")
        signed = base64.urlsafe_b64decode(bare + "=" * (-len(bare) % 4))
        raw, mac = signed[:-MAC_BYTES], signed[-MAC_BYTES:]
        if len(signed) <= MAC_BYTES or not hmac.compare_digest(mac, _mac(raw)):
            raise BadCursor("not made here (or made with another SECRET_KEY)")
        items = json.loads(raw)
        if not isinstance(items, list) or len(items) != len(tags) + 1:
            raise BadCursor("made for another list")
        made_for = items[0]
        if made_for != list_:
            if isinstance(made_for, str) and made_for.split("?")[0] == list_.split("?")[0]:
                raise OtherFilters("made for this list with other filters")
            raise BadCursor("made for another list")
        return [_decode_value(item, tag) for item, tag in zip(items[1:], tags, strict=True)]
    except OtherFilters as exc:
        message = (
            "was returned for other filters: send each page's cursor with the same filters as the "
            "first page (only limit may change), or leave it out to start again"
        )
        raise ValidationFailed([FieldError(name, message)]) from exc
    except (ValueError, binascii.Error) as exc:  # BadCursor, JSON, UTF-8, UUID and datetime errors
        raise ValidationFailed([FieldError(name, "is not a cursor this list returned")]) from exc


def page_limit() -> int:
    text = request.args.get("limit")
    if text is None:
        return DEFAULT_LIMIT
    # Plain ASCII digits only: int() alone also takes "1_0", " 5 " and other scripts' digits.
    value = int(text) if _LIMIT_DIGITS.fullmatch(text) else 0
    if not 1 <= value <= MAX_LIMIT:
        raise ValidationFailed([FieldError("limit", f"must be an integer from 1 to {MAX_LIMIT}")])
    return value


def _after(columns: Sequence[Any], values: Sequence[Any], descending: bool):
    """Rows strictly after `values` in (col1, col2, ...) order, written out for every backend.

    The leading plain bound on the first column is redundant logically, but it is what lets
    SQLite turn the condition into an index range instead of scanning the whole scope.
    `values` may be bound parameters (the reusable statements of `_page_statement`).
    """
    clauses = []
    for i, column in enumerate(columns):
        equal = [columns[j] == values[j] for j in range(i)]
        beyond = column < values[i] if descending else column > values[i]
        clauses.append(and_(*equal, beyond))
    first = columns[0] <= values[0] if descending else columns[0] >= values[0]
    return and_(first, or_(*clauses))


def _ordered(query: Select, order_by: Sequence[Any], descending: bool) -> Select:
    return query.order_by(*[c.desc() if descending else c.asc() for c in order_by])


@functools.lru_cache(maxsize=64)
def _page_statement(query: Select, order_by: tuple, descending: bool, after_cursor: bool) -> Select:
    """A page of a reusable statement, its bounds left as parameters (`page_limit`, `after_<n>`).

    Built once per statement and shape: composing a statement (and working out its cache key) costs
    more than running it, and the job list runs it on every request.
    """
    if after_cursor:
        bounds = [bindparam(f"after_{i}", type_=c.type) for i, c in enumerate(order_by)]
        query = query.where(_after(order_by, bounds, descending))
    return _ordered(query, order_by, descending).limit(bindparam("page_limit", type_=Integer))


@functools.lru_cache(maxsize=64)
def _direct_page(
    query: Select, order_by: tuple, descending: bool, after_cursor: bool, uuids_as_text: bool
) -> Direct:
    return Direct(_page_statement(query, order_by, descending, after_cursor), uuids_as_text=uuids_as_text)


def paginate(
    query: Select,
    *,
    order_by: Sequence[Any],
    serialize: Callable[[Any], dict],
    descending: bool = True,
    key: Callable[[Any], Sequence[Any]] | None = None,
    columns: bool = False,
    params: dict[str, Any] | None = None,
    uuids_as_text: bool = False,
) -> dict:
    """Run one page of `query` ordered by `order_by` (last column unique) and build the envelope.

    `query` selects one entity; or, with `columns=True`, named columns including those of `order_by`
    (a view reading only what it shows): `serialize` then gets rows, with attribute access.
    With `params`, `query` is a statement built once and reused (its values as bound parameters,
    given here): the page statement around it is built once too. With both, `uuids_as_text` gives
    `serialize` UUID columns as their text (see `Direct`); the cursor still holds them as UUIDs.
    """
    limit = page_limit()
    cursor = request.args.get("cursor")
    list_ = filtered_list_name(list_name(order_by))
    tags = [column_tag(c) for c in order_by]
    values = decode_list_cursor(cursor, list_, tags) if cursor is not None else None  # "" is refused
    if params is not None:
        params = {**params, "page_limit": limit + 1}
        for i, value in enumerate(values or ()):
            params[f"after_{i}"] = value
    if params is not None and columns:
        # A reused statement of columns runs straight on the DBAPI cursor (`Direct`): plain rows,
        # without the ORM's result processing or the execution layer (most of a page of jobs' cost).
        page = _direct_page(query, tuple(order_by), descending, values is not None, uuids_as_text)
        rows = page.rows(db.session.connection(), params)
    else:
        if params is not None:
            page = _page_statement(query, tuple(order_by), descending, values is not None)
        else:
            if values is not None:
                query = query.where(_after(order_by, values, descending))
            page = _ordered(query, order_by, descending).limit(limit + 1)
        result = (
            db.session.connection().execute(page, params) if columns else db.session.scalars(page, params)
        )
        rows = list(result.all())
    has_more = len(rows) > limit
    rows = rows[:limit]
    next_cursor = None
    if has_more and rows:
        last = rows[-1]
        last_values = key(last) if key else [getattr(last, c.key) for c in order_by]
        if uuids_as_text:
            last_values = [
                uuid.UUID(v) if isinstance(v, str) and column_tag(c) == UUID_TAG else v
                for v, c in zip(last_values, order_by, strict=True)
            ]
        next_cursor = encode_list_cursor(list_, last_values)
    return {"meta": {"count": len(rows), "next_cursor": next_cursor}, "data": [serialize(r) for r in rows]}
