"""The workspace row."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import String, false
from sqlalchemy.orm import Mapped, mapped_column

from console.core.timeutil import utcnow
from console.db.base import CreatedAtMixin, IdMixin
from console.extensions import db


class Workspace(IdMixin, CreatedAtMixin, db.Model):
    __tablename__ = "workspaces"

    name: Mapped[str] = mapped_column(String(120))
    # The demo workspace is the one `make run` prints a key for and the CLI uses by default.
    is_demo: Mapped[bool] = mapped_column(default=False, index=True)
    # The workspace clock runs at real time plus this offset (see console.clock).
    clock_offset_seconds: Mapped[float] = mapped_column(default=0.0)
    # False only for an anonymous console visitor's workspace: the idle collector may delete it.
    # Naming it in the console ("Keep this workspace"), the CLI and the demo workspace keep it.
    kept: Mapped[bool] = mapped_column(default=True)
    # Named by a visitor in the console: still an anonymous thing, so it too is collected, after the longer
    # WORKSPACE_NAMED_IDLE_DAYS without use (see workspaces.collection). The CLI's, the demo workspace and a
    # running class's trainees' are kept without this mark: an operator made them.
    named_in_console: Mapped[bool] = mapped_column(default=False, server_default=false())
    # Real time of the last console visit or API call, at hour resolution (see workspaces.services).
    last_active_at: Mapped[datetime] = mapped_column(default=utcnow, index=True)
    # Training exercise 5: the job of this Link token is not delivered to the workspace's own endpoints
    # (its deliveries are skipped). No foreign key: link_tokens already points here.
    held_link_token_id: Mapped[uuid.UUID | None]
    # Real time a request not made by the console first searched that token's jobs
    # (`GET /v1/jobs?link_token_id=`): the missed webhook recovered. Both live on the workspace row the API's
    # authentication already loads, so a jobs search costs no extra query to tell.
    held_link_token_found_at: Mapped[datetime | None]
    # The client address (hashed, console.core.owners) whose first console action created this visitor
    # workspace: the owner VISITOR_WORKSPACES_PER_ADDRESS counts. None for every other kind of workspace.
    created_from: Mapped[str | None] = mapped_column(String(64), index=True)
