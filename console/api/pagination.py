"""Keyset pagination for collections: `{"meta": {"count", "next_cursor"}, "data": [...]}`.

The cursor is an opaque, URL-safe encoding of the last row's sort key, so a page
costs one indexed range scan however deep it is (no OFFSET).
"""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from flask import request
from sqlalchemy import Select, and_, or_

from console.core.errors import FieldError, ValidationFailed
from console.core.timeutil import parse_datetime
from console.extensions import db

DEFAULT_LIMIT = 25
MAX_LIMIT = 100


def _encode_value(value: Any) -> list:
    if isinstance(value, datetime):
        return ["dt", value.isoformat()]
    if isinstance(value, uuid.UUID):
        return ["uuid", str(value)]
    return ["v", value]


def _decode_value(tagged: list) -> Any:
    tag, value = tagged
    if tag == "dt":
        return parse_datetime(value)
    if tag == "uuid":
        return uuid.UUID(value)
    return value


def encode_cursor(values: Sequence[Any]) -> str:
    raw = json.dumps([_encode_value(v) for v in values], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str, width: int) -> list[Any]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        values = [_decode_value(item) for item in json.loads(raw)]
    except (ValueError, TypeError, binascii.Error, json.JSONDecodeError) as exc:
        raise ValidationFailed([FieldError("cursor", "is not a cursor this API returned")]) from exc
    if len(values) != width:
        raise ValidationFailed([FieldError("cursor", "is not a cursor this API returned")])
    return values


def page_limit() -> int:
    text = request.args.get("limit")
    if text is None:
        return DEFAULT_LIMIT
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_LIMIT:
        raise ValidationFailed([FieldError("limit", f"must be an integer from 1 to {MAX_LIMIT}")])
    return value


def _after(columns: Sequence[Any], values: Sequence[Any], descending: bool):
    """Rows strictly after `values` in (col1, col2, ...) order, written out for every backend.

    The leading plain bound on the first column is redundant logically, but it is what lets
    SQLite turn the condition into an index range instead of scanning the whole scope.
    """
    clauses = []
    for i, column in enumerate(columns):
        equal = [columns[j] == values[j] for j in range(i)]
        beyond = column < values[i] if descending else column > values[i]
        clauses.append(and_(*equal, beyond))
    first = columns[0] <= values[0] if descending else columns[0] >= values[0]
    return and_(first, or_(*clauses))


def paginate(
    query: Select,
    *,
    order_by: Sequence[Any],
    serialize: Callable[[Any], dict],
    descending: bool = True,
    key: Callable[[Any], Sequence[Any]] | None = None,
    columns: bool = False,
) -> dict:
    """Run one page of `query` ordered by `order_by` (last column unique) and build the envelope.

    `query` selects one entity; or, with `columns=True`, named columns including those of `order_by`
    (a view reading only what it shows): `serialize` then gets rows, with attribute access.
    """
    limit = page_limit()
    cursor = request.args.get("cursor")
    if cursor:
        values = decode_cursor(cursor, len(order_by))
        query = query.where(_after(order_by, values, descending))
    ordering = [c.desc() for c in order_by] if descending else [c.asc() for c in order_by]
    page = query.order_by(*ordering).limit(limit + 1)
    # Columns run on the session's connection directly: plain rows, without the ORM's result processing
    # (half the cost of a page of jobs).
    result = db.session.connection().execute(page) if columns else db.session.scalars(page)
    rows = list(result.all())
    has_more = len(rows) > limit
    rows = rows[:limit]
    next_cursor = None
    if has_more and rows:
        last = rows[-1]
        next_cursor = encode_cursor(key(last) if key else [getattr(last, c.key) for c in order_by])
    return {"meta": {"count": len(rows), "next_cursor": next_cursor}, "data": [serialize(r) for r in rows]}
