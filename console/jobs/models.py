"""Job rows and the record of every transition (the timeline reads it)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column, relationship

from console.db.base import CreatedAtMixin, IdMixin
from console.extensions import db


class Job(IdMixin, CreatedAtMixin, db.Model):
    __tablename__ = "jobs"
    # Each list filter's index ends with the list's order, (created_at, id): a page is an index range.
    __table_args__ = (
        Index("ix_jobs_scope_link_token", "workspace_id", "mode", "link_token_id", "created_at", "id"),
        Index("ix_jobs_scope_account", "workspace_id", "mode", "account_id", "created_at", "id"),
        Index("ix_jobs_scope_created", "workspace_id", "mode", "created_at", "id"),
    )

    workspace_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    mode: Mapped[str] = mapped_column(String(16))
    account_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"))
    link_token_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("link_tokens.id", ondelete="CASCADE"))
    end_user_id: Mapped[str | None] = mapped_column(String(255), index=True)
    name: Mapped[str] = mapped_column(String(64), default="direct_deposit_switch")
    outcome: Mapped[str] = mapped_column(String(16))
    # The spec's params: {"action"?, "allocation"?: {"type"?, "value"?, "target": {"account_type"}}}.
    params: Mapped[dict[str, Any]] = mapped_column(default=dict)
    # The scenario (console.jobs.plans) that drives later transitions: picked by sandbox test data,
    # or by the simulated world in development and production.
    scenario: Mapped[str | None] = mapped_column(String(64))
    # Time of the latest transition, on the workspace clock (the spec's `timestamp`).
    timestamp: Mapped[datetime]
    first_attempt_at: Mapped[datetime]
    # Platform-matching (Prime) switches: events for versions before 2023-11-22 are flagged (issue 5).
    via_platform_matching: Mapped[bool] = mapped_column(default=False)

    transitions: Mapped[list[JobTransition]] = relationship(
        back_populates="job", order_by="JobTransition.sequence", cascade="all, delete-orphan"
    )


class JobTransition(IdMixin, db.Model):
    __tablename__ = "job_transitions"

    job_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), index=True)
    sequence: Mapped[int]
    from_outcome: Mapped[str | None] = mapped_column(String(16))  # None: the job was created
    to_outcome: Mapped[str] = mapped_column(String(16))
    at: Mapped[datetime]  # workspace clock
    reason: Mapped[str] = mapped_column(String(255), default="")
    event_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("events.id", ondelete="SET NULL"))

    job: Mapped[Job] = relationship(back_populates="transitions")
