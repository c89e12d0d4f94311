"""A cohort (a class a trainer runs) and its members (one named, kept workspace per trainee)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, String, UniqueConstraint, and_, not_, or_
from sqlalchemy.orm import Mapped, mapped_column
from sqlalchemy.sql import visitors
from sqlalchemy.sql.elements import BindParameter, ColumnElement

from console.db.base import CreatedAtMixin, IdMixin
from console.extensions import db
from console.requestlog import listener_requests
from console.requestlog.models import RequestLogEntry


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


def listener_loop() -> ColumnElement[bool]:
    """A listener's automatic requests: its polls (one a second) and the results it reports of each delivery
    (`listener_requests.clause`, past the opening call). Not the trainee at work.

    The opening call (`POST .../sandbox/listen`) is left in: it is the trainee starting `console listen` or
    `pcc.py listen` (the listener opens again by itself only when its relayed webhook is gone), a step of
    exercises 3 and 4, so it reads as the trainee at work like any call of theirs."""
    return and_(listener_requests.clause(), RequestLogEntry.path.like(f"%{listener_requests.OPEN_SUFFIX}/%"))


def own_call() -> ColumnElement[bool]:
    """The request-log rows that are a trainee's own call: made from outside the console (no `step`) and not a
    listener's loop. The predicate of the partial index below, written once: a query uses the index only when
    its WHERE holds this very term. It is one term (a NOT of an OR), so that no other index of the log can
    take a part of it (`step = ''` alone led SQLite to the (workspace_id, step, created_at) index and a walk
    over every poll), and its values are written into the SQL, not bound: SQLite matches a partial index's
    predicate only against literals."""
    return _inline(not_(or_(RequestLogEntry.step != "", listener_loop())))


def _inline(expression: ColumnElement[bool]) -> ColumnElement[bool]:
    """`expression` with each bound value rendered into the statement (literal_execute)."""

    def literal(bind: BindParameter) -> None:
        bind.literal_execute = True

    return visitors.cloned_traverse(expression, {}, {"bindparam": literal})


# A trainee's newest own call, per workspace, in one index probe (`cohorts.last_calls`). The grid asks every
# few seconds from each trainer screen, for up to 60 trainees whose logs each hold up to REQUEST_LOG_KEEP rows,
# nearly all listener polls while a listener runs: the log's other indexes walk every poll to pass over them.
# Declared here, with the rule it serves, on the request log's table (migration b3d5f7a9c1e2).
Index(
    "ix_request_log_entries_own_calls",
    RequestLogEntry.workspace_id,
    RequestLogEntry.created_at,
    # The predicate's columns too, so that the index covers the query: SQLite still reads them to check the
    # predicate, and without them it weighs this index as no better than (workspace_id, created_at, id),
    # taking whichever of the two was created last.
    RequestLogEntry.step,
    RequestLogEntry.method,
    RequestLogEntry.status,
    RequestLogEntry.path,
    sqlite_where=own_call(),
    postgresql_where=own_call(),
)
