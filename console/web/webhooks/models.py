"""The built-in webhook inbox's rows: what arrived (`InboxMessage`) and how it answers (`InboxSetting`)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from console.core.timeutil import utcnow
from console.db.base import IdMixin
from console.extensions import db


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
    """How a workspace's built-in inbox answers (see `console.web.webhooks.inbox.BEHAVIOURS`); no row: 200 at once."""

    __tablename__ = "console_inbox_settings"

    workspace_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("workspaces.id", ondelete="CASCADE"), unique=True
    )
    behaviour: Mapped[str] = mapped_column(String(16))
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)
