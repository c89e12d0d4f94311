"""The console's own rows: the request log of the workspace's API calls, the built-in webhook inbox, and
the Link token strings the console can open Link with."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, LargeBinary, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from console.core.base import IdMixin
from console.core.ids import uuid7
from console.core.timeutil import utcnow
from console.extensions import db


class ConsoleRequest(IdMixin, db.Model):
    """One API request of a workspace, from anywhere: the console, the developer's backend, CI.

    Written by `console.requestlog` (the API's after-request hook): a caller's own requests in
    batches by the background writer, the console's at once by its ApiClient, which adds its `step`.
    Bodies are redacted (`console.requestlog.redact`) and the secret header is never stored.
    """

    __tablename__ = "console_requests"
    __table_args__ = (
        # Keyset pagination of the request log (newest first) and "has step N happened" lookups.
        Index("ix_console_requests_scope_created", "workspace_id", "created_at", "id"),
        Index("ix_console_requests_scope_step", "workspace_id", "step", "created_at"),
        # The log's "request id" filter, and a support question that starts from a response header.
        Index("ix_console_requests_scope_request_id", "workspace_id", "request_id"),
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


class InboxMessage(IdMixin, db.Model):
    """One POST the built-in webhook receiver got, with the result of verifying its signature."""

    __tablename__ = "console_inbox_messages"
    __table_args__ = (
        Index("ix_console_inbox_scope_received", "workspace_id", "received_at", "id"),
        Index("ix_console_inbox_scope_event", "workspace_id", "event_id"),
    )

    workspace_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    received_at: Mapped[datetime] = mapped_column(default=utcnow)
    headers: Mapped[dict[str, Any]] = mapped_column(default=dict)
    body: Mapped[str] = mapped_column(Text, default="")
    event_id: Mapped[str | None] = mapped_column(String(64))
    event_type: Mapped[str | None] = mapped_column(String(64))
    webhook_id: Mapped[str | None] = mapped_column(String(64))
    verified: Mapped[bool] = mapped_column(default=False)
    # Why verification failed (never contains the secret or the expected signature).
    verify_error: Mapped[str | None] = mapped_column(String(255))
    # Last four characters of the key whose secret verified it, to tell keys apart after a roll.
    key_last4: Mapped[str | None] = mapped_column(String(4))
    # At-least-once delivery: a second copy of an event_id already received is marked, not dropped.
    duplicate: Mapped[bool] = mapped_column(default=False)
    # Sent by the endpoint conformance check (`x-service-conformance: true`): sample traffic, not an event.
    conformance: Mapped[bool] = mapped_column(default=False)
    # How the inbox was set to answer when this arrived (`InboxSetting.behaviour`); None: at once, 200.
    behaviour: Mapped[str | None] = mapped_column(String(16))


class InboxSetting(IdMixin, db.Model):
    """How a workspace's built-in inbox answers (see `console.web.inbox.BEHAVIOURS`); no row: 200 at once."""

    __tablename__ = "console_inbox_settings"

    workspace_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("workspaces.id", ondelete="CASCADE"), unique=True
    )
    behaviour: Mapped[str] = mapped_column(String(16))
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class ConsoleLinkToken(IdMixin, db.Model):
    """A Link token string the console created, sealed: the API returns each one only once.

    Kept here (not in the session cookie, which is signed but readable) so "Open Link" can use it
    after a reload or from another page; step 4 offers the newest by `created_at`.
    """

    __tablename__ = "console_link_tokens"
    __table_args__ = (Index("ix_console_link_tokens_scope_created", "workspace_id", "created_at"),)

    workspace_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    link_token_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("link_tokens.id", ondelete="CASCADE"), unique=True
    )
    # `console.keys.secrets.seal` of the token string (Fernet, keyed from SECRET_KEY).
    token_ciphertext: Mapped[bytes] = mapped_column(LargeBinary)
    # What made it ("preset:<key>" or "scenario:<key>"), so "Create a new token" can repeat it.
    origin: Mapped[str | None] = mapped_column(String(80))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
