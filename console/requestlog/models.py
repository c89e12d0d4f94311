"""The request log (`RequestLogEntry`, one row per API call) and the usage table (`KeyUsageDay`, requests
per API key and per real UTC day, by status class)."""

from __future__ import annotations

import uuid
from datetime import date, datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from console.core.ids import uuid7
from console.core.timeutil import utcnow
from console.db.base import IdMixin
from console.extensions import db


class KeyUsageDay(IdMixin, db.Model):
    """Counts of one key's requests on one day; the background writer adds to them (one upsert a flush)."""

    __tablename__ = "key_usage_days"
    __table_args__ = (
        UniqueConstraint("api_key_id", "day"),
        Index("ix_key_usage_days_scope_day", "workspace_id", "day"),
    )

    workspace_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    api_key_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("api_keys.id", ondelete="CASCADE"))
    mode: Mapped[str] = mapped_column(String(16))
    day: Mapped[date]
    requests: Mapped[int] = mapped_column(default=0)
    status_2xx: Mapped[int] = mapped_column(default=0)
    status_4xx: Mapped[int] = mapped_column(default=0)
    status_5xx: Mapped[int] = mapped_column(default=0)
    # Production calls are billed (spec: "Every API call is billable"), whatever their status.
    billable: Mapped[int] = mapped_column(default=0)
    # Requests counted here whose log row was not written (the writer's queue was full).
    unlogged: Mapped[int] = mapped_column(default=0)


class RequestLogEntry(IdMixin, db.Model):
    """One API request of a workspace, from anywhere: the console, the developer's backend, CI.

    Written by `console.requestlog` (the API's after-request hook): a caller's own requests in
    batches by the background writer, the console's at once by its ApiClient, which adds its `step`.
    Bodies are redacted (`console.requestlog.redact`) and the secret header is never stored.
    """

    __tablename__ = "request_log_entries"
    __table_args__ = (
        # Keyset pagination of the request log (newest first) and "has step N happened" lookups.
        Index("ix_request_log_entries_scope_created", "workspace_id", "created_at", "id"),
        Index("ix_request_log_entries_scope_step", "workspace_id", "step", "created_at"),
        # The log's "request id" filter, and a support question that starts from a response header.
        Index("ix_request_log_entries_scope_request_id", "workspace_id", "request_id"),
    )

    # Time-ordered ids (console.core.ids): the writer inserts rows in chunks, which then share index pages.
    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid7)
    workspace_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    mode: Mapped[str] = mapped_column(String(16))
    # Which console action made the call (e.g. "link_token", "jobs"), so a step can show its exchange;
    # empty for a call from outside the console.
    step: Mapped[str] = mapped_column(String(64), default="")
    # The key whose secret was sent; the stored headers hold a placeholder, never the secret.
    api_key_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("api_keys.id", ondelete="SET NULL"))
    method: Mapped[str] = mapped_column(String(8))
    url: Mapped[str] = mapped_column(String(2000))
    path: Mapped[str] = mapped_column(String(1000))
    request_headers: Mapped[dict[str, Any]] = mapped_column(default=dict)
    request_body: Mapped[str] = mapped_column(Text, default="")
    status: Mapped[int | None]  # None when no response came (network error)
    response_headers: Mapped[dict[str, Any]] = mapped_column(default=dict)
    response_body: Mapped[str] = mapped_column(Text, default="")
    request_id: Mapped[str | None] = mapped_column(String(64))
    duration_ms: Mapped[float] = mapped_column(default=0.0)
    error: Mapped[str | None] = mapped_column(String(500))
    # Real time the request arrived; `clock_at` is the workspace clock at that moment.
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    clock_at: Mapped[datetime | None] = mapped_column(default=None)

    # Not stored: the body the console's ApiClient received, for the page that made the call to act on
    # (`apiclient.response_json`); `response_body` is the log's redacted copy (a Link token's `token`
    # masked). None on a row read back from the database.
    answer_body = None
