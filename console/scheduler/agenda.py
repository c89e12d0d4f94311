"""What a workspace has scheduled, soonest first, each item said in the reader's words.

Scheduled tasks are described by their kind's describer (`services.TaskKind`); other tables holding
work due on the clock (webhook deliveries) add their items through a `Source` that `create_app`
registers with `register_sources`.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from flask import Flask, current_app
from sqlalchemy import func, select

from console.core.timeutil import isoformat
from console.extensions import db
from console.scheduler import services
from console.scheduler.models import PENDING, ScheduledTask
from console.workspaces.models import Workspace


@dataclass(frozen=True)
class Item:
    due_at: datetime  # workspace clock
    kind: str
    description: str
    task_id: uuid.UUID | None = None  # None for items of other tables (webhook deliveries)
    payload: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "task_id": str(self.task_id) if self.task_id else None,
            "kind": self.kind,
            "due_at": isoformat(self.due_at),
            "description": self.description,
            "payload": self.payload,
        }


@dataclass(frozen=True)
class Source:
    """Another table's pending work: its soonest items, and the due moment of its next one."""

    items: Callable[[uuid.UUID, int, datetime | None], list[Item]]  # (workspace id, limit, due after)
    next_due_at: Callable[[uuid.UUID, datetime | None], datetime | None]


def register_sources(app: Flask, sources: Iterable[Source]) -> None:
    """Add other tables' pending work to `app`'s agendas."""
    app.extensions.setdefault("agenda_sources", []).extend(sources)


def _sources() -> list[Source]:
    return current_app.extensions.get("agenda_sources", [])


def _pending_tasks(workspace_id: uuid.UUID, after: datetime | None):
    query = [ScheduledTask.workspace_id == workspace_id, ScheduledTask.status == PENDING]
    if after is not None:
        query.append(ScheduledTask.due_at > after)
    return query


def _task_items(workspace_id: uuid.UUID, limit: int, after: datetime | None) -> list[Item]:
    tasks = db.session.scalars(
        select(ScheduledTask)
        .where(*_pending_tasks(workspace_id, after))
        .order_by(ScheduledTask.due_at, ScheduledTask.created_at)
        .limit(limit)
    )
    return [Item(t.due_at, t.kind, services.describe(t), t.id, dict(t.payload or {})) for t in tasks]


def upcoming(workspace: Workspace, limit: int = 20, *, after: datetime | None = None) -> list[Item]:
    """The workspace's next `limit` scheduled items of every kind (due after `after` when given), soonest first."""
    items = _task_items(workspace.id, limit, after)
    for source in _sources():
        items += source.items(workspace.id, limit, after)
    return sorted(items, key=lambda item: item.due_at)[:limit]


def next_due_at(workspace: Workspace, *, after: datetime | None = None) -> datetime | None:
    """When the workspace's soonest scheduled item (due after `after` when given) is due on its clock."""
    moments = [
        db.session.scalar(select(func.min(ScheduledTask.due_at)).where(*_pending_tasks(workspace.id, after)))
    ]
    moments += [source.next_due_at(workspace.id, after) for source in _sources()]
    found = [m for m in moments if m is not None]
    return min(found) if found else None
