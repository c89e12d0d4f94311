"""Capping the request log per workspace: the worker deletes a workspace's oldest rows past `REQUEST_LOG_KEEP`.

Without a cap the log grew with every API call until the whole workspace was collected (a noisy tenant's
minute of calls cost the database ~11 MB). Now each workspace keeps its `REQUEST_LOG_KEEP` newest rows (0: no
cap), plus, for each console step (`RequestLogEntry.step`), its newest row and its newest 2xx row: the pages
that show a step's last exchange (`latest`) or tick it off once it succeeded (`succeeded`) keep working however
many calls came after. The deletes go in batches of `PRUNE_BATCH` rows, one transaction each
(`console.db.capping`), so the SQLite write gate is held for one batch at a time and request writers get
their turn in between; the usage counts (`KeyUsageDay`) are kept whole.
"""

from __future__ import annotations

import uuid

from sqlalchemy import select

from console.db import capping
from console.extensions import db
from console.requestlog.models import RequestLogEntry

DEFAULT_KEEP = 10_000
# Rows deleted per transaction: a few milliseconds of the write gate on SQLite.
PRUNE_BATCH = 500


def _spared(workspace_id: uuid.UUID) -> set[uuid.UUID]:
    """Each console step's newest row and newest 2xx row: what `latest` and `succeeded` read."""
    steps = db.session.scalars(
        select(RequestLogEntry.step)
        .where(RequestLogEntry.workspace_id == workspace_id, RequestLogEntry.step != "")
        .distinct()
    ).all()
    spared: set[uuid.UUID] = set()
    newest = (RequestLogEntry.created_at.desc(), RequestLogEntry.id.desc())
    for step in steps:
        of_step = (RequestLogEntry.workspace_id == workspace_id, RequestLogEntry.step == step)
        for extra in ((), (RequestLogEntry.status >= 200, RequestLogEntry.status < 300)):
            found = db.session.scalars(
                select(RequestLogEntry.id).where(*of_step, *extra).order_by(*newest).limit(1)
            ).first()
            if found is not None:
                spared.add(found)
    return spared


CAP = capping.Cap(
    model=RequestLogEntry,
    at=RequestLogEntry.created_at,
    setting="REQUEST_LOG_KEEP",
    default=DEFAULT_KEEP,
    batch=PRUNE_BATCH,
    what="request log rows",
    spared=_spared,
)


class PruneLoop(capping.CapLoop):
    """A worker loop: cap every workspace's request log at start, then every minute."""

    name = "request-log-pruning"
    cap = CAP
