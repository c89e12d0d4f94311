"""A cohort (a class a trainer runs) and its members (one named, kept workspace per trainee)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from console.db.base import CreatedAtMixin, IdMixin
from console.extensions import db


class Cohort(IdMixin, CreatedAtMixin, db.Model):
    __tablename__ = "training_cohorts"

    name: Mapped[str] = mapped_column(String(120))
    # Exercise keys, in curriculum order (console.training.exercises).
    exercises: Mapped[list[Any]]
    # The join link's token: shared with the whole room, so kept as is (the trainer's page shows it).
    join_token: Mapped[str] = mapped_column(String(64), unique=True)
    # Only a hash of the trainer's secret: the trainer link is shown once, at creation.
    trainer_secret_hash: Mapped[str] = mapped_column(String(64))
    # sha256 of the creating browser's id: the per-trainer cap counts these (None: made before the cap, or
    # by the CLI or a test).
    created_by: Mapped[str | None] = mapped_column(String(64), index=True)
    # Real time the trainer archived the class: the join link stops working and the trainees' workspaces
    # are no longer kept (collected after WORKSPACE_IDLE_DAYS without use, like a visitor's).
    archived_at: Mapped[datetime | None]


class CohortMember(IdMixin, db.Model):
    __tablename__ = "training_members"
    # One member per name as the grid reads it: two joins under the same name at the same moment cannot both
    # be written (on SQLite the name check reads outside the write transaction, so both passed it).
    __table_args__ = (UniqueConstraint("cohort_id", "name_key"),)

    cohort_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("training_cohorts.id", ondelete="CASCADE"), index=True
    )
    # One cohort per workspace; deleting the workspace removes the membership with it.
    workspace_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("workspaces.id", ondelete="CASCADE"), unique=True
    )
    name: Mapped[str] = mapped_column(String(120))
    # sha256 of the name as the grid reads it (console.training.cohorts.name_key: case, runs of spaces and
    # compatibility forms aside). None only for a member whose name repeated an earlier one's before it was kept.
    name_key: Mapped[str | None] = mapped_column(String(64))
    joined_at: Mapped[datetime]  # real time
    # cohorts.join_form_token_hash of the join form token the join carried (console.training.cohorts.join):
    # the same form sent twice (a double submit that reached the server twice) finds this row instead of
    # joining again. None for members who joined before it was kept, or without a form. The column keeps the
    # name its applied migration gave it (join_form_hash): renaming it would rebuild the table on SQLite in a
    # migration of its own for no change in meaning; the attribute carries the one name.
    join_form_token_hash: Mapped[str | None] = mapped_column("join_form_hash", String(64), unique=True)
