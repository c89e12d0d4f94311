"""Capping the event log per workspace: the worker deletes a workspace's oldest events past `EVENTS_KEEP`.

Events are what the API and the sandbox's test events add without bound: a workspace sending test events at
its rate limit added ~0.7 MB a minute (the events, their deliveries and attempts) for as long as it ran. Now
each workspace keeps its `EVENTS_KEEP` newest events (0: no cap); an older one goes with its deliveries and
their attempts (the foreign keys cascade), and a job's history keeps its transition with the event link set to
null. An event with a delivery still to make (`pending` or `delivering`) is spared until that delivery ends,
so a cap never cancels a retry (each batch's DELETE checks it as it deletes). The deletes go in batches of `PRUNE_BATCH` events, one transaction each
(`console.db.capping`), so the SQLite write gate is held for one batch at a time.
"""

from __future__ import annotations

from sqlalchemy import exists

from console.db import capping
from console.events.models import Event
from console.webhooks.models import DELIVERING, PENDING, WebhookDelivery

DEFAULT_KEEP = 5_000
# Events deleted per transaction: each takes its deliveries and attempts with it (up to 10 webhooks each).
PRUNE_BATCH = 100


def _delivery_to_make():
    """An event with a delivery still to make (a retry scheduled, or a send in flight): never deleted. Checked
    by each batch's DELETE itself, so a resend between two batches is seen."""
    return exists().where(
        WebhookDelivery.event_id == Event.id, WebhookDelivery.status.in_((PENDING, DELIVERING))
    )


CAP = capping.Cap(
    model=Event,
    at=Event.created_at,
    setting="EVENTS_KEEP",
    default=DEFAULT_KEEP,
    batch=PRUNE_BATCH,
    what="events",
    unless=_delivery_to_make,
)


class EventPruneLoop(capping.CapLoop):
    """A worker loop: cap every workspace's event log at start, then every minute."""

    name = "event-pruning"
    cap = CAP
