"""The event row (`event_id` is its id), and the event types there are."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from console.db.base import IdMixin
from console.extensions import db

# Here, beside the row, not with `record_event`: the webhooks read them, and recording fans out to the webhooks.
EVENT_TYPES = ("account.added", "direct_deposit_switch.added", "employment.added", "income.added")


class Event(IdMixin, db.Model):
    __tablename__ = "events"
    __table_args__ = (
        # Keyset pagination of the event log and its filters (newest first).
        Index("ix_events_scope_created", "workspace_id", "mode", "created_at", "id"),
        Index("ix_events_scope_type_created", "workspace_id", "mode", "type", "created_at", "id"),
        Index("ix_events_scope_link_token", "workspace_id", "mode", "link_token_id", "created_at", "id"),
        Index("ix_events_scope_account", "workspace_id", "mode", "account_id", "created_at", "id"),
        Index("ix_events_scope_end_user", "workspace_id", "mode", "end_user_id", "created_at", "id"),
    )

    workspace_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    mode: Mapped[str] = mapped_column(String(16))
    type: Mapped[str] = mapped_column(String(64))  # e.g. direct_deposit_switch.added
    # The payload as of the latest version; webhooks shape it for older versions on delivery.
    payload: Mapped[dict[str, Any]]
    link_token_id: Mapped[uuid.UUID | None]
    account_id: Mapped[uuid.UUID | None]
    end_user_id: Mapped[str | None] = mapped_column(String(255))
    job_id: Mapped[uuid.UUID | None]
    # Platform-matching (Prime) origin: not valid for webhook versions before 2023-11-22.
    via_platform_matching: Mapped[bool] = mapped_column(default=False)
    created_at: Mapped[datetime]  # workspace clock
