"""Requests per API key and per day (real UTC day), by status class: the usage table."""

from __future__ import annotations

import uuid
from datetime import date

from sqlalchemy import ForeignKey, Index, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from console.core.base import IdMixin
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
