"""Live pages without held connections: a page fragment polls with the `pulse` it was drawn at and is
redrawn only when the workspace's pulse has changed (otherwise 204, which htmx leaves alone).

The pulse is a digest of a few aggregate queries over indexed workspace columns: anything the
console shows changes one of them (a task run, an event, a delivery attempt, a Link screen, the
clock offset), so a poll that finds nothing new costs one small query and no rendering.
"""

from __future__ import annotations

import hashlib
import uuid

from sqlalchemy import Select, func, select

from console.events.models import Event
from console.extensions import db
from console.link.models import LinkSession
from console.modes import MODES
from console.scheduler.models import PENDING as TASK_PENDING
from console.scheduler.models import ScheduledTask
from console.webhooks.models import PENDING, WebhookDelivery
from console.workspaces.models import Workspace

# How often pages poll (seconds); the static JS pauses polling while the tab is hidden.
POLL_SECONDS = 2


def pulse(workspace: Workspace) -> str:
    """A short digest that changes whenever anything a console page shows of the workspace changes.

    One round trip: a single SELECT of scalar subqueries, each answered from an index without reading the
    workspace's rows one by one (counts over everything and sums of a column did: 160 ms at 100,000 events,
    every 2 s for every open page). What each part stands for:
    - tasks: how many wait, and the newest finish (a run or a failed attempt sets it; a task that ran and
      scheduled the next one leaves the count as it was);
    - events never change once written: the newest per mode;
    - deliveries: how many wait, and the newest attempt (every attempt sets `last_attempt_at`; a skip or a
      resend changes how many wait; a new delivery waits);
    - Link sessions: how many, and the newest screen change.
    """
    parts = db.session.execute(pulse_statement(workspace.id)).one()
    return hashlib.sha256(repr(tuple(parts)).encode()).hexdigest()[:16]


def pulse_statement(wid: uuid.UUID) -> Select:
    """The pulse's one SELECT for workspace `wid`."""
    aggregates = [
        select(Workspace.clock_offset_seconds).where(Workspace.id == wid),
        select(func.count()).where(ScheduledTask.workspace_id == wid, ScheduledTask.status == TASK_PENDING),
        select(func.max(ScheduledTask.finished_at)).where(ScheduledTask.workspace_id == wid),
        *(
            select(func.max(Event.created_at)).where(Event.workspace_id == wid, Event.mode == mode)
            for mode in MODES
        ),
        select(func.count()).where(WebhookDelivery.workspace_id == wid, WebhookDelivery.status == PENDING),
        select(func.max(WebhookDelivery.last_attempt_at)).where(WebhookDelivery.workspace_id == wid),
        select(func.count()).where(LinkSession.workspace_id == wid),
        select(func.max(LinkSession.updated_at)).where(LinkSession.workspace_id == wid),
    ]
    return select(*(query.scalar_subquery() for query in aggregates))


def unchanged(workspace: Workspace, seen: str | None) -> bool:
    """Whether the pulse a fragment was drawn at is still current (the poll then answers 204)."""
    return bool(seen) and seen == pulse(workspace)
