"""Live pages without held connections: a page fragment polls with the `pulse` it was drawn at and is
redrawn only when the workspace's pulse has changed (otherwise 204, which htmx leaves alone).

The pulse is a digest of a few aggregate queries over indexed workspace columns: anything the
console shows changes one of them (a task run, an event, a delivery attempt, a Link screen, the
clock offset), so a poll that finds nothing new costs one small query and no rendering.
"""

from __future__ import annotations

import hashlib

from sqlalchemy import case, func, select

from console.events.models import Event
from console.extensions import db
from console.link.models import LinkSession
from console.scheduler.models import ScheduledTask
from console.webhooks.models import PENDING, WebhookDelivery
from console.workspaces.models import Workspace

# How often pages poll (seconds); the static JS pauses polling while the tab is hidden.
POLL_SECONDS = 2


def pulse(workspace: Workspace) -> str:
    """A short digest that changes whenever anything a console page shows of the workspace changes.

    One round trip: a single SELECT of aggregate subqueries, each on an index led by workspace_id.
    """
    wid = workspace.id
    aggregates = [
        select(Workspace.clock_offset_seconds).where(Workspace.id == wid),
        select(func.count()).where(ScheduledTask.workspace_id == wid),
        select(func.max(ScheduledTask.finished_at)).where(ScheduledTask.workspace_id == wid),
        select(func.count()).where(Event.workspace_id == wid),
        select(func.max(Event.created_at)).where(Event.workspace_id == wid),
        select(func.count(WebhookDelivery.delivered_at)).where(WebhookDelivery.workspace_id == wid),
        select(func.sum(WebhookDelivery.attempt_count)).where(WebhookDelivery.workspace_id == wid),
        select(func.sum(case((WebhookDelivery.status == PENDING, 1), else_=0))).where(
            WebhookDelivery.workspace_id == wid
        ),
        select(func.count()).where(LinkSession.workspace_id == wid),
        select(func.max(LinkSession.updated_at)).where(LinkSession.workspace_id == wid),
    ]
    parts = db.session.execute(select(*(query.scalar_subquery() for query in aggregates))).one()
    return hashlib.sha256(repr(tuple(parts)).encode()).hexdigest()[:16]


def unchanged(workspace: Workspace, seen: str | None) -> bool:
    """Whether the pulse a fragment was drawn at is still current (the poll then answers 204)."""
    return bool(seen) and seen == pulse(workspace)
