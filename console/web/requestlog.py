"""The request log: every exchange the console had with the API, per workspace, secrets masked."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import select

from console.extensions import db
from console.web import keyset
from console.web.models import ConsoleRequest

SECRET_HEADER = "x-api-secret"
# Stored in place of the secret: the log must never hold a credential in clear.
SECRET_PLACEHOLDER = "<API_SECRET>"
PAGE_SIZE = 25


def record(*, request_headers: dict[str, str], **fields: Any) -> ConsoleRequest:
    """Store one exchange with the secret header replaced by a placeholder."""
    headers = {
        name: (SECRET_PLACEHOLDER if name.lower() == SECRET_HEADER else value)
        for name, value in request_headers.items()
    }
    # A URL built from what a person typed (a 5,000-character link_token_id) can outgrow its column;
    # the log keeps its start rather than failing the exchange (PostgreSQL refuses, SQLite would not).
    for name in ("url", "path"):
        fields[name] = _clip(fields[name], getattr(ConsoleRequest, name).type.length)
    row = ConsoleRequest(request_headers=headers, **fields)
    row.request_id = _header(row.response_headers, "x-service-request-id")
    db.session.add(row)
    db.session.flush()
    return row


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _header(headers: dict[str, Any], name: str) -> str | None:
    for key, value in headers.items():
        if key.lower() == name:
            return value
    return None


def get(workspace_id: uuid.UUID, request_id: uuid.UUID | str) -> ConsoleRequest | None:
    """One logged exchange of this workspace, or None (another workspace's id is not found either)."""
    try:
        ident = uuid.UUID(str(request_id))
    except ValueError:
        return None
    row = db.session.get(ConsoleRequest, ident)
    return row if row is not None and row.workspace_id == workspace_id else None


def latest(workspace_id: uuid.UUID, step: str) -> ConsoleRequest | None:
    """The newest exchange a console step made."""
    return db.session.scalars(
        select(ConsoleRequest)
        .where(ConsoleRequest.workspace_id == workspace_id, ConsoleRequest.step == step)
        .order_by(ConsoleRequest.created_at.desc(), ConsoleRequest.id.desc())
        .limit(1)
    ).first()


def succeeded(workspace_id: uuid.UUID, step: str) -> bool:
    """Whether a step's call ever got a 2xx answer."""
    return (
        db.session.scalars(
            select(ConsoleRequest.id)
            .where(
                ConsoleRequest.workspace_id == workspace_id,
                ConsoleRequest.step == step,
                ConsoleRequest.status >= 200,
                ConsoleRequest.status < 300,
            )
            .limit(1)
        ).first()
        is not None
    )


COLUMNS = (ConsoleRequest.created_at, ConsoleRequest.id)


def page(workspace_id: uuid.UUID, cursor: str | None = None, limit: int = PAGE_SIZE) -> keyset.Page:
    """One page of the log, newest first."""
    query = select(ConsoleRequest).where(ConsoleRequest.workspace_id == workspace_id)
    return keyset.newest_first(query, COLUMNS, cursor=cursor, limit=limit)


def newer(workspace_id: uuid.UUID, cursor: str | None) -> list[ConsoleRequest]:
    """Exchanges logged after the cursor (the live poll), newest first."""
    return keyset.newer_than(
        select(ConsoleRequest).where(ConsoleRequest.workspace_id == workspace_id), COLUMNS, cursor
    )


def live_cursor(rows: list[ConsoleRequest], previous: str | None = None) -> str:
    """Where the next live poll starts: the newest row shown, or where the last poll was."""
    return keyset.cursor_of(rows[0]) if rows else (previous or keyset.encode_start())
