"""The latest conformance report of each webhook (re-running replaces it)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from console.db.base import IdMixin
from console.extensions import db


class ConformanceReport(IdMixin, db.Model):
    __tablename__ = "conformance_reports"
    __table_args__ = (Index("ix_conformance_reports_scope", "workspace_id", "mode"),)

    workspace_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    mode: Mapped[str] = mapped_column(String(16))
    # One report per webhook: the latest run.
    webhook_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("webhooks.id", ondelete="CASCADE"), unique=True)
    passed: Mapped[bool]
    ran_at: Mapped[datetime]  # workspace clock
    # The report exactly as the API returns it (`data`): checks with their exchanges, never a secret.
    report: Mapped[dict[str, Any]] = mapped_column(default=dict)
