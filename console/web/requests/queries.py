"""Reading the request log (every API call of a workspace), and writing the console's own calls at once.

Rows of calls from outside the console are written by `console.requestlog.writer`; the console's
`ApiClient` writes its own with `record`, from the row the API's hook built (see
`console.requestlog.capture`).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import func, not_, select

from console.core.timeutil import utcnow
from console.extensions import db
from console.requestlog import listener_requests
from console.requestlog.capture import stored_headers
from console.requestlog.models import KeyUsageDay, RequestLogEntry
from console.requestlog.redact import mask_api_secrets, redact_body, redact_pairs
from console.web.shared import keyset
from console.workspaces.models import Workspace

PAGE_SIZE = 25
STATUS_CLASSES = ("2xx", "4xx", "5xx")
MAX_FILTER_CHARS = 200


def record(*, request_headers: dict[str, str], **fields: Any) -> RequestLogEntry:
    """Store one exchange of the console's: the secret header replaced, bodies redacted, clock time set."""
    fields["request_body"] = redact_body(fields.get("request_body") or "")
    fields["response_body"] = redact_body(fields.get("response_body") or "")
    if "?" in (fields.get("url") or ""):
        base, query = fields["url"].split("?", 1)
        fields["url"] = f"{base}?{redact_pairs(query)}"
    # The path of a console call can hold what a person typed (Try it's path parameters).
    for name in ("url", "path"):
        if fields.get(name):
            fields[name] = mask_api_secrets(fields[name])
    if fields.get("id") is None:
        fields.pop("id", None)
    row = RequestLogEntry(request_headers=stored_headers(request_headers), **fields)
    if row.created_at is None:
        row.created_at = utcnow()
    if row.clock_at is None:
        workspace = db.session.get(Workspace, row.workspace_id)
        offset = workspace.clock_offset_seconds if workspace is not None else 0.0
        row.clock_at = row.created_at + timedelta(seconds=offset or 0.0)
    # A URL built from what a person typed (a 5,000-character link_token_id) can outgrow its column;
    # the log keeps its start rather than failing the exchange (PostgreSQL refuses, SQLite would not).
    row.url = _clip(row.url, RequestLogEntry.url.type.length)
    row.path = _clip(row.path, RequestLogEntry.path.type.length)
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


def get(workspace_id: uuid.UUID, request_id: uuid.UUID | str) -> RequestLogEntry | None:
    """One logged exchange of this workspace, or None (another workspace's id is not found either)."""
    try:
        ident = uuid.UUID(str(request_id))
    except ValueError:
        return None
    row = db.session.get(RequestLogEntry, ident)
    return row if row is not None and row.workspace_id == workspace_id else None


def latest(workspace_id: uuid.UUID, step: str) -> RequestLogEntry | None:
    """The newest exchange a console step made."""
    return db.session.scalars(
        select(RequestLogEntry)
        .where(RequestLogEntry.workspace_id == workspace_id, RequestLogEntry.step == step)
        .order_by(RequestLogEntry.created_at.desc(), RequestLogEntry.id.desc())
        .limit(1)
    ).first()


def succeeded(workspace_id: uuid.UUID, step: str) -> bool:
    """Whether a step's call ever got a 2xx answer."""
    return (
        db.session.scalars(
            select(RequestLogEntry.id)
            .where(
                RequestLogEntry.workspace_id == workspace_id,
                RequestLogEntry.step == step,
                RequestLogEntry.status >= 200,
                RequestLogEntry.status < 300,
            )
            .limit(1)
        ).first()
        is not None
    )


COLUMNS = (RequestLogEntry.created_at, RequestLogEntry.id)


@dataclass(frozen=True)
class Filters:
    """The request log's filters, from a query string; a value that makes no sense is ignored."""

    status: str = ""  # "2xx", "4xx" or "5xx"
    path: str = ""  # substring of the path
    key: str = ""  # an API key id
    request_id: str = ""  # exact x-service-request-id
    listener_requests: str = (
        ""  # "shown": list a listener's own requests too (console.requestlog.listener_requests)
    )

    @classmethod
    def from_args(cls, args) -> Filters:
        def arg(name: str) -> str:
            value = (args.get(name) or "").strip()
            return value[:MAX_FILTER_CHARS] if "\x00" not in value else ""

        status = arg("status")
        key = arg("key")
        try:
            key = str(uuid.UUID(key)) if key else ""
        except ValueError:
            key = ""
        return cls(
            status=status if status in STATUS_CLASSES else "",
            path=arg("path"),
            key=key,
            request_id=arg("request_id"),
            listener_requests="shown" if arg("listener_requests") == "shown" else "",
        )

    def as_args(self) -> dict[str, str]:
        """The non-empty filters, for links that keep them (the next page, polling)."""
        return {k: v for k, v in vars(self).items() if v}

    def args_with(self, **changes: str) -> dict[str, str]:
        """The filters' args with some changed (an empty value drops one): a link to the same list, shown otherwise."""
        return {k: v for k, v in {**self.as_args(), **changes}.items() if v}

    @property
    def hides_listener_requests(self) -> bool:
        """Unless asked, a listener's own requests are left out; a request id is looked up whatever it is."""
        return not self.listener_requests and not self.request_id

    def apply(self, query, *, hiding: bool = True):
        """The filters on a query of the log; `hiding=False` keeps the listener's requests (to count them)."""
        if hiding and self.hides_listener_requests:
            query = query.where(not_(listener_requests.clause()))
        if self.status:
            low = int(self.status[0]) * 100
            query = query.where(RequestLogEntry.status >= low, RequestLogEntry.status < low + 100)
        if self.path:
            escaped = self.path.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            query = query.where(RequestLogEntry.path.like(f"%{escaped}%", escape="\\"))
        if self.key:
            query = query.where(RequestLogEntry.api_key_id == uuid.UUID(self.key))
        if self.request_id:
            query = query.where(RequestLogEntry.request_id == self.request_id)
        return query


def newer(
    workspace_id: uuid.UUID, cursor: str | None, filters: Filters | None = None
) -> list[RequestLogEntry]:
    """Exchanges logged after the cursor (the live poll), newest first, filtered like the page."""
    query = (filters or Filters()).apply(
        select(RequestLogEntry).where(RequestLogEntry.workspace_id == workspace_id)
    )
    return keyset.newer_than(query, COLUMNS, cursor)


def live_cursor(rows: list[RequestLogEntry], previous: str | None = None) -> str:
    """Where the next live poll starts: the newest row shown, or where the last poll was."""
    return keyset.cursor_of(rows[0]) if rows else (previous or keyset.encode_start(COLUMNS))


def page(
    workspace_id: uuid.UUID,
    cursor: str | None = None,
    limit: int = PAGE_SIZE,
    filters: Filters | None = None,
) -> keyset.Page:
    """One page of the log, newest first, filtered."""
    query = select(RequestLogEntry).where(RequestLogEntry.workspace_id == workspace_id)
    query = (filters or Filters()).apply(query)
    return keyset.newest_first(query, COLUMNS, cursor=cursor, limit=limit)


def hidden_listener_requests(workspace_id: uuid.UUID, filters: Filters) -> int:
    """How many rows the filters leave out only for being a listener's routine poll (0 when shown)."""
    if not filters.hides_listener_requests:
        return 0
    query = select(func.count()).select_from(RequestLogEntry)
    query = filters.apply(query.where(RequestLogEntry.workspace_id == workspace_id), hiding=False)
    return int(db.session.scalar(query.where(listener_requests.clause())) or 0)


def unlogged(workspace_id: uuid.UUID) -> int:
    """Requests of this workspace counted in usage but never logged (the writer's queue was full)."""
    return int(
        db.session.scalar(
            select(func.coalesce(func.sum(KeyUsageDay.unlogged), 0)).where(
                KeyUsageDay.workspace_id == workspace_id
            )
        )
        or 0
    )
