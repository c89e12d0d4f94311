"""The scheduled task row."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from console.db.base import CreatedAtMixin, IdMixin
from console.extensions import db

# A task that has not run yet (or failed and will be retried); it becomes "done" or "failed".
PENDING = "pending"


class ScheduledTask(IdMixin, CreatedAtMixin, db.Model):
    __tablename__ = "scheduled_tasks"
    __table_args__ = (
        Index("ix_scheduled_tasks_runnable", "status", "run_after"),
        Index("ix_scheduled_tasks_workspace_due", "workspace_id", "status", "due_at"),
        # The console's live pulse reads a workspace's newest finish (one index step, however many tasks).
        Index("ix_scheduled_tasks_workspace_finished", "workspace_id", "finished_at"),
    )

    workspace_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    kind: Mapped[str] = mapped_column(String(64))  # e.g. job.retry, job.federal_review, webhook.pause_check
    payload: Mapped[dict[str, Any]] = mapped_column(default=dict)
    # When it is due on the workspace clock...
    due_at: Mapped[datetime]
    # ...and the same moment in real time (due_at - clock offset), so the worker can poll one index.
    # Advancing a workspace clock rewrites run_after for that workspace's pending tasks.
    run_after: Mapped[datetime]
    status: Mapped[str] = mapped_column(String(16), default=PENDING)  # pending | done | failed
    attempts: Mapped[int] = mapped_column(default=0)
    # Real time of the successful run (or of the last failed attempt).
    finished_at: Mapped[datetime | None]
    last_error: Mapped[str | None] = mapped_column(String(500))
    # What the handler reported: {"summary": str, ...}; the clock API's `fired` list reads it.
    result: Mapped[dict[str, Any] | None]
