"""The latest conformance report of each webhook (re-running replaces it)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, String, text
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


# A run's status: queued (waiting for the worker), running (claimed under a lease), done (report kept).
QUEUED = "queued"
RUNNING = "running"
DONE = "done"
ACTIVE = (QUEUED, RUNNING)


class ConformanceRun(IdMixin, db.Model):
    """One conformance check asked for by `POST .../conformance`, executed by the worker (never a serving thread).

    Claimed like a delivery: `running` with a lease (`claimed_until`, real time); a worker that dies leaves
    the lease to run out and the run is claimed again. At most one active run per webhook (the partial
    unique index), so two POSTs racing cannot both start one.
    """

    __tablename__ = "conformance_runs"
    __table_args__ = (
        Index("ix_conformance_runs_due", "status", "claimed_until", "created_at"),
        Index("ix_conformance_runs_webhook", "webhook_id", "created_at"),
        Index("ix_conformance_runs_scope", "workspace_id", "status"),
        Index(
            "uq_conformance_runs_active",
            "webhook_id",
            unique=True,
            sqlite_where=text("status IN ('queued', 'running')"),
            postgresql_where=text("status IN ('queued', 'running')"),
        ),
    )

    workspace_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    mode: Mapped[str] = mapped_column(String(16))
    webhook_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("webhooks.id", ondelete="CASCADE"))
    status: Mapped[str] = mapped_column(String(16), default=QUEUED)
    created_at: Mapped[datetime]  # real time (UTC): the order runs are claimed in
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]
    claim_token: Mapped[uuid.UUID | None]
    claimed_until: Mapped[datetime | None]
    attempts: Mapped[int] = mapped_column(default=0)
    passed: Mapped[bool | None]
    # The report exactly as `ConformanceReport.report` (set when done).
    report: Mapped[dict[str, Any] | None] = mapped_column(default=None)
